"""The shared arrays agree with the snapshot objects they flatten."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pools.cluster_arrays import cluster_arrays
from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState
from tests.plugin import examples

CAP = Capacity(1.0, 1.0, 1.0, 1.0)

replica_lists = st.lists(st.integers(0, 12), min_size=0, max_size=4, unique=True)


@st.composite
def partitions(draw):
    out = []
    for i in range(draw(st.integers(0, 12))):
        replicas = tuple(draw(replica_lists))
        isr = tuple(draw(st.lists(st.sampled_from(replicas + (99,)), unique=True))) if replicas else ()
        sizes = tuple(draw(st.lists(st.one_of(st.none(), st.integers(0, 10**12)), min_size=len(replicas),
                                    max_size=len(replicas)))) if draw(st.booleans()) else ()
        leader = draw(st.one_of(st.none(), st.sampled_from(replicas + (42,)))) if replicas else None
        out.append(PartitionState(f"t{i % 3}", i, replicas, leader, isr, sizes=sizes))
    return out


@settings(max_examples=examples(30))
@given(partitions(), st.sets(st.integers(0, 12), max_size=8))
def test_arrays_match_the_objects(parts, broker_ids):
    snap = ClusterSnapshot("c", tuple(Broker(b, None, CAP) for b in broker_ids), (), tuple(parts))
    a = cluster_arrays(snap)
    assert cluster_arrays(snap) is a
    known = sorted(broker_ids)
    flat = [(i, b, pos) for i, p in enumerate(snap.partitions) for pos, b in enumerate(p.replicas)]
    assert a.rep_part.tolist() == [i for i, _, _ in flat]
    assert a.rep_pos.tolist() == [pos for _, _, pos in flat]
    assert [known[x] if x < len(known) else None for x in a.rep_broker.tolist()] == [
        b if b in broker_ids else None for _, b, _ in flat]
    assert a.rep_in_isr.tolist() == [b in snap.partitions[i].isr for i, b, _ in flat]
    assert a.part_size.tolist() == [p.size_bytes for p in snap.partitions]
    assert a.part_offline.tolist() == [p.leader is None for p in snap.partitions]
    assert [known[x] if x >= 0 else None for x in a.part_leader.tolist()] == [
        p.leader if p.leader in broker_ids else None for p in snap.partitions]
