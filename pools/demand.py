"""The demand model: each topic's load per capacity dimension, and how it lands on brokers.

Growth compounds per day (`grow`); the profile stores each topic's forecast at its own horizon with the growth per
day, and `at_horizon` re-derives it at the horizon the policy plans for (`pools.pool_rules.PoolRules.horizon_days`).

Per topic, at the forecast horizon (``at="forecast"``) or as measured (``at="now"``):

- ``nw_in``  = bytes-in × RF (leader ingress plus follower replication fetches),
- ``nw_out`` = consumer bytes-out (or bytes-in × fan-out when the profile has no bytes-out) + bytes-in × (RF − 1),
- ``disk``   = storage per replica set × RF; at the forecast the storage is capped by time-based retention
  (rate × ``retention.ms``) and by ``retention.bytes`` × partitions,
- ``replicas`` = partitions × RF.

A topic's load is spread over its partitions (bytes by the per-partition rate where the partition profile has
one for every partition, else evenly; disk by the partitions' sizes, else evenly) and each partition's load
over its replicas: the leader carries bytes-in, consumer bytes-out and replication out; each follower carries
replication in (the partition's bytes-in). Summed over a topic's replicas this gives the topic totals above.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from itertools import chain
from typing import Literal

import numpy as np

from pools.errors import InputError
from pools.profile import PartitionProfile, TopicProfile
from pools.snapshot import DIMENSIONS, ClusterSnapshot, PartitionState, TopicState

__all__ = [
    "grow",
    "at_horizon",
    "Demand",
    "PartitionShare",
    "topic_demand",
    "broker_load",
    "replica_load",
    "demand_warnings",
    "PartitionLoads",
    "partition_loads",
]

Load = dict[str, float]

#: Forecasts are capped at e**700 (finite in a double).
_MAX_LOG = 700.0


def grow(value: float, per_day: float, days: float) -> float:
    """``value`` compounded at ``per_day`` relative growth for ``days`` days (capped at e**700; 0 when ``value``
    is not positive): the growth model of the profile's forecasts (`spark_jobs.growth`).

    Examples
    --------
    >>> round(grow(100.0, 0.01, 90), 6), round(grow(100.0, 0.01, -90), 6), grow(0.0, 0.5, 10)
    (244.863267, 40.839119, 0.0)
    """
    if value <= 0:
        return 0.0
    return math.exp(min(math.log(value) + days * math.log1p(per_day), _MAX_LOG))


def at_horizon(profile: Mapping[str, TopicProfile], horizon_days: int) -> dict[str, TopicProfile]:
    """The profile with every forecast re-derived at ``horizon_days`` after its last sample.

    Each row stores its forecast at its own ``forecast_horizon_days`` and its growth per day; the forecast at
    another horizon compounds that growth over the difference (`grow`), the band its own implied growth (the
    band's growth is that of the forecast when the stored horizon is 0). Rows already at ``horizon_days`` are
    returned unchanged, so the same horizon gives the same numbers bit for bit. (A forecast ingest capped at
    e**700 has lost its level: re-derived, it is not what ingest would have written.)

    Examples
    --------
    A topic at 245 B/s in 90 days, growing 1 %/day, is at 245 / 1.01**60 in 30 days:

    >>> from dataclasses import fields
    >>> from pools.profile import TopicProfile
    >>> row = TopicProfile(**{f.name: 0 for f in fields(TopicProfile)} | {"topic": "t", "forecast_horizon_days": 90,
    ...                    "bytes_in_p99_growth_per_day": 0.01, "forecast_bytes_in_p99": 245.0})
    >>> round(at_horizon({"t": row}, 30)["t"].forecast_bytes_in_p99, 3)
    134.86
    """
    return {topic: _row_at(row, horizon_days) for topic, row in profile.items()}


def _row_at(row: TopicProfile, horizon: int) -> TopicProfile:
    stored = row.forecast_horizon_days
    if horizon == stored:
        return row
    days = horizon - stored

    def band(value: float, forecast: float, per_day: float) -> float:
        if stored <= 0 or value <= 0 or forecast <= 0:
            return grow(value, per_day, days)
        level = math.log(forecast) - stored * math.log1p(per_day)  # log of the level at the last sample
        return math.exp(min(math.log(value) + days * (math.log(value) - level) / stored, _MAX_LOG))

    g_in, g_st = row.bytes_in_p99_growth_per_day, row.storage_growth_per_day
    return replace(
        row,
        forecast_horizon_days=horizon,
        forecast_bytes_in_p99=grow(row.forecast_bytes_in_p99, g_in, days),
        forecast_bytes_in_p99_low=band(row.forecast_bytes_in_p99_low, row.forecast_bytes_in_p99, g_in),
        forecast_bytes_in_p99_high=band(row.forecast_bytes_in_p99_high, row.forecast_bytes_in_p99, g_in),
        forecast_storage_bytes=grow(row.forecast_storage_bytes, g_st, days),
        forecast_storage_low=band(row.forecast_storage_low, row.forecast_storage_bytes, g_st),
        forecast_storage_high=band(row.forecast_storage_high, row.forecast_storage_bytes, g_st),
    )


@dataclass(frozen=True, slots=True)
class PartitionShare:
    """One partition's share of its topic: bytes-in, consumer bytes-out and storage per replica."""

    partition: int
    bytes_in: float
    bytes_out: float
    storage: float


@dataclass(frozen=True, slots=True)
class Demand:
    """A topic's load per dimension (``nw_in``, ``nw_out`` bytes/s; ``disk`` bytes; ``replicas``).

    ``bytes_in``, ``bytes_out`` (consumer fetches) and ``storage`` (per replica set) are the topic-level inputs;
    ``partitions`` splits them per partition; ``source`` is ``"profile"`` or ``"sizes"`` (topic absent from the
    profile: disk and replicas from the snapshot's partition sizes, no traffic).
    """

    nw_in: float
    nw_out: float
    disk: float
    replicas: float
    bytes_in: float
    bytes_out: float
    storage: float
    partitions: tuple[PartitionShare, ...]
    source: Literal["profile", "sizes"] = "profile"

    def get(self, dimension: str) -> float:
        """The load in ``dimension`` (one of `DIMENSIONS`)."""
        return float(getattr(self, dimension))


def topic_demand(
    snapshot: ClusterSnapshot,
    profile: Mapping[str, TopicProfile],
    fanout: Mapping[str, float] | float | None = None,
    at: Literal["forecast", "now"] = "forecast",
    *,
    partition_profile: Mapping[tuple[str, int], PartitionProfile] | None = None,
) -> dict[str, Demand]:
    """Demand of every topic in ``snapshot``, sorted by topic name.

    Parameters
    ----------
    snapshot : ClusterSnapshot
        Partitions (replication factor, sizes) and topic configs (retention).
    profile : mapping of str to TopicProfile
        The topic profile; topics missing from it get disk and replicas from their partition sizes only.
    fanout : mapping of topic to float, float or None
        Consumer groups reading each topic, used when the profile has no bytes-out (default 1).
    at : {"forecast", "now"}
        The forecast horizon's p99 rates and storage, or the measured p99 rates and storage.
    partition_profile : mapping, optional
        Per-partition rates used to split bytes over partitions.

    Returns
    -------
    dict of str to Demand

    Raises
    ------
    InputError
        On an unknown ``at`` or a negative fan-out.
    """
    if at not in ("forecast", "now"):
        raise InputError(f"demand: at: expected 'forecast' or 'now', got {at!r}")
    out: dict[str, Demand] = {}
    for topic, parts in sorted(snapshot.partitions_by_topic.items()):
        state = snapshot.topic_by_name.get(topic) or TopicState(topic=topic)
        row = profile.get(topic)
        ratio = _fanout(fanout, topic)
        if row is None:
            out[topic] = _from_sizes(parts)
        else:
            out[topic] = _from_profile(row, state, parts, ratio, at, partition_profile or {})
    return out


def replica_load(share: PartitionShare, replication_factor: int, *, leader: bool) -> tuple[float, float, float, float]:
    """Load of one replica of a partition, in `DIMENSIONS` order.

    The leader takes producer bytes-in, serves consumers and replication out to the ``replication_factor − 1``
    followers; a follower fetches the partition's bytes-in. Both store the partition and count as one replica.
    """
    if leader:
        return (share.bytes_in, share.bytes_out + share.bytes_in * (replication_factor - 1), share.storage, 1.0)
    return (share.bytes_in, 0.0, share.storage, 1.0)


def broker_load(
    snapshot: ClusterSnapshot,
    demands: Mapping[str, Demand],
    assignment: Mapping[tuple[str, int], tuple[int, ...]] | None = None,
) -> dict[int, Load]:
    """Load per broker and dimension from ``demands`` under a placement.

    Parameters
    ----------
    snapshot : ClusterSnapshot
        The brokers (every one gets an entry, zero when idle) and the current placement.
    demands : mapping of str to Demand
        From `topic_demand`; topics without a demand add nothing.
    assignment : mapping of (topic, partition) to replicas, optional
        A target placement (first replica = leader). Partitions it omits keep their current replicas, led by
        the current leader when it is a replica, else by the preferred leader.

    Returns
    -------
    dict of int to dict of str to float
        Broker id → dimension → load, including brokers the placement names that the snapshot lacks.

    Notes
    -----
    Vectorised: one pass over the partitions to collect replica lists, then array sums, O(P + R).
    """
    parts = snapshot.partitions
    b_in, b_out, storage, known = _share_arrays(snapshot, demands)
    if assignment:
        rows = [assignment.get((p.topic, p.partition)) for p in parts]
        lists = [p.replicas if r is None else r for p, r in zip(parts, rows)]
        leaders = [_current_leader(p) if r is None else (r[0] if r else None) for p, r in zip(parts, rows)]
    else:
        lists = [p.replicas for p in parts]
        leaders = [_current_leader(p) for p in parts]
    lengths = np.fromiter((len(r) for r in lists), np.int64, len(lists))
    ids = np.fromiter(chain.from_iterable(lists), np.int64, int(lengths.sum()))
    lead = np.fromiter((-1 if b is None else b for b in leaders), np.int64, len(leaders))
    rep_part = np.repeat(np.arange(len(parts)), lengths)
    counted = known[rep_part]
    ids, rep_part = ids[counted], rep_part[counted]
    rf = lengths[rep_part]
    is_leader = ids == lead[rep_part]
    brokers, index = np.unique(np.concatenate([np.array(snapshot.broker_ids, dtype=np.int64), ids]),
                               return_inverse=True)
    index = index[len(snapshot.broker_ids):]
    rep_in = b_in[rep_part]
    columns = (
        rep_in,
        np.where(is_leader, b_out[rep_part] + rep_in * (rf - 1), 0.0),
        storage[rep_part],
        np.ones(len(ids)),
    )
    sums = [np.bincount(index, weights=c, minlength=len(brokers)) for c in columns]
    return {int(b): {dim: float(sums[d][i]) for d, dim in enumerate(DIMENSIONS)} for i, b in enumerate(brokers.tolist())}


def _share_arrays(snapshot: ClusterSnapshot, demands: Mapping[str, Demand]):
    """Per partition of the snapshot: bytes-in, consumer bytes-out, storage, and whether a demand covers it."""
    n = len(snapshot.partitions)
    b_in, b_out, storage = np.zeros(n), np.zeros(n), np.zeros(n)
    known = np.zeros(n, dtype=bool)
    i = 0
    for topic, parts in snapshot.partitions_by_topic.items():
        k = len(parts)
        demand = demands.get(topic)
        if demand is not None:
            shares = demand.partitions
            if len(shares) == k and all(s.partition == p.partition for s, p in zip(shares, parts)):
                b_in[i : i + k] = [s.bytes_in for s in shares]
                b_out[i : i + k] = [s.bytes_out for s in shares]
                storage[i : i + k] = [s.storage for s in shares]
                known[i : i + k] = True
            else:
                by_id = {s.partition: s for s in shares}
                for j, p in enumerate(parts):
                    s = by_id.get(p.partition)
                    if s is not None:
                        b_in[i + j], b_out[i + j], storage[i + j], known[i + j] = s.bytes_in, s.bytes_out, s.storage, True
        i += k
    return b_in, b_out, storage, known


@dataclass(frozen=True, eq=False)
class PartitionLoads:
    """Per partition, aligned with ``snapshot.partitions``: bytes-in, consumer bytes-out and storage per replica."""

    bytes_in: np.ndarray
    bytes_out: np.ndarray
    storage: np.ndarray


def partition_loads(snapshot: ClusterSnapshot, demands: Mapping[str, Demand]) -> PartitionLoads:
    """The `PartitionShare` of every partition as arrays; a partition without a demand stores its size.

    Examples
    --------
    >>> from pools.snapshot import Broker, Capacity
    >>> snap = ClusterSnapshot("c", (Broker(1, None, Capacity(1, 1, 1, 1)),), (),
    ...                        (PartitionState("t", 0, (1,), leader=1, sizes=(7,)),))
    >>> partition_loads(snap, {}).storage.tolist()
    [7.0]
    """
    b_in, b_out, storage, known = _share_arrays(snapshot, demands)
    if not known.all():
        storage[~known] = [float(snapshot.partitions[i].size_bytes) for i in np.flatnonzero(~known).tolist()]
    return PartitionLoads(b_in, b_out, storage)


def demand_warnings(demands: Mapping[str, Demand]) -> list[str]:
    """One warning per topic whose demand comes from partition sizes only (absent from the profile)."""
    missing = sorted(t for t, d in demands.items() if d.source == "sizes")
    if not missing:
        return []
    shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
    return [f"{len(missing)} topic(s) absent from the profile, planned by partition sizes only (no traffic): {shown}"]


def _fanout(fanout: Mapping[str, float] | float | None, topic: str) -> float:
    if fanout is None:
        return 1.0
    value = fanout.get(topic, 1.0) if isinstance(fanout, Mapping) else fanout
    if not value >= 0:
        raise InputError(f"demand: fan-out of topic {topic!r}: expected a non-negative number, got {value!r}")
    return float(value)


def _current_leader(state: PartitionState) -> int | None:
    if state.leader is not None and state.leader in state.replicas:
        return state.leader
    return state.preferred_leader


def _weights(values: list[float]) -> list[float]:
    total = sum(values)
    if total > 0:
        return [v / total for v in values]
    return [1.0 / len(values)] * len(values) if values else []


def _from_sizes(parts: tuple[PartitionState, ...]) -> Demand:
    shares = tuple(PartitionShare(p.partition, 0.0, 0.0, float(p.size_bytes)) for p in parts)
    return _total(shares, parts, source="sizes")


def _from_profile(
    row: TopicProfile,
    state: TopicState,
    parts: tuple[PartitionState, ...],
    fanout: float,
    at: str,
    partition_profile: Mapping[tuple[str, int], PartitionProfile],
) -> Demand:
    if at == "forecast":
        bytes_in = row.forecast_bytes_in_p99
        growth = row.forecast_growth_factor
        storage = _retention_capped(row.forecast_storage_bytes, bytes_in, state, len(parts))
    else:
        bytes_in, growth, storage = row.bytes_in_p99, 1.0, float(row.storage_bytes)
    bytes_out = bytes_in * fanout if row.bytes_out_p99 is None else row.bytes_out_p99 * growth
    rates = [partition_profile.get((p.topic, p.partition)) for p in parts] if partition_profile else [None]
    if all(r is not None and r.bytes_in_rate is not None for r in rates):
        net = _weights([r.bytes_in_rate for r in rates])  # type: ignore[union-attr,misc]
    else:
        net = _weights([1.0] * len(parts))
    disk = _weights([float(p.size_bytes) for p in parts])
    shares = tuple(
        PartitionShare(p.partition, bytes_in * n, bytes_out * n, storage * s) for p, n, s in zip(parts, net, disk)
    )
    return _total(shares, parts, source="profile")


def _retention_capped(storage: float, bytes_in: float, state: TopicState, partitions: int) -> float:
    """Forecast storage, capped by what retention lets the topic keep (delete policy only)."""
    policy = state.configs.get("cleanup.policy", "delete")
    if "delete" not in policy:
        return storage
    if state.retention_ms is not None:
        storage = min(storage, bytes_in * state.retention_ms / 1000.0)
    if state.retention_bytes is not None:
        storage = min(storage, float(state.retention_bytes) * partitions)
    return storage


def _total(shares: tuple[PartitionShare, ...], parts: tuple[PartitionState, ...], *, source: str) -> Demand:
    # the leader's `replica_load` once and a follower's RF − 1 times, summed in that order (inlined: hot path)
    nw_in = nw_out = disk = replicas = 0.0
    for share, p in zip(shares, parts):
        rf = len(p.replicas)
        if rf == 0:
            continue
        b_in, storage = share.bytes_in, share.storage
        nw_in += b_in
        nw_out += share.bytes_out + b_in * (rf - 1)
        disk += storage
        replicas += 1.0
        if rf > 1:
            nw_in += b_in * (rf - 1)
            disk += storage * (rf - 1)
            replicas += 1.0 * (rf - 1)
    return Demand(
        nw_in=nw_in,
        nw_out=nw_out,
        disk=disk,
        replicas=replicas,
        bytes_in=sum(s.bytes_in for s in shares),
        bytes_out=sum(s.bytes_out for s in shares),
        storage=sum(s.storage for s in shares),
        partitions=shares,
        source=source,  # type: ignore[arg-type]
    )
