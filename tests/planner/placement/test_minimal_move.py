"""Movement-minimising placement: keeps in-pool replicas, fills by load and rack, and stays near the exact optimum."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.placement.exact import exact_placement
from planner.placement.minimal_move import place_in_pools
from pools.demand import broker_load, topic_demand
from pools.snapshot import DIMENSIONS, Broker, Capacity, ClusterSnapshot, PartitionState, TopicState
from tests.plugin import examples

CAP = Capacity(1e9, 1e9, 1e12, 1000)
H = (1.0, 1.0, 1.0, 1.0)
#: Greedy moved bytes ≤ MARGIN × the exact optimum + one partition per pool (benchmarks: equal in 97 % of
#: random 30-partition pools, mean +0.09 %, worst +7.1 % over 300 pools; on tiny pools one extra replica).
MARGIN = 1.10


def _snapshot(parts, n_brokers=6, racks=3, cap=CAP):
    brokers = tuple(Broker(i, f"r{i % racks}" if racks else None, cap) for i in range(1, n_brokers + 1))
    topics = tuple(TopicState(t) for t in sorted({p.topic for p in parts}))
    return ClusterSnapshot("c", brokers, topics, tuple(parts))


def test_keeps_in_pool_replicas_and_leader_and_fills_rack_diverse() -> None:
    snap = _snapshot([PartitionState("t", 0, (9, 1, 2), leader=1, sizes=(5, 5, 5))], n_brokers=9)
    pool = [1, 2, 3, 4, 5, 6]
    out = place_in_pools(snap, topic_demand(snap, {}), {"t": "p"}, {"p": pool}, headroom={"p": H})
    replicas = out.assignment["t", 0]
    # broker 1 led and takes the first slot, broker 2 keeps its slot; the new replica replaces 9 (whose slot
    # broker 1 took) on the one rack not yet used (r0)
    assert (replicas[0], replicas[2]) == (1, 2)
    assert snap.broker_by_id[replicas[1]].rack == "r0" and replicas[1] in pool


def test_fills_the_least_loaded_broker_by_bytes_not_by_count() -> None:
    parts = [PartitionState("big", 0, (1,), leader=1, sizes=(900,))]
    parts += [PartitionState("small", i, (2,), leader=2, sizes=(1,)) for i in range(5)]
    parts.append(PartitionState("new", 0, (7,), leader=7, sizes=(10,)))
    snap = _snapshot(parts, n_brokers=7, racks=0, cap=Capacity(1e9, 1e9, 1000, 1000))
    out = place_in_pools(snap, topic_demand(snap, {}), {"big": "p", "small": "p", "new": "p"}, {"p": [1, 2]},
                         headroom={"p": H})
    assert out.assignment["new", 0] == (2,)  # broker 2 has five replicas but 5 bytes; broker 1 has 900


def test_new_leader_is_the_replica_with_least_leader_traffic() -> None:
    parts = [PartitionState("a", 0, (1, 2), leader=1, sizes=(1, 1)), PartitionState("b", 0, (9, 2), leader=9, sizes=(1, 1))]
    snap = _snapshot(parts, n_brokers=9, racks=0)
    from benchmarks.random_clusters import profile_row

    profile = {t: profile_row(t, 1, 100.0, 1000.0, 1.0) for t in ("a", "b")}
    demands = topic_demand(snap, profile)
    out = place_in_pools(snap, demands, {"a": "p", "b": "p"}, {"p": [1, 2]}, headroom={"p": H})
    # broker 9 led b and leaves; broker 1 already leads a, so broker 2 leads b
    assert out.assignment["b", 0][0] == 2 and out.assignment["a", 0][0] == 1


def test_relieves_an_overloaded_broker_with_the_cheapest_move() -> None:
    # both partitions kept on broker 1 would overload it (disk 60 + 60 > 100); one moves to broker 2
    parts = [PartitionState("t", i, (1,), leader=1, sizes=(60,)) for i in range(2)]
    snap = _snapshot(parts, n_brokers=2, racks=0, cap=Capacity(1e9, 1e9, 100, 1000))
    demands = topic_demand(snap, {})
    out = place_in_pools(snap, demands, {"t": "p"}, {"p": [1, 2]}, headroom={"p": H})
    assert sorted(out.assignment.values()) == [(1,), (2,)]
    assert out.warnings == ()


def test_short_pool_keeps_outside_replicas_with_a_warning() -> None:
    snap = _snapshot([PartitionState("t", 0, (4, 5, 6), leader=4, sizes=(1, 1, 1))])
    out = place_in_pools(snap, topic_demand(snap, {}), {"t": "p"}, {"p": [1, 2]}, headroom={"p": H})
    assert len(set(out.assignment["t", 0])) == 3 and {1, 2} <= set(out.assignment["t", 0])
    assert "fewer than the replication factor of 1 partition(s)" in out.warnings[0]


def _lost_rack(cordoned: tuple[int, ...] = ()) -> ClusterSnapshot:
    """Rack r3 (brokers 3 and 6) is gone from the inventory; its replicas are still listed."""
    brokers = tuple(Broker(b, r, CAP, cordoned=b in cordoned) for b, r in ((1, "r1"), (2, "r2"), (4, "r1"), (5, "r2")))
    parts = (PartitionState("t", 0, (1, 2, 3), leader=1, sizes=(5, 5, 5)),
             PartitionState("t", 1, (3, 1, 2), leader=1, sizes=(5, 5, 5)),
             PartitionState("u", 0, (1, 2, 6), leader=1, isr=(1, 2), sizes=(5, 5, 5)),  # under-replicated by 6 only
             PartitionState("u", 1, (1, 2, 6), leader=1, isr=(1,), sizes=(5, 5, 5)))  # 2 out of sync too: held
    return ClusterSnapshot("c", brokers, (TopicState("t"), TopicState("u")), parts)


def test_a_replica_on_a_broker_the_snapshot_lacks_is_replaced_in_the_pool() -> None:
    snap = _lost_rack()
    out = place_in_pools(snap, topic_demand(snap, {}), {"t": "p", "u": "p"}, {"p": [1, 2, 4]}, headroom={"p": H})
    # two racks left for RF 3: the new replica repeats one (Kafka's rack-aware placement wraps the same way)
    assert out.assignment["t", 0] == (1, 2, 4)
    assert out.assignment["t", 1][0] == 1 and set(out.assignment["t", 1]) == {1, 2, 4}
    # its only trouble the gone replica, its leader in sync: evacuated from 6 (`pools.health`), as decommission does
    assert out.assignment["u", 0] == (1, 2, 4)
    assert out.assignment["u", 1] == (1, 2, 6)  # held: keeps its replicas, the gone one too; its RF never shrinks
    assert not any("lacks" in w for w in out.warnings)


@pytest.mark.parametrize(("pool", "cordoned"), [([1, 2], ()), ([1, 2, 4], (4,))])
def test_a_pool_too_small_to_replace_a_gone_replica_keeps_the_partition_as_it_is(pool, cordoned) -> None:
    snap = _lost_rack(cordoned)
    out = place_in_pools(snap, topic_demand(snap, {}), {"t": "p", "u": "p"}, {"p": pool}, headroom={"p": H})
    # no RF change and no reassignment naming broker 3 (Kafka refuses an unregistered broker): nothing moves
    assert [out.assignment[k] for k in (("t", 0), ("t", 1), ("u", 0), ("u", 1))] == [(1, 2, 3), (3, 1, 2), (1, 2, 6),
                                                                                     (1, 2, 6)]
    assert [w for w in out.warnings if "lacks" in w] == [
        "pool 'p': 3 partition(s) keep their replicas on broker(s) 3, 6 that the snapshot lacks: the pool has 2 "
        "broker(s) open to a new replica, too few for their replication factor (add brokers to the pool to "
        "re-replicate them): t-0, t-1, u-0"]


@settings(max_examples=examples(30))
@given(data=st.data(), n_brokers=st.integers(3, 6), n_parts=st.integers(1, 12))
def test_greedy_moves_within_the_stated_margin_of_the_exact_optimum(data: st.DataObject, n_brokers: int,
                                                              n_parts: int) -> None:
    pool = list(range(1, n_brokers + 1))
    outside = list(range(n_brokers + 1, n_brokers + 4))
    parts = []
    for i in range(n_parts):
        rf = data.draw(st.integers(1, 3))
        replicas = tuple(data.draw(st.permutations(pool + outside))[:rf])
        parts.append(PartitionState("t", i, replicas, leader=replicas[0],
                                    sizes=(data.draw(st.integers(1, 100)),) * rf))
    total = sum(p.size_bytes * len(p.replicas) for p in parts)
    # disk capacity for roughly 60 % average use: room to keep what is in place
    cap = Capacity(1e9, 1e9, max(1.0, total / n_brokers / 0.6), 1000)
    snap = _snapshot(parts, n_brokers=n_brokers + 3, cap=cap)
    demands = topic_demand(snap, {})
    greedy = place_in_pools(snap, demands, {"t": "p"}, {"p": pool}, headroom={"p": H})
    try:
        exact = exact_placement(snap, demands, ["t"], pool, headroom=H)
    except Exception:  # no placement fits: nothing to compare
        return
    moved = sum(p.size_bytes * sum(b not in p.replicas for b in greedy.assignment[p.topic, p.partition])
                for p in parts)
    loads = broker_load(snap, demands, greedy.assignment)
    fits = all(loads[b]["disk"] <= cap.disk * (1 + 1e-9) for b in pool)
    if fits:  # the greedy found a feasible placement: within the margin docs/benchmarks/planner.md states
        assert moved <= exact.moved_bytes * MARGIN + max(p.size_bytes for p in parts)
    for (topic, partition), replicas in greedy.assignment.items():
        assert len(set(replicas)) == len(replicas) == len(snap.partitions_by_topic[topic][partition].replicas)
        assert set(replicas) <= set(pool)
    assert all(dim in DIMENSIONS for dim in loads[1])


def test_greedy_matches_the_exact_optimum_on_average() -> None:
    import numpy as np

    rng = np.random.default_rng(1)
    ratios = []
    for _ in range(25):
        parts = []
        for i in range(20):
            rf = int(rng.integers(1, 4))
            replicas = tuple(int(b) + 1 for b in rng.permutation(9)[:rf])
            parts.append(PartitionState("t", i, replicas, leader=replicas[0], sizes=(int(rng.integers(1, 1000)),) * rf))
        total = sum(p.size_bytes * len(p.replicas) for p in parts)
        cap = Capacity(1e9, 1e9, total / 6 / rng.uniform(0.5, 0.9), 1000)
        snap = _snapshot(parts, n_brokers=9, cap=cap)
        demands = topic_demand(snap, {})
        greedy = place_in_pools(snap, demands, {"t": "p"}, {"p": list(range(1, 7))}, headroom={"p": H})
        exact = exact_placement(snap, demands, ["t"], list(range(1, 7)), headroom=H)
        moved = sum(p.size_bytes * sum(b not in p.replicas for b in greedy.assignment[p.topic, p.partition])
                    for p in parts)
        assert greedy.warnings == ()
        ratios.append(moved / exact.moved_bytes)
    assert min(ratios) >= 1 - 1e-9  # the exact reference is a true lower bound
    assert sum(ratios) / len(ratios) <= 1.01 and max(ratios) <= MARGIN
