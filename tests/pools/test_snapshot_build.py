"""build_snapshot on Kafka's example outputs, on malformed ones, and with both inventory kinds."""

from __future__ import annotations

import pytest

from pools.errors import InputError
from pools.kafka_formats.cruise_control import parse_capacity_json
from pools.kafka_formats.inventory import BrokerCapacity, parse_inventory_toml
from pools.snapshot import load_snapshot, save_snapshot
from pools.snapshot_build import DEFAULT_MAX_REPLICAS, build_snapshot

INVENTORY = """
[defaults]
disk_bytes = 4_000_000_000_000
nw_in_Bps = 125_000_000
nw_out_Bps = 125_000_000

[[broker]]
id = 100
rack = "r1"
pool = "core"
max_replicas = 2000

[[broker]]
id = 101
rack = "r2"
pool = "core"

[[broker]]
id = 102
rack = "r3"
"""


@pytest.fixture()
def formats(data_dir):
    d = data_dir / "kafka-formats"
    return {
        "describe": (d / "kafka-topics-describe-3.8.txt").read_text(),
        "describe36": (d / "kafka-topics-describe-3.6.txt").read_text(),
        "log_dirs": (d / "kafka-log-dirs-describe.txt").read_text(),
        "capacity": (d / "cruise-control-capacity.json").read_text(),
    }


def _snapshot(formats, **kw):
    return build_snapshot(formats["describe"], formats["log_dirs"], parse_inventory_toml(INVENTORY),
                          cluster="prod", **kw)


def test_examples_join(formats):
    snap = _snapshot(formats, taken_at="2026-11-02T00:00:00Z")
    assert snap.cluster == "prod" and snap.taken_at == "2026-11-02T00:00:00Z"
    assert [(b.id, b.rack, b.pool, b.capacity.replicas) for b in snap.brokers] == [
        (100, "r1", "core", 2000), (101, "r2", "core", DEFAULT_MAX_REPLICAS), (102, "r3", None, DEFAULT_MAX_REPLICAS)]
    parts = {(p.topic, p.partition): p for p in snap.partitions}
    orders0 = parts[("orders", 0)]
    assert orders0.replicas == (101, 100, 102)
    assert orders0.log_dirs == ("/data/d1", "/var/lib/kafka/data", None)  # 102's dir is offline
    assert orders0.sizes == (41203847000, 41203847168, None)
    assert orders0.size_bytes == 41203847168


def test_future_replica_is_not_double_counted(formats):
    orders1 = {(p.topic, p.partition): p for p in _snapshot(formats).partitions}[("orders", 1)]
    assert orders1.replicas == (102, 101, 100)
    assert orders1.sizes == (None, 39000000000, None)
    assert orders1.log_dirs == (None, "/data/d2", None)


def test_leader_none_reassignment_elr_and_unknown_broker_are_kept(formats):
    snap = _snapshot(formats)
    parts = {(p.topic, p.partition): p for p in snap.partitions}
    offline = parts[("orders", 2)]
    assert offline.leader is None and offline.isr == () and offline.elr == (102,) and offline.last_known_elr == (100,)
    moving = parts[("payments.ledger", 0)]
    assert moving.adding_replicas == (103,) and moving.removing_replicas == (102,) and moving.reassigning
    assert 103 in moving.replicas and 103 not in snap.broker_ids
    assert moving.sizes == (812, None, None, None)
    assert parts[("orders", 0)].elr is None


def test_topics_and_log_dir_errors(formats):
    snap = _snapshot(formats)
    orders = snap.topic_by_name["orders"]
    assert orders.topic_id == "a3vf0OqaSN6sqjtAVfrOhw"
    assert orders.retention_ms == 604800000 and orders.min_insync_replicas == 2
    assert snap.topic_by_name["payments.ledger"].configs == {}
    assert [(e.broker, e.log_dir, e.error) for e in snap.log_dir_errors] == [
        (102, "/data/d1", "org.apache.kafka.common.errors.KafkaStorageException")]
    # a replica listed by log-dirs for a topic the describe output lacks is ignored
    assert "my-topic-with-dashes" not in snap.topic_by_name


def test_without_log_dirs_there_are_no_sizes(formats):
    snap = build_snapshot(formats["describe"], None, parse_inventory_toml(INVENTORY), cluster="prod")
    assert all(p.sizes == () and p.log_dirs == () for p in snap.partitions)
    assert snap.log_dir_errors == ()


def test_kafka_36_output_and_deletion_mark(formats):
    snap = build_snapshot(formats["describe36"], None, {1: BrokerCapacity(1, 1, 1, 1), 2: BrokerCapacity(2, 1, 1, 1)},
                          cluster="old")
    assert snap.topic_by_name["old.events"].marked_for_deletion
    assert all(p.elr is None for p in snap.partitions)


def test_cruise_control_default_covers_every_broker_seen(formats):
    snap = build_snapshot(formats["describe"], formats["log_dirs"], parse_capacity_json(formats["capacity"]),
                          cluster="cc")
    assert snap.broker_ids == (7, 100, 101, 102, 103)
    b = snap.broker_by_id[100]
    assert b.capacity.disk == 3_800_000 * 1024 * 1024 and b.capacity.nw_in == 125_000 * 1024 and b.rack is None
    assert snap.broker_by_id[7].capacity.disk == 2 * 1_900_000 * 1024 * 1024


def test_round_trips_through_snapshot_json(formats, tmp_path):
    snap = _snapshot(formats, taken_at="2026-11-02T00:00:00Z")
    path = save_snapshot(snap, tmp_path / "snapshot.json")
    again = load_snapshot(path)
    assert again == snap


def test_same_input_same_bytes(formats, tmp_path):
    a = save_snapshot(_snapshot(formats), tmp_path / "a.json").read_bytes()
    b = save_snapshot(_snapshot(formats), tmp_path / "b.json").read_bytes()
    assert a == b


@pytest.mark.parametrize(
    ("describe", "log_dirs", "message"),
    [
        ("Topic: t\tTopicId: x\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: \n"
         "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n", None,
         r"describe\.txt: topic 't': PartitionCount is 2 but 1 partition line\(s\) follow"),
        ("\tTopic: t\tPartition: 0\tLeader: x\tReplicas: 1\tIsr: 1\n", None,
         r"describe\.txt:1: Leader: expected a broker id or 'none', got 'x'"),
        ("\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n", "Querying brokers\n{\"version\":1,\n",
         r"log-dirs\.txt:2: column \d+: invalid JSON"),
        ("\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n", "Querying brokers for log directories\n",
         r"log-dirs\.txt: expected a JSON line"),
    ],
)
def test_malformed_inputs_name_the_file(describe, log_dirs, message):
    with pytest.raises(InputError, match=message):
        build_snapshot(describe, log_dirs, {1: BrokerCapacity(1, 1, 1, 1)}, cluster="c",
                       sources={"describe": "describe.txt", "log_dirs": "log-dirs.txt"})


def test_empty_inventory_is_an_error():
    with pytest.raises(InputError, match="inventory: expected at least one broker"):
        build_snapshot("", None, {}, cluster="c")


def test_snapshot_of_the_sample_matches_its_truth():
    import json

    from planner.sample import SampleSpec, sample_files

    files = dict(sample_files(SampleSpec(seed=1, brokers=6, topics=6, days=2)))
    truth = json.loads(files["truth.json"])
    final = sorted(p for p in files if p.startswith("kafka/log-dirs/"))[-1]
    snap = build_snapshot(files["kafka/topics-describe.txt"], files[final], parse_inventory_toml(files["brokers.toml"]),
                          cluster="sample")
    assert [(b.id, b.rack, b.pool) for b in snap.brokers] == [(b["id"], b["rack"], b["pool"]) for b in truth["brokers"]]
    storage: dict[str, int] = {}
    for p in snap.partitions:
        storage[p.topic] = storage.get(p.topic, 0) + p.size_bytes
    assert storage == {t: v["storage_bytes"] for t, v in truth["topics"].items()}
    assert {t.topic: len(snap.partitions_by_topic[t.topic]) for t in snap.topics} == {
        t: v["partitions"] for t, v in truth["topics"].items()}
