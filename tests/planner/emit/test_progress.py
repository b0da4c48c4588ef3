"""`planner.emit.progress` on generated in-flight captures (`planner.sample.inflight`): bytes done per batch and
broker, rate and ETA, stuck and finished reassignments, throttles left after completion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.emit import EmitOptions, build_bundle, write_bundle
from planner.emit.progress import DONE, IN_PROGRESS, STUCK, parse_verify, reassignment_progress
from planner.sample.inflight import inflight_captures, verify_output
from pools.errors import InputError
from pools.plan_file import load_plan
from pools.snapshot import load_snapshot

DATA = Path(__file__).resolve().parents[2] / "data" / "emit"


def make_bundle(tmp_path: Path):
    """The test data plan's bundle written under ``tmp_path``, its snapshot, moves and partition sizes."""
    plan, snap = load_plan(DATA / "plan.json"), load_snapshot(DATA / "snapshot.json")
    out = write_bundle(tmp_path / "bundle", build_bundle(plan, snap, EmitOptions()))
    moves = {(m.topic, m.partition): (m.old_replicas, m.replicas) for m in plan.moves}
    sizes = {(p.topic, p.partition): p.size_bytes for p in snap.partitions}
    return out, snap, moves, sizes


@pytest.fixture()
def bundle(tmp_path: Path):
    return make_bundle(tmp_path)


def write_captures(tmp_path: Path, texts: list[str]) -> list[Path]:
    paths = []
    for k, text in enumerate(texts):
        path = tmp_path / f"log-dirs-{k}.txt"
        path.write_text(text)
        paths.append(path)
    return paths


def _copy_bytes(moves, sizes) -> int:
    return sum(sizes[k] * len(set(new) - set(old)) for k, (old, new) in moves.items())


def test_progress_of_a_running_reassignment(bundle, tmp_path: Path) -> None:
    out, snap, moves, sizes = bundle
    captures = write_captures(tmp_path, inflight_captures(snap, moves, [0.2, 0.5]))
    p = reassignment_progress(out, captures, interval=600)
    total = _copy_bytes(moves, sizes)
    assert p.total_bytes == total and p.done_bytes == pytest.approx(0.5 * total, rel=1e-6)
    assert p.rate == pytest.approx(0.3 * total / 600, rel=1e-6)
    assert p.eta_seconds == pytest.approx(0.5 * total / p.rate, rel=1e-6)
    assert sum(r["total_bytes"] for r in p.batches) == sum(r["total_bytes"] for r in p.brokers) == total
    index = json.loads((out / "batches" / "index.json").read_text())
    assert [r["batch"] for r in p.batches] == [row["batch"] for row in index]
    assert p.stuck == () and not p.complete and p.exit_code == IN_PROGRESS


def test_a_partition_without_progress_is_stuck(bundle, tmp_path: Path) -> None:
    out, snap, moves, sizes = bundle
    stalled = sorted(k for k, (old, new) in moves.items() if set(new) - set(old))[0]
    captures = write_captures(tmp_path, inflight_captures(snap, moves, [0.2, 0.5], stalled={stalled}))
    verify = tmp_path / "verify.txt"
    verify.write_text(verify_output(moves, done=()))
    p = reassignment_progress(out, captures, interval=60, verify=verify)
    assert p.stuck == (f"{stalled[0]}-{stalled[1]}",) and p.exit_code == STUCK


def test_a_finished_reassignment_is_done_and_says_when_throttles_stay(bundle, tmp_path: Path) -> None:
    out, snap, moves, sizes = bundle
    captures = write_captures(tmp_path, inflight_captures(snap, moves, [0.9, 1.0]))
    verify = tmp_path / "verify.txt"
    verify.write_text(verify_output(moves, done=set(moves)))
    p = reassignment_progress(out, captures, interval=60, verify=verify)
    assert p.complete and p.done_bytes == p.total_bytes and p.exit_code == DONE and not p.throttles_left
    verify.write_text(verify_output(moves, done=set(moves), preserve_throttles=True))
    assert reassignment_progress(out, captures, interval=60, verify=verify).throttles_left


def test_verify_output_is_read_as_kafka_prints_it() -> None:
    text = ("Status of partition reassignment:\nReassignment of partition a-0 is complete.\n"
            "There is no active reassignment of partition b-1, but replica set is 1,2 rather than 3,4.\n"
            "Reassignment of partition c-2 is still in progress.\n")
    assert parse_verify(text).states == {("a", 0): "complete", ("b", 1): "diverged", ("c", 2): "in_progress"}
    with pytest.raises(InputError, match="expected the output of kafka-reassign-partitions.sh --verify"):
        parse_verify("hello\n", source="v.txt")
