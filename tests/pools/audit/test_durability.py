"""Durability as Kafka judges it: a partition at its min ISR (``--at-min-isr-partitions``, below its replication
factor), the eligible leader replicas of an offline partition (KIP-966), a topic of replication factor 1 in a pool
that must survive a broker loss, and the report's N−1 read-only list judging each partition by the ISR it has.

Every expectation is computed here from the partitions' own fields, not by the audit's code."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pools.audit import audit
from pools.audit.durability import topics_below_min_isr
from pools.policy import parse_policy
from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState, TopicState

CAP = Capacity(1e8, 1e8, 1e12, 1000)
POLICY = '[defaults]\ntolerated_broker_failures = {k}\nmin_brokers = 3\n\n[[pool]]\nname = "core"\ndefault = true\n'
#: topic → (replication factor, min.insync.replicas)
TOPICS = {"pay": (3, 2), "logs": (2, 1), "temp": (1, 1), "ledger": (3, 3)}


def _cluster(**changed: dict) -> ClusterSnapshot:
    """Six brokers, four topics of 4 partitions each, every replica in sync; ``changed`` maps ``topic-partition``
    to the fields it changes."""
    brokers = tuple(Broker(b, f"r{b % 3}", CAP, "core") for b in range(1, 7))
    topics = tuple(TopicState(t, configs={"min.insync.replicas": str(m)}) for t, (_, m) in TOPICS.items())
    parts = []
    for t, (rf, _) in sorted(TOPICS.items()):
        for p in range(4):
            replicas = tuple(1 + (p + j) % 6 for j in range(rf))
            state = PartitionState(t, p, replicas, replicas[0], replicas, sizes=(10,) * rf)
            parts.append(replace(state, **changed.get(f"{t}-{p}", {})))
    return ClusterSnapshot("c", brokers, topics, tuple(parts))


def _kinds(found, *kinds):
    return sorted((f.kind, f.topic, f.partition) for f in found if f.kind in kinds)


@pytest.mark.parametrize("k", [0, 1])
def test_a_partition_at_its_min_isr_is_a_finding_of_its_own_and_read_only_in_n_minus_1(k):
    snap = _cluster(**{"pay-1": {"isr": (2, 3)}, "logs-2": {"isr": (3,)}, "pay-3": {"isr": (4, 5, 6)}})
    found = audit(snap, parse_policy(POLICY.format(k=k)))
    expected = []
    for p in snap.partitions:  # ISR == min.insync.replicas < RF, with a leader
        rf, need = TOPICS[p.topic]
        if p.leader is not None and len(p.isr) == need < rf:
            expected.append(("at_min_isr", p.topic, p.partition))
    assert _kinds(found, "at_min_isr", "under_replicated") == sorted(expected) == \
        [("at_min_isr", "logs", 2), ("at_min_isr", "pay", 1)]
    at = next(f for f in found if f.kind == "at_min_isr" and f.topic == "pay")
    assert "--at-min-isr-partitions --topic pay" in at.fix and "brokers 2, 3 makes it read-only" in at.fix
    assert "out-of-sync brokers 4" in at.fix
    # the report's N−1 (one broker lost) names both topics, judged by the ISR they have now
    n1 = {f.topic: f for f in topics_below_min_isr(snap, parse_policy(POLICY.format(k=k)), at_least=1, current=True)}
    assert "pay-1" in n1["pay"].evidence["partitions"] and "logs-2" in n1["logs"].evidence["partitions"]
    assert n1["pay"].evidence["partitions_short_of_isr"] == 1
    assert "ledger" in n1 and n1["temp"].kind == "single_replica_topic"


def test_the_audit_judges_a_topics_settings_on_its_in_sync_partitions_only():
    found = audit(_cluster(**{"pay-1": {"isr": (2, 3)}}), parse_policy(POLICY.format(k=1)))
    # pay (RF 3, min ISR 2) survives one loss with every replica in sync; its short partition is at_min_isr
    assert _kinds(found, "min_isr_after_broker_loss") == [("min_isr_after_broker_loss", "ledger", None)]


@pytest.mark.parametrize("k, named", [(0, False), (1, True)])
def test_a_single_replica_topic_is_named_as_such_where_the_pool_must_survive_a_loss(k, named):
    found = audit(_cluster(), parse_policy(POLICY.format(k=k)))
    single = [f for f in found if f.kind == "single_replica_topic"]
    assert [f.topic for f in single] == (["temp"] if named else [])
    assert not [f for f in found if f.kind == "min_isr_after_broker_loss" and f.topic == "temp"]
    if named:
        e = single[0].evidence
        assert (e["replication_factor"], e["partitions_at_risk"], e["partitions_blocked"]) == (1, 4, 1)
        assert "--replication-factor 2" in single[0].fix and "min.insync.replicas" not in single[0].fix


def test_an_offline_partition_with_eligible_leader_replicas_is_restored_without_an_unclean_election():
    snap = _cluster(**{"pay-0": {"leader": None, "isr": (1,), "elr": (2,), "last_known_elr": ()},
                       "pay-2": {"leader": None, "isr": (3,), "elr": (), "last_known_elr": (4,)},
                       "ledger-1": {"leader": None, "isr": (2,)}})
    found = {(f.topic, f.partition): f for f in audit(snap, parse_policy(POLICY.format(k=1)))
             if f.kind == "offline_partition"}
    assert sorted(found) == [("ledger", 1), ("pay", 0), ("pay", 2)]
    assert "UNCLEAN" not in found["pay", 0].fix and "bring broker(s) 2 back" in found["pay", 0].fix
    assert found["pay", 0].evidence["elr"] == [2]
    assert "UNCLEAN" in found["pay", 2].fix and "brokers 4 (last known ELR)" in found["pay", 2].fix
    assert "UNCLEAN" in found["ledger", 1].fix and "elr" not in found["ledger", 1].evidence
