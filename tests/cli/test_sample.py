"""`poolplan sample`: files written atomically, byte-identical reruns, refusal to overwrite, bad options."""

from __future__ import annotations

import json


def _tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_writes_the_sample(run_cli, tmp_path):
    out = tmp_path / "run" / "sample"
    code, stdout, _ = run_cli("sample", "--out", out, "--brokers", 6, "--topics", 6, "--days", 2,
                      "--step", 60, "--seed", 5)
    assert code == 0
    assert "6 brokers, 6 topics, 2 days" in stdout and str(out) in stdout
    truth = json.loads((out / "truth.json").read_text())
    assert truth["spec"] == {"seed": 5, "brokers": 6, "topics": 6, "days": 2, "step_s": 60, "cluster": "sample"}
    assert truth["window"]["end"] == "2026-11-02T00:00:00Z"
    assert (out / "kafka" / "topics-describe.txt").exists()
    assert not [p for p in (tmp_path / "run").iterdir() if p.name.startswith(".")]  # no temp dir left


def test_rerun_is_byte_identical_and_needs_force(run_cli, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_cli("sample", "--out", a, "--brokers", 6, "--topics", 6, "--days", 2, "--step", 60)[0] == 0
    assert run_cli("sample", "--out", b, "--brokers", 6, "--topics", 6, "--days", 2, "--step", 60)[0] == 0
    assert _tree(a) == _tree(b)
    code, _, err = run_cli("sample", "--out", a, "--brokers", 6, "--topics", 6, "--days", 2, "--step", 60)
    assert code == 2 and "already exists" in err
    assert run_cli("sample", "--out", a, "--brokers", 6, "--topics", 6, "--days", 2,
                      "--step", 60, "--seed", 1, "--force")[0] == 0
    assert _tree(a) != _tree(b)


def test_end_date_moves_the_window(run_cli, tmp_path):
    out = tmp_path / "s"
    assert run_cli("sample", "--out", out, "--brokers", 6, "--topics", 6, "--days", 2,
                      "--step", 60, "--end", "2026-06-01")[0] == 0
    assert sorted(p.name for p in (out / "kafka" / "log-dirs").iterdir()) == [
        "log-dirs-20260531T000000Z.txt", "log-dirs-20260601T000000Z.txt"]


def test_bad_options(run_cli, tmp_path):
    code, _, err = run_cli("sample", "--out", tmp_path / "x", "--brokers", 4)
    assert code == 2 and "--brokers: expected 6 (two pools, three racks, one spare) to 1000, got 4" in err
    code, _, err = run_cli("sample", "--out", tmp_path / "x", "--end", "01/06/2026")
    assert code == 2 and "--end: expected a date YYYY-MM-DD, got '01/06/2026'" in err
    assert not (tmp_path / "x").exists()


def test_identical_across_processes_and_hash_seeds(tmp_path):
    """No set or dict order leaks into the files: two interpreters with different hash seeds agree."""
    import os
    import subprocess
    import sys

    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"h{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        code = ("from planner.cli import main; import sys; "
                f"sys.exit(main(['sample', '--out', {str(out)!r}, '--brokers', '6', '--topics', '7', '--days', '2']))")
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
        outs.append(_tree(out))
    assert outs[0] == outs[1]
