"""Every move of a plan carries its reason, and the reason is true: undoing the move alone breaks the rule it
names, recomputed from the snapshot and demands (never from the planner's numbers)."""

from __future__ import annotations

import json

import pytest

from planner.operations import operation_inputs
from planner.operations.balance import broker_loads
from planner.pool_planner import plan_pools
from planner.reasons import spans_racks, unexplained
from pools.demand import topic_demand
from pools.errors import InputError
from pools.health import cluster_health
from pools.new_brokers import with_planned_brokers
from pools.plan_file import REASON_DIMENSIONS, Plan, plan_from_dict, plan_to_json
from pools.pool_rules import PoolRules
from pools.snapshot import DIMENSIONS
from tests.planner.placement.test_prune import _cluster, _operations

_REL = 1e-6


def _check_reasons(snap, policy, plan: Plan, demands) -> None:
    """Each move's reason holds: undo it alone and the named rule breaks (see `pools.plan_file.Reason`), on the
    cluster the plan applies to (its brokers still to buy joined)."""
    snap = with_planned_brokers(snap, plan.planned_brokers)
    assert unexplained(plan) == ()
    rules = PoolRules.from_policy(policy, horizon_days=plan.horizon_days)
    assignment = {(m.topic, m.partition): m.replicas for m in plan.partitions}
    with_load = broker_loads(snap, demands, assignment)
    rack = {b.id: b.rack for b in snap.brokers}
    gone = set(plan.drained) | set(cluster_health(snap).brokers)
    factors = plan.operation.get("replication_factors", {})
    for m in plan.moves:
        r = m.reason
        pool = plan.topics[m.topic]
        assert r.leader_only == (set(m.old_replicas) == set(m.replicas)), m
        if r.rule == "replication_factor":
            assert len(m.replicas) == factors[m.topic] != len(m.old_replicas), m
        elif r.rule == "evacuate":
            assert r.brokers and all(b in gone and b in m.old_replicas and b not in m.replicas for b in r.brokers), m
        elif r.rule == "isolate":
            assert r.brokers and all(plan.brokers[b] != pool and b not in m.replicas for b in r.brokers), m
        elif r.rule == "rack_spread":
            racks = len({rack[b] for b, p in plan.brokers.items() if p == pool and rack[b] is not None})
            assert not spans_racks(m.old_replicas, rack, racks) and spans_racks(m.replicas, rack, racks), m
        else:
            d = REASON_DIMENSIONS.index(r.dimension)
            without = broker_loads(snap, demands, assignment | {(m.topic, m.partition): m.old_replicas})[r.broker][d]
            now = with_load[r.broker][d]
            tol = _REL * max(abs(r.bound), 1.0)
            assert without == pytest.approx(r.without, rel=1e-6, abs=1e-6), m
            if r.rule == "relieve":
                cap = snap.broker_by_id[r.broker].capacity.get(DIMENSIONS[d])
                assert r.bound == pytest.approx(cap * rules.limits(pool).headroom[d], rel=1e-6), m
            if r.rule == "fill":
                assert without < r.bound - tol and without < now - tol, m
            else:
                assert without > r.bound + tol and without > now + tol, m


@pytest.mark.parametrize("seed", [0, 3])
def test_every_move_of_a_pool_plan_has_a_true_reason(seed: int) -> None:
    snap, policy, profile = _cluster(seed)
    plan = plan_pools(snap, policy, profile).plan
    assert plan.moves
    _check_reasons(snap, policy, plan, topic_demand(snap, profile, None, "forecast"))


def test_every_move_of_every_day2_operation_has_a_true_reason() -> None:
    snap, policy, profile = _cluster(3, spare=True, load=0.4)
    inputs = operation_inputs(snap, policy, profile)
    for name, run in _operations(inputs, snap):
        plan = run().plan
        assert plan.moves, name
        _check_reasons(snap, policy, plan, inputs.forecast)


def test_reasons_and_copied_bytes_round_trip_and_are_checked_on_read() -> None:
    snap, policy, profile = _cluster(3)
    plan = plan_pools(snap, policy, profile).plan
    doc = json.loads(plan_to_json(plan))
    assert plan_from_dict(doc).partitions == plan.partitions
    moved = next(i for i, p in enumerate(doc["partitions"]) if p["old_replicas"] != p["replicas"])
    entry = doc["partitions"][moved]
    assert entry["copied_bytes"] == plan.moves[0].moved_bytes
    assert entry["reason"] == plan.moves[0].reason.to_dict()
    still = next(i for i, p in enumerate(doc["partitions"]) if p["old_replicas"] == p["replicas"])
    assert "reason" not in doc["partitions"][still] and "copied_bytes" not in doc["partitions"][still]
    bad = [
        ({"copied_bytes": entry["copied_bytes"] + 1}, f"partitions[{moved}].copied_bytes: expected"),
        ({"reason": {"rule": "whim"}}, f"partitions[{moved}].reason.rule"),
        ({"reason": {"rule": "relieve"}}, f"partitions[{moved}].reason: expected broker, dimension"),
        ({"reason": {"rule": "isolate", "brokers": [entry["replicas"][0]]}}, f"partitions[{moved}].reason.brokers"),
        ({"reason": {"rule": "relieve", "broker": entry["replicas"][0], "dimension": "cpu", "bound": 1.0,
                     "without": 2.0}}, f"partitions[{moved}].reason.dimension"),
    ]
    for change, message in bad:
        broken = json.loads(json.dumps(doc))
        broken["partitions"][moved] |= change
        with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
            plan_from_dict(broken)
    broken = json.loads(json.dumps(doc))
    broken["partitions"][still]["reason"] = {"rule": "rack_spread"}
    with pytest.raises(InputError, match="expected no reason on a partition that does not move"):
        plan_from_dict(broken)
    for p in doc["partitions"]:  # a plan written before reasons still reads
        p.pop("reason", None), p.pop("copied_bytes", None)
    assert [m.replicas for m in plan_from_dict(doc).partitions] == [m.replicas for m in plan.partitions]


def test_a_move_whose_reason_is_stripped_is_unexplained() -> None:
    snap, policy, profile = _cluster(0)
    plan = plan_pools(snap, policy, profile).plan
    doc = json.loads(plan_to_json(plan))
    for p in doc["partitions"]:
        p.pop("reason", None)
    assert len(unexplained(plan_from_dict(doc))) == len(plan.moves) > 0


def test_moves_onto_brokers_still_to_buy_have_true_reasons_and_say_so() -> None:
    from planner.reasons import explain
    from tests.planner.test_pool_planner import _four_broker_pool

    snap, policy, profile = _four_broker_pool(75e6)
    plan = plan_pools(snap, policy, profile).plan
    assert plan.planned_brokers and plan.moves
    _check_reasons(snap, policy, plan, topic_demand(snap, profile))
    onto = next(m for m in plan.moves if 6 in m.adding)
    assert "onto broker(s) 6 still to buy (planned_brokers): the move runs once they have joined" in \
        explain(plan, onto.topic, onto.partition)
