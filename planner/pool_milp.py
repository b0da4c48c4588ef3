"""The pool model: a MILP (PuLP) deciding which pool each broker and each floating topic group belongs to.

Variables (named by index, never by topic or pool name; the index → name maps stay in Python):

- ``x_b{i}_p{j}``: real broker ``i`` belongs to pool ``j`` (pinned brokers are constants, not variables);
- ``x_n{c}_p{j}``: brokers of free class ``c`` in pool ``j`` where they hold no bytes (``restrict`` only);
- ``y_g{k}_p{j}``: topic group ``k`` goes to pool ``j``, only for groups the policy leaves a choice;
- ``v_p{j}_r{l}``: virtual new brokers (the policy's ``new_broker`` type) added to pool ``j`` in rack ``l``;
- ``z_p{j}_r{l}``: pool ``j`` has a broker in rack ``l`` (rack spread);
- ``k_g{k}_p{j}``: bytes of floating group ``k`` already on the brokers of pool ``j`` (kept when ``k`` goes there);
- ``t_n{m}_p{j}``: tenant ``m`` (one that must not share) is present in pool ``j``;
- ``f_p{j}_t{q}_m{m}``, ``t_p{j}_d{d}``, ``s_p{j}_d{d}_t{q}_m{m}``: pool ``j`` has at least ``m`` brokers of capacity
  type ``q``, and the LP terms of its failure loss in dimension ``d``.

Constraints per pool ``j`` and dimension ``d`` (the rules of `pools.pool_rules`): demand ≤ headroom × usable
capacity, where usable = capacity of its brokers (virtual ones included) − its ``tolerated_failures`` largest,
modelled exactly (`_Model._failure_rows`); broker count ≥ max(min_brokers, largest RF); racks with a broker ≥
max(min_racks, largest RF) when the cluster has racks; each rack of a pool carries 1/RF of the topics whose RF
equals the rack count (one replica per rack), in every leader-independent dimension; conflicting tenants never
in the same pool.

The lexicographic objective is solved in three sequential stages: (1) fewest virtual brokers, on a model whose
free brokers are aggregated by (rack, capacity) into integer counts (every constraint but moved bytes depends only
on those counts), preferring counts that keep brokers in their current pool (that term stays below one broker);
(2) with that number of new brokers fixed, the broker model, warm-started from stage 1 through a partial MIP
start, minimising bytes moved (bytes of replicas not already on a broker of their topic's pool, as a fraction of
all replica bytes) alone; (3) with the choices that decide moved bytes fixed at stage 2's (each floating group's
pool and each named broker's: `_Model.fix_choices`), so not a byte of it is given back, the tie-breakers among
what is left free (brokers placed by count where they hold no bytes, spare brokers): the peak pool
load (the largest demand − usable capacity over pools and dimensions, in median-broker units) plus brokers used
(weight `USED_WEIGHT` / brokers, below 1e-3 of a median broker in total), so spare brokers stay spare.

With ``restrict`` the broker model names a free broker only in the pools whose topics hold some (at least
``gap``) of its bytes (``x_b``); elsewhere it is counted as keeping nothing, so brokers of one (rack, capacity)
class are interchangeable there and are placed by count (``x_n{c}_p{j}``, sharing the class's brokers with its
``x_b``). Every plan of the full model maps onto one of the restricted model with the same tie-breakers and
moved bytes overstated by at most ``gap`` of all replica bytes, and back, so at gap 0 the restriction is exact. Rows are scaled to median-broker units so HiGHS sees coefficients near 1.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import highspy
import numpy as np
import pulp

from planner.highs import QuietHighs, use_threads
from planner.solvers import Solver
from pools.errors import InputError, SolverError
from pools.plan_file import SolverReport
from pools.progress import ProgressReporter, no_progress
from pools.pool_rules import (
    RACK_DIMENSIONS,
    PoolLimits,
    brokers_required,
    failure_loss,
    headroom_limit,
    misplaced_pins,
    over_limit,
    pool_racks_required,
    racks_required,
    shared_tenant_pools,
    spans_every_rack,
    usable_capacity,
)
from pools.snapshot import DIMENSIONS

__all__ = [
    "Solver",
    "BrokerSpec",
    "GroupSpec",
    "PoolProblem",
    "PoolSolution",
    "solve_pools",
    "STAGE_NODES",
]

Vector = tuple[float, float, float, float]

USED_WEIGHT = 1e-3
#: Branch-and-bound nodes per stage: the work limit that ends a stage short of its gap, the same on any machine
#: under any load (HiGHS explores its tree in one worker whatever ``threads``; the wall-clock ``time_limit`` is
#: only a safety net, and a stage it stops makes `PoolSolution.time_limited` true).
STAGE_NODES = 10_000

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BrokerSpec:
    """A real broker: id, rack, capacity in `DIMENSIONS` order, the pool that pins it and its current pool."""

    broker_id: int
    rack: str | None
    capacity: Vector
    pinned: str | None = None
    current: str | None = None


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """Topics that go to one pool together: candidate pools, summed demand, largest RF, bytes per broker."""

    name: str
    candidates: tuple[str, ...]
    demand: Vector
    max_rf: int
    tenant: str | None = None
    bytes_on: Mapping[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PoolProblem:
    """Everything the MILP needs, as plain data (built by `planner.pool_planner`): each pool's limits
    (`pools.pool_rules.PoolLimits`), the brokers, the topic groups, the tenants that must not share, and the
    broker type added where capacity lacks."""

    pools: Mapping[str, PoolLimits]
    brokers: tuple[BrokerSpec, ...]
    groups: tuple[GroupSpec, ...]
    conflicts: frozenset[frozenset[str]]
    new_broker: Vector
    new_broker_racks: tuple[str, ...]
    total_bytes: float


@dataclass(frozen=True)
class PoolSolution:
    """The decision: broker → pool (None = spare), group → pool, virtual brokers per pool and rack.

    ``seconds`` (wall time of all stages) and ``time_limited`` (a stage stopped at its time limit, so the
    decision may differ between runs) are for the console, never for the plan.
    """

    brokers: Mapping[int, str | None]
    groups: Mapping[str, str]
    added: Mapping[str, Mapping[str, int]]
    kept_bytes: float
    report: SolverReport
    seconds: float = 0.0
    time_limited: bool = False

    @property
    def brokers_to_add(self) -> dict[str, int]:
        """Virtual brokers per pool (every pool listed)."""
        return {p: sum(r.values()) for p, r in sorted(self.added.items())}


def solve_pools(
    problem: PoolProblem,
    *,
    solver: Solver | str = Solver.HIGHS,
    time_limit: float = 60.0,
    gap: float = 0.01,
    threads: int = 1,
    restrict: bool = True,
    progress: ProgressReporter = no_progress,
) -> PoolSolution:
    """Solve the pool model (see the module docstring).

    Parameters
    ----------
    problem : PoolProblem
    solver : Solver or {"highs", "cbc"}
    time_limit : float
        Wall-clock seconds for all stages together: a safety net only. Each stage stops at its gap or at
        `STAGE_NODES` nodes (work, not time), so the same problem gives the same solution on any machine under any
        load unless this net fires (``time_limited``).
    gap : float
        Relative MIP gap at which stages 2 and 3 stop.
    threads : int
        Solver threads (fixed, with a fixed seed, for reproducible plans; `planner.highs.use_threads`).
    restrict : bool
        Name stage 2's free brokers only in the pools holding at least ``gap`` of their bytes, and count them by
        class elsewhere (exact at gap 0, smaller); False gives every free broker every pool by name (the
        reference benchmarks use).
    progress : ProgressReporter
        Told each stage, then HiGHS's gap and the time left as its branch and bound goes on.

    Returns
    -------
    PoolSolution
        Its report is stage 2's (bytes moved, as a fraction of all replica bytes).

    Raises
    ------
    InfeasibleError
        Never for capacity (virtual brokers absorb it); `InputError` when the structure cannot be satisfied
        (the caller explains conflicts before solving).
    """
    solver = Solver(solver)
    started = time.monotonic()

    def left() -> float:  # the safety net: what is left of ``time_limit`` for the whole call
        return max(1.0, time_limit - (time.monotonic() - started))

    counts = _Model(problem, aggregate=True)
    # fewest new brokers; among those, keep as many brokers as possible in their current pool (the weight
    # keeps the second term below one broker)
    stay = counts.stay() / (len(problem.brokers) + 1)
    stage1 = counts.solve(counts.added_total - stay, _solver(solver, left(), 0.0, threads, progress, _STEPS[0]))
    if stage1.status != "Optimal" or stage1.solution == "No Solution Found":
        return counts.unsolved(stage1, time.monotonic() - started)
    limited = stage1.limited
    need = round(pulp.value(counts.added_total) or 0.0)
    start = counts.broker_pools()
    model = _Model(problem, allowed=_candidate_pools(problem, counts.pool_index, gap) if restrict else None)
    model.prob += model.added_total <= need, "stage1_added"
    model.start_from(counts, start)
    stage2 = model.solve(model.moved, _solver(solver, left(), gap, threads, progress, _STEPS[1]))  # from stage 1's
    if stage2.solution == "No Solution Found":
        return model.unsolved(stage2, time.monotonic() - started)
    limited |= stage2.limited
    # the tie-breakers may not give back a byte of what stage 2 saved: the choices that decide moved bytes are
    # fixed (a bound on the moved-bytes row instead made HiGHS's presolve call the model infeasible whenever
    # stage 2's values sat within its feasibility tolerance of the integers, and stage 3 then ran to its time
    # limit without a solution)
    model.fix_choices()
    found = {v.name: v.varValue for v in model.prob.variables()}
    stage3 = model.solve(model.tie_breakers(), _solver(solver, left(), gap, threads, progress,
                                                       _STEPS[2]))  # from stage 2's solution
    if stage3.solution not in _HAS_SOLUTION:  # e.g. HiGHS >= 1.16 may call the fixed-moved-bytes model infeasible
        for v in model.prob.variables():
            v.varValue = found[v.name]
    limited |= stage3.limited
    return replace(model.solution(stage2), seconds=time.monotonic() - started, time_limited=limited)


#: PuLP's solution statuses that carry variable values.
_HAS_SOLUTION = (pulp.LpSolution[pulp.LpSolutionOptimal], pulp.LpSolution[pulp.LpSolutionIntegerFeasible])


@dataclass(frozen=True)
class _Stage:
    name: str
    status: str
    solution: str
    objective: float | None
    bound: float | None
    gap: float | None
    limited: bool = False  # the wall-clock safety net stopped it (the work limit, STAGE_NODES, did not)


#: What each stage of `solve_pools` does, as progress tells it.
_STEPS = ("solving the pool model, 1 of 3: fewest brokers to add", "solving the pool model, 2 of 3: fewest bytes moved",
          "solving the pool model, 3 of 3: even load")


class _StartedHiGHS(pulp.HiGHS):
    """PuLP's highspy solver, handing HiGHS the integer variables' current values as a (partial) MIP start.

    HiGHS completes a partial start by fixing the given integers and solving for the rest, so the first
    stage starts from the current broker pools and the second from the first stage's solution. HiGHS's log goes
    to this module's logger (DEBUG), never to the console; its branch-and-bound lines tell ``progress`` the gap.
    """

    def __init__(self, *, progress: ProgressReporter, step: str, **options: object) -> None:
        super().__init__(**options)
        self.progress, self.step = progress, step

    def createAndConfigureSolver(self, lp: pulp.LpProblem) -> None:
        """PuLP's own configuration (gaps, threads, time limit, the other options), on a `QuietHighs`."""
        lp.solverModel = model = QuietHighs()
        model.cbLogging.subscribe(_log_highs)
        limit = float(self.timeLimit)
        model.cbMipLogging.subscribe(lambda event: self.progress(self.step, note=_solver_note(
            event.data_out.mip_gap, limit - event.data_out.running_time)))
        use_threads(self.threads, model)
        options = {"mip_rel_gap": self.gapRel, "mip_abs_gap": self.gapAbs,
                   "time_limit": limit, **self.optionsDict}
        for key, value in options.items():
            if value is not None:
                model.setOptionValue(key, value)
        self.progress(self.step, note=_solver_note(math.inf, limit))

    def callSolver(self, lp: pulp.LpProblem) -> None:
        start = [(v.index, v.varValue) for v in lp.variables() if v.cat == pulp.LpInteger and v.varValue is not None]
        if start:
            index = np.array([i for i, _ in start], dtype=np.int32)
            value = np.array([round(x) for _, x in start], dtype=np.float64)
            lp.solverModel.setSolution(len(start), index, value)
        super().callSolver(lp)


def _log_highs(event: object) -> None:
    for line in str(getattr(event, "message", "")).splitlines():
        if line.strip():
            _log.debug("HiGHS: %s", line.rstrip())


def _solver_note(gap: float, left: float) -> str:
    """``gap 3.10 %, at most 28 s left`` (no gap before HiGHS has a solution)."""
    from pools.units import format_elapsed, format_percent

    shown = f"gap {format_percent(gap, digits=2)}, " if math.isfinite(gap) else ""
    return f"{shown}at most {format_elapsed(max(left, 0.0))} left"


def _solver(solver: Solver, time_limit: float, gap: float, threads: int, progress: ProgressReporter = no_progress,
            step: str = _STEPS[0], abs_gap: float | None = None) -> pulp.LpSolver:
    if solver is Solver.HIGHS:
        return _StartedHiGHS(
            msg=False, timeLimit=time_limit, gapRel=gap, gapAbs=abs_gap, threads=threads, random_seed=0,
            mip_max_nodes=STAGE_NODES, progress=progress, step=step,
        )
    progress(step, note=_solver_note(math.inf, time_limit))
    try:
        from cbcbox import cbc_bin_path
    except ImportError:
        raise InputError("--solver cbc: the CBC solver is not installed (pip install 'pulp[cbc]')") from None
    options = ["randomSeed 1", "randomCbcSeed 1", f"maxNodes {STAGE_NODES}"]
    return pulp.COIN_CMD(path=cbc_bin_path(), msg=False, timeLimit=time_limit, gapRel=gap, gapAbs=abs_gap,
                         threads=threads, options=options, warmStart=True)


class _Model:
    """The PuLP problem and its index maps."""

    def __init__(self, problem: PoolProblem, *, aggregate: bool = False,
                 allowed: Mapping[int, set[int]] | None = None) -> None:
        self.problem = problem
        self.aggregate = aggregate
        self.allowed = allowed
        self.units, self.members_of = _units(problem, aggregate)
        self.n_real = len(self.units)
        if allowed is not None:  # one unit per free class for the brokers placed where they hold no bytes
            classes = [(u, m) for u, m in zip(*_units(problem, True)) if u.pinned is None]
            self.units += [u for u, _ in classes]
            self.members_of += [m for _, m in classes]
        self.class_of = {i: c for c in range(self.n_real, len(self.units)) for i in self.members_of[c]}
        self.pools = tuple(sorted(problem.pools))
        self.pool_index = {p: j for j, p in enumerate(self.pools)}
        racks = {b.rack for b in problem.brokers if b.rack is not None}
        self.racked = bool(racks)
        self.racks = tuple(sorted(racks | set(problem.new_broker_racks))) if self.racked else ("",)
        self.new_racks = tuple(problem.new_broker_racks) if self.racked and problem.new_broker_racks else self.racks
        self.prob = pulp.LpProblem("pools", pulp.LpMinimize)
        self._variables()
        self._constraints()

    # BEGIN define_variables
    def _variables(self) -> None:
        prob, problem = self.prob, self.problem
        n_pools = range(len(self.pools))
        free = [(i, j) for i, u in enumerate(self.units[:self.n_real]) if u.pinned is None for j in n_pools
                if self.allowed is None or j in self.allowed[i]]
        if self.aggregate:  # x_c{i}_p{j}: how many brokers of class i (same rack and capacity) pool j gets
            self.x = {(i, j): prob.add_variable(f"x_c{i}_p{j}", lowBound=0, upBound=len(self.members_of[i]),
                                                cat=pulp.LpInteger) for i, j in free}
        else:
            self.x = prob.add_variable_dict("x_b%s_p%s", free, cat=pulp.LpBinary)
            # x_n{i}_p{j}: brokers of class unit i in pool j where they hold no bytes (any such broker will do)
            self.x |= {(i, j): prob.add_variable(f"x_n{i}_p{j}", lowBound=0, upBound=len(self.members_of[i]),
                                                 cat=pulp.LpInteger)
                       for i in range(self.n_real, len(self.units)) for j in n_pools}
        self.fixed: dict[int, int | None] = {}
        for k, g in enumerate(problem.groups):
            self.fixed[k] = self.pool_index[g.candidates[0]] if len(g.candidates) == 1 else None
        pairs = [(k, self.pool_index[p]) for k, g in enumerate(problem.groups) if len(g.candidates) > 1
                 for p in g.candidates]
        self.y = prob.add_variable_dict("y_g%s_p%s", pairs, cat=pulp.LpBinary)
        self.k = prob.add_variable_dict("k_g%s_p%s", pairs, lowBound=0)
        new_racks = [self.racks.index(r) for r in self.new_racks]
        self.v = prob.add_variable_dict("v_p%s_r%s", [(j, l) for j in n_pools for l in new_racks], lowBound=0,
                                        cat=pulp.LpInteger)
        self.z = {}
        if self.racked:
            self.z = prob.add_variable_dict("z_p%s_r%s", [(j, l) for j in n_pools for l in range(len(self.racks))],
                                            cat=pulp.LpBinary)
        self.moved_var = prob.add_variable("moved", lowBound=0)  # fraction of all replica bytes
        self.peak = prob.add_variable("peak")
        self.added_total = pulp.lpSum(self.v.values())
        self.moved = self.moved_var
    # END define_variables

    def stay(self) -> pulp.LpAffineExpression:
        """Aggregated model: brokers that can stay in their current pool under the class counts."""
        terms = []
        for c, unit in enumerate(self.units):
            if unit.pinned is not None:
                continue
            now = Counter(self.problem.brokers[i].current for i in self.members_of[c])
            for pool, n in sorted(now.items(), key=lambda kv: str(kv[0])):
                if pool in self.pool_index:
                    j = self.pool_index[pool]
                    keep = self.prob.add_variable(f"stay_c{c}_p{j}", lowBound=0, upBound=n)
                    self.prob += keep <= self.x[c, j], f"stay_c{c}_p{j}"
                    terms.append(keep)
        return pulp.lpSum(terms)

    def broker_pools(self) -> dict[int, int]:
        """Aggregated model: its class counts mapped onto brokers (broker index → pool index).

        Brokers stay in their current pool while the class's count there allows; the others fill the pools
        whose count is short, lowest id first.
        """
        problem = self.problem
        chosen: dict[int, int] = {}
        for c, unit in enumerate(self.units):
            if unit.pinned is not None:
                continue
            want = {j: round(self.x[c, j].value() or 0) for j in range(len(self.pools))}
            brokers = self.members_of[c]
            for i in brokers:
                j = self.pool_index.get(problem.brokers[i].current or "")
                if j is not None and want[j] > 0:
                    chosen[i] = j
                    want[j] -= 1
            spare = [i for i in brokers if i not in chosen]
            for j in range(len(self.pools)):
                for _ in range(want[j]):
                    chosen[spare.pop(0)] = j
        return chosen

    def start_from(self, counts: "_Model", brokers: Mapping[int, int]) -> None:
        """Initial values: ``brokers`` (from `broker_pools`), and the aggregated stage's groups and new brokers."""
        neutral = Counter((self.class_of[i], j) for i, j in brokers.items() if (i, j) not in self.x)
        for (i, j), var in self.x.items():
            var.setInitialValue(neutral[i, j] if i >= self.n_real else int(brokers.get(i) == j))
        for key, var in self.y.items():
            var.setInitialValue(round(counts.y[key].value() or 0))
        for key, var in self.v.items():
            var.setInitialValue(round(counts.v[key].value() or 0))

    def fix_choices(self) -> None:
        """Fix the choices that decide moved bytes at their current values: each floating group's pool and each
        named broker's (``x_b``). What stays free is what moves no byte: brokers placed by count where they hold
        none (``x_n``), and the rack, failure and count terms that follow."""
        for (i, _), var in self.x.items():
            if i < self.n_real:
                var.setInitialValue(round(var.value() or 0))
                var.fixValue()
        for var in self.y.values():
            var.setInitialValue(round(var.value() or 0))
            var.fixValue()

    def member(self, i: int, j: int) -> pulp.LpVariable | int:
        """Broker ``i`` in pool ``j``: a variable, or the constant its pin gives."""
        pinned = self.units[i].pinned
        if pinned is None:
            return self.x.get((i, j), 0)
        return 1 if self.pool_index[pinned] == j else 0

    def in_pool(self, k: int, j: int) -> pulp.LpVariable | int:
        """Group ``k`` in pool ``j``: a variable for floating groups, else 0/1."""
        fixed = self.fixed[k]
        if fixed is None:
            return self.y.get((k, j), 0)
        return 1 if fixed == j else 0

    def _failure_rows(self, j: int, members, virtual: list, unit: Vector, floor: int) -> list:
        """Capacity pool ``j`` loses with its ``tolerated_failures`` largest brokers down, per dimension, in
        median-broker units: exactly `pools.pool_rules.failure_loss` of the brokers it ends up with.

        Brokers of one capacity vector (a type) are interchangeable, and at most ``k`` of a type can be among the
        ``k`` largest, so a binary ``f_p{j}_t{q}_m{m}`` (``m <= k``) says "the pool has at least ``m`` brokers of
        type ``q``", forced by the type's count (named brokers, class counts and, for the new-broker type, virtual
        brokers). The sum of the ``k`` largest of those slots is the LP ``min over t >= 0 of k t + sum max(0, c f -
        t)``: loss = ``k t + sum s`` with ``s >= c f - t``, ``s >= 0``, which the solver keeps at its minimum
        wherever capacity binds (a larger loss only lowers usable capacity).

        Tightening (valid for every integer solution): a pool whose brokers can only be of one type has at least
        ``floor`` (its required broker count) of it, so those slots are constants; a named broker in the pool sets
        its type's first slot.
        """
        problem, prob = self.problem, self.prob
        k = problem.pools[self.pools[j]].tolerated_failures
        if k <= 0:
            return [0.0] * len(DIMENSIONS)
        types: dict[Vector, tuple[list, list[int], set[int]]] = {}  # capacity -> count terms, constant, brokers
        for i, m in members:
            terms, const, brokers = types.setdefault(self.units[i].capacity, ([], [0], set()))
            if isinstance(m, int):
                const[0] += m
            else:
                terms.append(m)
            brokers.update(self.members_of[i])
        if virtual:
            types.setdefault(problem.new_broker, ([], [0], set()))[0].extend(virtual)
        slots = []
        for q, (capacity, (terms, const, brokers)) in enumerate(sorted(types.items())):
            upper = len(brokers) + (self._virtual_bound(j) if virtual and capacity == problem.new_broker else 0)
            known = max(const[0], floor) if len(types) == 1 else const[0]
            previous = None
            for m in range(1, min(k, upper) + 1):
                f: pulp.LpVariable | int = 1
                if known < m:
                    f = prob.add_variable(f"f_p{j}_t{q}_m{m}", cat=pulp.LpBinary)
                    prob += pulp.lpSum(terms) <= m - 1 - const[0] + (upper - m + 1) * f, f"fail_p{j}_t{q}_m{m}"
                    if previous is not None and not isinstance(previous, int):
                        prob += f <= previous, f"fail_order_p{j}_t{q}_m{m}"
                    elif m == 1:
                        for n, x in enumerate(t for t in terms if t.upBound == 1):  # binaries: named brokers
                            prob += f >= x, f"fail_p{j}_t{q}_m1_b{n}"
                slots.append((q, m, capacity, f))
                previous = f
        if all(isinstance(f, int) for *_, f in slots):  # every slot known: the k largest are constants
            return [failure_loss((c[d] / unit[d] for *_, c, _ in slots), k) for d in range(len(DIMENSIONS))]
        loss = []
        for d in range(len(DIMENSIONS)):
            t = prob.add_variable(f"t_p{j}_d{d}", lowBound=0)
            terms = []
            for q, m, capacity, f in slots:
                if capacity[d] > 0:
                    s = prob.add_variable(f"s_p{j}_d{d}_t{q}_m{m}", lowBound=0)
                    prob += s >= capacity[d] / unit[d] * f - t, f"loss_p{j}_d{d}_t{q}_m{m}"
                    terms.append(s)
            loss.append(k * t + pulp.lpSum(terms))
        return loss

    def _virtual_bound(self, j: int) -> int:
        """More virtual brokers than pool ``j`` can need: the model caps its count there.

        Twice the new brokers its candidate groups' whole demand needs in each dimension (once for capacity, once
        for the per-rack shares), plus the tolerated failures, its broker and rack minimums and one per rack new
        brokers may go to. Those alone satisfy every row of the pool whatever else it holds (adding a broker never
        lowers usable capacity), so a plan with more could drop the excess and add fewer brokers: no optimum needs
        the brokers this cap cuts off.
        """
        problem, pool = self.problem, self.pools[j]
        limits = problem.pools[pool]
        groups = [g for g in problem.groups if pool in g.candidates]
        bound = limits.tolerated_failures + len(self.new_racks)
        bound += max([limits.min_brokers, limits.min_racks] + [g.max_rf for g in groups])
        for d in range(len(DIMENSIONS)):
            demand, c = sum(g.demand[d] for g in groups), problem.new_broker[d]
            if demand > 0 and c > 0:
                bound += 2 * math.ceil(demand / (limits.headroom[d] * c))
        return bound

    # BEGIN define_constraints
    def _constraints(self) -> None:
        prob, problem = self.prob, self.problem
        n_pools = len(self.pools)
        for i, b in enumerate(self.units):
            if b.pinned is None:
                real = self.members_of[i] if i >= self.n_real else []  # a class unit shares its brokers
                prob += pulp.lpSum(self.x.get((ii, j), 0) for ii in [i, *real] for j in range(n_pools)) \
                    <= len(self.members_of[i]), f"one_pool_b{i}"
        fixed_in: dict[int, list[int]] = {j: [] for j in range(n_pools)}
        floating_in: dict[int, list[int]] = {j: [] for j in range(n_pools)}
        for k, j in self.fixed.items():
            if j is not None:
                fixed_in[j].append(k)
        for k, j in self.y:
            floating_in[j].append(k)
        for k in sorted({k for k, _ in self.y}):
            prob += pulp.lpSum(var for (kk, _), var in self.y.items() if kk == k) == 1, f"one_pool_g{k}"
        unit = _unit_capacity(problem)
        self.n_brokers = max(len(problem.brokers), 1)
        v_of = {j: [var for (jj, _), var in self.v.items() if jj == j] for j in range(n_pools)}
        for j, pool in enumerate(self.pools):
            limits = problem.pools[pool]
            members = [(i, m) for i, b in enumerate(self.units)
                       if (b.pinned is None or b.pinned == pool) and not _is_zero(m := self.member(i, j))]
            fixed_rf = max([problem.groups[k].max_rf for k in fixed_in[j]], default=0)
            loss = self._failure_rows(j, members, v_of[j], unit, brokers_required(limits, fixed_rf))
            for d in range(len(DIMENSIONS)):
                u = unit[d]  # every row in units of a median broker, so coefficients stay near 1
                fixed_demand = sum(problem.groups[k].demand[d] for k in fixed_in[j]) / u
                demand = fixed_demand + pulp.lpSum(problem.groups[k].demand[d] / u * self.y[k, j]
                                                   for k in floating_in[j])
                usable = prob.add_variable(f"usable_p{j}_d{d}")  # one row holds the long sum, the others refer to it
                prob += usable == (
                    pulp.lpSum(self.units[i].capacity[d] / u * m for i, m in members)
                    + pulp.lpSum(problem.new_broker[d] / u * var for var in v_of[j])
                    - loss[d]
                ), f"usable_p{j}_d{d}"
                limit = headroom_limit(usable, limits.headroom[d])
                prob += demand <= limit, f"capacity_p{j}_d{d}"
                prob += headroom_limit(self.peak, limits.headroom[d]) >= demand - limit, f"peak_p{j}_d{d}"
            count = prob.add_variable(f"count_p{j}")
            prob += count == pulp.lpSum(m for _, m in members) + pulp.lpSum(v_of[j]), f"count_def_p{j}"
            prob += count >= brokers_required(limits, fixed_rf), f"count_p{j}"
            for k in floating_in[j]:
                prob += count >= problem.groups[k].max_rf * self.y[k, j], f"count_p{j}_g{k}"
            if self.racked:
                self._constrain_racks(j, members, limits, fixed_rf, floating_in[j])
                self._rack_capacity(j, members, limits, fixed_in[j], floating_in[j], unit)
        self._conflicts()
        if not self.aggregate:
            self._moved(fixed_in)
        self.used = pulp.lpSum(self.x.values())
    # END define_constraints

    def _moved(self, fixed_in: dict[int, list[int]]) -> None:
        """Bytes moved = all replica bytes − bytes already on a broker of their group's pool."""
        prob, problem = self.prob, self.problem
        index = {b.broker_id: i for i, b in enumerate(problem.brokers)}
        scale = 1.0 / max(problem.total_bytes, 1.0)  # bytes as fractions of all replica bytes
        kept_fixed: dict[tuple[int, int], float] = {}
        for j, ks in fixed_in.items():
            for k in ks:
                for broker, size in problem.groups[k].bytes_on.items():
                    i = index.get(broker)
                    if i is not None and size:
                        kept_fixed[i, j] = kept_fixed.get((i, j), 0.0) + size * scale
        kept: list = [size * self.member(i, j) for (i, j), size in sorted(kept_fixed.items())]
        for (k, j), var in self.k.items():
            group = problem.groups[k]
            total = sum(group.bytes_on.values()) * scale
            prob += var <= total * self.y[k, j], f"kept_choice_g{k}_p{j}"
            on = [(index[b], s * scale) for b, s in sorted(group.bytes_on.items()) if b in index and s]
            prob += var <= pulp.lpSum(s * self.member(i, j) for i, s in on), f"kept_brokers_g{k}_p{j}"
            kept.append(var)
        prob += self.moved_var >= 1 - pulp.lpSum(kept), "moved"

    def _constrain_racks(self, j: int, members, limits: PoolLimits, fixed_rf: int, groups: list[int]) -> None:
        prob, problem = self.prob, self.problem
        for l, rack in enumerate(self.racks):
            in_rack = [m for i, m in members if self.units[i].rack == rack]
            new = [var for (jj, ll), var in self.v.items() if jj == j and ll == l]
            prob += self.z[j, l] <= pulp.lpSum(in_rack) + pulp.lpSum(new), f"rack_p{j}_r{l}"
        spread = pulp.lpSum(self.z[j, l] for l in range(len(self.racks)))
        prob += spread >= pool_racks_required(limits, fixed_rf, len(self.racks)), f"racks_p{j}"
        for k in groups:
            if (k, j) in self.y:
                need = racks_required(problem.groups[k].max_rf, len(self.racks))
                prob += spread >= need * self.y[k, j], f"racks_p{j}_g{k}"

    def _rack_capacity(self, j: int, members, limits: PoolLimits, fixed: list[int], floating: list[int],
                       unit: Vector) -> None:
        """Topics with one replica per rack (RF = racks) put 1/RF of their load in every rack of the pool."""
        prob, problem = self.prob, self.problem
        n_racks = len(self.racks)
        full = [k for k in fixed if spans_every_rack(problem.groups[k].max_rf, n_racks)]
        full_floating = [k for k in floating if spans_every_rack(problem.groups[k].max_rf, n_racks)]
        if not full and not full_floating:
            return
        for d, dim in enumerate(DIMENSIONS):
            if dim not in RACK_DIMENSIONS:
                continue
            u = unit[d] * n_racks
            share = sum(problem.groups[k].demand[d] for k in full) / u + pulp.lpSum(
                problem.groups[k].demand[d] / u * self.y[k, j] for k in full_floating
            )
            for l, rack in enumerate(self.racks):
                in_rack = pulp.lpSum(self.units[i].capacity[d] / unit[d] * m for i, m in members
                                     if self.units[i].rack == rack)
                new = pulp.lpSum(problem.new_broker[d] / unit[d] * var for (jj, ll), var in self.v.items()
                                 if jj == j and ll == l)
                prob += share <= headroom_limit(in_rack + new, limits.headroom[d]), f"rack_capacity_p{j}_r{l}_d{d}"

    def _conflicts(self) -> None:
        prob, problem = self.prob, self.problem
        tenants = sorted({t for pair in problem.conflicts for t in pair})
        if not tenants:
            return
        index = {t: m for m, t in enumerate(tenants)}
        presence: dict[tuple[int, int], pulp.LpAffineExpression | int] = {}
        for m, tenant in enumerate(tenants):
            members = [k for k, g in enumerate(problem.groups) if g.tenant == tenant]
            for j in range(len(self.pools)):
                terms = [self.in_pool(k, j) for k in members]
                if any(isinstance(t, int) and t == 1 for t in terms):
                    presence[m, j] = 1
                elif any(not isinstance(t, int) for t in terms):
                    var = prob.add_variable(f"t_n{m}_p{j}", cat=pulp.LpBinary)
                    for n, t in enumerate(terms):
                        if not isinstance(t, int):
                            prob += var >= t, f"tenant_n{m}_p{j}_{n}"
                    presence[m, j] = var
        for pair in sorted(problem.conflicts, key=sorted):
            a, b = sorted(pair)
            if a not in index or b not in index or a == b:
                continue
            for j in range(len(self.pools)):
                pa, pb = presence.get((index[a], j), 0), presence.get((index[b], j), 0)
                if isinstance(pa, int) and isinstance(pb, int):
                    if pa + pb > 1:
                        raise InputError(
                            f"tenants {a!r} and {b!r} must not share a pool but the policy puts both in {self.pools[j]!r}"
                        )
                    continue
                prob += pa + pb <= 1, f"conflict_n{index[a]}_n{index[b]}_p{j}"

    def tie_breakers(self) -> pulp.LpAffineExpression:
        return self.peak + USED_WEIGHT * self.used / self.n_brokers

    def solve(self, objective, solver: pulp.LpSolver) -> _Stage:
        self.prob.setObjective(objective)
        self.prob.solve(solver)
        status = pulp.LpStatus[self.prob.status]
        solution = pulp.LpSolution[self.prob.sol_status]
        value = pulp.value(self.prob.objective) if self.prob.sol_status in (1, 2) else None
        bound, gap = value, 0.0 if value is not None else None
        model = getattr(self.prob, "solverModel", None)
        if model is not None and hasattr(model, "getInfo"):
            info = model.getInfo()
            if math.isfinite(info.mip_dual_bound):
                bound = float(info.mip_dual_bound)
            if math.isfinite(info.mip_gap):
                gap = float(info.mip_gap)
        elif self.prob.sol_status == 2:
            bound, gap = None, None
        if model is not None and hasattr(model, "getModelStatus"):
            limited = model.getModelStatus() == highspy.HighsModelStatus.kTimeLimit
        else:  # CBC does not say which limit stopped it
            limited = self.prob.sol_status == pulp.LpSolutionIntegerFeasible
        return _Stage(solver.name, status, solution, value, bound, gap, limited)

    def _report(self, stage: _Stage) -> SolverReport:
        def rounded(v: float | None) -> float | None:
            return None if v is None else round(v, 9)

        return SolverReport(
            name=stage.name, status=stage.status, solution=stage.solution, objective=rounded(stage.objective),
            bound=rounded(stage.bound), gap=rounded(stage.gap),
        )

    def unsolved(self, stage: _Stage, seconds: float) -> PoolSolution:
        return PoolSolution({}, {}, {}, 0.0, self._report(stage), seconds=seconds, time_limited=stage.limited)

    def solution(self, stage: _Stage) -> PoolSolution:
        problem = self.problem
        brokers: dict[int, str | None] = {}
        for i, b in enumerate(problem.brokers):
            pools = [p for j, p in enumerate(self.pools) if _on(self.member(i, j))]
            brokers[b.broker_id] = pools[0] if pools else None
        for c in range(self.n_real, len(self.units)):  # class counts go to the class's unplaced brokers, lowest first
            unplaced = [problem.brokers[i].broker_id for i in self.members_of[c]
                        if brokers[problem.brokers[i].broker_id] is None]
            for j, pool in enumerate(self.pools):
                for _ in range(round(self.x[c, j].value() or 0)):
                    brokers[unplaced.pop(0)] = pool
        groups: dict[str, str] = {}
        for k, g in enumerate(problem.groups):
            chosen = [p for j, p in enumerate(self.pools) if _on(self.in_pool(k, j))]
            if chosen:
                groups[g.name] = chosen[0]
        added = {
            pool: {self.racks[l]: round(var.value() or 0) for (jj, l), var in sorted(self.v.items()) if jj == j
                   and round(var.value() or 0) > 0}
            for j, pool in enumerate(self.pools)
        }
        kept = sum(size for g in problem.groups if g.name in groups
                   for broker, size in g.bytes_on.items() if brokers.get(broker) == groups[g.name])
        self._check(brokers, groups, added)
        return PoolSolution(brokers, groups, added, kept, self._report(stage))

    def _check(self, brokers: Mapping[int, str | None], groups: Mapping[str, str],
               added: Mapping[str, Mapping[str, int]]) -> None:
        """Post-conditions of a solution before anyone uses it (a solver may return a wrong one).

        Raises
        ------
        SolverError
            A group in no pool or several, a group outside its candidates, a pinned broker elsewhere, a
            non-integral binary, conflicting tenants sharing a pool, or a pool short of the brokers or the usable
            capacity `pools.pool_rules` requires (its brokers and the virtual ones, less the tolerated failures).
        """
        problem = self.problem
        for k, g in enumerate(problem.groups):
            on = [v for j in range(len(self.pools)) if not _is_zero(v := self.in_pool(k, j))]
            values = [v if isinstance(v, int) else (v.value() or 0.0) for v in on]
            if any(min(abs(x), abs(1 - x)) > _INTEGRALITY for x in values):
                raise SolverError(f"the solver returned a fractional pool choice for group {g.name!r}: {values}")
            chosen = [self.pools[j] for j in range(len(self.pools)) if _on(self.in_pool(k, j))]
            if len(chosen) != 1:
                raise SolverError(f"the solver put group {g.name!r} in {len(chosen)} pools ({', '.join(chosen)})")
            if chosen[0] not in g.candidates:
                raise SolverError(f"the solver put group {g.name!r} in pool {chosen[0]!r}, not one of its candidates")
        pinned = {b.broker_id: b.pinned for b in problem.brokers if b.pinned is not None}
        for broker, pool, _ in misplaced_pins(pinned, brokers):
            raise SolverError(f"the solver moved broker {broker}, pinned to pool {pool!r}")
        tenants: dict[str, set[str]] = {}
        for g in problem.groups:
            if g.tenant is not None:
                tenants.setdefault(g.tenant, set()).add(groups[g.name])
        for a, b, shared in shared_tenant_pools(tenants, problem.conflicts):
            raise SolverError(f"the solver put tenants {a!r} and {b!r}, which must not share, in {shared}")
        unit = _unit_capacity(problem)
        for pool, limits in sorted(problem.pools.items()):
            new = sum(added.get(pool, {}).values())
            capacities = [b.capacity for b in problem.brokers if brokers.get(b.broker_id) == pool]
            capacities += [problem.new_broker] * new
            members = [g for g in problem.groups if groups[g.name] == pool]
            need = brokers_required(limits, max((g.max_rf for g in members), default=0))
            if len(capacities) < need:
                raise SolverError(f"the solver gave pool {pool!r} {len(capacities)} broker(s), it needs {need}")
            for d, dim in enumerate(DIMENSIONS):
                usable = usable_capacity((c[d] for c in capacities), limits.tolerated_failures)
                demand = sum(g.demand[d] for g in members)
                if over_limit(demand / unit[d], limits.headroom[d] * usable / unit[d]):
                    raise SolverError(f"the solver left pool {pool!r} {dim} demand {demand:.6g} over "
                                      f"{limits.headroom[d]:.0%} of its usable {usable:.6g}")


def _units(problem: PoolProblem, aggregate: bool) -> tuple[list[BrokerSpec], list[list[int]]]:
    """The model's broker units and the broker indices each stands for.

    Full model: one unit per broker. Aggregated (stage 1): pinned brokers alone, free brokers merged into one
    unit per (rack, capacity); every constraint but the moved bytes depends only on those counts.
    """
    if not aggregate:
        return list(problem.brokers), [[i] for i in range(len(problem.brokers))]
    units: list[BrokerSpec] = []
    members: list[list[int]] = []
    classes: dict[tuple, int] = {}
    for i, b in enumerate(problem.brokers):
        if b.pinned is not None:
            units.append(b)
            members.append([i])
            continue
        key = (b.rack or "", b.capacity)
        if key not in classes:
            classes[key] = len(units)
            units.append(BrokerSpec(-1, b.rack, b.capacity))
            members.append([])
        members[classes[key]].append(i)
    return units, members


def _is_zero(term: pulp.LpVariable | int) -> bool:
    return isinstance(term, int) and term == 0


def _candidate_pools(problem: PoolProblem, pool_index: Mapping[str, int], share: float) -> dict[int, set[int]]:
    """Pools each free broker may join by name in stage 2: those whose topics hold more than ``share`` of its bytes.

    Elsewhere the model counts the broker as keeping nothing, and brokers of one (rack, capacity) class are then
    interchangeable, so it places them by class count (``x_n``). Every plan stays possible; the moved bytes are
    overstated by at most ``share`` of all replica bytes (not at all with ``share`` 0).
    """
    bytes_in: dict[int, dict[int, float]] = {}
    for g in problem.groups:
        for broker, size in g.bytes_on.items():
            row = bytes_in.setdefault(broker, {})
            for p in g.candidates:
                row[pool_index[p]] = row.get(pool_index[p], 0.0) + size
    out = {}
    for i, b in enumerate(problem.brokers):
        if b.pinned is None:
            row = bytes_in.get(b.broker_id, {})
            total = sum(row.values())
            out[i] = {j for j, size in row.items() if size > 0 and size >= share * total}
    return out


#: How far from 0 or 1 a binary's value may be (HiGHS's default integrality tolerance is 1e-6).
_INTEGRALITY = 1e-5


def _on(term: pulp.LpAffineExpression | int) -> bool:
    if isinstance(term, int):
        return term == 1
    return (term.value() or 0.0) > 0.5


def _unit_capacity(problem: PoolProblem) -> Vector:
    """The median broker capacity per dimension (1 where it is 0): the unit rows are scaled by."""
    caps = [b.capacity for b in problem.brokers] or [problem.new_broker]
    medians = (sorted(c[d] for c in caps)[len(caps) // 2] for d in range(len(DIMENSIONS)))
    return tuple(m if m > 0 else 1.0 for m in medians)  # type: ignore[return-value]
