"""Helpers shared by the audit rules: each kind's default severity, building findings, rounding evidence."""

from __future__ import annotations

from pools.audit.findings import Finding, Severity
from pools.cluster_arrays import PoolArrays

__all__ = ["SEVERITY", "finding", "pool_name", "num", "ratio"]

#: The default severity of every finding kind (the registry `pools.audit.rules.RULES` uses these).
SEVERITY: dict[str, Severity] = {
    "replica_outside_pool": Severity.ERROR,
    "broker_mixed_pools": Severity.ERROR,
    "broker_without_pool": Severity.WARNING,
    "topic_without_pool": Severity.WARNING,
    "rack_shared": Severity.WARNING,
    "offline_partition": Severity.CRITICAL,
    "under_min_isr": Severity.CRITICAL,
    "under_replicated": Severity.ERROR,
    "reassignment_in_progress": Severity.INFO,
    "log_dir_error": Severity.CRITICAL,
    "replica_count_over_limit": Severity.ERROR,
    "utilisation_over_headroom": Severity.ERROR,
    "pool_cannot_lose_broker": Severity.ERROR,
    "leader_not_preferred": Severity.INFO,
    "leader_count_skew": Severity.WARNING,
    "replicas_on_cordoned": Severity.WARNING,
    "log_dir_over_headroom": Severity.ERROR,
    "min_isr_after_broker_loss": Severity.ERROR,
    "at_min_isr": Severity.ERROR,
    "single_replica_topic": Severity.ERROR,
}


def finding(kind: str, *, severity: Severity | None = None, **fields) -> Finding:
    """A `Finding` of ``kind`` at its default severity unless ``severity`` is given."""
    return Finding(kind=kind, severity=severity or SEVERITY[kind], **fields)


def pool_name(p: PoolArrays, j: int) -> str | None:
    """The name of pool position ``j``; ``None`` for -1 (no pool)."""
    return p.pools[j] if j >= 0 else None


def num(x: float) -> float | int:
    """An evidence number: an int when whole, else rounded to 3 decimals."""
    x = float(x)
    return int(x) if x.is_integer() else round(x, 3)


def ratio(load: float, capacity: float) -> float | None:
    """``load / capacity`` rounded to 4 decimals; ``None`` when there is no capacity."""
    return round(float(load) / float(capacity), 4) if capacity > 0 else None
