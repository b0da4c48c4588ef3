"""`poolplan place`: tables, reassignment JSON, snapshot pools, added partitions and option errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.placement import assign_replicas_to_brokers, striped_place
from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState, TopicState, save_snapshot

_CAP = Capacity(nw_in=1e8, nw_out=1e8, disk=1e12, replicas=4000)


@pytest.fixture()
def snapshot(tmp_path: Path) -> Path:
    """Brokers 1-6 in pool "gold" over racks a/b/c, 7-9 in "bronze"; topic "orders" with 3 partitions."""
    brokers = [Broker(i, "abc"[i % 3], _CAP, "gold" if i <= 6 else "bronze") for i in range(1, 10)]
    orders = [PartitionState("orders", p, r, r[0], r) for p, r in enumerate([(4, 5, 6), (5, 6, 1), (6, 1, 2)])]
    snap = ClusterSnapshot("test", tuple(brokers), (TopicState("orders"),), tuple(orders))
    return save_snapshot(snap, tmp_path / "snapshot.json")


def _written(path: Path) -> list[tuple[str, int, list[int]]]:
    doc = json.loads(path.read_text())
    assert doc["version"] == 1
    return [(p["topic"], p["partition"], p["replicas"]) for p in doc["partitions"]]


def test_table_shows_javadoc_example_and_counts(run_cli) -> None:
    code, out, err = run_cli(
        "place", "--algorithm", "admin-utils", "--brokers", "0:rack1,1:rack3,2:rack3,3:rack2,4:rack2,5:rack1",
        "--topic", "t", "--partitions", "7", "--replication-factor", "3", "--start-index", "0",
    )
    assert code == 0, err
    assert "0,3,1" in out and "0,4,2" in out
    counts = [line.split("│")[1:5] for line in out.splitlines() if line.count("│") == 5]
    by_broker = {int(c[0]): (int(c[2]), int(c[3])) for c in counts}
    assert by_broker == {0: (4, 2), 1: (3, 1), 2: (4, 1), 3: (3, 1), 4: (4, 1), 5: (3, 1)}


def test_out_writes_reassignment_json_of_striped_placement(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, stdout, err = run_cli(
        "place", "--brokers", "1:a,2:b,3:c,4:a,5:b,6:c", "--fenced", "6", "--topic", "new", "--partitions", "8",
        "--replication-factor", "3", "--seed", "7", "--out", out,
    )
    assert code == 0, err
    # The controller lists brokers in HashMap<Integer> order: ascending for small ids.
    expected = striped_place([(b, "abc"[(b - 1) % 3], b == 6) for b in range(1, 7)], 8, 3, 7)
    assert _written(out) == [("new", p, r) for p, r in enumerate(expected)]
    assert out.read_text().endswith("]}\n")
    assert "wrote 8 partitions of new" in stdout
    code, _, err = run_cli("place", "--brokers", "1,2", "--topic", "n", "--partitions", "1",
                           "--replication-factor", "1", "--out", out)
    assert code == 2 and "already exists" in err


def test_snapshot_pool_restricts_candidates(run_cli, snapshot: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, _, err = run_cli("place", "--snapshot", snapshot, "--pool", "bronze", "--topic", "logs",
                           "--partitions", "6", "--replication-factor", "2", "--out", out)
    assert code == 0, err
    assert {b for _, _, r in _written(out) for b in r} == {7, 8, 9}


def test_add_partitions_starts_where_admin_zk_client_did(run_cli, snapshot: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, _, err = run_cli("place", "--snapshot", snapshot, "--pool", "gold", "--topic", "orders",
                           "--add-partitions", "--partitions", "6", "--algorithm", "admin-utils", "--out", out)
    assert code == 0, err
    # Partition 0 leads on broker 4: start index 3 in [1..6]; ids continue at 3; RF stays 3.
    gold = [(b, "abc"[b % 3]) for b in range(1, 7)]
    expected = assign_replicas_to_brokers(gold, 3, 3, fixed_start_index=3, start_partition_id=3)
    assert _written(out) == [("orders", p, r) for p, r in expected.items()]


def test_add_partitions_striped_numbers_from_current_count(run_cli, snapshot: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, _, err = run_cli("place", "--snapshot", snapshot, "--topic", "orders", "--add-partitions",
                           "--partitions", "5", "--out", out)
    assert code == 0, err
    assert [p for _, p, _ in _written(out)] == [3, 4]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--topic", "t", "--partitions", "3", "--replication-factor", "1"), "exactly one of --brokers"),
        (("--brokers", "1,2", "--pool", "x", "--topic", "t", "--partitions", "1", "--replication-factor", "1"),
         "--pool selects brokers of --snapshot"),
        (("--brokers", "1,x", "--topic", "t", "--partitions", "1", "--replication-factor", "1"),
         "'x' is not a broker id"),
        (("--brokers", "1,1:a", "--topic", "t", "--partitions", "1", "--replication-factor", "1"), "listed twice"),
        (("--brokers", "1,2", "--topic", "t", "--partitions", "1"), "--replication-factor is required"),
        (("--brokers", "1,2", "--topic", "t", "--partitions", "1", "--replication-factor", "3"),
         "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered."),
        (("--algorithm", "admin-utils", "--brokers", "1:a,2", "--topic", "t", "--partitions", "1",
          "--replication-factor", "1"), "Not all brokers have rack information"),
        (("--algorithm", "admin-utils", "--brokers", "1,2", "--fenced", "2", "--topic", "t", "--partitions", "1",
          "--replication-factor", "1"), "only matter to the striped placer"),
        (("--brokers", "1,2", "--fenced", "1,2", "--topic", "t", "--partitions", "1", "--replication-factor", "1"),
         "All brokers are currently fenced."),
        (("--brokers", "1,2", "--start-index", "1", "--topic", "t", "--partitions", "1", "--replication-factor", "1"),
         "only applies to AdminUtils"),
        (("--brokers", "1,2", "--topic", "t", "--partitions", "0", "--replication-factor", "1"),
         "invalid non-positive value"),
    ],
)
def test_bad_options_exit_2_with_message(run_cli, args, message) -> None:
    code, _, err = run_cli("place", *args)
    assert code == 2
    assert message in " ".join(err.split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--pool", "none", "--topic", "t", "--partitions", "1", "--replication-factor", "1"),
         "pool 'none' has no brokers (pools: bronze, gold)"),
        (("--topic", "orders", "--partitions", "1", "--replication-factor", "1"), "already exists"),
        (("--topic", "nope", "--add-partitions", "--partitions", "4"), "has no partitions in the snapshot"),
        (("--topic", "orders", "--add-partitions", "--partitions", "3"),
         "The number of partitions for a topic can only be increased. Topic orders currently has 3 partitions, "
         "3 would not be an increase."),
        (("--topic", "orders", "--add-partitions", "--partitions", "4", "--replication-factor", "2"),
         "keep the topic's replication factor 3"),
    ],
)
def test_snapshot_errors_exit_2(run_cli, snapshot: Path, args, message) -> None:
    code, _, err = run_cli("place", "--snapshot", snapshot, *args)
    assert code == 2
    assert message in " ".join(err.split())


@pytest.mark.parametrize(("topic", "reason"), [
    ("bad topic!", "'bad topic!' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
    ("", "the empty string is not allowed"),
    (".", "'.' is not allowed"),
    ("..", "'..' is not allowed"),
    ("t" * 250, f"the length of '{'t' * 250}' is longer than the max allowed length 249"),
])
def test_a_topic_name_kafka_rejects_exits_2_with_kafkas_reason(run_cli, tmp_path: Path, topic, reason) -> None:
    out = tmp_path / "r.json"
    code, stdout, err = run_cli("place", "--brokers", "1,2,3", "--topic", topic, "--partitions", "3",
                                "--replication-factor", "2", "--out", out)
    assert code == 2 and err.strip() == f"error: --topic: expected a legal topic name: Topic name is invalid: {reason}"
    assert not out.exists() and stdout == ""


def test_the_longest_legal_topic_name_is_placed(run_cli) -> None:
    code, _, err = run_cli("place", "--brokers", "1,2,3", "--topic", "t" * 249, "--partitions", "1",
                           "--replication-factor", "1")
    assert code == 0, err
