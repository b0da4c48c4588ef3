"""The placement engine on pools with brokers over headroom: optimal against the exact reference, zero-copy
leader moves first, fair shares for joining brokers, health respected, deterministic, and goals swappable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from planner.placement.engine import ENGINE_DIMENSIONS, Goal, PoolState, optimise, state_loads
from planner.placement.exact import exact_placement
from planner.placement.minimal_move import FAIR_SHARE_BAND, place_in_pools
from pools.demand import PartitionShare, broker_load
from pools.snapshot import DIMENSIONS, Broker, Capacity, ClusterSnapshot, LogDirError, PartitionState, TopicState

from .overloaded import CASES, HEADROOM, demand_of, overloaded_pool

#: The stated margin: moved bytes within 1 % of the exact optimum (the engine stops at a 0.1 % MIP gap).
MARGIN = 1.01


def _moved(snap: ClusterSnapshot, assignment) -> int:
    return sum(p.size_bytes * sum(b not in p.replicas for b in assignment[p.topic, p.partition])
               for p in snap.partitions)


def _check_structure(snap: ClusterSnapshot, assignment, pool) -> None:
    racks = {snap.broker_by_id[b].rack for b in pool}
    for p in snap.partitions:
        new = assignment[p.topic, p.partition]
        assert len(set(new)) == len(new) == len(p.replicas) and set(new) <= set(pool)
        assert len({snap.broker_by_id[b].rack for b in new}) == min(len(new), len(racks))


def _over(snap: ClusterSnapshot, demands, assignment, pool) -> list[tuple[int, str]]:
    loads = broker_load(snap, demands, assignment)
    return [(b, d) for b in pool for i, d in enumerate(DIMENSIONS)
            if loads[b][d] > HEADROOM[i] * snap.broker_by_id[b].capacity.get(d) * (1 + 1e-9)]


@pytest.mark.parametrize("name", ["six", "six-two-hot", "nine-big-broker"])
def test_relief_moves_within_the_margin_of_the_exact_optimum(name: str) -> None:
    case = overloaded_pool(name, **CASES[name])
    snap, demands = case.snapshot, case.demands
    assert _over(snap, demands, {}, case.pool)  # the case starts over headroom
    out = place_in_pools(snap, demands, {"t": "p"}, {"p": case.pool}, headroom={"p": HEADROOM})
    best = exact_placement(snap, demands, ["t"], case.pool, headroom=HEADROOM)
    assert best.optimal and out.warnings == ()
    assert _over(snap, demands, out.assignment, case.pool) == []
    _check_structure(snap, out.assignment, case.pool)
    assert best.moved_bytes <= _moved(snap, out.assignment) <= MARGIN * best.moved_bytes


def _pool(parts, shares, *, brokers=3, racks=3, cap=Capacity(100.0, 100.0, 1000.0, 100), joining=0):
    ids = range(1, brokers + joining + 1)
    snap = ClusterSnapshot("c", tuple(Broker(b, f"r{(b - 1) % racks}", cap) for b in ids), (TopicState("t"),),
                           tuple(parts))
    return snap, {"t": demand_of(shares, parts)}


def test_network_out_is_relieved_by_leader_moves_alone() -> None:
    # broker 1 leads all six partitions: network out 6 × 15 = 90 > 80; leading elsewhere copies nothing
    parts = [PartitionState("t", i, (1, 2, 3), leader=1, isr=(1, 2, 3), sizes=(10,) * 3) for i in range(6)]
    shares = [PartitionShare(i, 5.0, 5.0, 10.0) for i in range(6)]
    snap, demands = _pool(parts, shares)
    out = place_in_pools(snap, demands, {"t": "p"}, {"p": [1, 2, 3]}, headroom={"p": HEADROOM})
    assert _moved(snap, out.assignment) == 0 and out.warnings == ()
    assert 0 < out.pools["p"].leader_changes <= 2  # the fewest preferred-leader changes that fit
    assert _over(snap, demands, out.assignment, [1, 2, 3]) == []


def test_relief_copies_one_small_partition_not_the_largest() -> None:
    # broker 1 (alone in rack r0 with broker 4) holds a 700-byte partition and small ones; 10 bytes over the limit
    parts = [PartitionState("t", 0, (1, 2, 3), leader=2, isr=(1, 2, 3), sizes=(700,) * 3)]
    parts += [PartitionState("t", i, (1, 2, 3), leader=2, isr=(1, 2, 3), sizes=(s,) * 3)
              for i, s in ((1, 30), (2, 15), (3, 60))]
    shares = [PartitionShare(p.partition, 0.0, 0.0, float(p.size_bytes)) for p in parts]
    snap, demands = _pool(parts, shares, brokers=4, cap=Capacity(100.0, 100.0, 1000.0, 100))
    snap = ClusterSnapshot("c", tuple(Broker(b, f"r{(b - 1) % 3}", Capacity(100, 100, 1000 if b < 4 else 200, 100))
                                      for b in range(1, 5)), snap.topics, snap.partitions)
    out = place_in_pools(snap, demands, {"t": "p"}, {"p": [1, 2, 3, 4]}, headroom={"p": HEADROOM})
    # 805 bytes on broker 1 against a limit of 800: moving the 15-byte partition to broker 4 is the optimum
    assert _moved(snap, out.assignment) == 15 and out.assignment["t", 2].count(4) == 1


def test_a_joining_broker_gets_a_fair_share_at_the_fewest_bytes() -> None:
    case = overloaded_pool("join", brokers=5, racks=3, partitions=45, hot=0, seed=11, joining=1)
    snap, demands = case.snapshot, case.demands
    out = place_in_pools(snap, demands, {"t": "p"}, {"p": case.pool}, headroom={"p": HEADROOM},
                         joining={"p": case.joining})
    loads = broker_load(snap, demands, out.assignment)
    (joiner,) = case.joining
    for d in DIMENSIONS:
        mean = sum(loads[b][d] for b in case.pool) / sum(snap.broker_by_id[b].capacity.get(d) for b in case.pool)
        share = loads[joiner][d] / snap.broker_by_id[joiner].capacity.get(d)
        assert (1 - FAIR_SHARE_BAND) * mean - 1e-9 <= share <= (1 + FAIR_SHARE_BAND) * mean + 1e-9, d
    best = exact_placement(snap, demands, ["t"], case.pool, headroom=HEADROOM, band=FAIR_SHARE_BAND,
                           band_brokers=case.joining)
    assert best.optimal and best.moved_bytes <= _moved(snap, out.assignment) <= MARGIN * best.moved_bytes
    assert out.pools["p"].moved_bytes == _moved(snap, out.assignment) > out.pools["p"].seed_bytes == 0


def test_unhealthy_brokers_and_held_partitions_are_left_alone() -> None:
    # broker 2's log dir failed; partition 1 is under-replicated; the rest must move off the hot broker 1
    parts = [PartitionState("t", i, (1, 2, 3) if i < 2 else (1, 3, 4), leader=1, isr=(1, 3) if i == 1 else (1, 2, 3)
                            if i < 2 else (1, 3, 4), sizes=(100,) * 3) for i in range(6)]
    shares = [PartitionShare(i, 0.0, 0.0, 100.0) for i in range(6)]
    snap, demands = _pool(parts, shares, brokers=6, cap=Capacity(1e3, 1e3, 500.0, 100))
    snap = ClusterSnapshot("c", snap.brokers, snap.topics, snap.partitions,
                           log_dir_errors=(LogDirError(2, "/d2", "KafkaStorageException"),))
    out = place_in_pools(snap, demands, {"t": "p"}, {"p": list(range(1, 7))}, headroom={"p": HEADROOM})
    for p in parts[:2]:  # a replica on broker 2 (log dir in error), or under-replicated: unchanged
        assert out.assignment["t", p.partition] == p.replicas
    assert all(2 not in out.assignment["t", i] for i in range(2, 6))
    assert any("broker 2 is unhealthy (log dir /d2 in error" in w for w in out.warnings)
    assert any("2 replica on an unhealthy broker partition(s)" in w or "under-replicated" in w for w in out.warnings)


@pytest.mark.slow
def test_the_same_input_gives_the_same_placement() -> None:
    case = overloaded_pool("twice", brokers=8, racks=4, partitions=80, hot=2, seed=21, outside=0.1)
    runs = [place_in_pools(case.snapshot, case.demands, {"t": "p"}, {"p": case.pool}, headroom={"p": HEADROOM})
            for _ in range(2)]
    assert runs[0].assignment == runs[1].assignment and runs[0].pools == runs[1].pools


def _state(sizes, holders, seed, follower, capacity=(100.0, 100.0, 100.0, 10.0), racks=(0, 1, 2, 0)):
    n = len(racks)
    cap = np.tile(np.array(capacity), (n, 1))
    f = np.zeros((len(sizes), len(ENGINE_DIMENSIONS)))
    f[:, 2], f[:, 3] = follower, 1.0
    x = np.zeros_like(f)
    x[:, 4] = 1.0
    holders = np.array(holders)
    return PoolState(broker_ids=np.arange(1, n + 1), rack=np.array(racks), capacity=cap, limit=cap * 0.8,
                     receives=np.ones(n, dtype=bool), base=np.zeros((n, len(ENGINE_DIMENSIONS))),
                     size=np.array(sizes, dtype=float), holders=holders, preferred=holders[:, 0].copy(),
                     seed=np.array(seed), follower=f, extra=x)


def test_goals_swap_a_rebalance_within_a_budget_and_a_drain() -> None:
    # brokers 0..3 (racks 0, 1, 2, 0); RF 1 partitions of 10 bytes, all on broker 0: disk 60 of 80 allowed
    holders = [[0]] * 6
    state = _state([10] * 6, holders, holders, [10.0] * 6)
    assert optimise(state).status == "seed"  # nothing over its limit: nothing to do
    balanced = optimise(state, Goal(band=0.4, band_dimensions=("disk",)))
    assert balanced.moved_bytes == 40 and balanced.outside_band.sum() == 0  # 15 ± 40 % each: 20, 10, 20, 10
    tight = optimise(state, Goal(band=0.2, band_dimensions=("disk",)))  # 12..18 cannot be met with 10s
    assert tight.moved_bytes == 40 and tight.outside_band.sum() == 8  # as close as it gets: 2 off on each
    within = optimise(state, Goal(band=0.4, band_dimensions=("disk",), budget=25))
    assert within.moved_bytes == 20 and within.outside_band.sum() == 19 + 9  # 40 on broker 0, one broker empty
    # drain broker 0: the seed puts its replicas elsewhere (here: broker 3, same rack), the engine spreads them
    drained = _state([10] * 6, holders, [[3]] * 6, [10.0] * 6)
    drained = PoolState(**{**drained.__dict__, "receives": np.array([False, True, True, True]),
                           "limit": drained.limit * np.array([[0.0], [1], [1], [1]])})
    result = optimise(drained)
    assert (result.target != 0).all() and result.overload.sum() == 0
    assert state_loads(drained, result.target)[0].sum() == 0


#: The exact reference on the larger cases, solved once with a 300 s limit: its moved bytes and whether it proved
#: them optimal (else the limit stopped it at its best placement). The slow test re-solves them;
#: ``POOLPLAN_UPDATE_EXACT=1`` rewrites the file from that run.
EXACT_OPTIMA = Path(__file__).resolve().parents[2] / "data" / "placement" / "exact_optima.json"
LARGER = ["twelve-outside", "twentyfour", "twentyfour-joining"]


def _engine_within_the_margin(name: str, best_moved: int, optimal: bool) -> None:
    case = overloaded_pool(name, **CASES[name])
    snap, demands = case.snapshot, case.demands
    assert _over(snap, demands, {}, case.pool)
    joining = {"p": case.joining} if case.joining else None
    out = place_in_pools(snap, demands, {"t": "p"}, {"p": case.pool}, headroom={"p": HEADROOM}, joining=joining)
    assert out.warnings == () and _over(snap, demands, out.assignment, case.pool) == []
    _check_structure(snap, out.assignment, case.pool)
    assert _moved(snap, out.assignment) <= MARGIN * best_moved
    if optimal:
        assert best_moved <= _moved(snap, out.assignment)


@pytest.mark.slow
@pytest.mark.parametrize("name", LARGER)
def test_larger_pools_stay_within_the_margin_of_the_stored_exact_reference(name: str) -> None:
    stored = json.loads(EXACT_OPTIMA.read_text())[name]
    _engine_within_the_margin(name, stored["moved_bytes"], stored["optimal"])


@pytest.mark.slow
@pytest.mark.parametrize("name", LARGER)
def test_larger_pools_stay_within_the_margin_of_the_exact_reference(name: str) -> None:
    # the exact reference gets 300 s; where it cannot prove its optimum, the engine is held to its best placement
    case = overloaded_pool(name, **CASES[name])
    best = exact_placement(case.snapshot, case.demands, ["t"], case.pool, headroom=HEADROOM, time_limit=300,
                           band=FAIR_SHARE_BAND if case.joining else None, band_brokers=case.joining)
    optima = json.loads(EXACT_OPTIMA.read_text())
    if os.environ.get("POOLPLAN_UPDATE_EXACT"):
        optima[name] = {"moved_bytes": best.moved_bytes, "optimal": best.optimal}
        EXACT_OPTIMA.write_text(json.dumps(optima, indent=2, sort_keys=True) + "\n")
    stored = optima[name]
    # a proven optimum bounds every placement from below: the stored figure and this run's agree with each other
    stale = f"{EXACT_OPTIMA.name} is stale for {name}: re-run this test with POOLPLAN_UPDATE_EXACT=1"
    if stored["optimal"]:
        assert best.moved_bytes >= stored["moved_bytes"], stale
    if best.optimal:
        assert best.moved_bytes <= stored["moved_bytes"], stale
    _engine_within_the_margin(name, best.moved_bytes, best.optimal)


def test_a_placement_out_of_time_keeps_the_seed_and_says_so() -> None:
    case = overloaded_pool("six", **CASES["six"])
    out = place_in_pools(case.snapshot, case.demands, {"t": "p"}, {"p": case.pool}, headroom={"p": HEADROOM},
                         time_limit=0.0)
    seed = place_in_pools(case.snapshot, case.demands, {"t": "p"}, {"p": case.pool}, headroom={"p": HEADROOM},
                          optimiser=lambda state, goal: optimise(state, goal, max_nodes=0))
    assert out.pools["p"].status == "time-limit"
    assert out.pools["p"].moved_bytes == out.pools["p"].seed_bytes  # nothing beyond the seed
    assert any("stopped at its time limit" in w and "--time-limit" in w for w in out.warnings)
    assert "time limit" not in " ".join(seed.warnings)


def test_a_solve_after_one_at_another_thread_count_still_finds_its_placement() -> None:
    # HiGHS sizes one scheduler per process at its first solve: the pool model at --threads 2 left every later
    # single-threaded engine solve in error (no solution), so each pool kept its seed ("seed-kept")
    import highspy

    from planner.highs import QuietHighs, use_threads

    case = overloaded_pool("six", **CASES["six"])

    def placed():
        return place_in_pools(case.snapshot, case.demands, {"t": "p"}, {"p": case.pool}, headroom={"p": HEADROOM})

    alone = placed()
    h = QuietHighs()
    h.setOptionValue("output_flag", False)
    use_threads(2, h)
    h.addVar(0.0, 1.0)
    h.changeColIntegrality(0, highspy.HighsVarType.kInteger)
    h.run()  # a two-thread solve sizes the scheduler for two
    after = placed()
    assert alone.pools["p"].status == after.pools["p"].status != "seed-kept"
    assert after.assignment == alone.assignment and after.warnings == ()
