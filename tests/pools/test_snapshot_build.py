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
    assert moving.sizes == (812, None, None)
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
         r"describe\.txt:1: PartitionCount: topic 't' has PartitionCount 2 but its partition lines are 0; expected partitions 0..1"),
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


_HEAD = "Topic: t\tTopicId: x\tPartitionCount: {n}\tReplicationFactor: {rf}\tConfigs: {configs}\n"
_LINE = "\tTopic: t\tPartition: {p}\tLeader: {leader}\tReplicas: {replicas}\tIsr: {isr}{extra}\n"


def _describe(rows, *, n=None, rf=2, configs="") -> str:
    head = _HEAD.format(n=len(rows) if n is None else n, rf=rf, configs=configs)
    return head + "".join(_LINE.format(**{"extra": "", **r}) for r in rows)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_describe([{"p": 0, "leader": 5, "replicas": "5,5", "isr": "5"}]),
         r"describe\.txt:2: Replicas: t-0: expected a non-empty list of distinct broker ids, got \[5, 5\]"),
        (_describe([{"p": 0, "leader": 3, "replicas": "1,2", "isr": "1,2"}]),
         r"describe\.txt:2: Leader: t-0: expected one of the replicas \[1, 2\] or null, got 3"),
        (_describe([{"p": 0, "leader": 1, "replicas": "1,2", "isr": "1,4"}]),
         r"describe\.txt:2: Isr: t-0: expected distinct brokers among the replicas \[1, 2\], got \[1, 4\]"),
        (_describe([{"p": 0, "leader": "none", "replicas": "", "isr": ""}], rf=0),
         r"describe\.txt:2: Replicas: t-0: expected a non-empty list"),
        (_describe([{"p": 0, "leader": 1, "replicas": "1,2,3", "isr": "1,2,3"}]),
         r"describe\.txt:1: ReplicationFactor: topic 't' has ReplicationFactor 2 but partition 0 has 3 replica"),
        (_describe([{"p": -1, "leader": 1, "replicas": "1,2", "isr": "1"}]),
         r"describe\.txt:2: Partition: expected an integer in 0\.\.99999, got '-1'"),
        (_describe([{"p": 0, "leader": 1, "replicas": "1,2", "isr": "1"}, {"p": 0, "leader": 1, "replicas": "1,2", "isr": "1"}]),
         r"describe\.txt:3: Partition: t-0 is described twice"),
        (_describe([{"p": 0, "leader": 1, "replicas": "1,2", "isr": "1"}, {"p": 2, "leader": 1, "replicas": "1,2", "isr": "1"}]),
         r"describe\.txt:1: PartitionCount: .*partition lines are 0,2; expected partitions 0\.\.1"),
        (_describe([{"p": 0, "leader": 1, "replicas": "1,2", "isr": "1"}], configs="min.insync.replicas=two"),
         r"describe\.txt:1: Configs: min\.insync\.replicas: expected an integer in 1\.\.2147483647, got 'two'"),
        (_describe([{"p": 0, "leader": 1, "replicas": "1,2", "isr": "1",
                     "extra": "\tAdding Replicas: 2\tRemoving Replicas: 2"}]),
         r"describe\.txt:2: Adding Replicas: t-0: a replica cannot be both added and removed, got \[2\]"),
        (_describe([{"p": 0, "leader": 1, "replicas": "1,99999999999", "isr": "1"}]),
         r"describe\.txt:2: Replicas: expected a comma-separated list of broker ids"),
    ],
)
def test_impossible_cluster_state_is_rejected_naming_the_line(text, message):
    with pytest.raises(InputError, match=message):
        build_snapshot(text, None, {1: BrokerCapacity(1, 1, 1, 1)}, cluster="c", sources={"describe": "describe.txt"})


def test_a_capture_taken_as_a_reassignment_ends_is_accepted():
    # describe and the reassignment list are two admin calls: 2 already left the replicas, 3 is still "adding"
    text = _describe([{"p": 0, "leader": 1, "replicas": "1,3", "isr": "1,3",
                       "extra": "\tAdding Replicas: 3\tRemoving Replicas: 2"}])
    snap = build_snapshot(text, None, {1: BrokerCapacity(1, 1, 1, 1)}, cluster="c")
    assert snap.partitions[0].replicas == (1, 3) and snap.partitions[0].removing_replicas == (2,)


def test_a_reassignment_in_progress_is_kafka_state_not_an_error():
    # Kafka prints Replicas = target + removing; ReplicationFactor = replicas less the adding ones (TopicCommand)
    text = _describe([{"p": 0, "leader": 1, "replicas": "1,3,2", "isr": "1,2",
                       "extra": "\tAdding Replicas: 3\tRemoving Replicas: 2"},
                      {"p": 1, "leader": 2, "replicas": "2,1", "isr": "2,1"}])
    snap = build_snapshot(text, None, {1: BrokerCapacity(1, 1, 1, 1)}, cluster="c")
    assert snap.partitions[0].reassigning and snap.partitions[0].replicas == (1, 3, 2)


@pytest.mark.parametrize(
    ("size", "message"),
    [(-5, r"size: expected an integer in 0\.\.9223372036854775807, got -5"),
     (2**70, r"size: expected an integer in 0\.\.9223372036854775807, got 1180591620717411303424")],
)
def test_log_dir_sizes_must_be_java_longs(size, message):
    text = _describe([{"p": 0, "leader": 1, "replicas": "1", "isr": "1"}], rf=1)
    log_dirs = ('{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/d","error":null,"partitions":'
                f'[{{"partition":"t-0","size":{size},"offsetLag":0,"isFuture":false}}]}}]}}]}}')
    with pytest.raises(InputError, match=message):
        build_snapshot(text, log_dirs, {1: BrokerCapacity(1, 1, 1, 1)}, cluster="c")
