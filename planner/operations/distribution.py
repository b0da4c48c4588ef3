"""Distribution goals for large pools: a deterministic local search over the engine's `PoolState`.

The engine's MILP (`planner.placement.engine.optimise`) meets a goal exactly on small pools; on a large pool with
every broker banded in six dimensions, or many over headroom, its model stalls at the root (`pool_optimiser`
picks by size). Here, as in Cruise Control's analyzer, steps are taken one at a time, each the best relief per
copied byte for the brokers out of the band, above *or* below it, or over headroom × capacity (furthest first):

- **Leader moves** (zero copy), always tried first: a leader hands the lead to a follower, one of the two out
  of the band.
- **Replica moves**, when no leader move helps (under a budget, the best per copied byte over every broker out
  of the band, not only the furthest that has one): a replica on a broker above the band goes to any receiving
  broker, or a replica on one of the brokers fullest where a broker is below the band comes to it, keeping the
  partition's rack spread (`planner.placement.engine.spread_kept`) and taking the lead with it
  when it led; going back to a broker that holds the partition now copies nothing. The replicas tried are
  those relieving the most, and those relieving the most per copied byte.
- **Swaps**, when no single move helps: a replica of such a broker and one of a partner change places (Cruise
  Control's swap actions). Partners are the brokers placed opposite in the band (low where it is high), and
  the replicas tried those heaviest where each side is fuller than the other: a broker over in nw_in but at
  its band's edge in replicas trades a heavy-nw_in replica for a light one, one over in nw_in with disk to
  spare a heavy-nw_in, light-disk replica for a light-nw_in, heavy-disk one.
- **Returns**, once nothing above helps: a copied replica goes back to a broker its partition left whenever the
  penalty stays as low (a later step made the copy unnecessary), the largest first.

As a greedy knapsack the search copies more than it needs (1.9× the exact bytes on a 9-broker pool with a hot
tenant): `pool_optimiser` hands its placement to the engine's model, whole or window by window.

The penalty is Σ over brokers and banded dimensions of (distance outside the band / fair share)² (the engine's
`planner.placement.engine.state_fair_share`, racks included), plus
``OVERLOAD`` × (load above headroom × capacity / that limit)²: every dimension counts, not only the worst. A
step is taken only when it lowers the penalty and fits the moved-bytes budget; ties break on broker and
partition order, so the result is deterministic.

Two brokers, eight partitions (RF 1) all on the first: the search moves half of them.

>>> import numpy as np
>>> from planner.placement.engine import Goal, PoolState
>>> n, one = 8, np.ones((2, 4))
>>> state = PoolState(broker_ids=np.array([1, 2]), rack=np.array([-1, -1]), capacity=100 * one, limit=80 * one,
...                   receives=np.array([True, True]), base=np.zeros((2, 6)), size=np.full(n, 10.0),
...                   holders=np.zeros((n, 1), int), preferred=np.zeros(n, int), seed=np.zeros((n, 1), int),
...                   follower=np.tile([1.0, 1.0, 1.0, 1.0, 0.0, 0.0], (n, 1)), extra=np.zeros((n, 6)))
>>> result = distribute(state, Goal(band=0.1, band_dimensions=("nw_in", "disk", "replicas")))
>>> result.load[:, 3].tolist(), result.moved_bytes
([4.0, 4.0], 40)
"""

from __future__ import annotations

import numpy as np

from planner.placement.engine import (
    ENGINE_DIMENSIONS,
    Goal,
    PoolResult,
    PoolState,
    band_weights,
    evaluate,
    optimise,
    spread_kept,
    state_fair_share,
    state_loads,
)
from planner.operations.polish import polish

__all__ = ["ENGINE_PAIRS", "OVERLOAD", "POLISH_NODES", "POLISH_SECONDS", "distribute", "pool_optimiser"]

#: Pools with at most this many (partition, broker) pairs go to the engine's exact model, larger ones to the
#: search: with many brokers banded (a rebalance) or over headroom, the whole-pool model stalls at the root.
ENGINE_PAIRS = 2_000
#: Branch-and-bound nodes of the engine's model after the search on a small pool: seconds, not minutes, on a
#: 7-broker pool whose band cannot be met (the model's slack makes its bound weak, so it rarely proves the gap).
POLISH_NODES = 300
#: Seconds the engine may spend on a small pool at most (a safety net: the node limit binds first).
POLISH_SECONDS = 60.0
#: Weight of load above headroom × capacity against load outside the band.
OVERLOAD = 1e3
_SOURCES = 16  # brokers out of the band examined per step
_PARTNERS = 16  # brokers a swap considers per broker out of the band
_SWAP = 48  # replicas per broker a move or swap considers (per ranking)
_DONORS = 48  # brokers a move into a broker below the band takes from
_INFLOW = 256  # replicas of those a move into a broker below the band considers
_EPS = 1e-12
_MARGIN = 1e-9  # the band the search aims at is this much (× fair share) narrower: rounding never leaves it


class _Search:
    """The placement being searched (``target``, ``load``) and the band, limits and budget it is held to."""

    def __init__(self, state: PoolState, goal: Goal) -> None:
        self.s = state
        n = len(state.broker_ids)
        self.target = state.seed.copy()
        self.load = state_loads(state, self.target)
        total = self.load.sum(axis=0)
        banded = np.zeros(len(ENGINE_DIMENSIONS), dtype=bool)
        if goal.band is not None:
            banded[[ENGINE_DIMENSIONS.index(d) for d in goal.band_dimensions]] = True
        banded &= (band_weights(state.capacity).sum(axis=0) > 0) & (total > 0)
        share = state_fair_share(state)
        self.share = np.where(share > 0, share, 1.0)
        beta = np.array([goal.band_of(d) for d in ENGINE_DIMENSIONS])
        brokers = np.ones(n, dtype=bool) if goal.band_brokers is None else np.asarray(goal.band_brokers, bool)
        self.banded = banded[None, :] & brokers[:, None]
        self.high = (1 + beta - _MARGIN) * self.share
        self.low = (1 - beta + _MARGIN) * self.share
        self.limit = np.where(state.limit > 0, state.limit, _EPS)
        self.budget = np.inf if goal.budget is None else float(goal.budget)
        self.spent = 0.0
        self.scale = max(float(state.size.max()), 1.0) if len(state.size) else 1.0

    # -- what a placement costs ----------------------------------------------------------------------------------

    def penalty(self, load: np.ndarray, brokers: np.ndarray) -> np.ndarray:
        """Penalty of ``load`` rows (…, 6) on ``brokers`` (same leading shape)."""
        out = np.maximum(load - self.high[brokers], 0.0) + np.maximum(self.low[brokers] - load, 0.0)
        band = np.where(self.banded[brokers], out / self.share[brokers], 0.0)
        over = np.maximum(load[..., :4] - self.limit[brokers], 0.0) / self.limit[brokers]
        return (band**2).sum(axis=-1) + OVERLOAD * (over**2).sum(axis=-1)

    def position(self) -> np.ndarray:
        """Where each broker sits, per dimension and in fair shares: its load over its share − 1 where banded,
        with the distance outside the band and above the limit weighted tenfold (B, 6); what moving load off a
        broker relieves, to first order."""
        rel = np.where(self.banded, (self.load - self.share) / self.share, 0.0)
        out = np.maximum(self.load - self.high, 0.0) - np.maximum(self.low - self.load, 0.0)
        rel += 10 * np.where(self.banded, out / self.share, 0.0)
        rel[:, :4] += 10 * OVERLOAD * np.maximum(self.load[:, :4] - self.limit, 0.0) / self.limit
        return rel

    def violators(self) -> np.ndarray:
        """The brokers out of the band or over their limit, furthest first (at most `_SOURCES`)."""
        pen = self.penalty(self.load, np.arange(len(self.load)))
        out = np.flatnonzero(pen > _EPS)
        return out[np.lexsort((out, -pen[out]))][:_SOURCES]

    # -- candidate actions ---------------------------------------------------------------------------------------

    def _replicas(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """The partitions with a replica on ``b`` and the load that replica carries there."""
        parts, slot = np.nonzero(self.target == b)
        return parts, self.s.follower[parts] + (slot == 0)[:, None] * self.s.extra[parts]

    def _keeps_racks(self, parts: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Moving ``b``'s replica of each partition to ``t`` keeps its rack spread (`spread_kept`)."""
        rows = self.target[parts]
        return spread_kept(self.s, rows, np.argmax(rows == b[:, None], axis=1), t)

    def _movable(self, parts: np.ndarray, b: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether ``b``'s replica of each partition may go to ``t`` (receiving, not yet holding it, rack spread
        kept), and the bytes that copies."""
        ok = self.s.receives[t] & (t != b) & ~(self.target[parts] == t[:, None]).any(axis=1)
        ok &= self._keeps_racks(parts, b, t)
        cost = np.where((self.s.holders[parts] == t[:, None]).any(axis=1), 0.0, self.s.size[parts])
        return ok, cost

    def _gain(self, b: np.ndarray, t: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Penalty relieved by taking load ``d`` (rows) from brokers ``b`` to ``t``."""
        pen = self.penalty(self.load, np.arange(len(self.load)))
        return pen[b] + pen[t] - self.penalty(self.load[b] - d, b) - self.penalty(self.load[t] + d, t)

    def _best(self, score: np.ndarray, *keys: np.ndarray) -> int:
        """Index of the highest score, ties broken on ``keys`` (first key decides first)."""
        return int(_top(score, 1, *keys)[0])

    # -- steps -----------------------------------------------------------------------------------------------------

    def leader_step(self) -> bool:
        """The best leader change that a broker out of the band gives or takes (one pass over the pool)."""
        out = np.zeros(len(self.load), dtype=bool)
        out[self.violators()] = True
        rows = self.target
        lead = rows[:, :1]
        # the leader hands the lead to a follower: either of them out of the band
        cand = (rows[:, 1:] >= 0) & (out[np.maximum(rows[:, 1:], 0)] | out[np.maximum(lead, 0)])
        parts, slot = np.nonzero(cand)
        if not len(parts):
            return False
        src, dst = rows[parts, 0], rows[parts, slot + 1]
        gain = self._gain(src, dst, self.s.extra[parts])
        k = self._best(gain, parts, dst)
        if gain[k] <= _EPS:
            return False
        self._lead(int(parts[k]), int(dst[k]))
        return True

    def replica_step(self) -> bool:
        """The best replica move (most relief per copied byte) off the furthest broker above the band, or onto one
        below it, that has one. Under a budget, the best over every broker out of the band (ties: the furthest):
        bytes spent on a poor move are not spent again, and on a 9-broker pool that halved the distance left
        outside the band (about 10× the time on a 60-broker pool, so not without a budget)."""
        receivers = np.flatnonzero(self.s.receives)
        pos = self.position()
        best: tuple[float, int, int, int, float] | None = None
        for v in self.violators().tolist():
            i, b, t = self._move_candidates(v, pos, receivers)
            ok, cost = self._movable(i, b, t)
            ok &= self.spent + cost <= self.budget + _EPS
            if not ok.any():
                continue
            i, b, t, cost = i[ok], b[ok], t[ok], cost[ok]
            gain = self._gain(b, t, self._load_of(i, b))
            score = gain / (cost / self.scale + 1e-3)
            k = self._best(score, i, b, t)
            if gain[k] > _EPS and (best is None or score[k] > best[0]):
                best = (float(score[k]), int(i[k]), int(b[k]), int(t[k]), float(cost[k]))
                if not np.isfinite(self.budget):
                    break
        if best is None:
            return False
        self._move(*best[1:])
        return True

    def swap_step(self) -> bool:
        """The best exchange of replicas between the furthest broker out of the band that has one and a
        partner."""
        pos = self.position()
        for v in self.violators().tolist():
            best = self._best_swap(v, self._partners(v, pos), pos)
            if best is None:
                continue
            _, a, c, t, cost = best
            self._swap(a, v, c, t, cost)
            return True
        return False

    def return_step(self) -> bool:
        """Send the largest copied replica back to a broker that holds its partition now, when that leaves the
        penalty no higher: a later step may have made an earlier copy unnecessary."""
        s = self.s
        rows = self.target
        new = (rows >= 0) & ~(rows[:, :, None] == s.holders[:, None, :]).any(axis=2)
        left = (s.holders >= 0) & ~(s.holders[:, :, None] == rows[:, None, :]).any(axis=2)
        parts, slot = np.nonzero(new)
        if not len(parts):
            return False
        home = np.nonzero(left[parts])  # each copied replica against each holder its partition lost
        i, b, t = parts[home[0]], rows[parts[home[0]], slot[home[0]]], s.holders[parts[home[0]], home[1]]
        ok, _ = self._movable(i, b, t)
        if not ok.any():
            return False
        i, b, t = i[ok], b[ok], t[ok]
        gain = self._gain(b, t, self._load_of(i, b))
        score = np.where(gain >= 0, s.size[i], -np.inf)
        k = self._best(score, i, t)
        if not np.isfinite(score[k]):
            return False
        self._move(int(i[k]), int(b[k]), int(t[k]), -float(s.size[i[k]]))
        return True

    # -- helpers ---------------------------------------------------------------------------------------------------

    def _move_candidates(self, v: int, pos: np.ndarray, receivers: np.ndarray) -> tuple[np.ndarray, ...]:
        """Moves (partition, from, to) relieving ``v``: its most relieving replicas to every receiver and, when
        it is below the band somewhere, the `_INFLOW` replicas of its donors (`_donated`) filling it best."""
        parts, load = self._replicas(v)
        keep = self._relieving(parts, load, v, pos)
        i, t = np.repeat(parts[keep], len(receivers)), np.tile(receivers, len(keep))
        b = np.full(len(i), v)
        if self.s.receives[v] and (pos[v] < 0).any():
            ip, bp, lp = self._donated(v, pos)
            fit = ((lp / self.share[v]) * (pos[bp] - pos[v])).sum(axis=1)
            top = _top(fit, _INFLOW, ip, bp)
            top = top[fit[top] > 0]
            i, b = np.concatenate([i, ip[top]]), np.concatenate([b, bp[top]])
            t = np.concatenate([t, np.full(len(top), v)])
        return i, b, t

    def _relieving(self, parts: np.ndarray, load: np.ndarray, v: int, pos: np.ndarray) -> np.ndarray:
        """Which of ``v``'s replicas (``parts``, carrying ``load``) a move off it tries: the `_SWAP` relieving it
        most to first order and the `_SWAP` relieving it most per copied byte."""
        relief = (load / self.share[v]) @ pos[v]
        keep = np.union1d(_top(relief, _SWAP, parts), _top(relief / self._unit(parts), _SWAP, parts))
        return keep[relief[keep] > 0]

    def _donated(self, v: int, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The replicas on the `_DONORS` brokers fullest where ``v`` is below its band: partition, broker, and
        the load it carries there."""
        key = pos @ np.minimum(pos[v], 0.0)
        key[v] = np.inf
        donors = _top(-key, _DONORS, np.arange(len(key)))
        parts, slot = np.nonzero(np.isin(self.target, donors))
        return parts, self.target[parts, slot], self.s.follower[parts] + (slot == 0)[:, None] * self.s.extra[parts]

    def _partners(self, v: int, pos: np.ndarray) -> np.ndarray:
        """Receiving brokers whose band position complements ``v``'s (low where it is high), that can take at
        least one of ``v``'s replicas, best first (at most `_PARTNERS`)."""
        n = len(self.load)
        parts, _ = self._replicas(v)
        if not len(parts):
            return np.zeros(0, dtype=np.int64)
        key = pos @ pos[v]
        order = np.lexsort((np.arange(n), key))
        order = order[self.s.receives[order] & (order != v)]
        sample = parts[:: max(1, len(parts) // _SWAP)][:_SWAP]
        out = []
        for t in order.tolist():
            ok = self._keeps_racks(sample, np.full(len(sample), v), np.full(len(sample), t))
            if ok.any():
                out.append(t)
                if len(out) == _PARTNERS:
                    break
        return np.array(out, dtype=np.int64)

    def _best_swap(self, v: int, partners: np.ndarray, pos: np.ndarray) -> tuple[float, int, int, int, float] | None:
        """The best-scoring swap between ``v`` and one of ``partners`` that lowers the penalty:
        (score, v's partition, partner's partition, partner, bytes)."""
        if not self.s.receives[v]:
            return None
        s = self.s
        parts_v, load_v = self._replicas(v)
        best: tuple[float, int, int, int, float] | None = None
        for t in partners.tolist():
            parts_t, load_t = self._replicas(t)
            if not len(parts_v) or not len(parts_t):
                continue
            diff = pos[v] - pos[t]
            ki = _top((load_v / self.share[v]) @ diff, _SWAP, parts_v)
            kj = _top(-(load_t / self.share[t]) @ diff, _SWAP, parts_t)
            i, di, j, dj = parts_v[ki], load_v[ki], parts_t[kj], load_t[kj]
            ii, jj = np.repeat(np.arange(len(i)), len(j)), np.tile(np.arange(len(j)), len(i))
            pi, pj = i[ii], j[jj]
            vb, tb = np.full(len(pi), v), np.full(len(pi), t)
            ok = (pi != pj) & ~(self.target[pi] == t).any(axis=1) & ~(self.target[pj] == v).any(axis=1)
            ok &= self._keeps_racks(pi, vb, tb) & self._keeps_racks(pj, tb, vb)
            cost = (np.where((s.holders[pi] == t).any(axis=1), 0.0, s.size[pi])
                    + np.where((s.holders[pj] == v).any(axis=1), 0.0, s.size[pj]))
            ok &= self.spent + cost <= self.budget + _EPS
            if not ok.any():
                continue
            gain = self._gain(vb, tb, di[ii] - dj[jj])
            score = np.where(ok, gain / (cost / self.scale + 1e-3), -np.inf)
            k = self._best(score, pi, pj)
            if ok[k] and gain[k] > _EPS and (best is None or score[k] > best[0]):
                best = (float(score[k]), int(pi[k]), int(pj[k]), t, float(cost[k]))
        return best

    def _unit(self, parts: np.ndarray) -> np.ndarray:
        """What moving a replica of each partition costs, in the units steps are scored by."""
        return self.s.size[parts] / self.scale + 1e-3

    def _load_of(self, parts: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The load ``b``'s replica of each partition carries (rows)."""
        return self.s.follower[parts] + (self.target[parts, 0] == b)[:, None] * self.s.extra[parts]

    def _lead(self, i: int, t: int) -> None:
        """Make ``t`` (a replica of partition ``i``) its leader."""
        b = int(self.target[i, 0])
        self.load[b] -= self.s.extra[i]
        self.load[t] += self.s.extra[i]
        row = [x for x in self.target[i].tolist() if x >= 0]
        row.remove(t)
        self.target[i, : len(row) + 1] = [t, *row]

    def _move(self, i: int, b: int, t: int, cost: float) -> None:
        """Move ``b``'s replica of partition ``i`` to ``t`` (the lead goes with it)."""
        d = self._load_of(np.array([i]), np.array([b]))[0]
        self.load[b] -= d
        self.load[t] += d
        self.spent += cost
        self.target[i][self.target[i] == b] = t

    def _swap(self, a: int, v: int, c: int, t: int, cost: float) -> None:
        """``v``'s replica of partition ``a`` and ``t``'s of ``c`` change places."""
        d = self._load_of(np.array([a, c]), np.array([v, t]))
        self.load[v] += d[1] - d[0]
        self.load[t] += d[0] - d[1]
        self.spent += cost
        self.target[a][self.target[a] == v] = t
        self.target[c][self.target[c] == t] = v


def _top(score: np.ndarray, k: int, *keys: np.ndarray) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first, ties broken on ``keys`` (first key decides first).

    >>> _top(np.array([1.0, 3.0, 3.0, 2.0]), 2, np.array([9, 8, 7, 6])).tolist()
    [2, 1]
    """
    idx = np.arange(len(score))
    if len(score) > k:
        idx = np.flatnonzero(score >= np.partition(score, len(score) - k)[len(score) - k])
    return idx[np.lexsort((*(key[idx] for key in reversed(keys)), -score[idx]))][:k]


def distribute(state: PoolState, goal: Goal, *, max_moves: int | None = None) -> PoolResult:
    """Take ``state``'s seed towards ``goal`` step by step (see the module docstring).

    Parameters
    ----------
    state : PoolState
    goal : Goal
        Its band, banded dimensions and brokers, and budget.
    max_moves : int, optional
        Steps at most (default: 4 per partition).

    Returns
    -------
    PoolResult
        With status ``"greedy"``.
    """
    search = _Search(state, goal)
    limit = 4 * len(state.seed) if max_moves is None else max_moves
    steps = 0
    while steps < limit and (search.leader_step() or search.replica_step() or search.swap_step()):  # zero copy first
        steps += 1
    while steps < limit and search.return_step():
        steps += 1
    return evaluate(state, goal, search.target, "greedy")


def pool_optimiser(state: PoolState, goal: Goal) -> PoolResult:
    """What every day-2 operation hands `planner.placement.minimal_move.place_in_pools`: `distribute`, then, on
    pools of at most `ENGINE_PAIRS` (partition, broker) pairs, the engine's whole-pool model started from the
    search's placement under `POLISH_NODES` branch-and-bound nodes (deterministic; `POLISH_SECONDS` is a safety
    net whose hit the result's status, `TIME_LIMITED`, reports), and on larger pools the same model window by
    window (`planner.operations.polish`). The engine keeps the search's placement unless it finds a better one
    (less overload, then less distance outside the band, then fewer moved bytes), so a pool gets the search's
    balance at worst, and a small one the exact optimum whenever the model closes its gap in the nodes."""
    searched = distribute(state, goal)
    if state.seed.shape[0] * len(state.broker_ids) > ENGINE_PAIRS:
        return polish(state, goal, searched)
    return optimise(state, goal, start=searched.target, max_nodes=POLISH_NODES, time_limit=POLISH_SECONDS)
