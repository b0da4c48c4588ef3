"""The detail sections of the report: broker heatmap, top topics, tenants and pools, batches, reassignment progress
(when the run holds one), audit findings."""

from __future__ import annotations

from planner.emit.progress import DONE, STOP
from planner.report.charts import NO_POOL
from planner.report.document import Chart, Items, Para, Section, Table, cell
from planner.report.model import ReportModel
from planner.report.recommend import MAX_CREDIBLE_SECONDS, duration_problem, format_days
from planner.report.sections import MISSING, growth, where
from pools.units import format_bytes, format_count, format_duration, format_percent, format_rate

__all__ = ["detail_sections", "MAX_FINDING_ROWS"]

#: Findings listed in the report (all of them are in ``audit/findings.md``).
MAX_FINDING_ROWS = 200


def detail_sections(model: ReportModel, charts: set[str], *, has_policy: bool) -> tuple[Section, ...]:
    """The sections behind the decision, in page order."""
    progress = (_progress(model),) if model.progress is not None or "progress" in model.notes else ()
    return (_heatmap(model, charts), _topics(model, charts), _tenants(model, has_policy), _batches(model, charts),
            *progress, _findings(model, charts))


def _heatmap(model: ReportModel, charts: set[str]) -> Section:
    if "heatmap" not in charts:
        return Section("heatmap", "Broker heatmap",
                       (Para("No broker heatmap: the run has neither a plan nor a snapshot.", MISSING),))
    grouping = "today's pool" + (" (top) and by its pool after the plan (bottom)" if model.heat.after else "")
    return Section("heatmap", "Broker heatmap", (Chart(
        "heatmap", "Broker heatmap",
        f"Each column is a broker, grouped by {grouping}; pool names head the groups, {NO_POOL} for brokers in no "
        f"pool. Colour: the broker's utilisation, from green (idle) to red (full); grey: no capacity or load "
        f"known." + (f" After the plan, * marks the brokers still to buy ({', '.join(map(str, model.heat.to_buy))}): "
                     f"they carry their share once they join." if model.heat.to_buy else "")),))


def _topics(model: ReportModel, charts: set[str]) -> Section:
    if not model.topics:
        return Section("topics", "Top topics", (Para("No topic charts: the run has no topic profile.", MISSING),))
    rows = tuple(
        (cell(r.topic), cell(r.pool), cell(format_rate(r.bytes_in_p99)),
         cell(f"{format_rate(r.forecast)} ({format_rate(r.low)} – {format_rate(r.high)})"),
         cell(growth(r.growth_per_day)),
         cell(format_bytes(r.storage_bytes)), cell(format_bytes(r.forecast_storage_bytes)))
        for r in model.top_throughput
    )
    blocks = []
    if "throughput" in charts:
        blocks.append(Chart("throughput", "Top topics by throughput",
                            f"The {len(model.top_throughput)} topics with the most bytes in (p99 minute), with the "
                            f"forecast and its band."))
        blocks.append(Chart("growth", "Top topics by growth", f"The {len(model.top_growth)} fastest-growing topics "
                                                              f"(growth per day of the daily p99 bytes in)."))
    blocks.append(Table("topics", ("topic", "pool", "bytes in, p99 now", "at forecast (low – high)", "growth",
                                   "storage now", "storage at forecast"), rows, frozenset({0, 1})))
    return Section("topics", "Top topics", tuple(blocks))


def _tenants(model: ReportModel, has_policy: bool) -> Section:
    blocks: list = []
    if model.pool_rows:
        blocks.append(Table("pool-rows", ("pool", "brokers now", "brokers after the plan, to buy included",
                                         "brokers to add", "tenants"),
                            tuple((cell(r.pool), cell(r.brokers_now), cell(r.brokers_after),
                                   cell(r.brokers_to_add, "over" if r.brokers_to_add else ""),
                                   cell(", ".join(r.tenants) or None)) for r in model.pool_rows),
                            frozenset({0, 4})))
    if model.tenants:
        blocks.append(Table("tenants", ("tenant", "pool", "topics", "bytes in, p99", "storage"),
                            tuple((cell(r.tenant or "(no tenant)"), cell(r.pool or NO_POOL),
                                   cell(format_count(r.topics)),
                                   cell(format_rate(r.bytes_in_p99)), cell(format_bytes(r.storage_bytes)))
                                  for r in model.tenants), frozenset({0, 1})))
        if not has_policy:
            blocks.append(Para("No policy was given (`--policy`), so tenants are not known.", MISSING))
    else:
        blocks.append(Para("No topics: the run has no snapshot, plan or profile.", MISSING))
    return Section("tenants", "Tenants and pools", tuple(blocks))


def _batches(model: ReportModel, charts: set[str]) -> Section:
    title = "Reassignment batches"
    if not model.batches:
        reason = model.notes.get("bundle") or "the plan moves nothing"
        return Section("batches", title, (Para(f"No reassignment batches: {reason}.", MISSING),))
    total = sum(b.moved_bytes for b in model.batches)
    seconds = sum(b.estimated_seconds for b in model.batches)
    n = len(model.batches)
    problem = duration_problem(model)
    took = f"about {format_duration(seconds)} at the planned throttles" if problem is None else \
        f"{format_days(seconds)} at the planned throttles: no schedule (the problem above)"
    lead = f"{n} batch{'' if n == 1 else 'es'}, {format_bytes(total)} in all, {took}."
    blocks: list = []
    if problem is not None:
        blocks.append(Para(f"A problem to fix before applying: {problem}.", "over"))
    if "batches" in charts:
        blocks.append(Chart("batches", "Data moved per batch", lead))
    else:
        blocks.append(Para(lead))
    blocks.append(Table("batches", ("batch", "phase", "partitions", "to copy", "throttle", "estimated"),
                        tuple((cell(b.batch), cell(b.phase), cell(format_count(b.partitions)),
                               cell(format_bytes(b.moved_bytes)), cell(format_rate(b.throttle_bps)),
                               cell(format_duration(b.estimated_seconds), "")
                               if b.estimated_seconds <= MAX_CREDIBLE_SECONDS else
                               cell(f"{format_days(b.estimated_seconds)}: no schedule", "over"))
                              for b in model.batches),
                        frozenset({1})))
    return Section("batches", title, tuple(blocks))


def _progress(model: ReportModel) -> Section:
    """`poolplan progress --out RUN_DIR/progress/progress.json`: where the running reassignment stands."""
    title = "Reassignment progress"
    p = model.progress
    if p is None:
        return Section("progress", title, (Para(f"No progress: {model.notes['progress']}.", MISSING),))
    state = "stop" if p.exit_code == STOP else "done" if p.exit_code == DONE else "in progress"
    share = p.done_bytes / p.total_bytes if p.total_bytes else 1.0
    rate = format_rate(p.rate) if p.rate is not None else "unknown (one capture)"
    eta = format_duration(p.eta_seconds) if p.eta_seconds is not None else "unknown"
    blocks: list = [Para(f"{state.capitalize()}: {format_bytes(p.done_bytes)} of {format_bytes(p.total_bytes)} "
                         f"copied ({format_percent(share)}); rate {rate} between the last two captures; ETA {eta}.",
                         "ok" if p.exit_code == DONE else "over" if p.exit_code == STOP else "")]
    for name, rows in (("batch", p.batches), ("broker", p.brokers)):
        blocks.append(Table(f"progress-{name}", (name, "new replicas", "copied", "to copy", "rate", "ETA"), tuple(
            (cell(r[name]), cell(format_count(r["replicas"])), cell(format_bytes(r["done_bytes"])),
             cell(format_bytes(r["total_bytes"])), cell(None if r["rate_Bps"] is None else format_rate(r["rate_Bps"])),
             cell(None if r["eta_seconds"] is None else format_duration(r["eta_seconds"]))) for r in rows)))
    if p.stop:
        blocks.append(Items("Stop, because:", tuple(p.stop["reasons"]), "over"))
        blocks.append(Items("Commands that stop cleanly (cancel the running batch, then delete its throttles if "
                            "they remain):", tuple(f"`{c}`" for c in p.stop["commands"]), "over"))
    else:
        if p.stuck:
            blocks.append(Items("Stuck (no progress between the last two captures):", p.stuck, "over"))
        if p.diverged:
            blocks.append(Items("Diverged (`--verify` reports another replica set):", p.diverged, "over"))
    if p.slow:
        blocks.append(Items(f"Slow (below {format_percent(p.slow_share)} of their part of the throttle):", tuple(
            f"{r['partition']} onto broker {r['broker']}: {format_rate(r['rate_Bps'])} of "
            f"{format_rate(r['throttle_share_Bps'])}" for r in p.slow), "over"))
    if p.isr:
        pending = tuple(f"{r['partition']} on broker {r['broker']}" for r in p.isr.get("pending", ()))
        blocks.append(Items(f"New replicas in the ISR: {format_count(len(p.isr.get('joined', ())))}; not yet:",
                            pending or ("none",)))
    if p.was_under_min_isr:
        blocks.append(Items("Under min ISR in an earlier capture, recovered since:", tuple(
            f"{r['partition']} ({r['capture']})" for r in p.was_under_min_isr)))
    if p.leaders_not_preferred:
        blocks.append(Items("Finished but not led by the preferred replica (run the leader election):", tuple(
            f"{r['partition']}: leader {r['leader']}, preferred {r['preferred']}" for r in p.leaders_not_preferred),
            "over"))
    if p.throttles_left:
        blocks.append(Para("Every partition is complete but the throttles are still set: run "
                           "`kafka-reassign-partitions.sh --verify` without `--preserve-throttles`.", "over"))
    return Section("progress", title, tuple(blocks))


def _findings(model: ReportModel, charts: set[str]) -> Section:
    title = "Audit findings"
    if model.findings is None:
        return Section("findings", title, (Para(f"No audit: {model.notes.get('audit')}.", MISSING),))
    if not model.findings:
        return Section("findings", title, (Para("The audit found nothing: the cluster honours its pools."),))
    shown = model.findings[:MAX_FINDING_ROWS]
    blocks: list = []
    if "findings" in charts:
        blocks.append(Chart("findings", "Audit findings", f"{len(model.findings)} findings by kind and severity."))
    blocks.append(Table(
        "findings", ("severity", "kind", "pool", "broker", "partition"),
        tuple((cell(f.severity.value, f"sev-{f.severity.value}"), cell(f.kind), cell(f.pool or ""),
               cell("" if f.broker is None else f.broker),
               cell(where(f.topic, f.partition) if f.topic is not None else "")) for f in shown),
        frozenset({0, 1, 2, 4}), details=tuple(f.fix for f in shown), detail_header="fix"))
    blocks.append(Para("Most severe first. Fixes use shell variables: `BOOTSTRAP` (the cluster's bootstrap servers), "
                       "`SNAPSHOT`, `POLICY` and `PROFILE` (the files the audit read)."))
    if len(model.findings) > MAX_FINDING_ROWS:
        blocks.append(Para(f"{len(model.findings) - MAX_FINDING_ROWS} more in `audit/findings.md`."))
    return Section("findings", title, tuple(blocks))
