"""Test pools with brokers over headroom, written for these tests (not from `benchmarks.random_clusters`).

Each case is one pool on racked brokers whose current placement is skewed: a few *hot* brokers hold more
replicas, larger ones and most leaders, so they start over headroom × capacity in disk and network out, while
capacities leave the pool as a whole room to spare. Demands are built per partition (`PartitionShare`), so the
engine and the exact reference see exactly the same loads. Some cases add brokers joining the pool (empty) or
replicas outside the pool (forced moves).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pools.demand import Demand, PartitionShare
from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState, TopicState

HEADROOM = (0.8, 0.8, 0.8, 0.8)


@dataclass(frozen=True)
class Case:
    """One pool: the snapshot, the per-topic demands, its brokers and the brokers joining it."""

    name: str
    snapshot: ClusterSnapshot
    demands: dict[str, Demand]
    pool: tuple[int, ...]
    joining: tuple[int, ...] = ()


def overloaded_pool(name: str, *, brokers: int, racks: int, partitions: int, hot: int, seed: int,
                    joining: int = 0, outside: float = 0.0, big_broker: bool = False, use: float = 0.6) -> Case:
    """A pool of ``brokers`` (+ ``joining`` empty ones) with ``hot`` overloaded brokers (see the module docstring).

    ``outside`` is the fraction of partitions with one replica on a broker outside the pool; ``use`` the
    pool's mean disk use as a fraction of headroom × capacity; ``big_broker`` makes broker 1 twice the others.
    """
    rng = np.random.default_rng(seed)
    ids = list(range(1, brokers + joining + 1))
    outsiders = [100 + k for k in range(racks)] if outside else []
    rack = {b: f"r{(b - 1) % racks}" for b in ids} | {b: f"r{k}" for k, b in enumerate(outsiders)}
    weight = np.ones(brokers)
    weight[:hot] = 4.0  # hot brokers are picked four times as often
    sizes = np.maximum(1, rng.lognormal(mean=9.0, sigma=1.2, size=partitions)).astype(np.int64) * 1_000_000
    rates = sizes / 1e4 * rng.uniform(0.3, 3.0, size=partitions)
    parts, shares = [], []
    for i in range(partitions):
        rf = 3 if rng.random() < 0.85 else 2
        replicas = _skewed(rng, ids[:brokers], rack, weight, rf)
        if outsiders and rng.random() < outside:
            k = int(rng.integers(rf))
            spare = [b for b in outsiders if rack[b] == rack[replicas[k]]]
            replicas[k] = spare[0]
        parts.append(PartitionState("t", i, tuple(replicas), leader=replicas[0], isr=tuple(replicas),
                                    sizes=(int(sizes[i]),) * rf))
        shares.append(PartitionShare(i, float(rates[i]), float(rates[i] * rng.uniform(0.5, 3.0)),
                                     float(sizes[i]) * rng.uniform(0.9, 1.3)))
    demand = demand_of(shares, parts)
    per_broker = np.array([demand.nw_in, demand.nw_out, demand.disk, demand.replicas]) / (brokers + joining)
    largest = np.array([max(s.bytes_in for s in shares), max(s.bytes_out + 2 * s.bytes_in for s in shares),
                        max(s.storage for s in shares), 1.0])
    # the pool at ``use`` of headroom on average, and no single replica above a third of a broker's headroom
    cap = Capacity(*(float(max(x / use, 3 * y)) / 0.8 for x, y in zip(per_broker, largest)))
    cap = Capacity(cap.nw_in, cap.nw_out, cap.disk, float(np.ceil(cap.replicas)))
    big = Capacity(cap.nw_in * 2, cap.nw_out * 2, cap.disk * 2, cap.replicas * 2)
    members = tuple(Broker(b, rack[b], big if big_broker and b == 1 else cap, "p") for b in ids)
    members += tuple(Broker(b, rack[b], cap, "other") for b in outsiders)
    snap = ClusterSnapshot(name, members, (TopicState("t"),), tuple(parts))
    return Case(name, snap, {"t": demand}, tuple(ids), tuple(ids[brokers:]))


def _skewed(rng: np.random.Generator, brokers: list[int], rack: dict[int, str], weight: np.ndarray,
            rf: int) -> list[int]:
    """``rf`` brokers on distinct racks, drawn by ``weight`` (the first one, the leader, doubly so)."""
    chosen: list[int] = []
    for slot in range(rf):
        used = {rack[b] for b in chosen}
        ok = np.array([b not in chosen and rack[b] not in used for b in brokers])
        w = np.where(ok, weight ** (2 if slot == 0 else 1), 0.0)
        chosen.append(brokers[int(rng.choice(len(brokers), p=w / w.sum()))])
    return chosen


def demand_of(shares: list[PartitionShare], parts: list[PartitionState]) -> Demand:
    totals = [0.0] * 4
    for s, p in zip(shares, parts):
        rf = len(p.replicas)
        totals[0] += s.bytes_in * rf
        totals[1] += s.bytes_out + s.bytes_in * (rf - 1)
        totals[2] += s.storage * rf
        totals[3] += rf
    return Demand(*totals, bytes_in=sum(s.bytes_in for s in shares), bytes_out=sum(s.bytes_out for s in shares),
                  storage=sum(s.storage for s in shares), partitions=tuple(shares))


#: The cases the margin tests and benchmark run: (name, keyword arguments of `overloaded_pool`).
CASES: dict[str, dict] = {
    "six": dict(brokers=6, racks=3, partitions=40, hot=1, seed=1),
    "six-two-hot": dict(brokers=6, racks=3, partitions=60, hot=2, seed=2, use=0.7),
    "nine-big-broker": dict(brokers=9, racks=3, partitions=90, hot=2, seed=3, big_broker=True),
    "twelve-joining": dict(brokers=10, racks=3, partitions=150, hot=2, seed=4, joining=2),
    "twelve-outside": dict(brokers=12, racks=4, partitions=150, hot=3, seed=5, outside=0.1),
    "twentyfour": dict(brokers=24, racks=4, partitions=240, hot=3, seed=6),
    "twentyfour-joining": dict(brokers=22, racks=4, partitions=240, hot=2, seed=7, joining=2),
}
