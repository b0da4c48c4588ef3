"""The independent plan validator: pool rules as stateless checks over (snapshot, policy, plan, demands).

Each ``check_<rule>(snapshot, policy, plan, demands) -> list[Violation]`` recomputes what it needs from the
inputs (never from the solver's own numbers), applying the rules of `pools.pool_rules` to the limits it resolves
from the policy. `validate_plan` runs them all; `planner.pool_planner` runs it after every solve and tests run it
on every plan they produce.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pools.demand import Demand, broker_load
from pools.health import cluster_health
from pools.plan import Plan
from pools.policy import PoolPolicy
from pools.pool_rules import (
    PoolRules,
    brokers_required,
    failing_brokers,
    misplaced_pins,
    over_limit,
    pool_racks_required,
    racks_required,
    shared_tenant_pools,
    usable_capacity,
)
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = [
    "Violation",
    "CHECKS",
    "validate_plan",
    "check_partitions",
    "check_pools",
    "check_racks",
    "check_broker_capacity",
    "check_pool_capacity",
    "check_pins",
    "check_tenants",
    "check_health",
]

@dataclass(frozen=True, slots=True)
class Violation:
    """A broken rule: its name, whether it is hard (the plan must not be executed) and what is wrong."""

    rule: str
    hard: bool
    message: str


Check = Callable[[ClusterSnapshot, PoolPolicy, Plan, Mapping[str, Demand]], list[Violation]]


def check_partitions(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Every partition once; replicas distinct, on existing brokers, replication factor unchanged."""
    out = []
    current = {(p.topic, p.partition): p for p in snapshot.partitions}
    seen = set()
    known = set(snapshot.broker_ids)
    for m in plan.partitions:
        key = (m.topic, m.partition)
        name = f"{m.topic}-{m.partition}"
        if key in seen:
            out.append(Violation("partitions", True, f"partition {name} is listed twice"))
        seen.add(key)
        state = current.get(key)
        if state is None:
            out.append(Violation("partitions", True, f"partition {name} is not in the snapshot"))
            continue
        if len(set(m.replicas)) != len(m.replicas):
            out.append(Violation("partitions", True, f"partition {name} has duplicate replicas {list(m.replicas)}"))
        if len(m.replicas) != len(state.replicas):
            out.append(Violation("partitions", True, f"partition {name} changes replication factor "
                                                     f"{len(state.replicas)} -> {len(m.replicas)}"))
        unknown = [b for b in m.replicas if b not in known]
        if unknown:
            out.append(Violation("partitions", True, f"partition {name} names brokers {unknown} the cluster lacks"))
    for key in sorted(set(current) - seen):
        out.append(Violation("partitions", True, f"partition {key[0]}-{key[1]} has no target"))
    return out


def check_pools(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Each topic in one of its candidate pools (any pool when none claims it); each replica in its topic's pool
    (a partition `pools.health` holds may keep its current replicas)."""
    out = []
    held = _kept_held(snapshot, plan)
    for topic in sorted(snapshot.partitions_by_topic):
        pool = plan.topics.get(topic)
        candidates = policy.resolve(topic).candidates or policy.pool_names  # claimed by no pool: any pool
        if pool not in candidates:
            out.append(Violation("pools", True, f"topic {topic!r} is in pool {pool!r}, not one of {list(candidates)}"))
    for m in plan.partitions:
        if (m.topic, m.partition) in held:
            continue
        pool = plan.topics.get(m.topic)
        outside = [b for b in m.replicas if plan.brokers.get(b) != pool]
        if outside:
            out.append(Violation("pools", True, f"partition {m.topic}-{m.partition} of pool {pool!r} has replicas on "
                                                f"brokers {outside} outside the pool"))
    return out


def check_racks(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Replicas span min(RF, racks of the pool) racks (a partition `pools.health` holds may keep its replicas);
    each pool spans min(max(min_racks, largest RF), racks of the cluster) racks."""
    out = []
    held = _kept_held(snapshot, plan)
    rules = PoolRules.from_policy(policy)
    rack = {b.id: b.rack for b in snapshot.brokers}
    pool_racks: dict[str | None, set[str]] = {}
    for b, pool in plan.brokers.items():
        if rack.get(b) is not None:
            pool_racks.setdefault(pool, set()).add(rack[b])  # type: ignore[arg-type]
    if snapshot.racks:
        for pool in policy.pool_names:
            rf = _largest_rf(snapshot, plan, pool)
            need = pool_racks_required(rules.limits(pool), rf, len(snapshot.racks))
            spread = len(pool_racks.get(pool, set()))
            if (rf or any(p == pool for p in plan.brokers.values())) and spread < need:
                out.append(Violation("racks", True, f"pool {pool!r} spans {spread} rack(s), needs {need}"))
    for m in plan.partitions:
        if (m.topic, m.partition) in held:
            continue
        available = len(pool_racks.get(plan.topics.get(m.topic), set()))
        if not available:
            continue
        spread = len({rack.get(b) for b in m.replicas if rack.get(b) is not None})
        if spread < racks_required(len(m.replicas), available):
            out.append(Violation("racks", True, f"partition {m.topic}-{m.partition} spans {spread} rack(s); its pool "
                                                f"has {available} for {len(m.replicas)} replicas"))
    return out


def check_broker_capacity(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Each broker's forecast load within headroom × its capacity, per dimension (a broker in no pool: the
    policy's default headroom)."""
    out = []
    rules = PoolRules.from_policy(policy)
    loads = broker_load(snapshot, demands, {(m.topic, m.partition): m.replicas for m in plan.partitions})
    for b in snapshot.brokers:
        pool = plan.brokers.get(b.id)
        for dim in DIMENSIONS:
            h = rules.limits(pool).headroom_of(dim)
            limit = h * b.capacity.get(dim)
            if over_limit(loads[b.id][dim], limit):
                out.append(Violation("broker_capacity", True, f"broker {b.id} ({pool}) {dim} load "
                                                              f"{loads[b.id][dim]:.6g} exceeds {h:.0%} of {b.capacity.get(dim):.6g}"))
    return out


def check_pool_capacity(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Each pool's forecast demand within headroom × usable capacity (its brokers less the tolerated failures,
    the largest in each dimension); broker count ≥ max(min_brokers, largest RF)."""
    out = []
    rules = PoolRules.from_policy(policy)
    for pool in policy.pool_names:
        limits = rules.limits(pool)
        failures = limits.tolerated_failures
        members = [b for b in snapshot.brokers if plan.brokers.get(b.id) == pool]
        topics = [t for t, p in plan.topics.items() if p == pool]
        need = brokers_required(limits, _largest_rf(snapshot, plan, pool))
        if len(members) < need:
            out.append(Violation("pool_capacity", True, f"pool {pool!r} has {len(members)} broker(s), needs {need}"))
        for dim in DIMENSIONS:
            caps = [b.capacity.get(dim) for b in members]
            usable = usable_capacity(caps, failures)
            demand = sum(demands[t].get(dim) for t in topics if t in demands)
            h = limits.headroom_of(dim)
            if over_limit(demand, h * usable):
                down = ", ".join(str(members[i].id) for i in failing_brokers(caps, failures))
                out.append(Violation("pool_capacity", True, f"pool {pool!r} {dim} demand {demand:.6g} exceeds {h:.0%} "
                                                            f"of {usable:.6g} (with broker(s) {down or 'none'} down)"))
    return out


def _largest_rf(snapshot: ClusterSnapshot, plan: Plan, pool: str) -> int:
    topics = [t for t, p in plan.topics.items() if p == pool]
    return max((len(p.replicas) for t in topics for p in snapshot.partitions_by_topic.get(t, ())), default=0)


def check_pins(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Pinned brokers stay in the pool that pins them."""
    return [
        Violation("pins", True, f"broker {b} is pinned to pool {pool!r} but the plan puts it in {actual!r}")
        for b, pool, actual in misplaced_pins(policy.pinned_pool, plan.brokers)
    ]


def check_tenants(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Tenants that must not share never have topics in the same pool."""
    pools_of: dict[str, set[str]] = {}
    for topic, pool in plan.topics.items():
        tenant = policy.tenant_of(topic)
        if tenant is not None:
            pools_of.setdefault(tenant, set()).add(pool)
    return [
        Violation("tenants", True, f"tenants {a!r} and {b!r} share pool(s) {shared}")
        for a, b, shared in shared_tenant_pools(pools_of, policy.conflicting_tenants)
    ]


def check_health(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Held partitions (`pools.health`) keep their replicas; no new replica goes to an unhealthy broker."""
    health = cluster_health(snapshot)
    current = {(p.topic, p.partition): p.replicas for p in snapshot.partitions}
    out = []
    for m in plan.partitions:
        key = (m.topic, m.partition)
        if key in health.partitions and m.replicas != current.get(key):
            out.append(Violation("health", True, f"partition {m.topic}-{m.partition} is {health.partitions[key]} "
                                                 f"but the plan changes its replicas to {list(m.replicas)}"))
        bad = [b for b in m.replicas if b in health.brokers and b not in current.get(key, ())]
        if bad:
            out.append(Violation("health", True, f"partition {m.topic}-{m.partition} gets a new replica on "
                                                 f"unhealthy broker(s) {bad}"))
    return out


def _kept_held(snapshot: ClusterSnapshot, plan: Plan) -> set[tuple[str, int]]:
    """Held partitions the plan leaves on their current replicas."""
    held = cluster_health(snapshot).partitions
    if not held:
        return set()
    current = {(p.topic, p.partition): p.replicas for p in snapshot.partitions if (p.topic, p.partition) in held}
    return {(m.topic, m.partition) for m in plan.partitions if current.get((m.topic, m.partition)) == m.replicas}


#: Every rule, in report order.
CHECKS: tuple[Check, ...] = (
    check_partitions,
    check_pools,
    check_racks,
    check_broker_capacity,
    check_pool_capacity,
    check_pins,
    check_tenants,
    check_health,
)


def validate_plan(
    snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands: Mapping[str, Demand]
) -> list[Violation]:
    """All violations of ``plan`` (empty when it is valid); ``demands`` at the forecast."""
    return [v for check in CHECKS for v in check(snapshot, policy, plan, demands)]
