"""Distribution goals for large pools: a deterministic local search over the engine's `PoolState`.

The engine's MILP (`planner.placement.engine.optimise`) meets a goal exactly on small pools; on a large pool with
every broker banded in six dimensions, or many over headroom, its model stalls at the root (`pool_optimiser`
picks by size). Here, as in Cruise Control's
analyzer, moves are taken one at a time, each the best relief per copied byte from the brokers furthest out of
the band (or over headroom × capacity):

- **Leader moves** (zero copy), always tried first: a broker leading too much hands the lead of one of its
  partitions to a follower, when that lowers the penalty.
- **Replica moves**, when no leader move helps: one replica of a partition on such a broker goes to one of the
  least-loaded receiving brokers that keeps the partition's rack spread (its own rack, or a rack the partition
  does not use), taking the lead with it when it led; going back to a broker that holds the partition now
  copies nothing.
- **Swaps**, when no single move helps: a replica of such a broker and one of a receiving broker change places
  (Cruise Control's swap actions): a broker over in disk but at its band's edge in replicas trades a large
  partition for a small one.

The penalty is Σ over brokers and banded dimensions of (distance outside the band / fair share)², plus
``OVERLOAD`` × (load above headroom × capacity / that limit)². A move is taken only when it lowers the penalty
and fits the moved-bytes budget; ties break on broker and partition order, so the result is deterministic.
"""

from __future__ import annotations

import numpy as np

from planner.placement.engine import ENGINE_DIMENSIONS, Goal, PoolResult, PoolState, evaluate, optimise, state_loads

__all__ = ["ENGINE_PAIRS", "OVERLOAD", "distribute", "pool_optimiser"]

#: Pools with at most this many (partition, broker) pairs go to the engine's exact model, larger ones to the
#: search: with many brokers banded (a rebalance) or over headroom, the whole-pool model stalls at the root.
ENGINE_PAIRS = 1_000
#: Weight of load above headroom × capacity against load outside the band.
OVERLOAD = 1e3
_SOURCES = 16  # brokers examined per step
_TARGETS = 16  # least-loaded brokers a replica may go to per step
_SWAP = 48  # replicas per broker a swap considers (those relieving the most, and those bringing back the least)
_EPS = 1e-12


class _Search:
    def __init__(self, state: PoolState, goal: Goal) -> None:
        self.s = state
        n = len(state.broker_ids)
        weight = np.concatenate([state.capacity, state.capacity[:, 3:4], state.capacity[:, 0:1]], axis=1)
        self.target = state.seed.copy()
        self.load = state_loads(state, self.target)
        total = self.load.sum(axis=0)
        banded = np.zeros(len(ENGINE_DIMENSIONS), dtype=bool)
        if goal.band is not None:
            banded[[ENGINE_DIMENSIONS.index(d) for d in goal.band_dimensions]] = True
        wsum = weight.sum(axis=0)
        banded &= (wsum > 0) & (total > 0)
        self.share = np.where(wsum > 0, total / np.where(wsum > 0, wsum, 1.0), 0.0) * weight
        self.share = np.where(self.share > 0, self.share, 1.0)
        beta = goal.band or 0.0
        brokers = np.ones(n, dtype=bool) if goal.band_brokers is None else np.asarray(goal.band_brokers, bool)
        self.banded = banded[None, :] & brokers[:, None]
        self.high = (1 + beta) * self.share
        self.low = (1 - beta) * self.share
        self.limit = np.where(state.limit > 0, state.limit, _EPS)
        self.budget = np.inf if goal.budget is None else float(goal.budget)
        self.spent = 0.0
        self.rf = state.rf
        racks = state.rack[state.rack >= 0]
        self.n_racks = len(np.unique(racks))

    def penalty(self, load: np.ndarray, brokers: np.ndarray) -> np.ndarray:
        """Penalty of ``load`` rows (…, 6) on ``brokers`` (same leading shape)."""
        out = np.maximum(load - self.high[brokers], 0.0) + np.maximum(self.low[brokers] - load, 0.0)
        band = np.where(self.banded[brokers], out / self.share[brokers], 0.0)
        over = np.maximum(load[..., :4] - self.limit[brokers], 0.0) / self.limit[brokers]
        return (band**2).sum(axis=-1) + OVERLOAD * (over**2).sum(axis=-1)

    def fill(self) -> np.ndarray:
        """Each broker's mean load over its fair share in the banded dimensions (its busiest capacity dimension
        over its limit when unbanded)."""
        banded = self.banded.sum(axis=1)
        fill = np.where(self.banded, self.load / self.share, 0.0).sum(axis=1) / np.maximum(banded, 1)
        return fill + (self.load[:, :4] / self.limit).max(axis=1) * np.where(banded > 0, 1e-3, 1.0)

    def worst(self) -> np.ndarray:
        """The brokers to move load off: furthest above the band or their limit first, then the fullest."""
        n = len(self.load)
        ids = np.arange(n)
        above = np.maximum(self.load - self.high, 0.0) / self.share
        over = (np.where(self.banded, above, 0.0) ** 2).sum(axis=1)
        over += OVERLOAD * ((np.maximum(self.load[:, :4] - self.limit, 0.0) / self.limit) ** 2).sum(axis=1)
        order = np.lexsort((ids, -self.fill(), -over))
        return order[: _SOURCES]

    def leader_step(self) -> bool:
        s = self.s
        for b in self.worst().tolist():
            led = np.flatnonzero(self.target[:, 0] == b)
            if not len(led):
                continue
            rows = self.target[led]
            slots = np.nonzero(rows[:, 1:] >= 0)
            parts, to = led[slots[0]], rows[:, 1:][slots]
            if not len(parts):
                continue
            delta = s.extra[parts]
            before = self.penalty(self.load[b], np.array(b)) + self.penalty(self.load[to], to)
            after = self.penalty(self.load[b] - delta, np.full(len(parts), b)) + self.penalty(self.load[to] + delta, to)
            gain = before - after
            k = int(np.lexsort((parts, -gain))[0])
            if gain[k] <= _EPS:
                continue
            i, t = int(parts[k]), int(to[k])
            self.load[b] -= delta[k]
            self.load[t] += delta[k]
            row = [x for x in self.target[i].tolist() if x >= 0]
            row.remove(t)
            self.target[i, : len(row) + 1] = [t, *row]
            return True
        return False

    def replica_step(self) -> bool:
        s = self.s
        n = len(self.load)
        pen = self.penalty(self.load, np.arange(n))
        room = np.where(s.receives, self.fill(), np.inf)
        receivers = np.lexsort((np.arange(n), room))[: max(_TARGETS, 2 * len(np.unique(s.rack)))]
        receivers = receivers[np.isfinite(room[receivers])]
        for b in self.worst().tolist():
            hit = np.nonzero(self.target == b)
            parts, slot = hit[0], hit[1]
            if not len(parts) or not len(receivers):
                continue
            lead = slot == 0
            move = s.follower[parts] + lead[:, None] * s.extra[parts]
            p_idx = np.repeat(np.arange(len(parts)), len(receivers))
            t = np.tile(receivers, len(parts))
            i = parts[p_idx]
            ok = ~(self.target[i] == t[:, None]).any(axis=1) & (t != b)
            ok &= self._spread_ok(i, b, t)
            holds = (s.holders[i] == t[:, None]).any(axis=1)
            cost = np.where(holds, 0.0, s.size[i])
            ok &= self.spent + cost <= self.budget + _EPS
            if not ok.any():
                continue
            p_idx, t, i, cost = p_idx[ok], t[ok], i[ok], cost[ok]
            d = move[p_idx]
            before = pen[b] + pen[t]
            after = (self.penalty(self.load[b] - d, np.full(len(t), b)) + self.penalty(self.load[t] + d, t))
            gain = before - after
            score = gain / (cost / max(float(s.size.max()), 1.0) + 1e-3)
            k = int(np.lexsort((t, i, -score))[0])
            if gain[k] <= _EPS:
                continue
            part, dest = int(i[k]), int(t[k])
            self.load[b] -= d[k]
            self.load[dest] += d[k]
            self.spent += float(cost[k])
            self.target[part][self.target[part] == b] = dest
            return True
        return False

    def swap_step(self) -> bool:
        """Exchange a replica of a broker above its band with one of a receiving broker, when no single move
        helps (a broker can be over in disk and at its band's edge in replicas)."""
        s = self.s
        n = len(self.load)
        pen = self.penalty(self.load, np.arange(n))
        room = np.where(s.receives, self.fill(), np.inf)
        receivers = np.lexsort((np.arange(n), room))[:_TARGETS]
        receivers = receivers[np.isfinite(room[receivers])]
        for b in self.worst().tolist():
            i, di = self._replicas(b)
            if not len(i):
                continue
            excess = np.where(self.banded[b], np.maximum(self.load[b] - self.high[b], 0.0) / self.share[b], 0.0)
            excess[:4] += np.maximum(self.load[b, :4] - self.limit[b], 0.0) / self.limit[b]
            relief = (di / self.share[b]) @ excess
            keep = np.lexsort((i, -relief))[:_SWAP]
            i, di = i[keep], di[keep]
            best: tuple[float, int, int, int, float] | None = None
            for t in receivers.tolist():
                if t == b:
                    continue
                j, dj = self._replicas(t)
                if not len(j):
                    continue
                keep = np.lexsort((j, (dj / self.share[b]) @ excess))[:_SWAP]
                j, dj = j[keep], dj[keep]
                ii, jj = np.repeat(np.arange(len(i)), len(j)), np.tile(np.arange(len(j)), len(i))
                pi, pj = i[ii], j[jj]
                ok = (pi != pj) & ~(self.target[pi] == t).any(axis=1) & ~(self.target[pj] == b).any(axis=1)
                ok &= self._spread_ok(pi, b, np.full(len(pi), t)) & self._spread_ok(pj, t, np.full(len(pj), b))
                cost = (np.where((s.holders[pi] == t).any(axis=1), 0.0, s.size[pi])
                        + np.where((s.holders[pj] == b).any(axis=1), 0.0, s.size[pj]))
                ok &= self.spent + cost <= self.budget + _EPS
                if not ok.any():
                    continue
                d = di[ii] - dj[jj]
                gain = pen[b] + pen[t] - self.penalty(self.load[b] - d, np.full(len(d), b)) \
                    - self.penalty(self.load[t] + d, np.full(len(d), t))
                score = np.where(ok, gain / (cost / max(float(s.size.max()), 1.0) + 1e-3), -np.inf)
                k = int(np.lexsort((pj, pi, -score))[0])
                if ok[k] and gain[k] > _EPS and (best is None or score[k] > best[0]):
                    best = (float(score[k]), int(pi[k]), int(pj[k]), t, float(cost[k]))
            if best is None:
                continue
            _, a, c, t, cost = best
            d = self._load_of(a, b) - self._load_of(c, t)
            self.load[b] -= d
            self.load[t] += d
            self.spent += cost
            self.target[a][self.target[a] == b] = t
            self.target[c][self.target[c] == t] = b
            return True
        return False

    def _replicas(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """The partitions with a replica on ``b`` and the load that replica carries there."""
        parts, slot = np.nonzero(self.target == b)
        return parts, self.s.follower[parts] + (slot == 0)[:, None] * self.s.extra[parts]

    def _load_of(self, part: int, b: int) -> np.ndarray:
        return self.s.follower[part] + (self.target[part, 0] == b) * self.s.extra[part]

    def _spread_ok(self, parts: np.ndarray, b: int, t: np.ndarray) -> np.ndarray:
        """Moving ``b``'s replica of each partition to ``t`` keeps min(RF, racks) racks."""
        rack = self.s.rack
        if not self.n_racks:
            return np.ones(len(t), dtype=bool)
        rows = self.target[parts]
        others = np.where((rows >= 0) & (rows != b), rack[np.maximum(rows, 0)], -2)
        same = rack[t] == rack[b]
        fresh = (rack[t] >= 0) & ~(others == rack[t][:, None]).any(axis=1)
        wide = self.rf[parts] <= self.n_racks
        rack_kept = (others == rack[b]).any(axis=1)  # RF > racks: every rack keeps a replica
        return np.where(wide, (same & (rack[t] >= 0)) | fresh, same | rack_kept)


def distribute(state: PoolState, goal: Goal, *, max_moves: int | None = None) -> PoolResult:
    """Take ``state``'s seed towards ``goal`` by single moves (see the module docstring).

    Parameters
    ----------
    state : PoolState
    goal : Goal
        Its band, banded dimensions and brokers, and budget.
    max_moves : int, optional
        Moves at most (default: 4 per partition).

    Returns
    -------
    PoolResult
        With status ``"greedy"``.
    """
    search = _Search(state, goal)
    limit = 4 * len(state.seed) if max_moves is None else max_moves
    moves = 0
    while moves < limit and (search.leader_step() or search.replica_step() or search.swap_step()):  # zero copy first
        moves += 1
    return evaluate(state, goal, search.target, "greedy")


def pool_optimiser(state: PoolState, goal: Goal) -> PoolResult:
    """What every day-2 operation hands `planner.placement.minimal_move.place_in_pools`: the engine's exact model
    on pools of at most `ENGINE_PAIRS` (partition, broker) pairs, `distribute` on larger ones."""
    if state.seed.shape[0] * len(state.broker_ids) <= ENGINE_PAIRS:
        return optimise(state, goal)
    return distribute(state, goal)
