"""A cordon (KIP-1066) is honoured at every exit: on a 14-broker JBOD cluster cordoned from each of the three
sources (the inventory, ``kafka-configs.sh --describe`` output, ``isCordoned`` in the log-dirs capture), every
command that writes targets (plan, rebalance, brokers add/decommission/replace, set-replication-factor, the audit's
fixes, emit's reassignment, batches, waves and intra-broker moves) names no cordoned broker or dir for anything
new, and a plan that would need one is refused naming the partition, the broker and the cordon's source.

The check is this file's own: it reads the cordons from `tests.cli.jbod_cluster`, not from the planner.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .jbod_cluster import CORDONED_BROKERS, CORDONED_DIRS, SOURCES, partitions, write_cluster

pytestmark = pytest.mark.xdist_group("cli-cordons")

#: Each source's name as the snapshot gives it for broker 5's cordon.
SOURCE_NAME = {"inventory": "brokers.toml (cordoned = true)", "configs": "broker-configs.txt (cordoned.log.dirs=*)",
               "is_cordoned": "log-dirs.json (isCordoned)"}
_REASSIGN = re.compile(r"<\(echo '(\{.*?\})'\)")


@pytest.fixture(scope="module", params=SOURCES)
def cluster(request, tmp_path_factory) -> tuple[str, dict[str, Path]]:
    """The cluster cordoned from one source, its snapshot taken with ``poolplan snapshot``."""
    from planner.cli import main

    source = request.param
    files = write_cluster(tmp_path_factory.mktemp(source), source)
    extra = ["--broker-configs", str(files["broker_configs"])] if "broker_configs" in files else []
    snap = files["describe"].parent / "snapshot.json"
    assert main(["snapshot", "--describe", str(files["describe"]), "--log-dirs", str(files["log_dirs"]),
                 "--inventory", str(files["inventory"]), *extra, "--out", str(snap)]) == 0
    return source, files | {"snapshot": snap}


def _current() -> dict[tuple[str, int], tuple[int, ...]]:
    return partitions()


def _dir_of(snapshot: Path) -> dict[tuple[str, int, int], str]:
    doc = json.loads(snapshot.read_text())
    return {(p["topic"], p["partition"], b): d for p in doc["partitions"]
            for b, d in zip(p["replicas"], p.get("log_dirs") or [None] * len(p["replicas"]))}


def _crossings(entries: list[dict], dirs: dict[tuple[str, int, int], str]) -> list[str]:
    """Each replica a reassignment adds to a cordoned broker, and each cordoned dir it names for a replica not
    there already."""
    current, out = _current(), []
    for e in entries:
        key = (e["topic"], e["partition"])
        for j, b in enumerate(e["replicas"]):
            d = (e.get("log_dirs") or ["any"] * len(e["replicas"]))[j]
            if b in CORDONED_BROKERS and b not in current[key]:
                out.append(f"{key}: new replica on cordoned broker {b}")
            if d != "any" and (b in CORDONED_BROKERS or (b, d) in CORDONED_DIRS) and dirs.get((*key, b)) != d:
                out.append(f"{key}: cordoned dir {d} of broker {b} named")
    return out


def _bundle_crossings(bundle: Path, snapshot: Path) -> list[str]:
    """Crossings in every reassignment file of a bundle (waves included) but rollback.json, which restores."""
    dirs, out = _dir_of(snapshot), []
    files = {p: json.loads(p.read_text()) for p in sorted(bundle.rglob("*.json")) if p.name != "rollback.json"}
    files = {p: doc for p, doc in files.items() if isinstance(doc, dict) and doc.get("version") == 1
             and "partitions" in doc and p.name != "leader-election.json"}
    assert files, f"{bundle}: no reassignment file"
    for path, doc in files.items():
        out += [f"{path.relative_to(bundle)}: {c}" for c in _crossings(doc["partitions"], dirs)]
    runbook = "\n".join(p.read_text() for p in bundle.rglob("runbook.md"))
    out += [f"runbook names log-dirs/broker-{b}.json" for b in CORDONED_BROKERS
            if f"log-dirs/broker-{b}.json" in runbook]
    return out


def _args(files: dict[str, Path]) -> list[str]:
    return ["--snapshot", str(files["snapshot"]), "--policy", str(files["policy"]), "--profile", str(files["profile"])]


def _emit_all(run_cli, plan: Path, files: dict[str, Path], out: Path) -> list[str]:
    """Emit ``plan`` one-shot and in waves, both with log dirs balanced; every crossing in what they wrote."""
    crossed = []
    for name, extra in (("one-shot", []), ("waves", ["--wave-bytes", str(200 * 10**9)])):
        code, _, err = run_cli("emit", "--plan", plan, "--snapshot", files["snapshot"], "--out", out / name,
                               "--log-dir-placement", "balance", "--kafka-version", "4.3.1", *extra)
        assert code == 0, err
        crossed += _bundle_crossings(out / name, files["snapshot"])
    return crossed


def test_every_cordon_source_gives_the_same_cordons_and_names_itself(cluster) -> None:
    source, files = cluster
    doc = json.loads(files["snapshot"].read_text())
    cordoned = {b["id"]: b for b in doc["brokers"] if b.get("cordoned") or b.get("cordoned_log_dirs")}
    assert sorted(b for b, x in cordoned.items() if x.get("cordoned")) == list(CORDONED_BROKERS)
    assert sorted((b, d) for b, x in cordoned.items() if not x.get("cordoned") for d in x["cordoned_log_dirs"]) == \
        sorted(CORDONED_DIRS)
    assert any(SOURCE_NAME[source] in s for _, s in cordoned[5]["cordon_sources"])


#: Every command that writes a plan, as run here (each also emitted one-shot and in waves).
COMMANDS = {
    "rebalance": ["rebalance"],
    "add": ["brokers", "add", "--pool", "pay", "--broker", "13", "--broker", "14"],
    "drain-4": ["brokers", "decommission", "--broker", "4"],
    "drain-3": ["brokers", "decommission", "--broker", "3"],
    "drain-8": ["brokers", "decommission", "--broker", "8"],
    "replace": ["brokers", "replace", "--old", "4", "--new", "13"],
    "rf": ["set-replication-factor", "--topic", "pay[.]refunds", "--replication-factor", "3"],
}


def _walk(run_cli, argv: list[str], files: dict[str, Path], out: Path) -> dict:
    """Run ``argv``, check its plan and both bundles for crossings; the plan."""
    code, _, err = run_cli(*argv, *_args(files), "--out", out / "plan")
    assert code == 0, err
    plan = json.loads((out / "plan" / "plan.json").read_text())
    assert not any("cordon" in w and "validator" in w for w in plan["warnings"]), plan["warnings"]
    assert any(m["replicas"] != m["old_replicas"] for m in plan["partitions"])
    assert _crossings(plan["partitions"], {}) == []
    assert _emit_all(run_cli, out / "plan" / "plan.json", files, out) == []
    return plan


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_day_2_commands_cross_no_cordon(cluster, command, tmp_path, run_cli) -> None:
    _, files = cluster
    plan = _walk(run_cli, COMMANDS[command], files, tmp_path)
    if command == "add":  # broker 14 joins pool pay but, cordoned, takes nothing
        assert plan["brokers"]["14"] == "pay" and not any(14 in m["replicas"] for m in plan["partitions"])


@pytest.mark.slow  # the quarterly placement runs to its time limit on this cluster (about a minute, loaded)
def test_the_quarterly_plan_crosses_no_cordon(cluster, tmp_path, run_cli) -> None:
    _, files = cluster
    _walk(run_cli, ["plan", "--time-limit", "20"], files, tmp_path)


def test_audit_fixes_cross_no_cordon(cluster, tmp_path, run_cli) -> None:
    source, files = cluster
    code, _, err = run_cli("audit", *_args(files), "--out", tmp_path / "audit")
    assert code in (0, 1), err
    findings = json.loads((tmp_path / "audit" / "findings.json").read_text())["findings"]
    dirs = _dir_of(files["snapshot"])
    entries = [e for f in findings for m in _REASSIGN.finditer(f["fix"]) for e in json.loads(m.group(1))["partitions"]]
    assert entries, "the audit proposes moves (a cordoned dir holding replicas, at least)"
    assert _crossings(entries, dirs) == []
    kinds = {(f["kind"], f["broker"], f["evidence"].get("log_dir")) for f in findings}
    assert {("replicas_on_cordoned", 5, None), ("replicas_on_cordoned", 10, None)} <= kinds
    # lifting the cordon: Kafka's config where it holds one, else the inventory that gives it
    [whole] = [f["fix"] for f in findings if f["kind"] == "replicas_on_cordoned" and f["broker"] == 5]
    if source == "inventory":
        assert re.search(r"should serve on: remove its cordon from \S*brokers\.toml \(cordoned = true\)$", whole)
    else:
        assert "should serve on: kafka-configs.sh" in whole and whole.endswith("5 --delete-config cordoned.log.dirs")


def test_a_plan_needing_a_cordoned_target_is_refused_naming_it(cluster, tmp_path, run_cli) -> None:
    source, files = cluster
    # a destination that is cordoned
    code, _, err = run_cli("brokers", "decommission", *_args(files), "--broker", "4", "--to", "5",
                           "--out", tmp_path / "to5")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--to: broker 5" in err and "cordoned" in err
    # the rack's only other broker is cordoned: refused, the rack and the cordon named
    code, _, err = run_cli("brokers", "decommission", *_args(files), "--broker", "2", "--out", tmp_path / "d2")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "rack 'r2' of pool 'pay' would keep broker(s) 5" in err and SOURCE_NAME[source] in err
    assert not (tmp_path / "d2" / "plan.json").exists()
    # a hand-made plan onto cordoned broker 5 is refused by emit, naming partition, broker and source
    code, _, _ = run_cli("brokers", "decommission", *_args(files), "--broker", "4", "--out", tmp_path / "d4")
    assert code == 0
    doc = json.loads((tmp_path / "d4" / "plan.json").read_text())
    moved = next(m for m in doc["partitions"] if 4 in m["old_replicas"] and 5 not in m["old_replicas"])
    moved["replicas"] = [5 if b not in moved["old_replicas"] else b for b in moved["replicas"]]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    code, _, err = run_cli("emit", "--plan", tmp_path / "bad.json", "--snapshot", files["snapshot"],
                           "--out", tmp_path / "bad-bundle")
    name = f"{moved['topic']}-{moved['partition']}"
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"partition {name}: a new replica on broker 5, which is cordoned" in err and SOURCE_NAME[source] in err
    assert not (tmp_path / "bad-bundle").exists()


def _drain_runbook(run_cli, files: dict[str, Path], broker: int, out: Path) -> str:
    assert run_cli("brokers", "decommission", *_args(files), "--broker", str(broker), "--out", out / "d")[0] == 0
    assert run_cli("emit", "--plan", out / "d" / "plan.json", "--snapshot", files["snapshot"], "--out", out / "b",
                   "--kafka-version", "4.3.1")[0] == 0
    return (out / "b" / "runbook.md").read_text()


def _config_steps(runbook: str, broker: int) -> list[str]:
    """Each ``kafka-configs.sh --alter`` of ``broker`` in the runbook's order, with the rollback's execution between:
    ``set <value>``, ``delete`` or ``ROLLBACK``."""
    steps = re.findall(rf"--entity-name {broker} --(add-config 'cordoned\.log\.dirs=([^']*)'|delete-config "
                       r"cordoned\.log\.dirs)|(rollback\.json --execute)", runbook)
    return ["ROLLBACK" if rollback else f"set {value}" if value else "delete" for _, value, rollback in steps]


#: What Kafka holds before the drain as each source says: the inventory's cordon is the planner's, not Kafka's.
HELD_DIR = {"inventory": None, "configs": "/var/lib/kafka/data-1", "is_cordoned": "/var/lib/kafka/data-1"}
HELD_BROKER = {"inventory": None, "configs": "*", "is_cordoned": "[/var/lib/kafka/data-0,/var/lib/kafka/data-1]"}


def test_the_rollback_lifts_the_drain_cordon_and_restores_the_captured_dir_cordon(cluster, tmp_path, run_cli) -> None:
    source, files = cluster
    held = HELD_DIR[source]
    steps = _config_steps(_drain_runbook(run_cli, files, 3, tmp_path), 3)
    assert steps == ["set *", "delete", "ROLLBACK", *([f"set {held}"] if held else [])], steps


def test_draining_a_cordoned_broker_lifts_its_cordon_for_the_rollback_and_restores_it(cluster, tmp_path,
                                                                                      run_cli) -> None:
    source, files = cluster
    held = HELD_BROKER[source]
    steps = _config_steps(_drain_runbook(run_cli, files, 5, tmp_path), 5)
    # Kafka already holds broker 5 cordoned unless only the inventory says so: then the pre-flight cordons it.
    assert steps == (["delete", "ROLLBACK", f"set {held}"] if held else ["set *", "delete", "ROLLBACK"]), steps


def test_every_wave_lifts_the_cordon_before_its_rollback_returns_replicas_to_the_cordoned_broker(cluster, tmp_path,
                                                                                                run_cli) -> None:
    source, files = cluster
    assert run_cli("brokers", "decommission", *_args(files), "--broker", "5", "--out", tmp_path / "d")[0] == 0
    assert run_cli("emit", "--plan", tmp_path / "d" / "plan.json", "--snapshot", files["snapshot"], "--out",
                   tmp_path / "b", "--kafka-version", "4.3.1", "--wave-bytes", str(100 * 10**9))[0] == 0
    waves = sorted((tmp_path / "b").glob("wave-*/"))
    assert len(waves) > 1
    for i, wave in enumerate(waves):
        returned = any(5 in e["replicas"] for e in json.loads((wave / "rollback.json").read_text())["partitions"])
        steps = _config_steps((wave / "runbook.md").read_text(), 5)
        # What Kafka holds when the wave starts: the captured cordon, else the `*` wave 1's pre-flight set.
        held = HELD_BROKER[source] or ("*" if i else None)
        expected = [] if held else ["set *"]
        if returned:
            expected += ["delete", "ROLLBACK", *([f"set {held}"] if held else [])]
        assert steps == expected, (wave.name, steps)


def test_rolling_back_one_wave_restores_the_cordon_that_wave_started_from(cluster, tmp_path, run_cli) -> None:
    """Draining broker 3 (its data-1 cordoned in Kafka by two sources): wave 1's pre-flight sets ``*``, so a later
    wave's rollback puts back ``*``, the state before that wave, not the plan's start; the runbook says why."""
    source, files = cluster
    assert run_cli("brokers", "decommission", *_args(files), "--broker", "3", "--out", tmp_path / "d")[0] == 0
    assert run_cli("emit", "--plan", tmp_path / "d" / "plan.json", "--snapshot", files["snapshot"], "--out",
                   tmp_path / "b", "--kafka-version", "4.3.1", "--wave-bytes", str(50 * 10**9))[0] == 0
    waves = sorted((tmp_path / "b").glob("wave-*/"))
    assert len(waves) > 1
    for i, wave in enumerate(waves):
        runbook = (wave / "runbook.md").read_text()
        returned = any(3 in e["replicas"] for e in json.loads((wave / "rollback.json").read_text())["partitions"])
        assert returned, wave.name
        steps = _config_steps(runbook, 3)
        if i == 0:
            held = HELD_DIR[source]
            assert steps == ["set *", "delete", "ROLLBACK", *([f"set {held}"] if held else [])], steps
        else:
            assert steps == ["delete", "ROLLBACK", "set *"], (wave.name, steps)
            assert "for broker 3\n   the `*` an earlier wave's pre-flight set" in runbook


def test_an_inventory_cordon_on_a_dir_the_broker_lacks_is_exit_2(tmp_path, run_cli) -> None:
    files = write_cluster(tmp_path, "inventory")
    inventory = files["inventory"].read_text().replace('"/var/lib/kafka/data-1"]', '"/var/lib/kafka/data-9"]')
    files["inventory"].write_text(inventory)
    out = tmp_path / "snapshot.json"
    code, _, err = run_cli("snapshot", "--describe", files["describe"], "--log-dirs", files["log_dirs"],
                           "--inventory", files["inventory"], "--out", out)
    assert code == 2 and not out.exists() and "Traceback" not in err
    assert err.strip().splitlines() == [f"error: {files['inventory']}: broker 3: cordoned_log_dirs: "
                                        "'/var/lib/kafka/data-9' is not one of its log dirs "
                                        "['/var/lib/kafka/data-0', '/var/lib/kafka/data-1'] (kafka-log-dirs.sh)"]
