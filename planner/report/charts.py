"""The report's charts, drawn with matplotlib (Agg, no pyplot state) as deterministic SVG text."""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Callable, Sequence

import matplotlib

matplotlib.use("Agg")

import matplotlib.lines  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from planner.report.capacity import PoolCapacity  # noqa: E402
from planner.report.model import DIMENSION_LABELS, BatchRow, BrokerHeat, TopicRow  # noqa: E402
from planner.report.runway import Runway  # noqa: E402
from pools.audit.findings import Finding, Severity  # noqa: E402
from pools.snapshot import DIMENSIONS  # noqa: E402

__all__ = [
    "pool_utilisation_chart",
    "runway_chart",
    "broker_heatmap",
    "topics_chart",
    "batches_chart",
    "findings_chart",
    "NO_POOL",
]

#: How the charts and tables name brokers and topics in no pool.
NO_POOL = "(no pool)"

_SERIES = (("now", "now", "#4C72B0"), ("forecast", "at forecast, today's placement", "#DD8452"),
           ("after", "at forecast, after the plan", "#55A868"))
_DIM_COLOURS = {"nw_in": "#4C72B0", "nw_out": "#DD8452", "disk": "#55A868", "replicas": "#8172B3"}
_SEVERITY_COLOURS = {Severity.CRITICAL: "#8B0000", Severity.ERROR: "#D62728", Severity.WARNING: "#FF9F1C",
                     Severity.INFO: "#7F7F7F"}
_RC = {"font.size": 9, "font.family": "DejaVu Sans", "svg.fonttype": "none", "axes.grid": True,
       "grid.alpha": 0.3, "axes.axisbelow": True}


def _styled(draw: Callable[..., str]) -> Callable[..., str]:
    """Run a chart function under the report's matplotlib style, leaving global settings alone."""

    @functools.wraps(draw)
    def wrapper(*args, **kwargs) -> str:
        with matplotlib.rc_context(_RC):
            return draw(*args, **kwargs)

    return wrapper



@_styled
def pool_utilisation_chart(rows: Sequence[PoolCapacity]) -> str:
    """Grouped bars per pool, one panel per dimension: % of capacity now, at forecast and after the plan."""
    pools = sorted({r.pool for r in rows})
    fig = _figure(10, 6.5)
    axes = fig.subplots(2, 2, sharex=True)
    x = np.arange(len(pools))
    width = 0.26
    for ax, dim in zip(axes.flat, DIMENSIONS):
        by_pool = {r.pool: r for r in rows if r.dimension == dim}
        for k, (attr, label, colour) in enumerate(_SERIES):
            values = [_pct(getattr(by_pool[p], attr)) if p in by_pool else np.nan for p in pools]
            ax.bar(x + (k - 1) * width, values, width, label=label, color=colour)
        for i, p in enumerate(pools):
            h = by_pool[p].max_utilisation if p in by_pool else None
            if h is not None:
                ax.hlines(h * 100, i - 1.5 * width, i + 1.5 * width, colors="black", linestyles="dashed", linewidth=1)
        ax.set_title(DIMENSION_LABELS[dim])
        ax.set_ylabel("utilisation (% of capacity)")
        ax.set_xticks(x, pools, rotation=30, ha="right")
    for ax in axes[1]:
        ax.set_xlabel("pool")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    handles.append(matplotlib.lines.Line2D([], [], color="black", linestyle="dashed", linewidth=1))
    labels.append("max utilisation (policy)")
    fig.suptitle("Pool utilisation per dimension (% of pool capacity)", y=0.995)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.965), ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return _svg(fig, "pools")


@_styled
def runway_chart(runway: Runway) -> str:
    """Per pool, each dimension's likely demand (its band shaded) as a share of the pool's limit, day by day."""
    rows = [r for r in runway.rows if r.limit]
    pools = sorted({r.pool for r in rows})
    cols = min(len(pools), 2)
    fig = _figure(10, 0.6 + 3.0 * math.ceil(len(pools) / cols))
    axes = np.atleast_1d(fig.subplots(math.ceil(len(pools) / cols), cols, squeeze=False).flatten())
    for ax, pool in zip(axes, pools):
        for r in (r for r in rows if r.pool == pool):
            t = np.arange(len(r.path))
            colour = _DIM_COLOURS[r.dimension]
            ax.fill_between(t, 100 * np.array(r.low) / r.limit, 100 * np.array(r.high) / r.limit, color=colour,
                            alpha=0.15, linewidth=0)
            ax.plot(t, 100 * np.array(r.path) / r.limit, color=colour, label=DIMENSION_LABELS[r.dimension])
            if r.likely.kind == "day":
                ax.plot([r.likely.day], [100 * r.path[r.likely.day] / r.limit], "o", color=colour)
        ax.axhline(100, color="black", linestyle="dashed", linewidth=1, label="limit")
        ax.axvline(runway.history_days, color="grey", linestyle="dotted", linewidth=1, label="history's support")
        ax.set_ylim(bottom=0)
        ax.set_title(f"pool {pool}")
        ax.set_xlabel("days from the end of the metric history")
        ax.set_ylabel("demand (% of the limit)")
        ax.legend(loc="upper left", fontsize=8)
    for ax in axes[len(pools):]:
        ax.set_visible(False)
    fig.suptitle("Runway: each pool's demand, topic by topic, as % of its limit", y=0.995)
    fig.tight_layout()
    return _svg(fig, "runway")


@_styled
def broker_heatmap(heat: BrokerHeat) -> str:
    """Utilisation per broker and dimension as a colour grid: now by today's pools, after the plan by its pools."""
    panels = [("now", heat.brokers, heat.pools, heat.now, "today's pool")]
    if heat.after is not None:
        panels.append(("after the plan", heat.after_brokers, heat.after_pools, heat.after, "pool after the plan"))
    fig = Figure(figsize=(11, 1.2 + 2.4 * len(panels)), dpi=100, layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    cmap = matplotlib.colormaps["RdYlGn_r"].with_extremes(bad="#BBBBBB")
    image = None
    for ax, (label, brokers, pools, grid, grouping) in zip(axes, panels):
        n = len(brokers)
        data = np.array([[np.nan if v is None else v * 100 for v in row] for row in grid], dtype=float)
        image = ax.imshow(np.ma.masked_invalid(data), aspect="auto", cmap=cmap, vmin=0, vmax=100,
                          interpolation="nearest")
        ax.set_yticks(range(len(DIMENSIONS)), [DIMENSION_LABELS[d] for d in DIMENSIONS])
        step = max(1, n // 40)
        ax.set_xticks(range(0, n, step), [f"{b}*" if b in heat.to_buy and label != "now" else str(b)
                                          for b in brokers[::step]], rotation=90, fontsize=7)
        ax.grid(False)
        ax.set_title(f"Broker utilisation {label} (columns grouped by {grouping})", pad=16)
        ax.set_ylabel("dimension")
        ax.set_xlabel("broker id")
        start = 0
        for i in range(1, n + 1):
            if i == n or pools[i] != pools[start]:
                if start:
                    ax.axvline(start - 0.5, color="black", linewidth=1.2)
                ax.text((start + i - 1) / 2, -0.6, pools[start] or NO_POOL, ha="center", va="bottom", fontsize=8,
                        fontweight="bold")
                start = i
    fig.colorbar(image, ax=list(axes), label="utilisation (% of capacity; grey: no data)", fraction=0.03, pad=0.01)
    fig.suptitle("Broker heatmap")
    return _svg(fig, "heatmap")


@_styled
def topics_chart(rows: Sequence[TopicRow], *, title: str, growth: bool = False) -> str:
    """Horizontal bars of bytes-in p99 now and at the forecast (MB/s) with the forecast band as error bars."""
    fig = _figure(10, 1.2 + 0.35 * max(len(rows), 1))
    ax = fig.subplots()
    y = np.arange(len(rows))
    now = np.array([r.bytes_in_p99 for r in rows]) / 1e6
    fc = np.array([r.forecast for r in rows]) / 1e6
    err = np.array([[max(r.forecast - r.low, 0.0) for r in rows], [max(r.high - r.forecast, 0.0) for r in rows]]) / 1e6
    ax.barh(y - 0.2, now, 0.4, label="p99 now", color=_SERIES[0][2])
    ax.barh(y + 0.2, fc, 0.4, xerr=err, capsize=3, label="p99 at forecast (band: low–high)", color=_SERIES[1][2])
    labels = [f"{r.topic} (+{r.growth_per_day * 100:.2f} %/day)" if growth else r.topic for r in rows]
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel("bytes in, p99 (MB/s)")
    ax.set_ylabel("topic")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return _svg(fig, "growth" if growth else "throughput")


@_styled
def batches_chart(rows: Sequence[BatchRow]) -> str:
    """Bytes moved (GB) and estimated duration (minutes) per reassignment batch."""
    fig = _figure(10, 5)
    top, bottom = fig.subplots(2, 1, sharex=True)
    x = np.array([r.batch for r in rows])
    top.bar(x, [r.moved_bytes / 1e9 for r in rows], color=_SERIES[0][2])
    top.set_ylabel("moved (GB)")
    top.set_title("Data moved per reassignment batch")
    bottom.bar(x, [r.estimated_seconds / 60 for r in rows], color=_SERIES[2][2])
    bottom.set_ylabel("estimated duration (min)")
    bottom.set_xlabel("batch")
    bottom.set_title("Estimated duration per batch at its throttle")
    if len(x) <= 40:
        bottom.set_xticks(x)
    fig.tight_layout()
    return _svg(fig, "batches")


@_styled
def findings_chart(findings: Sequence[Finding]) -> str:
    """Findings per kind, stacked by severity."""
    kinds = sorted({f.kind for f in findings})
    fig = _figure(10, 1.4 + 0.35 * max(len(kinds), 1))
    ax = fig.subplots()
    y = np.arange(len(kinds))
    left = np.zeros(len(kinds))
    for severity in sorted(Severity, key=lambda s: -s.rank):
        counts = np.array([sum(f.kind == k and f.severity is severity for f in findings) for k in kinds], dtype=float)
        if counts.any():
            ax.barh(y, counts, left=left, label=severity.value, color=_SEVERITY_COLOURS[severity])
            left += counts
    ax.set_yticks(y, kinds)
    ax.invert_yaxis()
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("findings (count)")
    ax.set_ylabel("kind")
    ax.set_title("Audit findings by kind and severity")
    if kinds:
        ax.legend(loc="lower right")
    fig.tight_layout()
    return _svg(fig, "findings")


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), dpi=100)


def _pct(value: float | None) -> float:
    return np.nan if value is None else value * 100


def _svg(fig: Figure, name: str) -> str:
    """SVG text without the XML prolog, with ids unique to the chart so several can share one page."""
    buf = io.StringIO()
    with matplotlib.rc_context(_RC | {"svg.hashsalt": f"poolplan-{name}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buf.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text[text.index("<svg"):], flags=re.S)
    return re.sub(r'id="([^"]+)"', rf'id="{name}-\1"', text).replace('href="#', f'href="#{name}-').replace(
        "url(#", f"url(#{name}-"
    )
