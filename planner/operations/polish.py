"""Large-neighbourhood polish: the engine's whole-pool model, window by window, over a large pool's placement.

The distribution search (`planner.operations.distribution.distribute`) takes pools too large for the engine's
whole-pool model towards the band, but as a greedy knapsack it copies more than it needs (1.9× the exact model's
bytes on a 9-broker pool with a hot tenant, still outside the band). `polish` re-solves its placement one window
at a time:

- a **window** is a group of `WINDOW_BROKERS` brokers the placement touches (`_groups`: those it copies the most
  bytes onto or off first, then those it leaves outside their limit or band) and the partitions with a replica on
  them now or in the placement: those it copies first (the largest first), then those carrying the most banded
  load per byte, up to `WINDOW_PAIRS` (partition, broker) pairs of the model;
- the window is a `PoolState` of its own (`_window`): its partitions may move only onto the group's brokers that
  receive; the other brokers holding one of them now, in the seed or in the placement join it without receiving
  (a replica may stay there or go home); everything else is fixed load (``base``). It keeps the whole pool's
  fair shares (``share``), limits, rack spread (each partition's brokers are all in the window), cordons (a broker
  that receives nothing in the pool receives nothing in a window), preferred leaders and what is left of the
  budget;
- the engine's model (`planner.placement.engine.optimise`) solves it from the placement under `WINDOW_NODES`
  branch-and-bound nodes; its result replaces the window's placement only when `planner.placement.engine.better`
  (less overload, then less distance outside the band, then fewer moved bytes): no window leaves the pool worse.

**Work, not time.** One pass over the groups, in a fixed order (a second pass saved 0.06 % more bytes on the
9-broker hot pools): the same placement on any machine under any load, and work linear in the brokers the
placement touches. `WINDOW_SECONDS` is a safety net per window whose firing the result's status reports
(`TIME_LIMITED`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.placement.engine import (
    ENGINE_DIMENSIONS,
    TIME_LIMITED,
    Goal,
    PoolResult,
    PoolState,
    better,
    evaluate,
    optimise,
    state_fair_share,
)
from pools.fill import add_loads

__all__ = ["WINDOW_BROKERS", "WINDOW_NODES", "WINDOW_PAIRS", "WINDOW_SECONDS", "polish"]

#: Receiving brokers per window.
WINDOW_BROKERS = 6
#: (Partition, broker) pairs of a window's model at most (within the engine's `FULL_PAIRS`: it solves a window
#: whole). 80 partitions on 6 brokers: 1-5 s a window on a 60-broker pool; 6,000 took up to 60 s.
WINDOW_PAIRS = 1_200
#: Branch-and-bound nodes per window: the deterministic limit.
WINDOW_NODES = 300
#: Wall-clock seconds per window, a safety net only.
WINDOW_SECONDS = 60.0


def polish(state: PoolState, goal: Goal, start: PoolResult) -> PoolResult:
    """``start``'s placement of ``state``, window by window re-solved by the engine's model towards ``goal`` (see
    the module docstring); its status is ``start``'s, or `TIME_LIMITED` when a window's safety net fired."""
    share = state_fair_share(state)
    target, cut = start.target.copy(), False
    for group in _groups(state, goal, share, target):
        parts = _partitions(state, goal, share, target, group)
        if not len(parts):
            continue
        window, brokers, begin, budget = _window(state, goal, share, target, parts, group)
        local = replace(goal, budget=budget, band_brokers=_band_brokers(goal, brokers))
        found = optimise(window, local, start=begin, max_nodes=WINDOW_NODES, time_limit=WINDOW_SECONDS)
        cut |= found.status == TIME_LIMITED
        if better(window, local, found, evaluate(window, local, begin, start.status)):
            target[parts] = np.where(found.target >= 0, brokers[np.maximum(found.target, 0)], -1)
    return evaluate(state, goal, target, TIME_LIMITED if cut else start.status)


def _groups(state: PoolState, goal: Goal, share: np.ndarray, target: np.ndarray) -> list[np.ndarray]:
    """The brokers the placement touches, in groups of `WINDOW_BROKERS`: those it copies the most bytes onto or
    off first, then those it leaves outside their limit or band, the furthest (in fair shares and limits) first,
    ties by position."""
    n = len(state.broker_ids)
    traffic = np.zeros(n)
    for cells, table in ((_new(target, state.holders), target), (_new(state.holders, target), state.holders)):
        rows, slots = np.nonzero(cells)
        np.add.at(traffic, table[rows, slots], state.size[rows])
    now = evaluate(state, goal, target, "greedy")
    outside = (now.outside_band / np.where(share > 0, share, 1.0)).sum(axis=1) + \
        (now.overload / np.where(state.limit > 0, state.limit, 1.0)).sum(axis=1)
    touched = np.flatnonzero((traffic > 0) | (outside > 0))
    order = touched[np.lexsort((touched, -outside[touched], -traffic[touched]))]
    return [order[k : k + WINDOW_BROKERS] for k in range(0, len(order), WINDOW_BROKERS)]


def _partitions(state: PoolState, goal: Goal, share: np.ndarray, target: np.ndarray, group: np.ndarray) -> np.ndarray:
    """The partitions of ``group``'s window, sorted: those with a replica on the group now or in ``target``, the
    copied ones first (largest first), then the most banded load per copied byte, within `WINDOW_PAIRS`."""
    rows = np.concatenate([target, state.holders], axis=1)
    mine = np.flatnonzero(np.isin(rows, group).any(axis=1))
    if not len(mine):
        return mine
    copied = _new(target[mine], state.holders[mine]).any(axis=1)
    dims = np.array([d in goal.band_dimensions for d in ENGINE_DIMENSIONS]) if goal.band is not None else \
        np.ones(len(ENGINE_DIMENSIONS), bool)
    mean = np.maximum(share.mean(axis=0), 1e-300)
    load = ((state.follower[mine] + state.extra[mine]) / mean)[:, dims].sum(axis=1)
    scale = max(float(state.size.max()), 1.0)
    value = np.where(copied, np.inf, load / (state.size[mine] / scale + 1e-3))
    order = mine[np.lexsort((mine, -np.where(copied, state.size[mine], 0.0), -value))]
    receiving = int(state.receives[group].sum())
    width = receiving + 3 * target.shape[1]  # columns a partition adds at most: the group, and where it is kept
    return np.sort(order[: max(1, WINDOW_PAIRS // max(width, 1))])


def _window(state: PoolState, goal: Goal, share: np.ndarray, target: np.ndarray, parts: np.ndarray,
            group: np.ndarray) -> tuple[PoolState, np.ndarray, np.ndarray, float | None]:
    """The window of ``parts`` on ``group`` as a `PoolState` (see the module docstring), its brokers' positions
    in ``state``, ``target``'s rows in the window and what is left of the budget."""
    cells = np.concatenate([target[parts], state.holders[parts], state.seed[parts]], axis=1)
    brokers = np.union1d(group, cells[cells >= 0])
    local = np.full(len(state.broker_ids), -1)
    local[brokers] = np.arange(len(brokers))
    rest = np.ones(len(target), dtype=bool)
    rest[parts] = False
    base = add_loads(np.asarray(state.base, dtype=float), target[rest], state.follower[rest], state.extra[rest])

    def here(table: np.ndarray) -> np.ndarray:
        return np.where(table >= 0, local[np.maximum(table, 0)], -1)

    window = PoolState(
        broker_ids=state.broker_ids[brokers], rack=state.rack[brokers], capacity=state.capacity[brokers],
        limit=state.limit[brokers], receives=state.receives[brokers] & np.isin(brokers, group), base=base[brokers],
        size=state.size[parts], holders=here(state.holders[parts]), preferred=here(state.preferred[parts]),
        seed=here(state.seed[parts]), follower=state.follower[parts], extra=state.extra[parts], share=share[brokers],
    )
    budget = None
    if goal.budget is not None:
        spent = float((_new(target[rest], state.holders[rest]).sum(axis=1) * state.size[rest]).sum())
        budget = max(float(goal.budget) - spent, 0.0)
    return window, brokers, here(target[parts]), budget


def _band_brokers(goal: Goal, brokers: np.ndarray) -> np.ndarray | None:
    return None if goal.band_brokers is None else np.asarray(goal.band_brokers, dtype=bool)[brokers]


def _new(table: np.ndarray, holders: np.ndarray) -> np.ndarray:
    """Per cell of ``table`` (replica lists): a broker its row's ``holders`` do not include."""
    return (table >= 0) & ~(table[:, :, None] == holders[:, None, :]).any(axis=2)
