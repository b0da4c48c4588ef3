"""An audit as metrics a Prometheus can scrape: the node exporter's textfile format (``poolplan audit --metrics``).

Every number is asked of its one home: the findings of `pools.audit` (by whatever kinds it reports), each pool's
utilisation and limit of the report's capacity model (`planner.report.capacity`, through `pools.pool_rules`) and
its runway of the report's runway (`planner.report.runway`), the drift of `pools.audit.drift`. Names follow
Prometheus practice: the ``poolplan_`` prefix, base units (seconds), ``_ratio`` for fractions. The text is
deterministic: the audit's time is the snapshot's capture time (the clock only when the snapshot has none).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from planner.report.capacity import PoolCapacity
from planner.report.runway import EDGE_OF, Crossing, Runway
from pools.audit.drift import Drift
from pools.audit.findings import Finding, Severity

__all__ = ["AuditMetrics", "audit_metrics", "render_textfile", "crossing_seconds"]

DAY_SECONDS = 86_400
#: The finding kind whose partitions are counted as outside their pool (`pools.audit.rules`).
OUTSIDE_POOL_KIND = "replica_outside_pool"


@dataclass(frozen=True)
class Family:
    """One metric family: its name, help, and samples as (labels, value)."""

    name: str
    help: str
    samples: tuple[tuple[tuple[tuple[str, str], ...], float], ...]


@dataclass(frozen=True)
class AuditMetrics:
    """The families of one audit, in the order they are written."""

    families: tuple[Family, ...]


def crossing_seconds(c: Crossing) -> float | None:
    """A runway crossing in seconds from the runway's day: 0 when already past, ``+Inf`` when the history supports
    no crossing ("after" its span, or a flat demand), ``None`` when no limit is known.

    >>> crossing_seconds(Crossing("day", 2)), crossing_seconds(Crossing("after")), crossing_seconds(Crossing("unknown"))
    (172800, inf, None)
    """
    if c.kind in ("past", "day"):
        return (c.day or 0) * DAY_SECONDS
    return math.inf if c.kind in ("after", "flat") else None


def audit_metrics(cluster: str, findings: Iterable[Finding], *, taken_at: str | None, fail_on: Severity,
                  pools: Sequence[PoolCapacity], pool_names: Iterable[str], runway: Runway | None,
                  lead_time_days: int | None, drift: Drift | None) -> AuditMetrics:
    """The metric families of an audit of ``cluster``.

    ``pools`` are the report's capacity rows (one per pool and dimension), ``pool_names`` every pool the policy
    and the snapshot know (each gets a partitions-outside count, 0 included, so an alert on it clears), ``runway``
    the report's runway (``None`` without a profile), ``drift`` the comparison with an earlier audit (``None``
    without ``--since``).
    """
    findings = tuple(findings)
    c = ("cluster", cluster)
    counts: dict[tuple[str, str, str], int] = {}
    for f in findings:
        key = (f.kind, f.pool or "", f.severity.value)
        counts[key] = counts.get(key, 0) + 1
    outside: dict[str, set[tuple[str | None, int | None]]] = {p: set() for p in pool_names}
    for f in findings:
        if f.kind == OUTSIDE_POOL_KIND:
            outside.setdefault(f.pool or "", set()).add((f.topic, f.partition))
    failing = any(f.severity.rank >= fail_on.rank for f in findings)
    families = [
        Family("poolplan_audit_findings", "Findings of the last audit by kind, severity and pool (pool is empty "
               "where none applies).",
               tuple(((c, ("kind", k), ("pool", p), ("severity", s)), n) for (k, p, s), n in sorted(counts.items()))),
        Family("poolplan_audit_timestamp_seconds", "When the audited cluster state was captured (the snapshot's "
               "taken_at), in seconds since the epoch.", (((c,), _epoch(taken_at)),)),
        Family("poolplan_audit_failing", "1 when the last audit has a finding at or above its --fail-on severity "
               "(its exit code is 1), else 0.", (((c, ("fail_on", fail_on.value)), float(failing)),)),
        Family("poolplan_partitions_outside_pool", "Partitions with a replica on a broker outside their topic's "
               "pool.", tuple(((c, ("pool", p)), len(parts)) for p, parts in sorted(outside.items()))),
    ]
    if drift is not None:
        families += [
            Family("poolplan_audit_new_findings", "Findings of the last audit that the earlier one (--since) did "
                   "not have.", (((c,), len(drift.appeared)),)),
            Family("poolplan_audit_cleared_findings", "Findings of the earlier audit (--since) that the last one no "
                   "longer has.", (((c,), len(drift.cleared)),)),
        ]
    families += [
        Family("poolplan_pool_utilisation_ratio", "Load now over capacity of the pool's brokers, per dimension.",
               tuple(((c, ("dimension", p.dimension), ("pool", p.pool)), p.now) for p in pools if p.now is not None)),
        Family("poolplan_pool_limit_ratio", "The most of the pool's capacity the pool rules allow (headroom of what "
               "is left after the tolerated broker failures), per dimension.",
               tuple(((c, ("dimension", p.dimension), ("pool", p.pool)), p.limit / p.capacity_before)
                     for p in pools if p.limit is not None and p.capacity_before > 0)),
    ]
    if runway is not None:
        rows = [((c, ("dimension", r.dimension), ("edge", edge), ("pool", r.pool)), crossing_seconds(getattr(r, edge)))
                for r in runway.rows for edge in EDGE_OF]
        families.append(Family("poolplan_pool_runway_seconds", "Time from the end of the metric history until the "
                               "pool's demand first exceeds its limit, at the forecast band's earliest, likely and "
                               "latest edge (0: already; +Inf: not within the history's span).",
                               tuple((labels, v) for labels, v in rows if v is not None)))
    if lead_time_days is not None:
        families.append(Family("poolplan_procurement_lead_time_seconds", "The policy's procurement lead time of a "
                               "new broker ([new_broker] lead_time_days).", (((c,), lead_time_days * DAY_SECONDS),)))
    return AuditMetrics(tuple(families))


def render_textfile(metrics: AuditMetrics) -> str:
    """The families in the Prometheus text exposition format the node exporter's textfile collector reads."""
    lines: list[str] = []
    for fam in metrics.families:
        lines += [f"# HELP {fam.name} {_escape_help(fam.help)}", f"# TYPE {fam.name} gauge"]
        lines += [f"{fam.name}{_labels(labels)} {_value(v)}" for labels, v in fam.samples]
    return "\n".join(lines) + "\n"


def _labels(labels: Sequence[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels) + "}"


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _value(v: float) -> str:
    """Exposition text of a sample value: integers without a fraction, ``+Inf``, else Python's shortest repr."""
    v = float(v)
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return str(int(v)) if v.is_integer() and abs(v) < 2**53 else repr(v)


def _epoch(taken_at: str | None) -> float:
    """Seconds since the epoch of an ISO-8601 time (naive: UTC); the clock when there is none."""
    if taken_at is None:
        return math.floor(time.time())
    moment = datetime.fromisoformat(taken_at.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()
