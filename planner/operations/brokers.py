"""``poolplan brokers add|decommission|demote|replace``: change a pool's brokers, moving as little as possible.

- **add** (Cruise Control's ``add_broker``, kafka-kit's ``scale``): the brokers join the pool and end within
  `planner.placement.minimal_move.FAIR_SHARE_BAND` of their fair share (`planner.placement.engine.fair_share`)
  in every dimension, leaders and leaders' bytes-in included, at the fewest moved bytes. A broker the
  inventory already tags with the pool joins the same way.
- **decommission** (``remove_broker``, Yelp's ``decommission``): every replica leaves the brokers. First the
  rest of the pool is checked: enough brokers for its largest replication factor and ``min_brokers``, enough
  racks (`pools.pool_rules.pool_racks_required`), its forecast demand within headroom × usable capacity
  (`pools.pool_rules.usable_capacity`, less the tolerated failures), and each rack's share of it: a partition
  whose RF reaches the pool's racks keeps a replica in every rack, so a rack left with fewer brokers must carry
  one replica of each within headroom × their capacity (Cruise Control refuses such a removal too); when it
  falls short the operation is refused (`pools.errors.InfeasibleError`, exit 1) naming what is missing. Then
  the seed (`pools.fill`) puts each drained replica on the least-loaded broker on a rack the partition lacks
  (only on the ``destinations`` when given) and the engine relieves what is over headroom.
- **demote** (Cruise Control's ``demote_broker``): leadership leaves the brokers, nothing is copied.
- **replace** (Yelp's ``replace-broker``, kafka-kit's substitution affinity): the new broker takes the old
  one's place in every replica list, leadership included, so each replica is copied exactly once. Where the
  swap would break a partition's rack spread (or the new broker already holds it) that replica goes to the
  least-loaded broker of the pool that keeps the spread instead. A new broker on another rack needs
  ``allow_rack_change`` (and passes the rack check of decommission). No solver runs; a new broker over
  headroom is a warning (``poolplan rebalance`` relieves it).

Partitions `pools.health` holds (offline, under-replicated, mid-reassignment, on an unhealthy broker) keep
their replicas, with one exception that makes a dead broker drainable: a held partition whose only trouble
lies on the drained or replaced brokers is evacuated (`pools.health.ClusterHealth.evacuable`): its replica
there is replaced, copying from its healthy in-sync leader, and its other replicas stay (so they must already sit on
distinct racks; one outside its pool moves back into it, as in any plan). A drained or replaced broker holding any other
held partition is refused with the partitions to repair first. The plan's ``operation.drained`` names the drained
brokers, from which the validator and ``poolplan emit`` learn the evacuation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from planner.operations.balance import broker_loads
from planner.operations.distribution import pool_optimiser
from planner.operations.outcome import Operation, operation_plan
from planner.operations.scope import OperationInputs
from planner.placement.engine import ENGINE_DIMENSIONS, Goal, PoolState, spread_kept, state_loads
from planner.placement.minimal_move import FAIR_SHARE_BAND, place_in_pools
from pools.demand import PartitionShare, partition_loads
from pools.errors import InfeasibleError, InputError
from pools.health import ClusterHealth
from pools.pool_rules import (brokers_required, closed_capacity, keeps_rack_spread, over_limit, pool_racks_required,
                              usable_capacity)
from pools.snapshot import DIMENSIONS, Broker, PartitionState
from pools.units import format_bytes

__all__ = ["add_brokers", "decommission_brokers", "demote_brokers", "replace_broker"]


def add_brokers(inputs: OperationInputs, pool: str, brokers: Sequence[int]) -> Operation:
    """``brokers`` join ``pool`` and take a fair share (see the module docstring).

    Raises
    ------
    InputError
        An unknown pool or broker, a broker in another pool, or one the policy pins to another pool. A broker the
        inventory already tags with ``pool`` (the usual way to provision one) joins like one in no pool.
    """
    if pool not in inputs.policy.pool_names:
        raise InputError(f"--pool: unknown pool {pool!r}; the policy has {', '.join(inputs.policy.pool_names)}")
    new = _known(inputs, brokers, "--broker")
    for b in new:
        if inputs.brokers[b] not in (None, pool):
            raise InputError(f"--broker: broker {b} is in pool {inputs.brokers[b]!r}, not {pool!r}; brokers add takes "
                             f"brokers in no pool or already tagged with {pool!r} "
                             "(decommission it from its pool first)")
        pinned = inputs.policy.pinned_pool.get(b)
        if pinned is not None and pinned != pool:
            raise InputError(f"--broker: broker {b} is pinned to pool {pinned!r} by the policy, not {pool!r}")
    warnings = [f"broker {b} is {inputs.health.why_closed(b)}: it joins pool {pool!r} but takes no replica"
                for b in new if b in inputs.health.closed]
    held = {b: sum(b in p.replicas for p in inputs.snapshot.partitions) for b in new if inputs.brokers[b] == pool}
    warnings += [f"broker {b} is already in pool {pool!r} with {n} replica(s): it is brought to its fair share like a "
                 f"new broker; `poolplan rebalance --pool {pool}` balances every broker of the pool"
                 for b, n in sorted(held.items()) if n]
    after = dict(inputs.brokers) | dict.fromkeys(new, pool)
    members = sorted(b for b, p in after.items() if p == pool)
    # the new brokers' share includes leadership (a zero-copy move): without it they lead nothing
    goal = Goal(band=FAIR_SHARE_BAND, band_dimensions=ENGINE_DIMENSIONS, band_brokers=np.isin(members, new))
    placement = place_in_pools(
        inputs.snapshot, inputs.forecast, inputs.pool_topics({pool}), {pool: members},
        headroom={pool: inputs.rules.limits(pool).headroom}, joining={pool: new}, health=inputs.health,
        goals={pool: goal}, optimiser=pool_optimiser,
    )
    forced = placement.pools[pool].seed_bytes if pool in placement.pools else 0
    return operation_plan(inputs, "add", arguments={"pool": pool, "brokers": new}, brokers_after=after,
                          assignment=placement.assignment, pools=[pool], band=FAIR_SHARE_BAND, forced_bytes=forced,
                          placement=placement.pools, reasons=placement.reasons,
                          warnings=[*warnings, *placement.warnings])


def decommission_brokers(inputs: OperationInputs, brokers: Sequence[int], *,
                         destinations: Sequence[int] = ()) -> Operation:
    """Drain ``brokers``: every replica leaves them (see the module docstring); with ``destinations`` (Cruise
    Control's ``destination_broker_ids``, topicmappr's ``--brokers``) only those brokers of the pool take new
    replicas.

    Raises
    ------
    InputError
        An unknown broker or one in no pool, a destination that is drained, in another pool, unhealthy or
        cordoned.
    InfeasibleError
        The rest of a pool cannot hold its partitions (brokers, racks, capacity), or a drained broker holds
        partitions that must keep their replicas; the message says what is missing.
    """
    drained = _known(inputs, brokers, "--broker")
    snap = inputs.snapshot
    for b in drained:
        if inputs.brokers[b] is None:
            raise InputError(f"--broker: broker {b} is in no pool; decommission drains brokers of a pool")
    after = dict(inputs.brokers) | dict.fromkeys(drained, None)
    health = _evacuation(inputs, drained, after)
    _refuse_held(inputs, health, drained, "drained")
    home = sorted({inputs.brokers[b] for b in drained})  # type: ignore[type-var]
    on_drained = {p.topic for p in snap.partitions if set(p.replicas) & set(drained)}
    foreign = sorted(t for t in on_drained if t not in inputs.topics)
    if foreign:
        raise InfeasibleError(f"broker(s) {', '.join(map(str, drained))} hold replicas of topic(s) in no pool "
                              f"({', '.join(foreign[:5])}): give them a pool in the policy first")
    pools = sorted(set(home) | {inputs.topics[t] for t in on_drained})
    missing = [m for p in pools for m in _shortfall(inputs, p, after)]
    if missing:
        raise InfeasibleError(f"cannot decommission broker(s) {', '.join(map(str, drained))}: " + "; ".join(missing))
    targets = sorted(set(_known(inputs, destinations, "--to"))) if destinations else []
    for b in targets:
        if b in inputs.health.closed:
            raise InputError(f"--to: broker {b} is {inputs.health.why_closed(b)}; it can take no replica")
        if b in drained or after[b] not in pools:
            raise InputError(f"--to: broker {b} cannot take replicas: it must be a healthy broker that stays in "
                             f"pool(s) {', '.join(map(repr, pools))}")
    optimiser = pool_optimiser if not targets else lambda state, goal: pool_optimiser(_only_to(state, targets), goal)
    placement = place_in_pools(
        snap, inputs.forecast, inputs.pool_topics(set(pools)),
        {p: sorted(b for b, q in after.items() if q == p) for p in pools},
        headroom={p: inputs.rules.limits(p).headroom for p in pools}, health=health,
        optimiser=optimiser,
    )
    left = sorted({b for r in placement.assignment.values() for b in r} & set(drained))
    if left:
        raise InfeasibleError(f"broker(s) {', '.join(map(str, left))} keep replicas: their pool has fewer brokers "
                              "than some partition's replication factor")
    forced = sum(p.size_bytes * len(set(p.replicas) & set(drained)) for p in snap.partitions)
    return operation_plan(inputs, "decommission", arguments={"brokers": drained} | ({"to": targets} if targets else {}),
                          brokers_after=after,
                          assignment=placement.assignment, pools=pools, band=FAIR_SHARE_BAND, forced_bytes=forced,
                          placement=placement.pools, reasons=placement.reasons, warnings=placement.warnings,
                          extra={"drained": drained})


def _only_to(state: PoolState, targets: Sequence[int]) -> PoolState:
    """``state`` where only ``targets`` receive: each new replica the seed put elsewhere goes to the target
    least loaded (busiest dimension over its limit) that keeps the partition's rack spread."""
    receives = state.receives & np.isin(state.broker_ids, np.asarray(targets, dtype=np.int64))
    seed = state.seed.copy()
    load = state_loads(state, seed)
    for i, slot in zip(*np.nonzero(seed >= 0), strict=True):
        b = int(seed[i, slot])
        if receives[b] or (state.holders[i] == b).any():
            continue
        others = [int(x) for x in seed[i] if x >= 0 and x != b]
        free = np.array([t for t in np.flatnonzero(receives).tolist() if t not in others], dtype=np.int64)
        kept = spread_kept(state, np.repeat(seed[i : i + 1], len(free), axis=0), np.full(len(free), slot), free)
        fits = free[kept].tolist()
        if not fits:
            raise InfeasibleError(f"--to: no destination broker can take the drained replica of a partition on "
                                  f"{', '.join(str(int(state.broker_ids[x])) for x in others)} and keep its rack "
                                  "spread; name destination brokers on more racks")
        d = state.follower[i] + (slot == 0) * state.extra[i]
        t = min(fits, key=lambda t: (float(np.max((load[t, :4] + d[:4]) / np.maximum(state.limit[t], 1e-9))), t))
        load[b] -= d
        load[t] += d
        seed[i, slot] = t
    return replace(state, receives=receives, seed=seed)


def replace_broker(inputs: OperationInputs, old: int, new: int, *, allow_rack_change: bool = False) -> Operation:
    """Broker ``new`` takes broker ``old``'s place in every replica list (see the module docstring).

    A ``new`` broker on another rack than ``old`` cannot swap straight where a partition already uses its rack:
    those replicas go to other brokers. That is refused unless ``allow_rack_change``, and then a warning says
    how many replicas ``new`` takes and how many go elsewhere.

    Raises
    ------
    InputError
        Unknown brokers, the same broker twice, a new broker in another pool or unhealthy, or on another rack
        without ``allow_rack_change``.
    InfeasibleError
        ``old`` holds partitions that must keep their replicas.
    """
    (old,) = _known(inputs, [old], "--old")
    (new,) = _known(inputs, [new], "--new")
    snap = inputs.snapshot
    pool = inputs.brokers[old]
    if old == new:
        raise InputError(f"--new: broker {new} is the broker it replaces")
    if inputs.brokers[new] not in (None, pool):
        raise InputError(f"--new: broker {new} is in pool {inputs.brokers[new]!r}, broker {old} in {pool!r}; a "
                         "replacement never crosses a pool boundary")
    pinned = inputs.policy.pinned_pool.get(new)
    if pinned is not None and pinned != pool:
        raise InputError(f"--new: broker {new} is pinned to pool {pinned!r} by the policy, not {pool!r}")
    if new in inputs.health.closed:
        raise InputError(f"--new: broker {new} is {inputs.health.why_closed(new)}; it can take no replica")
    after = dict(inputs.brokers) | {old: None, new: pool}
    health = _evacuation(inputs, [old], after)
    _refuse_held(inputs, health, [old], "replaced")
    members = [b for b, p in after.items() if p == pool and b not in inputs.health.closed]
    rack = {b.id: b.rack for b in snap.brokers}
    loads = broker_loads(snap, inputs.forecast)
    limit = {b: np.array(inputs.rules.limits(pool).broker_limit(snap.broker_by_id[b].capacity)) for b in members}
    assignment: dict[tuple[str, int], tuple[int, ...]] = {}
    rerouted = []
    shares = {(t, s.partition): s for t, d in inputs.forecast.items() for s in d.partitions}
    for p in snap.partitions:
        if old not in p.replicas:
            continue
        others = [b for b in p.replicas if b != old]
        target = new
        if new in p.replicas or not _swap_keeps_racks(others, new, rack, old):
            target = _least_loaded(members, others, rack, old, loads, limit)
            if target is None:
                raise InfeasibleError(f"partition {p.topic}-{p.partition}: no broker of pool {pool!r} can take broker "
                                      f"{old}'s replica and keep its rack spread")
            rerouted.append(f"{p.topic}-{p.partition}")
        assignment[p.topic, p.partition] = tuple(target if b == old else b for b in p.replicas)
        loads[target] = loads[target] + _replica_share(p, shares.get((p.topic, p.partition)),
                                                       p.replicas.index(old) == 0)
    warnings = []
    total = sum(old in p.replicas for p in snap.partitions)
    if rack[old] != rack[new] and any(rack[b] is not None for b in members):
        took = total - len(rerouted)
        if not allow_rack_change:
            raise InputError(f"--new: broker {new} is in rack {rack[new]!r}, broker {old} in {rack[old]!r}: broker "
                             f"{new} would take {took} of broker {old}'s {total} replica(s) and {len(rerouted)} would "
                             f"go to other brokers of pool {pool!r} to keep their rack spread; pass "
                             f"--allow-rack-change to do that, or replace it by a broker of rack {rack[old]!r}")
        topics = [t for t, p in inputs.topics.items() if p == pool]
        short = _rack_shortfall(inputs, pool, [snap.broker_by_id[b] for b, p in sorted(after.items()) if p == pool],
                                topics)
        if short:
            raise InfeasibleError(f"cannot replace broker {old} by {new}: " + "; ".join(short))
        warnings.append(f"cross-rack replace (--allow-rack-change): broker {new} (rack {rack[new]}) takes {took} of "
                        f"broker {old}'s (rack {rack[old]}) {total} replica(s), {len(rerouted)} go to other brokers of "
                        f"pool {pool!r} to keep their rack spread")
    if rerouted:
        hint = (f" (broker {old} is in rack {rack[old]}, {new} in {rack[new]}: a broker of rack {rack[old]} "
                "would swap straight)" if rack[old] != rack[new] else "")
        warnings.append(f"{len(rerouted)} replica(s) of broker {old} went to another broker than {new} to keep "
                        f"their rack spread or because {new} holds them already: {', '.join(rerouted[:5])}"
                        f"{' and more' if len(rerouted) > 5 else ''}{hint}")
    after_loads = broker_loads(snap, inputs.forecast, assignment)
    over = [d for i, d in enumerate(DIMENSIONS)
            if over_limit(float(after_loads[new][i]), float(limit[new][i]))] if new in limit else []
    if over:
        warnings.append(f"broker {new} ends over headroom × capacity in {', '.join(over)}; run poolplan rebalance "
                        f"--pool {pool} next")
    forced = sum(p.size_bytes for p in snap.partitions if old in p.replicas)
    warnings += [f"cluster health: {line}" for line in health.summary()] if health.brokers or health.partitions \
        or health.evacuated else []
    return operation_plan(inputs, "replace", arguments={"old": old, "new": new, "allow_rack_change": allow_rack_change},
                          brokers_after=after,
                          assignment=assignment, pools=[pool] if pool else [], band=FAIR_SHARE_BAND,
                          forced_bytes=forced, warnings=warnings, extra={"drained": [old]})


def demote_brokers(inputs: OperationInputs, brokers: Sequence[int]) -> Operation:
    """Move leadership off ``brokers`` (Cruise Control's ``demote_broker``): in every partition of a pooled topic
    whose preferred (first) replica is one of them, they move to the end of the replica list and the other
    replica that is in sync, healthy and least loaded once it leads (busiest dimension over headroom × capacity,
    loads updated as leads move, heaviest partitions first; one in the topic's pool first) becomes the preferred
    leader; the runbook's
    preferred-leader election then moves the lead. Nothing is copied and no replica changes broker.

    A partition with no other in-sync healthy replica, or held by `pools.health`, keeps its order (a warning
    names them).

    Examples
    --------
    >>> from pools.snapshot import PartitionState
    >>> _demoted(PartitionState("t", 0, (1, 2, 3), leader=1, isr=(1, 3)), {1}, set(), lambda b: 0.0)
    (3, 2, 1)

    Raises
    ------
    InputError
        An unknown broker, or one in no pool.
    """
    demoted = _known(inputs, brokers, "--broker")
    for b in demoted:
        if inputs.brokers[b] is None:
            raise InputError(f"--broker: broker {b} is in no pool; demote moves leadership inside a pool")
    snap = inputs.snapshot
    loads = broker_loads(snap, inputs.forecast)
    limit = {b: np.array(inputs.rules.limits(pool).broker_limit(snap.broker_by_id[b].capacity))
             for b, pool in inputs.brokers.items() if pool is not None}
    shares = {(t, s.partition): s for t, d in inputs.forecast.items() for s in d.partitions}
    assignment, kept = {}, []
    led = [p for p in snap.partitions if p.topic in inputs.topics and p.replicas and p.replicas[0] in demoted]
    for p in sorted(led, key=lambda p: (-p.size_bytes, p.topic, p.partition)):
        share = shares.get((p.topic, p.partition))
        extra = _replica_share(p, share, True) - _replica_share(p, share, False)

        def busiest(b: int, extra: np.ndarray = extra, pool: str = inputs.topics[p.topic]) -> float:
            if inputs.brokers.get(b) != pool:  # a replica outside its topic's pool leads only when none is inside
                return np.inf
            load = loads[b][:4] + extra[:4]
            return float(np.max(load / np.where(limit[b] > 0, limit[b], 1e-9)))

        new = None if (p.topic, p.partition) in inputs.health.partitions else \
            _demoted(p, set(demoted), set(inputs.health.brokers), busiest)
        if new is None:
            kept.append(f"{p.topic}-{p.partition}")
        else:
            assignment[p.topic, p.partition] = new
            loads[p.replicas[0]] = loads[p.replicas[0]] - extra
            loads[new[0]] = loads[new[0]] + extra
    kept.sort()
    warnings = [f"{len(kept)} partition(s) keep broker(s) {', '.join(map(str, demoted))} as preferred leader: no "
                f"other replica is in sync and healthy, or the partition must be repaired first: "
                f"{', '.join(kept[:5])}{' and more' if len(kept) > 5 else ''}"] if kept else []
    pools = sorted({inputs.brokers[b] for b in demoted})  # type: ignore[type-var]
    return operation_plan(inputs, "demote", arguments={"brokers": demoted}, brokers_after=inputs.brokers,
                          assignment=assignment, pools=pools, band=FAIR_SHARE_BAND, forced_bytes=0,
                          warnings=warnings, extra={"demoted": demoted})


def _demoted(p: PartitionState, demoted: set[int], unhealthy: set[int],
             busiest: Callable[[int], float]) -> tuple[int, ...] | None:
    """``p``'s replicas with the demoted brokers last, led by its other in-sync, healthy replica that ``busiest``
    rates lowest (ties: the earlier in the list); None when there is none."""
    rest = [b for b in p.replicas if b not in demoted]
    eligible = [b for b in rest if b in p.isr and b not in unhealthy]
    if not eligible:
        return None
    lead = min(eligible, key=lambda b: (busiest(b), rest.index(b)))
    return (lead, *(b for b in rest if b != lead), *(b for b in p.replicas if b in demoted))


def _known(inputs: OperationInputs, brokers: Iterable[int], option: str) -> list[int]:
    out = sorted(set(brokers))
    if not out:
        raise InputError(f"{option}: expected at least one broker id")
    for b in out:
        if b not in inputs.brokers:
            raise InputError(f"{option}: broker {b} is not in the snapshot (brokers {_ids(inputs.brokers)})")
    return out


def _ids(brokers: Iterable[int]) -> str:
    ids = sorted(brokers)
    return ", ".join(map(str, ids[:10])) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


def _evacuation(inputs: OperationInputs, drained: Sequence[int], after: Mapping[int, str | None]) -> ClusterHealth:
    """The operation's health: the held partitions draining ``drained`` evacuates (see the module docstring)."""
    snap = inputs.snapshot
    rack = {b.id: b.rack for b in snap.brokers}
    replicas = {(p.topic, p.partition): p.replicas for p in snap.partitions}
    keys, reasons = [], dict(inputs.health.partitions)
    for t, p in inputs.health.evacuable(snap, drained):
        stay = [b for b in replicas[t, p] if b not in drained and after.get(b) == inputs.topics.get(t)]
        racks = [rack[b] for b in stay if rack.get(b) is not None]
        if t not in inputs.topics:
            reasons[t, p] += ", its topic in no pool"
        elif len(racks) != len(set(racks)):
            reasons[t, p] += ", with other replicas sharing a rack"
        else:
            keys.append((t, p))
    return replace(inputs.health, partitions=reasons).evacuating(keys, drained)


def _refuse_held(inputs: OperationInputs, health: ClusterHealth, brokers: Sequence[int], verb: str) -> None:
    """Refuse when a held partition (not evacuated) has a replica on ``brokers``; a partition still led from an
    unhealthy broker among them gets the usual remedy: stop that broker, so an in-sync replica takes the lead."""
    states = {(p.topic, p.partition): p for p in inputs.snapshot.partitions}
    held = sorted((key, why) for key, why in health.partitions.items() if set(states[key].replicas) & set(brokers))
    if held:
        names = ", ".join(f"{t}-{p} ({why})" for (t, p), why in held[:5])
        leaders = sorted({states[k].leader for k, _ in held if states[k].leader in brokers
                          and states[k].leader in health.brokers})
        hint = (f"; {sum(states[k].leader in leaders for k, _ in held)} of them are led from unhealthy broker(s) "
                f"{', '.join(map(str, leaders))}: stop it so their in-sync replicas take over the lead, take a new "
                "snapshot and run this again" if leaders else "")
        raise InfeasibleError(f"broker(s) {', '.join(map(str, brokers))} cannot be {verb}: {len(held)} partition(s) "
                              f"on them must keep their replicas until repaired (only a partition with a healthy "
                              f"in-sync leader whose every other replica is healthy and in sync can be moved off): "
                              f"{names}{hint}")


def _shortfall(inputs: OperationInputs, pool: str, after: Mapping[int, str | None]) -> list[str]:
    """What ``pool`` lacks with its brokers ``after``: brokers, racks, capacity per dimension."""
    snap = inputs.snapshot
    limits = inputs.rules.limits(pool)
    members = [snap.broker_by_id[b] for b, p in sorted(after.items()) if p == pool]
    topics = [t for t, p in inputs.topics.items() if p == pool]
    rf = max((len(p.replicas) for t in topics for p in snap.partitions_by_topic.get(t, ())), default=0)
    out = []
    need = brokers_required(limits, rf)
    if len(members) < need:
        out.append(f"pool {pool!r} would keep {len(members)} broker(s), needs {need} "
                   f"(min_brokers {limits.min_brokers}, "
                   f"largest replication factor {rf})")
    if snap.racks:
        racks = {b.rack for b in members if b.rack is not None}
        need_racks = pool_racks_required(limits, rf, len(snap.racks))
        if len(racks) < need_racks:
            out.append(f"pool {pool!r} would span {len(racks)} rack(s), needs {need_racks}")
    out += _rack_shortfall(inputs, pool, members, topics)
    closed = [b for b in members if b.id in inputs.health.closed]
    load = broker_loads(snap, inputs.forecast) if closed else {}
    for i, d in enumerate(DIMENSIONS):
        # a closed broker takes no new replica: it counts only for the capacity its own load needs
        usable = usable_capacity([closed_capacity(b.capacity.get(d), float(load[b.id][i]), limits.headroom[i])
                                  if b.id in inputs.health.closed else b.capacity.get(d) for b in members],
                                 limits.tolerated_failures)
        demand = sum(inputs.forecast[t].get(d) for t in topics if t in inputs.forecast)
        if over_limit(demand, limits.headroom[i] * usable):
            shown = format_bytes(demand) if d == "disk" else f"{demand:.6g}"
            room = format_bytes(limits.headroom[i] * usable) if d == "disk" else f"{limits.headroom[i] * usable:.6g}"
            out.append(f"pool {pool!r} {d} demand {shown} exceeds the {room} it could carry "
                       f"({limits.headroom[i]:.0%} of its usable capacity with {limits.tolerated_failures} broker "
                       "failure(s) tolerated)")
    return out


def _rack_shortfall(inputs: OperationInputs, pool: str, members: Sequence[Broker], topics: Sequence[str]) -> list[str]:
    """What each rack of ``pool`` lacks for the load racks pin: a partition whose replication factor reaches the
    pool's racks keeps a replica in every rack (min(RF, racks) racks), so each rack carries one follower's load
    of all of them (the load `planner.placement.engine.fair_share` keeps in its rack), within headroom × its
    brokers' capacity (`pools.pool_rules.PoolLimits.broker_limit`). A closed broker (cordoned or unhealthy) counts
    only for the followers of those partitions it already holds (`pools.pool_rules.closed_capacity`)."""
    rack = {b.id: b.rack for b in members}
    racks = sorted({r for r in rack.values() if r is not None})
    if len(racks) < 2 or None in rack.values():
        return []
    snap, limits = inputs.snapshot, inputs.rules.limits(pool)
    mine = set(topics)
    wide = np.array([p.topic in mine and len(p.replicas) >= len(racks) for p in snap.partitions], dtype=bool)
    if not wide.any():
        return []
    loads = partition_loads(snap, inputs.forecast)
    # one follower per partition, in DIMENSIONS: bytes-in fetched, nothing served, its storage, one replica
    follower = np.stack([loads.bytes_in, np.zeros(len(wide)), loads.storage, np.ones(len(wide))], axis=1)
    follower[~wide] = 0.0
    pinned = follower.sum(axis=0)
    closed = inputs.health.closed
    out = []
    for r in racks:
        brokers = sorted(b for b in rack if rack[b] == r)
        room = np.zeros(len(DIMENSIONS))
        for b in brokers:
            capacity = snap.broker_by_id[b].capacity
            if b in closed:
                held = follower[[b in p.replicas for p in snap.partitions]].sum(axis=0)
                room += [h * closed_capacity(capacity.get(d), float(held[i]), h)
                         for i, (d, h) in enumerate(zip(DIMENSIONS, limits.headroom))]
            else:
                room += limits.broker_limit(capacity)
        short = [f"{d} {_amount(d, pinned[i])} against the {_amount(d, room[i])} it can carry "
                 f"({limits.headroom[i]:.0%} of its capacity)" for i, d in enumerate(DIMENSIONS)
                 if over_limit(float(pinned[i]), float(room[i]))]
        if short:
            shut = [f"{b} {inputs.health.why_closed(b)}" for b in brokers if b in closed]
            note = f" (closed, counted only for what it holds: {'; '.join(shut)})" if shut else ""
            out.append(f"rack {r!r} of pool {pool!r} would keep broker(s) {', '.join(map(str, brokers))}{note}, "
                       f"which must hold a replica of each of the {int(wide.sum())} partition(s) whose replication "
                       f"factor reaches the pool's {len(racks)} racks: {'; '.join(short)}")
    return out


def _amount(dimension: str, value: float) -> str:
    return format_bytes(value) if dimension == "disk" else f"{value:.6g}"


def _swap_keeps_racks(others: Sequence[int], candidate: int, rack: Mapping[int, str | None], old: int) -> bool:
    """Replacing ``old`` by ``candidate`` (the other replicas ``others`` stay) keeps the partition's rack spread
    (`pools.pool_rules.keeps_rack_spread`)."""
    return keeps_rack_spread([rack.get(b) for b in (*others, old)], [rack.get(b) for b in (*others, candidate)])


def _least_loaded(members: Sequence[int], others: Sequence[int], rack: Mapping[int, str | None], old: int,
                  loads: Mapping[int, np.ndarray], limit: Mapping[int, np.ndarray]) -> int | None:
    """The member with the lowest utilisation (busiest dimension over its limit) that keeps the rack spread."""
    fits = [b for b in members if b not in others and b != old and _swap_keeps_racks(others, b, rack, old)]
    if not fits:
        return None
    return min(fits, key=lambda b: (float(np.max(loads[b][:4] / np.where(limit[b] > 0, limit[b], 1e-9))), b))


def _replica_share(p: PartitionState, share: PartitionShare | None, leads: bool) -> np.ndarray:
    """One replica's load in the engine's dimensions (for the running loads of `_least_loaded`)."""
    out = np.zeros(6)
    if share is None:
        out[2], out[3] = float(p.size_bytes), 1.0
        return out
    out[0], out[2], out[3] = share.bytes_in, share.storage, 1.0
    if leads:
        out[0] += share.remote_fetch
        out[1] = share.bytes_out + share.remote_copy + share.bytes_in * (len(p.replicas) - 1)
        out[4], out[5] = 1.0, share.bytes_in
    return out

