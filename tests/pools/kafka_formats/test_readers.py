"""kafka-topics / kafka-log-dirs describe output, broker inventories and leader-election files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pools.errors import InputError
from pools.kafka_formats import (
    BrokerCapacity,
    capacity_for,
    format_leader_election_json,
    parse_broker_sets_json,
    parse_capacity_json,
    parse_inventory_toml,
    parse_leader_election_json,
    parse_log_dirs,
    parse_topics_describe,
    replica_sizes,
)

ROOT = Path(__file__).resolve().parents[3]
FORMATS = ROOT / "tests" / "data" / "kafka-formats"


def test_topics_describe_38_with_elr_adding_and_leader_none() -> None:
    orders, ledger = parse_topics_describe((FORMATS / "kafka-topics-describe-3.8.txt").read_text())
    assert orders.configs == {"cleanup.policy": "delete", "retention.ms": "604800000", "min.insync.replicas": "2"}
    assert (orders.partition_count, orders.replication_factor, orders.topic_id) == (3, 3, "a3vf0OqaSN6sqjtAVfrOhw")
    p2 = orders.partitions[2]
    assert (p2.leader, p2.isr, p2.elr, p2.last_known_elr) == (None, (), (102,), (100,))
    assert orders.partitions[0].elr is None
    assert ledger.configs == {}
    assert (ledger.partitions[0].adding_replicas, ledger.partitions[0].removing_replicas) == ((103,), (102,))


def test_topics_describe_36_marked_for_deletion_and_no_elr() -> None:
    orders, old = parse_topics_describe((FORMATS / "kafka-topics-describe-3.6.txt").read_text())
    assert orders.partitions[1].isr == (2,) and orders.partitions[1].elr is None
    assert old.marked_for_deletion and old.partitions[0].marked_for_deletion and old.configs == {}


def test_topics_describe_2x_spelling_unknown_keys_and_partition_only_lines() -> None:
    text = (
        "WARN [AdminClient] The DescribeTopicPartitions API is not supported, using Metadata API.\n"
        "Topic:t\tPartitionCount:1\tReplicationFactor:2\tConfigs:leader.replication.throttled.replicas=0:1,0:2,retention.ms=5\n"
        "\tTopic: t\tPartition: 0\tLeader: -1\tReplicas: 1,2\tIsr: \tOffline: 1\tFutureKey: x\n"
        "\tTopic: u\tPartition: 3\tLeader: 2\tReplicas: 2,1\tIsr: 2\n"
    )
    t, u = parse_topics_describe(text)
    assert t.configs == {"leader.replication.throttled.replicas": "0:1,0:2", "retention.ms": "5"}
    assert t.partitions[0].leader is None and t.partitions[0].isr == ()
    assert (u.topic_id, u.partition_count, u.replication_factor, u.partitions[0].partition) == (None, 1, 2, 3)


def test_log_dirs_splits_on_last_dash_skips_future_and_reports_errors() -> None:
    report = parse_log_dirs((FORMATS / "kafka-log-dirs-describe.txt").read_text())
    sizes = replica_sizes(report)
    assert sizes[("my-topic-with-dashes", 12)] == {101: 394}
    assert sizes[("orders", 1)] == {101: 39_000_000_000}  # the 1.2 GB future copy is not counted
    assert report.log_dir_errors == ((102, "/data/d1", "org.apache.kafka.common.errors.KafkaStorageException"),)
    future = [r for b in report.brokers for d in b.log_dirs for r in d.replicas if r.is_future]
    assert [(r.topic, r.partition, r.size) for r in future] == [("orders", 1, 1_200_000_000)]


def test_cruise_control_capacity_units_and_jbod() -> None:
    caps = parse_capacity_json((FORMATS / "cruise-control-capacity.json").read_text())
    assert caps[-1] == BrokerCapacity(-1, 3_800_000 * 2**20, 125_000 * 1024, 125_000 * 1024)
    assert caps[7].disk == 2 * 1_900_000 * 2**20 and caps[7].cpu == 16.0 and caps[7].nw_in == 250_000 * 1024
    assert capacity_for(caps, 3).broker_id == 3 and capacity_for(caps, 3).disk == caps[-1].disk
    with pytest.raises(InputError, match="broker 3 has no entry"):
        capacity_for({7: caps[7]}, 3)


def test_broker_sets() -> None:
    sets = parse_broker_sets_json((FORMATS / "cruise-control-brokerSets.json").read_text())
    assert sets == {"payments": [0, 1, 2], "shared": [3, 4, 5, 6, 7]}


def test_inventory_toml_example_and_defaults() -> None:
    inv = parse_inventory_toml((ROOT / "conf" / "brokers.toml").read_text())
    assert sorted(inv) == [1, 2, 3, 4, 5, 6]
    assert inv[4].disk == 8_000_000_000_000 and inv[5].disk == 4_000_000_000_000
    assert inv[1].pool == "payments" and inv[1].rack == "r1" and inv[1].max_replicas == 4000


def test_leader_election_round_trip() -> None:
    text = format_leader_election_json([("b", 1), ("a", 10), ("a", 2), ("a", 2)])
    assert text == '{"partitions":[{"topic":"a","partition":2},{"topic":"a","partition":10},{"topic":"b","partition":1}]}'
    assert parse_leader_election_json(text) == [("a", 2), ("a", 10), ("b", 1)]
    with pytest.raises(InputError, match="duplicate partition a-2"):
        parse_leader_election_json('{"partitions":[{"topic":"a","partition":2},{"topic":"a","partition":2}]}')


def _reassignment(text: str, source: str) -> object:
    from pools.kafka_formats import parse_reassignment_json

    return parse_reassignment_json(text)


def _topics_to_move(text: str, source: str) -> object:
    from pools.kafka_formats import parse_topics_to_move_json

    return parse_topics_to_move_json(text, "1,2")


READERS = {
    "topics-describe": lambda text, source: parse_topics_describe(text, source=source),
    "log-dirs": lambda text, source: parse_log_dirs(text, source=source),
    "capacity": lambda text, source: parse_capacity_json(text, source=source),
    "broker-sets": lambda text, source: parse_broker_sets_json(text, source=source),
    "brokers": lambda text, source: parse_inventory_toml(text, source=source),
    "leader-election": lambda text, source: parse_leader_election_json(text, source=source),
    "reassignment": _reassignment,
    "topics-to-move": _topics_to_move,
}

MALFORMED = [
    ("topics-describe-bad-replicas.txt", r"topics-describe-bad-replicas.txt:2: Replicas: expected a comma-separated list of broker ids, got '1,b'"),
    ("topics-describe-bad-count.txt", r"topics-describe-bad-count.txt:1: PartitionCount: expected an integer in 0..100000, got 'two'"),
    ("topics-describe-no-leader.txt", r"topics-describe-no-leader.txt:1: Leader: missing"),
    ("topics-describe-wrong-file.txt", r"topics-describe-wrong-file.txt:1: expected 'Topic: <name>' lines"),
    ("log-dirs-bad-partition-name.txt", r"log-dirs-bad-partition-name.txt:3: \$.brokers\[0\].logDirs\[0\].partitions\[0\].partition: expected '<topic>-<partition>', got 'orders'"),
    ("log-dirs-no-json.txt", r"log-dirs-no-json.txt: expected a JSON line"),
    ("log-dirs-bad-broker.txt", r"log-dirs-bad-broker.txt:2: \$.brokers\[0\].broker: expected an integer in 0..2147483647, got '0'"),
    ("log-dirs-truncated.txt", r"log-dirs-truncated.txt:1: column \d+: invalid JSON"),
    ("capacity-bad-disk.json", r"capacity-bad-disk.json: brokerCapacities\[0\].capacity.DISK: expected a non-negative number"),
    ("capacity-bad-broker-id.json", r"capacity-bad-broker-id.json: brokerCapacities\[0\].brokerId: expected a broker id"),
    ("broker-sets-shared-broker.json", r"broker-sets-shared-broker.json: brokerSets\[1\].brokerIds\[0\]: broker 2 is already in broker set 'a'"),
    ("brokers-bad-rack.toml", r"brokers-bad-rack.toml: broker\[3\].rack: expected a string, got 4"),
    ("brokers-missing-disk.toml", r"brokers-missing-disk.toml: broker\[0\].disk_bytes: missing"),
    ("brokers-duplicate-id.toml", r"brokers-duplicate-id.toml: broker\[1\].id: broker id 1 is listed twice"),
    ("brokers-bad-syntax.toml", r"brokers-bad-syntax.toml: invalid TOML"),
    ("leader-election-no-partition.json", r"leader-election-no-partition.json: partitions\[0\]: No such field exists: `partition`"),
    ("leader-election-no-partitions.json", r'leader-election-no-partitions.json: Replica election data is missing "partitions" field'),
    ("reassignment-string-replica.json", r'^Error: Expected `Integer` value, received "2"$'),
    ("reassignment-log-dirs-length.json", r"^Error: Size of replicas list \[1, 2\] is different from size of log dirs list \[any\] for partition orders-0$"),
    ("reassignment-truncated.json", r"^Error: com.fasterxml.jackson.core.io.JsonEOFException: Unexpected end-of-input: expected close marker for Array"),
    ("topics-to-move-no-topic.json", r"^Error: No such field exists: `topic`$"),
]


@pytest.mark.parametrize(("name", "message"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_files_are_rejected_with_file_and_field(name: str, message: str) -> None:
    path = ROOT / "tests" / "data" / "malformed" / name
    kind = next(k for k in sorted(READERS, key=len, reverse=True) if name.startswith(k))
    with pytest.raises(InputError, match=message):
        READERS[kind](path.read_text(), name)


def test_every_malformed_fixture_is_exercised() -> None:
    names = {p.name for p in (ROOT / "tests" / "data" / "malformed").iterdir()}
    assert names == {m[0] for m in MALFORMED}


def test_package_reexports_every_public_reader() -> None:
    import pools.kafka_formats as kf
    from pools.kafka_formats import consumer_groups

    assert kf.parse_consumer_groups_describe is consumer_groups.parse_consumer_groups_describe
    assert kf.parse_consumer_group_members is consumer_groups.parse_consumer_group_members
    assert all(hasattr(kf, name) for name in kf.__all__)
