"""The bundle for the sample cluster: Kafka-valid files that take the snapshot exactly to the plan's target."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from planner.emit import BatchLimits, EmitOptions, build_bundle, write_bundle
from pools.errors import InputError
from pools.kafka_formats import calculate_throttles, parse_leader_election_json, parse_reassignment_json
from pools.plan_file import Reason, load_plan
from pools.snapshot import load_snapshot
from pools.units import format_bytes

DATA = Path(__file__).resolve().parents[2] / "data" / "emit"


@pytest.fixture(scope="module")
def plan():
    return load_plan(DATA / "plan.json")


@pytest.fixture(scope="module")
def snapshot():
    return load_snapshot(DATA / "snapshot.json")


def _cluster(snapshot) -> dict:
    topics: dict[str, list] = {}
    for p in sorted(snapshot.partitions, key=lambda p: (p.topic, p.partition)):
        topics.setdefault(p.topic, []).append(list(p.replicas))
    return {"brokers": list(snapshot.broker_ids), "topics": topics}


@pytest.mark.parametrize("leader_preserving", [False, True])
@pytest.mark.parametrize("limits", [BatchLimits(), BatchLimits(2, 3, 40 * 10**9), BatchLimits(1)])
def test_batches_applied_in_order_reach_the_plan_target(plan, snapshot, limits, leader_preserving) -> None:
    files = build_bundle(plan, snapshot, EmitOptions(limits=limits, leader_preserving=leader_preserving))
    state = {(p.topic, p.partition): tuple(p.replicas) for p in snapshot.partitions}
    index = json.loads(files["batches/index.json"])
    assert [row["file"] for row in index] == sorted(n.removeprefix("batches/") for n in files if n[8:11].isdigit())
    cluster = _cluster(snapshot)
    for row in index:
        text = files[f"batches/{row['file']}"]
        entries = parse_reassignment_json(text, cluster)  # Kafka accepts it against the live state
        current = {(e.topic, e.partition): state[(e.topic, e.partition)] for e in entries}
        kafka = calculate_throttles({(e.topic, e.partition): e.replicas for e in entries}, current)
        assert row["leader.replication.throttled.replicas"] == kafka.leader
        assert row["follower.replication.throttled.replicas"] == kafka.follower
        assert row["reassigning_brokers"] == list(kafka.reassigning_brokers)
        for e in entries:
            state[(e.topic, e.partition)] = e.replicas
        cluster = {"brokers": cluster["brokers"], "topics": {}}
        for (t, p), r in sorted(state.items()):
            cluster["topics"].setdefault(t, []).append(list(r))
    target = {(m.topic, m.partition): m.replicas for m in plan.partitions}
    assert state == target
    final = {(e.topic, e.partition): e.replicas for e in parse_reassignment_json(files["reassignment.json"])}
    assert final == {(m.topic, m.partition): m.replicas for m in plan.moves}


def test_rollback_and_leader_election_name_exactly_the_moved_partitions(plan, snapshot) -> None:
    files = build_bundle(plan, snapshot)
    rollback = {(e.topic, e.partition): e.replicas for e in parse_reassignment_json(files["rollback.json"], _cluster(snapshot))}
    assert rollback == {(m.topic, m.partition): m.old_replicas for m in plan.moves}
    assert ("audit", 0) not in rollback
    election = parse_leader_election_json(files["leader-election.json"])
    assert set(election) == set(rollback)


def test_same_plan_gives_identical_bundle_and_summary_figures(plan, snapshot, tmp_path) -> None:
    a = build_bundle(plan, snapshot, EmitOptions(leader_preserving=True))
    assert a == build_bundle(plan, snapshot, EmitOptions(leader_preserving=True))
    write_bundle(tmp_path / "b1", a)
    write_bundle(tmp_path / "b2", build_bundle(plan, snapshot, EmitOptions(leader_preserving=True)))
    for name in a:
        assert (tmp_path / "b1" / name).read_bytes() == (tmp_path / "b2" / name).read_bytes()
    summary = json.loads(a["summary.json"])
    assert summary["moved_bytes"] == plan.moved_bytes
    assert summary["partitions"] == len(plan.moves)
    assert summary["estimated_seconds"] == sum(b["estimated_seconds"] for b in summary["batches"])
    assert sum(b["moved_bytes"] for b in summary["batches"]) == plan.moved_bytes
    assert sum(v["bytes_in"] for v in summary["brokers"].values()) == plan.moved_bytes
    # spare of the busiest broker: broker 6, 125 MB/s - 55 MB/s forecast nw_in peak, times 0.5
    assert summary["throttle"]["min_Bps"] == 35_000_000


def test_runbook_is_a_complete_procedure(plan, snapshot) -> None:
    files = build_bundle(plan, snapshot, EmitOptions(bootstrap="kafka-1:9092"))
    runbook = files["runbook.md"]
    index = json.loads(files["batches/index.json"])
    assert "--describe --under-replicated-partitions" in runbook and "--list" in runbook
    for row in index:
        base = f"kafka-reassign-partitions.sh --bootstrap-server kafka-1:9092 --reassignment-json-file batches/{row['file']}"
        assert f"{base} --execute --throttle {row['throttle_Bps']}" in runbook
        assert f"{base} --verify" in runbook and f"{base} --cancel" in runbook
    assert "--reassignment-json-file rollback.json --execute --throttle" in runbook
    assert runbook.rstrip().splitlines()[-1].startswith("Finally check again")
    assert (
        "kafka-leader-election.sh --bootstrap-server kafka-1:9092 --election-type preferred "
        "--path-to-json-file leader-election.json"
    ) in runbook
    assert runbook.index("Pre-flight") < runbook.index("Batch 1 of") < runbook.index("Rolling back") < runbook.index("Leader election")


def test_stale_plan_is_rejected(plan, snapshot) -> None:
    first = plan.moves[0]
    stale = replace(plan, partitions=tuple(replace(m, old_replicas=(9, 8, 7)) if m == first else m for m in plan.partitions))
    with pytest.raises(InputError, match=f"{first.topic}-{first.partition}: old_replicas \\[9, 8, 7\\] differ from the snapshot's replicas \\[3, 6\\]"):
        build_bundle(stale, snapshot)


def test_unknown_target_broker_is_rejected_with_kafkas_message(plan, snapshot) -> None:
    first = plan.moves[0]
    bad = replace(plan, partitions=tuple(replace(m, replicas=(1, 2, 99)) if m == first else m for m in plan.partitions))
    with pytest.raises(InputError, match="reassignment.json: kafka-reassign-partitions.sh would reject it: Error: Unknown broker id 99"):
        build_bundle(bad, snapshot)


def test_plan_without_moves_gives_a_runbook_that_says_so(plan, snapshot) -> None:
    still = replace(plan, partitions=tuple(replace(m, replicas=m.old_replicas) for m in plan.partitions))
    files = build_bundle(still, snapshot)
    assert sorted(files) == ["batches/index.json", "runbook.md", "summary.json"]
    assert "Nothing to do" in files["runbook.md"] and "kafka-reassign-partitions.sh" not in files["runbook.md"]
    assert json.loads(files["batches/index.json"]) == []


def test_the_runbook_names_what_the_snapshot_showed_unhealthy(plan, snapshot) -> None:
    from pools.snapshot import LogDirError

    moved = {(m.topic, m.partition) for m in plan.moves}
    still = next(p for p in snapshot.partitions if (p.topic, p.partition) not in moved and len(p.replicas) > 1)
    lagging = replace(still, isr=still.replicas[:1])
    parts = tuple(lagging if p is still else p for p in snapshot.partitions)
    broken = replace(snapshot, partitions=parts, log_dir_errors=(LogDirError(999, "/data9", "KafkaStorageException"),))
    files = build_bundle(plan, broken)
    runbook = files["runbook.md"]
    assert "The snapshot showed a cluster that is not fully healthy" in runbook
    assert f"1 under-replicated partition(s) keep their replicas: {still.topic}-{still.partition}" in runbook
    assert "broker 999 is unhealthy (log dir /data9 in error (KafkaStorageException))" in runbook
    health = json.loads(files["summary.json"])["health"]
    assert health["held_partitions"] == {"under-replicated": [f"{still.topic}-{still.partition}"]}
    assert health["moved_held_partitions"] == []
    # a plan that moves a partition the snapshot shows unhealthy is called out
    target = next(m for m in plan.moves)
    state = next(p for p in snapshot.partitions if (p.topic, p.partition) == (target.topic, target.partition))
    parts = tuple(replace(p, adding_replicas=(p.replicas[-1],)) if p is state else p for p in snapshot.partitions)
    runbook = build_bundle(plan, replace(snapshot, partitions=parts))["runbook.md"]
    assert "**Warning:** this plan moves 1 partition(s) that were unhealthy at snapshot time" in runbook
    assert f"({target.topic}-{target.partition}); re-plan from a fresh snapshot" in runbook


def test_the_runbook_sums_copied_bytes_by_reason(plan, snapshot) -> None:
    """Each move's reason (plan.json) lands in one row of "Why these moves"; the rows add up to the plan."""
    moves = list(plan.moves)
    isolate = {(m.topic, m.partition) for m in moves[: len(moves) // 2]}
    partitions = tuple(
        replace(m, reason=Reason("isolate", brokers=m.removing) if (m.topic, m.partition) in isolate else
                Reason("relieve", m.removing[0] if m.removing else m.replicas[0], "disk", 1.0, 2.0,
                       leader_only=set(m.old_replicas) == set(m.replicas)))
        if m.changed else m for m in plan.partitions)
    runbook = build_bundle(replace(plan, partitions=partitions), snapshot, EmitOptions())["runbook.md"]

    def row(rule, group):
        lead = sum(set(m.old_replicas) == set(m.replicas) for m in group) if rule == "relieve" else 0
        return f"| {rule} | {len(group)} | {lead} | {format_bytes(sum(m.moved_bytes for m in group))} |"

    first = [m for m in moves if (m.topic, m.partition) in isolate]
    rest = [m for m in moves if (m.topic, m.partition) not in isolate]
    assert row("isolate", first) in runbook and row("relieve", rest) in runbook
    assert runbook.index("| isolate |") < runbook.index("| relieve |") < runbook.index("Pre-flight")
    assert "| none recorded | " in build_bundle(plan, snapshot, EmitOptions())["runbook.md"]


def test_the_first_batch_relieves_a_broker_over_its_limit_before_the_plan(plan, snapshot) -> None:
    """With broker 6 alone over its pool's nw_in headroom before the plan (44 % of capacity against a 42 % limit),
    a move taking a replica off it goes first; without the limit the same bundle starts elsewhere."""
    from planner.emit.bundle import over_limit_before
    from pools.plan_file import PoolLoad

    assert over_limit_before(plan, snapshot) == frozenset()  # the plan states no headroom
    pools = {p: {"nw_in": PoolLoad(headroom=0.42)} for p in set(plan.brokers.values()) if p is not None}
    hot = replace(plan, utilisation=replace(plan.utilisation, pools=pools))
    assert over_limit_before(hot, snapshot) == {6}
    relieving = {(m.topic, m.partition) for m in plan.moves if 6 in set(m.old_replicas) - set(m.replicas)}
    assert relieving == {("payments.ledger", 0), ("payments.ledger", 1), ("payments.ledger", 2)}

    def first_batch(p) -> set:
        files = build_bundle(p, snapshot, EmitOptions(limits=BatchLimits(moves_per_broker=1)))
        index = json.loads(files["batches/index.json"])
        return {(r["topic"], r["partition"]) for r in json.loads(files[f"batches/{index[0]['file']}"])["partitions"]}

    assert first_batch(plan).isdisjoint(relieving)
    assert first_batch(hot)
    assert first_batch(hot) <= relieving
