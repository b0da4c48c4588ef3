"""Every number the report shows, read from the page in Chromium and checked against the files it came from.

The sample cluster runs through every stage but Spark (`sample_run`), and an earlier quarter of it is planned
again for `--compare`. Chromium renders the report; the page's tables, headline figures and paragraphs are read
back as the reader sees them (``innerText``) and each number is recomputed here, independently of
``planner.report``, from ``plan.json``, ``findings.json``, the profile, the snapshot, the bundle summary and the
policy. A number is right when it equals its source within the rounding it is shown with. Every table on the
page must be one this test knows, so a new table cannot escape the check.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pytest

from planner.cli import main
from planner.report import CHART_NAMES
from pools.atomic import write_bytes

from .browser import chromium, load_page
from .sample_run import build_previous_run, build_sample_run, write_backtest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("report-numbers"),  # the rendered page is built once per module: one xdist worker
    pytest.mark.skipif(chromium() is None, reason="needs Debian's chromium package (installed by .ci/run)"),
]

DIMS = {"Network in": "nw_in", "Network out": "nw_out", "Disk": "disk", "Replicas": "replicas"}
UNITS = {"B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15}
SEVERITIES = ("critical", "error", "warning", "info")
CHECKED_TABLES = {"pools", "runway", "order-by", "backtest-pools", "backtest-topics", "backtest-horizons", "n-minus-1",
                  "risks", "risk-pools", "compare-pools", "compare-topics", "topics", "pool-rows", "tenants", "batches",
                  "findings", "read-only"}

READ_PAGE = r"""(() => {
  const text = el => el.innerText.trim();
  const tables = {};
  for (const t of document.querySelectorAll('table')) {
    const rows = [], details = [];
    for (const tr of t.querySelectorAll('tbody tr')) {
      if (tr.classList.contains('detail')) { details[rows.length - 1] = text(tr); continue; }
      rows.push([...tr.querySelectorAll('td')].map(text));
    }
    tables[t.id.replace(/^table-/, '')] = {headers: [...t.querySelectorAll('th')].map(text), rows, details};
  }
  const paras = {};
  for (const s of document.querySelectorAll('section')) paras[s.id] = [...s.querySelectorAll(':scope > p')].map(text);
  const kpis = [...document.querySelectorAll('.kpis li')].map(li => [text(li.querySelector('b')),
    li.innerText.slice(li.querySelector('b').innerText.length).trim()]);
  return {tables, paras, kpis, subtitle: text(document.querySelector('header .meta')),
          sections: [...document.querySelectorAll('section')].map(s => s.id)};
})()"""

# A line break between two characters of which neither is a space breaks a word, a number or a command.
MID_WORD_BREAKS = r"""(() => {
  const bad = [];
  for (const el of document.querySelectorAll('td, code.fix, .kpis b')) {
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let top = null, prev = null, seen = '';
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (let i = 0; i < n.data.length; i++) {
        const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
        const box = r.getClientRects()[0], ch = n.data[i];
        if (!box) { prev = ch; seen += ch; continue; }  // a space collapsed at the end of a line
        if (top !== null && Math.abs(box.top - top) > 2 && !/\s/.test(ch) && !/\s/.test(prev))
          bad.push(seen.slice(-30) + ' | ' + n.data.slice(i, i + 20));
        top = box.top; prev = ch; seen += ch;
      }
    }
  }
  return bad;
})()"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The sample run, an earlier quarter, the report comparing them, and what Chromium shows of it."""
    root = tmp_path_factory.mktemp("numbers")

    def run_cli(*argv):
        return main([str(a) for a in argv]), "", ""

    run = build_sample_run(root / "run", run_cli)
    write_backtest(run)  # the forecast's backtest: the per-pool band is calibrated and scored from it
    previous = build_previous_run(root / "previous", run, run_cli)
    assert run_cli("report", run, "--policy", run / "sample" / "pools.toml", "--compare", previous)[0] == 0
    charts = {name: f"figure#chart-{name} svg" for name in CHART_NAMES}
    result = load_page(run / "report" / "report.html", charts, evaluate={"page": READ_PAGE, "breaks": MID_WORD_BREAKS})
    assert result.errors == []
    if os.environ.get("POOLPLAN_UPDATE_SCREENSHOT"):  # re-take the README's picture (docs/img/report.png)
        write_bytes(ROOT / "docs" / "img" / "report.png", result.screenshot)
    assert result.screenshot.startswith(b"\x89PNG")
    return Sources(run, previous), result.values, result.counts


def test_sample_report_end_to_end(page):
    """Only the planted problems are found, and every chart is drawn (the batches chart once there are two)."""
    src, _, counts = page
    truth = json.loads((src.run / "sample" / "truth.json").read_text())
    assert len(src.findings["findings"]) == len(truth["planted"])
    batches = len(src.bundle["batches"])
    assert batches >= 1
    assert counts == {**dict.fromkeys(CHART_NAMES, 1), "batches": int(batches > 1)}


class Sources:
    """The run's files, read as plain JSON and TOML."""

    def __init__(self, run: Path, previous: Path) -> None:
        self.run = run
        self.plan = _json(run / "plan" / "plan.json")
        self.findings = _json(run / "audit" / "findings.json")
        self.profile = {r["topic"]: r for r in _json(run / "profile" / "topic_profile.json")}
        self.snapshot = _json(run / "snapshot.json")
        self.bundle = _json(run / "bundle" / "summary.json")
        self.policy = tomllib.loads((run / "sample" / "pools.toml").read_text())
        self.previous_plan = _json(previous / "plan" / "plan.json")
        self.previous_profile = {r["topic"]: r for r in _json(previous / "profile" / "topic_profile.json")}
        self.previous_snapshot = _json(previous / "snapshot.json")
        self.horizon = {r["forecast_horizon_days"] for r in self.profile.values()}.pop()
        self.as_of = max(date.fromisoformat(r["last_ts"][:10]) for r in self.profile.values())
        self.failures = self.policy["defaults"].get("tolerated_broker_failures", 1)

    def brokers(self, plan: dict, key: str, pool: str) -> list[str]:
        return sorted((b for b, p in plan[key].items() if p == pool), key=int)

    def cell(self, plan: dict, broker: str, dim: str) -> dict:
        return plan["utilisation"]["brokers"][broker][dim]

    def pool_row(self, pool: str, dim: str) -> dict:
        return self.plan["utilisation"]["pools"][pool][dim]

    def after_capacities(self, pool: str, dim: str) -> list[tuple[str, float]]:
        """The pool's brokers after the plan with their capacity (those still to buy, ``planned_brokers``,
        included), the ones the plan adds without placing on them (a plan written before ``planned_brokers``) as
        ``new``."""
        real = [(b, self.cell(self.plan, b, dim)["capacity"]) for b in self.brokers(self.plan, "brokers", pool)]
        added = self.plan["brokers_to_add"].get(pool, 0) - sum(
            b["pool"] == pool for b in self.plan.get("planned_brokers", []))
        if not added:
            return real
        extra = self.pool_row(pool, dim)["capacity_with_added"] - sum(c for _, c in real)
        return real + [("new", extra / added)] * added

    def moves(self) -> dict[tuple[str, int], dict]:
        return {(m["topic"], m["partition"]): m for m in self.plan["partitions"] if m["old_replicas"] != m["replicas"]}


def test_every_table_on_the_page_is_checked(page):
    _, shown, _ = page
    assert set(shown["page"]["tables"]) <= CHECKED_TABLES, set(shown["page"]["tables"]) - CHECKED_TABLES
    assert shown["page"]["sections"] == ["recommendation", "summary", "pools", "runway", "backtest", "n-minus-1",
                                         "cost", "risks",
                                         "compare", "heatmap", "topics", "tenants", "batches", "findings"]


def test_lines_break_only_at_spaces(page):
    _, shown, _ = page
    assert shown["breaks"] == []


def test_headline_figures(page):
    src, shown, _ = page
    kpis = dict((label, value) for value, label in shown["page"]["kpis"])
    snap, plan = src.snapshot, src.plan
    assert kpis["brokers"] == str(len(snap["brokers"])) and kpis["partitions"] == str(len(snap["partitions"]))
    assert kpis["topics"] == str(len(snap["topics"]))
    assert kpis["racks"] == str(len({b["rack"] for b in snap["brokers"]}))
    moves = src.moves().values()
    copying = [m for m in moves if set(m["replicas"]) - set(m["old_replicas"])]
    reordered = [m for m in moves if set(m["replicas"]) == set(m["old_replicas"])]
    m = re.fullmatch(r"(\d+) partitions? cop(?:y|ies) (.+?)(?:, (\d+) leader-only reorderings?)?"
                     r"(?:, (\d+) partitions? only drops? replicas)?", kpis["to move"])
    assert m, kpis["to move"]
    _close(m[2], plan["moved_bytes"])
    assert (int(m[1]), int(m[3] or 0), int(m[4] or 0)) == (
        len(copying), len(reordered), len(moves) - len(copying) - len(reordered))
    added = {p: n for p, n in plan["brokers_to_add"].items() if n}
    assert kpis["brokers to add"] == (", ".join(f"{p}: {n}" for p, n in sorted(added.items())) or "none")
    batches, duration = re.fullmatch(r"(\d+) batch(?:es)?, (.+)", kpis["reassignment"]).groups()
    assert int(batches) == len(src.bundle["batches"])
    if src.bundle["estimated_seconds"] > 30 * 86_400:  # no schedule: a problem to fix, in whole days
        assert duration == f"{math.ceil(src.bundle['estimated_seconds'] / 86_400):,d} days: no schedule, fix the " \
                           f"throttle (see Reassignment batches)"
    else:
        _close_duration(duration, src.bundle["estimated_seconds"])
    counts = src.findings["counts"]["by_severity"]
    assert kpis["audit findings"] == ", ".join(f"{counts[s]} {s}" for s in SEVERITIES if counts[s])


def test_subtitle_dates_and_horizon(page):
    src, shown, _ = page
    assert shown["page"]["subtitle"] == (f"Snapshot taken {src.snapshot['taken_at']}; metric history to "
                                         f"{src.as_of.isoformat()}; forecast horizon {src.horizon} days; compared "
                                         f"with run previous.")


def test_pool_table_capacity_before_and_after(page):
    src, shown, _ = page
    rows = _rows(shown, "pools")
    assert len(rows) == 4 * len(src.plan["utilisation"]["pools"])
    for r in rows:
        pool, dim = r["pool"], DIMS[r["dimension"]]
        before, after = src.brokers(src.plan, "brokers_before", pool), src.brokers(src.plan, "brokers", pool)
        added = src.plan["brokers_to_add"].get(pool, 0)
        assert r["brokers before → after"] == f"{len(before)} → {len(after)}" + (f" + {added} new" if added else "")
        cap_before = sum(src.cell(src.plan, b, dim)["capacity"] for b in before)
        row = src.pool_row(pool, dim)
        _close(r["capacity before the plan"], cap_before)
        _close(r["capacity after the plan"], row["capacity_with_added"])
        # every column a load on brokers (issue 39): now, at forecast before and after the plan
        _close(r["now: load on today's brokers"], sum(src.cell(src.plan, b, dim)["now"] for b in before) / cap_before)
        _close(r["at forecast: load on today's brokers, today's placement"],
               sum(src.cell(src.plan, b, dim)["before"] for b in before) / cap_before)
        after = src.brokers(src.plan, "brokers", pool)  # the brokers it places on; added ones carry nothing
        _close(r["at forecast: load on the pool's brokers after the plan"],
               sum(src.cell(src.plan, b, dim)["after"] for b in after)
               / sum(src.cell(src.plan, b, dim)["capacity"] for b in after))
        _close(r["busiest broker after the plan: its load"],
               max(src.cell(src.plan, b, dim)["after"] / src.cell(src.plan, b, dim)["capacity"] for b in after))
        _close(r["max utilisation (policy)"], row["headroom"])


def test_runway(page):
    src, shown, _ = page
    rows = _rows(shown, "runway")
    assert len(rows) == len(_rows(shown, "pools"))
    assert f"({src.horizon} days)" in shown["page"]["tables"]["runway"]["headers"][3]
    span = max(r["days_observed"] for r in src.profile.values())  # pools.evidence: the history's span
    supported = src.as_of + timedelta(days=span)
    until = src.as_of + timedelta(days=max(span, src.horizon))  # nothing is computed past the later of them
    assert any(f"The history covers {span:,d} day{'s' if span != 1 else ''}: a crossing by {supported.isoformat()} "
               f"is a forecast" in p and f"({until.isoformat()}), is the measured trend" in p
               for p in shown["page"]["paras"]["runway"])
    for r in rows:
        pool, dim = r["pool"], DIMS[r["dimension"]]
        row = src.pool_row(pool, dim)
        d0, dh = row["demand_now"], row["demand_forecast"]
        _close(r["demand now, the pool's topics"], d0)
        _close(r[f"demand at forecast ({src.horizon} days), the pool's topics"], dh)
        caps = sorted((c for _, c in src.after_capacities(pool, dim)), reverse=True)
        usable = sum(caps[src.failures:])
        limit = row["headroom"] * usable
        _close(r["usable capacity"], usable)
        _close(r["limit"], limit)
        for column, edge in (("earliest", "high"), ("likely", "forecast"), ("latest", "low")):
            _check_crossing(src, r[column], pool, dim, d0, limit, edge, until, supported)
        real = sorted((c for b, c in src.after_capacities(pool, dim) if b != "new"), reverse=True)
        if src.plan["brokers_to_add"].get(pool, 0):
            _check_crossing(src, r["likely, without the brokers to buy"], pool, dim, d0,
                            row["headroom"] * sum(real[src.failures:]), "forecast", until, supported)
        else:
            assert r["likely, without the brokers to buy"] == "no brokers to buy"
        dated = re.fullmatch(r"(\d{4}-\d\d-\d\d)(?: \(trend\))?", r["likely"])
        assert r["days (likely)"] == (f"{(date.fromisoformat(dated[1]) - src.as_of).days:,d}" if dated else "—")


def _check_crossing(src, text: str, pool: str, dim: str, now: float, limit: float, edge: str, until: date,
                    supported: date) -> None:
    """A crossing cell against an upper bound of the pool's demand on the last day computed: every topic's demand
    follows its bytes-in or storage forecast edge (capped by retention, which only lowers it), so the pool's demand
    is at most its demand now × the largest level/now ratio × the fastest edge's growth; the pool's calibrated band
    (docs/formats.md, *A pool's band*) puts its low edge under the forecast and its high edge under the larger of
    the forecast and the growth band's high edge × e^(the band's widest q_high); a date past the history's span
    (``supported``) is marked as a trend."""
    span = (until - src.as_of).days
    trend = text.endswith(" (trend)")
    text = text.removesuffix(" (trend)")
    if re.fullmatch(r"\d{4}-\d\d-\d\d", text):
        assert trend == (date.fromisoformat(text) > supported), text
    if now > limit:
        assert text == "already past it"
        return
    if dim == "replicas":
        assert text == "not at this growth"
        return
    topics = [t for t, p in src.plan["topics"].items() if p == pool and t in src.profile]
    ratio, factor = 1.0, 1.0
    for t in topics:
        r = src.profile[t]
        for now_key, fc, low, high, growth in (
                ("bytes_in_p99", "forecast_bytes_in_p99", "forecast_bytes_in_p99_low", "forecast_bytes_in_p99_high",
                 "bytes_in_p99_growth_per_day"),
                ("storage_bytes", "forecast_storage_bytes", "forecast_storage_low", "forecast_storage_high",
                 "storage_growth_per_day")):
            if r[now_key] <= 0 or r[fc] <= 0:
                continue
            level = r[fc] / (1 + r[growth]) ** r["forecast_horizon_days"]
            values = (r[fc], r[high]) if edge == "high" else (r[fc],)
            ratio = max(ratio, level / r[now_key])
            factor = max(factor, *((v / level) ** (1 / r["forecast_horizon_days"]) for v in values))
    sums = _pool_sums(src)
    widest = max((q[1] for m in ("bytes_in_p99", "storage_bytes") for q in _pool_band(sums, pool, m)[0].values()),
                 default=0.0) if edge == "high" else 0.0
    if now * ratio * factor ** span * math.exp(widest) <= limit:
        assert text in (f"after {until.isoformat()}", "not at this growth"), text
    elif text != f"after {until.isoformat()}":
        assert src.as_of < date.fromisoformat(text) <= until, text


def test_order_by(page):
    src, shown, _ = page
    runway = _rows(shown, "runway")
    lead = src.policy.get("new_broker", {}).get("lead_time_days")
    rows = _rows(shown, "order-by")
    assert [r["pool"] for r in rows] == sorted({r["pool"] for r in runway})
    for r in rows:
        added = src.plan["brokers_to_add"].get(r["pool"], 0)
        assert r["brokers still to buy"] == str(added)
        assert r["lead time"] == ("—" if lead is None else f"{lead:,d} day{'s' if lead != 1 else ''}")
        column = "likely, without the brokers to buy" if added else "likely"
        crossings = [(x[column], x["dimension"]) for x in runway if x["pool"] == r["pool"]]
        day = r"(\d{4}-\d\d-\d\d)(?: \(trend\))?"
        dated = sorted((c, d) for c, d in crossings if re.fullmatch(day, c))
        supported = src.as_of + timedelta(days=max(x["days_observed"] for x in src.profile.values()))
        if any(c == "already past it" for c, _ in crossings):
            assert (r["crosses"], r["order by"]) == ("already past it", "overdue: already past the limit")
        elif dated or added:  # a plan that buys brokers always has an order-by date (issue 39)
            if dated:
                assert (r["crosses"], r["first limit crossed without them"]) == dated[0]
                assert re.fullmatch(rf"{day} … .+", r["band: earliest … latest"]), r
            else:  # no pool-wide limit crossed without them by the horizon: needed by the horizon itself
                horizon = (src.as_of + timedelta(days=src.horizon)).isoformat()
                trend = " (trend)" if src.as_of + timedelta(days=src.horizon) > supported else ""
                assert (r["crosses"], r["first limit crossed without them"]) == (horizon + trend, "—")
                assert "the plan needs the brokers by its horizon" in r["evidence"]
            crossing = date.fromisoformat(re.fullmatch(day, r["crosses"])[1])
            trend = " (trend)" if crossing > supported else ""
            order = crossing - timedelta(days=lead or 0)
            assert r["order by"] == (f"overdue since {order}{trend}" if order < src.as_of else
                                     order.isoformat() + trend)
            assert r["evidence"].startswith(f"{(supported - src.as_of).days:,d} days of history, ")
            assert ("past it: a trend" in r["evidence"]) == bool(trend)
            quoted = re.search(r"the pool's band held (.+ %) out of time at (\d+) days \((\d+) origins?\)",
                               r["evidence"])
            if quoted:  # the pool's own out-of-time score, at the shortest judged horizon reaching the crossing
                series = {"nw_in": "bytes in, p99", "nw_out": "bytes in, p99", "disk": "storage"}[
                    DIMS[r["first limit crossed without them"]]]
                judged = [x for x in _rows(shown, "backtest-pools") if (x["pool"], x["series"]) == (r["pool"], series)
                          and int(x["forecasts"]) >= 5 and int(x["days ahead"]) >= (crossing - src.as_of).days]
                first = min(judged, key=lambda x: int(x["days ahead"]))
                assert quoted.groups() == (first["band held, out of time"], first["days ahead"], first["forecasts"])
        elif any(c.startswith("after ") for c, _ in crossings):
            until = date.fromisoformat(next(c for c, _ in crossings if c.startswith("after "))[len("after "):])
            assert r["crosses"] == f"after {until}" and r["first limit crossed without them"] == "—"
            if until - timedelta(days=lead or 0) <= src.as_of:  # the lead time reaches back past the last day
                assert r["order by"] == "may be due now: the lead time reaches back past the last day computed"
            else:
                assert r["order by"] == f"after {until - timedelta(days=lead or 0)}"
        else:
            assert r["order by"] == "no crossing ahead"


def _pool_sums(src) -> dict:
    """docs/formats.md, *A pool's band*: per pool (plan.json's topics), metric, origin and horizon, the sums of its
    topics' actual, forecast, low and high in profile/backtest.parquet (``{}`` without one)."""
    path = src.run / "profile" / "backtest.parquet"
    if not path.exists():
        return {}
    import pyarrow.parquet as pq
    sums: dict = {}
    for r in pq.read_table(path).to_pylist():
        pool = src.plan["topics"].get(r["topic"])
        if pool:
            acc = sums.setdefault((pool, r["metric"], r["origin"], r["horizon_days"]), [0.0] * 4)
            for i, k in enumerate(("actual", "forecast", "low", "high")):
                acc[i] += r[k]
    return sums


def _calibrated(sums: dict, pools: set, metric: str, known) -> dict[int, tuple[float, float, int, int | None]]:
    """The documented calibration of the ``known`` sums of ``pools``: per horizon (q_low, q_high, origins,
    derived_from): tested with >= 10 rows from >= 5 origins, longer ones derived (q ∝ h^p from the shortest and
    longest tested)."""
    by_h: dict = {}
    for k, v in sums.items():
        if k[0] in pools and k[1] == metric and known(k) and v[0] > 0 and v[1] > 0:
            by_h.setdefault(k[3], []).append((k[2], math.log(v[0] / v[1])))
    tested, short = {}, {}
    for h, pts in sorted(by_h.items()):
        origins = len({o for o, _ in pts})
        if len(pts) >= 10 and origins >= 5:
            r = sorted(x for _, x in pts)
            lo, hi = (_quantile(r, 0.1), _quantile(r, 0.9))
            tested[h] = (min(0.0, lo), max(0.0, hi), origins, None)
        else:
            short[h] = origins
    if not tested:
        return {}
    s, t = min(tested), max(tested)

    def power(i):
        a, b = tested[s][i], tested[t][i]
        return 0.0 if t == s or a == 0 or b == 0 else min(1.0, max(0.0, math.log(b / a) / math.log(t / s)))
    return tested | {h: (tested[t][0] * (h / t) ** power(0), tested[t][1] * (h / t) ** power(1), n, t)
                     for h, n in short.items() if h > t}


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between order statistics."""
    x = q * (len(ordered) - 1)
    i = int(math.floor(x))
    return ordered[i] + (ordered[min(i + 1, len(ordered) - 1)] - ordered[i]) * (x - i)


def _pool_band(sums: dict, pool: str, metric: str, known=lambda k: True) -> tuple[dict, str | None]:
    """A pool's band of ``metric``: its own calibration, else every pool's sums pooled; and whose it is."""
    own = _calibrated(sums, {pool}, metric, known)
    if own:
        return own, "own"
    pooled = _calibrated(sums, {k[0] for k in sums}, metric, known)
    return pooled, "pooled" if pooled else None


def _widen(band: dict, h: float, forecast: float, low: float, high: float) -> tuple[float, float]:
    """The documented band at ``h`` days from the forecast and the growth band's edges there."""
    at = sorted(band)
    last = at[-1]
    q = [float(np.interp(h, [0, *at], [0.0, *(band[x][i] for x in at)])) for i in (0, 1)]
    past = max(0.0, 1 - last / h) if h > 0 else 0.0
    return (forecast * math.exp(q[0] + past * min(0.0, math.log(max(low, 1e-300) / forecast))),
            forecast * math.exp(q[1] + past * max(0.0, math.log(max(high, 1e-300) / forecast))))


def test_backtest(page):
    """Scored from profile/backtest.parquet as docs/formats.md says: per pool, series and days ahead, the pool's
    summed forecasts per origin against the summed actual values, each origin judged by the pool's own band
    calibrated on the pool rows known then (every pool's pooled while its own has no tested horizon); the band
    today and what it rests on."""
    src, shown, _ = page
    tables = shown["page"]["tables"]
    sums = _pool_sums(src)
    if not sums:
        assert "backtest-pools" not in tables
        assert shown["page"]["paras"]["backtest"][0].startswith("No backtest")
        return
    labels = {"bytes_in_p99": "bytes in, p99", "storage_bytes": "storage"}
    points: dict = {}
    for (pool, metric, origin, h), (a, f, lo, hi) in sorted(sums.items()):
        band, _ = _pool_band(sums, pool, metric, lambda k: k[2] + timedelta(days=k[3]) <= origin)
        if band and a > 0 and f > 0:
            low, high = _widen(band, h, f, lo, hi)
            points.setdefault((pool, labels[metric], str(h)), []).append((a, f, low <= a <= high))
    assert len(points) > 4 and any(len(p) >= 5 for p in points.values())
    shown_rows = _rows(shown, "backtest-pools")
    assert [(r["pool"], r["series"], r["days ahead"]) for r in shown_rows] == \
        sorted(points, key=lambda k: (k[0], k[1], int(k[2])))
    metric_of = {v: k for k, v in labels.items()}
    for r in shown_rows:
        p = points[r["pool"], r["series"], r["days ahead"]]
        assert r["forecasts"] == f"{len(p):,d}"
        _close(r["error"], sum(abs(f - a) / a for a, f, _ in p) / len(p))
        held = r["band held, out of time"]
        assert held.endswith(": too few origins to judge") == (len(p) < 5), held
        _close(held.removesuffix(": too few origins to judge"), sum(ok for _, _, ok in p) / len(p))
        band, whose = _pool_band(sums, r["pool"], metric_of[r["series"]])
        _check_band(r, band, int(r["days ahead"]))
        rests = r["band today rests on"]
        if whose is not None:
            whose_text = "its own sums: " if whose == "own" else "every pool's sums (too few of its own): "
            assert rests.startswith(whose_text), r


def _topic_rows(src) -> dict:
    """profile/backtest.parquet's rows keyed by (topic, metric, origin, horizon), as _pool_sums keys a pool's."""
    import pyarrow.parquet as pq
    return {(r["topic"], r["metric"], r["origin"], r["horizon_days"]): [r["actual"], r["forecast"], r["low"], r["high"]]
            for r in pq.read_table(src.run / "profile" / "backtest.parquet").to_pylist()}


def _check_band(row: dict, band: dict, h: int) -> None:
    """The shown band today at ``h`` (low / high edge) and what it rests on (tested on n origins, derived)."""
    today, rests = band.get(h), row["band today rests on"]
    if today is None:
        assert row["band today (low / high edge)"] == "—" and "untested" in rests, row
        return
    low, high = row["band today (low / high edge)"].split(" / ")
    _close(low, math.expm1(today[0])), _close(high, math.expm1(today[1]))
    assert (f"tested on {today[2]:,d} origin" if today[3] is None else f"derived from {today[3]} days") in rests, row


def test_backtest_topics_and_horizons(page):
    """The topic band (docs/formats.md, *Calibrated band*: every topic's rows pooled) scored out of time per series
    and horizon, and per top topic (the most bytes in) on its bytes-in series."""
    src, shown, _ = page
    if not _pool_sums(src):
        assert "backtest-horizons" not in shown["page"]["tables"]
        return
    rows = _topic_rows(src)
    topics = {k[0] for k in rows}
    labels = {"bytes_in_p99": "bytes in, p99", "storage_bytes": "storage"}
    scored: dict = {}
    for (topic, metric, origin, h), (a, f, lo, hi) in sorted(rows.items()):
        band = _calibrated(rows, topics, metric, lambda k: k[2] + timedelta(days=k[3]) <= origin)
        scored.setdefault((metric, h), [])
        if band and a > 0:
            low, high = _widen(band, h, f, lo, hi)
            scored[metric, h].append((topic, origin, a, f, low <= a <= high))
    shown_rows = _rows(shown, "backtest-horizons")
    assert [(r["series"], r["days ahead"]) for r in shown_rows] == [(labels[m], str(h)) for m, h in sorted(scored)]
    for r, ((metric, h), hits) in zip(shown_rows, sorted(scored.items())):
        origins = len({o for _, o, *_ in hits})
        assert (r["origins scored"], r["forecasts scored"]) == (f"{origins:,d}", f"{len(hits):,d}")
        held = r["band held, out of time"]
        if not hits:
            assert held == "—"
        else:
            assert held.endswith(": too few origins to judge") == (origins < 5), held
            _close(held.removesuffix(": too few origins to judge"), sum(x[-1] for x in hits) / len(hits))
        _check_band(r, _calibrated(rows, topics, metric, lambda k: True), h)
    by_rate = sorted(src.profile.values(), key=lambda p: (-p["bytes_in_p99"], p["topic"]))[:15]
    top = [p["topic"] for p in by_rate]
    shown_topics = _rows(shown, "backtest-topics")
    assert shown_topics and [r["topic"] for r in shown_topics] == sorted(
        (r["topic"] for r in shown_topics), key=top.index)
    for r in shown_topics:
        hits = [x for x in scored["bytes_in_p99", int(r["days ahead"])] if x[0] == r["topic"]]
        assert r["pool"] == src.plan["topics"].get(r["topic"], "—")
        assert r["forecasts"] == f"{len(hits):,d}"
        _close(r["error"], sum(abs(f - a) / a for _, _, a, f, _ in hits) / len(hits))
        _close(r["band held, out of time"], sum(x[-1] for x in hits) / len(hits))
    assert {(r["topic"], r["days ahead"]) for r in shown_topics} == {
        (t, str(h)) for (m, h), hits in scored.items() if m == "bytes_in_p99" for t, *_ in hits if t in top}


def test_n_minus_1(page):
    src, shown, _ = page
    for r in _rows(shown, "n-minus-1"):
        pool, dim = r["pool"], DIMS[r["dimension"]]
        row = src.pool_row(pool, dim)
        brokers = src.after_capacities(pool, dim)
        assert r["brokers"] == str(len(brokers))
        lost = sorted(brokers, key=lambda bc: (-bc[1], int(bc[0]) if bc[0].isdigit() else 1 << 62))[
            : max(src.failures, 1)]
        assert r["broker lost"] == ", ".join(f"broker {b}" if b.isdigit() else "a new broker" for b, _ in lost)
        left = sum(c for _, c in brokers) - sum(c for _, c in lost)
        _close(r["capacity left"], left)
        _close(r["now, the pool's topics"], row["demand_now"] / left)
        _close(r["at forecast, the pool's topics"], row["demand_forecast"] / left)
        _close(r["max utilisation (policy)"], row["headroom"])
        over = row["demand_forecast"] / left - row["headroom"]
        if over <= 0:
            assert r["within the limit at forecast"] == "yes"
        else:
            assert r["within the limit at forecast"].startswith("no, ")
            _close(r["within the limit at forecast"][4: -len(" over")], over)


def test_read_only_topics(page):
    """Kafka's rule from the snapshot file alone: a writable partition goes read-only for ``acks=all`` when its
    in-sync replicas now (every replica where none is reported) minus the brokers lost fall below the topic's own
    ``min.insync.replicas``; the report loses at least one broker per pool (its policy's tolerance if more), the
    broker holding most at-risk replicas first (ties: lowest id)."""
    src, shown, _ = page
    tolerance = {p["name"]: p.get("tolerated_broker_failures", src.failures) for p in src.policy.get("pool", [])}
    min_isr = {t["topic"]: int(t["configs"].get("min.insync.replicas", 1)) for t in src.snapshot["topics"]}
    at_risk: dict[str, list[dict]] = {}
    for q in src.snapshot["partitions"]:
        pool = src.plan["topics"].get(q["topic"])
        lose = max(tolerance.get(pool, src.failures), 1)
        in_sync = len(q["isr"] or q["replicas"])
        if q["leader"] is not None and q["leader"] >= 0 and min_isr[q["topic"]] <= in_sync < min_isr[q["topic"]] + lose:
            at_risk.setdefault(q["topic"], []).append(q)
    expected = []
    for topic, parts in at_risk.items():
        pool = src.plan["topics"].get(topic)
        lose = max(tolerance.get(pool, src.failures), 1)
        hits: dict[int, int] = {}
        for q in parts:
            for b in q["isr"] or q["replicas"]:
                hits[b] = hits.get(b, 0) + 1
        lost = sorted(hits, key=lambda b: (-hits[b], b))[:lose]
        blocked = sum(sum(b not in lost for b in q["isr"] or q["replicas"]) < min_isr[topic] for q in parts)
        rf = max(len(q["replicas"]) for q in src.snapshot["partitions"] if q["topic"] == topic)
        expected.append({"topic": topic, "pool": pool or "", "min.insync.replicas": str(min_isr[topic]),
                         "replication factor": str(rf), "broker lost": ", ".join(map(str, sorted(lost))),
                         "partitions blocked": str(blocked), "partitions at risk": str(len(parts))})
    expected.sort(key=lambda r: (r["pool"], r["topic"]))
    assert expected, "the sample plants a partition at its min ISR: the table has a row"
    assert _rows(shown, "read-only") == expected


def test_cost(page):
    src, shown, _ = page
    nb = src.policy["new_broker"]
    money = f"{nb['currency']} {nb['price']:,.0f} per {nb['period']}"
    paras = shown["page"]["paras"]["cost"]
    line = next(p for p in paras if p.startswith("The policy's new broker type:"))
    rate_in, rate_out, disk, replicas = re.fullmatch(
        r"The policy's new broker type: (.+) in, (.+) out, (.+) of disk, (.+ replicas), (.+) each\.", line).groups()[:4]
    _close(rate_in, nb["nw_in"]), _close(rate_out, nb["nw_out"]), _close(disk, nb["disk"])
    _close(replicas, nb["replicas"])
    assert line.endswith(f", {money} each.")
    added = {p: n for p, n in src.plan["brokers_to_add"].items() if n}
    if not added:
        assert "cost" not in shown["page"]["tables"]
        assert "The plan adds no brokers: nothing to buy for the forecast horizon." in paras
    else:
        rows = _rows(shown, "cost")
        for r in rows[:-1]:
            assert int(r["brokers to add"]) == added[r["pool"]] and r["price per broker"] == money
        assert rows[-1]["brokers to add"] == str(sum(added.values()))


def test_risks_join_findings_and_planned_moves(page):
    src, shown, _ = page
    moves = src.moves()
    leaders = {(p["topic"], p["partition"]): p.get("leader") for p in src.snapshot["partitions"]}
    roles = {}
    for key, m in moves.items():  # broker -> what the move does there (the module docstring's rule)
        adding = [b for b in m["replicas"] if b not in m["old_replicas"]]
        leader = leaders.get(key)
        source = leader if leader in m["old_replicas"] else m["old_replicas"][0]
        roles[key] = {**({source: "from"} if adding else {}), **dict.fromkeys(adding, "to")}
        if m["replicas"][0] != m["old_replicas"][0]:
            roles[key].setdefault(m["replicas"][0], "leader")

    def copied(key):
        m = moves[key]
        return m["size_bytes"] * len(set(m["replicas"]) - set(m["old_replicas"]))

    dirs = {(p["topic"], p["partition"]): dict(zip(p["replicas"], p.get("log_dirs") or [None] * len(p["replicas"])))
            for p in src.snapshot["partitions"]}

    def expected(f) -> set:  # the causes through which a move is at risk (issue 39), nothing else
        if f["kind"] in ("under_min_isr", "offline_partition", "under_replicated", "at_min_isr",
                         "reassignment_in_progress"):
            return {k for k in moves if k == (f["topic"], f["partition"])}
        if f["kind"] == "log_dir_error":
            failed = f["evidence"].get("log_dir")
            return {k for k in moves if roles[k].get(f["broker"]) == "to" or roles[k].get(f["broker"]) == "from" and (
                failed is None or dirs.get(k, {}).get(f["broker"]) in (None, failed))}
        if f["kind"] == "utilisation_over_headroom" and f["topic"] is None:
            return {k for k in moves if roles[k].get(f["broker"]) == "to"}
        return set()

    racks = {b["id"]: b.get("rack") for b in src.snapshot["brokers"]}
    final = {(p["topic"], p["partition"]): moves.get((p["topic"], p["partition"]), {"replicas": p["replicas"]})[
        "replicas"] for p in src.snapshot["partitions"]}
    pools_on: dict[int, set] = {}
    for (topic, _), replicas in final.items():
        for b in replicas:
            if src.plan["topics"].get(topic):
                pools_on.setdefault(b, set()).add(src.plan["topics"][topic])

    def resolved(f) -> bool:  # the plan as a whole resolves a misplacement (docs/formats.md, Report)
        if f["kind"] == "replica_outside_pool":
            key = (f["topic"], f["partition"])
            return (key in moves and f["broker"] not in moves[key]["replicas"]) or \
                src.plan["brokers"].get(str(f["broker"])) == src.plan["topics"].get(f["topic"])
        if f["kind"] == "broker_mixed_pools":
            return len(pools_on.get(f["broker"], ())) <= 1
        if f["kind"] == "broker_without_pool":
            return src.plan["brokers"].get(str(f["broker"])) is not None
        if f["kind"] == "topic_without_pool":
            return src.plan["topics"].get(f["topic"]) is not None
        return False

    def fixes(f, key) -> bool:  # the move itself repairs the finding
        m = moves[key]
        removed = set(m["old_replicas"]) - set(m["replicas"])
        if f["kind"] == "replica_outside_pool":
            return key == (f["topic"], f["partition"]) and f["broker"] in removed
        if f["kind"] == "rack_shared":
            return key == (f["topic"], f["partition"]) and all(racks.get(b) for b in m["replicas"]) and \
                len({racks[b] for b in m["replicas"]}) > f["evidence"]["distinct_racks"]
        if f["kind"] in ("broker_mixed_pools", "replica_count_over_limit", "utilisation_over_headroom"):
            return f["topic"] is None and f["broker"] in removed
        return False

    def at_risk(f) -> set:
        return set() if resolved(f) else {k for k in expected(f) if not fixes(f, k)}

    wanted = [(f, at_risk(f)) for f in src.findings["findings"] if at_risk(f)]
    lead = shown["page"]["paras"]["risks"][0]
    if not wanted:
        assert "risks" not in shown["page"]["tables"] and lead.startswith(
            f"None of the plan's {len(moves):,d} moves is at risk"), lead
        return
    rows = _rows(shown, "risks")
    assert [(r["finding"], r["where"]) for r in rows] == [(f["kind"], _where(f)) for f, _ in wanted]
    for r, (f, links) in zip(rows, wanted):
        assert r["severity"] == f["severity"]
        dims = {f["evidence"].get("dimension")} | set(f["evidence"].get("dimensions") or ())
        assert r["dimension"] == (", ".join(k for k, d in DIMS.items() if d in dims) or "—")
        assert r["moves that fix it"] == str(sum(fixes(f, k) for k in moves))
        items = r["planned moves at risk through it, and the cause"].split("; ")
        more = re.fullmatch(r"and (\d+) more moves? \((.+)\)", items[-1])
        named = items[:-1] if more else items
        assert len(named) + (int(more[1]) if more else 0) == len(links)
        for item in named:
            topic, part, size, how = re.fullmatch(r"(.+)-(\d+) \((.+)\): (.+)", item).groups()
            key = (topic, int(part))
            assert key in links, item
            _close(size, copied(key))
            for b in map(int, re.findall(r"broker (\d+)", how)):
                assert b in roles[key], (item, b)
        _close(r["to copy"], sum(copied(k) for k in links))
    touched = set().union(*(links for _, links in wanted))
    serious = set().union(set(), *(links for f, links in wanted if f["severity"] in ("critical", "error")))
    k, n, part, whole, j, jbytes = re.fullmatch(
        r"(\d+) of the plan's (\d+) moves? \((.+) of (.+) to copy\) (?:is|are) at risk through what can go wrong for "
        r"that move, .*; (\d+) of them \((.+)\) through findings of severity error or worse\. Other findings put no "
        r"move at risk\.", lead).groups()
    assert (int(k), int(n), int(j)) == (len(touched), len(moves), len(serious))
    _close(part, sum(map(copied, touched))), _close(whole, src.plan["moved_bytes"])
    _close(jbytes, sum(map(copied, serious)))
    pools = _rows(shown, "risk-pools")
    expected_pools = {src.plan["topics"].get(k[0]) or "(no pool)" for k in moves} | {
        f["pool"] or "(no pool)" for f, _ in wanted}
    assert {r["pool"] for r in pools} == expected_pools
    for r in pools:
        pool = None if r["pool"] == "(no pool)" else r["pool"]
        mine = [key for key in moves if src.plan["topics"].get(key[0]) == pool]
        assert int(r["planned moves"]) == len(mine)
        _close(r["to copy"], sum(map(copied, mine)))
        for s in SEVERITIES:  # only the findings that put a planned move at risk
            assert int(r[s]) == sum(f["pool"] == pool and f["severity"] == s for f, _ in wanted)


def test_comparison_with_the_previous_run(page):
    src, shown, _ = page
    lead = shown["page"]["paras"]["compare"][0]
    assert lead.startswith("Compared with run previous")
    counts = [("brokers", len(src.previous_snapshot["brokers"]), len(src.snapshot["brokers"])),
              ("brokers to add", sum(src.previous_plan["brokers_to_add"].values()),
               sum(src.plan["brokers_to_add"].values()))]
    for label, a, b in counts:  # only what changed
        assert (f"{label} {a} → {b}" in lead) == (a != b), (label, lead)
    if all(a == b for _, a, b in counts):
        assert "brokers" not in lead
    def n_minus_1(plan, pool, dim):  # the pool's demand at the forecast over what is left after the N−1 loss
        row = plan["utilisation"]["pools"][pool][dim]
        caps = [src.cell(plan, b, dim)["capacity"] for b in src.brokers(plan, "brokers", pool)]
        extra = row["capacity_with_added"] - sum(caps)
        added = plan["brokers_to_add"].get(pool, 0)
        caps = sorted(caps + ([extra / added] * added if added else []), reverse=True)
        left = sum(caps[max(src.failures, 1):])
        return row["demand_forecast"] / left if left else None

    def sides(pool, dim):
        out = []
        for plan in (src.previous_plan, src.plan):
            members = src.brokers(plan, "brokers_before", pool)
            cap = sum(src.cell(plan, b, dim)["capacity"] for b in members)
            load = sum(src.cell(plan, b, dim)["now"] for b in members)
            out.append({"capacity": cap, "load now, on today's brokers": load, "utilisation now": load / cap if cap else None,
                        "N−1 at forecast": n_minus_1(plan, pool, dim)})
        return out

    rows = _rows(shown, "compare-pools")
    listed = {(r["pool"], DIMS[r["dimension"]], r["figure"]) for r in rows}
    for pool in src.plan["utilisation"]["pools"]:
        for dim in ("nw_in", "nw_out", "disk", "replicas"):
            before, now = sides(pool, dim)
            for figure in before:
                if before[figure] is None or now[figure] is None:
                    continue
                ratio = figure in ("utilisation now", "N−1 at forecast")
                differs = abs(now[figure] - before[figure]) > (5e-4 if ratio else 5e-3 * max(now[figure], 1e-9))
                if differs:  # a change that shows at the rounding the table uses is listed
                    assert (pool, dim, figure) in listed, (pool, dim, figure)
    for r in rows:
        pool, dim = r["pool"], DIMS[r["dimension"]]
        if r["figure"].startswith("runway"):
            assert r["before"] != r["now"]
            continue
        before, now = sides(pool, dim)
        _close(r["before"], before[r["figure"]]), _close(r["now"], now[r["figure"]])
        _close(r["change"], now[r["figure"]] - before[r["figure"]])
    rows = _rows(shown, "compare-topics")
    deltas = sorted(((t, src.profile[t]["bytes_in_p99"] - src.previous_profile[t]["bytes_in_p99"],
                      src.profile[t]["storage_bytes"] - src.previous_profile[t]["storage_bytes"])
                     for t in src.profile if t in src.previous_profile), key=lambda x: (-abs(x[1]), -abs(x[2]), x[0]))
    deltas = [d for d in deltas if d[1] or d[2]][:15]  # only topics that changed
    expected = [(t, figure) for t, d_in, d_st in deltas for figure, d in (("bytes in, p99", d_in), ("storage", d_st))
                if d]
    assert [(r["topic"], r["figure"]) for r in rows] == expected
    for r in rows:
        t = r["topic"]
        old, new = src.previous_plan["topics"][t], src.plan["topics"][t]
        assert r["pool"] == (new if old == new else f"{old} → {new}")
        key = "bytes_in_p99" if r["figure"] == "bytes in, p99" else "storage_bytes"
        _close(r["before"], src.previous_profile[t][key]), _close(r["now"], src.profile[t][key])
        _close(r["change"], src.profile[t][key] - src.previous_profile[t][key])


def _retention_kept(src, topic: str, storage: float, bytes_in: float) -> float:
    """Forecast storage capped by what the topic's retention keeps on the brokers (delete policy): retention.ms ×
    bytes in, retention.bytes × partitions, and the local. forms of a tiered topic (-2 or unset: the plain one)."""
    state = next((t for t in src.snapshot["topics"] if t["topic"] == topic), None)
    if state is None:
        return storage
    configs = state.get("configs", {})
    if "delete" not in configs.get("cleanup.policy", "delete"):
        return storage
    parts = sum(1 for p in src.snapshot["partitions"] if p["topic"] == topic)
    tiered = configs.get("remote.storage.enable") == "true"
    for key, scale in (("retention.ms", bytes_in / 1000.0), ("retention.bytes", parts)):
        values = [int(configs[key])] if key in configs else []
        if tiered:
            local = int(configs.get(f"local.{key}", -2))
            values.append(values[0] if local == -2 and values else local)
        for v in values:
            if v > 0:  # 0 or below: unset, unlimited (-1)
                storage = min(storage, v * scale)
    return storage


def test_topics_tenants_and_pools(page):
    src, shown, _ = page
    top = sorted(src.profile.values(), key=lambda r: (-r["bytes_in_p99"], r["topic"]))[:15]
    rows = _rows(shown, "topics")
    assert [r["topic"] for r in rows] == [t["topic"] for t in top]
    backtest = _topic_rows(src) if _pool_sums(src) else {}  # the topic band: every topic's rows (docs/formats.md)
    band = _calibrated(backtest, {k[0] for k in backtest}, "bytes_in_p99", lambda k: True)
    for r, t in zip(rows, top):
        assert r["pool"] == src.plan["topics"][t["topic"]]
        _close(r["bytes in, p99 now"], t["bytes_in_p99"])
        fc, low, high = re.fullmatch(r"(.+) \((.+) – (.+)\)", r["at forecast (low – high)"]).groups()
        edges = (t["forecast_bytes_in_p99_low"], t["forecast_bytes_in_p99_high"])
        if band:  # the growth band widened to the backtest's spread at the forecast's horizon
            edges = _widen(band, t["forecast_horizon_days"], t["forecast_bytes_in_p99"], *edges)
        _close(fc, t["forecast_bytes_in_p99"]), _close(low, edges[0]), _close(high, edges[1])
        _close(r["growth"][: -len("/day")], t["bytes_in_p99_growth_per_day"])
        _close(r["storage now"], t["storage_bytes"])
        _close(r["storage at forecast"], _retention_kept(src, t["topic"], t["forecast_storage_bytes"],
                                                         t["forecast_bytes_in_p99"]))
    tenants = [(t["name"], [re.compile(x) for x in t["topics"]]) for t in src.policy.get("tenant", [])]
    groups: dict[tuple[str, str], list] = {}
    for topic in {t["topic"] for t in src.snapshot["topics"]} | set(src.plan["topics"]):
        tenant = next((n for n, rx in tenants if any(x.fullmatch(topic) for x in rx)), "(no tenant)")
        groups.setdefault((tenant, src.plan["topics"].get(topic, "(no pool)")), []).append(src.profile.get(topic))
    rows = _rows(shown, "tenants")
    assert len(rows) == len(groups)
    for r in rows:
        members = groups[(r["tenant"], r["pool"])]
        assert int(r["topics"]) == len(members)
        _close(r["bytes in, p99"], sum(m["bytes_in_p99"] for m in members if m))
        _close(r["storage"], sum(m["storage_bytes"] for m in members if m))
    for r in _rows(shown, "pool-rows"):
        p = r["pool"]
        assert r["brokers now"] == str(len(src.brokers(src.plan, "brokers_before", p)))
        assert r["brokers after the plan, to buy included"] == str(len(src.brokers(src.plan, "brokers", p)))
        assert r["brokers to add"] == str(src.plan["brokers_to_add"].get(p, 0))


def test_batches_and_findings(page):
    src, shown, _ = page
    rows = _rows(shown, "batches")
    assert len(rows) == len(src.bundle["batches"])
    for r, b in zip(rows, src.bundle["batches"]):
        assert (r["batch"], r["phase"], r["partitions"]) == (str(b["batch"]), str(b["phase"]), str(b["partitions"]))
        _close(r["to copy"], b["moved_bytes"]), _close(r["throttle"], b["throttle_Bps"])
        _close_duration(r["estimated"], b["estimated_seconds"])
    table = shown["page"]["tables"]["findings"]
    rows = _rows(shown, "findings")
    assert len(rows) == len(src.findings["findings"])
    for i, (r, f) in enumerate(zip(rows, src.findings["findings"])):
        assert (r["severity"], r["kind"], r["pool"], r["broker"]) == (
            f["severity"], f["kind"], f["pool"] or "", "" if f["broker"] is None else str(f["broker"]))
        assert r["partition"] == ("" if f["topic"] is None else _where(f))
        assert table["details"][i] == f["fix"]
    ranks = [SEVERITIES.index(r["severity"]) for r in rows]
    assert ranks == sorted(ranks)


def test_recommendation_quotes_only_numbers_checked_elsewhere(page):
    src, shown, _ = page
    page_ = shown["page"]
    text = page_["paras"]["recommendation"][0]
    checked = [c for t in page_["tables"].values() for row in t["rows"] for c in row]
    checked += [v for v, _ in page_["kpis"]] + [page_["subtitle"], page_["paras"]["risks"][0]]
    checked += [p for p in page_["paras"]["cost"] if p.startswith("The policy's new broker type:")]
    checked += [p for p in page_["paras"]["runway"] if p.startswith("When each pool first needs")]
    known = {n for c in checked for n in _numbers(c)}
    assert _numbers(text) and not _numbers(text) - known, _numbers(text) - known
    serious = [f for f in src.findings["findings"] if f["severity"] in ("critical", "error")]
    if serious:
        worst = serious[0]["severity"]
        assert f"Fix first the {sum(f['severity'] == worst for f in serious)} {worst} finding" in text
    orders = _rows(shown, "order-by")
    overdue = [r for r in orders if r["order by"].startswith("overdue")]
    if overdue:
        assert text.startswith("Order now: ")
    elif not any(src.plan["brokers_to_add"].values()):
        dated = sorted((r["crosses"], r["pool"]) for r in orders if re.fullmatch(r"\d{4}-\d\d-\d\d", r["crosses"]))
        if dated:
            assert f"likely crosses its limit on {dated[0][0]}" in text
        else:
            assert "nothing to buy" in text


# --- reading what the page shows ---------------------------------------------------------------------------


def _rows(shown: dict, table: str) -> list[dict[str, str]]:
    """A table's rows as header → text (a repeated header gets ``_2``)."""
    t = shown["page"]["tables"][table]
    headers, seen = [], {}
    for h in t["headers"]:
        seen[h] = seen.get(h, 0) + 1
        headers.append(h if seen[h] == 1 else f"{h}_{seen[h]}")
    return [dict(zip(headers, row)) for row in t["rows"]]


def _parse(text: str) -> tuple[float, float]:
    """``(value, tolerance)`` of a shown quantity: the number and half a unit of its last digit, in base units."""
    m = re.fullmatch(r"([+−-]?)([\d,]+)(?:\.(\d+))? ?(B|kB|MB|GB|TB|PB|%|pp)?(/s)?(?: replicas)?", text.strip())
    assert m, f"not a quantity: {text!r}"
    sign = -1.0 if m[1] in ("−", "-") else 1.0
    digits = m[3] or ""
    value = float(m[2].replace(",", "") + ("." + digits if digits else ""))
    scale = 0.01 if m[4] in ("%", "pp") else UNITS.get(m[4] or "", 1.0)
    return sign * value * scale, 0.5 * 10 ** -len(digits) * scale


def _close(text: str, expected: float) -> None:
    value, tolerance = _parse(text)
    assert abs(value - expected) <= tolerance * (1 + 1e-9) + 1e-9, f"shown {text!r}, source {expected!r}"


def _pair(text: str, before: float, now: float) -> None:
    a, b = text.split(" → ")
    _close(a, before), _close(b, now)


def _close_duration(text: str, seconds: float) -> None:
    if seconds > 30 * 86_400:  # no schedule: whole days, never a duration shown as fact
        assert text == f"{math.ceil(seconds / 86_400):,d} days: no schedule", text
        return
    m = re.fullmatch(r"(?:(\d+) h )?(\d+) min|(\d+) s", text)
    assert m, text
    shown = int(m[3]) if m[3] else (int(m[1] or 0) * 60 + int(m[2])) * 60
    assert shown == (math.ceil(seconds) if m[3] else math.ceil(seconds / 60) * 60), (text, seconds)


def _where(f: dict) -> str:
    if f["topic"] is not None:
        return f["topic"] if f["partition"] is None else f"{f['topic']}-{f['partition']}"
    return f"broker {f['broker']}" if f["broker"] is not None else f"pool {f['pool']}"


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d[\d,.\-]*\d|\d", text))


def _json(path: Path):
    return json.loads(path.read_text())
