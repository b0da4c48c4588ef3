"""The synthetic cluster: brokers, racks, pools, tenants, topics, replica placement and planted problems.

Layout (decided here, documented in ``docs/sample.md``):

- Brokers ``1..N``; the last one carries no pool tag and no replica (``broker_without_pool``). The others
  are split into ``max(2, (N-1) // 4)`` pools of contiguous ids. A pool of 4+ brokers spans three racks
  (so it has two brokers in one rack), a pool of 3 spans two racks, a pool of 2 spans two racks.
- Each pool serves two tenants; a topic is ``<tenant>.<name>`` and the policy selects tenants with
  ``'<tenant>\\..*'``. One extra topic, ``legacy.<name>``, belongs to no tenant and no pool
  (``topic_without_pool``); it lives on the first pool's brokers.
- Replicas are placed inside the topic's pool with Kafka's rack-aware ``AdminUtils`` round robin, so racks
  are diverse and preferred leaders spread; RF is 3 where the pool has three racks, else 2.
- `planner.sample.plant` then plants the problems, each on its own partition.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from planner.placement import assign_replicas_to_brokers
from pools.errors import InputError

__all__ = [
    "RACKS",
    "DATA_DIR",
    "FAILED_DIR",
    "SampleSpec",
    "DEFAULT_DAYS",
    "DEFAULT_STEP_S",
    "SampleBroker",
    "SamplePool",
    "SampleTopic",
    "SamplePartition",
    "Problem",
    "SampleCluster",
    "build_cluster",
]

RACKS: tuple[str, ...] = ("r1", "r2", "r3")
DATA_DIR = "/var/lib/kafka/data"
#: The second log dir of the broker whose disk failed (``log_dir_error``).
FAILED_DIR = "/var/lib/kafka/data2"

_POOLS = ("core", "stream", "batch", "edge", "search", "iot", "ml", "ops")
_TENANTS = (
    ("payments", "orders"), ("ads", "clicks"), ("analytics", "reports"), ("logistics", "fleet"),
    ("catalog", "pricing"), ("sensors", "alerts"), ("features", "models"), ("audit", "billing"),
)
_NAMES = (
    "events", "changelog", "commands", "snapshots", "dlq", "metrics", "updates", "requests",
    "replies", "audit", "outbox", "inbox", "stream", "facts", "raw", "enriched",
)
_DAY_MS = 86_400_000


#: The default history: a quarter (13 weeks), so a default run exercises weekly seasonality, out-of-time backtest
#: origins and dated crossings.
DEFAULT_DAYS = 91
#: The default scrape interval: one scrape per log-size sample keeps a quarter as light as two weeks a minute apart.
DEFAULT_STEP_S = 900


@dataclass(frozen=True, slots=True)
class SampleSpec:
    """What to generate: the seed, the size and the time window (``end`` in epoch seconds, UTC)."""

    seed: int = 0
    brokers: int = 9
    topics: int = 30
    days: int = DEFAULT_DAYS
    step_s: int = DEFAULT_STEP_S
    end: int = 1_793_577_600  # 2026-11-02T00:00:00Z, a Monday
    cluster: str = "sample"
    kafka_4: bool = False

    #: Largest sample: a thousand brokers (the clusters poolplan is built for), ten thousand topics and a quarter
    #: of metrics keep the generated files within a few GB.
    MAX_BROKERS = 1_000
    MAX_TOPICS = 10_000
    MAX_DAYS = 92

    def __post_init__(self) -> None:
        if not 6 <= self.brokers <= self.MAX_BROKERS:
            raise InputError(f"--brokers: expected 6 (two pools, three racks, one spare) to {self.MAX_BROKERS}, "
                             f"got {self.brokers}")
        if not 6 <= self.topics <= self.MAX_TOPICS:
            raise InputError(f"--topics: expected 6 (the planted problems need them) to {self.MAX_TOPICS}, "
                             f"got {self.topics}")
        if not 2 <= self.days <= self.MAX_DAYS:
            raise InputError(f"--days: expected 2 to {self.MAX_DAYS} (a quarter), got {self.days}")
        if self.step_s <= 0 or 900 % self.step_s:
            raise InputError(f"--step: expected a divisor of 900 seconds (the log-size spacing), got {self.step_s}")
        if self.end % 86_400:
            raise InputError(f"--end: expected midnight UTC, got epoch {self.end}")

    @property
    def start(self) -> int:
        return self.end - self.days * 86_400


@dataclass(frozen=True, slots=True)
class SampleBroker:
    """A broker: id, rack, pool tag (None for the spare) and the log dirs it reports."""

    id: int
    rack: str
    pool: str | None
    log_dirs: tuple[str, ...] = (DATA_DIR,)

    @property
    def instance(self) -> str:
        """The Prometheus ``instance`` label of its jmx_exporter."""
        return f"kafka-{self.id}:7071"


@dataclass(frozen=True, slots=True)
class SamplePool:
    """A pool: its brokers (in id order), the ones the policy pins, its tenants and racks."""

    name: str
    brokers: tuple[int, ...]
    pinned: tuple[int, ...]
    tenants: tuple[str, ...]
    racks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SampleTopic:
    """A topic and the true traffic model behind its metrics.

    ``rate_end`` is the weekday mean bytes-in rate (B/s, whole topic) at the end of the window; the rate at
    time t is ``rate_end * (1 + growth)**((t - end) / day) * (1 + amplitude * sin(2 pi (hour - peak_hour + 6)
    / 24)) * (weekend_factor on Saturday and Sunday) * lognormal(0, noise_sigma)``, split over partitions by
    ``weights``.
    """

    topic: str
    topic_id: str
    tenant: str | None
    pool: str | None
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...]
    rate_end: float
    growth_per_day: float
    amplitude: float
    peak_hour: float
    weekend_factor: float
    noise_sigma: float
    message_bytes: float
    fanout: int
    weights: tuple[float, ...]
    retention_ms: int | None
    retention_bytes: int | None
    compact_bytes: int | None = None

    @property
    def config_map(self) -> dict[str, str]:
        return dict(self.configs)

    @property
    def min_insync_replicas(self) -> int:
        return int(self.config_map.get("min.insync.replicas", "1"))


@dataclass(frozen=True, slots=True)
class SamplePartition:
    """A partition as ``kafka-topics --describe`` shows it at the end of the window."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int | None
    isr: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, order=True)
class Problem:
    """A planted problem in the audit's vocabulary (absent fields are None)."""

    kind: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    pool: str | None = None
    log_dir: str | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind}
        for key in ("topic", "partition", "broker", "pool", "log_dir"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class SampleCluster:
    """The generated cluster at the end of the window, plus the timed events behind the metrics.

    ``events`` maps a name to ``(topic, partition, seconds before end)``: ``offline`` (leader lost),
    ``not_preferred`` (leader moved to the second replica), ``reassignment`` (started).
    """

    spec: SampleSpec
    brokers: tuple[SampleBroker, ...]
    pools: tuple[SamplePool, ...]
    topics: tuple[SampleTopic, ...]
    partitions: tuple[SamplePartition, ...]
    planted: tuple[Problem, ...]
    events: tuple[tuple[str, str, int, int], ...] = ()
    failed_log_dir: tuple[int, str] | None = None
    restarts: tuple[tuple[int, int, int], ...] = field(default=())

    @property
    def broker_by_id(self) -> dict[int, SampleBroker]:
        return {b.id: b for b in self.brokers}

    @property
    def topic_by_name(self) -> dict[str, SampleTopic]:
        return {t.topic: t for t in self.topics}


def build_cluster(spec: SampleSpec, rng: np.random.Generator) -> SampleCluster:
    """Generate brokers, pools, topics and a clean placement (`planner.sample.plant` adds the problems).

    Parameters
    ----------
    spec : SampleSpec
        Sizes and window.
    rng : numpy.random.Generator
        The only source of randomness (``Generator(PCG64(seed))``).

    Returns
    -------
    SampleCluster
    """
    brokers, pools = _layout(spec.brokers)
    topics = _topics(spec, pools, rng)
    partitions = _place(topics, pools, brokers, rng)
    return SampleCluster(spec, brokers, pools, topics, partitions, planted=())


def _layout(n: int) -> tuple[tuple[SampleBroker, ...], tuple[SamplePool, ...]]:
    pooled = n - 1
    k = max(2, pooled // 4)
    sizes = [pooled // k + (1 if i < pooled % k else 0) for i in range(k)]
    brokers: list[SampleBroker] = []
    pools: list[SamplePool] = []
    next_id = 1
    for p, size in enumerate(sizes):
        name = _POOLS[p] if p < len(_POOLS) else f"pool{p}"
        tenants = _TENANTS[p] if p < len(_TENANTS) else (f"tenant{2 * p}", f"tenant{2 * p + 1}")
        n_racks = 3 if size >= 4 else 2
        ids = tuple(range(next_id, next_id + size))
        racks = [RACKS[(p + j % n_racks) % len(RACKS)] for j in range(size)]
        brokers += [SampleBroker(b, r, name) for b, r in zip(ids, racks)]
        pools.append(SamplePool(name, ids, ids[:2], tenants, tuple(sorted(set(racks)))))
        next_id += size
    brokers.append(SampleBroker(n, RACKS[(n - 1) % len(RACKS)], None))
    return tuple(brokers), tuple(pools)


def _topic_id(rng: np.random.Generator) -> str:
    """A Kafka topic id: 16 random bytes as URL-safe base64 without padding (22 chars)."""
    import base64

    raw = rng.integers(0, 256, size=16, dtype=np.uint8).tobytes()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _topics(spec: SampleSpec, pools: tuple[SamplePool, ...], rng: np.random.Generator) -> tuple[SampleTopic, ...]:
    tenants = [(t, pool) for pool in pools for t in pool.tenants]
    owners: list[tuple[str | None, SamplePool]] = [tenants[i % len(tenants)] for i in range(spec.topics - 1)]
    owners.append((None, pools[0]))
    used: set[str] = set()
    topics = []
    for i, (tenant, pool) in enumerate(owners):
        prefix = tenant or "legacy"
        name = _NAMES[int(rng.integers(len(_NAMES)))]
        topic = f"{prefix}.{name}"
        version = 2
        while topic in used:
            topic = f"{prefix}.{name}-v{version}"
            version += 1
        used.add(topic)
        rf = 3 if len(pool.racks) >= 3 and rng.random() < 0.8 else 2
        partitions = int(rng.choice([3, 4, 6, 6, 8, 12, 12, 16, 24]))
        # heavy tail: lognormal around 300 kB/s, a few topics 10-30 MB/s
        rate = float(np.clip(rng.lognormal(np.log(3e5), 1.4), 2e3, 3e7))
        growth = float(np.clip(rng.normal(0.004, 0.006), -0.005, 0.025))
        compacted = rng.random() < 0.12
        retention_days = int(rng.choice([1, 3, 7, 7]))
        configs: dict[str, str] = {}
        retention_ms: int | None = retention_days * _DAY_MS
        retention_bytes: int | None = None
        compact_bytes = None
        if compacted:
            configs["cleanup.policy"] = "compact"
            retention_ms = None
            compact_bytes = int(rng.uniform(2e8, 5e9))
        else:
            configs["cleanup.policy"] = "delete"
            configs["retention.ms"] = str(retention_ms)
            if rng.random() < 0.15:
                retention_bytes = int(rng.choice([1, 5, 10])) * 1_073_741_824
                configs["retention.bytes"] = str(retention_bytes)
        if rf == 3:
            configs["min.insync.replicas"] = "2"
        raw_weights = rng.dirichlet(np.full(partitions, 8.0 if rng.random() < 0.7 else 1.5))
        topics.append(
            SampleTopic(
                topic=topic,
                topic_id=_topic_id(rng),
                tenant=tenant,
                pool=pool.name if tenant is not None else None,
                partitions=partitions,
                replication_factor=rf,
                configs=tuple(configs.items()),
                rate_end=round(rate, 3),
                growth_per_day=round(growth, 6),
                amplitude=round(float(rng.uniform(0.15, 0.6)), 4),
                peak_hour=round(float(rng.uniform(10, 21)), 3),
                weekend_factor=round(float(rng.uniform(0.55, 1.0)), 4),
                noise_sigma=round(float(rng.uniform(0.03, 0.12)), 4),
                message_bytes=round(float(rng.lognormal(np.log(900), 0.7)) + 40, 1),
                fanout=int(rng.choice([0, 1, 1, 2, 2, 3])),
                weights=tuple(float(w) for w in raw_weights),
                retention_ms=retention_ms,
                retention_bytes=retention_bytes,
                compact_bytes=compact_bytes,
            )
        )
    if not any(t.min_insync_replicas >= 2 for t in topics if t.tenant is not None):
        # the under-min-ISR plant needs a durable topic: make the first tenant topic one
        i = next(i for i, t in enumerate(topics) if t.tenant is not None)
        topics[i] = replace(topics[i], configs=topics[i].configs + (("min.insync.replicas", "2"),))
    return tuple(sorted(topics, key=lambda t: t.topic))


def _place(
    topics: tuple[SampleTopic, ...],
    pools: tuple[SamplePool, ...],
    brokers: tuple[SampleBroker, ...],
    rng: np.random.Generator,
) -> tuple[SamplePartition, ...]:
    rack = {b.id: b.rack for b in brokers}
    by_name = {p.name: p for p in pools}
    out = []
    for t in topics:
        pool = by_name[t.pool] if t.pool is not None else pools[0]
        assignment = assign_replicas_to_brokers(
            [(b, rack[b]) for b in pool.brokers],
            t.partitions,
            t.replication_factor,
            seed=int(rng.integers(0, 2**31 - 1)),
        )
        for p, replicas in sorted(assignment.items()):
            out.append(SamplePartition(t.topic, p, tuple(replicas), replicas[0], tuple(replicas)))
    return tuple(out)
