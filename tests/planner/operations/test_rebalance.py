"""Rebalance of small pools: repeatable, quick, a time-limit stop reported, and as good as the exact reference
(`planner.placement.exact`) for both goals: the fewest bytes at a band, the best balance at a budget."""

from __future__ import annotations

import pytest

from planner.operations import operation_inputs, rebalance
from planner.operations import distribution, polish
from planner.placement.exact import exact_placement
from pools.snapshot import DIMENSIONS

from .shapes import big_broker_of_seven, hot_pool

#: The stated margin of a small-pool rebalance against the exact reference: moved bytes at a band, and the
#: distance outside the band at a budget, each within 1 % (the engine stops at a 0.1 % MIP gap).
MARGIN = 1.01
#: The large-pool path (pools past `distribution.ENGINE_PAIRS`: the search, then `planner.operations.polish`'s
#: windows of 6 of the 9 brokers) on the same pool: distance outside the band within a budget, against the exact
#: placement's (the search alone: 2.3x; 3.6x before moves under a budget were chosen over every broker out of the
#: band), and moved bytes at the band (measured 1.0016x; the search alone 1.9x, with 0.63 fair shares left
#: outside it).
SEARCH_BALANCE_MARGIN = 2.5
SEARCH_BYTES_MARGIN = 1.2


def _inputs(s):
    return operation_inputs(s.snapshot, s.policy, s.profile)


def _distance(op) -> float:
    return sum(v["after"]["distance"] for d, v in op.balance["a"].items() if d in DIMENSIONS and v["after"])


@pytest.mark.slow
def test_a_small_pool_with_a_much_larger_broker_is_rebalanced_the_same_every_time() -> None:
    # an outside check's 7-broker pool with one broker 4x larger ran the whole-pool model into its 300 s time limit
    # (a different plan each run); now the search, then the model under a node limit
    s = big_broker_of_seven()
    first = rebalance(_inputs(s))
    assert first.plan.placement["a"]["status"] in ("optimal", "feasible", "greedy")
    assert not [w for w in first.plan.warnings if "time limit" in w]
    assert all(v["after"]["outside_band"] == 0 for v in first.balance["a"].values())
    assert rebalance(_inputs(s)).plan.to_dict() == first.plan.to_dict()


def test_a_solve_stopped_by_its_time_limit_is_a_warning_in_the_plan(monkeypatch) -> None:
    monkeypatch.setattr(distribution, "POLISH_SECONDS", 1e-4)
    op = rebalance(_inputs(big_broker_of_seven()))
    assert op.plan.placement["a"]["status"] == "time-limit"
    assert [w for w in op.plan.warnings if w.startswith("pool 'a': the placement stopped at its time limit")]
    assert not [w for w in op.plan.warnings if w.startswith("validator:")]  # the search's placement stands


@pytest.mark.slow
def test_rebalance_matches_the_exact_reference_in_bytes_at_a_band_and_in_balance_at_a_budget(monkeypatch) -> None:
    # the search alone moved 1.9x the exact bytes (and stayed outside the band) and, within half those bytes,
    # ended 3.6x as far outside the band as the exact placement within the same budget; its windows bring it to the
    # band at the exact bytes
    s = hot_pool(45)
    inputs = _inputs(s)
    brokers, topics = list(range(1, 10)), sorted(s.snapshot.partitions_by_topic)
    headroom = inputs.rules.limits("a").headroom
    best = exact_placement(s.snapshot, inputs.forecast, topics, brokers, headroom=headroom, band=0.10,
                           band_brokers=brokers)
    op = rebalance(inputs, dimensions=DIMENSIONS)
    assert _distance(op) == 0
    assert best.moved_bytes <= op.moved_bytes <= MARGIN * best.moved_bytes
    budget = best.moved_bytes // 2
    within = exact_placement(s.snapshot, inputs.forecast, topics, brokers, headroom=headroom, band=0.10,
                             band_brokers=brokers, max_moved_bytes=budget)
    assert within.optimal and within.outside_band > 0
    capped = rebalance(inputs, dimensions=DIMENSIONS, max_moved_bytes=budget)
    assert capped.moved_bytes <= budget
    assert _distance(capped) <= MARGIN * within.outside_band + 1e-3  # distances are rounded to 1e-4 per dimension
    monkeypatch.setattr(distribution, "ENGINE_PAIRS", 0)  # the search and its windows, as on a large pool
    assert polish.WINDOW_BROKERS < len(brokers)  # no window sees the whole pool
    searched = rebalance(inputs, dimensions=DIMENSIONS, max_moved_bytes=budget)
    assert searched.plan.placement["a"]["status"] == "greedy" and searched.moved_bytes <= budget
    assert _distance(searched) <= SEARCH_BALANCE_MARGIN * within.outside_band
    at_band = rebalance(inputs, dimensions=DIMENSIONS)
    assert _distance(at_band) == 0  # the same balance as the exact placement's
    assert at_band.moved_bytes <= SEARCH_BYTES_MARGIN * best.moved_bytes
