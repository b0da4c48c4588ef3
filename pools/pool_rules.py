"""The pool rules: the limits every pool keeps, resolved once from the policy, and the checks that apply them.

One definition each, used by the pool MILP (`planner.pool_milp`), the planner's shortfall text and utilisation
(`planner.pool_planner`), the independent validator (`planner.validator`), the audit (`pools.audit`) and the
report (`planner.report`):

- the limits of a pool (`PoolLimits`: headroom per dimension, minimum brokers and racks, tolerated broker
  failures, forecast horizon), built from the policy by `PoolRules.from_policy` with the defaults below;
- failure tolerance: a pool carries its load within headroom with any ``tolerated_failures`` of its brokers
  down. The requirement holds per dimension, and in each dimension the worst case is losing the brokers largest
  in it, so `usable_capacity` is the pool's capacity minus its ``k`` largest brokers (`failing_brokers`), over
  the brokers the pool really has (brokers a plan adds counted only when it adds them);
- `headroom_limit` (headroom × capacity: what a broker or pool may carry) and `closed_capacity` (what a broker
  that takes no new replica counts for: the capacity its own load needs);
- `over_limit` (the one comparison, with its float tolerance), `brokers_required`;
- rack spread: `pool_racks` (the racks each pool has open), `racks_required` (how many racks a partition's
  replicas must span), `spans_racks` (whether they do), `keeps_rack_spread` (a one-replica swap never narrows
  it), `pool_racks_required`, `spans_every_rack` with `RACK_DIMENSIONS`;
- the pin and tenant checks `misplaced_pins` and `shared_tenant_pools`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np

from pools.snapshot import DIMENSIONS, Broker, Capacity

__all__ = [
    "DEFAULT_HEADROOM",
    "DEFAULT_TOLERATED_BROKER_FAILURES",
    "DEFAULT_FORECAST_HORIZON_DAYS",
    "DEFAULT_MIN_BROKERS",
    "DEFAULT_MIN_RACKS",
    "TOLERANCE",
    "RACK_DIMENSIONS",
    "PoolLimits",
    "PoolRules",
    "LimitsPolicy",
    "PolicyDefaults",
    "PoolLimitsSpec",
    "failing_brokers",
    "failure_loss",
    "usable_capacity",
    "headroom_limit",
    "closed_capacity",
    "log_dir_capacity",
    "brokers_to_fit",
    "over_limit",
    "brokers_required",
    "racks_required",
    "spans_racks",
    "keeps_rack_spread",
    "pool_racks",
    "OpenRacks",
    "pool_racks_required",
    "spans_every_rack",
    "misplaced_pins",
    "shared_tenant_pools",
]

#: Usable fraction of capacity in every dimension, unless the policy says otherwise.
DEFAULT_HEADROOM = 0.7
#: Brokers each pool must be able to lose.
DEFAULT_TOLERATED_BROKER_FAILURES = 1
#: Days after the profile's last sample that the pools are planned for.
DEFAULT_FORECAST_HORIZON_DAYS = 90
#: Brokers per pool.
DEFAULT_MIN_BROKERS = 3
#: Racks per pool (the replication factor raises it).
DEFAULT_MIN_RACKS = 1
#: Relative (and, below 1, absolute) slack of `over_limit`: float noise and the MILP solver's feasibility tolerance.
TOLERANCE = 1e-6
#: Dimensions a topic with one replica per rack loads evenly over the racks (leaders, hence consumer
#: bytes-out, may gather in any rack).
RACK_DIMENSIONS = ("nw_in", "disk", "replicas")

Vector = tuple[float, float, float, float]
N = TypeVar("N")


@dataclass(frozen=True, slots=True)
class PoolLimits:
    """One pool's limits: headroom per dimension (`DIMENSIONS` order), minimum brokers and racks, tolerated
    broker failures and the forecast horizon in days."""

    headroom: Vector
    min_brokers: int = DEFAULT_MIN_BROKERS
    min_racks: int = DEFAULT_MIN_RACKS
    tolerated_failures: int = DEFAULT_TOLERATED_BROKER_FAILURES
    horizon_days: int = DEFAULT_FORECAST_HORIZON_DAYS

    def headroom_of(self, dimension: str) -> float:
        """The usable fraction of capacity in ``dimension``.

        Examples
        --------
        >>> PoolLimits((0.7, 0.6, 0.8, 0.9)).headroom_of("disk")
        0.8
        """
        return self.headroom[DIMENSIONS.index(dimension)]

    def broker_limit(self, capacity: Capacity) -> tuple[float, ...]:
        """What one broker of the pool may carry per `DIMENSIONS`: headroom × its capacity (the per-broker rule;
        a pool's own limit is headroom × `usable_capacity`).

        Examples
        --------
        >>> PoolLimits((0.7, 0.6, 0.8, 0.9)).broker_limit(Capacity(100.0, 100.0, 1000.0, 10.0))
        (70.0, 60.0, 800.0, 9.0)
        """
        return tuple(h * capacity.get(d) for h, d in zip(self.headroom, DIMENSIONS, strict=True))


class PolicyDefaults(Protocol):
    """What `PoolRules.from_policy` reads of a policy's defaults (`pools.policy.Defaults` has it)."""

    @property
    def headroom(self) -> Mapping[str, float]: ...
    @property
    def min_brokers(self) -> int: ...
    @property
    def tolerated_broker_failures(self) -> int: ...
    @property
    def forecast_horizon_days(self) -> int: ...


class PoolLimitsSpec(Protocol):
    """What `PoolRules.from_policy` reads of a pool's own settings (`pools.policy.PoolSpec` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def headroom(self) -> Mapping[str, float] | None: ...
    @property
    def min_brokers(self) -> int | None: ...
    @property
    def min_racks(self) -> int | None: ...


class LimitsPolicy(Protocol):
    """A policy as the pool rules see it: its defaults and its pools (`pools.policy.PoolPolicy`); the rules import
    nothing of the policy module, which imports their defaults."""

    @property
    def defaults(self) -> PolicyDefaults: ...
    @property
    def pools(self) -> Sequence[PoolLimitsSpec]: ...


@dataclass(frozen=True)
class PoolRules:
    """Every pool's resolved limits, and the policy defaults that brokers in no pool are held to."""

    pools: Mapping[str, PoolLimits]
    default: PoolLimits

    @classmethod
    def from_policy(cls, policy: LimitsPolicy, *, horizon_days: int | None = None) -> PoolRules:
        """Resolve the limits of every pool of ``policy``: a pool's own value, else the policy default.

        Parameters
        ----------
        policy : LimitsPolicy
            A `pools.policy.PoolPolicy`.
        horizon_days : int, optional
            Overrides the policy's ``forecast_horizon_days`` (the command line's ``--horizon-days``).

        Examples
        --------
        >>> from pools.policy import parse_policy
        >>> policy = parse_policy('[defaults]\\nheadroom = 0.7\\n[[pool]]\\nname = "a"\\nheadroom = 0.6\\nmin_racks = 2')
        >>> rules = PoolRules.from_policy(policy, horizon_days=30)
        >>> rules.pools["a"]
        PoolLimits(headroom=(0.6, 0.6, 0.6, 0.6), min_brokers=3, min_racks=2, tolerated_failures=1, horizon_days=30)
        >>> rules.limits(None).headroom_of("disk")  # brokers in no pool keep the default headroom
        0.7
        """
        d = policy.defaults
        horizon = d.forecast_horizon_days if horizon_days is None else horizon_days

        def limits(headroom: Mapping[str, float] | None, min_brokers: int | None, min_racks: int | None) -> PoolLimits:
            own = headroom if headroom is not None else d.headroom
            return PoolLimits(
                headroom=tuple(float(own[dim]) for dim in DIMENSIONS),  # type: ignore[arg-type]
                min_brokers=d.min_brokers if min_brokers is None else min_brokers,
                min_racks=DEFAULT_MIN_RACKS if min_racks is None else min_racks,
                tolerated_failures=d.tolerated_broker_failures,
                horizon_days=horizon,
            )

        return cls(
            pools={p.name: limits(p.headroom, p.min_brokers, p.min_racks) for p in policy.pools},
            default=limits(None, None, None),
        )

    def limits(self, pool: str | None) -> PoolLimits:
        """The limits of ``pool``; the policy defaults for ``None`` or a pool the policy does not know."""
        return self.pools.get(pool, self.default) if pool is not None else self.default

    @property
    def horizon_days(self) -> int:
        """The forecast horizon the pools are planned for."""
        return self.default.horizon_days

    @property
    def tolerated_failures(self) -> int:
        """Brokers every pool must be able to lose."""
        return self.default.tolerated_failures


def failing_brokers(capacities: Sequence[float], tolerated_failures: int) -> list[int]:
    """Positions of the brokers whose failure costs the most capacity: the ``k`` largest, ties to the first.

    Examples
    --------
    >>> failing_brokers([50.0, 80.0, 50.0, 80.0], 3)
    [1, 3, 0]
    """
    k = max(0, min(tolerated_failures, len(capacities)))
    return heapq.nsmallest(k, range(len(capacities)), key=lambda i: (-capacities[i], i))


def failure_loss(capacities: Iterable[float], tolerated_failures: int) -> float:
    """Capacity lost when the ``tolerated_failures`` largest brokers fail (all of them when there are fewer).

    Examples
    --------
    >>> failure_loss([50.0, 80.0, 50.0], 2), failure_loss([50.0], 2), failure_loss([50.0], 0)
    (130.0, 50.0, 0.0)
    """
    if tolerated_failures <= 0:
        return 0.0
    return math.fsum(heapq.nlargest(tolerated_failures, capacities))


def log_dir_capacity(broker: Broker, log_dir: str | None = None) -> float:
    """The disk ``log_dir`` of ``broker`` holds: the capacity the inventory gives it (``log_dir_capacities``), else
    an equal share of what the broker's ``disk`` leaves to its dirs without one (``kafka-log-dirs.sh`` prints no
    per-dir size); the whole disk for a broker with one or unknown dirs. ``log_dir`` None: a dir without one.

    >>> from pools.snapshot import Capacity
    >>> log_dir_capacity(Broker(1, None, Capacity(1, 1, 4e12, 1), log_dirs=("/d1", "/d2", "/d3", "/d4")))
    1000000000000.0
    >>> b = Broker(1, None, Capacity(1, 1, 4e12, 1), log_dirs=("/d1", "/d2", "/d3"),
    ...            log_dir_capacities=(("/d1", 2e12),))
    >>> log_dir_capacity(b, "/d1"), log_dir_capacity(b, "/d2")
    (2000000000000.0, 1000000000000.0)
    """
    sized = dict(broker.log_dir_capacities)
    if log_dir in sized:
        return float(sized[log_dir])
    rest = [d for d in broker.log_dirs if d not in sized]
    return max(0.0, broker.capacity.disk - math.fsum(sized.values())) / max(1, len(rest))


def usable_capacity(capacities: Iterable[float], tolerated_failures: int) -> float:
    """Capacity left with the ``tolerated_failures`` largest brokers down: the one usable-capacity formula.

    Parameters
    ----------
    capacities : iterable of float
        One dimension's capacity of every broker the pool has (brokers a plan adds included, once added).
    tolerated_failures : int

    Returns
    -------
    float
        The sum of all but the ``k`` largest (0 when the pool has no more than ``k`` brokers). A pool fits a
        dimension when ``not over_limit(demand, headroom * usable_capacity(...))``.

    Examples
    --------
    Four 50 MB/s brokers, one tolerated failure: 150 MB/s usable, so 80 MB/s of demand fits at 70 % headroom.

    >>> usable_capacity([50.0] * 4, 1), over_limit(80.0, 0.7 * usable_capacity([50.0] * 4, 1))
    (150.0, False)
    """
    caps = sorted(capacities, reverse=True)
    return math.fsum(caps[max(tolerated_failures, 0):])


def closed_capacity(capacity: float, load: float, headroom: float) -> float:
    """The capacity a closed broker (`pools.health.ClusterHealth.closed`: unhealthy or cordoned) counts for in its
    pool: only what its own load needs within ``headroom`` (it keeps its replicas, that load stays on the pool),
    at most its capacity; nothing for a new replica, which it never takes.

    Examples
    --------
    >>> closed_capacity(100.0, 35.0, 0.7), closed_capacity(100.0, 90.0, 0.7), closed_capacity(100.0, 0.0, 0.7)
    (50.0, 100.0, 0.0)
    """
    return min(capacity, load / headroom) if headroom > 0 else min(capacity, load)


def headroom_limit(capacity: N, headroom: N) -> N:
    """The load a broker or pool may carry: ``headroom`` × ``capacity`` (numbers, or numpy arrays broadcast).

    With `usable_capacity` as ``capacity`` it is what a pool may carry with its tolerated failures down.

    Examples
    --------
    >>> headroom_limit(100.0, 0.7), headroom_limit(np.array([[10.0, 20.0]]), np.array([0.5, 0.8])).tolist()
    (70.0, [[5.0, 16.0]])
    """
    return headroom * capacity  # type: ignore[operator,return-value]


def brokers_to_fit(capacities: Sequence[float], new_capacity: float, demand: float, headroom: float,
                   tolerated_failures: int) -> int | None:
    """The fewest brokers of ``new_capacity`` to add so that ``demand`` fits within ``headroom`` × usable capacity.

    Returns
    -------
    int or None
        0 when it fits already; ``None`` when no number of such brokers can make it fit.

    Notes
    -----
    Adding a broker never lowers the usable capacity, and once ``tolerated_failures`` new brokers are present
    every further one adds exactly ``new_capacity`` (the ``k`` largest no longer change), so the count is found
    in at most ``k`` steps and one division.

    Examples
    --------
    >>> brokers_to_fit([50.0] * 4, 50.0, 80.0, 0.7, 1), brokers_to_fit([50.0] * 4, 50.0, 140.0, 0.7, 1)
    (0, 1)
    >>> brokers_to_fit([50.0] * 4, 200.0, 150.0, 0.7, 1)  # a bigger new broker is the one that may fail
    2
    """
    caps = list(capacities)

    def fits(n: int) -> bool:
        return not over_limit(demand, headroom * usable_capacity(caps + [new_capacity] * n, tolerated_failures))

    k = max(tolerated_failures, 0)
    for n in range(k + 1):
        if fits(n):
            return n
    if new_capacity <= 0 or headroom <= 0:
        return None
    short = demand / headroom - usable_capacity(caps + [new_capacity] * k, tolerated_failures)
    n = k + max(1, math.ceil(short / new_capacity - TOLERANCE))
    while not fits(n):  # guards the division against rounding
        n += 1
    return n


def over_limit(load: N, limit: N) -> N:
    """True where ``load`` exceeds ``limit`` beyond the float tolerance (numbers, or numpy arrays element-wise).

    Examples
    --------
    >>> over_limit(105.00001, 105.0), over_limit(105.1, 105.0)
    (False, True)
    """
    if isinstance(load, np.ndarray) or isinstance(limit, np.ndarray):
        return load > limit + TOLERANCE * np.maximum(np.abs(limit), 1.0)  # type: ignore[operator,return-value]
    return bool(load > limit + TOLERANCE * max(abs(limit), 1.0))  # type: ignore[operator,return-value,arg-type]


def brokers_required(limits: PoolLimits, max_replication_factor: int) -> int:
    """Brokers a pool needs: its minimum, and at least the largest replication factor of its topics.

    Examples
    --------
    >>> brokers_required(PoolLimits((0.7,) * 4, min_brokers=3), 4)
    4
    """
    return max(limits.min_brokers, max_replication_factor)


def racks_required(replication_factor: N, racks_available: N) -> N:
    """Racks a partition's replicas must span: one per replica, as far as its pool's racks allow.

    Works element-wise on numpy arrays.

    Examples
    --------
    >>> racks_required(3, 2), racks_required(2, 3)
    (2, 2)
    """
    if isinstance(replication_factor, np.ndarray) or isinstance(racks_available, np.ndarray):
        return np.minimum(replication_factor, racks_available)  # type: ignore[return-value]
    return min(replication_factor, racks_available)  # type: ignore[type-var,return-value]


def spans_racks(replica_racks: Sequence[object | None], racks_available: int) -> bool:
    """Whether replicas on ``replica_racks`` (one entry per replica; None: a broker without a rack) span the racks
    their partition needs: `racks_required` distinct racks. So RF ≤ racks: distinct racks and none unracked;
    RF > racks: every rack. Always true where the pool has no rack.

    >>> spans_racks(["a", "a"], 2), spans_racks(["a", "b"], 2), spans_racks(["a", "a", "b"], 2)
    (False, True, True)
    >>> spans_racks(["a", None], 2), spans_racks(["a", None], 0)
    (False, True)
    """
    if racks_available <= 0:
        return True
    return len({r for r in replica_racks if r is not None}) >= racks_required(len(replica_racks), racks_available)


def keeps_rack_spread(racks_before: Iterable[object | None], racks_after: Iterable[object | None]) -> bool:
    """Whether swapping one replica for another (a broker replaced in place) spans no fewer racks than before.

    The rule of a swap that places nothing else: it cannot repair a partition already short of `spans_racks`,
    so it only may not narrow it.

    >>> keeps_rack_spread(["a", "b"], ["a", "c"]), keeps_rack_spread(["a", "b"], ["a", "a"])
    (True, False)
    """
    return len({r for r in racks_after if r is not None}) >= len({r for r in racks_before if r is not None})


class OpenRacks(Protocol):
    """Which racks have open capacity (`pools.health.ClusterHealth` has it: the one cordon rule); the pool rules
    import nothing of the health module, which needs the cluster's arrays and, through them, the policy."""

    def open_racks(self, brokers: Iterable[tuple[int, str | None]]) -> set[str]: ...


def pool_racks(broker_pool: Mapping[int, str | None], rack: Mapping[int, str | None],
               health: OpenRacks | None = None) -> dict[str | None, set[str]]:
    """The racks of each pool (``None``: brokers in no pool) with open capacity
    (`pools.health.ClusterHealth.open_racks`: a cordoned or unhealthy broker takes no new replica and spreads
    nothing further; without ``health`` every rack counts): the racks available to its partitions, for
    `spans_racks`.

    >>> from pools.health import ClusterHealth
    >>> racks = pool_racks({1: "a", 2: "a", 3: "a", 4: None}, {1: "r1", 2: "r2", 3: "r3", 4: "r1"},
    ...                    ClusterHealth({3: "offline"}, {}))
    >>> {pool: sorted(r) for pool, r in racks.items()}
    {'a': ['r1', 'r2'], None: ['r1']}
    """
    members: dict[str | None, list[tuple[int, str | None]]] = {}
    for b, pool in broker_pool.items():
        members.setdefault(pool, []).append((b, rack.get(b)))
    if health is None:
        return {pool: {r for _, r in brokers if r is not None} for pool, brokers in members.items()}
    return {pool: health.open_racks(brokers) for pool, brokers in members.items()}


def pool_racks_required(limits: PoolLimits, max_replication_factor: int, racks_available: int) -> int:
    """Racks a pool's brokers must span: its ``min_racks`` and its largest replication factor, as far as the
    racks available allow.

    Examples
    --------
    >>> pool_racks_required(PoolLimits((0.7,) * 4, min_racks=2), 3, 4), pool_racks_required(PoolLimits((0.7,) * 4), 3, 2)
    (3, 2)
    """
    return min(max(limits.min_racks, max_replication_factor), racks_available)


def spans_every_rack(replication_factor: int, racks: int) -> bool:
    """True when a topic has a replica in every rack of its pool, so each rack carries ``1 / racks`` of its
    load in the `RACK_DIMENSIONS`.

    Examples
    --------
    >>> spans_every_rack(3, 3), spans_every_rack(2, 3)
    (True, False)
    """
    return racks > 0 and replication_factor >= racks


def misplaced_pins(pinned: Mapping[int, str], broker_pool: Mapping[int, str | None]) -> list[tuple[int, str, str | None]]:
    """Pinned brokers outside the pool that pins them: ``(broker, pinning pool, pool it is in)``, by broker id.

    Examples
    --------
    >>> misplaced_pins({1: "a", 2: "b"}, {1: "a", 2: None})
    [(2, 'b', None)]
    """
    return [(b, pool, broker_pool.get(b)) for b, pool in sorted(pinned.items()) if broker_pool.get(b) != pool]


def shared_tenant_pools(tenant_pools: Mapping[str, Iterable[str]],
                        conflicts: Iterable[frozenset[str]]) -> list[tuple[str, str, list[str]]]:
    """Tenants that must not share but do: ``(tenant, tenant, shared pools)`` for each conflicting pair.

    Parameters
    ----------
    tenant_pools : mapping of tenant to pools
        The pools each tenant's topics are in.
    conflicts : iterable of frozenset
        Pairs of tenants that must not share a pool (`PoolPolicy.conflicting_tenants`).

    Examples
    --------
    >>> shared_tenant_pools({"ads": ["x", "y"], "pay": ["y"]}, [frozenset({"ads", "pay"})])
    [('ads', 'pay', ['y'])]
    """
    pools = {t: set(p) for t, p in tenant_pools.items()}
    out = []
    for a, b in sorted(tuple(sorted(pair)) for pair in conflicts if len(pair) == 2):
        shared = sorted(pools.get(a, set()) & pools.get(b, set()))
        if shared:
            out.append((a, b, shared))
    return out
