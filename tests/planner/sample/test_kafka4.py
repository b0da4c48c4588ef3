"""The Kafka 4.x sample (``poolplan sample --kafka-4``): the audit finds exactly what it plants, day-2 plans and
their bundles respect its cordons, and the default sample is untouched."""

from __future__ import annotations

import json
import re

import pytest

from pools.plan_file import load_plan
from pools.snapshot import load_snapshot
from tests.pools.audit.test_sample import planted

NEW_KINDS = {"replicas_on_cordoned", "log_dir_over_headroom", "min_isr_after_broker_loss"}


def _found(doc, truth):
    with_pool = {p["kind"] for p in truth["planted"] if "pool" in p}
    with_dir = {"log_dir_error", "replicas_on_cordoned", "log_dir_over_headroom"}
    return sorted((f["kind"], f["topic"], f["partition"], f["broker"], f["pool"] if f["kind"] in with_pool else None,
                   f["evidence"].get("log_dir") if f["kind"] in with_dir else None) for f in doc["findings"])


@pytest.fixture(scope="module")
def kafka4(tmp_path_factory):
    from planner.cli import main

    root = tmp_path_factory.mktemp("k4")
    sample = root / "sample"
    # 14 brokers: three pools, so some broker holds no partition the planted problems hold, and can be drained
    assert main(["sample", "--out", str(sample), "--days", "2", "--step", "900", "--brokers", "14", "--kafka-4"]) == 0
    assert main(["snapshot", "--describe", str(sample / "kafka" / "topics-describe.txt"),
                 "--log-dirs", str(sample / "kafka" / "log-dirs"), "--inventory", str(sample / "brokers.toml"),
                 "--broker-configs", str(sample / "kafka" / "broker-configs.txt"), "--cluster", "sample",
                 "--out", str(root / "snapshot.json")]) == 0
    return root, json.loads((sample / "truth.json").read_text())


def test_the_audit_lists_exactly_the_planted_problems_new_kinds_included(kafka4, run_cli):
    root, truth = kafka4
    assert NEW_KINDS <= {p["kind"] for p in truth["planted"]}
    code, _, err = run_cli("audit", "--snapshot", root / "snapshot.json", "--policy", root / "sample" / "pools.toml",
                           "--out", root / "audit")
    assert code == 1, err
    doc = json.loads((root / "audit" / "findings.json").read_text())
    assert _found(doc, truth) == planted(truth)
    # the audit's reassignment fixes (the fill seed) never add a replica on the cordoned broker
    cordoned = {p["broker"] for p in truth["planted"] if p["kind"] == "replicas_on_cordoned" and "log_dir" not in p}
    fixes = [(f, m.group(1)) for f in doc["findings"] if f["kind"] == "replica_outside_pool"
             and (m := re.search(r"<\(echo '(.*?)'\)", f["fix"]))]  # a held partition's fix is a comment
    assert fixes
    for f, text in fixes:
        [entry] = json.loads(text)["partitions"]
        assert not (set(entry["replicas"]) - set(f["evidence"]["replicas"])) & cordoned
    jbod = next(f for f in doc["findings"] if f["kind"] == "log_dir_over_headroom")
    assert 0.8 < jbod["evidence"]["utilisation"] <= 0.9 and jbod["evidence"]["broker_utilisation"] <= 0.35


def test_the_snapshot_reads_the_cordons_the_jbod_dirs_and_the_tiered_topic(kafka4):
    root, truth = kafka4
    snap = load_snapshot(root / "snapshot.json")
    whole = [b.id for b in snap.brokers if b.cordoned]
    dirs = [(b.id, b.cordoned_log_dirs, len(b.log_dirs)) for b in snap.brokers if b.cordoned_log_dirs]
    planted_cordons = {p["broker"] for p in truth["planted"] if p["kind"] == "replicas_on_cordoned"}
    assert len(whole) == 1 and len(dirs) == 1 and dirs[0][2] == 4 and planted_cordons == {whole[0], dirs[0][0]}
    tiered = [t for t in snap.topics if t.remote_storage_enabled]
    assert len(tiered) == 1 and tiered[0].retention_ms == 10 * tiered[0].local_retention_ms
    assert sorted({t.min_insync_replicas for t in snap.topics}) == [1, 2, 3]


@pytest.mark.parametrize("name", ["rebalance", "decommission"])
def test_day_2_plans_give_cordoned_brokers_nothing_and_drains_cordon_first(kafka4, run_cli, name):
    from pools.health import cluster_health

    root, _ = kafka4
    snap = load_snapshot(root / "snapshot.json")
    cordoned = {b.id for b in snap.brokers if b.cordoned}
    held = {b for p in snap.partitions if (p.topic, p.partition) in cluster_health(snap).partitions for b in p.replicas}
    # a broker holding no held partition whose rack keeps another open broker of its pool (so its pool keeps racks)
    drained = min(b.id for b in snap.brokers if b.pool and b.id not in held | cordoned and any(
        o.pool == b.pool and o.rack == b.rack and o.id != b.id and o.id not in cordoned for o in snap.brokers))
    operation = ["rebalance"] if name == "rebalance" else ["brokers", "decommission", "--broker", drained]
    out = root / name
    code, _, err = run_cli(*operation, "--snapshot", root / "snapshot.json", "--policy",
                           root / "sample" / "pools.toml", "--out", out / "plan")
    assert code == 0, err
    plan = load_plan(out / "plan" / "plan.json")
    assert plan.moves and not [m for m in plan.moves if (set(m.replicas) - set(m.old_replicas)) & cordoned]
    assert not [w for w in plan.warnings if w.startswith("validator:") and "cordoned" in w]
    code, _, err = run_cli("emit", "--plan", out / "plan" / "plan.json", "--snapshot", root / "snapshot.json",
                           "--out", out / "bundle", "--kafka-version", "4.3.1")
    assert code == 0, err
    runbook = (out / "bundle" / "runbook.md").read_text()
    assert (f"--entity-name {drained} --add-config 'cordoned.log.dirs=*'" in runbook) == (name == "decommission")


def test_the_default_sample_has_no_kafka_4_state(tiny):
    assert "kafka/broker-configs.txt" not in tiny
    assert "remote.storage.enable" not in tiny["kafka/topics-describe.txt"]
    assert not {p["kind"] for p in json.loads(tiny["truth.json"])["planted"]} & NEW_KINDS


@pytest.mark.parametrize("args", [("--seed", "2", "--brokers", "6", "--topics", "12"), ("--seed", "7")])
def test_other_sizes_plant_exactly_what_the_audit_finds(tmp_path, run_cli, args):
    sample = tmp_path / "sample"
    assert run_cli("sample", "--out", sample, "--days", "2", "--step", "900", "--kafka-4", *args)[0] == 0
    assert run_cli("snapshot", "--describe", sample / "kafka" / "topics-describe.txt", "--log-dirs",
                   sample / "kafka" / "log-dirs", "--inventory", sample / "brokers.toml", "--broker-configs",
                   sample / "kafka" / "broker-configs.txt", "--out", tmp_path / "snapshot.json")[0] == 0
    assert run_cli("audit", "--snapshot", tmp_path / "snapshot.json", "--policy", sample / "pools.toml",
                   "--out", tmp_path / "audit")[0] == 1
    truth = json.loads((sample / "truth.json").read_text())
    assert _found(json.loads((tmp_path / "audit" / "findings.json").read_text()), truth) == planted(truth)


def test_too_small_a_sample_for_the_variant_is_bad_input(tmp_path, run_cli):
    code, _, err = run_cli("sample", "--out", tmp_path / "s", "--days", "2", "--topics", "6", "--kafka-4")
    assert code == 2 and "--kafka-4:" in err and "use more --" in err and not (tmp_path / "s").exists()
