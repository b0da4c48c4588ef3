"""Random pooled clusters for property tests and benchmarks (test and benchmark support, not the product): snapshot,
policy and profile from one seed. The benchmarks import it as `random_clusters` (their folder is on the path), the
tests as `benchmarks.random_clusters`.

Each pool ``p{j}`` serves one tenant ``tenant{j}`` (topics ``tenant{j}.t{n}``) that must not share with its
neighbour; a few topics ``misc.t{n}`` float between the default pools. Brokers carry their current pool tag;
replicas sit on their pool's brokers except a ``misplaced`` fraction spread over the whole cluster, which is the
drift a plan repairs. Capacities are scaled so the forecast uses about ``load`` of the cluster.
"""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

from pools.policy import Defaults, NewBrokerType, PoolPolicy, PoolSpec, TenantSpec
from pools.pool_rules import DEFAULT_FORECAST_HORIZON_DAYS
from pools.profile import TopicProfile
from pools.snapshot import DIMENSIONS, Broker, Capacity, ClusterSnapshot, PartitionState, TopicState

__all__ = ["random_cluster", "profile_row"]

_TS = datetime(2026, 10, 1, tzinfo=timezone.utc)


def profile_row(topic: str, partitions: int, bytes_in: float, bytes_out: float | None, storage: float,
                growth: float = 1.0) -> TopicProfile:
    """A profile row with p99 rates ``bytes_in``/``bytes_out`` and ``storage``, forecast at ``growth`` ×."""
    return TopicProfile(
        topic=topic, partitions=partitions, bytes_in_p50=bytes_in / 2, bytes_in_p95=bytes_in * 0.9,
        bytes_in_p99=bytes_in, bytes_in_max=bytes_in * 1.2, bytes_out_p95=bytes_out, bytes_out_p99=bytes_out,
        bytes_out_max=bytes_out, messages_in_p99=None, storage_bytes=int(storage), bytes_in_p99_growth_per_day=0.0,
        storage_growth_per_day=0.0, forecast_horizon_days=DEFAULT_FORECAST_HORIZON_DAYS, forecast_bytes_in_p99=bytes_in * growth,
        forecast_bytes_in_p99_low=bytes_in, forecast_bytes_in_p99_high=bytes_in * growth * 1.1,
        forecast_storage_bytes=storage * growth, forecast_storage_low=storage, forecast_storage_high=storage * growth,
        days_observed=90, samples=129600, gaps=0, counter_resets=0, rejected_rows=0, first_ts=_TS, last_ts=_TS,
    )


def random_cluster(
    brokers: int,
    topics: int,
    pools: int,
    *,
    partitions: int = 10,
    racks: int = 3,
    rf: int = 3,
    misplaced: float = 0.05,
    floating: float = 0.05,
    load: float = 0.45,
    seed: int = 0,
) -> tuple[ClusterSnapshot, PoolPolicy, dict[str, TopicProfile]]:
    """A cluster of ``brokers`` in ``pools`` pools with ``topics`` topics of about ``partitions`` partitions."""
    rng = np.random.default_rng(seed)
    names = [f"p{j}" for j in range(pools)]
    n_float = int(topics * floating) if pools > 1 else 0
    topic_pool = rng.integers(0, pools, size=topics)
    topic_names = [
        f"misc.t{n}" if n < n_float else f"tenant{topic_pool[n]}.t{n}" for n in range(topics)
    ]
    sizes = rng.lognormal(mean=20, sigma=1.0, size=topics)
    pool_of_broker = _brokers_by_demand(np.bincount(topic_pool, weights=sizes, minlength=pools), brokers, rf + 1)
    rates = sizes / 1e5 * rng.uniform(0.5, 2.0, size=topics)
    counts = np.maximum(1, rng.poisson(partitions, size=topics))
    members = [np.flatnonzero(pool_of_broker == j) for j in range(pools)]
    parts = []
    for n, name in enumerate(topic_names):
        home = members[topic_pool[n]] if len(members[topic_pool[n]]) >= rf else np.arange(brokers)
        size = int(sizes[n] / counts[n])
        for p in range(int(counts[n])):
            where = home if rng.random() >= misplaced else np.arange(brokers)
            replicas = _rack_diverse(rng, where, rf, racks)
            parts.append(PartitionState(name, p, replicas, leader=replicas[0], isr=replicas,
                                        sizes=(size,) * len(replicas)))
    growth = rng.uniform(1.0, 1.5, size=topics)
    profile = {
        name: profile_row(name, int(counts[n]), float(rates[n]), float(rates[n] * 2), float(sizes[n]),
                          float(growth[n]))
        for n, name in enumerate(topic_names)
    }
    total = {
        "nw_in": float((rates * growth).sum() * rf), "nw_out": float((rates * growth).sum() * (rf + 1)),
        "disk": float((sizes * growth).sum() * rf), "replicas": float(counts.sum() * rf),
    }
    cap = Capacity(**{d: total[d] / (brokers * load) for d in DIMENSIONS})
    snapshot = ClusterSnapshot(
        cluster=f"synthetic-{seed}",
        brokers=tuple(Broker(b + 1, f"r{b % racks}", cap, names[pool_of_broker[b]]) for b in range(brokers)),
        topics=tuple(TopicState(t) for t in topic_names),
        partitions=tuple(parts),
    )
    tenants = tuple(
        TenantSpec(f"tenant{j}", (rf"tenant{j}\..*",), (f"tenant{(j + 1) % pools}",) if pools > 2 else ())
        for j in range(pools)
    )
    policy = PoolPolicy(
        defaults=Defaults(headroom=dict.fromkeys(DIMENSIONS, 0.8), tolerated_broker_failures=1, min_brokers=rf),
        pools=tuple(
            PoolSpec(name, tenants=(f"tenant{j}",), brokers=(int(members[j][0]) + 1,) if len(members[j]) else (),
                     default=j < 2)
            for j, name in enumerate(names)
        ),
        tenants=tenants,
        new_broker=NewBrokerType(cap, tuple(f"r{r}" for r in range(racks))),
        source="synthetic",
    )
    return snapshot, policy, profile


def _brokers_by_demand(demand: np.ndarray, brokers: int, floor: int) -> np.ndarray:
    """Pool index per broker: at least ``floor`` each (when they fit), the rest in proportion to demand."""
    pools = len(demand)
    base = min(floor, brokers // pools)
    counts = np.full(pools, base)
    share = demand / demand.sum() * (brokers - base * pools) if demand.sum() > 0 else np.zeros(pools)
    counts += np.floor(share).astype(int)
    for j in np.argsort(-(share - np.floor(share)), kind="stable")[: brokers - counts.sum()]:
        counts[j] += 1
    return np.repeat(np.arange(pools), counts)


def _rack_diverse(rng: np.random.Generator, where: np.ndarray, rf: int, racks: int) -> tuple[int, ...]:
    """``rf`` distinct broker ids from ``where`` (0-based indices), on distinct racks while racks last."""
    by_rack = [where[where % racks == r] for r in range(racks)]
    order = [r for r in rng.permutation(racks) if len(by_rack[r])]
    picked = [int(rng.choice(by_rack[r])) for r in order[:rf]]
    rest = [int(b) for b in rng.permutation(where) if int(b) not in picked]
    return tuple(b + 1 for b in (picked + rest)[:rf])
