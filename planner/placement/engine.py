"""The placement engine: move one pool's replicas and leaders towards a goal, copying the fewest bytes.

One engine, several goals. A `PoolState` is one pool as arrays: its brokers (rack, headroom × capacity, which
may receive replicas), the load that stays put (``base``), and its partitions (size, current holders, current
preferred leader, a feasible-looking seed placement and each replica's load). A `Goal` says what the result must
satisfy; `optimise` returns the placement that satisfies it at the fewest moved bytes.

**Model.** A MILP (HiGHS through highspy, built straight from numpy arrays):

- ``x[i, n]``: partition ``i`` has a replica on broker ``n``; ``l[i, n]``: broker ``n`` is its preferred
  leader. Each partition keeps its replication factor (Σₙ x = RF), has one leader (Σₙ l = 1, l ≤ x) and
  spans min(RF, racks) racks (RF ≤ racks: at most one replica per rack and none on a broker without a rack;
  RF > racks: at least one in every rack).
- Per broker and dimension of `DIMENSIONS`: fixed load + Σ follower load · x + Σ leader extra · l ≤ headroom ×
  capacity + overload (a slack, heavily penalised: it is zero whenever the pool can be relieved).
- Optional band (fair share, Cruise Control's distribution goals): for the goal's brokers and dimensions,
  (1 − β)·s ≤ load ≤ (1 + β)·s up to a penalised slack, where ``s`` is the broker's `fair_share`: μ_d·w, with
  μ_d the pool's load in ``d`` over its weight and ``w`` the broker's weight (its capacity; for ``leaders`` its
  replica capacity, for ``leader_nw_in`` its network-in capacity), except where racks pin load: a partition
  whose RF reaches the pool's racks has a replica in every rack, so that load is shared within each rack, not
  across the pool. The shares do not depend on the placement, so the band is fixed.
- Optional budget: Σ size · x over brokers not holding the partition ≤ ``budget`` bytes.
- Objective, lexicographic through its weights: overload ≫ band deviation ≫ moved bytes (as a fraction of the
  pool's replica bytes) + a tiny cost per copied replica and per preferred-leader change. A leader change
  copies nothing, so it always wins over a copy that relieves the same load (zero-copy moves first).
  Those tiny costs sit well inside the MIP gap, so the count of moves is made exact afterwards: `prune_moves`
  undoes every move whose undoing leaves no broker further outside its limit or band and keeps rack spread,
  and says of each kept move what undoing it would break (a `pools.plan_file.Reason`).

**Candidates.** Small pools (partitions × brokers ≤ `FULL_PAIRS`) are solved whole: the result is the exact
optimum of the model up to the MIP gap. Larger pools run rounds (at most `MAX_ROUNDS`) of a *move model* from
the best placement so far: each candidate partition takes at most one action, moving one replica to a broker
with room or handing the lead to another of its replicas (a zero-copy move). The candidates relieve the worst
`ROUND_BROKERS` brokers over their limit or band (best relief per copied byte first, enough to cover twice the
excess; a replica the seed had to place anyway moves at no extra copy) and fill brokers under their band.
A round that gains nothing widens the set (×4); the search stops when nothing is left outside the limits and
band or the candidates are exhausted. Each round starts from the best placement, so the result is never worse
than the seed.

**Determinism.** HiGHS runs single-threaded with a fixed seed under a node limit, and the search under a round
limit (work, not time): the same input gives the same placement on any machine and under any load. The whole
model is kept to pools small enough (`FULL_PAIRS`) that its root, which no node limit bounds, stays short. The
time limit is a safety net over the whole `optimise` call (the exact solve, or every round of the search): a
result it cuts short has status `TIME_LIMITED` and may differ between runs and machines.

**Goals for day-2 operations.** Every job is a seed plus a goal:

- relieve overload and give joining brokers a fair share (the planner): ``Goal(band=0.1,
  band_brokers=joining)`` over the fill of `pools.fill`;
- rebalance a pool: ``Goal(band=β, band_dimensions=(*DIMENSIONS, "leaders", "leader_nw_in"), budget=…)``
  with every broker banded; within a budget it returns the best balance reachable;
- drain (decommission) brokers: seed the pool without them (their replicas are then placed by the fill)
  and keep their load out of ``base``; add brokers: put them in the pool and band them;
- replace a broker: seed by substituting the new broker for the old one in every replica list, then
  ``optimise`` only relieves what the swap breaks;
- change replication factors: seed with the new RF (replicas added by the fill, removed ones dropped), then
  optimise as for a rebalance.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import highspy
import numpy as np

from planner.highs import QuietHighs, use_threads
from pools.fill import add_loads
from pools.plan_file import Reason, ReasonRule
from pools.pool_rules import racks_required, spans_racks
from pools.snapshot import DIMENSIONS

__all__ = ["ENGINE_DIMENSIONS", "FULL_PAIRS", "TIME_LIMITED", "PoolState", "Goal", "PoolResult", "optimise",
           "state_loads", "evaluate", "better", "band_weights", "fair_share", "state_fair_share", "spread_kept",
           "prune_moves"]

#: The engine's load dimensions: the capacity dimensions, then leader count and leaders' bytes-in.
ENGINE_DIMENSIONS: tuple[str, ...] = (*DIMENSIONS, "leaders", "leader_nw_in")
#: Pools with at most this many (partition, broker) pairs of the model (`_model_pairs`) are solved whole (exact up
#: to the MIP gap); larger ones by rounds of the move model. A 12-broker pool of 3,583 partitions (43 k pairs)
#: with two joining brokers ran over 100 s in the whole model's root and presolve, which no node limit bounds;
#: the rounds took 1 s.
FULL_PAIRS = 6_000
#: Branch-and-bound nodes per whole-pool solve: the deterministic effort limit. 20,000 ran past 600 s on an
#: 8-broker pool of 145 partitions over headroom (a weak bound: nodes are slow there), so a plan's placement was
#: ended by its wall-clock net, not by work; 300 (as `planner.operations.distribution.POLISH_NODES`) found the
#: same placement as 1,000 there, within 0.08 % of the bytes 20,000 reached in 600 s.
MAX_NODES = 300
#: Relative MIP gap at which a solve stops.
MIP_GAP = 1e-3
#: The status of a result its time limit cut short.
TIME_LIMITED = "time-limit"
#: Rounds of the move model on a large pool, and branch-and-bound nodes per round.
MAX_ROUNDS = 12
ROUND_NODES = 200
#: Brokers with an excess a round of the move model works on (the worst first).
ROUND_BROKERS = 8

_CAP = len(DIMENSIONS)
_K = len(ENGINE_DIMENSIONS)
_W_OVER = 1e5  # per unit of capacity over the limit
_W_BAND = 1e2  # per unit of the fair share outside the band
_COPY = 1e-9  # per copied replica (moving an empty partition is not free)
_LEAD = 1e-10  # per preferred-leader change
_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class PoolState:
    """One pool as arrays: ``B`` brokers (local positions ``0..B-1``), ``P`` partitions, replica lists of width ``W``.

    Attributes
    ----------
    broker_ids : ndarray (B,)
        Kafka broker ids.
    rack : ndarray (B,)
        Rack code, -1 for a broker without a rack.
    capacity : ndarray (B, 4)
        Raw capacity per `DIMENSIONS` (band weights).
    limit : ndarray (B, 4)
        Headroom × capacity.
    receives : ndarray (B,) of bool
        Whether the broker may take new replicas (False for unhealthy brokers).
    base : ndarray (B, 6)
        Load in `ENGINE_DIMENSIONS` that no decision here moves.
    size : ndarray (P,)
        Bytes copied per new replica.
    holders : ndarray (P, W)
        Local positions of the brokers holding each partition now (-1 padding).
    preferred : ndarray (P,)
        Local position of the current preferred leader, -1 when it is outside the pool.
    seed : ndarray (P, W)
        The starting placement, leader first (-1 padding beyond the replication factor).
    follower, extra : ndarray (P, 6)
        A follower's load and the leader's extra load, in `ENGINE_DIMENSIONS`.
    share : ndarray (B, 6), optional
        Each broker's fair share, when it is not this state's own (`state_fair_share`): a window of a larger pool
        (`planner.operations.polish`) is held to the whole pool's band.
    """

    broker_ids: np.ndarray
    rack: np.ndarray
    capacity: np.ndarray
    limit: np.ndarray
    receives: np.ndarray
    base: np.ndarray
    size: np.ndarray
    holders: np.ndarray
    preferred: np.ndarray
    seed: np.ndarray
    follower: np.ndarray
    extra: np.ndarray
    share: np.ndarray | None = None

    @property
    def rf(self) -> np.ndarray:
        """Replication factor of each partition (from the seed)."""
        return (self.seed >= 0).sum(axis=1)


@dataclass(frozen=True)
class Goal:
    """What a placement must satisfy besides the limits (see the module docstring).

    ``band`` is β, the allowed deviation from the pool mean as a fraction of it (0.1 = Cruise Control's balance
    threshold 1.10); ``dimension_bands`` gives some dimensions their own β (Cruise Control's per-goal
    thresholds); ``band_brokers`` selects the brokers it binds (all when None); ``budget`` caps moved bytes.
    """

    band: float | None = None
    band_dimensions: tuple[str, ...] = DIMENSIONS
    band_brokers: np.ndarray | None = None
    budget: float | None = None
    dimension_bands: tuple[tuple[str, float], ...] = ()

    def band_of(self, dimension: str) -> float:
        """β in ``dimension``: its own band, else ``band`` (0 without one).

        >>> Goal(band=0.1, dimension_bands=(("disk", 0.05),)).band_of("disk")
        0.05
        """
        return dict(self.dimension_bands).get(dimension, self.band or 0.0)

    def __post_init__(self) -> None:
        unknown = [d for d, _ in self.dimension_bands if d not in ENGINE_DIMENSIONS]
        if unknown or any(not 0 <= b for _, b in self.dimension_bands):
            raise ValueError(f"dimension_bands: expected fractions >= 0 of {list(ENGINE_DIMENSIONS)}, got "
                             f"{self.dimension_bands!r}")
        unknown = [d for d in self.band_dimensions if d not in ENGINE_DIMENSIONS]
        if unknown:
            raise ValueError(f"band_dimensions: unknown {unknown}; expected some of {list(ENGINE_DIMENSIONS)}")
        if self.band is not None and not 0 <= self.band:
            raise ValueError(f"band: expected a fraction >= 0, got {self.band!r}")


@dataclass(frozen=True, eq=False)
class PoolResult:
    """The placement (``target``, like ``seed``) and what it costs and leaves.

    ``overload`` (B, 4) is the load left above the limits; ``outside_band`` (B, 6) how far loads stay outside
    the band (0 where met or unbanded); ``status`` is ``"seed"`` (nothing to do), ``"optimal"``,
    ``"feasible"`` (node limit reached, ``gap`` says how far from the bound), ``"seed-kept"`` (the solver
    found nothing better than the seed) or `TIME_LIMITED` (the time limit stopped it: the best placement found
    by then, never worse than the seed).
    """

    target: np.ndarray
    load: np.ndarray
    moved_bytes: int
    copies: int
    leader_changes: int
    overload: np.ndarray
    outside_band: np.ndarray
    status: str
    gap: float = 0.0
    candidates: int = 0
    rounds: int = 0


def state_loads(state: PoolState, target: np.ndarray) -> np.ndarray:
    """Load per broker and `ENGINE_DIMENSIONS` of a placement (``base`` included)."""
    return add_loads(np.asarray(state.base, dtype=float), target, state.follower, state.extra)


def band_weights(capacity: np.ndarray) -> np.ndarray:
    """Each broker's weight per `ENGINE_DIMENSIONS` from its capacity (B, 4): the capacity, then its replica
    capacity for leaders and its network-in capacity for leaders' bytes-in."""
    return np.concatenate([capacity, capacity[:, 3:4], capacity[:, 0:1]], axis=1)


def fair_share(total: np.ndarray, weight: np.ndarray, rack: np.ndarray, pinned: np.ndarray) -> np.ndarray:
    """Each broker's fair share of a pool's load, per dimension: the pool's ``total`` (K,) spread by ``weight``
    (B, K), where the load ``pinned`` (B, K) to each broker's rack stays in that rack.

    A rack whose pinned load exceeds its weighted share of the pool keeps just that load; the others share the
    rest by weight (water-filling). Within a rack, brokers share by weight. Without racks (any ``rack`` < 0)
    the pool mean applies to every broker.

    Examples
    --------
    Rack 0 has one broker, rack 1 three; RF 2 over the two racks pins half of the load to each rack:

    >>> w = np.ones((4, 1)); rack = np.array([0, 1, 1, 1])
    >>> fair_share(np.array([8.0]), w, rack, np.array([[4.0], [4.0], [0.0], [0.0]])).ravel().tolist()
    [4.0, 1.3333333333333333, 1.3333333333333333, 1.3333333333333333]
    >>> fair_share(np.array([8.0]), w, rack, np.zeros((4, 1))).ravel().tolist()
    [2.0, 2.0, 2.0, 2.0]
    """
    wsum = weight.sum(axis=0)
    mean = np.where(wsum > 0, total / np.where(wsum > 0, wsum, 1.0), 0.0)
    racks = np.unique(rack)
    if len(racks) < 2 or (rack < 0).any():
        return mean * weight
    rack_w = np.stack([weight[rack == r].sum(axis=0) for r in racks])  # (R, K)
    rack_pinned = np.stack([pinned[rack == r].sum(axis=0) for r in racks])
    level = mean.copy()
    for _ in range(len(racks)):  # water-filling: racks held above the level keep their pinned load
        above = rack_pinned > level * rack_w
        free_w = np.where(above, 0.0, rack_w).sum(axis=0)
        free = total - np.where(above, rack_pinned, 0.0).sum(axis=0)
        level = np.where(free_w > 0, free / np.where(free_w > 0, free_w, 1.0), level)
    rack_total = np.maximum(rack_pinned, level * rack_w)
    index = np.searchsorted(racks, rack)
    return np.where(rack_w[index] > 0, rack_total[index] * weight / np.where(rack_w[index] > 0, rack_w[index], 1.0),
                    0.0)


def state_fair_share(state: PoolState) -> np.ndarray:
    """`fair_share` of a pool's seed load: ``base`` stays in its broker's rack, and so does one replica in every
    rack of each partition whose replication factor reaches the pool's racks (``state.share`` when given)."""
    if state.share is not None:
        return state.share
    racks, first = np.unique(state.rack, return_index=True)
    pinned = np.array(state.base, dtype=float)
    if len(racks) > 1 and (racks >= 0).all():
        # one replica per rack is pinned there: book it on the rack's first broker (fair_share sums per rack)
        pinned[first] += state.follower[state.rf >= len(racks)].sum(axis=0)
    return fair_share(state_loads(state, state.seed).sum(axis=0), band_weights(state.capacity), state.rack, pinned)


def optimise(state: PoolState, goal: Goal = Goal(), *, max_nodes: int = MAX_NODES, time_limit: float = 300.0,
             gap: float = MIP_GAP, start: np.ndarray | None = None) -> PoolResult:
    """The placement of ``state`` meeting ``goal`` at the fewest moved bytes (see the module docstring).

    Parameters
    ----------
    state : PoolState
    goal : Goal
    max_nodes : int
        Branch-and-bound nodes per solve (the deterministic limit).
    time_limit : float
        Wall-clock seconds for the whole call (the exact solve, or every round of the search); a result it cuts
        short has status `TIME_LIMITED` and is no longer load-independent.
    gap : float
        Relative MIP gap.
    start : ndarray, optional
        A placement found elsewhere (like ``seed``, e.g. `planner.operations.distribution.distribute`'s): the
        whole-pool model starts from it, and the result is never worse than it.

    Returns
    -------
    PoolResult
        Its status is `TIME_LIMITED` when ``time_limit`` stopped it (the result may then differ between runs).
    """
    band = _Band(state, goal)
    seed_load = state_loads(state, state.seed)
    down, up = band.excess(seed_load)
    if not (down > _TOL).any() and not (up > _TOL).any():
        return _result(state, band, state.seed, "seed")
    n_parts = state.seed.shape[0]
    if time_limit <= 0:
        return _result(state, band, state.seed, TIME_LIMITED)
    if _model_pairs(state, start) <= FULL_PAIRS:
        begin = state.seed if start is None else start
        target, status, found_gap = _solve(state, band, goal, max_nodes, time_limit, gap, begin)
        best = _result(state, band, state.seed, "seed-kept")
        if start is not None:
            given = _result(state, band, start, "greedy")
            best = given if _score(given, band) <= _score(best, band) else best
        if target is not None:
            result = _result(state, band, _keep_leaders(state, band, target),
                             "feasible" if status == TIME_LIMITED else status, found_gap, n_parts, 1)
            best = result if _score(result, band) <= _score(best, band) else best
        return replace(best, status=TIME_LIMITED) if status == TIME_LIMITED else best
    return _search(state, band, goal, max_nodes, time.monotonic() + time_limit, gap)


def _model_pairs(state: PoolState, start: np.ndarray | None) -> int:
    """The (partition, broker) pairs of the whole-pool model: every partition on every broker that receives, and
    on the brokers that hold it now, in the seed or in ``start`` (keeping a replica needs no room)."""
    n_brokers = len(state.broker_ids)
    kept = np.concatenate([t for t in (state.holders, state.seed, start) if t is not None], axis=1)
    rows = np.nonzero((kept >= 0) & ~state.receives[np.maximum(kept, 0)])
    closed = np.unique(rows[0] * n_brokers + kept[rows])
    return state.seed.shape[0] * int(state.receives.sum()) + len(closed)


def _search(state: PoolState, band: _Band, goal: Goal, max_nodes: int, deadline: float, gap: float) -> PoolResult:
    """Large pools: rounds of the move model, each from the best placement so far, over the moves that can
    relieve what is still outside the limits or band; the set widens (×4) when a round gains nothing. The
    rounds stop at ``deadline`` (`time.monotonic`)."""
    best = _result(state, band, state.seed, "seed-kept")
    widen, candidates, cut = 2.0, 0, False
    for rounds in range(1, MAX_ROUNDS + 1):
        down, up = band.excess(best.load)
        if not ((down > _TOL).any() or (up > _TOL).any()):
            break
        left = deadline - time.monotonic()
        if left <= 0:
            cut = True
            break
        moves = _Moves.select(state, band, best.target, best.load, down, up, widen)
        candidates = max(candidates, moves.count)
        target, status, found_gap = _solve_moves(state, band, goal, moves, best, min(max_nodes, ROUND_NODES),
                                                 left, gap)
        cut = cut or status == TIME_LIMITED
        improved = False
        if target is not None:
            result = _result(state, band, _keep_leaders(state, band, target), status, found_gap, moves.count, rounds)
            if _score(result, band) < _score(best, band):
                best, improved = result, True
        if not improved:
            if moves.exhausted:
                break
            widen *= 4
    return PoolResult(**{**best.__dict__, "rounds": rounds, "candidates": candidates,
                         **({"status": TIME_LIMITED} if cut else {})})


class _Band:
    """Per broker and `ENGINE_DIMENSIONS`: the limit (headroom × capacity, infinite beyond `DIMENSIONS`), the band
    bounds (infinite where unbanded) and the unit each row is scaled by."""

    def __init__(self, state: PoolState, goal: Goal) -> None:
        n = len(state.broker_ids)
        self.limit = np.full((n, _K), np.inf)
        self.limit[:, :_CAP] = state.limit
        self.low = np.full((n, _K), -np.inf)
        self.high = np.full((n, _K), np.inf)
        self.norm = np.ones((n, _K))
        self.norm[:, :_CAP] = np.where(state.limit > 0, state.limit, 1.0)
        if goal.band is not None:
            weight = band_weights(state.capacity)
            total = state_loads(state, state.seed).sum(axis=0)
            fair = state_fair_share(state)
            brokers = np.ones(n, dtype=bool) if goal.band_brokers is None else np.asarray(goal.band_brokers, bool)
            for name in goal.band_dimensions:
                d = ENGINE_DIMENSIONS.index(name)
                if weight[:, d].sum() <= 0 or total[d] <= 0:
                    continue
                share, beta = fair[:, d], goal.band_of(name)
                self.low[brokers, d] = (1 - beta) * share[brokers]
                self.high[brokers, d] = (1 + beta) * share[brokers]
                self.norm[brokers, d] = np.where(share[brokers] > 0, share[brokers], 1.0)
        self.banded = np.isfinite(self.high)
        self.upper = np.minimum(self.limit, self.high)
        self.low = np.minimum(self.low, self.upper)  # a share above the limit: the limit wins

    def bounds(self) -> list[list[tuple[int, float, float, float]]]:
        """Per broker, its bounded dimensions as ``(d, upper, low, norm)``: ``upper`` infinite where only the band's
        lower bound binds, ``low`` -inf where no band does (each side then never counts, as in `excess_of`)."""
        finite = np.isfinite(self.upper)
        bound = finite | self.banded
        upper = np.where(finite, self.upper, np.inf).tolist()
        low = np.where(self.banded, self.low, -np.inf).tolist()
        norm = self.norm.tolist()
        return [[(d, upper[b][d], low[b][d], norm[b][d]) for d in np.flatnonzero(bound[b]).tolist()]
                for b in range(len(bound))]

    def excess(self, load: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Load above the upper bounds and below the lower ones, in row units."""
        return self.excess_of(load, slice(None))

    def excess_of(self, load: np.ndarray, brokers: list[int] | slice) -> tuple[np.ndarray, np.ndarray]:
        """`excess` of the rows ``load`` of ``brokers`` only."""
        upper, low, norm = self.upper[brokers], self.low[brokers], self.norm[brokers]
        down = np.where(np.isfinite(upper), np.maximum(load - upper, 0.0), 0.0) / norm
        up = np.where(self.banded[brokers], np.maximum(low - load, 0.0), 0.0) / norm
        return down, up


@dataclass(frozen=True, eq=False)
class _Moves:
    """Candidate actions on a large pool, each partition taking at most one: move the replica in ``slot`` of
    partition ``part`` to broker ``dst``, or (``dst`` = -1) make the replica in ``slot`` the leader."""

    part: np.ndarray
    slot: np.ndarray
    dst: np.ndarray
    exhausted: bool

    @property
    def count(self) -> int:
        return len(np.unique(self.part))

    @staticmethod
    def select(state: PoolState, band: _Band, target: np.ndarray, load: np.ndarray, down: np.ndarray,
               up: np.ndarray, widen: float) -> "_Moves":
        """Moves off brokers above a bound (the best relief per copied byte first, enough to cover ``widen`` × the
        excess) to the brokers with room, moves onto brokers below their band, and the leader moves that help."""
        n_parts = target.shape[0]
        rf = (target >= 0).sum(axis=1)
        total = float((state.size * rf).sum()) or 1.0
        fresh = ~_isin_rows(target, state.holders) & (target >= 0)  # placed by the seed: moving it costs no more
        rows, slots = np.nonzero(target >= 0)
        host = target[rows, slots]
        receivers = _receivers(state, band, load, down, up)
        parts, slot_of, dst = [], [], []
        exhausted = True
        for b in _worst(down):
            need = down[b] * band.norm[b]
            dims = np.flatnonzero(need > 0)
            here = host == b
            on, at = rows[here], slots[here]
            leads = at == 0
            give = state.follower[on][:, dims] + leads[:, None] * state.extra[on][:, dims]
            price = np.where(fresh[on, at], _COPY, state.size[on] / total + _COPY)
            picked = np.zeros(n_parts, dtype=bool)
            exhausted &= _take(picked, on, give, need[dims], price, widen)
            keep = picked[on]
            for t in receivers.tolist():
                if t != b:
                    parts.append(on[keep]), slot_of.append(at[keep]), dst.append(np.full(int(keep.sum()), t))
            if state.extra[on[leads]][:, dims].any():  # hand the lead to another replica
                led = np.zeros(n_parts, dtype=bool)
                exhausted &= _take(led, on[leads], state.extra[on[leads]][:, dims], need[dims],
                                   np.full(int(leads.sum()), _LEAD), widen * 4)
                for s in range(1, target.shape[1]):
                    mine = np.flatnonzero(led & (target[:, s] >= 0))
                    parts.append(mine), slot_of.append(np.full(len(mine), s)), dst.append(np.full(len(mine), -1))
        for u in _worst(up):
            need = up[u] * band.norm[u]
            dims = np.flatnonzero(need > 0)
            off = np.flatnonzero(~(target == u).any(axis=1))
            gain = state.follower[off][:, dims] + state.extra[off][:, dims] / np.maximum(rf[off], 1)[:, None]
            picked = np.zeros(n_parts, dtype=bool)
            exhausted &= _take(picked, off, gain, need[dims], state.size[off] / total + _COPY, widen)
            mine = np.flatnonzero(picked)
            for s in range(target.shape[1]):
                has = mine[target[mine, s] >= 0]
                parts.append(has), slot_of.append(np.full(len(has), s)), dst.append(np.full(len(has), u))
            on = np.flatnonzero((target[:, 1:] == u).any(axis=1)) if target.shape[1] > 1 else np.zeros(0, np.int64)
            if len(on) and state.extra[on][:, dims].any():  # lead from u
                led = np.zeros(n_parts, dtype=bool)
                exhausted &= _take(led, on, state.extra[on][:, dims], need[dims], np.full(len(on), _LEAD), widen * 4)
                mine = np.flatnonzero(led)
                pos = np.argmax(target[mine] == u, axis=1)
                parts.append(mine), slot_of.append(pos), dst.append(np.full(len(mine), -1))
        part = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        slot = np.concatenate(slot_of) if parts else np.zeros(0, dtype=np.int64)
        dest = np.concatenate(dst) if parts else np.zeros(0, dtype=np.int64)
        ok = _valid_moves(state, target, part, slot, dest)
        part, slot, dest = part[ok], slot[ok], dest[ok]
        order = np.lexsort((dest, slot, part))
        key = np.stack([part[order], slot[order], dest[order]])
        unique = np.concatenate(([True], (np.diff(key, axis=1) != 0).any(axis=0))) if len(order) else np.zeros(0, bool)
        return _Moves(key[0][unique], key[1][unique], key[2][unique], exhausted)


def _worst(excess: np.ndarray) -> list[int]:
    """The brokers a round works on: those with an excess, the worst first, at most `ROUND_BROKERS`."""
    worst = excess.max(axis=1)
    ids = np.flatnonzero(worst > _TOL)
    return ids[np.lexsort((ids, -worst[ids]))][:ROUND_BROKERS].tolist()


def _valid_moves(state: PoolState, target: np.ndarray, part: np.ndarray, slot: np.ndarray,
                 dst: np.ndarray) -> np.ndarray:
    """Which moves keep the partition's replicas distinct and its rack spread (`spread_kept`) and go to a broker
    that receives; leader moves are always valid."""
    if not len(part):
        return np.zeros(0, dtype=bool)
    rows = target[part]
    move = dst >= 0
    d = np.maximum(dst, 0)
    ok = ~move | (state.receives[d] & ~(rows == d[:, None]).any(axis=1))
    return ok & (~move | spread_kept(state, rows, slot, d))


def pool_racks(state: PoolState) -> np.ndarray:
    """The racks of the pool's brokers (codes ≥ 0, sorted): the racks its partitions may span."""
    return np.unique(state.rack[state.rack >= 0])


def spread_kept(state: PoolState, rows: np.ndarray, slot: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Per replica list of ``rows`` (-1 padding): whether moving the replica in ``slot`` to broker ``dst`` keeps
    the rack spread, the array form of `pools.pool_rules.spans_racks` for one replaced replica.

    Where a partition needs a rack per replica (`pools.pool_rules.racks_required` = RF), the new replica takes a
    rack none of the others holds; where it needs every rack, the rack it leaves is still held by another
    replica, or is the new one's (or it left no rack).

    >>> s = PoolState(np.array([1, 2, 3]), np.array([0, 0, 1]), np.ones((3, 4)), np.ones((3, 4)), np.ones(3, bool),
    ...               np.zeros((3, 6)), np.zeros(1), np.array([[0, 2]]), np.array([0]), np.array([[0, 2]]),
    ...               np.zeros((1, 6)), np.zeros((1, 6)))
    >>> spread_kept(s, np.array([[0, 2], [0, 2]]), np.array([1, 0]), np.array([1, 1])).tolist()
    [False, True]
    """
    racks = pool_racks(state)
    if not len(racks):
        return np.ones(len(rows), dtype=bool)
    rf = (rows >= 0).sum(axis=1)
    at = np.arange(len(rows))
    rack_rows = np.where(rows >= 0, state.rack[np.maximum(rows, 0)], -2)
    others = rack_rows.copy()
    others[at, slot] = -2
    new_rack = state.rack[dst]
    old_rack = rack_rows[at, slot]
    distinct = (new_rack >= 0) & ~(others == new_rack[:, None]).any(axis=1)
    covered = (new_rack == old_rack) | (others == old_rack[:, None]).any(axis=1) | (old_rack < 0)
    own_rack = racks_required(rf, len(racks)) >= rf  # each replica needs a rack of its own
    return np.where(own_rack, distinct, covered)


def _solve_moves(state: PoolState, band: _Band, goal: Goal, moves: _Moves, start: PoolResult, max_nodes: int,
                 time_limit: float, gap: float) -> tuple[np.ndarray | None, str, float]:
    """The move model over ``moves`` from the placement ``start``; the new target (None when nothing found)."""
    target = start.target
    n_brokers = len(state.broker_ids)
    total = float((state.size * state.rf).sum()) or 1.0
    m = _Builder()
    part, slot, dst = moves.part, moves.slot, moves.dst
    move = dst >= 0
    src = target[part, slot]
    held = _holds(state.holders, part, np.maximum(dst, 0))
    was_fresh = ~_holds(state.holders, part, src)
    copy = np.where(move, np.where(held, 0.0, state.size[part] / total + _COPY)
                    - np.where(was_fresh, state.size[part] / total + _COPY, 0.0), 0.0)
    lead_cost = np.where(move, 0.0, np.where(target[part, slot] == state.preferred[part], -_LEAD,
                                             np.where(target[part, 0] == state.preferred[part], _LEAD, 0.0)))
    cols = m.cols(copy + lead_cost)
    # one action per partition
    first = np.concatenate(([True], part[1:] != part[:-1]))
    r = m.rows(np.full(int(first.sum()), -np.inf), np.ones(int(first.sum())))
    m.add(r[np.cumsum(first) - 1], cols, 1.0)
    # the load each action shifts: a moved replica takes its load (the leader's too); a new leader takes the extra
    carries = state.follower[part] + np.where((slot == 0)[:, None], state.extra[part], 0.0)
    shifted = np.where(move[:, None], carries, state.extra[part])
    giver = np.where(move, src, target[part, 0])
    taker = np.where(move, np.maximum(dst, 0), src)
    lower = np.where(band.banded, band.low - start.load, -np.inf) / band.norm
    upper = (band.upper - start.load) / band.norm
    bi, bd = np.nonzero(np.isfinite(band.upper) | band.banded)
    row_of = np.full((n_brokers, _K), -1)
    row_of[bi, bd] = m.rows(lower[bi, bd], upper[bi, bd])
    for d in range(_K):
        for who, sign in ((giver, -1.0), (taker, 1.0)):
            ok = (row_of[who, d] >= 0) & (shifted[:, d] != 0)
            m.add(row_of[who[ok], d], cols[ok], sign * shifted[ok, d] / band.norm[who[ok], d])
    slack = _slacks(m, band, row_of, bi, bd, lower, upper, np.zeros(m.n_rows))  # from ``start``: no action yet
    if goal.budget is not None:
        spent = float(start.moved_bytes)
        r = m.rows(np.array([-np.inf]), np.array([(goal.budget - spent) / total]))
        delta = np.where(held, 0.0, state.size[part]) - np.where(was_fresh, state.size[part], 0.0)
        m.add(np.repeat(r, len(cols)), cols, np.where(move, delta / total, 0.0))
    h = _highs(max_nodes, time_limit, gap)
    h.passModel(m.model())
    begin = np.concatenate([np.zeros(len(cols)), slack])
    h.setSolution(m.n_cols, np.arange(m.n_cols, dtype=np.int32), begin)
    h.run()
    info = h.getInfo()
    if info.primal_solution_status != 2:  # kSolutionStatusFeasible
        return None, _status(h, h.modelStatusToString(h.getModelStatus())), float("inf")
    values = np.asarray(h.getSolution().col_value)[cols] > 0.5
    out = target.copy()
    for i, s, t in zip(part[values].tolist(), slot[values].tolist(), dst[values].tolist()):
        if t >= 0:
            out[i, s] = t
        else:
            out[i, [0, s]] = out[i, [s, 0]]
    status = _status(h)
    return out, status, float(info.mip_gap) if np.isfinite(info.mip_gap) else 0.0


def _status(h: highspy.Highs, otherwise: str = "feasible") -> str:
    """``"optimal"``, `TIME_LIMITED` or ``otherwise`` (a node limit, or no solution)."""
    model = h.getModelStatus()
    if model == highspy.HighsModelStatus.kOptimal:
        return "optimal"
    return TIME_LIMITED if model == highspy.HighsModelStatus.kTimeLimit else otherwise


def _highs(max_nodes: int, time_limit: float, gap: float) -> highspy.Highs:
    h = QuietHighs()
    use_threads(1, h)
    for key, value in (("output_flag", False), ("random_seed", 0), ("mip_rel_gap", gap),
                       ("mip_max_nodes", max_nodes), ("time_limit", time_limit)):
        h.setOptionValue(key, value)
    return h


def _take(mask: np.ndarray, items: np.ndarray, give: np.ndarray, need: np.ndarray, price: np.ndarray,
          widen: float) -> bool:
    """Mark the items with the most relief per price until they cover ``widen`` × ``need`` in every dimension
    (at least 32 items); True when every item was taken."""
    if not len(items):
        return True
    share = np.minimum(give / np.maximum(need, 1e-300), 1.0)
    score = share.sum(axis=1) / price
    order = np.lexsort((items, -score))
    covered = np.cumsum(give[order], axis=0)
    enough = np.all(covered >= widen * need, axis=1)
    stop = int(np.argmax(enough)) + 1 if enough.any() else len(order)
    stop = min(len(order), max(stop, 32))
    mask[items[order[:stop]]] = True
    return stop == len(order)


def _receivers(state: PoolState, band: _Band, load: np.ndarray, down: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Brokers a freed replica may go to: those under their band, and, for every dimension some broker exceeds,
    the quarter (at least four) of the brokers with the most room left in it."""
    n = len(state.broker_ids)
    out = (up > _TOL).any(axis=1) & state.receives
    keep = max(4, n // 4)
    for d in np.flatnonzero((down > _TOL).any(axis=0) | (up > _TOL).any(axis=0)).tolist():
        room = (band.upper[:, d] - load[:, d]) / band.norm[:, d] if np.isfinite(band.upper[:, d]).all() else \
            -load[:, d] / band.norm[:, d]
        room = np.where(state.receives & (room > 0), room, -np.inf)
        order = np.lexsort((np.arange(n), -room))[:keep]
        out[order[np.isfinite(room[order])]] = True
    return np.flatnonzero(out)


def _isin_rows(table: np.ndarray, holders: np.ndarray) -> np.ndarray:
    """Per cell of ``table``: whether the broker is among the same row's ``holders``."""
    out = np.zeros(table.shape, dtype=bool)
    for s in range(holders.shape[1]):
        out |= (table == holders[:, s : s + 1]) & (table >= 0)
    return out


class _Builder:
    """Columns and sparse rows for highspy, collected as numpy arrays."""

    def __init__(self) -> None:
        self.cost: list[np.ndarray] = []
        self.upper: list[np.ndarray] = []
        self.integer: list[np.ndarray] = []
        self.n_cols = 0
        self.rows_lo: list[np.ndarray] = []
        self.rows_hi: list[np.ndarray] = []
        self.n_rows = 0
        self.entries: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def cols(self, cost: np.ndarray, *, upper: float | np.ndarray = 1.0, integer: bool = True) -> np.ndarray:
        n = len(cost)
        self.cost.append(np.asarray(cost, dtype=float))
        self.upper.append(np.broadcast_to(np.asarray(upper, dtype=float), (n,)).copy())
        self.integer.append(np.full(n, integer))
        first, self.n_cols = self.n_cols, self.n_cols + n
        return np.arange(first, first + n)

    def rows(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        n = len(lo)
        self.rows_lo.append(np.asarray(lo, dtype=float))
        self.rows_hi.append(np.asarray(hi, dtype=float))
        first, self.n_rows = self.n_rows, self.n_rows + n
        return np.arange(first, first + n)

    def add(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray | float) -> None:
        values = np.broadcast_to(np.asarray(values, dtype=float), rows.shape)
        keep = values != 0
        self.entries.append((rows[keep], cols[keep], values[keep]))

    def activity(self, start: np.ndarray) -> np.ndarray:
        """Row activities of ``start`` (a value per column added so far)."""
        rows = np.concatenate([e[0] for e in self.entries])
        cols = np.concatenate([e[1] for e in self.entries])
        values = np.concatenate([e[2] for e in self.entries])
        return np.bincount(rows, weights=values * start[cols], minlength=self.n_rows)

    def model(self) -> highspy.HighsLp:
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = self.n_cols, self.n_rows
        lp.col_cost_ = np.concatenate(self.cost)
        lp.col_lower_ = np.zeros(self.n_cols)
        lp.col_upper_ = np.concatenate(self.upper)
        lp.row_lower_ = np.concatenate(self.rows_lo) if self.rows_lo else np.zeros(0)
        lp.row_upper_ = np.concatenate(self.rows_hi) if self.rows_hi else np.zeros(0)
        rows = np.concatenate([e[0] for e in self.entries])
        cols = np.concatenate([e[1] for e in self.entries])
        values = np.concatenate([e[2] for e in self.entries])
        order = np.lexsort((rows, cols))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        per_column = np.bincount(cols, minlength=self.n_cols)
        lp.a_matrix_.start_ = np.concatenate(([0], np.cumsum(per_column))).astype(np.int32)
        lp.a_matrix_.index_ = rows[order].astype(np.int32)
        lp.a_matrix_.value_ = values[order]
        integer = np.concatenate(self.integer)
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in integer]
        return lp


def _solve(state: PoolState, band: _Band, goal: Goal, max_nodes: int, time_limit: float,
           gap: float, begin: np.ndarray) -> tuple[np.ndarray | None, str, float]:
    """The whole-pool placement model (see the module docstring) started from ``begin`` (a placement like the
    seed); the new target (None when nothing found) and the status (`TIME_LIMITED` when the time limit stopped it)."""
    seed = state.seed
    n_parts, n_brokers = seed.shape[0], len(state.broker_ids)
    rf = state.rf
    total = float((state.size * rf).sum()) or 1.0
    allowed = np.repeat(state.receives[None, :], n_parts, axis=0)
    for table in (state.holders, seed, begin):  # keeping a replica needs no room to receive
        r, c = np.nonzero(table >= 0)
        allowed[r, table[r, c]] = True
    m = _Builder()
    pi, pn = np.nonzero(allowed)  # replica and leader columns for every allowed (partition, broker)
    holds = _holds(state.holders, pi, pn)
    x = m.cols(np.where(holds, 0.0, state.size[pi] / total + _COPY))
    lx = m.cols(np.where(pn == state.preferred[pi], 0.0, _LEAD))
    r = m.rows(rf, rf)  # RF replicas
    m.add(r[pi], x, 1.0)
    r = m.rows(np.ones(n_parts), np.ones(n_parts))  # one leader
    m.add(r[pi], lx, 1.0)
    r = m.rows(np.full(len(pi), -np.inf), np.zeros(len(pi)))  # leading where a replica is
    m.add(r, lx, 1.0)
    m.add(r, x, -1.0)
    _racks(m, state, pi, pn, x)
    # per broker and dimension, one ranged row: the limit and the band, with penalised slacks beyond them
    lower = np.where(band.banded, band.low - state.base, -np.inf) / band.norm
    upper = (band.upper - state.base) / band.norm
    bi, bd = np.nonzero(np.isfinite(band.upper) | band.banded)
    row_of = np.full((n_brokers, _K), -1)
    row_of[bi, bd] = m.rows(lower[bi, bd], upper[bi, bd])
    for d in range(_K):
        ok = row_of[pn, d] >= 0
        m.add(row_of[pn[ok], d], x[ok], state.follower[pi[ok], d] / band.norm[pn[ok], d])
        m.add(row_of[pn[ok], d], lx[ok], state.extra[pi[ok], d] / band.norm[pn[ok], d])
    start = np.zeros(m.n_cols)
    start[x[(begin[pi] == pn[:, None]).any(axis=1)]] = 1.0
    start[lx[begin[pi, 0] == pn]] = 1.0
    activity = m.activity(start)
    slack = _slacks(m, band, row_of, bi, bd, lower, upper, activity)
    if goal.budget is not None:
        r = m.rows(np.array([-np.inf]), np.array([goal.budget / total]))
        m.add(np.repeat(r, len(x)), x, np.where(holds, 0.0, state.size[pi] / total))
    h = _highs(max_nodes, time_limit, gap)
    h.passModel(m.model())
    start = np.concatenate([start, slack])
    h.setSolution(m.n_cols, np.arange(m.n_cols, dtype=np.int32), start)
    h.run()
    info = h.getInfo()
    if info.primal_solution_status != 2:  # kSolutionStatusFeasible
        return None, _status(h, h.modelStatusToString(h.getModelStatus())), float("inf")
    values = np.asarray(h.getSolution().col_value)
    target = _replica_rows(seed, np.arange(n_parts), pi, pn, values[x] > 0.5, values[lx] > 0.5)
    status = _status(h)
    return target, status, float(info.mip_gap) if np.isfinite(info.mip_gap) else 0.0


def _slacks(m: _Builder, band: _Band, row_of: np.ndarray, bi: np.ndarray, bd: np.ndarray, lower: np.ndarray,
            upper: np.ndarray, activity: np.ndarray) -> np.ndarray:
    """Add the penalised slacks of the broker rows (above the band within the limit: a band miss; above the
    limit: overload; below the band: a band miss) and return their values at ``activity``."""
    gap_to_limit = np.where(band.banded[bi, bd], np.maximum(band.limit[bi, bd] - band.upper[bi, bd], 0.0), 0.0)
    soft = m.cols(np.full(len(bi), _W_BAND), upper=gap_to_limit / band.norm[bi, bd], integer=False)
    m.add(row_of[bi, bd], soft, -1.0)
    over = m.cols(np.where(bd < _CAP, _W_OVER, _W_BAND), upper=np.inf, integer=False)
    m.add(row_of[bi, bd], over, -1.0)
    banded = band.banded[bi, bd]
    short = m.cols(np.full(int(banded.sum()), _W_BAND), upper=np.inf, integer=False)
    m.add(row_of[bi[banded], bd[banded]], short, 1.0)
    value = activity[row_of[bi, bd]]
    above = np.maximum(value - upper[bi, bd], 0.0)
    within = np.minimum(above, gap_to_limit / band.norm[bi, bd])
    below = np.maximum(lower[bi, bd] - value, 0.0)[banded]
    return np.concatenate([within, above - within, below])


def _holds(holders: np.ndarray, parts: np.ndarray, brokers: np.ndarray) -> np.ndarray:
    return (holders[parts] == brokers[:, None]).any(axis=1)


def _racks(m: _Builder, state: PoolState, pi: np.ndarray, pn: np.ndarray, x: np.ndarray) -> None:
    """`pools.pool_rules.racks_required` racks: a rack per replica (RF ≤ racks) → at most one replica per rack and
    none off-rack; else every rack."""
    racks = pool_racks(state)
    if not len(racks):
        return
    rf = state.rf
    own_rack = racks_required(rf, len(racks)) >= rf
    code = np.searchsorted(racks, state.rack[pn])
    racked = state.rack[pn] >= 0
    wide = own_rack[pi]
    r = m.rows(np.zeros(1), np.zeros(1))  # no replica on a broker without a rack when each needs its own rack
    off = wide & ~racked
    m.add(np.repeat(r, int(off.sum())), x[off], 1.0)
    key = pi * len(racks) + np.where(racked, code, 0)
    pairs = np.unique(key[racked])
    spread = own_rack[pairs // len(racks)]
    rows = m.rows(np.where(spread, -np.inf, 1.0), np.where(spread, 1.0, np.inf))
    m.add(rows[np.searchsorted(pairs, key[racked])], x[racked], 1.0)


def _replica_rows(seed: np.ndarray, parts: np.ndarray, pi: np.ndarray, pn: np.ndarray, chosen: np.ndarray,
                  leader: np.ndarray) -> np.ndarray:
    """The new replica lists: the leader first, then the others in their seed order, new brokers last."""
    width = seed.shape[1]
    out = np.full((len(parts), width), -1, dtype=np.int64)
    bounds = np.searchsorted(pi, np.arange(len(parts) + 1))  # pi is sorted (np.nonzero is row-major)
    for k in range(len(parts)):
        span = slice(int(bounds[k]), int(bounds[k + 1]))
        brokers = pn[span][chosen[span]].tolist()
        lead = pn[span][leader[span]].tolist()[:1]
        order = {b: s for s, b in enumerate(seed[parts[k]].tolist()) if b >= 0}
        row = lead + sorted((b for b in brokers if b not in lead), key=lambda b: (order.get(b, width), b))
        out[k, : len(row)] = row
    return out


def _reorder(rows: np.ndarray, leaders: np.ndarray) -> np.ndarray:
    out = rows.copy()
    for k in range(len(rows)):
        reps = [b for b in rows[k].tolist() if b >= 0]
        reps.remove(int(leaders[k]))
        out[k, : len(reps) + 1] = [int(leaders[k])] + reps
    return out


def _keep_leaders(state: PoolState, band: _Band, target: np.ndarray) -> np.ndarray:
    """Undo preferred-leader changes the solution does not need: where the current preferred leader is still a
    replica, give it the lead back when that breaks no limit or band the placement meets."""
    loads, bounds = state_loads(state, target).tolist(), band.bounds()  # one try after another: Python floats
    out = target.copy()
    for i in np.flatnonzero((out[:, 0] != state.preferred) & (state.preferred >= 0)).tolist():
        p, now = int(state.preferred[i]), int(out[i, 0])
        if p not in out[i].tolist():
            continue
        extra = state.extra[i].tolist()
        after = {now: [v - x for v, x in zip(loads[now], extra)], p: [v + x for v, x in zip(loads[p], extra)]}
        if _no_worse(bounds, loads, after):  # only the two brokers' loads change
            loads[now], loads[p] = after[now], after[p]
            out[i] = _reorder(out[i : i + 1], np.array([p]))[0]
    return out


def _result(state: PoolState, band: _Band, target: np.ndarray, status: str, gap: float = 0.0, candidates: int = 0,
            rounds: int = 0) -> PoolResult:
    load = state_loads(state, target)
    new = ~_isin_rows(target, state.holders) & (target >= 0)
    copies = new.sum(axis=1)
    # a preferred-leader change: the current preferred leader stays a replica but no longer leads
    stays = (target == state.preferred[:, None]).any(axis=1) & (state.preferred >= 0)
    lead_change = stays & (target[:, 0] != state.preferred) if target.shape[1] else np.zeros(0, dtype=bool)
    overload = np.maximum(load[:, :_CAP] - state.limit, 0.0)
    overload[overload <= _TOL * band.norm[:, :_CAP]] = 0.0
    outside = np.where(band.banded, np.maximum(band.low - load, 0.0) + np.maximum(load - band.high, 0.0), 0.0)
    return PoolResult(
        target=target, load=load, moved_bytes=int((copies * state.size).sum()), copies=int(copies.sum()),
        leader_changes=int(lead_change.sum()), overload=overload, outside_band=outside, status=status, gap=gap,
        candidates=candidates, rounds=rounds,
    )


def _score(result: PoolResult, band: _Band) -> tuple[float, float, float]:
    """Lexicographic quality: overload, then band deviation (both in row units), then moved bytes."""
    return (float((result.overload / band.norm[:, :_CAP]).sum()), float((result.outside_band / band.norm).sum()),
            float(result.moved_bytes))


def better(state: PoolState, goal: Goal, result: PoolResult, than: PoolResult) -> bool:
    """Whether ``result`` beats ``than`` under ``goal`` as `optimise` ranks placements: less overload, then less
    distance outside the band, then fewer moved bytes."""
    band = _Band(state, goal)
    return _score(result, band) < _score(than, band)


def evaluate(state: PoolState, goal: Goal, target: np.ndarray, status: str) -> PoolResult:
    """The `PoolResult` of a placement found elsewhere (e.g. `planner.operations.distribution`), judged against
    ``goal`` as `optimise` judges its own."""
    return _result(state, _Band(state, goal), target, status)


def prune_moves(state: PoolState, goal: Goal, target: np.ndarray) -> tuple[np.ndarray, dict[int, Reason]]:
    """Undo every move of ``target`` that relieves, balances, fills or repairs nothing; the reason of each kept one.

    A move is undone (whole, else replica by replica, else its leader change) when the result keeps every
    partition's rack spread and leaves no broker further outside its limit or band (`Goal`) in any dimension than
    ``target`` does; the largest moves are tried first, and passes repeat until none is undone. Replica lists change in
    place: a new replica takes the slot of the one it replaces and the leader swaps into the first slot (`_canonical`);
    reordering followers copies nothing and balances nothing, so it is never a move. The MIP gap hides what copies a few
    bytes (an empty partition moved costs the objective ~1e-9): this pass makes the number of moves exact.

    Returns the pruned target and, per partition that still moves (row index), the `pools.plan_file.Reason` that
    undoing it breaks, its ``broker`` a position in the pool: ``rack_spread``, ``relieve``, ``balance`` or
    ``fill``. A partition with a current replica outside the pool, or whose replication factor changes, gets
    none here: the caller names that rule (`planner.reasons`).

    Examples
    --------
    Two brokers without limits or band: nothing needs the move of partition 0 from broker 0 to broker 1.

    >>> z = np.zeros((1, 6))
    >>> s = PoolState(np.array([1, 2]), np.array([-1, -1]), np.ones((2, 4)), np.full((2, 4), np.inf),
    ...               np.ones(2, bool), np.zeros((2, 6)), np.zeros(1), np.array([[0]]), np.array([0]),
    ...               np.array([[0]]), z, z)
    >>> pruned, reasons = prune_moves(s, Goal(), np.array([[1]]))
    >>> pruned.tolist(), reasons
    ([[0]], {})
    """
    band = _Band(state, goal)
    out = np.array(target, dtype=np.int64)
    racks = len(pool_racks(state))
    loads = state_loads(state, out).tolist()
    # only rows that differ from their current replicas can move (an equal row is its own canonical form), and
    # only those with a current replica in the pool can be undone: the Python work below is per such row
    held = state.holders
    gaps = ((held[:, :-1] < 0) & (held[:, 1:] >= 0)).any(axis=1) if held.shape[1] else np.zeros(len(held), bool)
    differ = (out != held).any(axis=1) | gaps  # a gap (-1 before a replica) closes up
    entering = differ & (held < 0).all(axis=1)
    out[entering] = _packed(out[entering])  # nothing to undo: laid over empty slots, a row is itself, packed
    differ = np.flatnonzero(differ & ~entering).tolist()
    slots = dict(zip(differ, state.holders[differ].tolist()))  # -1: a replica outside the pool (or padding)
    lists = {i: [b for b in row if b >= 0] for i, row in slots.items()}
    rows = {i: _canonical([b for b in row if b >= 0], slots[i]) for i, row in zip(differ, out[differ].tolist())}
    moving = [i for i in differ if rows[i] != lists[i]]
    copied = {i: float(state.size[i]) * sum(b not in lists[i] for b in rows[i]) for i in moving}
    moving.sort(key=lambda i: (-copied[i], i))
    # the passes are sequential (each undo changes the loads the next one is judged by), so they run on Python
    # floats, a few brokers per try; a row is tried again only once a broker it touches has changed
    bounds, rack = band.bounds(), state.rack.tolist()
    carried = {i: (state.follower[i].tolist(), state.extra[i].tolist()) for i in moving}
    changed, step, kept = [0] * len(loads), 0, {}  # kept: the step at which a row's undoing was last refused
    while True:  # passes: an undone move can make room for another (each undo brings a row nearer its current)
        undone = False
        for i in moving:
            now = lists[i]
            if i in kept and max((changed[b] for b in {*rows[i], *now}), default=0) <= kept[i]:
                continue
            kept[i] = step
            for candidate in _undo_candidates(rows[i], now, slots[i]):
                if not _spans(rack, racks, candidate):
                    continue
                after = _shift(loads, carried[i], rows[i], candidate)
                if _no_worse(bounds, loads, after):
                    step += 1
                    for b, value in after.items():
                        loads[b], changed[b] = value, step
                    rows[i], undone = candidate, True
                    kept.pop(i, None)
                    if candidate == now:
                        break
        moving = [i for i in moving if rows[i] != lists[i]]
        if not undone:
            break
    for i, row in rows.items():
        out[i] = -1
        out[i, : len(row)] = row
    why = {i: _reason(state, band, rack, racks, loads, i, rows[i], lists[i]) for i in moving}
    return out, {i: r for i, r in why.items() if r is not None}


def _packed(rows: np.ndarray) -> np.ndarray:
    """Replica lists with their -1 padding moved to the end, the replicas in their order.

    >>> _packed(np.array([[-1, 4, 2], [3, -1, -1]])).tolist()
    [[4, 2, -1], [3, -1, -1]]
    """
    return np.take_along_axis(rows, np.argsort(rows < 0, axis=1, kind="stable"), axis=1)


def _canonical(row: list[int], now: list[int]) -> list[int]:
    """``row``'s replicas laid over ``now`` in place: each new replica takes the slot of one that leaves (a -1 in
    ``now`` is a replica outside the pool; in slot order, extra ones last), then the leader ``row[0]`` swaps into
    the first slot.

    >>> _canonical([3, 2, 4], [3, 7, 2]), _canonical([2, 3, 4], [3, 7, 2]), _canonical([1, 2, 5, 6], [1, 2, 3])
    ([3, 4, 2], [2, 4, 3], [1, 2, 5, 6])
    """
    if not row:
        return row
    fresh = iter([b for b in row if b not in now])
    out = [b if b in row else next(fresh, -1) for b in now]
    out = [b for b in out if b >= 0] + list(fresh)
    k = out.index(row[0])
    out[0], out[k] = out[k], out[0]
    return out


def _undo_candidates(row: list[int], now: list[int], slots: list[int]):
    """Ways to undo ``row`` towards ``now`` (its pool brokers; ``slots`` the whole current list, -1 outside the
    pool), the whole move first: the current list, then each new replica back on a broker it left, then the
    current preferred leader back in the lead."""
    if len(now) == len(row) and all(b >= 0 for b in now):
        yield now
    for new in [b for b in row if b not in now]:
        for old in [b for b in now if b not in row]:
            yield _canonical([old if b == new else b for b in row], slots)
    if now and now[0] in row and row[0] != now[0]:
        yield _canonical([now[0], *(b for b in row if b != now[0])], slots)


def _spans(rack: list[int], racks: int, row: list[int]) -> bool:
    """Whether the replicas ``row`` (positions; ``rack`` the pool brokers' rack codes) span the racks their
    partition needs (`pools.pool_rules.spans_racks` over the pool's ``racks``)."""
    return spans_racks([rack[b] if rack[b] >= 0 else None for b in row], racks)


def _shift(loads: list[list[float]], carried: tuple[list[float], list[float]], row: list[int],
           candidate: list[int]) -> dict[int, list[float]]:
    """The loads of the brokers touched when a partition (``carried``: its follower load and leader extra) goes
    from ``row`` to ``candidate``, added in the order of the array form (each replica, then the leader)."""
    after = {b: loads[b][:] for b in {*row, *candidate}}
    follower, extra = carried
    for replicas, sign in ((row, -1.0), (candidate, 1.0)):
        for b in replicas:
            after[b] = [v + sign * f for v, f in zip(after[b], follower)]
        if replicas:
            after[replicas[0]] = [v + sign * x for v, x in zip(after[replicas[0]], extra)]
    return after


def _no_worse(bounds: list[list[tuple[int, float, float, float]]], loads: list[list[float]],
              after: dict[int, list[float]]) -> bool:
    """Whether no broker of ``after`` ends further above its upper bound or below its lower one than in ``loads``
    (`_Band.excess_of`, a broker's bounds from `_Band.bounds`)."""
    for b, row in after.items():
        was = loads[b]
        for d, upper, low, norm in bounds[b]:
            if not max(row[d] - upper, 0.0) / norm <= max(max(was[d] - upper, 0.0) / norm, _TOL):
                return False
            if not max(low - row[d], 0.0) / norm <= max(max(low - was[d], 0.0) / norm, _TOL):
                return False
    return True


def _reason(state: PoolState, band: _Band, rack: list[int], racks: int, loads: list[list[float]], i: int,
            row: list[int], now: list[int]) -> Reason | None:
    """What undoing the move of partition ``i`` (``row`` back to ``now``) breaks: the rack spread, else the first
    rule in the order relieve (a broker further over its limit), balance (further above its band), fill (further
    below it), and within that rule the broker and dimension it puts furthest outside. None where the current
    replicas are not all in the pool or their count changes (the caller names why). ``rack``: the pool brokers'
    rack codes, ``racks`` the pool's rack count, ``loads`` the brokers' loads."""
    if len(now) != len(row):  # a current replica outside the pool (no position here), or a new factor
        return None
    if not _spans(rack, racks, now):
        return Reason(ReasonRule.RACK_SPREAD)
    after = _shift(loads, (state.follower[i].tolist(), state.extra[i].tolist()), row, now)
    brokers = sorted(after)
    block = np.array([after[b] for b in brokers])
    down0, up0 = band.excess_of(np.array([loads[b] for b in brokers]), brokers)
    down1, up1 = band.excess_of(block, brokers)
    above = down1 - np.maximum(down0, _TOL)
    over_limit = block > band.limit[brokers]
    for rule, worse in ((ReasonRule.RELIEVE, np.where(over_limit, above, 0.0)),
                        (ReasonRule.BALANCE, np.where(over_limit, 0.0, above)),
                        (ReasonRule.FILL, up1 - np.maximum(up0, _TOL))):
        if (worse > 0).any():
            break
    k, d = np.unravel_index(int(np.argmax(worse)), worse.shape)
    b = brokers[k]
    bound = {ReasonRule.FILL: band.low, ReasonRule.RELIEVE: band.limit}.get(rule, band.upper)[b, d]
    return Reason(rule, b, ENGINE_DIMENSIONS[d], float(bound), float(block[k, d]))
