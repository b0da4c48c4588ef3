"""`poolplan explain PLAN TOPIC-PARTITION`: the reason of a move and the alternatives it beat; bad input exits 2."""

from __future__ import annotations

from pathlib import Path

from planner.pool_planner import plan_pools
from pools.plan_file import save_plan
from tests.planner.placement.test_prune import _cluster


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
