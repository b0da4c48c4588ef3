"""The plan (*contract*): which pool every broker and topic belongs to, and every partition's target replicas.

``plan.json``::

    {"version": 1, "cluster": "prod-eu", "horizon_days": 90,
     "brokers_before": {"1": "payments", "2": null}, "brokers": {"1": "payments", "2": "shared"},
     "topics": {"orders": "shared"},
     "partitions": [{"topic": "orders", "partition": 0, "old_replicas": [1, 2, 3],
                     "replicas": [4, 2, 3], "size_bytes": 1048576}],
     "moved_bytes": 1048576, "brokers_to_add": {"payments": 0, "shared": 0},
     "solver": {"name": "HiGHS", "status": "Optimal", "solution": "Optimal Solution Found",
                "objective": 1.0, "bound": 1.0, "gap": 0.0},
     "utilisation": {"brokers": {"1": {"nw_in": {"capacity": 1.25e8, "now": 1e7, "before": 1.2e7, "after": 1.1e7}}},
                     "pools": {"shared": {"disk": {"capacity": 8e12, "capacity_with_added": 8e12,
                                                   "demand_now": 1e12, "demand_forecast": 1.4e12,
                                                   "headroom": 0.7}}}},
     "warnings": [],
     "placement": {"shared": {"seed_bytes": 1048576, "moved_bytes": 1048576, "extra_bytes": 0,
                              "leader_changes": 0, "status": "seed", "gap": 0.0, "candidates": 0}}}

``partitions`` lists the target of *every* partition (``replicas``, first = preferred leader) with its
current ``old_replicas``; a partition moves when the two differ (in memory, `Plan.partitions` is a tuple of
`PartitionMove` or, in the planner's plans, a `PartitionTable`: the same sequence held as columns, whose moves
alone become objects; plan.json is the same bytes from either). Broker loads are at forecast
(``before`` = current placement, ``after`` = target placement; ``now`` = current placement, current load);
``horizon_days`` is the forecast horizon the plan is for (the policy's, or ``--horizon-days``).
``planned_brokers`` (present only when the plan buys brokers) lists the brokers still to buy that targets name
(`pools.new_brokers.PlannedBroker`: ``id``, ``rack``, ``pool``, ``capacity``): each is in ``brokers`` with its pool
and in ``brokers_before`` as ``null``, and each pool has as many as ``brokers_to_add`` says.
``operation`` is present only in the plan of a day-2 operation (`planner.operations`): its ``name``
(``rebalance``, ``add``, ``decommission``, ``demote``, ``replace``, ``replication-factor``), the ``arguments``
asked, the balance ``band``, ``replication_factors`` (topic → new factor, for ``replication-factor`` only),
``moved_bytes``, ``lower_bound_bytes`` (what any placement meeting the goal must copy) and ``balance`` (per
touched pool and dimension, ``before`` and ``after``: ``mean`` utilisation, ``max``/``min`` over the mean,
``outside_band``) and, for ``decommission`` and ``replace``, ``drained``: the brokers every replica leaves,
from which a partition whose only unhealthy replica lies there is evacuated (`pools.health`).
``placement`` says per pool what placing it cost (`planner.placement.minimal_move.PoolPlacement`): the bytes
the pool's new replicas had to copy (``seed_bytes``), the bytes copied in all (``moved_bytes``; the difference,
``extra_bytes``, relieved brokers over headroom and gave joining brokers their fair share), preferred-leader
changes, and the engine's status and MIP gap.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal, overload

import numpy as np
from pydantic import Field

from pools.atomic import dump_json, write_text
from pools.errors import InputError
from pools.files import parse_json, read_text
from pools.input_limits import INT64_MAX, MAX_BROKER_ID, MAX_BROKERS, MAX_HORIZON_DAYS, MAX_PARTITIONS_PER_TOPIC
from pools.new_brokers import PlannedBroker
from pools.pool_rules import headroom_limit, over_limit
from pools.schema import BrokerId, ByteCount, Finite, Name, NonNegFinite, Strict, validate
from pools.snapshot import DIMENSIONS, Capacity

__all__ = ["copy_source", "ReasonRule", "REASON_RULES", "LOAD_RULES", "Reason", "PartitionMove", "PartitionTable",
           "BrokerLoad",
           "PoolLoad", "Utilisation", "SolverReport", "Plan", "load_plan", "save_plan", "plan_to_json",
           "plan_from_dict"]

PLAN_VERSION = 1


class ReasonRule(StrEnum):
    """Why a partition moves (`Reason.rule`): the one vocabulary of plan.json, the engine, ``explain`` and the
    runbook, in the order the first that applies names a move (see `Reason`)."""

    REPLICATION_FACTOR = "replication_factor"
    EVACUATE = "evacuate"
    DEMOTE = "demote"
    ISOLATE = "isolate"
    RACK_SPREAD = "rack_spread"
    RELIEVE = "relieve"
    BALANCE = "balance"
    FILL = "fill"

    @property
    def names_load(self) -> bool:
        """True for the rules that name a broker's load (``broker``, ``dimension``, ``bound``, ``without``)."""
        return self in LOAD_RULES

    @property
    def names_brokers(self) -> bool:
        """True for the rules that name the brokers a replica or the leadership leaves (``brokers``)."""
        return self in (ReasonRule.EVACUATE, ReasonRule.DEMOTE, ReasonRule.ISOLATE)


#: Every `ReasonRule`, in order (the tuple plan.json's schema and older callers know).
REASON_RULES = tuple(ReasonRule)
#: The rules that name a broker's load: over its limit, above or below its fair-share band.
LOAD_RULES = (ReasonRule.RELIEVE, ReasonRule.BALANCE, ReasonRule.FILL)
#: The dimensions a load reason names: `DIMENSIONS`, leader count and leaders' bytes-in (the engine's
#: `planner.placement.engine.ENGINE_DIMENSIONS`).
REASON_DIMENSIONS = (*DIMENSIONS, "leaders", "leader_nw_in")


def copy_source(old_replicas: Sequence[int], leader: int | None) -> int | None:
    """The broker that serves a moved partition's copies: its current ``leader`` when a replica, else the first one.

    Followers fetch from the leader, so that broker's outbound network carries the move (``None`` when the
    partition has no replica yet).

    >>> copy_source((1, 2), 2), copy_source((1, 2), None), copy_source((1, 2), 7)
    (2, 1, 1)
    """
    if leader is not None and leader in old_replicas:
        return leader
    return old_replicas[0] if old_replicas else None


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a partition moves: the rule that undoing this move alone (every other move kept) would break.

    ``rule`` is a `ReasonRule` (a plain string naming one is read as it):

    - ``replication_factor``: the operation changes the partition's replication factor;
    - ``evacuate``: ``brokers`` (drained by the operation, or unhealthy) give up their replica;
    - ``demote``: ``brokers`` (one: the former preferred leader, demoted by the operation) give up leadership;
    - ``isolate``: ``brokers`` are outside the topic's pool;
    - ``rack_spread``: the current replicas span fewer than min(RF, racks of the pool) racks
      (`pools.pool_rules.spans_racks`);
    - ``relieve``: ``broker`` would be over its capacity × headroom (``bound``) in ``dimension``;
    - ``balance`` / ``fill``: ``broker`` would be above / below its fair-share band (edge ``bound``) in
      ``dimension``.

    ``without`` is the broker's load in ``dimension`` (at the plan's forecast) were the move undone.
    ``leader_only``: the replicas stay, only the preferred leader changes (nothing is copied). The placement
    engine (`planner.placement.engine.prune_moves`) returns this type too, its ``broker`` then a position in
    the pool until `planner.placement.minimal_move` names the broker.

    >>> Reason("relieve", broker=4, dimension="nw_in", bound=70.0, without=82.5).describe()
    'relieves broker 4: without it its nw_in would be 82.5, over its limit 70'
    >>> Reason("relieve", broker=4, dimension="nw_in", bound=70.0, without=82.5).describe(kept=True)
    'broker 4 nw_in 82.5, above 70'
    >>> Reason("isolate", brokers=(7,)).describe()
    'isolates the topic: broker 7 is outside its pool'
    """

    rule: ReasonRule
    broker: int | None = None
    dimension: str | None = None
    bound: float | None = None
    without: float | None = None
    brokers: tuple[int, ...] = ()
    leader_only: bool = False

    def __post_init__(self) -> None:  # 9 significant digits, as plan.json holds them
        object.__setattr__(self, "rule", ReasonRule(self.rule))
        for name in ("bound", "without"):
            object.__setattr__(self, name, _round(getattr(self, name)))

    def to_dict(self) -> dict[str, Any]:
        """The ``reason`` object of plan.json (only the fields that apply)."""
        out: dict[str, Any] = {"rule": self.rule.value}
        if self.broker is not None:
            out |= {"broker": self.broker, "dimension": self.dimension, "bound": self.bound, "without": self.without}
        if self.brokers:
            out["brokers"] = list(self.brokers)
        if self.leader_only:
            out["leader_only"] = True
        return out

    def describe(self, *, kept: bool = False) -> str:
        """One line for an operator: what the move does (``poolplan explain``, the runbook), or, ``kept``, what
        keeping the current replicas would break (``explain``'s first alternative). The one text of every rule."""
        ids = ", ".join(map(str, self.brokers))
        many = "s" if len(self.brokers) > 1 else ""
        r = ReasonRule
        if kept:
            if self.rule.names_load:
                side = "below" if self.rule is r.FILL else "above"
                return f"broker {self.broker} {self.dimension} {_g(self.without)}, {side} {_g(self.bound)}"
            return {r.REPLICATION_FACTOR: "the replication factor the operation sets",
                    r.EVACUATE: f"replicas stay on broker(s) {ids}",
                    r.DEMOTE: f"broker {ids}, which the operation demotes, stays the preferred leader",
                    r.ISOLATE: f"replicas stay outside the pool on broker(s) {ids}",
                    r.RACK_SPREAD: "the replicas share racks"}[self.rule]
        load = f"broker {self.broker}: without it its {self.dimension} would be {_g(self.without)}"
        text = {
            r.REPLICATION_FACTOR: "changes the replication factor",
            r.EVACUATE: f"evacuates broker{many} {ids} (drained or unhealthy)",
            r.DEMOTE: f"moves leadership off broker {ids} (demoted)",
            r.ISOLATE: f"isolates the topic: broker{many} {ids} {'are' if many else 'is'} outside its pool",
            r.RACK_SPREAD: "repairs the rack spread: the current replicas share racks",
            r.RELIEVE: f"relieves {load}, over its limit {_g(self.bound)}",
            r.BALANCE: f"balances {load}, above its fair-share band ({_g(self.bound)})",
            r.FILL: f"fills broker {self.broker} to its fair share: without it its {self.dimension} would be "
                    f"{_g(self.without)}, below its band ({_g(self.bound)})",
        }[self.rule]
        return ("leader-only reorder (copies nothing): " if self.leader_only else "") + text


def _round(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.9g}")


def _g(value: float | None) -> str:
    return f"{value:.6g}" if value is not None else "?"


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """A partition's current and target replica lists (first = preferred leader), its size and, for a partition
    that moves, why (`Reason`; None in a plan written without reasons)."""

    topic: str
    partition: int
    old_replicas: tuple[int, ...]
    replicas: tuple[int, ...]
    size_bytes: int = 0
    reason: Reason | None = None

    @property
    def changed(self) -> bool:
        """True when the replica list (set or order) changes."""
        return self.old_replicas != self.replicas

    @property
    def adding(self) -> tuple[int, ...]:
        """Brokers that must copy the partition (in the target, not currently a replica)."""
        old = set(self.old_replicas)
        return tuple(b for b in self.replicas if b not in old)

    @property
    def removing(self) -> tuple[int, ...]:
        """Brokers that drop the partition."""
        new = set(self.replicas)
        return tuple(b for b in self.old_replicas if b not in new)

    @property
    def moved_bytes(self) -> int:
        """Bytes copied to new replicas."""
        return self.size_bytes * len(self.adding)


def _replica_rows(rows: np.ndarray, count: np.ndarray, form: Callable[[Iterable[Any]], Any]) -> list:
    """``form`` of each row's first ``count`` broker ids (``tuple``; ``", ".join`` of their text: a JSON list's
    items), column by column: no Python list per row (a million of them would wake the cyclic garbage collector
    over the whole heap)."""
    out = np.empty(len(rows), dtype=object)
    if form is not tuple:  # each id's text once
        ids = np.unique(rows)
        rows = np.array(list(map(str, ids.tolist())), dtype=object)[np.searchsorted(ids, rows)]
    for k in np.unique(count).tolist():
        at = np.flatnonzero(count == k)
        out[at] = list(map(form, zip(*(rows[at, j].tolist() for j in range(k))))) if k else [form(())] * len(at)
    return out.tolist()


def _rows(replicas: np.ndarray, n: int) -> np.ndarray:
    """``replicas`` as an (n, width) int64 array (an empty table has width 0)."""
    replicas = np.asarray(replicas, dtype=np.int64)
    return replicas.reshape(n, -1) if n else replicas.reshape(0, replicas.shape[-1] if replicas.ndim == 2 else 0)


def _padded(rows: np.ndarray, width: int) -> np.ndarray:
    """``rows`` (broker ids, -1 padding) widened to ``width`` columns."""
    if rows.shape[1] >= width:
        return rows
    return np.hstack((rows, np.full((len(rows), width - rows.shape[1]), -1, dtype=np.int64)))


class PartitionTable(Sequence[PartitionMove]):
    """Every partition of a plan as columns, in (topic, partition) order: a plan's ``partitions`` without a
    `PartitionMove` per partition. Indexing and iterating build `PartitionMove`s on demand; `changed`, `copied`
    and `moves` work on the arrays, so that only the partitions that move become Python objects.

    ``topics`` are sorted names, ``topic`` each row's position in them, ``partition`` its number, ``old`` and
    ``new`` its current and target replicas (broker ids, -1 padding at the end of each row), ``size`` its bytes
    and ``reasons`` the `Reason` of each row that moves (by row).

    >>> t = PartitionTable(("a",), np.array([0, 0]), np.array([1, 0]), np.array([[1, 2], [1, 2]]),
    ...                    np.array([[1, 3], [1, 2]]), np.array([5, 7]))
    >>> [(m.partition, m.replicas) for m in t], [m.partition for m in t.moves], int(t.copied.sum())
    ([(0, (1, 2)), (1, (1, 3))], [1], 5)
    """

    def __init__(self, topics: Sequence[str], topic: np.ndarray, partition: np.ndarray, old: np.ndarray,
                 new: np.ndarray, size: np.ndarray, reasons: Mapping[int, Reason] | None = None) -> None:
        if list(topics) != sorted(topics):
            raise ValueError("PartitionTable: topics must be sorted names")
        order = np.lexsort((partition, topic))
        if np.any(order != np.arange(len(order))):
            if reasons:
                raise ValueError("PartitionTable: reasons need rows in (topic, partition) order")
            topic, partition, old, new, size = topic[order], partition[order], old[order], new[order], size[order]
        old, new = _rows(old, len(order)), _rows(new, len(order))
        width = max(old.shape[1], new.shape[1])
        self.topics = tuple(topics)
        self.topic = np.asarray(topic, dtype=np.int64)
        self.partition = np.asarray(partition, dtype=np.int64)
        self.old, self.new = _padded(old, width), _padded(new, width)
        self.size = np.asarray(size, dtype=np.int64)
        self.reasons: Mapping[int, Reason] = dict(reasons or {})

    @classmethod
    def from_moves(cls, moves: Sequence[PartitionMove]) -> PartitionTable:
        """The table of ``moves`` (a plan's partitions; reasons kept)."""
        if isinstance(moves, PartitionTable):
            return moves
        moves = sorted(moves, key=lambda m: (m.topic, m.partition))
        names = sorted({m.topic for m in moves})
        code = {t: i for i, t in enumerate(names)}
        width = max((max(len(m.old_replicas), len(m.replicas)) for m in moves), default=0)
        old = np.full((len(moves), width), -1, dtype=np.int64)
        new = np.full((len(moves), width), -1, dtype=np.int64)
        for i, m in enumerate(moves):
            old[i, :len(m.old_replicas)] = m.old_replicas
            new[i, :len(m.replicas)] = m.replicas
        return cls(names, np.array([code[m.topic] for m in moves], dtype=np.int64),
                   np.array([m.partition for m in moves], dtype=np.int64), old, new,
                   np.array([m.size_bytes for m in moves], dtype=np.int64),
                   {i: m.reason for i, m in enumerate(moves) if m.reason is not None})

    def with_reasons(self, reasons: Mapping[int, Reason]) -> PartitionTable:
        """The same partitions with ``reasons`` (row → `Reason`) in place of the table's."""
        return PartitionTable(self.topics, self.topic, self.partition, self.old, self.new, self.size, reasons)

    @cached_property
    def changed(self) -> np.ndarray:
        """(P,) bool: the replica list (set or order) changes (`PartitionMove.changed`)."""
        return (self.old != self.new).any(axis=1)

    @cached_property
    def copied(self) -> np.ndarray:
        """(P,) bytes copied to new replicas (`PartitionMove.moved_bytes`)."""
        new = (self.new >= 0) & ~(self.new[:, :, None] == self.old[:, None, :]).any(axis=2)
        return self.size * new.sum(axis=1)

    @property
    def moves(self) -> tuple[PartitionMove, ...]:
        """The partitions that move, in order."""
        return tuple(self._moving.values())

    @cached_property
    def _moving(self) -> dict[int, PartitionMove]:
        """The `PartitionMove` of each row that moves, built once: the same objects wherever they are read."""
        rows = np.flatnonzero(self.changed)
        return dict(zip(rows.tolist(), self._build(rows)))

    def rows(self, rows: np.ndarray) -> Iterator[PartitionMove]:
        """The `PartitionMove` of each of ``rows``, in their order."""
        moving = self._moving
        still = self._build(rows[~self.changed[rows]])
        for i in rows.tolist():
            m = moving.get(i)
            yield m if m is not None else next(still)

    def _build(self, rows: np.ndarray) -> Iterator[PartitionMove]:
        """The `PartitionMove` of each of ``rows``, built from the columns in bulk."""
        names, reasons = self.topics, self.reasons
        columns = zip(rows.tolist(), self.topic[rows].tolist(), self.partition[rows].tolist(),
                      _replica_rows(self.old[rows], self.old_count[rows], tuple),
                      _replica_rows(self.new[rows], self.new_count[rows], tuple), self.size[rows].tolist())
        for i, t, p, old, new, size in columns:
            yield PartitionMove(names[t], p, old, new, size, reasons.get(i))

    def rows_of(self, keys: Sequence[tuple[str, int]]) -> np.ndarray:
        """The row of each (topic, partition) of ``keys``, -1 where the table has none."""
        code = {t: i for i, t in enumerate(self.topics)}
        wanted = np.array([[code.get(t, -1), p] for t, p in keys], dtype=np.int64).reshape(-1, 2)
        flat = self.topic * (1 << 32) + self.partition
        at = np.minimum(np.searchsorted(flat, wanted[:, 0] * (1 << 32) + wanted[:, 1]), max(len(flat) - 1, 0))
        hit = (wanted[:, 0] >= 0) & (len(flat) > 0) & (flat[at] == wanted[:, 0] * (1 << 32) + wanted[:, 1])
        return np.where(hit, at, -1)

    def __len__(self) -> int:
        return len(self.topic)

    @overload
    def __getitem__(self, i: int) -> PartitionMove: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[PartitionMove, ...]: ...

    def __getitem__(self, i: int | slice) -> PartitionMove | tuple[PartitionMove, ...]:
        if isinstance(i, slice):
            return tuple(self.rows(np.arange(*i.indices(len(self)))))
        return next(self.rows(np.array([range(len(self))[i]])))

    def __iter__(self) -> Iterator[PartitionMove]:
        for start in range(0, len(self), 65536):  # in slices: a million objects never exist at once
            yield from self.rows(np.arange(start, min(start + 65536, len(self))))

    @cached_property
    def old_count(self) -> np.ndarray:
        """(P,) current replica count."""
        return (self.old >= 0).sum(axis=1)

    @cached_property
    def new_count(self) -> np.ndarray:
        """(P,) target replica count."""
        return (self.new >= 0).sum(axis=1)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (tuple, PartitionTable)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PartitionTable({len(self)} partitions, {int(self.changed.sum())} moving)"


@dataclass(frozen=True, slots=True)
class BrokerLoad:
    """One broker's figures in one dimension (``utilisation.brokers``): its ``capacity`` and its load ``now``
    (current placement, current load), ``before`` (current placement) and ``after`` (the target), these two at
    the plan's forecast. ``None``: the plan does not say."""

    capacity: float | None = None
    now: float | None = None
    before: float | None = None
    after: float | None = None


@dataclass(frozen=True, slots=True)
class PoolLoad:
    """One pool's figures in one dimension (``utilisation.pools``): ``capacity`` of its brokers today,
    ``capacity_with_added`` (with the brokers to buy), ``capacity_usable`` (less the tolerated failures,
    `pools.pool_rules.usable_capacity`), ``demand_now`` and ``demand_forecast`` of its topics, its ``headroom``
    (the limit: the usable fraction of capacity) and its brokers' load before and after the plan. ``None``: the
    plan does not say (plans written before a field existed)."""

    capacity: float | None = None
    capacity_with_added: float | None = None
    capacity_usable: float | None = None
    demand_now: float | None = None
    demand_forecast: float | None = None
    headroom: float | None = None
    load_before: float | None = None
    load_after: float | None = None


@dataclass(frozen=True)
class Utilisation:
    """plan.json's ``utilisation``, typed: per broker (`BrokerLoad`) and per pool (`PoolLoad`), per dimension.

    A section is ``None`` when the plan has no such key (written back as absent, so a plan's bytes round-trip);
    the accessors read it as empty.

    >>> u = Utilisation.from_dict({"brokers": {"1": {"disk": {"capacity": 10.0, "after": 8.0}}},
    ...                            "pools": {"a": {"disk": {"headroom": 0.7}}}})
    >>> u.broker(1, "disk"), u.pool("a", "disk").headroom, u.pool("b", "disk")
    (BrokerLoad(capacity=10.0, now=None, before=None, after=8.0), 0.7, None)
    >>> u.to_dict()
    {'brokers': {'1': {'disk': {'capacity': 10.0, 'after': 8.0}}}, 'pools': {'a': {'disk': {'headroom': 0.7}}}}
    """

    brokers: Mapping[int, Mapping[str, BrokerLoad]] | None = None
    pools: Mapping[str, Mapping[str, PoolLoad]] | None = None

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Utilisation:
        """From plan.json's form (keys as there: broker ids as strings); every cell's keys are fields of
        `BrokerLoad` or `PoolLoad` (`plan_from_dict` has checked them)."""
        brokers, pools = doc.get("brokers"), doc.get("pools")
        return cls(
            None if brokers is None else {int(b): {d: BrokerLoad(**cell) for d, cell in row.items()}
                                          for b, row in brokers.items()},
            None if pools is None else {p: {d: PoolLoad(**cell) for d, cell in row.items()}
                                        for p, row in pools.items()},
        )

    def to_dict(self) -> dict[str, Any]:
        """plan.json's form: the sections present, each cell's known fields."""
        out: dict[str, Any] = {}
        if self.brokers is not None:
            out["brokers"] = {str(b): {d: _cell(c) for d, c in row.items()} for b, row in self.brokers.items()}
        if self.pools is not None:
            out["pools"] = {p: {d: _cell(c) for d, c in row.items()} for p, row in self.pools.items()}
        return out

    def broker(self, broker: int, dimension: str) -> BrokerLoad | None:
        """``broker``'s figures in ``dimension`` (None: the plan has none)."""
        return (self.brokers or {}).get(broker, {}).get(dimension)

    def pool(self, pool: str | None, dimension: str) -> PoolLoad | None:
        """``pool``'s figures in ``dimension`` (None: no pool, or the plan has none)."""
        return (self.pools or {}).get(pool, {}).get(dimension) if pool is not None else None

    @property
    def broker_ids(self) -> tuple[int, ...]:
        """The brokers with figures, by id."""
        return tuple(sorted(self.brokers or {}))

    @property
    def pool_names(self) -> tuple[str, ...]:
        """The pools with figures, by name."""
        return tuple(sorted(self.pools or {}))


def _cell(cell: BrokerLoad | PoolLoad) -> dict[str, float]:
    return {f.name: v for f in fields(cell) if (v := getattr(cell, f.name)) is not None}


@dataclass(frozen=True, slots=True)
class SolverReport:
    """What the MILP solver said: status, PuLP's solution status, objective, best bound and relative gap.

    No wall time: the same inputs give the same plan bytes on any machine and under any load (the time goes to
    the console).
    """

    name: str
    status: str
    solution: str
    objective: float | None
    bound: float | None
    gap: float | None


@dataclass(frozen=True)
class Plan:
    """A pool plan; see the module docstring for the file format."""

    cluster: str
    brokers_before: Mapping[int, str | None]
    brokers: Mapping[int, str | None]
    topics: Mapping[str, str]
    partitions: Sequence[PartitionMove]  # a tuple, or a `PartitionTable` (the planner's: columns, in order)
    brokers_to_add: Mapping[str, int]
    solver: SolverReport
    utilisation: Utilisation = field(default_factory=Utilisation)
    warnings: tuple[str, ...] = ()
    horizon_days: int | None = None
    placement: Mapping[str, Any] = field(default_factory=dict)
    operation: Mapping[str, Any] = field(default_factory=dict)
    planned_brokers: tuple[PlannedBroker, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.utilisation, Utilisation):  # plan.json's form, as a mapping
            object.__setattr__(self, "utilisation", Utilisation.from_dict(self.utilisation))
        if not isinstance(self.partitions, PartitionTable):  # a table is in order already
            object.__setattr__(self, "partitions", tuple(sorted(self.partitions, key=lambda m: (m.topic, m.partition))))
        object.__setattr__(self, "planned_brokers", tuple(sorted(self.planned_brokers, key=lambda b: b.id)))

    @property
    def drained(self) -> tuple[int, ...]:
        """Brokers every replica leaves (a ``decommission`` or ``replace`` operation's ``drained``), sorted."""
        return tuple(sorted(self.operation.get("drained", ())))

    @property
    def operation_name(self) -> str | None:
        """The day-2 operation the plan is of (``operation.name``; None: a pool plan)."""
        return self.operation.get("name")

    @property
    def replication_factors(self) -> Mapping[str, int]:
        """Topic → the replication factor a ``replication-factor`` operation sets
        (``operation.replication_factors``)."""
        return dict(self.operation.get("replication_factors", {}))

    @property
    def demoted(self) -> tuple[int, ...]:
        """Brokers leadership leaves (a ``demote`` operation's ``demoted``), sorted."""
        return tuple(sorted(self.operation.get("demoted", ())))

    @property
    def moved_bytes(self) -> int:
        """Bytes the plan copies to new replicas."""
        if isinstance(self.partitions, PartitionTable):
            return int(self.partitions.copied.sum())
        return sum(m.moved_bytes for m in self.partitions if m.changed)

    def pool_headroom(self, pool: str | None, dimension: str) -> float | None:
        """``pool``'s headroom in ``dimension`` as the plan states it (None: no pool, or not stated)."""
        cell = self.utilisation.pool(pool, dimension)
        return None if cell is None else cell.headroom

    def broker_limit(self, broker: int, dimension: str) -> float | None:
        """What ``broker`` may carry in ``dimension`` after the plan: its pool's headroom × its capacity
        (`pools.pool_rules.headroom_limit`); None when the plan states neither, or no capacity (0: not known)."""
        headroom = self.pool_headroom(self.brokers.get(broker), dimension)
        cell = self.utilisation.broker(broker, dimension)
        if headroom is None or cell is None or not cell.capacity:
            return None
        return headroom_limit(cell.capacity, headroom)

    def broker_over_limit(self, broker: int, dimension: str, load: float | None) -> bool:
        """Whether ``load`` is over ``broker``'s limit in ``dimension`` (`broker_limit`; `pools.pool_rules.over_limit`
        with its tolerance); False when either is not known."""
        limit = self.broker_limit(broker, dimension)
        return load is not None and limit is not None and over_limit(load, limit)

    def over_limit_before(self) -> frozenset[int]:
        """Brokers over their limit (`broker_over_limit`) in some dimension with the current placement at the forecast
        (``before``): what the plan must relieve."""
        return frozenset(b for b in self.utilisation.broker_ids
                         for d, cell in (self.utilisation.brokers or {})[b].items()
                         if self.broker_over_limit(b, d, cell.before))

    @property
    def moves(self) -> tuple[PartitionMove, ...]:
        """Only the partitions whose replica list changes."""
        if isinstance(self.partitions, PartitionTable):
            return self.partitions.moves
        return tuple(m for m in self.partitions if m.changed)

    def to_dict(self) -> dict[str, Any]:
        return self._document([
            {
                "topic": m.topic,
                "partition": m.partition,
                "old_replicas": list(m.old_replicas),
                "replicas": list(m.replicas),
                "size_bytes": m.size_bytes,
            } | ({"copied_bytes": m.moved_bytes} if m.changed else {})
            | ({"reason": m.reason.to_dict()} if m.reason is not None and m.changed else {})
            for m in self.partitions
        ])

    def _document(self, partitions: list[dict[str, Any]] | None) -> dict[str, Any]:
        """plan.json as a mapping, its ``partitions`` as given (absent: None)."""
        s = self.solver
        return {
            "version": PLAN_VERSION,
            "cluster": self.cluster,
            "brokers_before": {str(b): p for b, p in sorted(self.brokers_before.items())},
            "brokers": {str(b): p for b, p in sorted(self.brokers.items())},
            "topics": dict(sorted(self.topics.items())),
        } | ({"partitions": partitions} if partitions is not None else {}) | {
            "moved_bytes": self.moved_bytes,
            "brokers_to_add": dict(sorted(self.brokers_to_add.items())),
            "solver": {
                "name": s.name,
                "status": s.status,
                "solution": s.solution,
                "objective": s.objective,
                "bound": s.bound,
                "gap": s.gap,
            },
            "utilisation": self.utilisation.to_dict(),
            "warnings": list(self.warnings),
            "placement": dict(sorted(self.placement.items())),
        } | ({"horizon_days": self.horizon_days} if self.horizon_days is not None else {}) | (
            {"operation": self.operation} if self.operation else {}) | (
            {"planned_brokers": [b.to_dict() for b in self.planned_brokers]} if self.planned_brokers else {})


def plan_to_json(plan: Plan) -> str:
    """Deterministic text: sorted keys, one partition per line (as ``json.dumps(entry, sort_keys=True)`` writes
    it, formatted here from the partitions' columns)."""
    text = dump_json(plan._document(None))
    body = ",\n".join(_partition_lines(plan.partitions))
    inner = f'"partitions": [\n{body}\n  ],\n  ' if body else '"partitions": [],\n  '
    # insert partitions in sorted-key position (after "moved_bytes")
    marker = '"solver": {'
    return text.replace(marker, inner + marker, 1)


def _partition_lines(partitions: Sequence[PartitionMove]) -> Iterator[str]:
    """Each partition's line of plan.json (`Plan.to_dict`'s entry, keys sorted), from a table's columns."""
    table = PartitionTable.from_moves(partitions)
    names = [json.dumps(t) for t in table.topics]
    reasons = table.reasons
    columns = zip(table.topic.tolist(), table.partition.tolist(), _replica_rows(table.old, table.old_count, _items),
                  _replica_rows(table.new, table.new_count, _items), table.size.tolist(), table.changed.tolist(),
                  table.copied.tolist())
    for i, (t, p, held, new, size, changed, copied) in enumerate(columns):
        if not changed:
            yield (f'    {{"old_replicas": [{held}], "partition": {p}, "replicas": [{held}], "size_bytes": {size}, '
                   f'"topic": {names[t]}}}')
            continue
        reason = reasons.get(i)
        why = f'"reason": {json.dumps(reason.to_dict(), sort_keys=True)}, ' if reason is not None else ""
        yield (f'    {{"copied_bytes": {copied}, "old_replicas": [{held}], "partition": {p}, {why}"replicas": '
               f'[{new}], "size_bytes": {size}, "topic": {names[t]}}}')


_items = ", ".join  # a JSON list's items, as json.dumps writes them


def save_plan(plan: Plan, path: str | os.PathLike[str]) -> Path:
    """Write ``plan.json`` atomically."""
    return write_text(path, plan_to_json(plan))


def load_plan(path: str | os.PathLike[str]) -> Plan:
    """Read and validate a ``plan.json``; errors name the file and the field path."""
    source = str(path)
    return plan_from_dict(parse_json(read_text(path), source), source=source)


# --- the plan.json schema: every field typed; partitions checked by a fast path, precisely on failure -------


class _Solver(Strict):
    name: str
    status: str
    solution: str | None = None
    objective: Finite | None = None
    bound: Finite | None = None
    gap: Finite | None = None
    seconds: NonNegFinite = 0  # written by plans before 2026-11; ignored


class _BrokerCell(Strict):
    capacity: Finite | None = None
    now: Finite | None = None
    before: Finite | None = None
    after: Finite | None = None


class _PoolCell(Strict):
    capacity: Finite | None = None
    capacity_with_added: Finite | None = None
    capacity_usable: Finite | None = None
    demand_now: Finite | None = None
    demand_forecast: Finite | None = None
    headroom: Finite | None = None
    load_before: Finite | None = None
    load_after: Finite | None = None


class _Utilisation(Strict):
    brokers: dict[str, dict[str, _BrokerCell]] = {}
    pools: dict[str, dict[str, _PoolCell]] = {}


_Count = Annotated[int, Field(ge=0, le=INT64_MAX)]


class _PoolPlacement(Strict):
    seed_bytes: ByteCount
    moved_bytes: ByteCount
    extra_bytes: Annotated[int, Field(ge=-INT64_MAX, le=INT64_MAX)]
    leader_changes: _Count
    status: str
    gap: Finite
    candidates: _Count


class _Capacity(Strict):
    nw_in: NonNegFinite
    nw_out: NonNegFinite
    disk: NonNegFinite
    replicas: NonNegFinite


class _PlannedBroker(Strict):
    id: BrokerId
    rack: Name | None
    pool: Name
    capacity: _Capacity


class _PlanHeader(Strict):
    version: Literal[1]
    cluster: str = ""
    brokers_before: dict[str, Name | None]
    brokers: dict[str, Name | None]
    topics: dict[str, Name] = {}
    partitions: list[Any] = []
    moved_bytes: ByteCount = 0
    brokers_to_add: dict[str, Annotated[int, Field(ge=0, le=MAX_BROKERS)]] = {}
    solver: _Solver
    utilisation: _Utilisation = _Utilisation()
    warnings: list[str] = []
    horizon_days: Annotated[int, Field(ge=0, le=MAX_HORIZON_DAYS)] | None = None
    placement: dict[str, _PoolPlacement] = {}
    operation: dict[str, Any] = {}
    planned_brokers: list[_PlannedBroker] = []


class _Reason(Strict):
    rule: Literal[tuple(r.value for r in ReasonRule)]  # type: ignore[valid-type]
    broker: BrokerId | None = None
    dimension: Literal[REASON_DIMENSIONS] | None = None  # type: ignore[valid-type]
    bound: Finite | None = None
    without: Finite | None = None
    brokers: list[BrokerId] = []
    leader_only: bool = False


class _Partition(Strict):
    topic: Name
    partition: Annotated[int, Field(ge=0, lt=MAX_PARTITIONS_PER_TOPIC)]
    old_replicas: list[BrokerId]
    replicas: list[BrokerId]
    size_bytes: ByteCount = 0
    copied_bytes: ByteCount | None = None
    reason: _Reason | None = None


_REPLICAS = "expected a non-empty list of distinct broker ids"


def _partition_fast(p: Any) -> PartitionMove | None:
    """The well-formed case in one pass; ``None`` sends the entry to the schema for a precise message."""
    if type(p) is not dict or len(p) > 5:
        return None
    topic, partition, old, new = p.get("topic"), p.get("partition"), p.get("old_replicas"), p.get("replicas")
    size = p.get("size_bytes", 0)
    if not (type(topic) is str and topic and type(partition) is int and 0 <= partition < MAX_PARTITIONS_PER_TOPIC
            and type(size) is int and 0 <= size <= INT64_MAX and _ids(old) and _ids(new)):
        return None
    if len(p) != 4 + ("size_bytes" in p):
        return None
    return PartitionMove(topic, partition, tuple(old), tuple(new), size)


def _ids(values: Any) -> bool:
    return (type(values) is list and bool(values) and all(type(b) is int and 0 <= b <= MAX_BROKER_ID for b in values)
            and len(set(values)) == len(values))


def plan_from_dict(doc: Any, *, source: str = "plan") -> Plan:
    """Build a `Plan` from its JSON-ready form, validating every field and the references between them.

    Raises
    ------
    InputError
        ``source: key.path: expected ...``: wrong types, NaN/Inf, negatives, an empty or repeated replica list,
        a partition listed twice, a target replica on a broker the plan does not have, a topic in a pool the plan
        does not have.
    """
    header = validate(_PlanHeader, doc, source)
    brokers = _broker_map(header.brokers, source, "brokers")
    brokers_before = _broker_map(header.brokers_before, source, "brokers_before")
    missing = sorted(set(brokers) ^ set(brokers_before))
    if missing:
        raise InputError(f"{source}: brokers_before: expected the same brokers as brokers, broker {missing[0]} differs")
    _broker_map(header.utilisation.brokers, source, "utilisation.brokers")
    pools = {p for p in brokers.values() if p is not None} | set(header.brokers_to_add)
    for topic, pool in header.topics.items():
        if pool not in pools:
            raise InputError(f"{source}: topics.{topic}: pool {pool!r} is not a pool of the plan "
                             f"(brokers and brokers_to_add name {', '.join(sorted(pools)) or 'none'})")
    partitions = []
    seen: set[tuple[str, int]] = set()
    for i, raw in enumerate(header.partitions):
        move = _partition_fast(raw)
        if move is None:
            entry = validate(_Partition, raw, source, at=f"partitions[{i}]")
            for name in ("old_replicas", "replicas"):
                values = getattr(entry, name)
                if not values or len(set(values)) != len(values):
                    raise InputError(f"{source}: partitions[{i}].{name}: {_REPLICAS}, got {values}")
            move = PartitionMove(entry.topic, entry.partition, tuple(entry.old_replicas), tuple(entry.replicas),
                                 entry.size_bytes, _reason(entry, source, i))
        key = (move.topic, move.partition)
        if key in seen:
            raise InputError(f"{source}: partitions[{i}]: partition {move.topic}-{move.partition} is listed twice")
        seen.add(key)
        unknown = [b for b in move.replicas if b not in brokers] if move.changed else []  # unmoved: may keep a gone one
        if unknown:
            raise InputError(f"{source}: partitions[{i}].replicas: broker {unknown[0]} is not a broker of the plan "
                             "(its brokers table)")
        partitions.append(move)
    for key in ("drained", "demoted"):
        ids = header.operation.get(key, [])
        if not _ids(ids) and ids != []:
            raise InputError(f"{source}: operation.{key}: expected a list of distinct broker ids, got {ids!r}")
        unknown = [b for b in ids if b not in brokers]
        if unknown:
            raise InputError(f"{source}: operation.{key}: broker {unknown[0]} is not a broker of the plan "
                             "(its brokers table)")
    planned = _planned_brokers(header, brokers, brokers_before, source)
    s = header.solver
    return Plan(
        cluster=header.cluster,
        brokers_before=brokers_before,
        brokers=brokers,
        topics=dict(header.topics),
        partitions=tuple(partitions),
        brokers_to_add=dict(header.brokers_to_add),
        solver=SolverReport(
            name=s.name, status=s.status, solution=s.solution if s.solution is not None else s.status,
            objective=s.objective, bound=s.bound, gap=s.gap,
        ),
        utilisation=Utilisation.from_dict(header.utilisation.model_dump(exclude_unset=True)),
        warnings=tuple(header.warnings),
        horizon_days=header.horizon_days,
        placement={pool: p.model_dump() for pool, p in header.placement.items()},
        operation=header.operation,
        planned_brokers=planned,
    )


def _planned_brokers(header: _PlanHeader, brokers: Mapping[int, str | None], before: Mapping[int, str | None],
                     source: str) -> tuple[PlannedBroker, ...]:
    """``planned_brokers``, checked against the brokers tables and ``brokers_to_add``."""
    out, per_pool = [], dict.fromkeys(header.brokers_to_add, 0) if header.planned_brokers else {}
    for i, b in enumerate(header.planned_brokers):
        at = f"{source}: planned_brokers[{i}]"
        if any(o.id == b.id for o in out):
            raise InputError(f"{at}.id: broker {b.id} is listed twice")
        if brokers.get(b.id, "") != b.pool or before.get(b.id, "") is not None:
            raise InputError(f"{at}.id: expected broker {b.id} in brokers with pool {b.pool!r} and in brokers_before "
                             "as null (a broker still to buy joins the pool with the plan)")
        per_pool[b.pool] = per_pool.get(b.pool, 0) + 1
        out.append(PlannedBroker(b.id, b.rack, b.pool, Capacity(**b.capacity.model_dump())))
    for pool, count in sorted(per_pool.items()):
        if header.brokers_to_add.get(pool, 0) != count:
            raise InputError(f"{source}: brokers_to_add.{pool}: expected {count} (its planned_brokers), got "
                             f"{header.brokers_to_add.get(pool, 0)}")
    return tuple(out)


def _reason(entry: _Partition, source: str, i: int) -> Reason | None:
    """The entry's `Reason`, checked against its move: ``copied_bytes`` is what the move copies, a reason sits
    only on a partition that moves and names what it says (see `Reason`)."""
    at = f"{source}: partitions[{i}]"
    old, new = entry.old_replicas, entry.replicas
    adding = sum(b not in old for b in new)
    if entry.copied_bytes is not None and entry.copied_bytes != entry.size_bytes * adding:
        raise InputError(f"{at}.copied_bytes: expected {entry.size_bytes * adding} (size_bytes × {adding} new "
                         f"replica(s)), got {entry.copied_bytes}")
    r = entry.reason
    if r is None:
        return None
    if old == new:
        raise InputError(f"{at}.reason: expected no reason on a partition that does not move")
    rule = ReasonRule(r.rule)
    load = rule.names_load
    if load != (r.broker is not None) or load != (r.dimension is not None) or \
            (load and (r.bound is None or r.without is None)):
        raise InputError(f"{at}.reason: expected broker, dimension, bound and without exactly for the rules "
                         f"{', '.join(LOAD_RULES[:-1])} and {LOAD_RULES[-1]}, got rule {r.rule!r}")
    if load and r.broker not in {*old, *new}:
        raise InputError(f"{at}.reason.broker: expected a broker of old_replicas or replicas, got {r.broker}")
    left = [b for b in old if b not in new]
    if rule is ReasonRule.DEMOTE:
        if list(r.brokers) != [old[0]] or new[0] == old[0]:
            raise InputError(f"{at}.reason.brokers: expected, for demote, the former preferred leader [{old[0]}] "
                             f"that the move replaces as first replica, got {r.brokers}")
    elif rule.names_brokers != bool(r.brokers) or any(b not in left for b in r.brokers):
        raise InputError(f"{at}.reason.brokers: expected, for evacuate, demote and isolate only, brokers of "
                         f"old_replicas that replicas leaves ({left}), got {r.brokers}")
    if rule is ReasonRule.REPLICATION_FACTOR and len(old) == len(new):
        raise InputError(f"{at}.reason.rule: replication_factor, but the partition keeps {len(new)} replicas")
    if r.leader_only != (set(old) == set(new)):
        raise InputError(f"{at}.reason.leader_only: expected {str(set(old) == set(new)).lower()} (whether the "
                         "replicas stay and only their order changes)")
    return Reason(rule, r.broker, r.dimension, r.bound, r.without, tuple(r.brokers), r.leader_only)


def _broker_map(table: Mapping[str, Any], source: str, name: str) -> dict[int, Any]:
    out = {}
    for key, pool in table.items():
        if not key.isdigit() or int(key) > MAX_BROKER_ID:
            raise InputError(f"{source}: {name}.{key}: expected a broker id (0..{MAX_BROKER_ID}) as the key")
        out[int(key)] = pool
    return out
