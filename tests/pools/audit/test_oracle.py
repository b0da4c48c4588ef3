"""The vectorised rules against a plain per-partition oracle on random clusters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pools.audit import audit
from pools.snapshot import Broker, ClusterSnapshot, PartitionState, TopicState

from .helpers import CAP, policy

BROKERS = tuple(Broker(i, f"r{i % 3}", CAP, "a" if i <= 4 else "b") for i in range(1, 9))
POOL = {b.id: b.pool for b in BROKERS}
RACK = {b.id: b.rack for b in BROKERS}


@st.composite
def clusters(draw):
    parts = []
    for topic in ("a-x", "b-y"):
        for p in range(draw(st.integers(1, 6))):
            replicas = tuple(draw(st.lists(st.integers(1, 8), min_size=1, max_size=4, unique=True)))
            isr = tuple(b for b in replicas if draw(st.booleans()))
            leader = draw(st.one_of(st.none(), st.sampled_from(isr))) if isr else None
            adding = (replicas[-1],) if len(replicas) > 1 and draw(st.integers(0, 5)) == 0 else ()
            parts.append(PartitionState(topic, p, replicas, leader, isr, adding_replicas=adding))
    topics = (TopicState("a-x", configs={"min.insync.replicas": "2"}), TopicState("b-y"))
    return ClusterSnapshot("c", BROKERS, topics, tuple(parts))


def oracle(snap: ClusterSnapshot) -> set[tuple]:
    """The partition and isolation findings, computed one partition at a time from their definitions."""
    out = set()
    min_isr = {"a-x": 2, "b-y": 1}
    carried: dict[int, set[str]] = {}
    for p in snap.partitions:
        pool = p.topic[0]
        rf = len(p.replicas) - len(p.adding_replicas)
        if p.leader is None:
            out.add(("offline_partition", p.topic, p.partition, None))
        elif len(p.isr) < min_isr[p.topic]:
            out.add(("under_min_isr", p.topic, p.partition, None))
        elif len(p.isr) == min_isr[p.topic] < rf:
            out.add(("at_min_isr", p.topic, p.partition, None))
        elif len(p.isr) < rf:
            out.add(("under_replicated", p.topic, p.partition, None))
        if p.adding_replicas:
            out.add(("reassignment_in_progress", p.topic, p.partition, None))
        healthy = p.leader is not None and len(p.isr) >= min_isr[p.topic]
        if healthy and not p.adding_replicas and p.leader != p.replicas[0] and p.replicas[0] in p.isr:
            out.add(("leader_not_preferred", p.topic, p.partition, None))
        for b in p.replicas:
            carried.setdefault(b, set()).add(pool)
            if POOL[b] != pool:
                out.add(("replica_outside_pool", p.topic, p.partition, b))
        if len({RACK[b] for b in p.replicas}) < min(len(p.replicas), 3):
            out.add(("rack_shared", p.topic, p.partition, None))
    out |= {("broker_mixed_pools", None, None, b) for b, pools in carried.items() if len(pools) > 1}
    return out


@given(clusters())
def test_rules_match_the_oracle(snap):
    kinds = {"offline_partition", "under_min_isr", "at_min_isr", "under_replicated", "reassignment_in_progress",
             "leader_not_preferred", "replica_outside_pool", "rack_shared", "broker_mixed_pools"}
    found = audit(snap, policy())
    got = {(f.kind, f.topic, f.partition, f.broker) for f in found if f.kind in kinds}
    assert got == oracle(snap)
    assert len(got) == len([f for f in found if f.kind in kinds])
    assert audit(snap, policy()) == found
