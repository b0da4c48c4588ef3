"""`poolplan emit`: exit codes, files written, refusal to overwrite, option validation."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "emit"
FILES = {"reassignment.json", "rollback.json", "leader-election.json", "runbook.md", "summary.json", "batches"}


def test_emit_writes_the_bundle(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    code, _, err = run_cli("emit", "--plan", DATA / "plan.json", "--snapshot", DATA / "snapshot.json", "--out", out,
                           "--max-moves-per-broker", "2", "--leader-preserving")
    assert code == 0, err
    assert {p.name for p in out.iterdir()} == FILES
    index = json.loads((out / "batches" / "index.json").read_text())
    assert len(index) >= 2 and f"{len(index)} batches" in err
    assert {p.name for p in (out / "batches").iterdir()} == {"index.json"} | {row["file"] for row in index}
    assert json.loads((out / "summary.json").read_text())["limits"]["moves_per_broker"] == 2


def test_emit_refuses_to_overwrite_without_force(run_cli, tmp_path: Path) -> None:
    args = ("emit", "--plan", DATA / "plan.json", "--snapshot", DATA / "snapshot.json", "--out", tmp_path / "b")
    assert run_cli(*args)[0] == 0
    before = (tmp_path / "b" / "runbook.md").read_bytes()
    code, _, err = run_cli(*args)
    assert code == 2 and "already exists" in err
    code, _, _ = run_cli(*args, "--force")
    assert code == 0 and (tmp_path / "b" / "runbook.md").read_bytes() == before


def test_emit_rejects_bad_options_and_missing_files(run_cli, tmp_path: Path) -> None:
    base = ("emit", "--plan", DATA / "plan.json", "--snapshot", DATA / "snapshot.json", "--out", tmp_path / "b")
    code, _, err = run_cli(*base, "--throttle-fraction", "1.5")
    assert code == 2 and "--throttle-fraction: expected a number in (0, 1], got 1.5" in err
    code, _, err = run_cli(*base, "--max-moves-per-broker", "0")
    assert code == 2 and "--max-moves-per-broker" in err
    code, _, err = run_cli("emit", "--plan", tmp_path / "none.json", "--snapshot", DATA / "snapshot.json", "--out", tmp_path / "c")
    assert code == 2 and "no such file" in err
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_emit_cuts_waves_each_a_complete_bundle(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "waves"
    base = ("emit", "--plan", DATA / "plan.json", "--snapshot", DATA / "snapshot.json", "--out", out)
    code, _, err = run_cli(*base, "--wave-bytes", str(60 * 10**9))
    assert code == 0, err
    index = json.loads((out / "waves.json").read_text())
    assert len(index["waves"]) > 1 and "waves," in err
    assert index["waves_bytes"] == index["one_shot_bytes"] == sum(w["copied_bytes"] for w in index["waves"])
    assert [w["outside_pool"] for w in index["waves"]] == sorted((w["outside_pool"] for w in index["waves"]),
                                                                 reverse=True)
    for w in index["waves"]:
        assert FILES <= {p.name for p in (out / w["dir"]).iterdir()}
    code, _, err = run_cli(*base[:-1], tmp_path / "none", "--wave-bytes", "0")
    assert code == 2 and "--wave-bytes: expected >= 1, got 0" in err and not (tmp_path / "none").exists()


def test_emit_wave_hours_cut_at_the_planned_copy_rate(run_cli, tmp_path: Path) -> None:
    one = tmp_path / "one"
    base = ("emit", "--plan", DATA / "plan.json", "--snapshot", DATA / "snapshot.json")
    assert run_cli(*base, "--out", one)[0] == 0
    summary = json.loads((one / "summary.json").read_text())
    hours = summary["estimated_seconds"] / 3600 / 4  # a quarter of the one-shot time
    code, _, err = run_cli(*base, "--out", tmp_path / "w", "--wave-hours", str(hours))
    assert code == 0, err
    index = json.loads((tmp_path / "w" / "waves.json").read_text())
    budget = summary["moved_bytes"] / 4
    assert len(index["waves"]) >= 4
    assert all(w["copied_bytes"] <= budget + 1 or w["partitions"] == 1 for w in index["waves"])
    code, _, err = run_cli(*base, "--out", tmp_path / "x", "--wave-hours", "0")
    assert code == 2 and "--wave-hours: expected" in err
