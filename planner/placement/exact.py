"""Exact reference for placement inside one pool: a small MILP minimising bytes moved.

Used by tests and benchmarks to measure how far `planner.placement.minimal_move` is from optimal; written apart
from `planner.placement.engine` (PuLP, one plain formulation, every partition and broker) so the two can be
compared. Variables ``a_q{i}_b{n}`` (partition ``i`` has a replica on broker ``n``) and ``l_q{i}_b{n}`` (it is
led from broker ``n``): each partition keeps its replication factor, has one leader among its replicas, spans
min(RF, racks) racks (RF ≤ racks: one replica per rack, none on a broker without a rack; RF > racks: every
rack), and every broker stays within headroom × capacity in every dimension, the leader carrying
`pools.demand.replica_load`'s leader share. Optionally the ``band_brokers`` must end within ±``band`` of their
fair share in every dimension (`planner.placement.engine.fair_share`: the pool's mean utilisation, or the
rack's where partitions whose RF reaches the pool's racks pin load to every rack). The objective is the bytes copied
to brokers that do not hold the partition yet; a leader change is free. With ``max_moved_bytes`` the goal turns
round: at most that many bytes are copied and the band is a target, the objective its distance (Σ over the
``band_brokers`` and dimensions of how far each load lies outside the band, over its fair share; moved bytes
break ties): the best balance a budget can buy. Only for small pools.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pulp

from planner.highs import use_threads
from planner.placement.engine import fair_share
from pools.demand import Demand, PartitionShare, replica_load
from pools.errors import InfeasibleError
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = ["ExactPlacement", "exact_placement"]


@dataclass(frozen=True)
class ExactPlacement:
    """The optimal replica lists (leader first, the others sorted), their moved bytes, whether the solver
    proved optimality (False when ``time_limit`` stopped it with a feasible placement) and, with a budget, the
    distance outside the band (`band_distance`'s measure)."""

    assignment: Mapping[tuple[str, int], tuple[int, ...]]
    moved_bytes: int
    optimal: bool = True
    outside_band: float = 0.0


def exact_placement(
    snapshot: ClusterSnapshot,
    demands: Mapping[str, Demand],
    topics: Sequence[str],
    brokers: Sequence[int],
    *,
    headroom: Sequence[float],
    band: float | None = None,
    band_brokers: Sequence[int] = (),
    max_moved_bytes: int | None = None,
    time_limit: float = 60.0,
) -> ExactPlacement:
    """Place every partition of ``topics`` on ``brokers`` moving the fewest bytes (see the module docstring).

    Raises
    ------
    InfeasibleError
        When no placement fits (or the solver proves nothing within ``time_limit``).
    """
    brokers = sorted(brokers)
    rack_of = {b: snapshot.broker_by_id[b].rack for b in brokers}
    racks = sorted({r for r in rack_of.values() if r is not None})
    parts = [p for t in sorted(topics) for p in snapshot.partitions_by_topic.get(t, ())]
    pairs = [(i, n) for i in range(len(parts)) for n in range(len(brokers))]
    shares = {(t, s.partition): s for t in topics if t in demands for s in demands[t].partitions}
    prob = pulp.LpProblem("exact_placement", pulp.LpMinimize)
    a = prob.add_variable_dict("a_q%s_b%s", pairs, cat=pulp.LpBinary)
    lead = prob.add_variable_dict("l_q%s_b%s", pairs, cat=pulp.LpBinary)
    moved = []
    loads: dict[tuple[int, int], list] = {(n, d): [] for n in range(len(brokers)) for d in range(len(DIMENSIONS))}
    totals = [0.0] * len(DIMENSIONS)
    pinned = [0.0] * len(DIMENSIONS)  # per rack: one replica of each partition whose RF reaches the racks
    for i, p in enumerate(parts):
        rf = len(p.replicas)
        prob += pulp.lpSum(a[i, n] for n in range(len(brokers))) == rf, f"rf_q{i}"
        prob += pulp.lpSum(lead[i, n] for n in range(len(brokers))) == 1, f"leader_q{i}"
        for r, rack in enumerate(racks):
            on = pulp.lpSum(a[i, n] for n, b in enumerate(brokers) if rack_of[b] == rack)
            prob += (on <= 1 if rf <= len(racks) else on >= 1), f"rack_q{i}_r{r}"
        share = shares.get((p.topic, p.partition)) or PartitionShare(p.partition, 0.0, 0.0, float(p.size_bytes))
        follower = replica_load(share, rf, leader=False)
        leader = replica_load(share, rf, leader=True)
        for d in range(len(DIMENSIONS)):
            totals[d] += leader[d] + follower[d] * (rf - 1)
            pinned[d] += follower[d] if len(racks) > 1 and rf >= len(racks) else 0.0
        for n, b in enumerate(brokers):
            prob += lead[i, n] <= a[i, n], f"leads_q{i}_b{n}"
            if racks and rf <= len(racks) and rack_of[b] is None:
                prob += a[i, n] == 0, f"norack_q{i}_b{n}"
            if b not in p.replicas:
                moved.append(p.size_bytes * a[i, n])
            for d in range(len(DIMENSIONS)):
                if follower[d]:
                    loads[n, d].append(follower[d] * a[i, n])
                if leader[d] - follower[d]:
                    loads[n, d].append((leader[d] - follower[d]) * lead[i, n])
    caps = {b: [snapshot.broker_by_id[b].capacity.get(dim) for dim in DIMENSIONS] for b in brokers}
    rack_code = np.array([racks.index(rack_of[b]) if rack_of[b] is not None else -1 for b in brokers])
    pinned_on = np.zeros((len(brokers), len(DIMENSIONS)))
    for rack in racks:  # booked on each rack's first broker: fair_share sums per rack
        pinned_on[[rack_of[b] for b in brokers].index(rack)] = pinned
    share = fair_share(np.array(totals), np.array([caps[b] for b in brokers], dtype=float).reshape(-1, len(DIMENSIONS)),
                       rack_code, pinned_on)
    outside = []  # with a budget: how far each banded load lies below / above the band, over its share
    for n, b in enumerate(brokers):
        for d in range(len(DIMENSIONS)):
            limit = headroom[d] * caps[b][d]
            scale = limit if limit > 0 else 1.0
            prob += pulp.lpSum(loads[n, d]) / scale <= limit / scale, f"cap_b{n}_d{d}"
            if band is not None and b in band_brokers and share[n, d] > 0 and totals[d] > 0:
                below = above = 0
                if max_moved_bytes is not None:
                    below = pulp.LpVariable(f"below_b{n}_d{d}", lowBound=0)
                    above = pulp.LpVariable(f"above_b{n}_d{d}", lowBound=0)
                    outside += [below, above]
                prob += pulp.lpSum(loads[n, d]) / share[n, d] + below >= 1 - band, f"band_lo_b{n}_d{d}"
                prob += pulp.lpSum(loads[n, d]) / share[n, d] - above <= 1 + band, f"band_hi_b{n}_d{d}"
    total = float(sum(p.size_bytes * len(p.replicas) for p in parts)) or 1.0
    if max_moved_bytes is None:
        prob.setObjective(pulp.lpSum(moved) / total)
    else:
        prob += pulp.lpSum(moved) <= max_moved_bytes, "budget"
        prob.setObjective(pulp.lpSum(outside) + 1e-6 * pulp.lpSum(moved) / total)
    use_threads(1)
    prob.solve(pulp.HiGHS(msg=False, timeLimit=time_limit, gapRel=0.0, threads=1, random_seed=0))
    if prob.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        raise InfeasibleError(f"exact placement: {pulp.LpStatus[prob.status]} ({pulp.LpSolution[prob.sol_status]})")
    assignment = {}
    bytes_moved = 0
    for i, p in enumerate(parts):
        chosen = [b for n, b in enumerate(brokers) if (a[i, n].value() or 0) > 0.5]
        leader_of = [b for n, b in enumerate(brokers) if (lead[i, n].value() or 0) > 0.5]
        assignment[p.topic, p.partition] = tuple(leader_of[:1] + [b for b in chosen if b not in leader_of[:1]])
        bytes_moved += p.size_bytes * sum(b not in p.replicas for b in chosen)
    distance = float(sum(v.value() or 0.0 for v in outside))
    return ExactPlacement(assignment, bytes_moved, prob.sol_status == pulp.LpSolutionOptimal, distance)
