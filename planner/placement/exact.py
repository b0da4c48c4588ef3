"""Exact reference for placement inside one pool: a small MILP minimising bytes moved.

Used by tests and benchmarks to measure how far `planner.placement.minimal_move` is from optimal. Variables
``a_q{i}_b{n}`` (partition ``i`` has a replica on broker ``n``); each partition keeps its replication factor,
spans min(RF, racks) racks, and every broker stays within headroom × capacity in the leader-independent
dimensions (``nw_in``, ``disk``, ``replicas``: a replica's share there does not depend on leadership). The
objective is the bytes copied to brokers that do not hold the partition yet. Only for small pools.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulp

from pools.demand import Demand, PartitionShare, replica_load
from pools.errors import InfeasibleError
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = ["ExactPlacement", "exact_placement"]

_LEADER_FREE = tuple(i for i, d in enumerate(DIMENSIONS) if d != "nw_out")


@dataclass(frozen=True)
class ExactPlacement:
    """The optimal replica sets (unordered, sorted) and their moved bytes."""

    assignment: Mapping[tuple[str, int], tuple[int, ...]]
    moved_bytes: int


def exact_placement(
    snapshot: ClusterSnapshot,
    demands: Mapping[str, Demand],
    topics: Sequence[str],
    brokers: Sequence[int],
    *,
    headroom: Sequence[float],
    time_limit: float = 60.0,
) -> ExactPlacement:
    """Place every partition of ``topics`` on ``brokers`` moving the fewest bytes (see the module docstring).

    Raises
    ------
    InfeasibleError
        When no placement fits (the greedy then cannot fit either).
    """
    brokers = sorted(brokers)
    racks = sorted({snapshot.broker_by_id[b].rack for b in brokers if snapshot.broker_by_id[b].rack is not None})
    parts = [p for t in sorted(topics) for p in snapshot.partitions_by_topic.get(t, ())]
    prob = pulp.LpProblem("exact_placement", pulp.LpMinimize)
    a = prob.add_variable_dict("a_q%s_b%s", [(i, n) for i in range(len(parts)) for n in range(len(brokers))],
                               cat=pulp.LpBinary)
    moved = []
    loads: dict[int, list] = {n: [[] for _ in DIMENSIONS] for n in range(len(brokers))}
    for i, p in enumerate(parts):
        rf = len(p.replicas)
        prob += pulp.lpSum(a[i, n] for n in range(len(brokers))) == rf, f"rf_q{i}"
        for r, rack in enumerate(racks):
            on = [a[i, n] for n, b in enumerate(brokers) if snapshot.broker_by_id[b].rack == rack]
            prob += pulp.lpSum(on) <= math.ceil(rf / len(racks)), f"rack_q{i}_r{r}"
        shares = {s.partition: s for s in demands[p.topic].partitions} if p.topic in demands else {}
        share = shares.get(p.partition) or PartitionShare(p.partition, 0.0, 0.0, float(p.size_bytes))
        follower = replica_load(share, rf, leader=False)
        for n, b in enumerate(brokers):
            if b not in p.replicas:
                moved.append(p.size_bytes * a[i, n])
            for d in _LEADER_FREE:
                if follower[d]:
                    loads[n][d].append(follower[d] * a[i, n])
    for n, b in enumerate(brokers):
        cap = snapshot.broker_by_id[b].capacity
        for d in _LEADER_FREE:
            limit = headroom[d] * cap.get(DIMENSIONS[d])
            scale = limit if limit > 0 else 1.0
            prob += pulp.lpSum(loads[n][d]) / scale <= limit / scale, f"cap_b{n}_d{d}"
    total = float(sum(p.size_bytes * len(p.replicas) for p in parts)) or 1.0
    prob.setObjective(pulp.lpSum(moved) / total)
    prob.solve(pulp.HiGHS(msg=False, timeLimit=time_limit, gapRel=0.0, threads=1, random_seed=0))
    if prob.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        raise InfeasibleError(f"exact placement: {pulp.LpStatus[prob.status]} ({pulp.LpSolution[prob.sol_status]})")
    assignment = {}
    bytes_moved = 0
    for i, p in enumerate(parts):
        chosen = tuple(b for n, b in enumerate(brokers) if (a[i, n].value() or 0) > 0.5)
        assignment[p.topic, p.partition] = chosen
        bytes_moved += p.size_bytes * sum(b not in p.replicas for b in chosen)
    return ExactPlacement(assignment, bytes_moved)
