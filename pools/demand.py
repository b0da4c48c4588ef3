"""The demand model: each topic's load per capacity dimension, and how it lands on brokers.

Growth compounds per day (`grow`); the profile stores each topic's forecast at its own horizon with the growth per
day, and `at_horizon` re-derives it at the horizon the policy plans for (`pools.pool_rules.PoolRules.horizon_days`).

Per topic, at the forecast horizon (``at="forecast"``) or as measured (``at="now"``):

- ``nw_in``  = bytes-in × RF (leader ingress plus follower replication fetches) + remote fetch,
- ``nw_out`` = consumer bytes-out (or bytes-in × fan-out when the profile has no bytes-out) + bytes-in × (RF − 1)
  + remote copy,
- ``disk``   = storage per replica set × RF; at the forecast the storage is capped by time-based retention
  (rate × ``retention.ms``) and by ``retention.bytes`` × partitions; for a tiered topic (KIP-405,
  ``remote.storage.enable=true``) by its local retention too (rate × ``local.retention.ms``,
  ``local.retention.bytes`` × partitions): only local segments sit on the brokers' disks, and the measured
  sizes (``kafka-log-dirs.sh``) are local already,
- ``replicas`` = partitions × RF.

A tiered topic's remote traffic (the profile's `pools.profile.REMOTE_COLUMNS`, zero where unmeasured) is the
leader's: **remote copy** (``RemoteCopyBytesPerSec``, segments uploaded to the remote store) is network out, and
**remote fetch** (``RemoteFetchBytesPerSec``, bytes the leader reads back from the store to serve a fetch) is
network in. The fetch response that carries those bytes to the consumer is already in bytes-out (Kafka's
``KafkaApis`` counts every fetch response's records in ``BytesOutPerSec``, remote or local), so it is not added
again: `Demand.remote_fetch` over `Demand.bytes_out` is the remote-served share of the consumers' bytes-out.

A topic's load is spread over its partitions (bytes by the per-partition rate where the partition profile has one for
every partition, else evenly; disk by the partitions' sizes, else evenly) and each partition's load over its replicas:
the leader carries bytes-in, consumer bytes-out, replication out and the remote traffic; each follower carries
replication in (the partition's bytes-in). Summed over a topic's replicas this gives the topic totals above.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, overload

import numpy as np

from pools.cluster_arrays import cluster_arrays, per_snapshot
from pools.errors import InputError
from pools.forecast_band import NO_CALIBRATION, BandCalibration, GroupCalibration
from pools.profile import PartitionProfile, TopicProfile
from pools.snapshot import DIMENSIONS, ClusterSnapshot, TopicState


__all__ = [
    "grow",
    "at_horizon",
    "Demand",
    "PartitionShare",
    "PartitionShares",
    "topic_demand",
    "retention_capped",
    "broker_load",
    "replica_load",
    "demand_warnings",
    "PartitionLoads",
    "partition_loads",
    "demand_over_days",
    "EDGES",
]

Load = dict[str, float]
#: A leader's remote traffic (`PartitionShare`, `Demand`): remote fetch (network in), remote copy (network out).
_REMOTE = ("remote_fetch", "remote_copy")
_SHARE_FIELDS = ("partition", "bytes_in", "bytes_out", "storage", *_REMOTE)

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
    """One partition's share of its topic: bytes-in, consumer bytes-out, storage per replica, and its leader's
    remote fetch (network in) and remote copy (network out)."""

    partition: int
    bytes_in: float
    bytes_out: float
    storage: float
    remote_fetch: float = 0.0
    remote_copy: float = 0.0


@dataclass(frozen=True, eq=False)
class PartitionShares(Sequence[PartitionShare]):
    """A topic's `PartitionShare`s in partition order, held as arrays (no Python object per partition)."""

    partition: np.ndarray
    bytes_in: np.ndarray
    bytes_out: np.ndarray
    storage: np.ndarray
    remote_fetch: np.ndarray | None = None  # None: zeros
    remote_copy: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in _REMOTE:
            if getattr(self, name) is None:
                object.__setattr__(self, name, np.zeros(len(self.partition)))

    @classmethod
    def of(cls, shares: Sequence[PartitionShare]) -> PartitionShares:
        """The arrays of a sequence of `PartitionShare`."""
        columns = (np.array([getattr(s, f) for s in shares], dtype=float) for f in _SHARE_FIELDS[1:])
        return cls(np.array([s.partition for s in shares], dtype=np.int64), *columns)

    def __len__(self) -> int:
        return len(self.partition)

    @overload
    def __getitem__(self, index: int) -> PartitionShare: ...

    @overload
    def __getitem__(self, index: slice) -> PartitionShares: ...

    def __getitem__(self, index: int | slice) -> PartitionShare | PartitionShares:
        if isinstance(index, slice):
            return PartitionShares(*(getattr(self, f)[index] for f in _SHARE_FIELDS))
        return PartitionShare(int(self.partition[index]), *(float(getattr(self, f)[index]) for f in _SHARE_FIELDS[1:]))

    def __iter__(self) -> Iterator[PartitionShare]:
        columns = (getattr(self, f).tolist() for f in _SHARE_FIELDS)
        return (PartitionShare(*row) for row in zip(*columns))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartitionShares):
            return NotImplemented
        return all(np.array_equal(getattr(self, f), getattr(other, f)) for f in _SHARE_FIELDS)


@dataclass(frozen=True, slots=True)
class Demand:
    """A topic's load per dimension (``nw_in``, ``nw_out`` bytes/s; ``disk`` bytes; ``replicas``).

    ``bytes_in``, ``bytes_out`` (consumer fetches, remote-served bytes included), ``storage`` (per replica set),
    ``remote_fetch`` and ``remote_copy`` (B/s between the leaders and the remote store; 0 where unmeasured) are the
    topic-level inputs; ``partitions`` splits them per partition (any sequence of `PartitionShare` is held as
    `PartitionShares`); ``source`` is ``"profile"`` or ``"sizes"`` (topic absent from the profile: disk and
    replicas from the snapshot's partition sizes, no traffic).
    """

    nw_in: float
    nw_out: float
    disk: float
    replicas: float
    bytes_in: float
    bytes_out: float
    storage: float
    partitions: PartitionShares
    source: Literal["profile", "sizes"] = "profile"
    remote_fetch: float = 0.0
    remote_copy: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.partitions, PartitionShares):
            object.__setattr__(self, "partitions", PartitionShares.of(self.partitions))

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
    a = cluster_arrays(snapshot)
    by_topic = snapshot.partitions_by_topic  # in snapshot order: topics sorted, each one's partitions contiguous
    topics = list(by_topic)
    counts = np.array([len(parts) for parts in by_topic.values()], dtype=np.int64)
    ends = np.cumsum(counts)
    spans = list(zip((ends - counts).tolist(), ends.tolist()))
    topic_of = np.repeat(np.arange(len(topics)), counts)
    sizes = a.part_size.astype(float)
    rate = np.zeros((len(topics), 5))  # per topic: bytes-in, consumer bytes-out, storage, remote fetch and copy
    profiled = np.zeros(len(topics), dtype=bool)
    net = np.repeat(1.0 / counts, counts)  # bytes split evenly unless every partition has a profiled rate
    for k, topic in enumerate(topics):
        ratio = _fanout(fanout, topic)
        row = profile.get(topic)
        if row is None:
            continue
        state = snapshot.topic_by_name.get(topic) or TopicState(topic=topic)
        rate[k] = _topic_rates(row, state, int(counts[k]), ratio, at)
        profiled[k] = True
        if partition_profile:
            s, e = spans[k]
            rates = [partition_profile.get((topic, p)) for p in a.part_id[s:e].tolist()]
            if all(r is not None and r.bytes_in_rate is not None for r in rates):
                net[s:e] = _weights([r.bytes_in_rate for r in rates])  # type: ignore[union-attr]
    size_total = _running_sums(sizes, ends - counts, counts)[topic_of]  # added left to right, as ``sum`` does
    disk = np.divide(sizes, size_total, out=1.0 / counts[topic_of], where=size_total > 0)
    on = profiled[topic_of]
    bytes_in = np.where(on, rate[topic_of, 0] * net, 0.0)
    bytes_out = np.where(on, rate[topic_of, 1] * net, 0.0)
    storage = np.where(on, rate[topic_of, 2] * disk, sizes)
    remote = [np.where(on, rate[topic_of, 3 + j] * net, 0.0) for j in range(2)]
    totals = _totals(bytes_in, bytes_out, storage, a.part_rf, spans, remote)
    out: dict[str, Demand] = {}
    for k, (topic, (s, e)) in enumerate(zip(topics, spans)):
        shares = PartitionShares(a.part_id[s:e], bytes_in[s:e], bytes_out[s:e], storage[s:e],
                                 remote[0][s:e], remote[1][s:e])
        out[topic] = Demand(*totals[k][:7], partitions=shares, source="profile" if profiled[k] else "sizes",
                            remote_fetch=totals[k][7], remote_copy=totals[k][8])
    return out


#: The forecast and its band's edges, as `demand_over_days` takes them.
EDGES = ("low", "forecast", "high")


def demand_over_days(
    snapshot: ClusterSnapshot,
    profile: Mapping[str, TopicProfile],
    days: Sequence[float],
    *,
    edge: Literal["low", "forecast", "high"] = "forecast",
    fanout: Mapping[str, float] | float | None = None,
    partition_profile: Mapping[tuple[str, int], PartitionProfile] | None = None,
    calibration: BandCalibration | GroupCalibration = NO_CALIBRATION,
    groups: Mapping[str, str | None] | None = None,
) -> dict[str, np.ndarray]:
    """Each profiled topic's forecast demand ``days`` after its last sample: topic → array (len(days), 4) in
    `DIMENSIONS` order.

    Row ``i`` is what `topic_demand` gives at ``"forecast"`` for the profile re-derived at ``days[i]``
    (`at_horizon`), each topic on its own growth: bytes-in and storage follow the forecast (``edge``
    ``"forecast"``) or the band's low or high edge, which `at_horizon` extends at its own implied growth; a band
    edge is widened by ``calibration`` (the backtest's spread, `pools.forecast_band`) at each day: a
    `BandCalibration` around each topic's own forecast; a `GroupCalibration` around each group's (``groups``: topic
    → pool) summed forecast by the group's band (`GroupCalibration.band`), each topic's edge its forecast × the
    group's ``e^log_band`` (a topic without a group is a group of its own, on the pooled band; a series the band
    has no horizon of keeps each topic's growth-band edge). Bytes-out, consumer
    fetches and replication alike, follows that bytes-in path (the calibrated edge): consumer bytes-out is the
    measured bytes-out × (bytes-in path / measured bytes-in), or bytes-in × fan-out without a measured bytes-out.
    Storage is capped by retention at each day. Topics absent from the profile are left out
    (their demand does not grow). Vectorised over days: one `topic_demand` split per topic, not one per day.

    Examples
    --------
    >>> from dataclasses import fields
    >>> from pools.snapshot import Broker, Capacity, PartitionState
    >>> row = TopicProfile(**{f.name: 0 for f in fields(TopicProfile)} | {"topic": "t", "forecast_horizon_days": 10,
    ...                    "bytes_in_p99": 100.0, "bytes_in_p99_growth_per_day": 0.1, "forecast_bytes_in_p99": 200.0})
    >>> snap = ClusterSnapshot("c", (Broker(1, None, Capacity(1, 1, 1, 1)), Broker(2, None, Capacity(1, 1, 1, 1))),
    ...                        (), (PartitionState("t", 0, (1, 2), leader=1),))
    >>> path = demand_over_days(snap, {"t": row}, [10, 11])["t"]
    >>> path[:, 0].round(6).tolist()  # nw_in = bytes-in × RF
    [400.0, 440.0]
    """
    if edge not in EDGES:
        raise InputError(f"demand: edge: expected one of {', '.join(EDGES)}, got {edge!r}")
    t = np.asarray(days, dtype=float)
    listed = {topic: row for topic, row in profile.items() if topic in snapshot.partitions_by_topic}
    local = {topic: replace(row, remote_fetch_bytes_p99=None, remote_copy_bytes_p99=None)
             for topic, row in listed.items()}
    unit = {topic: replace(row, bytes_in_p99=1.0, bytes_out_p99=0.0, storage_bytes=1) for topic, row in local.items()}
    out_unit = {topic: replace(row, bytes_in_p99=0.0, bytes_out_p99=1.0, storage_bytes=0)
                for topic, row in local.items()}
    split = topic_demand(snapshot, unit, 0.0, "now", partition_profile=partition_profile)
    split_out = topic_demand(snapshot, out_unit, 0.0, "now", partition_profile=partition_profile)
    remote_unit = {topic: replace(row, bytes_in_p99=0.0, bytes_out_p99=0.0, storage_bytes=0, remote_fetch_bytes_p99=1.0,
                                  remote_copy_bytes_p99=1.0) for topic, row in listed.items() if row.remote_measured}
    split_remote = topic_demand(snapshot, remote_unit, 0.0, "now", partition_profile=partition_profile)
    paths = {topic: _edge_paths(row, edge, t) for topic, row in sorted(listed.items())}
    if edge != "forecast":
        paths = _calibrated(calibration, groups or {}, edge, t, paths)
    out: dict[str, np.ndarray] = {}
    for topic, row in sorted(listed.items()):
        b, stored = paths[topic][0], paths[topic][2]
        # consumer bytes-out follows the (calibrated) bytes-in edge, as replication does
        if row.bytes_out_p99 is None:
            b_out = b * _fanout(fanout, topic)
        else:
            b_out = row.bytes_out_p99 * (b / row.bytes_in_p99 if row.bytes_in_p99 > 0 else np.ones_like(t))
        state = snapshot.topic_by_name.get(topic) or TopicState(topic=topic)
        stored = retention_capped(stored, b, state, len(snapshot.partitions_by_topic[topic]))
        w, w_out = split[topic], split_out[topic]
        nw_in, nw_out = w.nw_in * b, w_out.nw_out * b_out + w.nw_out * b
        if topic in remote_unit:  # remote fetch and copy follow the bytes-in path too, as consumer bytes-out does
            scale = b / row.bytes_in_p99 if row.bytes_in_p99 > 0 else np.ones_like(t)
            r = split_remote[topic]
            nw_in = nw_in + r.remote_fetch * (row.remote_fetch_bytes_p99 or 0.0) * scale
            nw_out = nw_out + r.remote_copy * (row.remote_copy_bytes_p99 or 0.0) * scale
        out[topic] = np.column_stack((nw_in, nw_out, w.disk * stored, np.full_like(t, w.replicas)))
    return out


#: The backtest series of a topic's bytes-in and storage, in `_edge_paths` order.
_SERIES = ("bytes_in_p99", "storage_bytes")


def _edge_paths(row: TopicProfile, edge: str, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A topic's bytes-in and storage ``edge`` paths (the growth band's, uncalibrated) and their forecast paths at
    days ``t``: ``(bytes-in edge, bytes-in forecast, storage edge, storage forecast)``."""
    key = "" if edge == "forecast" else f"_{edge}"
    b_fc = _edge_path(row.forecast_bytes_in_p99, row.forecast_bytes_in_p99, row.bytes_in_p99_growth_per_day,
                      row.forecast_horizon_days, t)
    s_fc = _edge_path(row.forecast_storage_bytes, row.forecast_storage_bytes, row.storage_growth_per_day,
                      row.forecast_horizon_days, t)
    if edge == "forecast":
        return b_fc, b_fc, s_fc, s_fc
    b = _edge_path(getattr(row, f"forecast_bytes_in_p99{key}"), row.forecast_bytes_in_p99,
                   row.bytes_in_p99_growth_per_day, row.forecast_horizon_days, t)
    stored = _edge_path(getattr(row, f"forecast_storage{key}"), row.forecast_storage_bytes,
                        row.storage_growth_per_day, row.forecast_horizon_days, t)
    return b, b_fc, stored, s_fc


def _calibrated(calibration: BandCalibration | GroupCalibration, groups: Mapping[str, str | None], edge: str,
                t: np.ndarray, paths: dict[str, tuple[np.ndarray, ...]]) -> dict[str, tuple[np.ndarray, ...]]:
    """Each topic's growth-band ``edge`` paths (`_edge_paths`) widened by ``calibration``: around its own forecast,
    or its group's summed forecast by the group's band (see `demand_over_days`)."""
    if isinstance(calibration, BandCalibration):
        members = {(topic,): calibration for topic in paths}
    else:
        named: dict[str, list[str]] = {}
        for topic in paths:
            named.setdefault(groups.get(topic) or "", []).append(topic)
        members = {(topic,): calibration.pooled for topic in named.pop("", [])}
        members.update({tuple(topics): calibration.band(group) for group, topics in named.items()})
    out = dict(paths)
    for topics, band in members.items():
        widened = [list(paths[topic]) for topic in topics]
        for k, metric in enumerate(_SERIES):
            if not band.horizons.get(metric):
                continue  # no tested horizon: each topic keeps its growth-band edge
            edges = [sum(paths[topic][2 * k + i] for topic in topics) for i in (0, 1)]
            q_low, q_high = band.log_band(metric, t, edges[1], edges[0], edges[0])
            factor = np.exp(q_low if edge == "low" else q_high)
            for one, topic in zip(widened, topics):
                one[2 * k] = paths[topic][2 * k + 1] * factor
        out.update({topic: tuple(one) for topic, one in zip(topics, widened)})
    return out


def _edge_path(value: float, forecast: float, per_day: float, stored: int, days: np.ndarray) -> np.ndarray:
    """A forecast (or band edge) ``value`` stored at ``stored`` days, re-derived at each of ``days`` as
    `at_horizon` does: the forecast compounds at ``per_day``, a band edge at its own implied growth."""
    if value <= 0:
        return np.zeros_like(days)
    if value == forecast or stored <= 0 or forecast <= 0:
        slope = math.log1p(per_day)
    else:
        level = math.log(forecast) - stored * math.log1p(per_day)
        slope = (math.log(value) - level) / stored
    return np.exp(np.minimum(math.log(value) + (days - stored) * slope, _MAX_LOG))


def replica_load(share: PartitionShare, replication_factor: int, *, leader: bool) -> tuple[float, float, float, float]:
    """Load of one replica of a partition, in `DIMENSIONS` order.

    The leader takes producer bytes-in, serves consumers and replication out to the ``replication_factor − 1``
    followers, and copies to and fetches from the remote store; a follower fetches the partition's bytes-in. Both
    store the partition and count as one replica.
    """
    if leader:
        return (share.bytes_in + share.remote_fetch,
                share.bytes_out + share.remote_copy + share.bytes_in * (replication_factor - 1), share.storage, 1.0)
    return (share.bytes_in, 0.0, share.storage, 1.0)


def broker_load(
    snapshot: ClusterSnapshot,
    demands: Mapping[str, Demand],
    assignment: Mapping[tuple[str, int], tuple[int, ...]] | None = None,
    *,
    target: np.ndarray | None = None,
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
    target : ndarray of int, shape (partitions, width), optional
        Instead of ``assignment``: every partition's target replicas as broker ids, aligned with
        ``snapshot.partitions``, first replica = leader, -1 padding at the end of each row.

    Returns
    -------
    dict of int to dict of str to float
        Broker id → dimension → load, including brokers the placement names that the snapshot lacks.

    Notes
    -----
    Vectorised over the snapshot's arrays (`pools.cluster_arrays.cluster_arrays`); O(P · width) plus one Python
    lookup per partition with an ``assignment``.
    """
    a = cluster_arrays(snapshot)
    b_in, b_out, storage, known, r_fetch, r_copy = _share_arrays(snapshot, demands)
    if target is None:
        target, lead = _assigned_rows(snapshot, assignment)
    else:
        lead = target[:, 0] if target.shape[1] else np.full(len(target), -1, dtype=np.int64)
    part, _ = np.nonzero(target >= 0)  # replicas partition by partition, in list order
    ids = target[target >= 0]
    rf = np.bincount(part, minlength=len(target))[part]
    counted = known[part]
    ids, part, rf = ids[counted], part[counted], rf[counted]
    pos = a.positions(ids)
    unlisted = np.unique(ids[pos == a.n_brokers])  # brokers the placement names that the snapshot lacks
    index = np.where(pos < a.n_brokers, pos, a.n_brokers + np.searchsorted(unlisted, ids))
    brokers = np.concatenate((a.broker_ids, unlisted))
    rep_in = b_in[part]
    leads = ids == lead[part]
    columns = (
        np.where(leads, rep_in + r_fetch[part], rep_in),
        np.where(leads, b_out[part] + r_copy[part] + rep_in * (rf - 1), 0.0),
        storage[part],
        np.ones(len(ids)),
    )
    sums = np.array([np.bincount(index, weights=c, minlength=len(brokers)) for c in columns]).T.tolist()
    return {int(brokers[i]): dict(zip(DIMENSIONS, sums[i])) for i in np.argsort(brokers, kind="stable").tolist()}


def _assigned_rows(snapshot: ClusterSnapshot,
                   assignment: Mapping[tuple[str, int], tuple[int, ...]] | None) -> tuple[np.ndarray, np.ndarray]:
    """Every partition's replicas as broker ids (-1 padding) and its leader (-1 = none): ``assignment``'s when it
    names the partition (its first replica leads), else the current ones (`ClusterArrays.current_leader_id`)."""
    a = cluster_arrays(snapshot)
    rows = [assignment.get((p.topic, p.partition)) for p in snapshot.partitions] if assignment else []
    named = [i for i, r in enumerate(rows) if r is not None]
    assigned = [rows[i] for i in named]
    lengths = np.fromiter(map(len, assigned), np.int64, len(assigned))
    current = a.replica_ids()
    target = np.full((len(current), max(current.shape[1], int(lengths.max(initial=0)))), -1, dtype=np.int64)
    target[:, : current.shape[1]] = current
    lead = a.current_leader_id()
    if named:
        at = np.array(named, dtype=np.int64)
        target[at] = -1
        row = np.repeat(at, lengths)
        target[row, np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)] = np.fromiter(
            (b for r in assigned for b in r), np.int64, len(row))
        lead[at] = np.where(lengths > 0, target[at, 0], -1)
    return target, lead


def _share_arrays(snapshot: ClusterSnapshot, demands: Mapping[str, Demand]) -> tuple[np.ndarray, ...]:
    """Per partition of the snapshot: bytes-in, consumer bytes-out, storage, whether a demand covers it, remote
    fetch and remote copy (read-only). Built once per snapshot and set of `Demand` objects (the planner and the
    validator ask for the same forecast several times): the last one is kept."""
    held = tuple(map(demands.get, snapshot.partitions_by_topic))
    kept: list = per_snapshot("partition shares", snapshot, list)
    for key, arrays in kept:
        if all(map(operator.is_, key, held)):
            return arrays
    arrays = _build_share_arrays(snapshot, held)
    for column in arrays:
        column.flags.writeable = False
    kept[:] = [(held, arrays)]
    return arrays


def _build_share_arrays(snapshot: ClusterSnapshot, held: Sequence[Demand | None]) -> tuple[np.ndarray, ...]:
    part_id = cluster_arrays(snapshot).part_id
    n = len(part_id)
    b_in, b_out, storage, r_fetch, r_copy = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    known = np.zeros(n, dtype=bool)
    i = 0
    for parts, demand in zip(snapshot.partitions_by_topic.values(), held):
        k = len(parts)
        if demand is not None:
            shares, ids = demand.partitions, part_id[i : i + k]
            if len(shares) == k and np.array_equal(shares.partition, ids):
                span = slice(i, i + k)
                b_in[span], b_out[span], storage[span] = shares.bytes_in, shares.bytes_out, shares.storage
                r_fetch[span], r_copy[span] = shares.remote_fetch, shares.remote_copy
                known[span] = True
            else:
                position = {p: i + j for j, p in enumerate(ids.tolist())}
                for s in shares:
                    j = position.get(s.partition)
                    if j is not None:
                        b_in[j], b_out[j], storage[j], known[j] = s.bytes_in, s.bytes_out, s.storage, True
                        r_fetch[j], r_copy[j] = s.remote_fetch, s.remote_copy
        i += k
    return b_in, b_out, storage, known, r_fetch, r_copy


@dataclass(frozen=True, eq=False)
class PartitionLoads:
    """Per partition, aligned with ``snapshot.partitions``: bytes-in, consumer bytes-out, storage per replica, and
    the leader's remote fetch and copy (None: zeros)."""

    bytes_in: np.ndarray
    bytes_out: np.ndarray
    storage: np.ndarray
    remote_fetch: np.ndarray | None = None
    remote_copy: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in _REMOTE:
            if getattr(self, name) is None:
                object.__setattr__(self, name, np.zeros(len(self.bytes_in)))


def partition_loads(snapshot: ClusterSnapshot, demands: Mapping[str, Demand]) -> PartitionLoads:
    """The `PartitionShare` of every partition as arrays; a partition without a demand stores its size.

    Examples
    --------
    >>> from pools.snapshot import Broker, Capacity, PartitionState
    >>> snap = ClusterSnapshot("c", (Broker(1, None, Capacity(1, 1, 1, 1)),), (),
    ...                        (PartitionState("t", 0, (1,), leader=1, sizes=(7,)),))
    >>> partition_loads(snap, {}).storage.tolist()
    [7.0]
    """
    b_in, b_out, storage, known, r_fetch, r_copy = _share_arrays(snapshot, demands)
    storage = np.where(known, storage, cluster_arrays(snapshot).part_size)
    return PartitionLoads(b_in.copy(), b_out.copy(), storage, r_fetch.copy(), r_copy.copy())


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


def _weights(values: list[float]) -> list[float]:
    total = sum(values)
    if total > 0:
        return [v / total for v in values]
    return [1.0 / len(values)] * len(values) if values else []


def _topic_rates(row: TopicProfile, state: TopicState, partitions: int, fanout: float,
                 at: str) -> tuple[float, float, float, float, float]:
    """A profiled topic's bytes-in, consumer bytes-out, storage per replica set, remote fetch and remote copy, at the
    forecast or now; the remote traffic grows as consumer bytes-out does, with bytes-in."""
    if at == "forecast":
        bytes_in = row.forecast_bytes_in_p99
        growth = row.forecast_growth_factor
        storage = retention_capped(row.forecast_storage_bytes, bytes_in, state, partitions)
    else:
        bytes_in, growth, storage = row.bytes_in_p99, 1.0, float(row.storage_bytes)
    bytes_out = bytes_in * fanout if row.bytes_out_p99 is None else row.bytes_out_p99 * growth
    return (bytes_in, bytes_out, storage, (row.remote_fetch_bytes_p99 or 0.0) * growth,
            (row.remote_copy_bytes_p99 or 0.0) * growth)


def retention_capped(storage, bytes_in, state: TopicState, partitions: int):
    """Storage, capped by what retention lets the topic keep on the brokers' disks at ``bytes_in`` B/s (delete
    policy only; a tiered topic's local retention, `TopicState.local_retention_ms`, is a cap like
    ``retention.ms``); floats or arrays.

    >>> float(retention_capped(900.0, 1.0, TopicState("t", configs={"retention.bytes": "100"}), 3))
    300.0
    """
    policy = state.configs.get("cleanup.policy", "delete")
    if "delete" not in policy:
        return storage
    for ms in (state.retention_ms, state.local_retention_ms):
        if ms is not None:
            storage = np.minimum(storage, bytes_in * ms / 1000.0)
    for per_partition in (state.retention_bytes, state.local_retention_bytes):
        if per_partition is not None:
            storage = np.minimum(storage, float(per_partition) * partitions)
    return storage


def _totals(bytes_in: np.ndarray, bytes_out: np.ndarray, storage: np.ndarray, rf: np.ndarray,
            spans: list[tuple[int, int]], remote: Sequence[np.ndarray]) -> list[tuple[float, ...]]:
    """Per topic (partition ``spans``): ``nw_in``, ``nw_out``, ``disk``, ``replicas``, ``bytes_in``, ``bytes_out``,
    ``storage``, ``remote_fetch``, ``remote_copy``, the fields of `Demand` in order (``remote``: the last two per
    partition; each adds to its leader's term, exactly nothing where it is 0).

    Each partition adds its leader's `replica_load`, then its RF − 1 followers' in one term (partitions without
    replicas add nothing), float by float from the first partition (`_running_sums`), and so are the topic-level
    inputs (as Python's ``sum`` adds them). The totals are those of a loop over the partitions, bit for bit.
    """
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    counts = np.array([e - s for s, e in spans], dtype=np.int64)
    listed, followers = rf > 0, rf > 1
    r_fetch, r_copy = remote
    nw_in = _running_sums(_interleave(np.where(listed, bytes_in + r_fetch, 0.0),
                                      np.where(followers, bytes_in * (rf - 1), 0.0)), 2 * starts, 2 * counts)
    nw_out = _running_sums(np.where(listed, bytes_out + r_copy + bytes_in * (rf - 1), 0.0), starts, counts)
    disk = _running_sums(_interleave(np.where(listed, storage, 0.0), np.where(followers, storage * (rf - 1), 0.0)),
                         2 * starts, 2 * counts)
    replicas = np.add.reduceat(np.where(listed, rf, 0), starts) if len(starts) else np.zeros(0, dtype=np.int64)
    inputs = [_running_sums(c, starts, counts).tolist() for c in (bytes_in, bytes_out, storage, r_fetch, r_copy)]
    return list(zip(nw_in.tolist(), nw_out.tolist(), disk.tolist(), map(float, replicas.tolist()), *inputs))


def _interleave(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``[first[0], second[0], first[1], second[1], ...]``."""
    return np.column_stack((first, second)).ravel()


def _running_sums(terms: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The sum of each segment ``terms[start : start + count]`` added left to right, as ``+=`` in a loop would
    (numpy's own sums are pairwise): one vector step per position, over the segments still that long.

    Examples
    --------
    >>> _running_sums(np.array([1e16, 1.0, 1.0, 5.0, 2.0]), np.array([0, 3]), np.array([3, 2])).tolist()
    [1e+16, 7.0]
    """
    order = np.argsort(-counts, kind="stable")
    begin, length = starts[order], counts[order]
    acc = np.zeros(len(order))
    for k in range(int(length.max(initial=0))):
        live = int(np.searchsorted(-length, -k, side="left"))  # segments longer than k come first
        acc[:live] += terms[begin[:live] + k]
    out = np.empty_like(acc)
    out[order] = acc
    return out
