"""Render a `ReportModel` as the self-contained HTML report, its Markdown twin and the chart files."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import jinja2
from markupsafe import Markup

from planner.report import charts as draw
from planner.report.model import ReportModel
from planner.report.templates import HTML_TEMPLATE, MARKDOWN_TEMPLATE

__all__ = ["RenderedReport", "render_report", "CHART_NAMES", "MAX_FINDING_ROWS"]

#: Every chart the report can hold, in page order.
CHART_NAMES = ("pools", "heatmap", "throughput", "growth", "batches", "findings")

#: Findings listed in the report (all of them are in ``audit/findings.md``).
MAX_FINDING_ROWS = 200


@dataclass(frozen=True)
class RenderedReport:
    """The HTML page, the Markdown twin and each chart's SVG (for the Markdown twin's ``charts/`` directory)."""

    html: str
    markdown: str
    charts: Mapping[str, str]


def render_report(model: ReportModel, *, has_policy: bool) -> RenderedReport:
    """Draw the charts the model has data for and fill both templates; same model, same bytes."""
    charts = _charts(model)
    context = {
        "m": model,
        "kpis": _kpis(model),
        "has_policy": has_policy,
        "max_rows": MAX_FINDING_ROWS,
        "total_moved": sum(b.moved_bytes for b in model.batches),
        "total_seconds": sum(b.estimated_seconds for b in model.batches),
    }
    html = _env(autoescape=True).from_string(HTML_TEMPLATE).render(
        charts={k: Markup(charts[k]) if k in charts else None for k in CHART_NAMES}, **context
    )
    markdown = _env(autoescape=False).from_string(MARKDOWN_TEMPLATE).render(
        charts={k: charts.get(k) for k in CHART_NAMES}, **context
    )
    return RenderedReport(html=html, markdown=markdown.rstrip() + "\n", charts=charts)


def _charts(model: ReportModel) -> dict[str, str]:
    out: dict[str, str] = {}
    if model.pools:
        out["pools"] = draw.pool_utilisation_chart(model.pools)
    if model.heat is not None:
        out["heatmap"] = draw.broker_heatmap(model.heat)
    if model.top_throughput:
        out["throughput"] = draw.topics_chart(model.top_throughput, title="Top topics by throughput (bytes in, p99)")
        out["growth"] = draw.topics_chart(model.top_growth, title="Top topics by growth", growth=True)
    if model.batches:
        out["batches"] = draw.batches_chart(model.batches)
    if model.findings:
        out["findings"] = draw.findings_chart(model.findings)
    return out


def _kpis(model: ReportModel) -> list[tuple[str, str]]:
    h = model.headline
    out = [(label, str(h[key])) for key, label in (("brokers", "brokers"), ("racks", "racks"), ("topics", "topics"),
                                                     ("partitions", "partitions")) if key in h]
    if "horizon_days" in h:
        out.append(("forecast horizon", f"{h['horizon_days']} days"))
    if "moved_bytes" in h:
        out.append(("to move", f"{_gb(h['moved_bytes'])} in {h['partitions_moved']} partitions"))
        added = {p: n for p, n in h["brokers_to_add"].items() if n}
        out.append(("brokers to add", ", ".join(f"{p}: {n}" for p, n in added.items()) or "none"))
        gap = h.get("solver_gap")
        out.append(("solver", f"{h['solver_status']}" + ("" if gap is None else f", gap {gap * 100:.2f} %")))
    if "batches" in h:
        plural = "" if h["batches"] == 1 else "es"
        out.append(("reassignment", f"{h['batches']} batch{plural}, {_duration(h['estimated_seconds'])}"))
    if "findings" in h:
        counts = {s: n for s, n in h["findings"].items() if n}
        out.append(("audit findings", ", ".join(f"{n} {s}" for s, n in counts.items()) or "none"))
    return out


def _env(*, autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(autoescape=autoescape, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=False, lstrip_blocks=False)
    env.filters |= {"pct": _pct, "mbps": _mbps, "gb": _gb, "duration": _duration, "growth": _growth,
                    "dimlabel": lambda d: draw.DIMENSION_LABELS.get(d, d), "capacity": _capacity}
    return env


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f} %"


def _mbps(value: float | None) -> str:
    return "—" if value is None else f"{value / 1e6:,.2f} MB/s"


def _gb(value: float | None) -> str:
    """Bytes in the largest unit (decimal: MB, GB, TB) that keeps the number at least 1."""
    if value is None:
        return "—"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if abs(value) >= scale:
            return f"{value / scale:,.2f} {unit}"
    return f"{value / 1e6:,.3f} MB"


def _growth(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:+.2f} %/day"


def _capacity(value: float, dimension: str) -> str:
    if dimension in ("nw_in", "nw_out"):
        return _mbps(value)
    if dimension == "disk":
        return _gb(value)
    return f"{value:,.0f} replicas"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    minutes = math.ceil(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"
