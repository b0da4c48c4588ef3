"""Per-minute traffic, leadership and the jmx_exporter counters a scrape would see, as numpy arrays.

Model (see `SampleTopic` for the rate formula): each topic's bytes per scrape interval are split over its
partitions by fixed weights; the bytes of an interval land on the partition's leader during it. The
leader is the preferred replica except during a rolling restart of that broker (leadership moves to the
next replica and returns up to 5 minutes after the broker is back, as the controller's preferred-leader
election does) and for the planted partitions (leader moved for good, or lost).

Counters follow Kafka's meters: ``BytesInPerSec`` and ``MessagesInPerSec`` of a topic exist on a broker
only while it leads at least one partition of the topic (``removeOldLeaderMetrics`` closes them when it
leads none; they are re-created from 0); ``BytesOutPerSec`` is created on first use and kept; every meter
restarts from 0 when its broker restarts, and a down broker is not scraped. Interval ``k`` ends at scrape
``k``; a meter created during interval ``k`` reads that interval's bytes at scrape ``k``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.sample.cluster import SampleCluster, SampleTopic

__all__ = ["FAMILIES", "LOG_SIZE_STEP_S", "Series", "Traffic", "simulate", "topic_rates"]

#: Counter families, by the short name used in file names and the truth.
FAMILIES: tuple[str, ...] = ("bytesin", "bytesout", "messagesin")
#: Spacing of the ``kafka_log_log_size`` gauge samples.
LOG_SIZE_STEP_S = 900
_DAY = 86_400
_ELECTION_DELAY_S = 300


@dataclass(frozen=True)
class Series:
    """One exported series: ``values`` on the scrape grid (NaN where absent); ``topic`` None = broker-wide."""

    broker: int
    family: str
    topic: str | None
    partition: int | None
    values: np.ndarray


@dataclass(frozen=True)
class Traffic:
    """Everything the writers and the truth need, on the scrape grid ``times`` (epoch seconds)."""

    times: np.ndarray
    alive: dict[int, np.ndarray]
    partition_bytes: dict[tuple[str, int], np.ndarray]
    counters: tuple[Series, ...]
    log_sizes: tuple[Series, ...]
    size_times: np.ndarray
    sizes: dict[tuple[str, int], np.ndarray]
    resets: tuple[tuple[int, str, int], ...]

    def partition_size(self, key: tuple[str, int], t: int) -> int:
        """Logical size of partition ``key`` at time ``t`` (a multiple of the log-size step in the window)."""
        return int(self.sizes[key][int((t - self.size_times[0]) // LOG_SIZE_STEP_S)])


def topic_rates(topic: SampleTopic, times: np.ndarray, end: int, rng: np.random.Generator) -> np.ndarray:
    """True bytes-in rate (B/s) of ``topic`` at each of ``times`` (interval midpoints), noise included."""
    days = (times - end) / _DAY
    level = topic.rate_end * np.power(1.0 + topic.growth_per_day, days)
    hour = (times % _DAY) / 3600.0
    diurnal = 1.0 + topic.amplitude * np.sin(2 * np.pi * (hour - topic.peak_hour + 6.0) / 24.0)
    weekday = ((times // _DAY).astype(np.int64) + 3) % 7  # 1970-01-01 was a Thursday; Monday = 0
    weekly = np.where(weekday >= 5, topic.weekend_factor, 1.0)
    sigma = topic.noise_sigma
    noise = np.exp(rng.normal(-sigma * sigma / 2, sigma, size=times.shape))
    return level * diurnal * weekly * noise


def simulate(cluster: SampleCluster, rng: np.random.Generator) -> Traffic:
    """Run the traffic model over the window (and the retention before it, for sizes).

    Returns
    -------
    Traffic
        Per-partition bytes per interval, the counter series per broker and the log-size gauges.
    """
    spec = cluster.spec
    step = spec.step_s
    history = max(_DAY, *((t.retention_ms or 0) // 1000 for t in cluster.topics))  # whole days
    n_hist = history // step
    n = spec.days * _DAY // step
    ends = spec.start - history + step * np.arange(1, n_hist + n + 1, dtype=np.int64)
    times = ends[n_hist:]
    leaders = _leaders(cluster, times)
    alive = _alive(cluster, times)
    pbytes: dict[tuple[str, int], np.ndarray] = {}
    full: dict[tuple[str, int], np.ndarray] = {}
    offline_since = {(e[1], e[2]): spec.end - e[3] for e in cluster.events if e[0] == "offline"}
    for t in cluster.topics:
        rates = topic_rates(t, (ends - step / 2).astype(np.float64), spec.end, rng)
        for p in range(t.partitions):
            b = rates * step * t.weights[p]
            key = (t.topic, p)
            if key in offline_since:
                b = np.where(ends > offline_since[key], 0.0, b)
            full[key] = b
            pbytes[key] = b[n_hist:]
    counters, resets = _counters(cluster, times, leaders, alive, pbytes, rng)
    size_idx = np.arange(n_hist + LOG_SIZE_STEP_S // step - 1, n_hist + n, LOG_SIZE_STEP_S // step)
    size_times = ends[size_idx]
    topics = cluster.topic_by_name
    sizes = {
        key: _sizes(topics[key[0]], topics[key[0]].weights[key[1]], full[key], ends, step)[size_idx] for key in full
    }
    log_sizes = _log_size_series(cluster, alive, times, size_times, sizes)
    return Traffic(times, alive, pbytes, counters, log_sizes, size_times, sizes, resets)


def _leaders(cluster: SampleCluster, times: np.ndarray) -> dict[tuple[str, int], np.ndarray]:
    """Leader broker during each interval (-1 = none); interval k ends at ``times[k]``."""
    spec = cluster.spec
    starts = times - spec.step_s
    planted = {(e[1], e[2]): (e[0], spec.end - e[3]) for e in cluster.events if e[0] in ("offline", "not_preferred")}
    out = {}
    for p in cluster.partitions:
        original = p.replicas
        if p.removing_replicas:
            original = tuple(b for b in p.replicas if b not in p.adding_replicas)
        lead = np.full(times.shape, original[0], dtype=np.int64)
        if (p.topic, p.partition) in planted:
            kind, since = planted[(p.topic, p.partition)]
            lead[starts >= since] = -1 if kind == "offline" else original[1]
        for broker, down, up in cluster.restarts:
            # leadership leaves the stopped broker and returns after the next preferred-leader election
            others = [b for b in original if b != broker]
            lead[(lead == broker) & (starts >= down) & (starts < up + _ELECTION_DELAY_S)] = others[0] if others else -1
        out[(p.topic, p.partition)] = lead
    return out


def _alive(cluster: SampleCluster, times: np.ndarray) -> dict[int, np.ndarray]:
    out = {b.id: np.ones(times.shape, dtype=bool) for b in cluster.brokers}
    for broker, down, up in cluster.restarts:
        out[broker][(times > down) & (times <= up)] = False
    return out


def _sessions(alive: np.ndarray) -> np.ndarray:
    """Session number of each scrape: it increases after every down period (the JVM restarted)."""
    starts = alive & ~np.concatenate(([False], alive[:-1]))
    return np.cumsum(starts)


def _counter(inc: np.ndarray, active: np.ndarray, offset: float) -> np.ndarray:
    """Cumulative whole counts over runs of ``active``, from 0 at each run start (``offset`` for a run at 0)."""
    values = np.full(inc.shape, np.nan)
    idx = np.flatnonzero(active)
    if idx.size == 0:
        return values
    breaks = np.flatnonzero(np.diff(idx) > 1) + 1
    for run in np.split(idx, breaks):
        base = offset if run[0] == 0 else 0.0
        values[run] = np.floor(base + np.cumsum(inc[run]))
    return values


def _counters(
    cluster: SampleCluster,
    times: np.ndarray,
    leaders: dict[tuple[str, int], np.ndarray],
    alive: dict[int, np.ndarray],
    pbytes: dict[tuple[str, int], np.ndarray],
    rng: np.random.Generator,
) -> tuple[tuple[Series, ...], tuple[tuple[int, str, int], ...]]:
    """Every counter series per broker, and the re-creations of per-topic meters ``(broker, topic, time)``."""
    by_broker: dict[int, dict[str, dict[str, np.ndarray]]] = {}
    led_by: dict[int, dict[str, np.ndarray]] = {}
    for t in cluster.topics:
        for p in range(t.partitions):
            lead = leaders[(t.topic, p)]
            b = pbytes[(t.topic, p)]
            for broker in np.unique(lead[lead >= 0]):
                mask = lead == broker
                fam = by_broker.setdefault(int(broker), {}).setdefault(t.topic, {
                    f: np.zeros(times.shape) for f in FAMILIES
                })
                fam["bytesin"] += np.where(mask, b, 0.0)
                fam["messagesin"] += np.where(mask, b / t.message_bytes, 0.0)
                fam["bytesout"] += np.where(mask, b * t.fanout, 0.0)
                led = led_by.setdefault(int(broker), {}).setdefault(t.topic, np.zeros(times.shape, dtype=bool))
                led |= mask
    series: list[Series] = []
    resets: list[tuple[int, str, int]] = []
    topics = cluster.topic_by_name
    for broker in sorted(alive):
        up = alive[broker]
        session = _sessions(up)
        totals = {f: np.zeros(times.shape) for f in FAMILIES}
        for topic in sorted(by_broker.get(broker, {})):
            fam = by_broker[broker][topic]
            leads = led_by[broker][topic] & up
            uptime = float(rng.uniform(0.5, 20.0)) * _DAY
            for f in FAMILIES:
                totals[f] += fam[f]
            mean_rate = fam["bytesin"].mean() / cluster.spec.step_s
            for f in ("bytesin", "messagesin"):
                scale = 1.0 if f == "bytesin" else 1.0 / topics[topic].message_bytes
                series.append(Series(broker, f, topic, None, _counter(fam[f], leads, mean_rate * uptime * scale)))
            if topics[topic].fanout:
                created = np.zeros(times.shape, dtype=bool)
                for s in np.unique(session[up]):
                    in_s = up & (session == s)
                    first = np.flatnonzero(leads & in_s)
                    if first.size:
                        created[first[0]:] |= in_s[first[0]:]
                offset = mean_rate * uptime * topics[topic].fanout
                series.append(Series(broker, "bytesout", topic, None, _counter(fam["bytesout"], created, offset)))
            starts = np.flatnonzero(leads & ~np.concatenate(([False], leads[:-1])))
            resets += [(broker, topic, int(times[k])) for k in starts if k > 0]
        uptime = float(rng.uniform(5.0, 60.0)) * _DAY
        for f in FAMILIES:
            offset = totals[f].mean() / cluster.spec.step_s * uptime
            series.append(Series(broker, f, None, None, _counter(totals[f], up, offset)))
    return tuple(series), tuple(sorted(resets))


def _sizes(
    topic: SampleTopic, weight: float, bytes_per_interval: np.ndarray, ends: np.ndarray, step: int
) -> np.ndarray:
    """Logical partition size after each interval: the bytes still retained.

    A compacted partition holds its share of the key space (growing with the traffic) plus the dirty
    bytes written since the cleaner last ran, modelled as up to one hour of writes.
    """
    cum = np.cumsum(bytes_per_interval)
    if topic.compact_bytes is not None:
        keyspace = topic.compact_bytes * weight * np.power(1.0 + topic.growth_per_day, (ends - ends[-1]) / _DAY)
        hour = 3600 // step
        dirty = cum - np.concatenate((np.zeros(hour), cum[:-hour]))
        return np.floor(keyspace + dirty * ((ends // step) % hour) / hour)
    window = (topic.retention_ms or 0) // 1000 // step
    retained = cum - np.concatenate((np.zeros(window), cum[:-window])) if window < cum.size else cum
    if topic.retention_bytes is not None:
        retained = np.minimum(retained, topic.retention_bytes)
    return np.floor(retained)


def _log_size_series(
    cluster: SampleCluster,
    alive: dict[int, np.ndarray],
    times: np.ndarray,
    size_times: np.ndarray,
    sizes: dict[tuple[str, int], np.ndarray],
) -> tuple[Series, ...]:
    """``kafka_log_log_size`` of every replica on its broker, NaN while the broker is down or the log absent."""
    idx = np.searchsorted(times, size_times)
    out = []
    for p in cluster.partitions:
        key = (p.topic, p.partition)
        for broker in p.replicas:
            values = sizes[key].astype(np.float64)
            if p.leader is None and broker == p.isr[0]:
                # the log dir holding it failed: the Log and its gauges are gone
                values[size_times > cluster.spec.end - _event_age(cluster, "offline", key)] = np.nan
            if broker in p.adding_replicas:
                since = cluster.spec.end - _event_age(cluster, "reassignment", key)
                copied = np.clip((size_times - since) / (2.0 * (cluster.spec.end - since)), 0.0, 1.0)
                values = np.where(size_times > since, np.floor(values * copied), np.nan)
            values = np.where(alive[broker][idx], values, np.nan)
            out.append(Series(broker, "log_size", p.topic, p.partition, values))
    return tuple(out)


def _event_age(cluster: SampleCluster, kind: str, key: tuple[str, int]) -> int:
    return next(e[3] for e in cluster.events if e[0] == kind and (e[1], e[2]) == key)
