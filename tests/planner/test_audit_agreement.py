"""The audit's fixes and the plan agree: the same seed placement, one leader rule, the plan's move when given."""

from __future__ import annotations

import re

import pytest

from planner.pool_planner import plan_pools
from pools.audit import audit
from pools.health import cluster_health
from pools.plan_file import PartitionMove
from tests.pools.audit.helpers import healthy, policy, profile_row, snapshot, with_partition


def _target(fix: str) -> tuple[int, ...]:
    return tuple(int(b) for b in re.search(r'"replicas":\[([0-9,]*)\]', fix).group(1).split(","))


def _parts():
    parts = healthy("a-x", (1, 2, 3), partitions=6) + healthy("b-y", (4, 5, 6), partitions=6)
    parts = with_partition(parts, "a-x", 0, replicas=(1, 2, 6), isr=(1, 2, 6))  # one replica in pool b
    parts = with_partition(parts, "a-x", 4, replicas=(2, 4, 3), leader=2, isr=(2, 4, 3))
    return with_partition(parts, "b-y", 1, leader=6)  # led by a non-preferred replica (both in sync)


def test_audit_fixes_send_partitions_where_the_plan_does() -> None:
    snap = snapshot(_parts())
    profile = {t: profile_row(t, 1e5, 0.001) for t in ("a-x", "b-y")}
    plan = plan_pools(snap, policy(), profile).plan
    assert plan.brokers == plan.brokers_before  # the pools stay: the audit judges the same pools
    moves = {(m.topic, m.partition): m.replicas for m in plan.moves}
    fixes = {(f.topic, f.partition): f.fix for f in audit(snap, policy(), profile) if f.kind == "replica_outside_pool"}
    assert set(fixes) == {("a-x", 0), ("a-x", 4)}
    assert {key: _target(fix) for key, fix in fixes.items()} == {key: moves[key] for key in fixes}


def test_one_leader_rule_the_preferred_replica_leads() -> None:
    snap = snapshot(_parts())
    plan = plan_pools(snap, policy(), {}).plan
    # the plan keeps b-y 1's preferred replica first; the audit's fix elects it
    assert ("b-y", 1) not in {(m.topic, m.partition) for m in plan.moves}
    found = [f for f in audit(snap, policy()) if f.kind == "leader_not_preferred"]
    assert [(f.topic, f.partition) for f in found] == [("b-y", 1)]
    assert found[0].fix.endswith("--election-type PREFERRED --topic b-y --partition 1")
    # a partition whose preferred replica leaves the pool: its current leader, staying, leads
    a4 = next(m for m in plan.partitions if (m.topic, m.partition) == ("a-x", 4))
    assert a4.replicas[0] == 2 and 4 not in a4.replicas


def test_given_the_plan_the_audit_fix_is_the_plans_move() -> None:
    snap = snapshot(_parts())
    plan = plan_pools(snap, policy(), {}).plan
    other = PartitionMove("a-x", 0, (1, 2, 6), (3, 2, 1), 1000)  # a plan that chose differently
    plan = type(plan)(**{**plan.__dict__, "partitions": tuple(other if (m.topic, m.partition) == ("a-x", 0) else m
                                                               for m in plan.partitions)})
    fixes = {(f.topic, f.partition): f.fix for f in audit(snap, policy(), plan=plan) if f.kind == "replica_outside_pool"}
    assert _target(fixes["a-x", 0]) == (3, 2, 1)
    assert " --throttle " in fixes["a-x", 0]


@pytest.mark.parametrize(("changes", "held"), [
    ({"isr": ()}, None),  # a leader and an empty ISR: the ISR is not reported (Kafka lists the leader in it)
    ({"leader": None, "isr": ()}, "offline"),
    ({"isr": (1,)}, "under-replicated"),  # under min ISR too
    ({"isr": (1, 2)}, "under-replicated"),
    ({"isr": (1, 2, 3)}, None),
    ({"replicas": (1, 2, 3, 4), "isr": (1, 2, 3), "adding_replicas": (4,), "sizes": (), "log_dirs": ()},
     "reassignment in progress"),
])
def test_one_partition_health_rule_for_the_audit_and_the_planner(changes: dict, held: str | None) -> None:
    snap = snapshot(with_partition(_healthy_parts(), "a-x", 0, **changes))
    health = cluster_health(snap).partitions.get(("a-x", 0))
    assert health == held
    found = {f.kind for f in audit(snap, policy()) if (f.topic, f.partition) == ("a-x", 0)}
    unhealthy = found & {"offline_partition", "under_min_isr", "at_min_isr", "under_replicated"}
    # the audit reports a partition's health exactly when the planner holds it for that health
    assert bool(unhealthy) == (health in ("offline", "under-replicated"))
    assert ("offline_partition" in found) == (health == "offline")


def _healthy_parts():
    return healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6))
