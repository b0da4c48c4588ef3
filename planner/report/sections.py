"""The decision sections of the report: recommendation, summary, pools, runway, N−1, cost, risks, comparison."""

from __future__ import annotations

import math
from datetime import timedelta

from planner.report.backtest import SERIES_OF, Score, chance_range, coverage_at
from planner.report.document import Chart, Items, Kpis, Para, Section, Table, cell
from planner.report.model import DIMENSION_LABELS, SEVERITIES, TOP_TOPICS, ReportModel
from planner.report.recommend import duration_problem, format_days, money, moves_text, recommendation
from planner.report.runway import Crossing, OrderBy, Runway
from pools.audit.findings import Severity
from pools.forecast_band import MIN_ORIGINS, NO_CALIBRATION, BandCalibration, GroupCalibration
from pools.profile import MIN_FIT_DAYS
from pools.units import (format_bytes, format_count, format_duration, format_load, format_percent, format_plural,
                         format_rate)

__all__ = ["decision_sections", "MISSING", "where", "growth"]

#: The class of a paragraph that says what a missing stage output leaves out.
MISSING = "missing"

#: Findings listed in the risk table (the most severe first).
MAX_RISK_ROWS = 200


def decision_sections(model: ReportModel, charts: set[str]) -> tuple[Section, ...]:
    """The sections a capacity review decides from, in page order (the comparison only with a previous run)."""
    out = [
        Section("recommendation", "Recommendation", (Para(recommendation(model) or "The run holds nothing to "
                                                          "recommend from: see the missing parts below.",
                                                          "recommendation"),)),
        _summary(model),
        _pools(model, charts),
        _runway(model, charts),
        _forecast_quality(model),
        _loss(model),
        _cost(model),
        _risks(model),
    ]
    if model.comparison is not None:
        out.append(_compare(model))
    return tuple(out)


def where(topic: str | None, partition: int | None, broker: int | None = None, pool: str | None = None) -> str:
    """How the report names a finding's location: ``topic-partition``, ``broker N`` or ``pool P``."""
    if topic is not None:
        return topic if partition is None else f"{topic}-{partition}"
    if broker is not None:
        return f"broker {broker}"
    return f"pool {pool}" if pool else "the cluster"


def _summary(model: ReportModel) -> Section:
    h = model.headline
    kpis = [(label, format_count(h[key])) for key, label in (("brokers", "brokers"), ("racks", "racks"),
                                                            ("topics", "topics"), ("partitions", "partitions"))
            if key in h]
    if model.planned:
        kpis.append(("to move", moves_text(h)))
        added = {p: n for p, n in h["brokers_to_add"].items() if n}
        kpis.append(("brokers to add", ", ".join(f"{p}: {n}" for p, n in added.items()) or "none"))
        if model.cost is not None and model.cost.total is not None and model.cost.brokers:
            kpis.append(("cost of the brokers to add", money(model.cost.total, model.cost)))
        gap = h.get("solver_gap")
        kpis.append(("solver", f"{h['solver_status']}" + ("" if gap is None else f", gap {format_percent(gap)}")))
    if "batches" in h:
        took = format_duration(h["estimated_seconds"]) if duration_problem(model) is None else \
            f"{format_days(h['estimated_seconds'])}: no schedule, fix the throttle (see Reassignment batches)"
        kpis.append(("reassignment", f"{format_plural(h['batches'], 'batch', 'batches')}, {took}"))
    if "findings" in h:
        counts = [f"{n} {s}" for s, n in h["findings"].items() if n]
        kpis.append(("audit findings", ", ".join(counts) or "none"))
    blocks: list = [Kpis(tuple(kpis))]
    if model.notes:
        blocks.append(Items("Parts of this run are missing; the sections that need them say so.",
                            tuple(f"{stage}: {note}" for stage, note in sorted(model.notes.items())), MISSING))
    if model.warnings:
        blocks.append(Items("Planner warnings:", model.warnings))
    return Section("summary", "Summary", tuple(blocks))


def _pools(model: ReportModel, charts: set[str]) -> Section:
    if not model.pools:
        return Section("pools", "Pool capacity and utilisation",
                       (Para("No pool utilisation: the run has neither a plan nor a snapshot.", MISSING),))
    rows = []
    for p in model.pools:
        brokers = str(p.brokers_before)
        if p.planned:
            unplaced = p.added - len(p.to_buy)
            brokers += f" → {p.brokers_after}" + (f" + {unplaced} new" if unplaced else "") + (
                f" ({len(p.to_buy)} to buy: {', '.join(map(str, p.to_buy))})" if p.to_buy else "")
        rows.append((cell(p.pool), cell(DIMENSION_LABELS[p.dimension]), cell(brokers),
                     cell(format_load(p.capacity_before, p.dimension)),
                     cell(format_load(p.capacity_after, p.dimension) if p.planned else None),
                     _pct(p.now, p.max_utilisation), _pct(p.forecast, p.max_utilisation),
                     _pct(p.after, p.max_utilisation), _pct(p.busiest_after, p.max_utilisation),
                     cell(format_percent(p.max_utilisation))))
    blocks: list = []
    if "pools" in charts:
        blocks.append(Chart("pools", "Pool utilisation per dimension",
                            "Share of each pool's capacity in use now and at the forecast horizon with today's "
                            "placement, and at the forecast after the plan. Dashed: the maximum utilisation the "
                            "policy allows (its `headroom`)."))
    blocks.append(Table("pools", ("pool", "dimension", "brokers before → after", "capacity before the plan",
                                  "capacity after the plan", "now: load on today's brokers",
                                  "at forecast: load on today's brokers, today's placement",
                                  "at forecast: load on the pool's brokers after the plan",
                                  "busiest broker after the plan: its load", "max utilisation (policy)"),
                        tuple(rows), frozenset({0, 1})))
    buying = any(p.to_buy for p in model.pools)
    blocks.append(Para("Every share here is a load on brokers (what the brokers carry, whatever topics they hold): "
                       "now and at forecast with today's placement, on the pool's brokers today, of the capacity "
                       "before the plan; after the plan, on the brokers the plan places the pool's replicas on"
                       + (", the brokers still to buy included (the plan places their share on them by the same "
                          "rules, so these figures hold once they join: its bundle refuses to run before)"
                          if buying else "") +
                       ", of their capacity, and the busiest of them. Red: above the maximum utilisation. The runway "
                       "and the N−1 view count another basis: the demand of the pool's topics (after the plan), "
                       "wherever they are placed."))
    blocks += _storage_notes(model)
    return Section("pools", "Pool capacity and utilisation", tuple(blocks))


def _storage_notes(model: ReportModel) -> list:
    """What the disk figures leave unmeasured: the remote side of tiered topics (KIP-405) and JBOD dirs of sizes
    the inventory does not give (taken as equal shares of their broker's disk)."""
    out = []
    if model.tiered:
        out += _tiered_notes(model)
    if model.equal_dirs:
        out.append(Para(f"{len(model.equal_dirs)} JBOD broker(s) ({', '.join(map(str, model.equal_dirs[:10]))}"
                        f"{' and more' if len(model.equal_dirs) > 10 else ''}): the inventory gives no capacity per "
                        "log dir (`log_dir_capacities`), so their dirs are taken as equal shares of the broker's "
                        "disk.", MISSING))
    return out


def _names(topics: list[str]) -> str:
    return ", ".join(f"`{t}`" for t in topics[:10]) + (" and more" if len(topics) > 10 else "")


def _tiered_notes(model: ReportModel) -> list:
    """Local and remote bytes apart, per tiered topic; the remote share of network out; what is unmeasured."""
    rows = model.tiered
    measured = [r for r in rows if r.measured]
    out: list = [Para(f"{len(rows)} tiered topic(s) ({_names([r.topic for r in rows])}): disk counts their local "
                      "bytes only (the `kafka-log-dirs.sh` sizes, the forecast capped by `local.retention.*`); remote "
                      "bytes sit in the remote store, not on the brokers.")]
    if measured:
        out.append(Para("Remote-storage metrics (`RemoteLogSizeBytes`, `RemoteCopyBytesPerSec`, "
                        "`RemoteFetchBytesPerSec`): a leader's copy to the remote store counts in its network out and "
                        "its reads from the store in its network in. The consumers' bytes-out already holds what "
                        "the remote store serves (Kafka's `BytesOutPerSec` counts every fetch response), so it is "
                        "shown as a share of network out, not added to it."))
        dash, unmeasured = "—", "unmeasured"  # a remote figure the profile lacks is named so, topic by topic
        out.append(Table("tiered", ("topic", "local bytes (per replica set)", "remote bytes", "remote copy, p99",
                                    "remote fetch, p99", "consumer bytes-out, p99", "bytes-out served from remote"),
                         tuple((cell(r.topic), cell(format_bytes(r.local_bytes)),
                                cell(unmeasured if r.remote_bytes is None else format_bytes(r.remote_bytes)),
                                cell(unmeasured if r.remote_copy is None else format_rate(r.remote_copy)),
                                cell(unmeasured if r.remote_fetch is None else format_rate(r.remote_fetch)),
                                cell(dash if r.bytes_out is None else format_rate(r.bytes_out)),
                                cell(dash if r.remote_served is None else format_percent(r.remote_served)))
                               for r in measured), left=frozenset({0})))
    unmeasured = [r.topic for r in rows if not r.measured]
    if unmeasured:
        out.append(Para(f"The remote side of {len(unmeasured)} tiered topic(s) ({_names(unmeasured)}) is "
                        "unmeasured: the profile has none of their remote-storage metrics "
                        "(`RemoteLogSizeBytes`, `RemoteCopyBytesPerSec`, `RemoteFetchBytesPerSec`), so their remote "
                        "bytes, remote copy and the remote-served share of network out are not counted.", MISSING))
    return out


def _runway(model: ReportModel, charts: set[str]) -> Section:
    title = "Runway and when to order"
    runway = model.runway
    if runway is None or not runway.rows:
        lacks = "topic profile" if model.history_end is None else "snapshot (each topic's partitions and replicas)"
        return Section("runway", title, (Para(f"No runway: the run has no {lacks} to measure demand and its "
                                              f"growth topic by topic.", MISSING),))
    failures = len(model.pools[0].limits.lost) if model.pools else 0
    lost = _largest(failures, "the") if failures else "no broker"
    horizon, span = runway.horizon_days, runway.history_days
    topics = "the pool's topics after the plan" if model.planned else "the topics the policy places in the pool"
    blocks: list = []
    overdue = [o for o in runway.orders if runway.overdue(o)]
    if overdue:
        blocks.append(Para("Already past the order-by date: " + "; ".join(
            f"{o.pool} ({_order_text(runway, o)[0]})" for o in overdue) + ".", "over"))
    blocks.append(Para(
        f"When each pool first needs more than its limit: the demand of {topics}, each topic on its own forecast "
        f"(its profiled level and growth, not the pool's average), summed day by day, against the maximum "
        f"utilisation × the capacity left when the tolerated failures take {lost} (`tolerated_broker_failures`). "
        f"Earliest, likely and latest follow the forecast band's high edge, the forecast and the low edge (the "
        f"pool's band, calibrated on the backtest of the pool's summed forecasts where the profile has one: see how "
        f"good the forecast has been). Counted from "
        f"{runway.as_of.isoformat()} (the end of the metric history). The history covers "
        f"{format_plural(span, 'day')}: a crossing by {runway.supported_until.isoformat()} is a forecast; one "
        f"after it, up to the {horizon}-day horizon ({runway.until.isoformat()}), is the measured trend extended "
        f"past the history it was measured on and is marked \"trend\"; later ones are shown as \"after\" "
        f"{runway.until.isoformat()}."))
    if "runway" in charts:
        blocks.append(Chart("runway", "Runway per pool", "Each dimension's likely demand as a share of its limit, "
                                                         "the band shaded; a dot marks the day it crosses 100 %; "
                                                         "dotted: the last day the history supports."))
    table = []
    for r in runway.rows:
        crossing = {name: _crossing(runway, getattr(r, name)) for name in ("earliest", "likely", "latest")}
        table.append((cell(r.pool), cell(DIMENSION_LABELS[r.dimension]), cell(format_load(r.demand_now, r.dimension)),
                      cell(format_load(r.demand_forecast, r.dimension)), cell(format_load(r.usable, r.dimension)),
                      cell(format_load(r.limit, r.dimension)), *(cell(*crossing[n]) for n in crossing),
                      cell(None if r.likely.day is None else format_count(r.likely.day)),
                      cell(*_crossing(runway, r.unbought)) if r.unbought_limit != r.limit
                      else cell("no brokers to buy")))
    blocks.append(Table("runway", ("pool", "dimension", "demand now, the pool's topics",
                                   f"demand at forecast ({horizon} days), the pool's topics",
                                   "usable capacity", "limit", "earliest", "likely", "latest", "days (likely)",
                                   "likely, without the brokers to buy"),
                        tuple(table), frozenset({0, 1, 6, 7, 8, 10})))
    lead = runway.lead_time_days
    orders = []
    for o in runway.orders:
        text, cls = _order_text(runway, o)
        orders.append((cell(o.pool), cell(o.brokers), cell(DIMENSION_LABELS[o.dimension] if o.dimension else None),
                       cell(*_crossing(runway, o.crossing)), cell(_band_dates(runway, o)),
                       cell(None if lead is None else format_plural(lead, "day")), cell(text, cls),
                       cell(_evidence(model, runway, o))))
    blocks.append(Para("Order by: the day each pool first crosses a limit without the brokers the plan adds (the "
                       "likely crossing; the band's earliest and latest crossings beside it), less the procurement "
                       "lead time (`[new_broker] lead_time_days`); \"overdue\" when that day is before the end of "
                       "the metric history; \"may be due now\" when the crossing is past the last day computed but "
                       "less than the lead time after its end. Where the plan buys brokers though no pool-wide limit "
                       "is crossed without them by its horizon (a per-broker limit or the rack spread needs them), "
                       "the horizon's day is the crossing. Evidence: the history the forecast rests on and the "
                       "pool's band's out-of-time coverage at the shortest horizon judged on at least "
                       f"{MIN_ORIGINS} origins that reaches the crossing."))
    blocks.append(Table("order-by", ("pool", "brokers still to buy", "first limit crossed without them", "crosses",
                                     "band: earliest … latest", "lead time", "order by", "evidence"),
                        tuple(orders), frozenset({0, 2, 3, 4, 6, 7})))
    if lead is None:
        blocks.append(Para("The policy gives no procurement lead time (`[new_broker] lead_time_days`): each "
                           "order-by date is the crossing date itself.", MISSING))
    return Section("runway", title, tuple(blocks))


def _crossing(runway: Runway, c: Crossing) -> tuple[str, str]:
    if c.kind == "unknown":
        return "no limit known", ""
    if c.kind == "flat":
        return "not at this growth", "ok"
    if c.kind == "past":
        return "already past it", "over"
    if c.kind == "after":
        return f"after {runway.until.isoformat()}", "ok"
    trend = " (trend)" if runway.trend(c) else ""
    return runway.date(c).isoformat() + trend, "over" if c.day <= runway.horizon_days else ""


def _band_dates(runway: Runway, o: OrderBy) -> str | None:
    """The band's crossings of an order's limit: ``earliest … latest``."""
    if o.basis == "horizon" or o.dimension is None:
        return None
    return f"{_crossing(runway, o.earliest)[0]} … {_crossing(runway, o.latest)[0]}"


def _evidence(model: ReportModel, runway: Runway, o: OrderBy) -> str | None:
    """What an order-by rests on (`pools.evidence`): the history's span, whether the crossing is within it, and
    the pool's band's out-of-time coverage at the shortest judged horizon reaching it."""
    if o.crossing.kind != "day":
        return None
    day = o.crossing.day or 0
    within = "within it" if not runway.trend(o.crossing) else "past it: a trend"
    what = "the horizon" if o.basis == "horizon" else "the crossing"
    text = f"{format_plural(runway.history_days, 'day')} of history, {what} {within}"
    if o.basis == "horizon":
        return text + "; the plan needs the brokers by its horizon, though no pool-wide limit is crossed without them"
    score = coverage_at(model.backtest_pools or (), o.pool, o.dimension, day)
    if score is not None:
        text += (f"; the pool's band held {format_percent(score.band_held)} out of time at {score.horizon_days} "
                 f"days ({format_plural(score.forecasts, 'origin')})")
    elif o.dimension in SERIES_OF and not model.backtest_pools:
        text += "; no backtest: the band is the growth rate's"
    elif o.dimension in SERIES_OF:
        text += f"; no band judged out of time {format_plural(day, 'day')} ahead"
    return text


def _order_text(runway: Runway, o: OrderBy) -> tuple[str, str]:
    """The order-by cell: a date, "overdue since" a date, "after" a date, or no order needed."""
    if runway.may_be_due(o):
        return "may be due now: the lead time reaches back past the last day computed", "over"
    if o.crossing.kind == "after":
        return f"after {(runway.until - timedelta(days=runway.lead_time_days or 0)).isoformat()}", ""
    day = runway.order_by(o)
    if day is None:
        return "no crossing ahead", "ok"
    if o.crossing.kind == "past":
        return "overdue: already past the limit", "over"
    trend = " (trend)" if runway.trend(o.crossing) else ""
    if runway.overdue(o):
        return f"overdue since {day.isoformat()}{trend}", "over"
    return day.isoformat() + trend, ""


def _forecast_quality(model: ReportModel) -> Section:
    title = "How good the forecast has been"
    if model.backtest_pools is None:
        return Section("backtest", title, (Para("No backtest: the profile has no `backtest.parquet` (`poolplan "
                                                "ingest` writes it from the metric history).", MISSING),))
    if not model.backtest_pools and not model.backtest_topics:
        return Section("backtest", title, (Para(
            f"The history is too short to test the forecast on: a backtest origin needs {MIN_FIT_DAYS} days of "
            f"history and a later day to compare with. Until then the forecast's error is not known.", MISSING),))
    labels = {"bytes_in_p99": "bytes in, p99", "storage_bytes": "storage"}
    blocks: list = [Para(
        "The forecast tested on the history itself: from past days (origins) the growth was fitted on the history up "
        "to that day only and forecast days ahead, then compared with what happened. Error: the mean of |forecast − "
        "actual| / actual; band held: the share of forecasts whose actual value fell inside the band (the band is "
        "meant to hold about 80 % of the time). The band is the one the runway uses: the 10th–90th percentile of how "
        "far the actual values landed from the forecasts at each horizon, over every topic, from at least "
        f"{MIN_ORIGINS} origins (a horizon with fewer is derived from the longest tested one, growing with the "
        "horizon as the tested widths grew: see docs/formats.md), widening past the last horizon as the growth "
        "rate's band does. It is scored out of time: each origin's forecasts are judged by the band calibrated only "
        "on what was known by that origin (forecasts whose actual day had passed), as it would have been used then; "
        "origins before the band had a tested horizon are not scored, and a horizon scored on fewer than "
        f"{MIN_ORIGINS} origins is too few to judge the band by. A pool's forecast is the sum of its topics' "
        "forecasts (pools after the plan), and its band, the one the runway uses for the pool, is calibrated the "
        "same way on the pool's own sums (the ratio of its summed actual values to its summed forecasts per origin "
        "and horizon), not summed from its topics' bands; a pool with no tested horizon of a series of its own takes "
        "the band calibrated on every pool's sums pooled.")]
    if model.backtest_horizons:
        bands = model.calibration or NO_CALIBRATION
        rows = []
        for s in model.backtest_horizons:
            width, basis = _band_today(bands, s.metric, s.horizon_days)
            held = _held(s.band_held) if s.judged else cell(None) if s.band_held is None else \
                cell(f"{format_percent(s.band_held)}: too few origins to judge")
            rows.append((cell(labels[s.metric]), cell(s.horizon_days), cell(format_count(s.origins)),
                         cell(format_count(s.rows)), held, cell(width), cell(basis)))
        blocks.append(Table("backtest-horizons", ("series", "days ahead", "origins scored", "forecasts scored",
                                                  "band held, out of time", "band today (low / high edge)",
                                                  "band today rests on"), tuple(rows), frozenset({0, 6})))
        blocks.append(Para("Per horizon, every topic's forecasts: the origins and forecasts the out-of-time score "
                           "rests on, and the band the runway uses now (calibrated on every row)."))
    pool_bands = model.pool_calibration or GroupCalibration()
    rows = []
    for s in model.backtest_pools:
        width, basis = _band_today(pool_bands.band(s.name), s.metric, s.horizon_days)
        rests = pool_bands.rests_on(s.name, s.metric)
        if rests == "pooled":
            basis = f"every pool's sums (too few of its own): {basis}"
        elif rests == "own":
            basis = f"its own sums: {basis}"
        held = _held(s.band_held) if s.judged else cell(f"{format_percent(s.band_held)}: too few origins to judge")
        rows.append((cell(s.name), cell(labels[s.metric]), cell(s.horizon_days), cell(format_count(s.forecasts)),
                     cell(format_percent(s.mape)), held, cell(width), cell(basis)))
    blocks.append(Table("backtest-pools", ("pool", "series", "days ahead", "forecasts", "error",
                                           "band held, out of time", "band today (low / high edge)",
                                           "band today rests on"), tuple(rows), frozenset({0, 1, 7})))
    if model.backtest_pools:
        blocks.append(Para("Per pool (one forecast per origin): its summed forecasts scored out of time against the "
                           "pool's own band, and the band its runway uses now (calibrated on every origin)."
                           + _chance(model.backtest_pools)))
    if model.backtest_topics:
        pools = {t.topic: t.pool for t in model.topics}
        blocks.append(Table("backtest-topics", ("topic", "pool", "days ahead", "forecasts", "error",
                                                 "band held, out of time"),
                            tuple((cell(s.name), cell(pools.get(s.name)), cell(s.horizon_days),
                                   cell(format_count(s.forecasts)), cell(format_percent(s.mape)), _held(s.band_held))
                                  for s in model.backtest_topics), frozenset({0, 1})))
        blocks.append(Para(f"The topics with the most bytes in (up to {TOP_TOPICS}), their bytes-in series."))
    return Section("backtest", title, tuple(blocks))


def _chance(scores: tuple[Score, ...]) -> str:
    """How far a pool's score strays by chance alone: one forecast per origin, so few forecasts per figure."""
    counts = sorted({s.forecasts for s in scores if s.judged})
    if not counts:
        return ""
    spans = [f"{format_percent(lo)}–{format_percent(hi)} on {n} forecasts"
             for n in dict.fromkeys((counts[0], counts[-1])) for lo, hi in (chance_range(n),)]
    return (" A band that holds 80 % of the time shows, nine times in ten and by chance alone, "
            f"{' and '.join(spans)}: judge a pool's figure against that range, and the band by the per-horizon "
            "table above.")


def _band_today(band: BandCalibration, metric: str, horizon: int) -> tuple[str | None, str]:
    """A calibration's band at ``horizon`` (low / high edge) and what it rests on."""
    found = next((b for b in band.horizons.get(metric, ()) if b.horizon_days == horizon), None)
    if found is None:
        return None, "untested: interpolated or the growth band's widening"
    width = " / ".join(format_percent(math.expm1(q), signed=True) for q in (found.q_low, found.q_high))
    if found.derived_from is None:
        return width, f"tested on {format_plural(found.origins, 'origin')}, {format_count(found.rows)} forecasts"
    return width, f"derived from {found.derived_from} days ({format_plural(found.origins, 'origin')} here, too few)"


def _held(share: float):
    """The band's hit rate, marked when it holds less than 75 %: narrower than the 80 % it claims."""
    return cell(format_percent(share), "over" if share < 0.75 else "")


def _loss(model: ReportModel) -> Section:
    rows = [p for p in model.pools if p.demand_now is not None]
    k = max((len(p.loss.lost) for p in rows), default=1)
    title = f"Losing the largest broker{'' if k == 1 else 's'} (N−{k})"
    if not rows:
        return Section("n-minus-1", title, (Para("No N−1 view: the run has no plan and no profile.", MISSING),
                                            *_read_only(model)))
    brokers = "after the plan" if model.planned else "today"
    table = []
    for p in rows:
        verdict = None
        if p.after_loss_forecast is not None and p.max_utilisation is not None:
            gap = p.after_loss_forecast - p.max_utilisation
            verdict = cell("yes", "ok") if gap <= 0 else cell(f"no, {format_percent(gap, points=True)} over", "over")
        count = p.brokers_after + p.added - len(p.to_buy) if p.planned else p.brokers_before
        table.append((cell(p.pool), cell(DIMENSION_LABELS[p.dimension]), cell(count),
                      cell(", ".join(_broker(b, p.to_buy) for b in p.loss.lost) or None),
                      cell(format_load(p.loss.usable, p.dimension)), _pct(p.after_loss_now, p.max_utilisation),
                      _pct(p.after_loss_forecast, p.max_utilisation), cell(format_percent(p.max_utilisation)),
                      verdict or cell(None)))
    return Section("n-minus-1", title, (
        Para(f"Each pool's brokers {brokers} minus {_largest(k, 'its')} in each dimension (as many as the "
             f"policy's `tolerated_broker_failures`, at least one"
             + ("; the brokers still to buy included, \"to buy\" when one is lost" if any(p.to_buy for p in rows)
                else "") + "): the share of what is left that the pool's demand would use, now and at the "
             "forecast."),
        Table("n-minus-1", ("pool", "dimension", "brokers", "broker lost", "capacity left",
                            *((f"{when}, the pool's topics" if model.planned else f"{when}, load on today's brokers")
                              for when in ("now", "at forecast")),
                            "max utilisation (policy)", "within the limit at forecast"),
              tuple(table), frozenset({0, 1, 3, 8})),
        *_read_only(model),
    ))


def _read_only(model: ReportModel) -> tuple:
    """The topics whose own ``min.insync.replicas`` the loss breaks (`pools.audit.durability`): they go read-only
    for ``acks=all`` producers, whatever capacity is left."""
    if model.read_only is None:
        return ()
    if not model.read_only:
        return (Para("No topic drops below its own `min.insync.replicas` when its pool loses the brokers above: "
                     "`acks=all` producers keep writing."),)
    rows = tuple((cell(f.topic), cell(f.pool), cell(f.evidence["min_insync_replicas"]),
                  cell(f.evidence["replication_factor"]), cell(", ".join(map(str, f.evidence["lost_brokers"]))),
                  cell(f.evidence["partitions_blocked"]), cell(f.evidence["partitions_at_risk"]))
                 for f in sorted(model.read_only, key=lambda f: (f.pool or "", f.topic or "")))
    return (
        Para(f"{len(rows)} topic(s) go read-only for `acks=all` producers on such a loss: each has partitions whose "
             "in-sync replicas minus the brokers lost are below its own `min.insync.replicas` (the broker named "
             "blocks most of them; any broker holding one does); a partition already at its min ISR goes read-only "
             "on any one loss, and a topic of replication factor 1 goes offline."),
        Table("read-only", ("topic", "pool", "min.insync.replicas", "replication factor", "broker lost",
                            "partitions blocked", "partitions at risk"), rows, frozenset({0, 1, 4})),
    )


def _cost(model: ReportModel) -> Section:
    title = "Brokers to add and their cost"
    cost = model.cost
    if cost is None:
        return Section("cost", title, (Para("No plan: the brokers each pool lacks are not known.", MISSING),))
    blocks: list = []
    broker = cost.broker
    if broker is not None:
        c = broker.capacity
        price = f", {money(broker.price, cost)} each" if broker.price is not None else ""
        blocks.append(Para(f"The policy's new broker type: {format_load(c.nw_in, 'nw_in')} in, "
                           f"{format_load(c.nw_out, 'nw_out')} out, {format_load(c.disk, 'disk')} of disk, "
                           f"{format_load(c.replicas, 'replicas')}{price}."))
    if not cost.rows:
        blocks.append(Para("The plan adds no brokers: nothing to buy for the forecast horizon."))
    else:
        rows = [(cell(r.pool), cell(r.brokers), cell(money(broker.price if broker else None, cost)),
                 cell(money(r.cost, cost))) for r in cost.rows]
        rows.append((cell("total"), cell(cost.brokers), cell(None), cell(money(cost.total, cost))))
        blocks.append(Table("cost", ("pool", "brokers to add", "price per broker", "cost"), tuple(rows),
                            frozenset({0})))
    if broker is None:
        blocks.append(Para("No policy was given (`--policy`), so the new broker type and its price are not known.",
                           MISSING))
    elif broker.price is None:
        blocks.append(Para("The policy's `[new_broker]` table has no `price`: add `price` (and `currency`, "
                           "`period`) to see what the brokers cost.", MISSING))
    return Section("cost", title, tuple(blocks))


def _risks(model: ReportModel) -> Section:
    title = "Risks: the plan against the audit"
    risks = model.risks
    if risks is None:
        missing = "plan" if not model.planned else "audit"
        return Section("risks", title, (Para(f"No risk view: the run has no {missing} to join.", MISSING),))
    touched = risks.touched
    if touched:
        serious = risks.at_least(Severity.ERROR)
        lead = (f"{format_count(len(touched))} of the plan's {format_plural(risks.moves, 'move')} "
                f"({format_bytes(risks.touched_bytes)} of {format_bytes(risks.moved_bytes)} to copy) "
                f"{_verb(len(touched), 'is', 'are')} at risk through what can go wrong for that move, each cause "
                f"named below: its partition below min.insync.replicas during the copy, its own partition "
                f"unhealthy, a broker it copies from or onto with a log dir in error, or a broker it copies onto "
                f"over its headroom; {format_count(len(serious))} of them ({format_bytes(sum(serious.values()))}) "
                f"through findings of severity error or worse. Other findings put no move at risk.")
    else:
        lead = (f"None of the plan's {format_plural(risks.moves, 'move')} is at risk: no move copies a partition "
                f"below min.insync.replicas or otherwise unhealthy, from or onto a broker with a log dir in error, "
                f"or onto a broker over its headroom.")
    blocks: list = [Para(lead)]
    if risks.risks:
        rows = tuple(
            (cell(r.finding.severity.value, f"sev-{r.finding.severity.value}"), cell(r.finding.kind),
             cell(", ".join(DIMENSION_LABELS[d] for d in r.dimensions) or None),
             cell(where(r.finding.topic, r.finding.partition, r.finding.broker, r.finding.pool)),
             cell(_touching(r)), cell(format_bytes(r.moved_bytes)), cell(r.fixed_by))
            for r in risks.risks[:MAX_RISK_ROWS]
        )
        blocks.append(Table("risks", ("severity", "finding", "dimension", "where",
                                      "planned moves at risk through it, and the cause",
                                      "to copy", "moves that fix it"), rows, frozenset({0, 1, 2, 3, 4})))
        if len(risks.risks) > MAX_RISK_ROWS:
            blocks.append(Para(f"{format_plural(len(risks.risks) - MAX_RISK_ROWS, 'more finding')} (less severe) also "
                               f"put planned moves at risk."))
    if risks.fixed:
        shown = [f"{r.finding.kind} on {where(r.finding.topic, r.finding.partition, r.finding.broker, r.finding.pool)}"
                 + (f" ({format_plural(r.count, 'move')} {_verb(r.count, 'fixes', 'fix')} it)" if r.count else "")
                 for r in risks.fixed[:MAX_RISK_ROWS]]
        more = len(risks.fixed) - len(shown)
        blocks.append(Items(f"{format_plural(len(risks.fixed), 'finding')} the plan's own moves fix (not a risk to "
                            f"them):", tuple(shown) + ((f"and {more} more",) if more else ())))
    if risks.pools:
        rows = tuple((cell(p.pool or "(no pool)"), cell(p.moves), cell(format_bytes(p.moved_bytes)),
                      *(cell(n, f"sev-{s}" if n else "") for s, n in p.findings.items())) for p in risks.pools)
        blocks.append(Table("risk-pools", ("pool", "planned moves", "to copy", *(s.value for s in SEVERITIES)),
                            rows, frozenset({0})))
        blocks.append(Para("Per pool: the moves into it, and by severity the findings about it that put at least one "
                           "planned move at risk" + ("; \"(no pool)\": topics and findings of no pool."
                                                     if any(not p.pool for p in risks.pools) else ".")))
    return Section("risks", title, tuple(blocks))


def _compare(model: ReportModel) -> Section:
    c = model.comparison
    taken = f" (snapshot taken {c.previous_taken_at})" if c.previous_taken_at else ""
    facts = []
    for label, (a, b) in (("brokers", c.brokers), ("brokers to add", c.brokers_to_add)):
        if (a is not None or b is not None) and a != b:
            facts.append(f"{label} {format_count(a)} → {format_count(b)}")
    if c.cost != (None, None) and c.cost[0] != c.cost[1]:
        facts.append(f"cost of the brokers to add {money(c.cost[0], model.cost)} → {money(c.cost[1], model.cost)}")
    if c.findings[0] is not None and c.findings[1] is not None:
        moved = [f"{s.value} {c.findings[0].get(s.value, 0)} → {c.findings[1].get(s.value, 0)}" for s in SEVERITIES
                 if c.findings[0].get(s.value, 0) != c.findings[1].get(s.value, 0)]
        if moved:
            facts.append("findings " + ", ".join(moved))
    blocks: list = [Para(f"Compared with run `{c.previous_run}`{taken}: " + ("; ".join(facts) if facts else
                                                                              "no count changed") + ".")]
    rows = [row for p in c.pools for row in _pool_changes(p, c.runways)]
    if rows:
        blocks.append(Table("compare-pools", ("pool", "dimension", "figure", "before", "now", "change"), tuple(rows),
                            frozenset({0, 1, 2, 3, 4})))
        blocks.append(Para("Only the figures that changed. Runway: the likely crossing of the limit (see Runway); "
                           "N−1: the share of what is left after losing the largest broker at the forecast."))
    else:
        blocks.append(Para("No pool's capacity, load, utilisation, N−1 share or runway changed."))
    if c.topics:
        trows = []
        for t in c.topics:
            pool = _pair(t.pool_before or "—", t.pool_now or "—") if t.pool_before != t.pool_now else t.pool_now
            if t.bytes_in_delta:
                trows.append((cell(t.topic), cell(pool), cell("bytes in, p99"), cell(format_rate(t.bytes_in_before)),
                              cell(format_rate(t.bytes_in_now)), cell(format_load(t.bytes_in_delta, "nw_in",
                                                                                   signed=True))))
            if t.storage_delta:
                trows.append((cell(t.topic), cell(pool), cell("storage"), cell(format_bytes(t.storage_before)),
                              cell(format_bytes(t.storage_now)), cell(format_bytes(t.storage_delta, signed=True))))
        blocks.append(Table("compare-topics", ("topic", "pool", "figure", "before", "now", "change"), tuple(trows),
                            frozenset({0, 1, 2})))
        rest = "topics in only one run are listed below" if c.new_topics or c.gone_topics else \
            "every topic is in both runs' profiles"
        blocks.append(Para(f"The {format_plural(len(c.topics), 'topic')} whose bytes in changed most (of those whose "
                           f"bytes in or storage changed at all); {rest}."))
    else:
        blocks.append(Para("No topic in both runs changed its bytes in or storage."))
    lists = [(f"New topics ({len(c.new_topics)})", c.new_topics), (f"Gone topics ({len(c.gone_topics)})",
                                                                   c.gone_topics),
             (f"Topics in another pool ({len(c.repooled)})",
              tuple(f"{t.topic}: {t.pool_before or '—'} → {t.pool_now or '—'}" for t in c.repooled))]
    for head, names in lists:
        if names:
            blocks.append(Items(head + ":", tuple(names[:50]) + ((f"and {len(names) - 50} more",)
                                                                  if len(names) > 50 else ())))
    return Section("compare", "Since the previous run", tuple(blocks))


def _pool_changes(p, runways) -> list[tuple]:
    """The rows of one pool and dimension whose shown figure differs between the runs: (pool, dimension, figure,
    before, now, change)."""
    a, b, dim = p.previous, p.current, p.dimension
    figures = [
        ("capacity", a and a.capacity_before, b and b.capacity_before, lambda v: format_load(v, dim),
         lambda d: format_load(d, dim, signed=True)),
        ("load now, on today's brokers", a and a.load_now, b and b.load_now, lambda v: format_load(v, dim),
         lambda d: format_load(d, dim, signed=True)),
        ("utilisation now", a and a.now, b and b.now, format_percent,
         lambda d: format_percent(d, signed=True, points=True)),
        ("N−1 at forecast", a and a.after_loss_forecast, b and b.after_loss_forecast, format_percent,
         lambda d: format_percent(d, signed=True, points=True)),
    ]
    out = []
    for name, x, y, shown, delta in figures:
        before, now = (None if x is None else shown(x)), (None if y is None else shown(y))
        if before != now:
            change = delta(y - x) if x is not None and y is not None else None
            out.append((cell(p.pool), cell(DIMENSION_LABELS[dim]), cell(name), cell(before), cell(now), cell(change)))
    crossings = [_likely(r, p.pool, dim) for r in runways]
    if crossings[0] != crossings[1]:
        (x, dx), (y, dy) = crossings
        change = f"{dy - dx:+,d} days".replace("-", "−") if dx is not None and dy is not None else None
        out.append((cell(p.pool), cell(DIMENSION_LABELS[dim]), cell("runway (likely crossing)"), cell(x), cell(y),
                    cell(change)))
    return out


def _likely(runway: Runway | None, pool: str, dim: str) -> tuple[str | None, int | None]:
    """A pool's likely crossing as shown (``None``: no runway) and its date as a day number (``None``: undated)."""
    row = next((r for r in runway.rows if (r.pool, r.dimension) == (pool, dim)), None) if runway else None
    if row is None:
        return None, None
    day = runway.date(row.likely)
    return _crossing(runway, row.likely)[0], None if day is None else day.toordinal()


def _touching(r) -> str:
    text = "; ".join(f"{m.topic}-{m.partition} ({format_bytes(m.moved_bytes)}): {m.how}" for m in r.moves)
    rest = r.count - len(r.moves)
    if rest:
        left = r.moved_bytes - sum(m.moved_bytes for m in r.moves)
        text += f"; and {format_plural(rest, 'more move')} ({format_bytes(left)})"
    return text


def _pct(value: float | None, limit: float | None):
    return cell(format_percent(value), "over" if value is not None and limit is not None and value > limit else "")


def growth(value: float | None) -> str | None:
    return None if value is None else format_percent(value, signed=True, digits=2) + "/day"


def _broker(label: str, to_buy: tuple[int, ...] = ()) -> str:
    if not label.isdigit():
        return f"a {label.rstrip('0123456789')} broker"
    return f"broker {label}" + (" (to buy)" if int(label) in to_buy else "")


def _pair(before: str | None, now: str | None) -> str:
    return f"{before or '—'} → {now or '—'}"


def _sub(now: float | None, before: float | None) -> float | None:
    return None if now is None or before is None else now - before



def _largest(count: int, article: str) -> str:
    return f"{article} largest broker" if count == 1 else f"{article} {count} largest brokers"


def _verb(count: int, one: str, many: str) -> str:
    return one if count == 1 else many
