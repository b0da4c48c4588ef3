"""The large-neighbourhood polish (`planner.operations.polish`) on windows smaller than the pool: it copies less,
never leaves the pool worse, and keeps every rule the engine keeps (rack spread, cordons, the budget)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.operations import polish as polish_module
from planner.operations.distribution import distribute
from planner.operations.polish import polish
from planner.placement.engine import ENGINE_DIMENSIONS, TIME_LIMITED, Goal, PoolState, better, evaluate

GOAL = Goal(band=0.1, band_dimensions=ENGINE_DIMENSIONS)


def _pool(receives: tuple[bool, ...] = (True,) * 9, empty: int | None = None, seed: int = 0) -> PoolState:
    """Nine brokers on three racks (broker b in rack b % 3), 60 RF-3 partitions, one replica per rack, sizes and
    rates lognormal; ``empty`` holds nothing (its rack's replicas go to the rack's other brokers)."""
    rng = np.random.default_rng(seed)
    n, parts = 9, 60
    rows = []
    for _ in range(parts):
        row = [int(rng.choice([b for b in range(n) if b % 3 == r and b != empty])) for r in range(3)]
        rows.append([row[k] for k in rng.permutation(3)])
    holders = np.array(rows)
    size = rng.lognormal(22.0, 0.8, parts)
    rate = rng.lognormal(13.0, 0.6, parts)
    follower = np.stack([rate, 0 * rate, size, np.ones(parts), 0 * rate, 0 * rate], axis=1)
    extra = np.stack([0 * rate, 3 * rate, 0 * rate, 0 * rate, np.ones(parts), rate], axis=1)
    capacity = np.tile([50e6, 100e6, 4e12, 100.0], (n, 1))
    return PoolState(np.arange(1, n + 1), np.arange(n) % 3, capacity, 0.8 * capacity, np.array(receives),
                     np.zeros((n, 6)), size, holders, holders[:, 0].copy(), holders.copy(), follower, extra)


@pytest.fixture(autouse=True)
def small_windows(monkeypatch) -> None:
    """Windows of 3 brokers and 20 partitions, 50 nodes each: each sees a part of the pool, as on a large one."""
    monkeypatch.setattr(polish_module, "WINDOW_NODES", 50)
    monkeypatch.setattr(polish_module, "WINDOW_BROKERS", 3)
    monkeypatch.setattr(polish_module, "WINDOW_PAIRS", 20 * (3 + 9))


def _spread_ok(state: PoolState, target: np.ndarray) -> bool:
    return all(len({int(state.rack[b]) for b in row if b >= 0}) == 3 for row in target)


def test_the_polish_copies_less_than_the_search_never_worse_and_the_same_every_time() -> None:
    state = _pool()
    searched = distribute(state, GOAL)
    polished = polish(state, GOAL, searched)
    assert searched.moved_bytes > 0
    assert better(state, GOAL, polished, searched)  # the band as met, fewer bytes
    assert polished.moved_bytes < searched.moved_bytes
    assert not polished.outside_band.any() and not searched.outside_band.any()
    assert not polished.overload.any()
    assert _spread_ok(state, polished.target)
    again = polish(state, GOAL, distribute(state, GOAL))
    assert (again.target == polished.target).all() and again.moved_bytes == polished.moved_bytes


def test_a_wasteful_placement_comes_home_window_by_window() -> None:
    # a placement inside the band that copies what it need not: the windows send the copies back
    state = _pool()
    searched = distribute(state, GOAL)
    home = polish(state, GOAL, evaluate(state, GOAL, searched.target, "greedy"))
    wasteful = home.target.copy()
    for i in np.flatnonzero((wasteful == state.holders).all(axis=1))[:6].tolist():  # swap followers within a rack
        j = next(j for j in range(len(wasteful)) if j != i and (state.rack[wasteful[j]] == state.rack[wasteful[i]]).all()
                 and not set(wasteful[j].tolist()) & set(wasteful[i].tolist()))
        wasteful[[i, j], 1] = wasteful[[j, i], 1]
    start = evaluate(state, GOAL, wasteful, "greedy")
    assert start.moved_bytes > home.moved_bytes
    assert polish(state, GOAL, start).moved_bytes < start.moved_bytes


def test_a_broker_that_receives_nothing_gets_no_new_replica_from_a_window() -> None:
    # broker 9 is empty and below its band, but cordoned: it takes nothing, however far below the band it stays
    receives = (True,) * 8 + (False,)
    state = _pool(receives, empty=8)
    polished = polish(state, GOAL, distribute(state, GOAL))
    assert not (polished.target == 8).any()
    assert _spread_ok(state, polished.target)


def test_the_polish_keeps_within_the_budget() -> None:
    state = _pool(seed=1)
    budget = distribute(state, GOAL).moved_bytes / 2
    goal = Goal(band=0.1, band_dimensions=ENGINE_DIMENSIONS, budget=budget)
    searched = distribute(state, goal)
    polished = polish(state, goal, searched)
    assert polished.moved_bytes <= budget
    assert not better(state, goal, searched, polished)


def test_a_window_stopped_by_its_safety_net_is_reported(monkeypatch) -> None:
    monkeypatch.setattr(polish_module, "WINDOW_SECONDS", 0.0)
    state = _pool()
    searched = distribute(state, GOAL)
    polished = polish(state, GOAL, searched)
    assert polished.status == TIME_LIMITED
    assert not better(state, GOAL, searched, polished)
