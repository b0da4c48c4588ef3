"""`planner.emit.progress` on generated in-flight captures (`planner.sample.inflight`): bytes done per batch and
broker, rate and ETA, stuck and finished reassignments, throttles left after completion."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from planner.emit import EmitOptions, build_bundle, write_bundle
from planner.emit.progress import DONE, IN_PROGRESS, STOP, parse_verify, reassignment_progress
from planner.sample.cluster import DATA_DIR
from planner.sample.inflight import inflight_captures, inflight_describe, verify_output
from planner.sample.writers import format_log_dirs
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
    name = f"{stalled[0]}-{stalled[1]}"
    assert p.stuck == (name,) and p.exit_code == STOP
    (reason,) = p.stop["reasons"]
    assert reason.startswith(f"stuck: {name} (no growth between {captures[0]} and {captures[1]}: ")
    assert p.stop["commands"][0].endswith("--reassignment-json-file batches/001.json --cancel")


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


def _dir(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def _stamped(tmp_path: Path, texts: list[str], seconds: list[int], *, in_name: bool = True) -> list[Path]:
    """Captures stamped ``seconds`` after 2026-11-02T00:00:00Z: in the file name, or on a first line."""
    paths = []
    for k, (text, s) in enumerate(zip(texts, seconds, strict=True)):
        stamp = datetime(2026, 11, 2, tzinfo=timezone.utc) + timedelta(seconds=s)
        if in_name:
            path = tmp_path / f"cap-{k}-{stamp:%Y%m%dT%H%M%SZ}.txt"
            path.write_text(text)
        else:
            path = tmp_path / f"cap-{k}.txt"
            path.write_text(f"{stamp:%Y-%m-%dT%H:%M:%SZ}\n{text}")
        paths.append(path)
    return paths


def test_captures_in_any_order_are_read_by_their_own_times(bundle, tmp_path: Path) -> None:
    """Stamped captures given newest first (as a shell glob over cap-1 ... cap-10 gives them) read as in time order,
    and the rate uses their times (90 s apart here), not --interval; a stamp line wins over the name."""
    out, snap, moves, sizes = bundle
    texts = inflight_captures(snap, moves, [0.1, 0.2, 0.5])
    paths = _stamped(tmp_path, texts, [0, 30, 120])
    forward = reassignment_progress(out, paths, interval=600)
    backward = reassignment_progress(out, paths[::-1], interval=600)
    total = _copy_bytes(moves, sizes)
    assert forward == backward and forward.exit_code == IN_PROGRESS and forward.stuck == ()
    assert forward.rate == pytest.approx(0.3 * total / 90, rel=1e-6)
    assert [c["file"] for c in backward.captures["log_dirs"]] == [str(p) for p in paths]
    lines = _stamped(_dir(tmp_path, "lines"), texts, [0, 300, 600],
                     in_name=False)
    assert reassignment_progress(out, lines[::-1], interval=1).rate == pytest.approx(0.3 * total / 300, rel=1e-6)


def test_captures_without_a_usable_order_are_refused_in_one_line(bundle, tmp_path: Path) -> None:
    out, snap, moves, _ = bundle
    texts = inflight_captures(snap, moves, [0.2, 0.5])
    plain = write_captures(tmp_path, texts)
    with pytest.raises(InputError, match=r"log-dirs-0.txt: the bundle's new replicas hold fewer bytes .* out of "
                                         r"order"):
        reassignment_progress(out, plain[::-1], interval=60)
    stamped = _stamped(tmp_path, texts, [0, 60])
    with pytest.raises(InputError, match=r"log-dirs-0.txt: carries no time .* stamp every capture or none"):
        reassignment_progress(out, [plain[0], stamped[1]], interval=60)
    twins = _stamped(_dir(tmp_path, "twins"), texts, [60, 60])
    with pytest.raises(InputError, match="carries the same time as"):
        reassignment_progress(out, twins, interval=60)
    bad = tmp_path / "bad.txt"
    bad.write_text("2026-02-30T00:00:00Z\n" + texts[0])
    with pytest.raises(InputError, match=r"bad.txt:1: expected an ISO-8601 time"):
        reassignment_progress(out, [bad], interval=60)
    impossible = tmp_path / "cap-20260230T000000Z.txt"
    impossible.write_text(texts[0])
    with pytest.raises(InputError, match=r"cap-20260230T000000Z.txt: the file name's stamp: expected an ISO-8601"):
        reassignment_progress(out, [impossible], interval=60)
    iso = [tmp_path / f"cap-2026-11-02T00:0{k}:00Z.txt" for k in (0, 2)]
    for path, text in zip(iso, texts, strict=True):
        path.write_text(text)
    assert reassignment_progress(out, iso[::-1], interval=1).captures["log_dirs"] == [
        {"file": str(iso[0]), "time": 1793577600.0}, {"file": str(iso[1]), "time": 1793577720.0}]


def _foreign(snap, moves) -> dict[str, str]:
    """Captures a bundle must refuse: brokers of another cluster, the bundle's brokers with other topics, and the
    bundle's topics placed on brokers the bundle never names."""
    brokers = sorted(b.id for b in snap.brokers)
    other = {b + 1000: [] for b in brokers}
    other_topics = [(b, [(DATA_DIR, None, [("elsewhere-0", 10, 0, False)])]) for b in brokers]
    elsewhere = [(f"{t}-{p}", 5, 0, False) for t, p in sorted(moves)]  # on a broker the bundle never names
    return {"another cluster's brokers": format_log_dirs([(b, [(DATA_DIR, None, r)]) for b, r in other.items()]),
            "other topics": format_log_dirs(other_topics),
            "other placement": format_log_dirs([*other_topics, (999, [(DATA_DIR, None, elsewhere)])])}


def test_a_capture_of_another_cluster_is_refused_naming_it(bundle, tmp_path: Path) -> None:
    out, snap, moves, _ = bundle
    (right,) = write_captures(tmp_path, inflight_captures(snap, moves, [0.5]))
    messages = {"another cluster's brokers": "names none of the bundle's brokers",
                "other topics": "names none of the bundle's",
                "other placement": "none of the bundle's partitions it lists sits where the bundle has them"}
    for name, text in _foreign(snap, moves).items():
        path = tmp_path / f"{name.replace(' ', '-')}.txt"
        path.write_text(text)
        for given in ([path], [right, path]):
            with pytest.raises(InputError, match=f"--log-dirs-capture: {re.escape(str(path))}: {messages[name]}"):
                reassignment_progress(out, given, interval=60)


def test_describe_captures_report_isr_joins_min_isr_and_leaders(bundle, tmp_path: Path) -> None:
    """The newest describe capture says which new replicas joined the ISR; a partition under its min ISR stops the
    move (exit 3) with the evidence, the running batch's --cancel and its throttle configs; an earlier one that
    recovered is named apart; finished partitions led by another replica keep it in progress."""
    out, snap, moves, _ = bundle
    logs = _stamped(tmp_path, inflight_captures(snap, moves, [0.2, 0.5]), [0, 60])
    copying = sorted(k for k, (old, new) in moves.items() if set(new) - set(old))
    first = copying[0]
    new_of_first = [b for b in moves[first][1] if b not in moves[first][0]]
    joined = {(*first, b) for b in new_of_first}
    everyone = (*moves[first][0], *new_of_first)
    (d0, d1) = _stamped(_dir(tmp_path, "d"), [
        inflight_describe(snap, moves, joined=joined, out_of_isr={first: everyone}),  # leaderless: under min ISR
        inflight_describe(snap, moves, joined=joined)], [10, 70])
    p = reassignment_progress(out, logs, interval=60, describes=[d1, d0])
    name = f"{first[0]}-{first[1]}"
    assert {(r["partition"], r["broker"]) for r in p.isr["joined"]} == {(name, b) for b in new_of_first}
    assert p.isr["pending"] and p.under_min_isr == () and p.exit_code == IN_PROGRESS
    assert p.was_under_min_isr == ({"partition": name, "capture": str(d0)},)
    low = tmp_path / "low-20261102T000200Z.txt"  # min.insync.replicas=2, one replica in sync
    text = inflight_describe(snap, moves, joined=joined, out_of_isr={first: everyone[1:]})
    low.write_text(re.sub(rf"(Topic: {re.escape(first[0])}\tTopicId: \S+\tPartitionCount: \d+\t"
                          r"ReplicationFactor: \d+\tConfigs: )", r"\1min.insync.replicas=2", text))
    p = reassignment_progress(out, logs, interval=60, describes=[d1, low, d0])
    assert p.exit_code == STOP and p.under_min_isr == ({"partition": name, "leader": everyone[0],
                                                        "isr": [everyone[0]], "min_isr": 2, "capture": str(low)},)
    assert f"under min ISR: {name} (leader {everyone[0]}, Isr {everyone[0]} against min.insync.replicas 2, in " \
           f"{low})" in p.stop["reasons"]
    row = json.loads((out / "batches" / "index.json").read_text())[0]  # nothing finished: batch 1 runs
    assert p.stop["commands"][0] == (f"kafka-reassign-partitions.sh --bootstrap-server <BOOTSTRAP_SERVERS> "
                                     f"--reassignment-json-file batches/{row['file']} --cancel")
    assert {c.split("--entity-name ")[1].split()[0] for c in p.stop["commands"] if "--entity-type brokers" in c} >= \
        {str(b) for b in row["reassigning_brokers"]}
    assert all(c.endswith("--delete-config leader.replication.throttled.rate,follower.replication.throttled.rate,"
                          "replica.alter.log.dirs.io.max.bytes.per.second")
               for c in p.stop["commands"] if "--entity-type brokers" in c)
    assert any("--entity-type topics" in c and c.endswith("--delete-config leader.replication.throttled.replicas,"
                                                          "follower.replication.throttled.replicas")
               for c in p.stop["commands"])
    done = write_captures(tmp_path, inflight_captures(snap, moves, [0.9, 1.0]))
    other = {k: next(b for b in new if b != new[0]) for k, (old, new) in moves.items() if len(new) > 1}
    led = tmp_path / "led.txt"
    led.write_text(inflight_describe(snap, moves, complete=set(moves), leaders=other))
    p = reassignment_progress(out, done, interval=60, describes=[led])
    assert p.complete and p.exit_code == IN_PROGRESS and len(p.leaders_not_preferred) == len(other) > 0
    led.write_text(inflight_describe(snap, moves, complete=set(moves)))
    assert reassignment_progress(out, done, interval=60, describes=[led]).exit_code == DONE


def test_a_describe_capture_of_another_cluster_is_refused(bundle, tmp_path: Path) -> None:
    out, snap, moves, _ = bundle
    logs = write_captures(tmp_path, inflight_captures(snap, moves, [0.5]))
    foreign = tmp_path / "foreign.txt"
    foreign.write_text("Topic: elsewhere\tTopicId: x\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n"
                       "\tTopic: elsewhere\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n")
    with pytest.raises(InputError, match=r"--describe: .*foreign.txt: names none of the bundle's"):
        reassignment_progress(out, logs, interval=60, describes=[foreign])
    right = inflight_describe(snap, moves)
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(right)
    topic = snap.topics[0]
    b.write_text(right.replace(f"Topic: {topic.topic}\tTopicId: {topic.topic_id or 'AAAAAAAAAAAAAAAAAAAAAA'}",
                               f"Topic: {topic.topic}\tTopicId: BBBBBBBBBBBBBBBBBBBBBB"))
    with pytest.raises(InputError, match=rf"b.txt: topic {re.escape(topic.topic)} has TopicId BBBBBBBBBBBBBBBBBBBBBB"):
        reassignment_progress(out, logs, interval=60, describes=[a, b])
    b.write_text("".join(line + "\n" for line in right.splitlines() if line.startswith("\t")))
    with pytest.raises(InputError, match=r"b.txt: topic \S+ has partition lines but no 'Topic:' header"):
        reassignment_progress(out, logs, interval=60, describes=[b])


def test_a_copy_far_below_its_throttle_is_slow_and_named_with_its_broker(bundle, tmp_path: Path) -> None:
    """Copies growing at a small share of their part of the batch's throttle are slow (not stuck, still exit 1);
    at the throttle's pace they are not."""
    out, snap, moves, sizes = bundle
    texts = inflight_captures(snap, moves, [0.2, 0.3, 0.4])
    fast = reassignment_progress(out, write_captures(tmp_path, texts), interval=1)
    assert fast.slow == () and fast.exit_code == IN_PROGRESS
    crawl = reassignment_progress(out, write_captures(tmp_path, texts), interval=1e9)
    assert crawl.slow and crawl.exit_code == IN_PROGRESS and crawl.stuck == ()
    copying = {(f"{t}-{p}", b) for (t, p), (old, new) in moves.items() for b in new if b not in old and sizes[(t, p)]}
    assert {(r["partition"], r["broker"]) for r in crawl.slow} == copying
    row = crawl.slow[0]
    assert row["rate_Bps"] < 0.1 * row["throttle_share_Bps"]


def test_a_partition_moved_elsewhere_is_diverged_with_the_evidence(bundle, tmp_path: Path) -> None:
    """--verify's "no active reassignment ... rather than" line, or a capture showing a replica on a broker the
    bundle never names, make it diverged: stop, the line or the broker quoted."""
    out, snap, moves, _ = bundle
    captures = write_captures(tmp_path, inflight_captures(snap, moves, [0.2, 0.5]))
    first = sorted(moves)[0]
    name = f"{first[0]}-{first[1]}"
    line = f"There is no active reassignment of partition {name}, but replica set is 9,8 rather than 1,2."
    verify = tmp_path / "verify.txt"
    verify.write_text(f"Status of partition reassignment:\n{line}\n")
    p = reassignment_progress(out, captures, interval=60, verify=verify)
    assert p.diverged == (name,) and p.exit_code == STOP and f"diverged: {name} (--verify: {line})" in p.stop["reasons"]
    report = parse_log_dirs_doc(captures[-1])
    entry = next(b for b in report["brokers"] if b["broker"] not in {*moves[first][0], *moves[first][1]})
    entry["logDirs"][0]["partitions"].append({"partition": name, "size": 1, "offsetLag": 0, "isFuture": False})
    stray = entry["broker"]
    captures[-1].write_text(json.dumps(report))
    p = reassignment_progress(out, captures, interval=60)
    assert p.diverged == (name,) and f"diverged: {name} (a replica on broker(s) {stray}, which neither its replicas " \
        "before the bundle nor its targets name)" in p.stop["reasons"]


def parse_log_dirs_doc(path: Path) -> dict:
    return json.loads(next(line for line in path.read_text().splitlines() if line.startswith("{")))
