"""The independent plan validator: pool rules as stateless checks over (snapshot, policy, plan, demands).

Each ``check_<rule>(snapshot, policy, plan, demands) -> list[Violation]`` recomputes what it needs from the
inputs (never from the solver's own numbers), applying the rules of `pools.pool_rules` to the limits it resolves
from the policy. `validate_plan` runs them all; `planner.pool_planner` runs it after every solve and tests run it
on every plan they produce.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from pools.cluster_arrays import cluster_arrays
from pools.new_brokers import with_planned_brokers
from pools.demand import Demand, broker_load
from pools.errors import InfeasibleError
from pools.health import cluster_health, cordon_crossings, evacuation_keeps
from pools.plan_file import PartitionTable, Plan, ReasonRule
from pools.policy import PoolPolicy
from pools.pool_rules import (
    PoolRules,
    brokers_required,
    failing_brokers,
    misplaced_pins,
    over_limit,
    pool_racks,
    pool_racks_required,
    shared_tenant_pools,
    spans_racks,
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
    "check_reasons",
    "check_cordons",
    "refuse_cordon_crossings",
]

@dataclass(frozen=True, slots=True)
class Violation:
    """A broken rule: its name, whether it is hard (the plan must not be executed) and what is wrong."""

    rule: str
    hard: bool
    message: str


Check = Callable[[ClusterSnapshot, PoolPolicy, Plan, Mapping[str, Demand]], list[Violation]]


def check_partitions(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Every partition once; replicas distinct, on existing brokers (a partition the plan leaves as it is may keep
    one on a broker the snapshot lacks), replication factor unchanged (or the one a replication-factor operation
    sets: ``operation.replication_factors``)."""
    view = _view(snapshot, plan)
    known = set(snapshot.broker_ids)
    wanted = plan.replication_factors
    if view.aligned:  # one target per snapshot partition, in order: only flagged rows need a closer look
        rows = view.target
        dup = np.zeros(len(rows), dtype=bool)
        for i in range(rows.shape[1]):
            for j in range(i + 1, rows.shape[1]):
                dup |= (rows[:, i] == rows[:, j]) & (rows[:, i] >= 0)
        unknown = ((rows >= 0) & ~np.isin(rows, np.array(snapshot.broker_ids, dtype=np.int64))).any(axis=1)
        rf = cluster_arrays(snapshot).part_rf
        flagged = np.flatnonzero(dup | unknown | (view.length != rf)).tolist()
        return [v for i in flagged
                for v in _partition_problems(plan.partitions[i], snapshot.partitions[i], known, wanted)]
    out = []
    current = {(p.topic, p.partition): p for p in snapshot.partitions}
    seen = set()
    for m in plan.partitions:
        key = (m.topic, m.partition)
        if key in seen:
            out.append(Violation("partitions", True, f"partition {m.topic}-{m.partition} is listed twice"))
        seen.add(key)
        state = current.get(key)
        if state is None:
            out.append(Violation("partitions", True, f"partition {m.topic}-{m.partition} is not in the snapshot"))
            continue
        out += _partition_problems(m, state, known, wanted)
    for key in sorted(set(current) - seen):
        out.append(Violation("partitions", True, f"partition {key[0]}-{key[1]} has no target"))
    return out


def _partition_problems(m, state, known: set[int], wanted: Mapping[str, int]) -> list[Violation]:
    out = []
    name = f"{m.topic}-{m.partition}"
    if len(set(m.replicas)) != len(m.replicas):
        out.append(Violation("partitions", True, f"partition {name} has duplicate replicas {list(m.replicas)}"))
    if len(m.replicas) != wanted.get(m.topic, len(state.replicas)):
        out.append(Violation("partitions", True, f"partition {name} changes replication factor "
                                                 f"{len(state.replicas)} -> {len(m.replicas)}"))
    # a partition left as it is may keep a replica on a broker gone from the inventory; a reassignment may not name
    # one (Kafka: "The manual partition assignment includes broker N, but no such broker is registered.")
    unknown = [b for b in m.replicas if b not in known] if tuple(m.replicas) != tuple(state.replicas) else []
    if unknown:
        out.append(Violation("partitions", True, f"partition {name} names brokers {unknown} the cluster lacks"))
    return out


def check_pools(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Each topic in one of its candidate pools (any pool when none claims it); each replica in its topic's pool
    (a partition `pools.health` holds may keep its current replicas). A day-2 operation leaves a topic in no pool
    where it is and says so itself: such a topic, unmoved, is not judged here; nor is a partition whose replicas
    it only reorders (a demotion, an excluded topic): where they sit is the audit's finding, not the plan's."""
    out = []
    held = _kept_held(snapshot, plan)
    moved = {m.topic for m in plan.moves}
    left = {t for t in snapshot.partitions_by_topic if plan.operation and plan.topics.get(t) is None} - moved
    for topic in sorted(set(snapshot.partitions_by_topic) - left):
        pool = plan.topics.get(topic)
        candidates = policy.resolve(topic).candidates or policy.pool_names  # claimed by no pool: any pool
        if pool not in candidates:
            out.append(Violation("pools", True, f"topic {topic!r} is in pool {pool!r}, not one of {list(candidates)}"))
    for m in _flagged(snapshot, plan, _outside_rows):
        if (m.topic, m.partition) in held or m.topic in left or (plan.operation and
                                                                   set(m.replicas) == set(m.old_replicas)):
            continue
        pool = plan.topics.get(m.topic)
        outside = [b for b in m.replicas if plan.brokers.get(b) != pool]
        if outside:
            out.append(Violation("pools", True, f"partition {m.topic}-{m.partition} of pool {pool!r} has replicas on "
                                                f"brokers {outside} outside the pool"))
    return out


def check_racks(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Replicas span min(RF, racks of the pool) racks (a partition `pools.health` holds may keep its replicas);
    each pool spans min(max(min_racks, largest RF), racks of the cluster) racks. A rack counts only with open
    capacity (`pools.health.ClusterHealth.open_racks`): where a pool or the cluster has only closed brokers, no new
    replica can go."""
    out = []
    rules = PoolRules.from_policy(policy)
    held = _kept_held(snapshot, plan)
    rack = {b.id: b.rack for b in snapshot.brokers}
    health = cluster_health(snapshot)
    open_racks = pool_racks(plan.brokers, rack, health)
    cluster_racks = health.open_racks((b.id, b.rack) for b in snapshot.brokers)
    if snapshot.racks:
        largest = _largest_rfs(snapshot, plan)
        for pool in policy.pool_names:
            rf = largest.get(pool, 0)
            need = pool_racks_required(rules.limits(pool), rf, len(cluster_racks))
            spread = len(open_racks.get(pool, set()))
            if (rf or any(p == pool for p in plan.brokers.values())) and spread < need:
                out.append(Violation("racks", True, f"pool {pool!r} spans {spread} rack(s) with open capacity "
                                                    f"(a broker not cordoned or unhealthy), needs {need}"))
    for m in _flagged(snapshot, plan, _narrow_rows):
        if (m.topic, m.partition) in held:
            continue
        available = len(open_racks.get(plan.topics.get(m.topic), set()))
        if not spans_racks([rack.get(b) for b in m.replicas], available):
            spread = len({rack.get(b) for b in m.replicas if rack.get(b) is not None})
            out.append(Violation("racks", True, f"partition {m.topic}-{m.partition} spans {spread} rack(s); its pool "
                                                f"has {available} with open capacity for {len(m.replicas)} replicas"))
    return out


def check_broker_capacity(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Each broker's forecast load within headroom × its capacity, per dimension (a broker in no pool: the
    policy's default headroom)."""
    out = []
    rules = PoolRules.from_policy(policy)
    view = _view(snapshot, plan)
    loads = (broker_load(snapshot, demands, target=view.target) if view.aligned
             else broker_load(snapshot, demands, {(m.topic, m.partition): m.replicas for m in plan.partitions}))
    for b in snapshot.brokers:
        pool = plan.brokers.get(b.id)
        for dim in DIMENSIONS:
            h = rules.limits(pool).headroom_of(dim)
            limit = h * b.capacity.get(dim)
            if over_limit(loads[b.id][dim], limit):
                out.append(Violation("broker_capacity", True,
                                     f"broker {b.id} ({pool}) {dim} load {loads[b.id][dim]:.6g} exceeds {h:.0%} of "
                                     f"{b.capacity.get(dim):.6g}"))
    return out


def check_pool_capacity(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Each pool's forecast demand within headroom × usable capacity (its brokers less the tolerated failures,
    the largest in each dimension); broker count ≥ max(min_brokers, largest RF)."""
    out = []
    rules = PoolRules.from_policy(policy)
    largest = _largest_rfs(snapshot, plan)
    for pool in policy.pool_names:
        limits = rules.limits(pool)
        failures = limits.tolerated_failures
        members = [b for b in snapshot.brokers if plan.brokers.get(b.id) == pool]
        topics = [t for t, p in plan.topics.items() if p == pool]
        need = brokers_required(limits, largest.get(pool, 0))
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


def _largest_rfs(snapshot: ClusterSnapshot, plan: Plan) -> dict[str, int]:
    """The largest replication factor among each pool's topics (0 for a pool without partitions)."""
    a = cluster_arrays(snapshot)
    rf = np.zeros(len(a.topics), dtype=np.int64)
    np.maximum.at(rf, a.part_topic, a.part_rf)
    of_topic = dict(zip(a.topics, rf.tolist()))
    out: dict[str, int] = {}
    for topic, pool in plan.topics.items():
        out[pool] = max(out.get(pool, 0), of_topic.get(topic, 0))
    return out


def check_pins(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Pinned brokers stay in the pool that pins them, unless the plan drains them (``operation.drained``: a
    decommissioned or replaced broker leaves its pool, as asked)."""
    return [
        Violation("pins", True, f"broker {b} is pinned to pool {pool!r} but the plan puts it in {actual!r}")
        for b, pool, actual in misplaced_pins(policy.pinned_pool, plan.brokers)
        if not (actual is None and b in plan.drained)
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
    """Held partitions (`pools.health`) keep their replicas, except that a plan draining brokers (its
    ``operation.drained``) evacuates them from those brokers and keeps every other replica; no new replica goes
    to an unhealthy broker."""
    health = cluster_health(snapshot)
    health = health.evacuating(health.evacuable(snapshot, plan.drained), plan.drained)
    flagged = _flagged(snapshot, plan, _unhealthy_rows)
    current = _current_replicas(snapshot, [(m.topic, m.partition) for m in flagged])
    evacuable = set(health.evacuated)
    out = []
    for m in flagged:
        key = (m.topic, m.partition)
        outside = [b for b in current.get(key, ()) if plan.brokers.get(b) != plan.topics.get(m.topic)]
        if key in evacuable and not evacuation_keeps(current[key], m.replicas, health.drained, outside):
            out.append(Violation("health", True, f"partition {m.topic}-{m.partition} is {health.evacuated[key]}: "
                                                 f"the plan may only replace its replicas on drained broker(s) "
                                                 f"{list(health.drained)}, but changes {list(current[key])} to "
                                                 f"{list(m.replicas)}"))
        elif key in health.partitions and key not in evacuable and m.replicas != current.get(key):
            out.append(Violation("health", True, f"partition {m.topic}-{m.partition} is {health.partitions[key]} "
                                                 f"but the plan changes its replicas to {list(m.replicas)}"))
        bad = [b for b in m.replicas if b in health.brokers and b not in current.get(key, ())]
        if bad:
            out.append(Violation("health", True, f"partition {m.topic}-{m.partition} gets a new replica on "
                                                 f"unhealthy broker(s) {bad}"))
    return out


def check_cordons(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """No new replica lands on a cordoned broker (KIP-1066, `pools.health.cordon_crossings`): Kafka 4.3 rejects
    that reassignment with ``INVALID_REPLICA_ASSIGNMENT`` and the bundle stops halfway. A replica it already holds
    may stay. Hard, and more: every command refuses a plan that breaks it (`refuse_cordon_crossings`)."""
    cordoned = sorted(b.id for b in snapshot.brokers if b.cordoned)
    if not cordoned:
        return []
    flagged = _flagged(snapshot, plan, lambda s, p, view: np.isin(view.target, cordoned).any(axis=1))
    crossed = cordon_crossings(snapshot, ((m.topic, m.partition, m.replicas, None) for m in flagged))
    return [Violation("cordons", True, line) for line in crossed]


def refuse_cordon_crossings(found: list[Violation]) -> None:
    """Refuse a plan the validator found crossing a cordon (`check_cordons`): one line naming the first crossing
    (partition, broker, the cordon's source) and how many more there are.

    Raises
    ------
    InfeasibleError
        When ``found`` holds a ``cordons`` violation.
    """
    crossed = [v.message for v in found if v.rule == "cordons"]
    if crossed:
        more = f" (and {len(crossed) - 1} more crossing(s))" if len(crossed) > 1 else ""
        raise InfeasibleError(f"refused: the plan crosses a cordon: {crossed[0]}{more}; no open broker of its pool "
                              "can take that replica (uncordon a broker or add one)")


def _current_replicas(snapshot: ClusterSnapshot,
                      keys: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, ...]]:
    """The current replicas of the partitions ``keys`` names (those the snapshot has)."""
    out = {}
    for topic, partition in keys:
        parts = snapshot.partitions_by_topic.get(topic, ())
        i = bisect_left(parts, partition, key=attrgetter("partition"))
        if i < len(parts) and parts[i].partition == partition:
            out[topic, partition] = parts[i].replicas
    return out


@dataclass(frozen=True, eq=False)
class _View:
    """The plan's partitions as columns (`pools.plan_file.PartitionTable`): its targets a (P, max RF) array of broker
    ids (-1 padding) with their lengths; ``aligned`` when the plan lists exactly the snapshot's partitions in the
    same (sorted) order."""

    aligned: bool
    table: PartitionTable

    @property
    def target(self) -> np.ndarray:
        return self.table.new

    @property
    def length(self) -> np.ndarray:
        return self.table.new_count


_VIEWS: dict[tuple[int, int], tuple[weakref.ref, weakref.ref, _View]] = {}


def _view(snapshot: ClusterSnapshot, plan: Plan) -> _View:
    """`_View` of ``plan``, built once per (snapshot, plan) objects."""
    key = (id(snapshot), id(plan))
    hit = _VIEWS.get(key)
    if hit is not None and hit[0]() is snapshot and hit[1]() is plan:
        return hit[2]
    for stale in [k for k, v in _VIEWS.items() if v[0]() is None or v[1]() is None]:
        del _VIEWS[stale]
    table = PartitionTable.from_moves(plan.partitions)
    a = cluster_arrays(snapshot)
    names, known = np.array(table.topics, dtype=object), np.array(a.topics, dtype=object)
    aligned = len(table) == len(a.part_id) and np.array_equal(table.partition, a.part_id) and (
        np.array_equal(table.topic, a.part_topic) if table.topics == a.topics else  # the planner's table
        np.array_equal(names[table.topic], known[a.part_topic]))
    view = _View(bool(aligned), table)
    _VIEWS[key] = (weakref.ref(snapshot), weakref.ref(plan), view)
    return view


def _flagged(snapshot: ClusterSnapshot, plan: Plan, rows) -> list:
    """The plan partitions ``rows(snapshot, plan, view)`` flags (boolean per plan partition)."""
    mask = rows(snapshot, plan, _view(snapshot, plan))
    return [plan.partitions[i] for i in np.flatnonzero(mask).tolist()]


def _lookup(ids: np.ndarray, keys: list[int], values: list[int]) -> np.ndarray:
    """``values`` of ``ids`` by ``keys`` (-1 where absent or padding)."""
    if not keys:
        return np.full(ids.shape, -1, dtype=np.int64)
    order = np.argsort(np.array(keys, dtype=np.int64))
    sorted_keys = np.array(keys, dtype=np.int64)[order]
    pos = np.minimum(np.searchsorted(sorted_keys, ids), len(keys) - 1)
    found = (sorted_keys[pos] == ids) & (ids >= 0)
    return np.where(found, np.array(values, dtype=np.int64)[order][pos], -1)


def _outside_rows(snapshot: ClusterSnapshot, plan: Plan, view: _View) -> np.ndarray:
    names = sorted({p for p in plan.brokers.values() if p is not None} | set(plan.topics.values()))
    code = {n: i for i, n in enumerate(names)}
    broker_pool = _lookup(view.target, list(plan.brokers), [code.get(p, -2) if p is not None else -2
                                                           for p in plan.brokers.values()])
    table = view.table
    topic_pool = np.array([code.get(plan.topics.get(t), -3) for t in table.topics], dtype=np.int64)[table.topic]
    return ((broker_pool != topic_pool[:, None]) & (view.target >= 0)).any(axis=1) if len(topic_pool) else \
        np.zeros(0, dtype=bool)


def _narrow_rows(snapshot: ClusterSnapshot, plan: Plan, view: _View) -> np.ndarray:
    """Partitions spanning fewer distinct (known) racks than replicas: the candidates for a rack violation."""
    racks = sorted({b.rack for b in snapshot.brokers if b.rack is not None})
    code = {r: i for i, r in enumerate(racks)}
    rack = _lookup(view.target, [b.id for b in snapshot.brokers],
                   [code[b.rack] if b.rack is not None else -1 for b in snapshot.brokers])
    ordered = np.sort(np.where(rack >= 0, rack, len(racks) + np.arange(rack.shape[1])), axis=1)
    distinct = 1 + (ordered[:, 1:] != ordered[:, :-1]).sum(axis=1) if rack.shape[1] else np.zeros(len(rack))
    known = np.where(rack >= 0, 1, 0).sum(axis=1)
    return (distinct < view.length) | (known < view.length) if len(rack) else np.zeros(0, dtype=bool)


def _unhealthy_rows(snapshot: ClusterSnapshot, plan: Plan, view: _View) -> np.ndarray:
    health = cluster_health(snapshot)
    mask = np.isin(view.target, np.fromiter(health.brokers, np.int64, len(health.brokers))).any(axis=1)
    rows = view.table.rows_of([*health.partitions, *health.evacuated])
    mask[rows[rows >= 0]] = True
    return mask


def _kept_held(snapshot: ClusterSnapshot, plan: Plan) -> set[tuple[str, int]]:
    """Held partitions the plan leaves on their current replicas: those `pools.health` holds and those with a
    replica on a broker the snapshot lacks (stranded when their pool has too few brokers, `pools.fill`)."""
    a = cluster_arrays(snapshot)
    stranded = np.zeros(len(a.part_id), dtype=bool)
    stranded[a.rep_part[a.rep_broker >= a.n_brokers]] = True
    held = {(a.topics[t], p) for t, p in zip(a.part_topic[stranded].tolist(), a.part_id[stranded].tolist())}
    held |= cluster_health(snapshot).partitions.keys()
    if not held:
        return set()
    keys = sorted(held)
    current = _current_replicas(snapshot, keys)
    table = _view(snapshot, plan).table
    rows = table.rows_of(keys).tolist()
    return {key for key, i in zip(keys, rows) if i >= 0 and key in current and table[i].replicas == current[key]}


#: Every rule, in report order.
def check_reasons(snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands) -> list[Violation]:
    """Every move carries a reason (`pools.plan_file.Reason`), and what it says of the plan holds: ``evacuate`` names
    brokers drained by the operation or unhealthy, ``demote`` a former leader the operation demotes, ``isolate`` brokers
    outside the topic's pool, and ``replication_factor`` a partition whose factor the plan changes. Soft: a move's
    reason explains, it does not make the plan unsafe (a plan written before reasons has none)."""
    gone = set(plan.drained) | set(cluster_health(snapshot).brokers)
    out = []
    bare = [f"{m.topic}-{m.partition}" for m in plan.moves if m.reason is None]
    if bare:
        out.append(Violation("reasons", False, f"{len(bare)} move(s) carry no reason: {', '.join(bare[:5])}"
                                               f"{' and more' if len(bare) > 5 else ''}"))
    for m in plan.moves:
        r, name = m.reason, f"{m.topic}-{m.partition}"
        if r is None:
            continue
        pool = plan.topics.get(m.topic)
        rule, demoted = ReasonRule, plan.demoted
        wrong = (r.rule is not rule.DEMOTE and any(b not in m.removing for b in r.brokers)) or \
                (r.rule is rule.DEMOTE and (m.old_replicas[0] not in demoted or m.replicas[0] in demoted)) or \
                (r.rule is rule.EVACUATE and any(b not in gone for b in r.brokers)) or \
                (r.rule is rule.ISOLATE and any(plan.brokers.get(b) == pool for b in r.brokers)) or \
                (r.rule is rule.REPLICATION_FACTOR and len(m.replicas) == len(m.old_replicas))
        if wrong:
            out.append(Violation("reasons", False, f"partition {name}: its reason {r.rule} does not hold "
                                                   f"({r.describe()})"))
    return out


CHECKS: tuple[Check, ...] = (
    check_partitions,
    check_pools,
    check_racks,
    check_broker_capacity,
    check_pool_capacity,
    check_pins,
    check_tenants,
    check_health,
    check_reasons,
    check_cordons,
)


def validate_plan(
    snapshot: ClusterSnapshot, policy: PoolPolicy, plan: Plan, demands: Mapping[str, Demand]
) -> list[Violation]:
    """All violations of ``plan`` (empty when it is valid); ``demands`` at the forecast. The plan's brokers still
    to buy count as joined (`pools.new_brokers.with_planned_brokers`): the plan applies once they have."""
    snapshot = with_planned_brokers(snapshot, plan.planned_brokers)
    return [v for check in CHECKS for v in check(snapshot, policy, plan, demands)]
