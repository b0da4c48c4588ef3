"""`poolplan progress`: the report, its exit codes (0 done, 1 in progress, 3 stuck) and bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

from planner.sample.inflight import inflight_captures
from tests.planner.emit.test_progress import make_bundle, write_captures


def test_progress_cli_exit_codes_and_bad_input(run_cli, tmp_path: Path) -> None:
    out, snap, moves, _ = make_bundle(tmp_path)
    captures = write_captures(tmp_path, inflight_captures(snap, moves, [0.2, 0.5]))
    args = ["progress", "--bundle", out, *(x for c in captures for x in ("--log-dirs", c)), "--interval", "60"]
    code, stdout, err = run_cli(*args)
    assert code == 1 and "in progress" in stdout and "batch 1:" in stdout, err
    code, stdout, _ = run_cli(*args, "--format", "json")
    assert code == 1 and json.loads(stdout)["exit_code"] == 1
    bad = tmp_path / "bad.txt"
    bad.write_text("not a capture\n")
    code, _, err = run_cli("progress", "--bundle", out, "--log-dirs", bad)
    assert code == 2 and "bad.txt" in err and len(err.strip().splitlines()) == 1


def test_progress_rejects_a_broken_bundle_in_one_line(run_cli, tmp_path: Path) -> None:
    out, snap, moves, _ = make_bundle(tmp_path)
    (capture,) = write_captures(tmp_path, inflight_captures(snap, moves, [0.5]))
    code, _, err = run_cli("progress", "--bundle", tmp_path / "nothing", "--log-dirs", capture)
    assert code == 2 and "rollback.json" in err and len(err.strip().splitlines()) == 1
    (out / "batches" / "index.json").write_text("{not json")
    code, _, err = run_cli("progress", "--bundle", out, "--log-dirs", capture)
    assert code == 2 and "index.json" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli("progress", "--bundle", out, "--log-dirs", capture, "--interval", "0")
    assert code == 2 and "--interval: expected seconds > 0" in err
    (out / "rollback.json").write_text('{"version": 1, "partitions": [{"topic": "t"}]}')
    code, _, err = run_cli("progress", "--bundle", out, "--log-dirs", capture)
    assert code == 2 and "rollback.json" in err and len(err.strip().splitlines()) == 1, err
