"""`poolplan rebalance` and `poolplan brokers add|decommission|replace` through the command line: plan.json in
the plan contract, a bundle from `poolplan emit` that applies it exactly, refusals (exit 1) and bad input (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from planner.validator import validate_plan
from pools.demand import topic_demand
from pools.kafka_formats import parse_reassignment_json
from pools.plan_file import load_plan
from pools.policy import save_policy
from pools.profile import save_profile
from pools.snapshot import save_snapshot
from tests.planner.operations.shapes import big_broker, dead_broker, hot_tenant, last_broker_to_drain, new_rack


def _write(tmp: Path, s) -> list[str]:
    save_snapshot(s.snapshot, tmp / "snapshot.json")
    save_policy(s.policy, tmp / "pools.toml")
    save_profile(tmp / "profile", s.profile)
    return ["--snapshot", str(tmp / "snapshot.json"), "--policy", str(tmp / "pools.toml"),
            "--profile", str(tmp / "profile")]


def test_decommission_ends_in_a_bundle_that_applies_the_plan_exactly(tmp_path: Path, run_cli) -> None:
    s = last_broker_to_drain()
    args = _write(tmp_path, s)
    code, out, err = run_cli("brokers", "decommission", *args, "--broker", "4", "--out", tmp_path / "plan")
    assert code == 0, err
    assert "decommission on day2 (" in out and "lower bound" in out and "pool a: spread" in out
    plan = load_plan(tmp_path / "plan" / "plan.json")
    assert validate_plan(s.snapshot, s.policy, plan, topic_demand(s.snapshot, s.profile)) == []
    doc = json.loads((tmp_path / "plan" / "plan.json").read_text())
    assert doc["operation"]["name"] == "decommission" and doc["operation"]["arguments"] == {"brokers": [4]}
    assert doc["operation"]["moved_bytes"] == doc["moved_bytes"] == doc["operation"]["lower_bound_bytes"]
    code, _, err = run_cli("emit", "--plan", tmp_path / "plan" / "plan.json", "--snapshot", tmp_path / "snapshot.json",
                           "--out", tmp_path / "bundle")
    assert code == 0, err
    moves = parse_reassignment_json((tmp_path / "bundle" / "reassignment.json").read_text())
    wanted = {(m.topic, m.partition): list(m.replicas) for m in plan.moves}
    assert {(p.topic, p.partition): list(p.replicas) for p in moves} == wanted
    assert all(4 not in r for r in wanted.values()) and wanted
    rollback = parse_reassignment_json((tmp_path / "bundle" / "rollback.json").read_text())
    assert {(p.topic, p.partition): list(p.replicas) for p in rollback} == {
        (m.topic, m.partition): list(m.old_replicas) for m in plan.moves}
    code, _, err = run_cli("audit", "--snapshot", tmp_path / "snapshot.json", "--policy", tmp_path / "pools.toml",
                           "--plan", tmp_path / "plan" / "plan.json", "--out", tmp_path / "audit")
    assert code == 0, err  # the cluster after the plan: nothing at error left to find


def test_a_dead_broker_is_drained_into_a_bundle_that_names_the_evacuated_partitions(tmp_path: Path, run_cli) -> None:
    s = dead_broker()
    args = _write(tmp_path, s)
    code, out, err = run_cli("brokers", "decommission", *args, "--broker", "4", "--out", tmp_path / "plan")
    assert code == 0, err
    plan = load_plan(tmp_path / "plan" / "plan.json")
    assert plan.drained == (4,) and not [w for w in plan.warnings if w.startswith("validator:")]
    code, _, err = run_cli("emit", "--plan", tmp_path / "plan" / "plan.json", "--snapshot", tmp_path / "snapshot.json",
                           "--out", tmp_path / "bundle")
    assert code == 0, err
    moves = parse_reassignment_json((tmp_path / "bundle" / "reassignment.json").read_text())
    assert {(p.topic, p.partition): list(p.replicas) for p in moves} == {
        (m.topic, m.partition): list(m.replicas) for m in plan.moves}
    on_4 = sorted((p.topic, p.partition) for p in s.snapshot.partitions if 4 in p.replicas)
    health = json.loads((tmp_path / "bundle" / "summary.json").read_text())["health"]
    assert health["evacuated_partitions"] == [f"{t}-{p}" for t, p in on_4]
    assert health["moved_held_partitions"] == []
    runbook = (tmp_path / "bundle" / "runbook.md").read_text()
    assert f"1. No under-replicated partitions but the {len(on_4)} this plan evacuates (a.orders-1, " in runbook
    assert "**Warning:**" not in runbook


def test_replace_add_and_rebalance_write_valid_plans(tmp_path: Path, run_cli) -> None:
    s = new_rack()
    args = _write(tmp_path, s)
    code, out, err = run_cli("brokers", "replace", *args, "--old", "1", "--new", "7", "--out", tmp_path / "r")
    assert code == 2 and "pass --allow-rack-change" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_cli("brokers", "replace", *args, "--old", "1", "--new", "7", "--allow-rack-change",
                             "--out", tmp_path / "r")
    assert code == 0, err
    assert load_plan(tmp_path / "r" / "plan.json").brokers[7] == "a"
    code, _, err = run_cli("brokers", "add", *args, "--pool", "a", "--broker", "7", "--broker", "8", "--broker", "9",
                           "--out", tmp_path / "a")
    assert code == 0, err
    assert {b for m in load_plan(tmp_path / "a" / "plan.json").moves for b in m.replicas} >= {7, 8, 9}
    s = big_broker()
    (tmp_path / "big").mkdir()
    args = _write(tmp_path / "big", s)
    code, out, err = run_cli("rebalance", *args, "--dimension", "disk", "--dimension", "replicas",
                             "--out", tmp_path / "b")
    assert code == 0, err
    plan = load_plan(tmp_path / "b" / "plan.json")
    assert plan.operation["arguments"]["dimensions"] == ["disk", "replicas"]
    assert validate_plan(s.snapshot, s.policy, plan, topic_demand(s.snapshot, s.profile)) == []


def test_refusals_exit_1_and_bad_input_exits_2_with_one_line(tmp_path: Path, run_cli) -> None:
    args = _write(tmp_path, last_broker_to_drain())
    code, _, err = run_cli("brokers", "decommission", *args, "--broker", "1", "--broker", "4", "--out", tmp_path / "x")
    assert code == 1 and "would keep 2 broker(s), needs 3" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x" / "plan.json").exists()
    for argv, expected in (
        (("brokers", "decommission", *args, "--broker", "42"), "error: --broker: broker 42 is not in the snapshot"),
        (("brokers", "replace", *args, "--old", "1", "--new", "1"), "error: --new: broker 1 is the broker it replaces"),
        (("brokers", "add", *args, "--pool", "a", "--broker", "42"), "error: --broker: broker 42 is not in the snapshot"),
        (("rebalance", *args, "--pool", "nope"), "error: --pool: unknown pool 'nope'"),
    ):
        code, _, err = run_cli(*argv, "--out", tmp_path / "y")
        assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, (argv, err)
    for argv in (("rebalance", *args, "--band", "nan"), ("rebalance", *args, "--max-moved-bytes", "-1"),
                 ("brokers", "replace", *args, "--old", "1")):  # click's usage errors
        code, _, err = run_cli(*argv, "--out", tmp_path / "y")
        assert code == 2 and err.startswith("error: poolplan ") and len(err.strip().splitlines()) == 1, (argv, err)
    assert not (tmp_path / "y" / "plan.json").exists()


def test_demote_writes_a_plan_of_preferred_leader_changes(tmp_path: Path, run_cli) -> None:
    args = _write(tmp_path, hot_tenant())
    code, out, err = run_cli("brokers", "demote", *args, "--broker", "1", "--out", tmp_path / "d")
    assert code == 0, err
    plan = load_plan(tmp_path / "d" / "plan.json")
    assert plan.operation["name"] == "demote" and plan.moved_bytes == 0 and plan.moves
    assert all(m.replicas[0] != 1 and set(m.replicas) == set(m.old_replicas) for m in plan.moves)


def test_a_replication_factor_change_ends_in_a_bundle(tmp_path: Path, run_cli) -> None:
    s = new_rack()
    args = _write(tmp_path, s)
    code, out, err = run_cli("set-replication-factor", *args, "--topic", "a.orders", "--replication-factor", "4",
                             "--out", tmp_path / "plan")
    assert code == 0, err
    plan = load_plan(tmp_path / "plan" / "plan.json")
    assert plan.operation["replication_factors"] == {"a.orders": 4}
    assert validate_plan(s.snapshot, s.policy, plan, topic_demand(s.snapshot, s.profile)) == []
    code, _, err = run_cli("emit", "--plan", tmp_path / "plan" / "plan.json", "--snapshot", tmp_path / "snapshot.json",
                           "--out", tmp_path / "bundle")
    assert code == 0, err
    moves = parse_reassignment_json((tmp_path / "bundle" / "reassignment.json").read_text())
    assert {len(p.replicas) for p in moves} == {4} and len(moves) == len(s.snapshot.partitions)
    code, _, err = run_cli("set-replication-factor", *args, "--topic", "a.orders", "--replication-factor", "0",
                           "--out", tmp_path / "x")
    assert code == 2 and "Traceback" not in err
