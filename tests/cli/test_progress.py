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
