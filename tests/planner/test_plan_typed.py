"""The typed plan (`pools.plan_file`): utilisation read and written back byte for byte, every limit question asked
of `pools.pool_rules` with its one tolerance, one reason vocabulary, and one rack-spread rule at every exit."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from planner.emit.bundle import over_limit_before
from planner.placement.engine import PoolState, spread_kept
from planner.reasons import explain
from pools.errors import InputError
from pools.plan_file import (REASON_RULES, PartitionMove, Reason, ReasonRule, load_plan, plan_from_dict,
                             plan_to_json)
from pools.pool_rules import TOLERANCE, racks_required, spans_racks

_CELL = {"capacity": 100.0, "now": 50.0, "before": 70.0, "after": 60.0}
_POOL = {"capacity": 300.0, "capacity_with_added": 300.0, "capacity_usable": 200.0, "demand_now": 150.0,
         "demand_forecast": 180.0, "headroom": 0.7, "load_before": 180.0, "load_after": 180.0}


def _doc(before: float = 70.0, **extra) -> dict:
    cell = _CELL | {"before": before}
    return {"version": 1, "cluster": "c", "brokers_before": {"1": "a", "2": "a", "3": "a"},
            "brokers": {"1": "a", "2": "a", "3": "a"}, "topics": {"t": "a"},
            "partitions": [{"topic": "t", "partition": 0, "old_replicas": [1, 2], "replicas": [3, 2],
                            "size_bytes": 10, "copied_bytes": 10,
                            "reason": {"rule": "relieve", "broker": 1, "dimension": "disk", "bound": 70.0,
                                       "without": 80.0}}],
            "solver": {"name": "HiGHS", "status": "Optimal"},
            "utilisation": {"brokers": {str(b): {"disk": cell if b == 1 else _CELL} for b in (1, 2, 3)},
                            "pools": {"a": {"disk": _POOL}}}} | extra


def test_the_plan_file_round_trips_byte_for_byte_through_the_typed_view(tmp_path: Path) -> None:
    text = plan_to_json(plan_from_dict(_doc()))
    path = tmp_path / "plan.json"
    path.write_text(text, encoding="utf-8")
    plan = load_plan(path)
    assert plan_to_json(plan) == text
    assert json.loads(text)["utilisation"] == _doc()["utilisation"]
    assert plan.utilisation.pool("a", "disk").capacity_usable == 200.0 and plan.utilisation.broker(9, "disk") is None


def test_an_old_plan_without_utilisation_or_with_fewer_fields_still_reads() -> None:
    bare = plan_from_dict({k: v for k, v in _doc().items() if k != "utilisation"})
    assert bare.utilisation.to_dict() == {} and bare.pool_headroom("a", "disk") is None
    assert bare.over_limit_before() == frozenset()
    old = _doc(utilisation={"pools": {"a": {"disk": {"capacity": 300.0, "headroom": 0.7}}}})
    assert plan_from_dict(old).pool_headroom("a", "disk") == 0.7


def test_an_unknown_utilisation_field_is_named() -> None:
    bad = _doc(utilisation={"pools": {"a": {"disk": {"headroom": 0.7, "hedroom": 0.7}}}})
    with pytest.raises(InputError, match=r"utilisation\.pools\.a\.disk\.hedroom"):
        plan_from_dict(bad, source="plan.json")


@pytest.mark.parametrize(("slack", "over"), [(0.5 * TOLERANCE, False), (2 * TOLERANCE, True)])
def test_every_exit_asks_the_one_limit_with_its_tolerance(slack: float, over: bool) -> None:
    """Broker 1 before the plan just within or just over 0.7 × 100 (the tolerance is relative): the plan, the
    bundle's relieve-first batches and ``explain``'s alternatives agree."""
    limit = 70.0
    plan = plan_from_dict(_doc(before=limit * (1 + slack)))
    assert plan.broker_limit(1, "disk") == pytest.approx(limit)
    assert plan.broker_over_limit(1, "disk", limit * (1 + slack)) is over
    assert (plan.over_limit_before() == {1}) is over
    assert (over_limit_before(plan, None) == {1}) is over
    # explain: broker 1 "instead" of the move onto 3 would carry its after (60) + the load shifted (80 - 60)
    moved = plan_from_dict(_doc() | {"brokers_before": {"1": "a", "2": "a", "3": "a", "4": "a"},
                                     "brokers": {"1": "a", "2": "a", "3": "a", "4": "a"}})
    moved = plan_from_dict(json.loads(plan_to_json(moved)) | {"utilisation": {
        "brokers": {"1": {"disk": _CELL}, "2": {"disk": _CELL}, "3": {"disk": _CELL},
                    "4": {"disk": _CELL | {"after": limit * (1 + slack) - 20.0}}},
        "pools": {"a": {"disk": _POOL}}}})
    lines = explain(moved, "t", 0)
    assert [line for line in lines if line.startswith("  broker 4 instead")][0].endswith(
        f"{'over' if over else 'within'} its 70% limit")


def test_one_reason_vocabulary_with_one_text() -> None:
    assert REASON_RULES == tuple(ReasonRule) and Reason("relieve").rule is ReasonRule.RELIEVE
    with pytest.raises(ValueError):
        Reason("whim")
    reasons = [Reason(rule, 1, "disk", 70.0, 80.0) if rule.names_load else
               Reason(rule, brokers=(1,) if rule.names_brokers else ()) for rule in ReasonRule]
    texts = [r.describe() for r in reasons]
    assert len(set(texts)) == len(texts) and all(r.describe(kept=True) for r in reasons)
    move = PartitionMove("t", 0, (1, 2), (3, 2), 10, Reason("isolate", brokers=(1,)))
    assert json.loads(json.dumps(move.reason.to_dict())) == {"rule": "isolate", "brokers": [1]}


def test_the_engine_keeps_the_rack_spread_pool_rules_defines() -> None:
    """For replica lists that span their racks, `spread_kept` (the engine's and the rebalance's array form)
    accepts a one-replica move exactly when `spans_racks` holds after it."""
    rng = random.Random(37)
    for _ in range(300):
        n = rng.randint(2, 7)
        rack = np.array([rng.choice([-1, 0, 1, 2]) for _ in range(n)])
        racks = len(set(rack[rack >= 0].tolist()))
        rf = rng.randint(1, n - 1)
        row = rng.sample(range(n), rf)
        on = [int(rack[b]) if rack[b] >= 0 else None for b in row]
        if not spans_racks(on, racks):
            continue
        slot, dst = rng.randrange(rf), rng.choice([b for b in range(n) if b not in row])
        state = PoolState(np.arange(n), rack, np.ones((n, 4)), np.ones((n, 4)), np.ones(n, bool), np.zeros((n, 6)),
                          np.zeros(1), np.array([row]), np.array([0]), np.array([row]), np.zeros((1, 6)),
                          np.zeros((1, 6)))
        after = [rack[b] for b in row]
        after[slot] = rack[dst]
        want = spans_racks([int(r) if r >= 0 else None for r in after], racks)
        got = bool(spread_kept(state, np.array([row]), np.array([slot]), np.array([dst]))[0])
        assert got == want, (rack.tolist(), row, slot, dst, racks_required(rf, racks))
