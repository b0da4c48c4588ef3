"""The independent validator finds every broken rule and accepts a valid plan."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.validator import validate_plan
from pools.demand import topic_demand
from pools.plan_file import PartitionMove, Plan, Reason, SolverReport
from pools.policy import Defaults, PoolPolicy, PoolSpec, TenantSpec
from pools.snapshot import DIMENSIONS, Broker, Capacity, ClusterSnapshot, PartitionState, TopicState

CAP = Capacity(1e6, 1e6, 1e6, 100)


def _setup() -> tuple[ClusterSnapshot, PoolPolicy, Plan]:
    brokers = tuple(Broker(i, f"r{i % 3}", CAP, "a" if i <= 3 else "b") for i in range(1, 7))
    parts = (
        PartitionState("a.t", 0, (1, 2, 3), leader=1, sizes=(10, 10, 10)),
        PartitionState("b.t", 0, (4, 5, 6), leader=4, sizes=(20, 20, 20)),
    )
    snapshot = ClusterSnapshot("c", brokers, (TopicState("a.t"), TopicState("b.t")), parts)
    policy = PoolPolicy(
        defaults=Defaults(headroom=dict.fromkeys(DIMENSIONS, 0.8), tolerated_broker_failures=0, min_brokers=3),
        pools=(PoolSpec("a", tenants=("ta",), brokers=(1,)), PoolSpec("b", tenants=("tb",))),
        tenants=(TenantSpec("ta", (r"a\..*",), ("tb",)), TenantSpec("tb", (r"b\..*",))),
    )
    plan = Plan(
        cluster="c",
        brokers_before={b.id: b.pool for b in brokers},
        brokers={b.id: b.pool for b in brokers},
        topics={"a.t": "a", "b.t": "b"},
        partitions=tuple(PartitionMove(p.topic, p.partition, p.replicas, p.replicas, p.size_bytes) for p in parts),
        brokers_to_add={"a": 0, "b": 0},
        solver=SolverReport("HiGHS", "Optimal", "Optimal Solution Found", 0.0, 0.0, 0.0),
    )
    return snapshot, policy, plan


def _target(plan: Plan, topic: str, replicas: tuple[int, ...]) -> Plan:
    moves = tuple(replace(m, replicas=replicas) if m.topic == topic else m for m in plan.partitions)
    return replace(plan, partitions=moves)


def test_valid_plan_has_no_violations() -> None:
    snapshot, policy, plan = _setup()
    assert validate_plan(snapshot, policy, plan, topic_demand(snapshot, {})) == []


@pytest.mark.parametrize(
    ("edit", "rule", "text"),
    [
        (lambda p: _target(p, "a.t", (1, 1, 2)), "partitions", "duplicate replicas"),
        (lambda p: _target(p, "a.t", (1, 2)), "partitions", "changes replication factor 3 -> 2"),
        (lambda p: _target(p, "a.t", (1, 2, 9)), "partitions", "brokers [9] the cluster lacks"),
        (lambda p: replace(p, partitions=p.partitions[:1]), "partitions", "b.t-0 has no target"),
        (lambda p: _target(p, "a.t", (1, 2, 4)), "pools", "replicas on brokers [4] outside the pool"),
        (lambda p: replace(p, topics={"a.t": "b", "b.t": "b"}), "pools", "not one of ['a']"),
        (lambda p: replace(p, brokers={**p.brokers, 1: "b"}), "pins", "broker 1 is pinned to pool 'a'"),
        (lambda p: replace(p, brokers={**p.brokers, 3: None}), "pool_capacity", "pool 'a' has 2 broker(s), needs 3"),
    ],
)
def test_each_rule_catches_its_violation(edit, rule: str, text: str) -> None:
    snapshot, policy, plan = _setup()
    found = validate_plan(snapshot, policy, edit(plan), topic_demand(snapshot, {}))
    assert any(v.rule == rule and text in v.message and v.hard for v in found), found


def test_racks_capacity_and_tenants() -> None:
    snapshot, policy, plan = _setup()
    # two racks only for a.t although pool a spans three
    brokers = snapshot.brokers + (Broker(7, "r1", CAP, "a"),)
    wide = replace(snapshot, brokers=brokers)
    moved = _target(replace(plan, brokers={**plan.brokers, 7: "a"}), "a.t", (1, 7, 3))
    found = validate_plan(wide, policy, moved, topic_demand(wide, {}))
    assert [v.rule for v in found if v.rule != "reasons"] == ["racks"]  # the hand-made move has no reason
    # a 700 kB disk load on a 1 MB broker with 80 % headroom
    heavy = replace(snapshot, partitions=(replace(snapshot.partitions[0], sizes=(900_000,) * 3),) + snapshot.partitions[1:])
    found = validate_plan(heavy, policy, plan, topic_demand(heavy, {}))
    assert {v.rule for v in found} == {"broker_capacity", "pool_capacity"}
    assert any("broker 1 (a) disk load 900000 exceeds 80% of 1e+06" in v.message for v in found)
    # tenants that must not share land together
    shared = replace(policy, pools=(PoolSpec("a", tenants=("ta", "tb"), brokers=(1,)), PoolSpec("b", tenants=("tb",))))
    found = validate_plan(snapshot, shared, replace(plan, topics={"a.t": "a", "b.t": "a"}), topic_demand(snapshot, {}))
    assert any(v.rule == "tenants" and "'ta' and 'tb' share pool(s) ['a']" in v.message for v in found)


def _racks_found(cordoned: tuple[int, ...]) -> list[str]:
    """Rack violations when brokers ``cordoned`` are, and a.t moves from (1, 2, 3) to (1, 7, 3): racks r1, r1, r0."""
    snapshot, policy, plan = _setup()
    brokers = tuple(replace(b, cordoned=b.id in cordoned) for b in snapshot.brokers) + (Broker(7, "r1", CAP, "a"),)
    wide = replace(snapshot, brokers=brokers)
    moved = _target(replace(plan, brokers={**plan.brokers, 7: "a"}), "a.t", (1, 7, 3))
    return [v.message for v in validate_plan(wide, policy, moved, topic_demand(wide, {})) if v.rule == "racks"]


def test_a_rack_counts_only_with_open_capacity() -> None:
    # broker 2, pool a's only broker of rack r2, cordoned: a.t cannot span r2, but pool a lacks a third open rack
    assert _racks_found((2,)) == ["pool 'a' spans 2 rack(s) with open capacity (a broker not cordoned or unhealthy), "
                                  "needs 3"]
    # every broker of rack r2 cordoned: the cluster has two open racks, which pool a and a.t span
    assert _racks_found((2, 5)) == []
    assert _racks_found(()) == ["partition a.t-0 spans 2 rack(s); its pool has 3 with open capacity for 3 replicas"]


def test_moves_without_a_reason_or_with_a_false_one_are_soft_violations() -> None:
    snapshot, policy, plan = _setup()
    demands = topic_demand(snapshot, {})
    bare = _target(plan, "a.t", (1, 2, 4))
    found = [v for v in validate_plan(snapshot, policy, bare, demands) if v.rule == "reasons"]
    assert [(v.hard, v.message) for v in found] == [(False, "1 move(s) carry no reason: a.t-0")]
    lying = replace(plan, partitions=tuple(replace(m, replicas=(4, 2, 3), reason=Reason("isolate", brokers=(1,)))
                                           if m.topic == "a.t" else m for m in plan.partitions))
    found = [v for v in validate_plan(snapshot, policy, lying, demands) if v.rule == "reasons"]
    assert len(found) == 1 and "a.t-0: its reason isolate does not hold" in found[0].message
    honest = replace(lying, brokers={**plan.brokers, 1: "b"})
    assert not [v for v in validate_plan(snapshot, policy, honest, demands) if v.rule == "reasons"]
