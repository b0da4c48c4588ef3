"""What-if: the scenario's changes to the inputs, its file's validation, and its figures against a full run."""

from __future__ import annotations

import json
import math
import tomllib
from collections import Counter
from dataclasses import fields, replace
from pathlib import Path

import pytest
import tomli_w

from planner.cli import main
from planner.stages.whatif import parse_changes
from planner.whatif import SCALED_FIELDS, Scenario, apply_scenario, load_scenario, scale_row
from pools.errors import InputError
from pools.policy import load_policy
from pools.profile import load_profile, save_profile
from pools.snapshot import Broker, load_snapshot, save_snapshot

from .report.conftest import build_run
from .report.sample_run import build_sample_run


def _kept(run: Path, topic: str, storage: int, bytes_in: float) -> int:
    """A scaled size now, no more than the topic's retention keeps (snapshot configs, delete policy)."""
    snapshot = json.loads((run / "snapshot.json").read_text())
    state = next((t for t in snapshot["topics"] if t["topic"] == topic), None)
    if state is None or "delete" not in state.get("configs", {}).get("cleanup.policy", "delete"):
        return storage
    configs = state.get("configs", {})
    parts = sum(1 for p in snapshot["partitions"] if p["topic"] == topic)
    tiered = configs.get("remote.storage.enable") == "true"
    for key, scale in (("retention.ms", bytes_in / 1000.0), ("retention.bytes", parts)):
        values = [int(configs[key])] if key in configs else []
        if tiered:
            local = int(configs.get(f"local.{key}", -2))
            values.append(values[0] if local == -2 and values else local)
        storage = min([storage, *(math.floor(v * scale) for v in values if v > 0)])
    return storage


def test_a_scaled_topic_keeps_no_more_than_its_retention(tmp_path):
    run = build_run(tmp_path / "run")
    snapshot = json.loads((run / "snapshot.json").read_text())
    topic = "a-x"
    for t in snapshot["topics"]:
        if t["topic"] == topic:
            t.setdefault("configs", {})["retention.bytes"] = "1000"
    (run / "snapshot.json").write_text(json.dumps(snapshot))
    _, profile, _ = apply_scenario(run, run / "pools.toml", Scenario(demand=(("tenant", "ads", 2.0),)),
                                   tmp_path / "out")
    parts = sum(1 for p in snapshot["partitions"] if p["topic"] == topic)
    before = load_profile(run / "profile")[topic]
    assert before.storage_bytes * 2 > 1000 * parts  # scaled, it would outgrow what retention.bytes keeps
    assert load_profile(profile)[topic].storage_bytes == 1000 * parts


def test_apply_scales_a_tenants_topics_adds_brokers_and_moves_a_tenant(tmp_path):
    run = build_run(tmp_path / "run")
    scenario = Scenario(demand=(("tenant", "ads", 2.0),), add_brokers=(("b", 2),), move_tenant=(("ads", "b"),))
    snap, profile, policy = apply_scenario(run, run / "pools.toml", scenario, tmp_path / "out")
    before, after = load_profile(run / "profile"), load_profile(profile)
    for name in SCALED_FIELDS:  # ads owns a-x: every rate, size and forecast doubles; b-y is untouched
        if getattr(before["a-x"], name) is None:  # unmeasured (the tiered columns) stays so
            assert getattr(after["a-x"], name) is None, name
            continue
        assert getattr(after["a-x"], name) == pytest.approx(2 * getattr(before["a-x"], name)), name
    assert after["b-y"] == before["b-y"]
    assert after["a-x"].bytes_in_p99_growth_per_day == before["a-x"].bytes_in_p99_growth_per_day
    brokers = load_snapshot(snap).brokers
    assert [(b.id, b.pool, b.capacity.nw_in) for b in brokers[-2:]] == [(7, "b", 1e8), (8, "b", 1e8)]
    assert "ads" in next(p for p in load_policy(policy).pools if p.name == "b").tenants
    assert all("ads" not in p.tenants for p in load_policy(policy).pools if p.name != "b")
    assert load_scenario(tmp_path / "out" / "scenario.toml") == scenario


@pytest.mark.parametrize(("text", "message"), [
    ("[[demand]]\ntenant = 'a'\nfactor = 0\n", r"s.toml: demand\[0\].factor: expected a positive number, got 0"),
    ("[[demand]]\ntenant = 'a'\npool = 'p'\nfactor = 2\n", r"demand\[0\]: expected exactly one of tenant or pool"),
    ("[[add_brokers]]\npool = 'p'\ncount = 1.5\n", r"add_brokers\[0\].count: expected a whole number >= 1"),
    ("[[move_tenant]]\ntenant = 'a'\n", r"move_tenant\[0\].pool: expected a name, got None"),
    ("[[lose]]\n", r"s.toml: lose: unknown table"),
    ("[[demand]\n", r"s.toml: not valid TOML"),
])
def test_a_bad_scenario_names_the_file_and_field(tmp_path, text, message):
    (tmp_path / "s.toml").write_text(text)
    with pytest.raises(InputError, match=message):
        load_scenario(tmp_path / "s.toml")


@pytest.mark.parametrize(("flags", "message"), [
    ((("ads=2",), (), ()), r"--demand 'ads=2': expected tenant:NAME=FACTOR"),
    ((("tenant:ads=-1",), (), ()), r"factor must be a positive number"),
    (((), ("b=0",), ()), r"--add-brokers 'b=0': the count must be a whole number >= 1"),
    (((), (), ("ads",)), r"--move-tenant 'ads': expected NAME=VALUE"),
])
def test_bad_flags_name_the_flag(flags, message):
    with pytest.raises(InputError, match=message):
        parse_changes(*flags)


def test_unknown_names_exit_2_with_one_line(tmp_path, capsys):
    run = build_run(tmp_path / "run")
    code = main(["whatif", str(run), "--policy", str(run / "pools.toml"), "--demand", "tenant:nobody=2"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown tenant 'nobody'" in err[0]
    assert not (run / "whatif").exists()


@pytest.mark.slow
def test_a_scenarios_figures_are_those_of_a_full_run_with_the_changed_inputs(tmp_path):
    def run_cli(*argv):
        return main([str(a) for a in argv]), "", ""

    run = build_sample_run(tmp_path / "run", run_cli)
    policy, groups = run / "pools-fixed.toml", run / "sample" / "kafka" / "consumer-groups.txt"
    assert run_cli("whatif", run, "--policy", policy, "--demand", "tenant:ads=2.5", "--consumer-groups", groups,
                   "--out", tmp_path / "whatif")[0] in (0, 1)
    # the full run: the changed profile written here, independently, then plan and report as usual
    full = tmp_path / "full"
    full.mkdir()
    (full / "snapshot.json").write_bytes((run / "snapshot.json").read_bytes())
    tenant = load_policy(policy).tenant_of
    rows = []
    for topic, row in sorted(load_profile(run / "profile").items()):
        if tenant(topic) == "ads":
            row = type(row)(**{f.name: (getattr(row, f.name) if f.name not in SCALED_FIELDS or getattr(row, f.name)
                                        is None else (round(getattr(row, f.name) * 2.5) if f.name in (
                                            "storage_bytes", "remote_log_size_bytes")
                                                      else getattr(row, f.name) * 2.5)) for f in fields(row)})
            row = replace(row, storage_bytes=_kept(run, topic, row.storage_bytes, row.bytes_in_p99))
        rows.append(row)
    save_profile(full / "profile", rows)
    assert run_cli("plan", "--snapshot", full / "snapshot.json", "--policy", policy, "--profile", full / "profile",
                   "--consumer-groups", groups, "--out", full / "plan")[0] in (0, 1)
    assert run_cli("report", full, "--policy", policy, "--compare", run)[0] == 0
    whatif = json.loads((tmp_path / "whatif" / "plan" / "plan.json").read_text())
    assert whatif == json.loads((full / "plan" / "plan.json").read_text())
    assert (tmp_path / "whatif" / "report" / "report.md").read_text() == (full / "report" / "report.md").read_text()
    assert "| to move |" in (full / "report" / "report.md").read_text()


def test_losing_a_rack_removes_its_brokers_and_elects_leaders_as_kafka_does(tmp_path):
    run = build_run(tmp_path / "run")
    snapshot = load_snapshot(run / "snapshot.json")
    rack = snapshot.racks[0]
    gone = {b.id for b in snapshot.brokers if b.rack == rack}
    snap, _, policy = apply_scenario(run, run / "pools.toml", Scenario(lose_rack=(rack,)), tmp_path / "out")
    after = load_snapshot(snap)
    assert {b.id for b in after.brokers} == {b.id for b in snapshot.brokers} - gone
    for old, new in zip(snapshot.partitions, after.partitions, strict=True):
        assert new.replicas == old.replicas  # the assignment keeps the dead ids until a reassignment
        live_isr = [b for b in old.isr if b not in gone]
        assert new.isr == (tuple(live_isr) or old.isr)
        if old.leader not in gone:  # a live leader stays; a partition offline before stays offline
            assert new.leader == old.leader
        else:  # the first replica in assignment order that is alive and in sync, else offline
            assert new.leader == next((b for b in old.replicas if b in live_isr), None)
    assert all(not set(p.brokers) & gone for p in load_policy(policy).pools)
    lost = json.loads((tmp_path / "out" / "lost_racks.json").read_text())
    hit = [f"{p.topic}-{p.partition}" for p in after.partitions if set(p.replicas) & gone]
    assert sorted(lost["under_replicated"] + lost["offline"]) == sorted(hit) and lost["brokers"] == sorted(gone)
    assert load_scenario(tmp_path / "out" / "scenario.toml") == Scenario(lose_rack=(rack,))


def test_brokers_added_with_a_lost_rack_go_to_the_racks_left(tmp_path):
    run = build_run(tmp_path / "run")
    before = load_snapshot(run / "snapshot.json")
    rack = before.racks[0]
    snap, _, policy = apply_scenario(run, run / "pools.toml", Scenario(add_brokers=(("b", 3),), lose_rack=(rack,)),
                                     tmp_path / "out")
    after = load_snapshot(snap).brokers
    assert all(b.rack != rack for b in after)
    assert len(after) == sum(b.rack != rack for b in before.brokers) + 3  # none of the three was added to be lost
    new = load_policy(policy).new_broker
    assert new is not None and rack not in new.racks


def test_an_unknown_rack_exits_2_with_one_line(tmp_path, capsys):
    run = build_run(tmp_path / "run")
    assert main(["whatif", str(run), "--policy", str(run / "pools.toml"), "--lose-rack", "nowhere"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown rack 'nowhere'" in err[0]


@pytest.mark.slow
def test_losing_a_rack_matches_a_full_run_without_it(tmp_path, capsys):
    def run_cli(*argv):
        return main([str(a) for a in argv]), "", ""

    run = build_sample_run(tmp_path / "run", run_cli)
    policy, groups = run / "pools-fixed.toml", run / "sample" / "kafka" / "consumer-groups.txt"
    snapshot = json.loads((run / "snapshot.json").read_text())
    rack = sorted({b["rack"] for b in snapshot["brokers"]})[-1]
    (tmp_path / "s.toml").write_text(f'[[lose_rack]]\nrack = "{rack}"\n')
    assert run_cli("whatif", run, "--policy", policy, "--scenario", tmp_path / "s.toml", "--consumer-groups", groups,
                   "--out", tmp_path / "whatif")[0] == 0
    said = capsys.readouterr()
    assert "planned with the rack rules relaxed: pool " in said.out + said.err  # said, not silently
    # the full run: the snapshot as kafka-topics.sh and the inventory show it after the loss, written here
    gone = {b["id"] for b in snapshot["brokers"] if b["rack"] == rack}
    snapshot["brokers"] = [b for b in snapshot["brokers"] if b["id"] not in gone]
    for p in snapshot["partitions"]:
        isr = [b for b in p.get("isr", []) if b not in gone] or p.get("isr", [])
        if p.get("leader") in gone:
            p["leader"] = next((b for b in p["replicas"] if b in isr), None)
        p["isr"] = isr
    full = tmp_path / "full"
    (full / "profile").mkdir(parents=True)
    (full / "snapshot.json").write_text(json.dumps(snapshot))
    for f in (run / "profile").iterdir():
        (full / "profile" / f.name).write_bytes(f.read_bytes())
    doc = tomllib.loads(policy.read_text())  # no pin on a lost broker, no new broker on the lost rack
    for pool in doc.get("pool", []):
        pool["brokers"] = [b for b in pool.get("brokers", []) if b not in gone]
    doc["new_broker"]["racks"] = [r for r in doc["new_broker"].get("racks", []) if r != rack]
    (full / "pools.toml").write_text(tomli_w.dumps(doc))
    # the run's own rack rules on the racks left: the normal plan stage still refuses them
    assert run_cli("plan", "--snapshot", full / "snapshot.json", "--policy", full / "pools.toml", "--profile",
                   full / "profile", "--consumer-groups", groups, "--out", full / "refused")[0] == 2
    # the rules an operator plans a lost rack with: min_racks and RF as far as the racks left allow
    left = len({b["rack"] for b in snapshot["brokers"]} | set(doc["new_broker"]["racks"]))
    relaxed = [f"pool {p['name']!r}: min_racks {p['min_racks']} → {left}: rack {rack} lost" for p in doc["pool"]
               if p.get("min_racks", 0) > left]
    for pool in doc["pool"]:
        if pool.get("min_racks", 0) > left:
            pool["min_racks"] = left
    rf = max(len(p["replicas"]) for p in snapshot["partitions"])
    if rf > left:
        doc["defaults"]["rf_above_racks"] = "wrap"
    (full / "pools.toml").write_text(tomli_w.dumps(doc))
    assert run_cli("plan", "--snapshot", full / "snapshot.json", "--policy", full / "pools.toml", "--profile",
                   full / "profile", "--consumer-groups", groups, "--out", full / "plan")[0] in (0, 1)
    assert run_cli("report", full, "--policy", full / "pools.toml", "--compare", run)[0] == 0
    lost = json.loads((tmp_path / "whatif" / "lost_racks.json").read_text())
    assert relaxed and lost["relaxed"][:len(relaxed)] == relaxed and lost["plan_refused"] is None
    assert (rf > left) == any("rf_above_racks refuse → wrap" in note for note in lost["relaxed"])
    plan = json.loads((full / "plan" / "plan.json").read_text())
    assert json.loads((tmp_path / "whatif" / "plan" / "plan.json").read_text()) == plan
    # no lost broker stays in a pool; a broker still to buy may take a lost id no replica names (the changed
    # snapshot knows nothing of it, as the full run's does not), on a rack left
    bought = {str(b["id"]): b["rack"] for b in plan.get("planned_brokers", [])}
    assert not {b for b, pool in plan["brokers"].items() if pool and b not in bought} & {str(b) for b in gone}
    assert rack not in bought.values()
    # the lost replicas are rebuilt on the racks left from their in-sync leaders, at most ceil(RF / racks) a rack
    racks = {b["id"]: b["rack"] for b in snapshot["brokers"]} | {int(b): r for b, r in bought.items()}
    lost = gone - {int(b) for b in bought}
    rebuilt = [m for m in plan["partitions"] if set(m["old_replicas"]) & gone and m["replicas"] != m["old_replicas"]]
    assert rebuilt and all(m["reason"]["rule"] == "evacuate" and not set(m["replicas"]) & lost for m in rebuilt)
    assert all(max(Counter(racks.get(b) for b in m["replicas"]).values()) <= math.ceil(len(m["replicas"]) / left)
               for m in rebuilt)
    page = (full / "report" / "report.md").read_text()
    assert (tmp_path / "whatif" / "report" / "report.md").read_text() == page
    assert len(json.loads((tmp_path / "whatif" / "snapshot.json").read_text())["brokers"]) == len(snapshot["brokers"])
    assert "## Runway" in page and "No N−1 view" not in page and "No plan:" not in page  # every section answers


@pytest.mark.slow
def test_adding_brokers_and_a_pools_demand_match_a_full_run_with_them(tmp_path):
    def run_cli(*argv):
        return main([str(a) for a in argv]), "", ""

    run = build_sample_run(tmp_path / "run", run_cli)
    policy, groups = run / "pools-fixed.toml", run / "sample" / "kafka" / "consumer-groups.txt"
    rules = load_policy(policy)
    pool = rules.pools[0].name
    assert run_cli("whatif", run, "--policy", policy, "--add-brokers", f"{pool}=2", "--demand", f"pool:{pool}=1.5",
                   "--consumer-groups", groups, "--out", tmp_path / "whatif")[0] in (0, 1)
    # the full run: two brokers of the new type racked in turn, the pool's topics (the run's plan) 1.5 × as busy
    full = tmp_path / "full"
    full.mkdir()
    snapshot = load_snapshot(run / "snapshot.json")
    racks = list(rules.new_broker.racks) or list(snapshot.racks)
    first = max(b.id for b in snapshot.brokers) + 1
    added = tuple(Broker(first + i, racks[i % len(racks)], rules.new_broker.capacity, pool) for i in range(2))
    save_snapshot(replace(snapshot, brokers=snapshot.brokers + added), full / "snapshot.json")
    placed = json.loads((run / "plan" / "plan.json").read_text())["topics"]
    rows = [scale_row(r, 1.5) if placed.get(t) == pool else r for t, r in sorted(load_profile(run / "profile").items())]
    rows = [replace(r, storage_bytes=_kept(run, r.topic, r.storage_bytes, r.bytes_in_p99)) if placed.get(r.topic) == pool
            else r for r in rows]
    save_profile(full / "profile", rows)
    assert run_cli("plan", "--snapshot", full / "snapshot.json", "--policy", policy, "--profile", full / "profile",
                   "--consumer-groups", groups, "--out", full / "plan")[0] in (0, 1)
    assert run_cli("report", full, "--policy", policy, "--compare", run)[0] == 0
    assert json.loads((tmp_path / "whatif" / "plan" / "plan.json").read_text()) == \
        json.loads((full / "plan" / "plan.json").read_text())
    assert (tmp_path / "whatif" / "report" / "report.md").read_text() == (full / "report" / "report.md").read_text()


@pytest.mark.slow
def test_moving_a_tenant_matches_a_full_run_with_the_policy_changed(tmp_path):
    def run_cli(*argv):
        return main([str(a) for a in argv]), "", ""

    run = build_sample_run(tmp_path / "run", run_cli)
    policy, groups = run / "pools-fixed.toml", run / "sample" / "kafka" / "consumer-groups.txt"
    doc = tomllib.loads(policy.read_text())
    # a tenant no other tenant must be kept apart from, into a pool that is not its own
    free = {t["name"] for t in doc["tenant"]} - {n for t in doc["tenant"] for n in t.get("must_not_share_with", [])} \
        - {t["name"] for t in doc["tenant"] if t.get("must_not_share_with")}
    tenant, home = next((t, p["name"]) for p in doc["pool"] for t in p.get("tenants", []) if t in free)
    target = next(p["name"] for p in doc["pool"] if p["name"] != home)
    assert run_cli("whatif", run, "--policy", policy, "--move-tenant", f"{tenant}={target}", "--consumer-groups",
                   groups, "--out", tmp_path / "whatif")[0] in (0, 1)
    full = tmp_path / "full"
    (full / "profile").mkdir(parents=True)
    (full / "snapshot.json").write_bytes((run / "snapshot.json").read_bytes())
    for f in (run / "profile").iterdir():
        (full / "profile" / f.name).write_bytes(f.read_bytes())
    for p in doc["pool"]:
        p["tenants"] = [t for t in p.get("tenants", []) if t != tenant] + ([tenant] if p["name"] == target else [])
    (full / "pools.toml").write_text(tomli_w.dumps(doc))
    assert run_cli("plan", "--snapshot", full / "snapshot.json", "--policy", full / "pools.toml", "--profile",
                   full / "profile", "--consumer-groups", groups, "--out", full / "plan")[0] in (0, 1)
    assert run_cli("report", full, "--policy", full / "pools.toml", "--compare", run)[0] == 0
    plan = json.loads((full / "plan" / "plan.json").read_text())
    assert json.loads((tmp_path / "whatif" / "plan" / "plan.json").read_text()) == plan
    assert (tmp_path / "whatif" / "report" / "report.md").read_text() == (full / "report" / "report.md").read_text()
    tenant_of = load_policy(full / "pools.toml").tenant_of
    assert {pool for t, pool in plan["topics"].items() if tenant_of(t) == tenant} == {target}
