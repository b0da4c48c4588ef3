"""Time `poolplan report` on a generated run of 1,000,000 partitions (with an earlier run to compare with).

Usage: ``python benchmarks/bench_report.py [--partitions N] [--brokers B] [--pools K] [--moves-per-mille M]``.
Builds the audit benchmark's cluster (`bench_audit.generate`: drift planted in 0.5 % of the partitions), audits
it for real, plans a move for every misplaced replica plus ``M``‰ of the other partitions, and writes a run
directory with the real writers (snapshot, profile, plan, bundle summary, findings). Prints the wall and CPU time
of each step of the report: reading the run, building the model (capacity, runway, N−1, risks, comparison),
drawing and rendering, and writing.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_audit import generate

from planner.report import build_model, load_previous_run, load_run, render_report
from pools.atomic import write_json, write_text
from pools.audit import audit, audit_loads, findings_to_json
from pools.cluster_arrays import cluster_arrays
from pools.plan_file import PartitionMove, Plan, SolverReport, save_plan
from pools.policy import parse_policy
from pools.profile import save_profile
from pools.snapshot import DIMENSIONS, save_snapshot


def build_run(root: Path, partitions: int, brokers: int, pools: int, per_mille: int, seed: int = 1) -> int:
    """Write a complete run directory under ``root``; return the number of planned moves."""
    snap, policy_text, profile = generate(partitions, brokers, pools, seed)
    policy = parse_policy(policy_text + "\n[new_broker]\nnw_in = 1.25e9\nnw_out = 1.25e9\ndisk = 2e14\nreplicas = "
                          "20000\nprice = 900.0\nperiod = \"month\"\n", source="bench.toml")
    findings = audit(snap, policy, profile)
    loads = audit_loads(snap, profile)
    ids = cluster_arrays(snap).broker_ids.tolist()
    pool_of = {b.id: b.pool for b in snap.brokers}
    members = {}
    for b in snap.brokers:
        members.setdefault(b.pool, []).append(b.id)
    rng = random.Random(seed)
    moves = []
    for p in snap.partitions:
        pool = p.topic.split(".")[0]
        outside = [b for b in p.replicas if pool_of[b] != pool]
        if outside or rng.random() < per_mille / 1000:
            free = [b for b in members[pool] if b not in p.replicas]
            target = tuple(rng.choice(free) if b in outside or (not outside and i == 2) else b
                           for i, b in enumerate(p.replicas))
            moves.append(PartitionMove(p.topic, p.partition, p.replicas, target, p.size_bytes))
        else:
            moves.append(PartitionMove(p.topic, p.partition, p.replicas, p.replicas, p.size_bytes))
    brokers_table = {
        str(b): {d: {"capacity": snap.broker_by_id[b].capacity.get(d), "now": float(np.nan_to_num(loads.now[i, k])),
                     "before": float(np.nan_to_num(loads.forecast[i, k])),
                     "after": float(np.nan_to_num(loads.forecast[i, k]))} for k, d in enumerate(DIMENSIONS)}
        for i, b in enumerate(ids)
    }
    pools_table = {}
    for pool, bs in members.items():
        pools_table[pool] = {}
        for d in DIMENSIONS:
            cap = sum(brokers_table[str(b)][d]["capacity"] for b in bs)
            pools_table[pool][d] = {"capacity": cap, "capacity_with_added": cap, "headroom": 0.8,
                                    "demand_now": sum(brokers_table[str(b)][d]["now"] for b in bs),
                                    "demand_forecast": sum(brokers_table[str(b)][d]["before"] for b in bs)}
    plan = Plan("bench", dict(pool_of), dict(pool_of), {t.topic: t.topic.split(".")[0] for t in snap.topics},
                tuple(moves), dict.fromkeys(members, 0), SolverReport("HiGHS", "Optimal", "", 0.0, 0.0, 0.0),
                {"brokers": brokers_table, "pools": pools_table})
    save_snapshot(snap, root / "snapshot.json")
    save_profile(root / "profile", list(profile.values()))
    save_plan(plan, root / "plan" / "plan.json")
    moved = plan.moves
    write_json(root / "bundle" / "summary.json", {"batches": [
        {"batch": i + 1, "phase": 1, "partitions": len(moved[i::20]), "moved_bytes": sum(m.moved_bytes for m in moved[i::20]),
         "throttle_Bps": 50_000_000, "estimated_seconds": 600} for i in range(20)], "estimated_seconds": 12_000})
    write_text(root / "audit" / "findings.json", findings_to_json(findings, cluster="bench", taken_at=snap.taken_at))
    write_text(root / "pools.toml", policy_text + "\n[new_broker]\nnw_in = 1.25e9\nnw_out = 1.25e9\ndisk = 2e14\n"
                                                  "replicas = 20000\nprice = 900.0\nperiod = \"month\"\n")
    return len(moved)


def _timed(label: str, fn):
    """Run ``fn``; print wall and CPU seconds (CPU is the honest figure on a shared machine)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    print(f"{label:<44}{time.perf_counter() - t0:>9.2f} s wall{time.process_time() - c0:>9.2f} s CPU", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=600)
    parser.add_argument("--pools", type=int, default=10)
    parser.add_argument("--moves-per-mille", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        n = _timed("generate + audit + write the run", lambda: build_run(
            root / "run", args.partitions, args.brokers, args.pools, args.moves_per_mille))
        _timed("generate + write an earlier run", lambda: build_run(
            root / "earlier", args.partitions, args.brokers, args.pools, args.moves_per_mille, seed=2))
        run = _timed("load_run (snapshot, profile, plan, findings)", lambda: load_run(root / "run",
                                                                                      policy=root / "run" / "pools.toml"))
        earlier = _timed("load_previous_run", lambda: load_previous_run(root / "earlier", current=root / "run"))
        model = _timed("build_model (with the comparison)", lambda: build_model(run, earlier))
        out = _timed("render_report (charts, HTML, Markdown)", lambda: render_report(model, has_policy=True))
        _timed("write report.html + report.md", lambda: (write_text(root / "report.html", out.html),
                                                         write_text(root / "report.md", out.markdown)))
        risks = model.risks
        print(f"{args.partitions:,} partitions, {n:,} planned moves, {len(run.findings):,} findings, "
              f"{len(risks.risks):,} linked to {len(risks.touched):,} moves; report.html {len(out.html) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
