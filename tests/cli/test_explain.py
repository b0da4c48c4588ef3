"""`poolplan explain PLAN TOPIC-PARTITION`: the reason of a move and the alternatives it beat; bad input exits 2."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from planner.operations import operation_inputs, rebalance
from planner.operations.brokers import demote_brokers
from planner.pool_planner import plan_pools
from pools.plan_file import REASON_RULES, load_plan, save_plan
from tests.planner.placement.test_prune import _cluster, _operations


def _plan(tmp_path: Path):
    snap, policy, profile = _cluster(3)
    plan = plan_pools(snap, policy, profile).plan
    return plan, save_plan(plan, tmp_path / "plan.json")


def test_explain_prints_the_reason_and_the_alternatives(run_cli, tmp_path: Path) -> None:
    plan, path = _plan(tmp_path)
    load = next(m for m in plan.moves if m.reason.rule == "relieve" and m.reason.dimension != "leaders")
    code, out, err = run_cli("explain", path, f"{load.topic}-{load.partition}")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"{load.topic}-{load.partition}: {list(load.old_replicas)} -> {list(load.replicas)}")
    assert lines[1] == f"reason: relieve: {load.reason.describe()}"
    assert lines[2] == "alternatives it beat:" and lines[3].startswith(f"  keep {list(load.old_replicas)}: breaks relieve")
    pool = plan.topics[load.topic]
    others = {b for b, p in plan.brokers.items() if p == pool} - set(load.replicas) - set(load.old_replicas)
    instead = [line for line in lines[4:] if line.startswith("  broker ")]
    assert instead and {int(line.split()[1]) for line in instead} <= others
    assert all(" instead: " in line for line in instead) and lines[-1].startswith("  (among brokers")
    isolate = next(m for m in plan.moves if m.reason.rule == "isolate")
    code, out, _ = run_cli("explain", path, f"{isolate.topic}-{isolate.partition}")
    assert code == 0 and "reason: isolate: isolates the topic" in out
    fill = next(m for m in plan.moves if m.reason.rule == "fill")
    code, out, _ = run_cli("explain", path, f"{fill.topic}-{fill.partition}")
    count = sum(m.reason.rule == "fill" and m.reason.broker == fill.reason.broker for m in plan.moves)
    assert code == 0 and f"another partition onto broker {fill.reason.broker}: {count} move(s)" in out
    still = next(m for m in plan.partitions if not m.changed)
    code, out, _ = run_cli("explain", path, f"{still.topic}-{still.partition}")
    assert code == 0 and "does not move" in out


def test_explain_rejects_a_bad_partition_name_in_one_line(run_cli, tmp_path: Path) -> None:
    _, path = _plan(tmp_path)
    for name, message in (("orders", "expected a topic name, '-' and a partition number"),
                          ("nosuch-0", "the plan has no partition nosuch-0")):
        code, out, err = run_cli("explain", path, name)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    code, _, err = run_cli("explain", tmp_path / "none.json", "orders-0")
    assert code == 2 and "none.json" in err


def _rack_shared(snap):
    """``snap`` with one partition of the largest pool on two brokers of one rack (the rebalance repairs it)."""
    pools = {}
    for b in snap.brokers:
        if b.pool:
            pools.setdefault(b.pool, []).append(b)
    members = max(pools.values(), key=len)
    rack = {b.id: b.rack for b in members}
    for p in snap.partitions:
        if p.size_bytes and len(p.replicas) >= 2 and all(r in rack for r in p.replicas):
            twin = next((b for b in rack if rack[b] == rack[p.replicas[0]] and b not in p.replicas), None)
            if twin is not None:
                moved = replace(p, replicas=(p.replicas[0], twin, *p.replicas[2:]),
                                isr=(p.replicas[0], twin, *p.replicas[2:]))
                return replace(snap, partitions=tuple(moved if q is p else q for q in snap.partitions))
    raise AssertionError("no partition to put on one rack")


@pytest.fixture(scope="module")
def every_command_plan(tmp_path_factory) -> dict[str, Path]:
    """plan.json of the pool planner and of every day-2 command (demote included), and a rebalance repairing a
    rack spread."""
    out = tmp_path_factory.mktemp("plans")
    snap, policy, profile = _cluster(3)
    plans = {"plan": plan_pools(snap, policy, profile).plan}
    snap, policy, profile = _cluster(3, spare=True, load=0.4)
    inputs = operation_inputs(snap, policy, profile)
    for name, run in _operations(inputs, snap):
        if name != "rebalance":  # the rack repair below is the whole rebalance
            plans[name] = run().plan
    plans["demote"] = demote_brokers(inputs, [snap.brokers[0].id]).plan
    plans["rack repair"] = rebalance(operation_inputs(_rack_shared(snap), policy, profile)).plan
    return {name: save_plan(plan, out / f"{name.replace(' ', '-')}.json") for name, plan in plans.items()}


@pytest.mark.slow  # the plans of eight commands: ~27 s on a loaded 2-core machine
def test_explain_answers_for_a_move_of_every_reason_of_every_command(run_cli, every_command_plan) -> None:
    """One move per (command, reason) explained through the CLI: exit 0, the reason line and the rule it breaks
    when kept; together the plans hold every reason plan.json knows."""
    seen = set()
    for name, path in every_command_plan.items():
        plan = load_plan(path)
        for rule in sorted({m.reason.rule for m in plan.moves}):
            m = next(m for m in plan.moves if m.reason.rule == rule)
            code, out, err = run_cli("explain", path, f"{m.topic}-{m.partition}")
            assert code == 0 and not err, (name, rule, err)
            assert f"reason: {rule}: {m.reason.describe()}" in out.splitlines(), (name, out)
            assert f"  keep {list(m.old_replicas)}: breaks {rule} (" in out, (name, out)
            seen.add(rule)
    assert seen == set(REASON_RULES)
    demote = load_plan(every_command_plan["demote"])
    m = demote.moves[0]
    _, out, _ = run_cli("explain", every_command_plan["demote"], f"{m.topic}-{m.partition}")
    assert f"breaks demote (broker {m.old_replicas[0]}, which the operation demotes, stays the preferred leader)" in out
