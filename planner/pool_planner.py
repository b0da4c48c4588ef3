"""Pool planning end to end: snapshot + policy + profile → `pools.plan_file.Plan`.

Steps: check the policy against the cluster (contradictions raise `InputError`), resolve every topic to its
candidate pools and group it, compute the demand at the forecast, solve the pool model, place replicas inside
each pool with `planner.placement.minimal_move` (partitions `pools.health` holds keep their replicas; brokers
joining a pool get a fair share), and measure utilisation before and after.

After placement the independent validator (`planner.validator`) checks the plan; what it finds is added to
the plan's warnings.

Brokers still to buy: when the pools need more brokers than the cluster has, the plan reports them in
``brokers_to_add`` with an explanation per pool, and places replicas on placeholders of the policy's
``[new_broker]`` type (`pools.new_brokers`: the next free ids or the ones given, the racks the pool model chose,
alternated) exactly as on a broker joining the pool (fair share, rack spread, headroom). ``planned_brokers``
names them, so the after-plan figures hold once they join; the caller treats such a plan as needing a purchase
(exit 1).
"""

from __future__ import annotations

import itertools
import operator
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np

from planner.placement.minimal_move import place_in_pools
from planner.solvers import Solver
from planner.reasons import with_reasons
from planner.validator import refuse_cordon_crossings, validate_plan
from pools.cluster_arrays import cluster_arrays
from pools.demand import Demand, at_horizon, broker_load, demand_warnings, topic_demand
from pools.evidence import evidence, horizon_warning
from pools.errors import InputError
from pools.health import cluster_health
from pools.new_brokers import placeholder_brokers, taken_ids, with_planned_brokers
from pools.plan_file import PartitionTable, Plan
from pools.policy import PoolPolicy, TopicPools
from pools.pool_rules import (
    RACK_DIMENSIONS,
    PoolRules,
    brokers_to_fit,
    closed_capacity,
    spans_every_rack,
    usable_capacity,
)
from pools.profile import PartitionProfile, TopicProfile
from pools.progress import ProgressReporter, no_progress
from pools.snapshot import DIMENSIONS, Capacity, ClusterSnapshot

__all__ = ["PlanOutcome", "plan_pools", "check_policy"]


@dataclass(frozen=True)
class PlanOutcome:
    """The plan and, when the pools need brokers the cluster lacks, one explanation per shortfall; the solver's
    wall time (for the console: it varies with the machine and its load, so it is not in the plan)."""

    plan: Plan
    shortfall: tuple[str, ...] = ()
    solver_seconds: float = 0.0


def plan_pools(
    snapshot: ClusterSnapshot,
    policy: PoolPolicy,
    profile: Mapping[str, TopicProfile],
    *,
    fanout: Mapping[str, float] | None = None,
    partition_profile: Mapping[tuple[str, int], PartitionProfile] | None = None,
    solver: Solver = Solver.HIGHS,
    time_limit: float = 60.0,
    gap: float = 0.01,
    threads: int = 1,
    horizon_days: int | None = None,
    new_broker_ids: Sequence[int] | None = None,
    progress: ProgressReporter = no_progress,
) -> PlanOutcome:
    """Decide pools, brokers to add and every partition's target replicas.

    Parameters
    ----------
    snapshot, policy, profile
        The cluster, the pool policy and the topic profile.
    fanout : mapping of str to float, optional
        Consumer groups per topic, used where the profile has no bytes-out.
    partition_profile : mapping, optional
        Per-partition rates for splitting topic traffic over partitions.
    solver, time_limit, gap, threads
        Passed to `planner.pool_milp.solve_pools`. ``time_limit`` (wall-clock seconds) is a safety net over the
        solving as a whole: the pool model's stages, then the placement inside the pools (`place_in_pools`), which
        may use what is left. Work limits (branch-and-bound nodes, rounds) end every search, so the same inputs
        give the same plan on any machine under any load; a plan the net cut short says so in its warnings.
    horizon_days : int, optional
        The forecast horizon in days; default the policy's ``forecast_horizon_days``. The profile's forecasts are
        re-derived at it (`pools.demand.at_horizon`).
    new_broker_ids : sequence of int, optional
        Ids for the brokers still to buy, in order (`pools.new_brokers.new_broker_ids`); default the next free ids.
    progress : ProgressReporter
        Told each step (the solver's with its gap and time left).

    Returns
    -------
    PlanOutcome

    Raises
    ------
    InputError
        Contradictory policy: a topic selected by two pools, pins on missing brokers, a replication factor above
        the racks a pool can have (unless ``[defaults] rf_above_racks = "wrap"``), tenants that must not share
        forced together; ``new_broker_ids`` naming a known broker, repeating one or too few for the brokers to buy.
    InfeasibleError
        The model has no solution at all (tenant conflicts the candidate pools cannot separate).
    """
    from planner import pool_milp

    started = time.monotonic()
    progress("resolving the policy and forecasting each topic's load")
    resolved = check_policy(snapshot, policy)
    rules = PoolRules.from_policy(policy, horizon_days=horizon_days)
    profile = at_horizon(profile, rules.horizon_days)
    forecast = topic_demand(snapshot, profile, fanout, "forecast", partition_profile=partition_profile)
    now = topic_demand(snapshot, profile, fanout, "now", partition_profile=partition_profile)
    warnings = demand_warnings(forecast)
    beyond = horizon_warning(evidence(profile), rules.horizon_days) if profile else None
    if beyond is not None:
        warnings.append(beyond)
    unmatched = sorted(t for t, r in resolved.items() if r.reason == "unmatched")
    if unmatched:
        warnings.append(
            f"{len(unmatched)} topic(s) are selected by no pool and the policy has no default pool; each was planned "
            f"into the pool where it moves the fewest bytes (add them to the policy): {', '.join(unmatched[:10])}"
        )
    extra = sorted(set(profile) - set(snapshot.partitions_by_topic))
    if extra:
        warnings.append(f"{len(extra)} profiled topic(s) are not in the snapshot and were ignored: "
                        f"{', '.join(extra[:10])}")
    progress("building the pool model")
    health = cluster_health(snapshot)
    problem, new_note = _problem(snapshot, policy, rules, resolved, forecast, pool_milp, health.closed)
    if new_note:
        warnings.append(new_note)
    solution = pool_milp.solve_pools(problem, solver=solver, time_limit=time_limit, gap=gap, threads=threads,
                                     progress=progress)
    if not solution.groups:
        _raise_unsolved(policy, resolved, solution.report)
    if solution.time_limited:
        warnings.append(
            f"the solver stopped at its time limit ({time_limit:g} s, the wall-clock safety net) short of the "
            f"{gap:.2%} gap: a plan cut short by time may differ between runs and machines; raise --time-limit"
        )
    topic_pool = {t: solution.groups[r.group] for t, r in resolved.items()}
    planned = placeholder_brokers(solution.added, Capacity(*problem.new_broker), taken=taken_ids(snapshot),
                                  ids=new_broker_ids)
    if new_broker_ids is not None and len(new_broker_ids) > len(planned):
        warnings.append(f"--new-broker-ids: {len(new_broker_ids) - len(planned)} id(s) unused (the plan buys "
                        f"{len(planned)} broker(s)): {', '.join(map(str, new_broker_ids[len(planned):][:10]))}")
    cluster = with_planned_brokers(snapshot, planned)  # the cluster the plan applies to: the bought brokers joined
    brokers = dict(solution.brokers) | {b.id: b.pool for b in planned}
    pool_brokers: dict[str, list[int]] = {p: [] for p in policy.pool_names}
    for b, p in brokers.items():
        if p is not None:
            pool_brokers[p].append(b)
    joining = _joining(snapshot, policy, solution.brokers)
    for b in planned:
        joining.setdefault(b.pool, []).append(b.id)
    headroom = {p: limits.headroom for p, limits in problem.pools.items()}
    progress("placing every partition's replicas inside its pool")
    placement = place_in_pools(cluster, forecast, topic_pool, pool_brokers, headroom=headroom, joining=joining,
                               health=health, time_limit=max(0.0, time_limit - (time.monotonic() - started)))
    warnings += placement.warnings
    shortfall = _explain_shortfall(problem, solution, topic_pool, forecast)
    if planned:
        warnings.append("the plan places replicas on brokers still to buy (planned_brokers): "
                        + "; ".join(f"{pool} {', '.join(str(b.id) for b in planned if b.pool == pool)}"
                                    for pool in sorted({b.pool for b in planned}))
                        + "; its bundle runs once they have joined the cluster")
    a = cluster_arrays(snapshot)
    moves = PartitionTable(a.topics, a.part_topic, a.part_id, a.replica_ids(), placement.target, a.part_size)
    utilisation = _utilisation(cluster, brokers, topic_pool, forecast, now, placement.target, problem)
    plan = Plan(
        cluster=snapshot.cluster,
        brokers_before={b.id: b.pool for b in snapshot.brokers} | {b.id: None for b in planned},
        brokers=brokers,
        topics=topic_pool,
        partitions=moves,
        brokers_to_add=solution.brokers_to_add,
        solver=solution.report,
        utilisation=utilisation,
        warnings=tuple(warnings) + shortfall,
        horizon_days=rules.horizon_days,
        placement={pool: p.to_dict() for pool, p in placement.pools.items()},
        planned_brokers=planned,
    )
    plan = with_reasons(plan, cluster, placement.reasons, health)
    progress("checking the plan against the policy")  # the independent validator's findings become warnings
    found = validate_plan(cluster, policy, plan, forecast)
    refuse_cordon_crossings(found)
    notes = [f"validator: {v.message}" for v in found[:10]]
    if len(found) > 10:
        notes.append(f"validator: {len(found) - 10} more violation(s)")
    plan = replace(plan, warnings=plan.warnings + tuple(notes))
    return PlanOutcome(plan, shortfall, solution.seconds)


def _joining(snapshot: ClusterSnapshot, policy: PoolPolicy, brokers: Mapping[int, str | None]) -> dict[str, list[int]]:
    """Brokers each pool gains: in the pool after the plan, serving another pool or none before (their pool tag
    when the policy knows it, else the pool pinning them)."""
    out: dict[str, list[int]] = {}
    for b in snapshot.brokers:
        before = b.pool if b.pool in policy.pool_by_name else policy.pinned_pool.get(b.id)
        after = brokers.get(b.id)
        if after is not None and after != before:
            out.setdefault(after, []).append(b.id)
    return out


def check_policy(snapshot: ClusterSnapshot, policy: PoolPolicy) -> dict[str, TopicPools]:
    """Resolve every topic of ``snapshot`` and reject policies that contradict themselves or the cluster.

    Raises
    ------
    InputError
        Naming the conflict (see `plan_pools`).
    """
    policy.check_against(snapshot)
    resolved = policy.resolve_all(snapshot.partitions_by_topic)
    for topic, r in resolved.items():
        if not r.candidates:  # no selector, tenant pool or default: any pool, wherever it moves least
            resolved[topic] = replace(r, candidates=policy.pool_names)
    racks = _possible_racks(snapshot, policy)
    if snapshot.racks:
        for pool in policy.pools:
            need = pool.min_racks or 0
            if need > len(racks[pool.name]):
                raise InputError(
                    f"{policy.source}: pool {pool.name!r} needs min_racks={need} but can only span "
                    f"{len(racks[pool.name])} rack(s) ({', '.join(racks[pool.name])})"
                )
        for topic, r in resolved.items() if policy.defaults.rf_above_racks == "refuse" else ():
            rf = max(len(p.replicas) for p in snapshot.partitions_by_topic[topic])
            widest = max(r.candidates, key=lambda p: len(racks[p]))
            if rf > len(racks[widest]):
                raise InputError(
                    f"{policy.source}: topic {topic!r} has replication factor {rf} but pool {widest!r} can only span "
                    f"{len(racks[widest])} rack(s) ({', '.join(racks[widest])})"
                )
    _check_tenant_conflicts(policy, resolved)
    return resolved


def _possible_racks(snapshot: ClusterSnapshot, policy: PoolPolicy) -> dict[str, list[str]]:
    free = {b.rack for b in snapshot.brokers if b.id not in policy.pinned_pool and b.rack is not None}
    new = set(policy.new_broker.racks or snapshot.racks) if policy.new_broker else set(snapshot.racks)
    out = {}
    for pool in policy.pools:
        pinned = {snapshot.broker_by_id[b].rack for b in pool.brokers if snapshot.broker_by_id[b].rack is not None}
        out[pool.name] = sorted(free | new | pinned)
    return out


def _check_tenant_conflicts(policy: PoolPolicy, resolved: Mapping[str, TopicPools]) -> None:
    """The conflict graph: tenants that must not share; a clique larger than its pools cannot be separated."""
    graph = nx.Graph()
    graph.add_edges_from(tuple(sorted(pair)) for pair in policy.conflicting_tenants if len(pair) == 2)
    pools_of: dict[str, set[str]] = {}
    for r in resolved.values():
        if r.tenant is not None:
            pools_of.setdefault(r.tenant, set()).update(r.candidates)
    for clique in sorted(sorted(c) for c in nx.find_cliques(graph)):
        present = [t for t in clique if t in pools_of]
        # Hall's condition on the clique: every k of its tenants need k distinct pools among their candidates
        sizes = range(2, len(present) + 1) if len(present) <= 10 else (len(present),)  # bounded enumeration
        for size in sizes:
            for subset in itertools.combinations(present, size):
                available = sorted(set().union(*(pools_of[t] for t in subset)))
                if len(subset) > len(available):
                    raise InputError(
                        f"{policy.source}: tenants {', '.join(map(repr, subset))} must not share a pool but their "
                        f"topics can only go to {len(available)} pool(s) ({', '.join(available)})"
                    )


def _problem(snapshot, policy, rules: PoolRules, resolved, demands: Mapping[str, Demand], pool_milp,
             closed: frozenset[int] = frozenset()):
    """The `PoolProblem` for the solver, and a note when the new-broker type had to be assumed.

    A ``closed`` broker (`pools.health.ClusterHealth.closed`) takes no new replica: the model counts only the
    capacity its own load needs (`pools.pool_rules.closed_capacity`, at its pool's headroom), so the spare room
    it has does not hide brokers a pool lacks."""
    a = cluster_arrays(snapshot)
    names = sorted({r.group for r in resolved.values()})
    group_of = {g: k for k, g in enumerate(names)}
    topic_group = np.array([group_of[resolved[t].group] if t in resolved else -1 for t in a.topics], dtype=np.int64)
    demand = np.zeros((len(names), len(DIMENSIONS)))
    first: dict[int, TopicPools] = {}
    for topic, r in resolved.items():
        k = group_of[r.group]
        first.setdefault(k, r)
        demand[k] += [demands[topic].get(dim) for dim in DIMENSIONS]
    part_group = topic_group[a.part_topic]
    rf = np.zeros(len(names), dtype=np.int64)
    np.maximum.at(rf, part_group[part_group >= 0], a.part_rf[part_group >= 0])
    # bytes of each group on each (known) broker: one sort over the flat replicas
    rep_group = part_group[a.rep_part]
    keep = (rep_group >= 0) & (a.rep_broker < a.n_brokers)
    key = rep_group[keep] * a.n_brokers + a.rep_broker[keep]
    size = a.part_size[a.rep_part[keep]]
    order = np.argsort(key, kind="stable")
    key, size = key[order], size[order]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))) if len(key) else np.zeros(0, np.int64)
    sums = np.add.reduceat(size, starts) if len(key) else np.zeros(0, np.int64)
    pair_group, pair_broker = key[starts] // max(a.n_brokers, 1), a.broker_ids[key[starts] % max(a.n_brokers, 1)]
    bounds = np.searchsorted(pair_group, np.arange(len(names) + 1))
    specs = tuple(
        pool_milp.GroupSpec(name, first[k].candidates, tuple(float(x) for x in demand[k]), int(rf[k]), first[k].tenant,
                             dict(zip(pair_broker[bounds[k]:bounds[k + 1]].tolist(),
                                      sums[bounds[k]:bounds[k + 1]].tolist())))
        for k, name in enumerate(names)
    )
    load = broker_load(snapshot, demands) if closed else {}

    def capacity(b) -> tuple[float, ...]:
        if b.id not in closed:
            return tuple(b.capacity.get(d) for d in DIMENSIONS)
        headroom = rules.limits(policy.pinned_pool.get(b.id) or b.pool).headroom
        return tuple(closed_capacity(b.capacity.get(d), load[b.id][d], h) for d, h in zip(DIMENSIONS, headroom))

    brokers = tuple(
        pool_milp.BrokerSpec(b.id, b.rack, capacity(b), policy.pinned_pool.get(b.id),
                              b.pool if b.pool in policy.pool_by_name else None)
        for b in snapshot.brokers
    )
    note = None
    if policy.new_broker is not None:
        new = tuple(policy.new_broker.capacity.get(d) for d in DIMENSIONS)
        new_racks = policy.new_broker.racks or snapshot.racks
    else:
        common = Counter(tuple(b.capacity.get(d) for d in DIMENSIONS) for b in snapshot.brokers).most_common(1)
        new = common[0][0] if common else (0.0, 0.0, 0.0, 0.0)
        new_racks = snapshot.racks
        note = "policy has no [new_broker]; brokers to add are sized like the cluster's most common broker"
    total = float(sum(map(operator.mul, a.part_size.tolist(), a.part_rf.tolist())))
    problem = pool_milp.PoolProblem(
        pools=rules.pools, brokers=brokers, groups=specs, conflicts=policy.conflicting_tenants, new_broker=new,
        new_broker_racks=tuple(new_racks), total_bytes=total,
    )
    return problem, note


def _raise_unsolved(policy: PoolPolicy, resolved: Mapping[str, TopicPools], report) -> None:
    from pools.errors import InfeasibleError

    if report.status == "Infeasible":
        conflicts = sorted(sorted(p) for p in policy.conflicting_tenants)
        detail = (
            "the tenants that must not share ("
            + "; ".join(" / ".join(p) for p in conflicts)
            + ") cannot be separated over the pools their topics may use"
            if conflicts
            else "the pinned brokers and pool limits leave no assignment"
        )
        raise InfeasibleError(f"no pool plan satisfies {policy.source}: {detail}")
    raise InfeasibleError(
        f"the solver found no pool plan within the time limit ({report.status}, {report.solution}); "
        "raise --time-limit or --gap"
    )


def _explain_shortfall(problem, solution, topic_pool, demands) -> tuple[str, ...]:
    """One sentence per pool that needs new brokers, naming the binding dimension and headroom.

    A dimension binds when the pool's real brokers alone, less its tolerated failures, cannot carry its demand
    (`pools.pool_rules.brokers_to_fit`); the one needing the most new brokers is named.
    """
    out = []
    for pool, count in sorted(solution.brokers_to_add.items()):
        if count <= 0:
            continue
        limits = problem.pools[pool]
        real = [b for b in problem.brokers if solution.brokers.get(b.broker_id) == pool]
        reasons = []
        for i, dim in enumerate(DIMENSIONS):
            demand = sum(demands[t].get(dim) for t, p in topic_pool.items() if p == pool)
            n = brokers_to_fit([b.capacity[i] for b in real], problem.new_broker[i], demand, limits.headroom[i],
                               limits.tolerated_failures)
            if n:
                reasons.append((n, dim, limits.headroom[i]))
        if reasons:
            n, dim, h = max(reasons)
            failures = f" with {limits.tolerated_failures} broker(s) down" if limits.tolerated_failures else ""
            why = f"for {dim} at {h:.0%} headroom{failures}"
        elif rack := _rack_reason(problem, real, solution, pool):
            why = rack
        else:
            why = "to reach its minimum broker count and rack spread"
        out.append(f"pool {pool} needs {count} more broker(s) {why}")
    return tuple(out)


def _rack_reason(problem, real, solution, pool) -> str | None:
    """The rack that cannot carry its share (1/RF) of the pool's topics that need one replica per rack."""
    racks = sorted({b.rack for b in problem.brokers if b.rack is not None} | set(problem.new_broker_racks))
    if not racks:
        return None
    full = [g for g in problem.groups if solution.groups.get(g.name) == pool and spans_every_rack(g.max_rf, len(racks))]
    worst = None
    for rack in racks:
        in_rack = [b for b in real if b.rack == rack]
        for i, dim in enumerate(DIMENSIONS):
            if dim not in RACK_DIMENSIONS:
                continue
            share = sum(g.demand[i] for g in full) / len(racks)
            h = problem.pools[pool].headroom[i]
            short = share / h - sum(b.capacity[i] for b in in_rack)
            brokers = short / (problem.new_broker[i] or 1.0)
            if short > 0 and (worst is None or brokers > worst[0]):
                worst = (brokers, dim, rack, h)
    if worst is None:
        return None
    _, dim, rack, h = worst
    return f"for {dim} in rack {rack} at {h:.0%} headroom (each rack holds one replica of every partition)"


def _r(value: float) -> float:
    return round(value, 3)


def _utilisation(snapshot, brokers_after: Mapping[int, str | None], topic_pool, forecast, now, target: np.ndarray,
                 problem) -> dict:
    """Per broker and dimension: capacity, now, before, after (``target``: every partition's replicas after the
    plan, `planner.placement.minimal_move.Placement.target`); per pool: capacity (of its brokers today; with the
    brokers to add, and usable: less the tolerated failures, `pools.pool_rules.usable_capacity`), demand,
    headroom and loads. ``snapshot`` holds the brokers still to buy (`pools.new_brokers.with_planned_brokers`),
    ``brokers_after`` every broker's pool after the plan."""
    load_now = broker_load(snapshot, now)
    before = broker_load(snapshot, forecast)
    after = broker_load(snapshot, forecast, target=target)
    brokers = {
        str(b.id): {
            dim: {"capacity": _r(b.capacity.get(dim)), "now": _r(load_now[b.id][dim]),
                  "before": _r(before[b.id][dim]), "after": _r(after[b.id][dim])}
            for dim in DIMENSIONS
        }
        for b in snapshot.brokers
    }
    pools = {}
    real = {b.broker_id for b in problem.brokers}
    members_of: dict[str | None, list] = {}  # the bought ones included
    old_of: dict[str | None, list] = {}
    topics_of: dict[str, list[str]] = {}
    for b in snapshot.brokers:
        members_of.setdefault(brokers_after.get(b.id), []).append(b)
        old_of.setdefault(b.pool, []).append(b)
    for t, p in topic_pool.items():
        topics_of.setdefault(p, []).append(t)
    for pool, limits in sorted(problem.pools.items()):
        members, old, topics = members_of.get(pool, []), old_of.get(pool, []), topics_of.get(pool, [])
        pools[pool] = {
            dim: {
                "capacity": _r(sum(b.capacity.get(dim) for b in members if b.id in real)),
                "capacity_with_added": _r(sum(b.capacity.get(dim) for b in members)),
                "capacity_usable": _r(usable_capacity([b.capacity.get(dim) for b in members],
                                                      limits.tolerated_failures)),
                "demand_now": _r(sum(now[t].get(dim) for t in topics)),
                "demand_forecast": _r(sum(forecast[t].get(dim) for t in topics)),
                "headroom": limits.headroom[i],
                "load_before": _r(sum(before[b.id][dim] for b in old)),
                "load_after": _r(sum(after[b.id][dim] for b in members)),
            }
            for i, dim in enumerate(DIMENSIONS)
        }
    return {"brokers": brokers, "pools": pools}
