"""A complete run directory built by hand: snapshot, profile, plan, bundle summary and audit findings."""

from __future__ import annotations

from dataclasses import replace

from pathlib import Path

import pytest

from pools.atomic import write_json, write_text
from pools.audit import audit, findings_to_json
from pools.new_brokers import PlannedBroker
from pools.plan_file import Plan, PartitionMove, SolverReport, save_plan
from pools.profile import save_profile
from pools.snapshot import DIMENSIONS, Capacity, save_snapshot
from tests.pools.audit.helpers import POLICY, healthy, policy, profile_row, snapshot, with_partition

CAP = {"nw_in": 1e8, "nw_out": 1e8, "disk": 1e12, "replicas": 100}


#: The run's policy: the audit helpers' two pools, a tenant, and a priced new broker type.
RUN_POLICY = POLICY + """
[new_broker]
nw_in = 1e8
nw_out = 1e8
disk = 1e12
replicas = 100
price = 1500.0
currency = "EUR"
period = "month"
lead_time_days = 30

[[tenant]]
name = "ads"
topics = ['a-.*']
"""


def build_run(root: Path, *, stages=("snapshot", "profile", "plan", "bundle", "audit"), load: float = 1.0,
              rates: tuple[float, float] = (20e6, 35e6), buy: bool = False, history_days: int = 90) -> Path:
    """A run directory; ``load`` scales the plan's loads now and ``rates`` are the two topics' bytes-in p99, observed
    for ``history_days``.
    ``buy``: pool a's broker to add is planned onto (broker 7, still to buy, at 50 % after the plan), as
    `planner.pool_planner` writes it; else it is counted as capacity alone (a plan written before
    ``planned_brokers``)."""
    parts = with_partition(healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6)), "a-x", 0,
                           replicas=(1, 2, 6), isr=(1, 2, 6))
    snap = snapshot(parts)
    if "snapshot" in stages:
        save_snapshot(snap, root / "snapshot.json")
    if "profile" in stages:
        save_profile(root / "profile", [replace(profile_row(t, rate, g), days_observed=history_days)
                                        for t, rate, g in (("a-x", rates[0], 0.004), ("b-y", rates[1], 0.001))])
    if "plan" in stages:
        moves = [PartitionMove(p.topic, p.partition, p.replicas, (1, 2, 3) if p.replicas == (1, 2, 6) else p.replicas,
                               1000) for p in parts]
        util = {
            "brokers": {str(b): {d: {"capacity": CAP[d], "now": CAP[d] * 0.1 * b * load, "before": CAP[d] * 0.12 * b,
                                     "after": CAP[d] * 0.11 * (7 - b)} for d in DIMENSIONS} for b in range(1, 7)},
            "pools": {p: {d: {"capacity": 3 * CAP[d], "capacity_with_added": (4 if p == "a" else 3) * CAP[d],
                              "demand_now": CAP[d] * load, "demand_forecast": 2 * CAP[d], "headroom": 0.7}
                          for d in DIMENSIONS} for p in ("a", "b")},
        }
        planned = (PlannedBroker(7, "r1", "a", Capacity(**CAP)),) if buy else ()
        if buy:
            util["brokers"]["7"] = {d: {"capacity": CAP[d], "now": 0.0, "before": 0.0, "after": CAP[d] * 0.5}
                                    for d in DIMENSIONS}
        plan = Plan(cluster="test", brokers_before={b: ("a" if b <= 3 else "b") for b in range(1, 7)}
                    | {b.id: None for b in planned},
                    brokers={b: ("a" if b <= 3 else "b") for b in range(1, 7)} | {b.id: "a" for b in planned},
                    topics={"a-x": "a", "b-y": "b"},
                    partitions=tuple(moves), brokers_to_add={"a": 1, "b": 0},
                    solver=SolverReport("HiGHS", "Optimal", "Optimal Solution Found", 1.0, 1.0, 0.0),
                    utilisation=util, warnings=("pool a needs 1 broker",), planned_brokers=planned)
        save_plan(plan, root / "plan" / "plan.json")
    if "bundle" in stages:
        write_json(root / "bundle" / "summary.json", {"cluster": "test", "moved_bytes": 1000, "estimated_seconds": 4000,
                   "batches": [{"batch": 1, "phase": "move", "partitions": 1, "moved_bytes": 8e9,
                                "throttle_Bps": 5e7, "estimated_seconds": 160},
                               {"batch": 2, "phase": "move", "partitions": 1, "moved_bytes": 3e9,
                                "throttle_Bps": 5e7, "estimated_seconds": 3840}]})
    if "audit" in stages:
        found = audit(snap, policy())
        write_text(root / "audit" / "findings.json", findings_to_json(found, cluster="test", taken_at=snap.taken_at))
    (root / "pools.toml").write_text(RUN_POLICY)
    return root


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    return build_run(tmp_path / "run")
