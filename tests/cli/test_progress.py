"""`poolplan progress`: the report, its exit codes (0 done, 1 in progress, 2 bad input, 3 the tool's
failure, 4 stop) and bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.sample.cluster import DATA_DIR
from planner.sample.inflight import STATES, inflight_captures
from planner.sample.writers import format_log_dirs
from pools.kafka_formats.log_dirs import parse_log_dirs
from tests.planner.emit.test_progress import make_bundle, write_captures


def test_progress_cli_exit_codes_and_bad_input(run_cli, tmp_path: Path) -> None:
    out, snap, moves, _ = make_bundle(tmp_path)
    captures = write_captures(tmp_path, inflight_captures(snap, moves, [0.2, 0.5]))
    args = ["progress", "--bundle", out, *(x for c in captures for x in ("--log-dirs-capture", c)), "--interval", "60"]
    code, stdout, err = run_cli(*args)
    assert code == 1 and "in progress" in stdout and "batch 1:" in stdout, err
    code, stdout, _ = run_cli(*args, "--format", "json")
    assert code == 1 and json.loads(stdout)["exit_code"] == 1
    bad = tmp_path / "bad.txt"
    bad.write_text("not a capture\n")
    code, _, err = run_cli("progress", "--bundle", out, "--log-dirs-capture", bad)
    assert code == 2 and "bad.txt" in err and len(err.strip().splitlines()) == 1


def test_progress_rejects_a_broken_bundle_in_one_line(run_cli, tmp_path: Path) -> None:
    out, snap, moves, _ = make_bundle(tmp_path)
    (capture,) = write_captures(tmp_path, inflight_captures(snap, moves, [0.5]))
    code, _, err = run_cli("progress", "--bundle", tmp_path / "nothing", "--log-dirs-capture", capture)
    assert code == 2 and "rollback.json" in err and len(err.strip().splitlines()) == 1
    (out / "batches" / "index.json").write_text("{not json")
    code, _, err = run_cli("progress", "--bundle", out, "--log-dirs-capture", capture)
    assert code == 2 and "index.json" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("progress", "--bundle", out, "--log-dirs-capture", capture, "--interval", "0")
    assert code == 2 and "--interval: expected seconds > 0" in err
    (out / "rollback.json").write_text('{"version": 1, "partitions": [{"topic": "t"}]}')
    code, _, err = run_cli("progress", "--bundle", out, "--log-dirs-capture", capture)
    assert code == 2 and "rollback.json" in err and len(err.strip().splitlines()) == 1, err


def _progress_of(run_cli, inflight: Path) -> tuple[int, dict]:
    captures = sorted(inflight.glob("log-dirs-*.txt"), reverse=True)  # any order: the names carry the times
    describes = sorted(inflight.glob("topics-*.txt"))
    code, stdout, err = run_cli("progress", "--bundle", inflight / "bundle",
                                *(x for c in captures for x in ("--log-dirs-capture", c)),
                                *(x for d in describes for x in ("--describe", d)),
                                "--verify", inflight / "verify.txt", "--format", "json")
    assert code in (0, 1, 4), err
    return code, json.loads(stdout)


@pytest.mark.slow
def test_progress_on_the_captures_poolplan_sample_writes_in_flight(run_cli, tmp_path: Path) -> None:
    """`poolplan sample --inflight STATE` then `poolplan progress`: running → 1, stuck → 4 naming the stalled
    partition, done → 0; the figures are the captures' (rate = growth between the last two over 60 s)."""
    results = {}
    for state in STATES:
        out = tmp_path / state
        code, _, err = run_cli("sample", "--out", out, "--days", "2", "--step", "60", "--inflight", state)
        assert code == 0, err
        results[state] = _progress_of(run_cli, out / "inflight")
    assert {s: code for s, (code, _) in results.items()} == {"running": 1, "stuck": 4, "done": 0}
    running, stuck, done = (results[s][1] for s in ("running", "stuck", "done"))
    assert running["total_bytes"] == stuck["total_bytes"] == done["total_bytes"] > 0
    assert done["done_bytes"] == done["total_bytes"] and done["stuck"] == []
    assert 0 < running["done_bytes"] < running["total_bytes"] and running["stuck"] == []
    assert len(stuck["stuck"]) == 1 and stuck["done_bytes"] < running["done_bytes"]
    assert stuck["stop"]["reasons"][0].startswith(f"stuck: {stuck['stuck'][0]} (no growth between ")
    # the describe captures: no new replica of a running partition in the ISR yet, every one once done
    assert running["isr"]["pending"] and done["isr"]["pending"] == [] and len(done["isr"]["joined"]) > 0
    assert running["under_min_isr"] == done["under_min_isr"] == done["leaders_not_preferred"] == []
    # the rate is the growth of the new replicas between the last two captures, 60 s apart
    inflight = tmp_path / "running" / "inflight"
    verify = (inflight / "verify.txt").read_text()  # part-way: some partitions complete, others still copying
    assert "is completed." in verify and "is still in progress." in verify and "Clearing" not in verify
    assert "Clearing broker-level throttles" in (tmp_path / "done" / "inflight" / "verify.txt").read_text()
    rollback = json.loads((inflight / "bundle" / "rollback.json").read_text())
    target = json.loads((inflight / "bundle" / "reassignment.json").read_text())
    before = {(p["topic"], p["partition"]): set(p["replicas"]) for p in rollback["partitions"]}
    new = {(p["topic"], p["partition"], b) for p in target["partitions"]
           for b in p["replicas"] if b not in before[(p["topic"], p["partition"])]}

    def copied(capture: Path) -> int:
        report = parse_log_dirs(capture.read_text(), source=str(capture))
        return sum(r.size for b in report.brokers for d in b.log_dirs for r in d.replicas
                   if (r.topic, r.partition, b.broker) in new)

    caps = sorted(inflight.glob("log-dirs-*.txt"))
    assert running["done_bytes"] == copied(caps[-1])
    assert running["rate_Bps"] == pytest.approx((copied(caps[-1]) - copied(caps[-2])) / 60, rel=1e-6)


@pytest.mark.slow
def test_sample_inflight_is_byte_identical_for_a_seed(run_cli, tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert run_cli("sample", "--out", tmp_path / name, "--days", "2", "--step", "60", "--seed", "3", "--inflight",
                       "stuck")[0] == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a" / "inflight").rglob("*") if p.is_file())
    assert len(files) > 5
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


def test_progress_out_writes_the_json_form_for_the_report(run_cli, tmp_path: Path) -> None:
    out, snap, moves, _ = make_bundle(tmp_path)
    captures = write_captures(tmp_path, inflight_captures(snap, moves, [0.2, 0.5]))
    target = tmp_path / "run" / "progress" / "progress.json"
    args = ["progress", "--bundle", out, *(x for c in captures for x in ("--log-dirs-capture", c))]
    code, _, err = run_cli(*args, "--out", target)
    assert code == 1 and target.exists(), err
    _, stdout, _ = run_cli(*args, "--format", "json")
    assert json.loads(target.read_text()) == json.loads(stdout)
    code, _, err = run_cli(*args, "--out", tmp_path / "run" / "progress")  # a directory: refused before any work
    assert code == 2 and "progress" in err and len(err.strip().splitlines()) == 1


def test_progress_refuses_foreign_and_unordered_captures_in_one_line(run_cli, tmp_path: Path) -> None:
    """Each ends in exit 2 and one line naming the capture: a log-dirs capture of another cluster (alone or after a
    right one), unstamped captures given newest first, a describe capture of another cluster."""
    out, snap, moves, _ = make_bundle(tmp_path)
    right = write_captures(tmp_path, inflight_captures(snap, moves, [0.2, 0.5]))
    foreign = tmp_path / "foreign.txt"
    foreign.write_text(format_log_dirs([(b.id + 1000, [(DATA_DIR, None, [("x-0", 1, 0, False)])])
                                        for b in snap.brokers]))
    other = tmp_path / "other-describe.txt"
    other.write_text("Topic: x\tTopicId: y\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n"
                     "\tTopic: x\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n")
    cases = [
        ((foreign,), (), "foreign.txt: names none of the bundle's brokers"),
        ((right[0], foreign), (), "foreign.txt: names none of the bundle's brokers"),
        ((right[1], right[0]), (), "log-dirs-0.txt: the bundle's new replicas hold fewer bytes"),
        (tuple(right), (other,), "other-describe.txt: names none of the bundle's"),
    ]
    for logs, describes, message in cases:
        args = [x for c in logs for x in ("--log-dirs-capture", c)] + [x for d in describes for x in ("--describe", d)]
        code, stdout, err = run_cli("progress", "--bundle", out, *args, "--out", tmp_path / "p.json")
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "p.json").exists()


def test_progress_says_why_it_stops_and_how(run_cli, tmp_path: Path) -> None:
    out, snap, moves, _ = make_bundle(tmp_path)
    stalled = sorted(k for k, (old, new) in moves.items() if set(new) - set(old))[0]
    captures = write_captures(tmp_path, inflight_captures(snap, moves, [0.2, 0.5], stalled={stalled}))
    code, stdout, err = run_cli("progress", "--bundle", out, *(x for c in captures for x in ("--log-dirs-capture", c)),
                                "--bootstrap-server", "kafka:9092")
    assert code == 4, err
    lines = stdout.splitlines()
    assert lines[-1] == "stop" and "STOP:" in lines
    assert f"  stuck: {stalled[0]}-{stalled[1]} (no growth between {captures[0]} and {captures[1]}: " in stdout
    assert ("  kafka-reassign-partitions.sh --bootstrap-server kafka:9092 --reassignment-json-file batches/001.json "
            "--cancel") in lines
    assert any(line.startswith("  kafka-configs.sh --bootstrap-server kafka:9092 --alter --entity-type brokers")
               for line in lines)
    code, stdout, _ = run_cli("progress", "--bundle", out, *(x for c in captures for x in ("--log-dirs-capture", c)),
                              "--format", "json")
    doc = json.loads(stdout)
    assert code == 4 and doc["exit_code"] == 4 and doc["stop"]["reasons"] and doc["stop"]["commands"]


def test_progress_old_log_dirs_spelling_still_reads_the_captures_with_one_warning(run_cli, tmp_path: Path) -> None:
    """``--log-dirs``, the spelling before ``--log-dirs-capture``, works for one more release: the same report and
    one warning line on stderr; captures given under both spellings add up; none at all is bad input."""
    out, snap, moves, _ = make_bundle(tmp_path)
    first, second = write_captures(tmp_path, inflight_captures(snap, moves, [0.2, 0.5]))
    new = run_cli("progress", "--bundle", out, "--log-dirs-capture", first, "--log-dirs-capture", second,
                  "--format", "json")
    old = run_cli("progress", "--bundle", out, "--log-dirs", first, "--log-dirs", second, "--format", "json")
    mixed = run_cli("progress", "--bundle", out, "--log-dirs", second, "--log-dirs-capture", first, "--format", "json")
    assert new[0] == old[0] == mixed[0] == 1 and new[1] == old[1] == mixed[1], old[2]
    assert "renamed" not in new[2]
    assert [line for line in old[2].splitlines() if line.strip()] == [
        "warning: --log-dirs is renamed --log-dirs-capture; the old spelling is accepted until the next release"]
    code, _, err = run_cli("progress", "--bundle", out)
    assert code == 2 and err.strip() == "error: --log-dirs-capture: expected at least one kafka-log-dirs.sh " \
        "--describe capture", err


def test_progress_exit_3_stays_the_tool_s_own_failure_and_stop_is_4(run_cli, tmp_path: Path, monkeypatch) -> None:
    """Exit 3 means for progress what it means for every command (here: the disk fails while --out is written);
    a stop is 4, never 2 or 3."""
    import errno

    import planner.cli.progress as progress_command
    from planner.cli import EXIT_FAILED, EXIT_INPUT
    from planner.emit.progress import DONE, IN_PROGRESS, STOP

    assert (DONE, IN_PROGRESS, STOP) == (0, 1, 4) and not {DONE, IN_PROGRESS, STOP} & {EXIT_INPUT, EXIT_FAILED}
    out, snap, moves, _ = make_bundle(tmp_path)
    captures = write_captures(tmp_path, inflight_captures(snap, moves, [0.2, 0.5]))
    target = tmp_path / "p.json"

    def full_disk(path, text):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(progress_command, "write_text", full_disk)
    code, _, err = run_cli("progress", "--bundle", out, *(x for c in captures for x in ("--log-dirs-capture", c)),
                           "--out", target)
    assert code == 3 and err.strip() == f"failed: {target}: no space left on device", err
