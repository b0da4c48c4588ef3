"""Capacity rules: replica limits, utilisation over headroom (now and at the forecast), surviving a broker loss.

Headroom, failure tolerance and the comparison with its tolerance are `pools.pool_rules`'.
"""

from __future__ import annotations

import math

import numpy as np

from pools.audit.common import finding, num, pool_name, ratio
from pools.audit.findings import Finding, Severity
from pools.audit.fixes import PLAN_FIX
from pools.audit.loads import Loads
from pools.cluster_arrays import ClusterArrays, PoolArrays, cluster_arrays, pool_arrays
from pools.policy import PoolPolicy
from pools.pool_rules import PoolRules, failing_brokers, headroom_limit, over_limit, usable_capacity
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = ["check_replica_count_over_limit", "check_utilisation_over_headroom", "check_pool_cannot_lose_broker"]


def check_replica_count_over_limit(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Brokers holding more replicas than their ``replicas`` capacity."""
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    limit = np.array([snapshot.broker_by_id[int(b)].capacity.replicas for b in a.broker_ids])
    return [
        finding(
            "replica_count_over_limit",
            pool=pool_name(p, int(p.broker_pool[b])),
            broker=int(a.broker_ids[b]),
            evidence={"replicas": int(loads.now[b, 3]), "limit": num(limit[b])},
            fix=PLAN_FIX,
        )
        for b in np.flatnonzero(loads.now[:, 3] > limit).tolist()
    ]


def check_utilisation_over_headroom(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Brokers and pools whose load exceeds headroom × capacity in a dimension, now or at the forecast.

    A broker or pool over its headroom now is not reported again for the forecast; a broker over its replica
    limit is reported by `check_replica_count_over_limit` instead. Brokers in no pool use the default headroom.
    """
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    rules = PoolRules.from_policy(policy)
    cap = _capacity(snapshot, a)
    head = _broker_headroom(rules, p, a)
    out: list[Finding] = []
    for d, dim in enumerate(DIMENSIONS):
        broker_over_now = np.zeros(a.n_brokers, dtype=bool)
        pool_over_now = np.zeros(len(p.pools), dtype=bool)
        for basis in ("now", "forecast"):
            load = loads.table(basis)[:, d]
            if np.isnan(load).all():
                continue
            over = _over(load, cap[:, d], head[:, d]) & ~broker_over_now
            if dim == "replicas":
                over &= ~(loads.now[:, 3] > cap[:, 3])
            for b in np.flatnonzero(over).tolist():
                out.append(_utilisation("broker", pool_name(p, int(p.broker_pool[b])), int(a.broker_ids[b]), dim,
                                        basis, load[b], cap[b, d], head[b, d]))
            if basis == "now":
                broker_over_now |= over
            for j, pool in enumerate(p.pools):
                members = p.broker_pool[: a.n_brokers] == j
                if not members.any() or pool_over_now[j]:
                    continue
                total, capacity = float(load[members].sum()), float(cap[members, d].sum())
                h = rules.limits(pool).headroom_of(dim)
                if _over(np.array([total]), np.array([capacity]), np.array([h]))[0]:
                    out.append(_utilisation("pool", pool, None, dim, basis, total, capacity, h))
                    pool_over_now[j] = basis == "now"
    return out


def check_pool_cannot_lose_broker(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Pools whose load would exceed headroom × capacity after losing their largest broker(s).

    Loses ``tolerated_broker_failures`` brokers, the largest in each dimension (`pools.pool_rules.usable_capacity`).
    Dimensions where the pool is already over its headroom (reported by `check_utilisation_over_headroom`) are not
    counted; the finding is for the current load when any dimension fails now, else for the forecast.
    """
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    rules = PoolRules.from_policy(policy)
    k = rules.tolerated_failures
    if k <= 0:
        return []
    cap = _capacity(snapshot, a)
    out = []
    for j, pool in enumerate(p.pools):
        members = np.flatnonzero(p.broker_pool[: a.n_brokers] == j)
        if len(members) == 0:
            continue
        for basis in ("now", "forecast"):
            failing = {}
            for d, dim in enumerate(DIMENSIONS):
                load = float(loads.table(basis)[members, d].sum())
                if math.isnan(load) or load <= 0:
                    continue
                h = rules.limits(pool).headroom_of(dim)
                caps = cap[members, d].tolist()
                full, after = float(sum(caps)), usable_capacity(caps, k)
                if over_limit(load, headroom_limit(full, h)) or not over_limit(load, headroom_limit(after, h)):
                    continue
                lost = sorted(members[i] for i in failing_brokers(caps, k))
                failing[dim] = {
                    "load": num(load),
                    "capacity_after_loss": num(after),
                    "headroom": h,
                    "utilisation_after_loss": ratio(load, after),
                    "lost_brokers": [int(a.broker_ids[b]) for b in lost],
                }
            if failing:
                out.append(
                    finding(
                        "pool_cannot_lose_broker",
                        severity=Severity.ERROR if basis == "now" else Severity.WARNING,
                        pool=pool,
                        evidence={"basis": basis, "tolerated_broker_failures": k, "dimensions": failing},
                        fix=PLAN_FIX,
                    )
                )
                break
    return out


def _utilisation(scope: str, pool: str | None, broker: int | None, dim: str, basis: str, load: float,
                 capacity: float, headroom: float) -> Finding:
    return finding(
        "utilisation_over_headroom",
        severity=Severity.ERROR if basis == "now" else Severity.WARNING,
        pool=pool,
        broker=broker,
        evidence={"scope": scope, "dimension": dim, "basis": basis, "load": num(load), "capacity": num(capacity),
                  "headroom": headroom, "utilisation": ratio(load, capacity)},
        fix=PLAN_FIX,
    )


def _capacity(snapshot: ClusterSnapshot, a: ClusterArrays) -> np.ndarray:
    by_id = snapshot.broker_by_id
    return np.array([[by_id[int(b)].capacity.get(d) for d in DIMENSIONS] for b in a.broker_ids],
                    dtype=float).reshape(a.n_brokers, len(DIMENSIONS))


def _broker_headroom(rules: PoolRules, p: PoolArrays, a: ClusterArrays) -> np.ndarray:
    """Headroom per broker position and dimension: its pool's, the policy default for a broker in no pool."""
    rows = [
        rules.limits(p.pools[j] if (j := int(p.broker_pool[b])) >= 0 else None).headroom for b in range(a.n_brokers)
    ]
    return np.array(rows, dtype=float).reshape(a.n_brokers, len(DIMENSIONS))


def _over(load: np.ndarray, capacity: np.ndarray, headroom: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return ~np.isnan(load) & (load > 0) & over_limit(load, headroom_limit(capacity, headroom))
