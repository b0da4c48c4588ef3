"""build_snapshot on Kafka's example outputs, on malformed ones, and with both inventory kinds."""

from __future__ import annotations

import pytest

from pools.errors import InputError
from pools.health import cluster_health
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

    files = dict(sample_files(SampleSpec(seed=1, brokers=6, topics=6, days=2, step_s=60)))
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


KAFKA4_INVENTORY = """
[defaults]
disk_bytes = 4_000_000_000_000
nw_in_Bps = 125_000_000
nw_out_Bps = 125_000_000

[[broker]]
id = 1
rack = "r1"
[[broker]]
id = 2
rack = "r2"
[[broker]]
id = 3
rack = "r3"
[[broker]]
id = 4
rack = "r1"
[[broker]]
id = 5
rack = "r2"
[[broker]]
id = 6
rack = "r3"
cordoned_log_dirs = ["/data/d1"]
"""


def _kafka4(data_dir, inventory=KAFKA4_INVENTORY, configs=True):
    d = data_dir / "kafka-formats"
    return build_snapshot(
        (d / "kafka-topics-describe-4.3.txt").read_text(), (d / "kafka-log-dirs-describe-4.3.txt").read_text(),
        parse_inventory_toml(inventory), cluster="k4",
        broker_configs_text=(d / "kafka-configs-describe-brokers-4.3.txt").read_text() if configs else None)


def test_kafka_4_3_cordons_join_configs_log_dirs_and_inventory(data_dir, tmp_path):
    snap = _kafka4(data_dir)
    b = snap.broker_by_id
    assert b[1].log_dirs == ("/data/d1", "/data/d2", "/data/d3", "/data/d4")  # a 4-dir JBOD broker
    assert (b[1].cordoned, b[1].cordoned_log_dirs) == (False, ("/data/d2",))  # kafka-configs
    assert (b[2].cordoned, b[2].cordoned_log_dirs) == (False, ())
    assert b[3].cordoned  # cordoned.log.dirs=*
    assert not b[4].cordoned and b[4].cordoned_log_dirs == ("/data/d1", "/data/d3")  # configs + "isCordoned"; d2 open
    assert b[6].cordoned and b[6].cordoned_log_dirs == ("/data/d1",)  # the inventory cordons its only dir
    assert not b[1].log_dir_cordoned("/data/d1") and b[1].log_dir_cordoned("/data/d2")
    path = save_snapshot(snap, tmp_path / "s.json")
    assert load_snapshot(path) == snap and save_snapshot(load_snapshot(path), tmp_path / "t.json").read_bytes() \
        == path.read_bytes()


def test_without_configs_only_the_capture_and_inventory_cordon(data_dir):
    snap = _kafka4(data_dir, configs=False)
    assert [(b.id, b.cordoned, b.cordoned_log_dirs) for b in snap.brokers if b.cordoned or b.cordoned_log_dirs] \
        == [(4, False, ("/data/d3",)), (6, True, ("/data/d1",))]


def test_tiered_topics_and_min_isr_from_configs(data_dir):
    topics = _kafka4(data_dir).topic_by_name
    clicks, orders, audit = topics["clicks"], topics["orders"], topics["audit"]
    assert clicks.remote_storage_enabled and not orders.remote_storage_enabled
    assert (clicks.local_retention_ms, clicks.retention_ms) == (86_400_000, 864_000_000)  # a tenth kept locally
    assert clicks.local_retention_bytes is None and orders.local_retention_ms is None
    assert (orders.min_insync_replicas, audit.min_insync_replicas, clicks.min_insync_replicas) == (2, 3, 2)


def test_a_cordon_on_a_dir_the_broker_lacks_is_an_error(data_dir):
    d = data_dir / "kafka-formats"
    configs = "Dynamic configs for broker 2 are:\n  cordoned.log.dirs=data/d1 sensitive=false synonyms={}\n"
    with pytest.raises(InputError, match=r"^cfg.txt: broker 2: cordoned.log.dirs: 'data/d1' is not one of its log "
                                         r"dirs \['/data/d1'\]"):
        build_snapshot((d / "kafka-topics-describe-4.3.txt").read_text(),
                       (d / "kafka-log-dirs-describe-4.3.txt").read_text(), parse_inventory_toml(KAFKA4_INVENTORY),
                       cluster="k4", broker_configs_text=configs, sources={"broker_configs": "cfg.txt"})


def test_an_inventory_cordon_on_a_dir_the_broker_lacks_is_an_error_too(data_dir):
    typo = KAFKA4_INVENTORY.replace('cordoned_log_dirs = ["/data/d1"]', 'cordoned_log_dirs = ["/data/d9"]')
    with pytest.raises(InputError, match=r"^inv.toml: broker 6: cordoned_log_dirs: '/data/d9' is not one of its log "
                                         r"dirs \['/data/d1'\] \(kafka-log-dirs.sh\)$"):
        d = data_dir / "kafka-formats"
        build_snapshot((d / "kafka-topics-describe-4.3.txt").read_text(),
                       (d / "kafka-log-dirs-describe-4.3.txt").read_text(), parse_inventory_toml(typo),
                       cluster="k4", sources={"inventory": "inv.toml"})


def test_each_cordon_names_its_source(data_dir):
    d = data_dir / "kafka-formats"
    snap = build_snapshot((d / "kafka-topics-describe-4.3.txt").read_text(),
                          (d / "kafka-log-dirs-describe-4.3.txt").read_text(), parse_inventory_toml(KAFKA4_INVENTORY),
                          cluster="k4", broker_configs_text=(d / "kafka-configs-describe-brokers-4.3.txt").read_text(),
                          sources={"inventory": "inv.toml", "broker_configs": "cfg.txt", "log_dirs": "dirs.json"})
    b = snap.broker_by_id
    assert b[1].cordon_source("/data/d2") == "cfg.txt (cordoned.log.dirs=/data/d2)"
    assert b[3].cordon_source() == "cfg.txt (cordoned.log.dirs=*)"
    assert b[4].cordon_source("/data/d3") == "cfg.txt (cordoned.log.dirs=/data/d1,/data/d3); dirs.json (isCordoned)"
    assert b[6].cordon_source() == "inv.toml (cordoned_log_dirs)" and b[2].cordon_source() == ""
    assert cluster_health(snap).cordoned[3] == "cordoned: all log dirs, by cfg.txt (cordoned.log.dirs=*)"


@pytest.mark.parametrize("field, value, expected", [
    ("cordon_sources", [["*"]], "brokers[0].cordon_sources[0]: expected [log dir or \"*\", source], got ['*']"),
    ("cordoned", "yes", "brokers[0].cordoned: expected true or false, got 'yes'"),
    ("cordoned_log_dirs", ["/d1", 3], "brokers[0].cordoned_log_dirs[1]: expected a log dir path, got 3"),
    ("log_dirs", "/d1", "brokers[0].log_dirs: expected a JSON array"),
    ("drained", True, "brokers[0].drained: unknown key"),
])
def test_snapshot_broker_cordon_fields_are_validated_on_read(field, value, expected):
    from pools.snapshot import snapshot_from_dict
    doc = {"cluster": "c", "partitions": [], "brokers": [
        {"id": 1, "rack": None, "capacity": {"nw_in": 1, "nw_out": 1, "disk": 1, "replicas": 1}, field: value}]}
    with pytest.raises(InputError) as err:
        snapshot_from_dict(doc, source="s.json")
    assert str(err.value) == f"s.json: {expected}"


def test_tiered_config_values_kafka_rejects_are_errors():
    from pools.snapshot import topic_config_problem
    assert topic_config_problem({"local.retention.ms": "-3"})[0] == "local.retention.ms"
    assert topic_config_problem({"remote.storage.enable": "yes"}) == (
        "remote.storage.enable", "expected true or false, got 'yes'")
    assert topic_config_problem({"local.retention.bytes": "-2", "remote.storage.enable": "TRUE"}) is None


def test_log_dir_capacities_come_from_the_inventory_and_are_checked_against_the_capture(data_dir, tmp_path):
    from pools.kafka_formats.cruise_control import parse_capacity_json
    from pools.pool_rules import log_dir_capacity

    d = data_dir / "kafka-formats"
    sized = KAFKA4_INVENTORY.replace('id = 1\n', 'id = 1\nlog_dir_capacities = { "/data/d1" = 2_000_000_000_000, '
                                     '"/data/d2" = 1_000_000_000_000, "/data/d3" = 500_000_000_000, '
                                     '"/data/d4" = 500_000_000_000 }\n', 1)
    inventory = parse_inventory_toml(sized, source="inv.toml")
    assert inventory[1].disk == 4 * 10**12 and inventory[1].log_dir_capacities[0] == ("/data/d1", 2 * 10**12)

    def build(inv):
        return build_snapshot((d / "kafka-topics-describe-4.3.txt").read_text(),
                              (d / "kafka-log-dirs-describe-4.3.txt").read_text(), inv, cluster="k4",
                              sources={"inventory": "inv.toml"})

    snap = build(inventory)
    b1 = snap.broker_by_id[1]
    assert (log_dir_capacity(b1, "/data/d1"), log_dir_capacity(b1, "/data/d4")) == (2e12, 5e11)
    assert load_snapshot(save_snapshot(snap, tmp_path / "s.json")) == snap
    with pytest.raises(InputError, match=r"^inv.toml: broker\[0\].log_dir_capacities: the dirs sum to 3000 bytes, "
                                         r"not its disk_bytes 4000$"):
        parse_inventory_toml('[[broker]]\nid = 1\ndisk_bytes = 4000\nnw_in_Bps = 1\nnw_out_Bps = 1\n'
                             'log_dir_capacities = { "/a" = 1000, "/b" = 2000 }\n', source="inv.toml")
    typo = sized.replace('"/data/d4" = 500', '"/data/d9" = 500')
    with pytest.raises(InputError, match=r"^inv.toml: broker 1: log_dir_capacities: '/data/d9' is not one of its"):
        build(parse_inventory_toml(typo, source="inv.toml"))
    # Cruise Control's capacityJBOD.json: MiB per dir
    cc = parse_capacity_json('{"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": {"/a": "100", '
                             '"/b": "300"}, "CPU": "100", "NW_IN": "1000", "NW_OUT": "1000"}}]}')
    assert cc[1].log_dir_capacities == (("/a", 100 * 2**20), ("/b", 300 * 2**20)) and cc[1].disk == 400 * 2**20
