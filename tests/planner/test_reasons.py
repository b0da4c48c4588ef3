"""Every move of a plan carries its reason, and the reason is true: undoing the move alone breaks the rule it
names, recomputed from the snapshot and demands (never from the planner's numbers)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.operations import operation_inputs
from planner.operations.balance import broker_loads
from planner.placement.engine import ENGINE_DIMENSIONS, Goal, PoolState, prune_moves, state_fair_share
from planner.pool_planner import plan_pools
from planner.reasons import unexplained
from pools.pool_rules import spans_racks
from pools.demand import topic_demand
from pools.errors import InputError
from pools.fill import add_loads
from pools.health import cluster_health
from pools.new_brokers import with_planned_brokers
from pools.plan_file import REASON_DIMENSIONS, Plan, plan_from_dict, plan_to_json
from pools.pool_rules import PoolRules
from pools.snapshot import DIMENSIONS
from tests.planner.placement.test_prune import _cluster, _operations
from tests.plugin import examples

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
            racks = len(cluster_health(snap).open_racks((b, rack[b]) for b, p in plan.brokers.items() if p == pool))
            old, new = [rack[b] for b in m.old_replicas], [rack[b] for b in m.replicas]
            assert not spans_racks(old, racks) and spans_racks(new, racks), m
        else:
            undone = broker_loads(snap, demands, assignment | {(m.topic, m.partition): m.old_replicas})
            if r.rule != "relieve":  # relieve comes first: no broker of the pool may go further over its limit
                for b, row in undone.items():
                    if plan.brokers.get(b) != pool:
                        continue
                    for k, name in enumerate(DIMENSIONS):
                        limit = snap.broker_by_id[b].capacity.get(name) * rules.limits(pool).headroom[k]
                        e = REASON_DIMENSIONS.index(name)
                        assert not (row[e] > limit * (1 + _REL) and row[e] > with_load[b][e] * (1 + _REL) + _REL), \
                            (m, b, name, row[e], limit)
            d = REASON_DIMENSIONS.index(r.dimension)
            without = undone[r.broker][d]
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


@pytest.mark.slow
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


_ORDER = ("relieve", "balance", "fill")


def _broken_rules(limit, low, upper, final, undone, rel: float = 1e-7) -> tuple[dict[str, set], bool]:
    """Per load rule, the (broker, dimension) cells that undoing a move breaks, recomputed from the loads: over the
    limit and further above the upper bound than with the move (relieve), above the band but within the limit
    (balance), further below the band (fill); and whether some cell sits too near a bound to judge."""
    broken: dict[str, set] = {rule: set() for rule in _ORDER}
    unclear = False
    for (b, d), now in np.ndenumerate(undone):
        tol = rel * max(1.0, abs(limit[b, d]) if np.isfinite(limit[b, d]) else 1.0, abs(now))
        above, above_with = now - upper[b, d], final[b, d] - upper[b, d]
        below, below_with = low[b, d] - now, low[b, d] - final[b, d]
        for gap in (above - max(above_with, 0.0), below - max(below_with, 0.0), now - limit[b, d]):
            unclear |= bool(abs(gap) < tol)
        if above > max(above_with, 0.0) + tol:
            broken["relieve" if now > limit[b, d] else "balance"].add((b, d))
        if below > max(below_with, 0.0) + tol:
            broken["fill"].add((b, d))
    return broken, unclear


@settings(max_examples=examples(200))
@given(st.integers(0, 2**32 - 1))
def test_a_move_is_labelled_with_the_first_rule_undoing_it_breaks(seed: int) -> None:
    """Random pools (some brokers start over their limit, joining brokers below their band) and random targets:
    every move the pruning keeps is labelled relieve when undoing it alone puts a broker over its limit, else
    balance when above its band, else fill (the order of `planner.reasons`), recomputed from the loads."""
    rng = np.random.default_rng(seed)
    n, parts = int(rng.integers(3, 7)), int(rng.integers(3, 12))
    holders = np.array([rng.choice(n, 2, replace=False) for _ in range(parts)])
    follower = np.zeros((parts, len(ENGINE_DIMENSIONS)))
    follower[:, :4] = rng.integers(0, 20, size=(parts, 4))
    extra = np.zeros_like(follower)
    extra[:, 1] = rng.integers(0, 10, size=parts)
    capacity = np.full((n, 4), 100.0)
    start = add_loads(np.zeros((n, len(ENGINE_DIMENSIONS))), holders, follower, extra)[:, :4]
    limit = np.maximum(start.mean(axis=0) * rng.uniform(0.7, 1.4, size=(n, 4)), 1.0) + 0.5  # some start over
    state = PoolState(np.arange(1, n + 1), np.full(n, -1), capacity, limit, np.ones(n, bool),
                      np.zeros((n, len(ENGINE_DIMENSIONS))), follower[:, 2].copy(), holders, holders[:, 0].copy(),
                      holders.copy(), follower, extra)
    goal = Goal(band=0.1)
    target = np.array([rng.choice(n, 2, replace=False) for _ in range(parts)])
    pruned, reasons = prune_moves(state, goal, target)
    fair = state_fair_share(state)[:, :4]
    full_limit = np.full((n, len(ENGINE_DIMENSIONS)), np.inf)
    full_limit[:, :4] = limit
    upper, low = full_limit.copy(), np.full_like(full_limit, -np.inf)
    banded = fair.sum(axis=0) > 0
    upper[:, :4][:, banded] = np.minimum(limit, 1.1 * fair)[:, banded]
    low[:, :4][:, banded] = np.minimum(0.9 * fair, upper[:, :4])[:, banded]
    final = add_loads(np.zeros_like(full_limit), pruned, follower, extra)
    for i, r in reasons.items():
        undone = final.copy()
        for replicas, sign in ((pruned[i], -1.0), (holders[i], 1.0)):
            undone += sign * add_loads(np.zeros_like(full_limit), np.array([replicas]), follower[i:i + 1],
                                       extra[i:i + 1])
        broken, unclear = _broken_rules(full_limit, low, upper, final, undone)
        if unclear:
            continue
        first = next(rule for rule in _ORDER if broken[rule])
        cell = (r.broker, ENGINE_DIMENSIONS.index(r.dimension))  # the engine names brokers by position
        assert (r.rule, cell in broken[first]) == (first, True), (i, r, broken)
        assert r.without == pytest.approx(undone[cell], rel=1e-9)
