"""The audit on a Kafka 4.3 capture: replicas on cordoned brokers and dirs, a JBOD dir at 90 % of its share while
its broker is at a third, and topics whose own min.insync.replicas a broker loss would break."""

from __future__ import annotations

import json
import re

import pytest

from pools.audit import audit
from pools.kafka_formats.inventory import parse_inventory_toml
from pools.kafka_formats.reassignment import parse_reassignment_json
from pools.policy import parse_policy
from pools.snapshot_build import build_snapshot
from tests.pools.test_snapshot_build import KAFKA4_INVENTORY

POLICY = """
[defaults]
headroom = 0.8
tolerated_broker_failures = 1
min_brokers = 3

[[pool]]
name = "core"
default = true
"""


@pytest.fixture()
def findings(data_dir):
    d = data_dir / "kafka-formats"
    snap = build_snapshot(
        (d / "kafka-topics-describe-4.3.txt").read_text(), (d / "kafka-log-dirs-describe-4.3.txt").read_text(),
        parse_inventory_toml(KAFKA4_INVENTORY.replace('rack = "r', 'pool = "core"\nrack = "r')), cluster="k4",
        broker_configs_text=(d / "kafka-configs-describe-brokers-4.3.txt").read_text())
    return snap, audit(snap, parse_policy(POLICY, source="pools.toml"))


def _of(found, kind):
    return [f for f in found if f.kind == kind]


def _inline_json(fix: str) -> str:
    return re.search(r"<\(echo '(.*?)'\)", fix).group(1)


def test_replicas_on_a_cordoned_dir_move_to_an_open_dir_of_the_same_broker(findings):
    snap, found = findings
    cordoned = {(f.broker, f.evidence["log_dir"]): f for f in _of(found, "replicas_on_cordoned")}
    # broker 1's /data/d2 (kafka-configs) holds orders-1; broker 6 is cordoned whole (its only dir, inventory);
    # broker 4's cordoned /data/d1 holds audit-0, its /data/d3 ("isCordoned") holds nothing
    assert sorted(cordoned) == [(1, "/data/d2"), (4, "/data/d1"), (6, None)]
    d2 = cordoned[1, "/data/d2"]
    assert d2.evidence["partitions"] == ["orders-1"] and d2.evidence["size_bytes"] == 300 * 10**9
    moved = parse_reassignment_json(_inline_json(d2.fix))
    [entry] = moved
    # the same replicas, broker 1's copy into its emptiest open dir (/data/d3: 40 GB; d4 holds 41 GB)
    assert entry.replicas == (2, 5, 1) and entry.log_dirs == ("any", "any", "/data/d3")
    assert "--replica-alter-log-dirs-throttle" in d2.fix
    # broker 4's only open dir is /data/d2
    assert parse_reassignment_json(_inline_json(cordoned[4, "/data/d1"].fix))[0].log_dirs[0] \
        == "/data/d2"
    whole = cordoned[6, None]
    assert whole.evidence["replicas"] == 3 and "poolplan brokers decommission" in whole.fix \
        and "--broker 6" in whole.fix
    # broker 6's cordon is the inventory's alone (the kafka-configs capture sets none): kafka-configs.sh would refuse
    # to delete a config that is not set, so the fix names the inventory
    assert whole.fix.endswith("should serve on: remove its cordon from inventory (cordoned_log_dirs)")
    assert not [f for f in _of(found, "replicas_on_cordoned") if f.broker == 3]  # cordoned, but empty


def test_a_jbod_dir_at_90_percent_is_found_while_its_broker_is_at_a_third(findings):
    snap, found = findings
    [f] = _of(found, "log_dir_over_headroom")
    assert (f.broker, f.evidence["log_dir"], f.evidence["log_dirs"]) == (1, "/data/d1", 4)
    assert f.evidence["utilisation"] == 0.9 and f.evidence["broker_utilisation"] == pytest.approx(0.3203, abs=1e-4)
    assert f.evidence["capacity"] == 10**12  # a quarter of the broker's 4 TB
    [entry] = parse_reassignment_json(_inline_json(f.fix))
    # orders-0 (900 GB) leaves d1 for the emptiest open dir (d2 is cordoned)
    assert (entry.topic, entry.partition, entry.replicas, entry.log_dirs) == \
        ("orders", 0, (1, 2, 5), ("/data/d3", "any", "any"))
    assert not [x for x in _of(found, "utilisation_over_headroom") if x.broker == 1]


def test_topics_are_judged_by_their_own_min_insync_replicas(findings):
    snap, found = findings
    by_topic = {f.topic: f for f in _of(found, "min_isr_after_broker_loss")}
    assert sorted(by_topic) == ["audit"]  # RF 3, min ISR 3; orders and clicks (min ISR 2) survive one loss
    e = by_topic["audit"].evidence
    assert (e["min_insync_replicas"], e["replication_factor"], e["lost_brokers"], e["partitions"]) == \
        (3, 3, [4], ["audit-0"])
    assert "--add-config min.insync.replicas=2" in by_topic["audit"].fix
    assert "--replication-factor 4" in by_topic["audit"].fix


def test_findings_serialise_in_the_contract(findings):
    from pools.audit import findings_from_dict
    from pools.audit.findings import findings_to_json

    snap, found = findings
    text = findings_to_json(found, cluster="k4", taken_at=None)
    assert findings_from_dict(json.loads(text)) == found


def test_a_misplaced_replica_is_fixed_onto_an_open_broker_never_a_cordoned_one():
    from dataclasses import replace

    from pools.snapshot import Broker, ClusterSnapshot, PartitionState, TopicState
    from tests.pools.audit.helpers import CAP, policy

    def fix_target(cordoned: set[int]) -> list[int]:
        brokers = [Broker(b, f"r{(b - 1) % 3 + 1}", CAP, "a" if b <= 4 else "b") for b in range(1, 8)]
        brokers = [replace(b, cordoned=b.id in cordoned) for b in brokers]
        # a-x-0 has a replica on broker 5 (pool b); pool a's brokers 1-4 sit on racks r1, r2, r3, r1
        parts = [PartitionState("a-x", 0, (1, 2, 5), 1, (1, 2, 5), sizes=(10, 10, 10)),
                 PartitionState("b-y", 0, (5, 6, 7), 5, (5, 6, 7), sizes=(10, 10, 10))]
        snap = ClusterSnapshot("c", tuple(brokers), (TopicState("a-x"), TopicState("b-y")), tuple(parts))
        [f] = [f for f in audit(snap, policy()) if f.kind == "replica_outside_pool"]
        if "<(echo" not in f.fix:  # no reassignment repairs it: the fix is a re-plan
            assert f.fix.startswith("poolplan plan ")
            return []
        return json.loads(_inline_json(f.fix))["partitions"][0]["replicas"]

    assert 3 in fix_target(set())  # the rack the partition lacks
    # broker 3 cordoned: [1, 2, 4] would leave the partition on two of the pool's three racks (a rack_shared
    # finding), so no reassignment repairs it; whatever the fix, it never targets broker 3
    assert 3 not in fix_target({3})
