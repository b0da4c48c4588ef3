"""Each audit rule on hand-built clusters: it fires on the planted problem, and only there."""

from __future__ import annotations

from dataclasses import replace

import re

import pytest

from pools.audit import audit, audit_loads, fails
from pools.audit.findings import Severity
from pools.errors import InputError
from pools.kafka_formats.reassignment import parse_reassignment_json
from pools.snapshot import PartitionState

from .helpers import CAP, POLICY, brokers, healthy, policy, snapshot, with_partition


def reassignment(fix: str, snap) -> list:
    """The JSON inside a reassignment fix, parsed and checked against the cluster as `--execute` does."""
    assert fix.startswith("kafka-reassign-partitions.sh --bootstrap-server $BOOTSTRAP --execute --throttle ")
    assert fix.endswith("# then the same with --verify (no --throttle) until it reports completed: that clears the throttle")
    text = re.search(r"<\(echo '(.*)'\)  #", fix).group(1)
    cluster = {"brokers": [b.id for b in snap.brokers], "reassignments_in_progress": False,
               "topics": {t: [list(p.replicas) for p in ps] for t, ps in snap.partitions_by_topic.items()}}
    return [(e.topic, e.partition, e.replicas) for e in parse_reassignment_json(text, cluster)]


def kinds(findings):
    return sorted((f.kind, f.broker, f.topic, f.partition) for f in findings)


def base_parts():
    return healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6))


def test_healthy_cluster_is_clean():
    assert audit(snapshot(), policy()) == ()


def test_replica_outside_pool_and_mixed_broker_with_a_runnable_fix():
    parts = with_partition(base_parts(), "a-x", 0, replicas=(1, 2, 6), isr=(1, 2, 6))
    snap = snapshot(parts)
    found = audit(snap, policy())
    assert kinds(found) == [("broker_mixed_pools", 6, None, None), ("replica_outside_pool", 6, "a-x", 0)]
    outside = next(f for f in found if f.kind == "replica_outside_pool")
    assert outside.pool == "a" and outside.evidence["broker_pool"] == "b"
    # broker 3 is the only pool-a broker left and sits on rack r3 like broker 6
    assert reassignment(outside.fix, snap) == [("a-x", 0, (1, 2, 3))]
    mixed = next(f for f in found if f.kind == "broker_mixed_pools")
    assert mixed.evidence == {"replicas_by_pool": {"a": 1, "b": 3}}


def test_replica_on_unknown_or_unpooled_broker():
    b = brokers()
    b.append(replace(b[0], id=7, pool=None))
    parts = with_partition(base_parts(), "b-y", 1, replicas=(5, 6, 7), isr=(5, 6, 7), leader=5)
    found = audit(snapshot(parts, broker_list=b), policy())
    assert ("broker_without_pool", 7, None, None) in kinds(found)
    assert ("replica_outside_pool", 7, "b-y", 1) in kinds(found)


def test_pinned_broker_belongs_to_its_pool_and_unknown_tags_do_not_count():
    text = POLICY.replace('name = "a"\n', 'name = "a"\nbrokers = [1]\n')
    b = brokers({1: {"pool": "nonexistent"}, 2: {"pool": "nonexistent"}})
    found = audit(snapshot(broker_list=b), policy(text))
    assert [(f.kind, f.broker) for f in found if f.kind == "broker_without_pool"] == [("broker_without_pool", 2)]
    assert next(f for f in found if f.broker == 2 and f.kind == "broker_without_pool").evidence["pool_tag"] == "nonexistent"


def test_topic_without_pool():
    parts = base_parts() + healthy("orphan", (1, 2, 3), partitions=1)
    found = audit(snapshot(parts), policy())
    assert ("topic_without_pool", None, "orphan", None) in kinds(found)
    assert not [f for f in found if f.kind == "replica_outside_pool"]


def test_tenant_choice_follows_the_majority_of_the_group():
    text = POLICY + '\n[[tenant]]\nname = "t"\ntopics = [\'t-.*\']\n'
    text = text.replace("topics = ['a-.*']", "topics = ['a-.*']\ntenants = [\"t\"]")
    text = text.replace("topics = ['b-.*']", "topics = ['b-.*']\ntenants = [\"t\"]")
    parts = base_parts() + healthy("t-1", (4, 5, 6), 3) + [PartitionState("t-2", 0, (4, 5, 1), 4, (4, 5, 1))]
    found = [f for f in audit(snapshot(parts), policy(text)) if f.kind == "replica_outside_pool"]
    assert [(f.topic, f.broker, f.pool) for f in found] == [("t-2", 1, "b")]


def test_rack_shared_only_where_racks_allow_better():
    parts = with_partition(base_parts(), "a-x", 1, replicas=(2, 1, 1), isr=(2, 1, 1), leader=2)
    parts = with_partition(parts, "b-y", 2, replicas=(4, 5), isr=(4, 5), leader=4, sizes=(1, 1), log_dirs=("/d",) * 2)
    found = [f for f in audit(snapshot(parts), policy()) if f.kind == "rack_shared"]
    assert [(f.topic, f.partition) for f in found] == [("a-x", 1)]
    assert found[0].evidence["distinct_racks"] == 2 and found[0].evidence["racks_available"] == 3


def test_rack_shared_with_a_fix_moving_to_an_unused_rack():
    b = brokers({2: {"rack": "r1"}})
    found = [f for f in audit(snapshot(broker_list=b), policy()) if f.kind == "rack_shared"]
    # pool a is now racks {r1, r1, r3}: two racks; every partition spans 2 → nothing to fix
    assert found == []
    b = brokers({3: {"rack": "r1"}})
    b.append(replace(b[0], id=8, rack="r3", pool="a"))
    snap = snapshot(broker_list=b)
    found = [f for f in audit(snap, policy()) if f.kind == "rack_shared"]
    assert [(f.topic, f.partition) for f in found] == [("a-x", 0), ("a-x", 1), ("a-x", 2)]
    # racks r1 (1, 3), r2 (2), r3 (8): the later of the two r1 replicas gives way to broker 8 in its own slot
    # (the seed placement the plan starts from: the other replicas keep their slots, the leader stays first)
    assert [reassignment(f.fix, snap) for f in found] == [
        [("a-x", 0, (1, 2, 8))], [("a-x", 1, (2, 3, 8))], [("a-x", 2, (3, 8, 2))]]
    # no profile: the throttle is half the spare network capacity of the involved brokers (1e8 B/s each)
    assert all(" --throttle 50000000 " in f.fix for f in found)


@pytest.mark.parametrize(
    ("changes", "kind"),
    [
        ({"leader": None, "isr": ()}, "offline_partition"),
        ({"isr": (1,)}, "under_min_isr"),
        ({"isr": (1, 2)}, "at_min_isr"),  # min.insync.replicas 2 of 3: one more loss makes it read-only
    ],
)
def test_partition_health_reports_the_worst_state_only(changes, kind):
    parts = with_partition(base_parts(), "a-x", 0, **changes)
    found = audit(snapshot(parts), policy())
    assert [(f.kind, f.topic, f.partition) for f in found] == [(kind, "a-x", 0)]
    assert found[0].evidence["isr"] == list(changes["isr"])


def test_under_replicated_ignores_adding_replicas_of_a_reassignment():
    parts = with_partition(base_parts(), "a-x", 0, replicas=(1, 2, 3, 4), isr=(1, 2, 3), adding_replicas=(4,),
                           sizes=(), log_dirs=())
    found = audit(snapshot(parts), policy())
    assert ("reassignment_in_progress", None, "a-x", 0) in kinds(found)
    assert not [f for f in found if f.kind == "under_replicated"]


def test_log_dir_error_and_replica_limit():
    b = brokers({5: {"capacity": replace(CAP, replicas=2)}})
    found = audit(snapshot(broker_list=b, errors=[(2, "/d2", "KafkaStorageException")]), policy())
    assert ("log_dir_error", 2, None, None) in kinds(found)
    over = next(f for f in found if f.kind == "replica_count_over_limit")
    assert (over.broker, over.evidence) == (5, {"replicas": 3, "limit": 2})
    assert not [f for f in found if f.kind == "utilisation_over_headroom" and f.broker == 5]


def test_leader_not_preferred_needs_the_preferred_replica_in_isr():
    parts = with_partition(base_parts(), "b-y", 0, leader=5)
    found = audit(snapshot(parts), policy())
    assert kinds(found) == [("leader_not_preferred", None, "b-y", 0)]
    assert found[0].fix.endswith("--election-type PREFERRED --topic b-y --partition 0")
    parts = with_partition(base_parts(), "b-y", 0, leader=5, isr=(5, 6))
    assert [f.kind for f in audit(snapshot(parts), policy())] == ["at_min_isr"]


def test_leader_count_skew():
    parts = healthy("a-x", (1, 2, 3), partitions=12) + healthy("b-y", (4, 5, 6))
    parts = [replace(p, leader=1) if p.topic == "a-x" and p.partition % 3 else p for p in parts]
    found = [f for f in audit(snapshot(parts), policy()) if f.kind == "leader_count_skew"]
    assert [(f.broker, f.evidence["leaders"]) for f in found] == [(1, 12), (2, 0), (3, 0)]
    assert "PREFERRED --all-topic-partitions" in found[0].fix


def test_disk_over_headroom_now_per_broker_and_pool():
    b = brokers({i: {"capacity": replace(CAP, disk=3500.0)} for i in (1, 2, 3)})
    found = [f for f in audit(snapshot(broker_list=b), policy()) if f.kind == "utilisation_over_headroom"]
    assert sorted((f.evidence["scope"], f.broker, f.pool) for f in found) == [
        ("broker", 1, "a"), ("broker", 2, "a"), ("broker", 3, "a"), ("pool", None, "a")]
    f = next(f for f in found if f.broker == 1)
    assert f.evidence == {"scope": "broker", "dimension": "disk", "basis": "now", "load": 3000, "capacity": 3500,
                          "headroom": 0.7, "utilisation": 0.8571}
    assert f.severity is Severity.ERROR


def test_pool_cannot_lose_its_largest_broker():
    # 3000 B per broker, 4500 B capacity: 67 % < 70 % now, but 9000 B on two brokers is 100 %
    b = brokers({i: {"capacity": replace(CAP, disk=4500.0)} for i in (1, 2, 3)})
    found = audit(snapshot(broker_list=b), policy())
    assert [f.kind for f in found] == ["pool_cannot_lose_broker"]
    assert found[0].evidence["dimensions"]["disk"]["capacity_after_loss"] == 9000
    assert found[0].evidence["dimensions"]["disk"]["lost_brokers"] == [1]


def test_fail_on_threshold():
    parts = with_partition(base_parts(), "b-y", 0, leader=5)
    found = audit(snapshot(parts), policy())
    assert not fails(found, "error") and fails(found, "info")
    with pytest.raises(InputError, match="--fail-on: expected one of info, warning, error, critical"):
        fails(found, "bogus")


def test_policy_pinning_a_missing_broker_is_bad_input():
    with pytest.raises(InputError, match="pins broker"):
        audit(snapshot(), policy(POLICY.replace('name = "b"\n', 'name = "b"\nbrokers = [99]\n')))


def test_loads_without_profile_know_counts_and_current_disk_only():
    loads = audit_loads(snapshot())
    assert loads.known("now", "disk") and loads.known("now", "replicas")
    assert not loads.known("now", "nw_in") and not loads.known("forecast", "disk")
    assert loads.now[0].tolist()[2:] == [3000.0, 3.0]
