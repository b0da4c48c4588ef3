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


def _cluster_after(snapshot: dict, waves_dir: Path, waves: range) -> dict:
    """snapshot.json as the cluster is once ``waves`` ran: their partitions on their targets, led by the first."""
    doc = json.loads(json.dumps(snapshot))
    parts = {(p["topic"], p["partition"]): p for p in doc["partitions"]}
    for w in waves:
        for e in json.loads((waves_dir / f"wave-{w:03d}" / "reassignment.json").read_text())["partitions"]:
            p = parts[(e["topic"], e["partition"])]
            size = max(p["sizes"])
            p |= {"replicas": e["replicas"], "isr": e["replicas"], "leader": e["replicas"][0],
                  "sizes": [size] * len(e["replicas"]), "log_dirs": ["/data"] * len(e["replicas"])}
    return doc


def test_rebase_wave_rederives_a_wave_exactly_or_refuses_naming_the_drift(run_cli, tmp_path: Path) -> None:
    """`emit --rebase-wave N --snapshot FRESH`: on the cluster as planned after waves 1..N-1 it writes wave N's
    bundle byte for byte as the waved bundle has it; a partition moved by someone else, a broker gone or a new
    cordon on a destination refuse it (exit 1) naming the drift; a snapshot from before the earlier waves is stale
    (exit 2); nothing is written when it refuses."""
    budget = ("--wave-bytes", str(60 * 10**9))
    waves = tmp_path / "waves"
    assert run_cli("emit", "--plan", DATA / "plan.json", "--snapshot", DATA / "snapshot.json", "--out", waves,
                   *budget)[0] == 0
    count = len(json.loads((waves / "waves.json").read_text())["waves"])
    original = json.loads((DATA / "snapshot.json").read_text())

    def rebase(n: int, doc: dict, name: str, *extra: str) -> tuple[int, str, Path]:
        fresh = tmp_path / f"{name}.json"
        fresh.write_text(json.dumps(doc))
        out = tmp_path / f"out-{name}"
        code, _, err = run_cli("emit", "--plan", DATA / "plan.json", "--snapshot", fresh, "--out", out,
                               *extra, "--rebase-wave", str(n))
        return code, err, out

    for n in range(1, count + 1):
        code, err, out = rebase(n, _cluster_after(original, waves, range(1, n)), f"as-planned-{n}", *budget)
        assert code == 0, err
        mine = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
        theirs = sorted(p.relative_to(waves / f"wave-{n:03d}") for p in (waves / f"wave-{n:03d}").rglob("*")
                        if p.is_file())
        assert mine == theirs and all((out / f).read_bytes() == (waves / f"wave-{n:03d}" / f).read_bytes()
                                      for f in mine), n
    last = json.loads((waves / f"wave-{count:03d}" / "reassignment.json").read_text())["partitions"]
    rollback = json.loads((waves / f"wave-{count:03d}" / "rollback.json").read_text())["partitions"]
    fresh = _cluster_after(original, waves, range(1, count))
    moved = next(p for p in fresh["partitions"] if (p["topic"], p["partition"]) == (last[0]["topic"],
                                                                                     last[0]["partition"]))
    spare = next(b["id"] for b in fresh["brokers"] if b["id"] not in moved["replicas"])
    moved |= {"replicas": [spare, *moved["replicas"][1:]], "isr": [spare, *moved["replicas"][1:]], "leader": spare}
    name = f"{last[0]['topic']}-{last[0]['partition']}"
    code, err, out = rebase(count, fresh, "moved", *budget)
    assert code == 1 and f"{name} was moved by someone else: {moved['replicas']}, the plan moves it from " \
        f"{rollback[0]['replicas']}" in err and not out.exists(), err
    fresh = _cluster_after(original, waves, range(1, count))
    target = next(b for b in last[0]["replicas"] if b not in rollback[0]["replicas"])
    for b in fresh["brokers"]:
        if b["id"] == target:
            b["cordoned"] = True
    code, err, out = rebase(count, fresh, "cordoned", *budget)
    assert code == 1 and f"broker {target}, where {name} gets a replica, is cordoned" in err and not out.exists()
    fresh = _cluster_after(original, waves, range(1, count))
    gone = max(b["id"] for b in fresh["brokers"])
    fresh["brokers"] = [b for b in fresh["brokers"] if b["id"] != gone]  # decommissioned: its replicas still listed
    code, err, out = rebase(count, fresh, "gone", *budget)
    assert code == 1 and f"broker {gone} (pool" in err and "is gone" in err and not out.exists(), err
    if count > 1:
        code, err, out = rebase(count, original, "stale", *budget)
        assert code == 2 and "--snapshot: stale: none of the" in err and len(err.strip().splitlines()) == 1
        assert not out.exists()
    code, err, out = rebase(1, _cluster_after(original, waves, range(1, 2)), "ran-already", *budget)
    assert code == 1 and "is already on its target" in err and "(wave 1 ran?)" in err and not out.exists()
    code, err, out = rebase(1, original, "no-budget")
    assert code == 2 and "--rebase-wave: expected the --wave-bytes or --wave-hours" in err and not out.exists()
    code, err, out = rebase(count + 1, original, "no-such-wave", *budget)
    assert code == 2 and f"--rebase-wave: expected a wave of the plan, 1 to {count}, got {count + 1}" in err
