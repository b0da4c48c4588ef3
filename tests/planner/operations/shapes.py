"""Clusters of the shapes operators meet on day 2: skewed pools, a new rack, one broker much larger than the rest,
a hot tenant, a pool down to the brokers it needs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from benchmarks.random_clusters import profile_row, random_cluster
from pools.policy import PoolPolicy, parse_policy
from pools.profile import TopicProfile
from pools.snapshot import Broker, Capacity, ClusterSnapshot, LogDirError, PartitionState, TopicState

#: One broker's capacity: 100 MB/s in and out, 1 TB of disk, 1000 replicas.
CAP = Capacity(100e6, 100e6, 1e12, 1000)
GB = 10**9

POLICY = """
[defaults]
headroom = 0.8
tolerated_broker_failures = 1
min_brokers = 3

[[pool]]
name = "a"
topics = ['a\\..*']
"""
#: Pool a and pool b.
TWO_POOLS = POLICY + """
[[pool]]
name = "b"
topics = ['b\\..*']
"""


@dataclass(frozen=True)
class Shape:
    snapshot: ClusterSnapshot
    policy: PoolPolicy
    profile: dict[str, TopicProfile]


def broker(b: int, rack: str | None, pool: str | None = "a", scale: float = 1.0) -> Broker:
    return Broker(b, rack, Capacity(CAP.nw_in * scale, CAP.nw_out * scale, CAP.disk * scale, CAP.replicas * scale),
                  pool)


def shape(brokers: Sequence[Broker], placements: Mapping[str, Sequence[tuple[int, ...]]], *,
          rate: Mapping[str, float] | None = None, size: int = 10 * GB, policy: str = POLICY) -> Shape:
    """A snapshot whose topic ``t`` has one partition per replica list of ``placements[t]`` (sizes growing with
    the partition number), and a profile giving each topic ``rate[t]`` bytes/s in (1 MB/s by default), read
    twice, storing its partitions' sizes."""
    parts, rows = [], {}
    for topic, lists in placements.items():
        for i, replicas in enumerate(lists):
            s = size * (1 + i % 4)
            parts.append(PartitionState(topic, i, tuple(replicas), leader=replicas[0], isr=tuple(replicas),
                                        sizes=(s,) * len(replicas)))
        total = sum(size * (1 + i % 4) for i in range(len(lists)))
        r = (rate or {}).get(topic, 1e6)
        rows[topic] = profile_row(topic, len(lists), r, 2 * r, float(total))
    snap = ClusterSnapshot("day2", tuple(sorted(brokers, key=lambda b: b.id)),
                           tuple(TopicState(t) for t in sorted(placements)), tuple(parts))
    return Shape(snap, parse_policy(policy), rows)


def profile(s: Shape, rate: Mapping[str, float]) -> dict[str, TopicProfile]:
    """``s``'s profile with topic ``t`` at ``rate[t]`` bytes/s in (read twice), as `shape` writes it."""
    out = dict(s.profile)
    for topic, r in rate.items():
        row = s.profile[topic]
        out[topic] = profile_row(topic, row.partitions, r, 2 * r, float(row.storage_bytes))
    return out


def rotate(ids: Sequence[Sequence[int]], count: int, rf: int = 3) -> list[tuple[int, ...]]:
    """``count`` replica lists taking one broker of each rack group in turn (``ids[r]`` = brokers of rack r)."""
    out = []
    for i in range(count):
        out.append(tuple(ids[(i + k) % len(ids)][i % len(ids[(i + k) % len(ids)])] for k in range(rf)))
    return out


def skewed_pool() -> Shape:
    """Pool a: six brokers over three racks; every partition on brokers 1, 2, 3 (one per rack), none on 4, 5, 6."""
    brokers = [broker(b, f"r{(b - 1) % 3}") for b in range(1, 7)]
    return shape(brokers, {"a.orders": [(1, 2, 3), (2, 3, 1), (3, 1, 2)] * 4})


def new_rack() -> Shape:
    """Pool a on racks r0, r1, r2 (brokers 1-6, evenly loaded); brokers 7, 8, 9 in a new rack r3, in no pool."""
    brokers = [broker(b, f"r{(b - 1) % 3}") for b in range(1, 7)]
    brokers += [broker(b, "r3", pool=None) for b in (7, 8, 9)]
    return shape(brokers, {"a.orders": rotate([[1, 4], [2, 5], [3, 6]], 18)})


def big_broker() -> Shape:
    """Pool a: five brokers, broker 5 four times larger than the rest, all equally loaded now."""
    brokers = [broker(b, f"r{(b - 1) % 3}", scale=4.0 if b == 5 else 1.0) for b in range(1, 6)]
    return shape(brokers, {"a.orders": rotate([[1, 4], [2, 5], [3]], 15)})


def hot_tenant() -> Shape:
    """Pools a (brokers 1-6) and b (7-9); tenant a's clicks topic is hot (40 MB/s in) and led from broker 1."""
    brokers = [broker(b, f"r{(b - 1) % 3}") for b in range(1, 7)]
    brokers += [broker(b, f"r{(b - 1) % 3}", pool="b") for b in (7, 8, 9)]
    clicks = [(1, 2, 3), (1, 5, 6), (1, 2, 6), (1, 5, 3)]
    return shape(brokers, {"a.clicks": clicks, "a.orders": rotate([[1, 4], [2, 5], [3, 6]], 12),
                           "b.logs": rotate([[7], [8], [9]], 6)}, rate={"a.clicks": 40e6}, policy=TWO_POOLS)


def last_broker_to_drain() -> Shape:
    """Pool a: four brokers on three racks (1 and 4 share r0); only broker 4 can go, and only to 1."""
    brokers = [broker(b, f"r{(b - 1) % 3}") for b in range(1, 5)]
    return shape(brokers, {"a.orders": rotate([[1, 4], [2], [3]], 12)})


def large_skewed_pool(partitions: int = 200) -> Shape:
    """Pool a: twelve brokers over three racks, every partition on the first two brokers of each rack (1, 2, 4, 5,
    7, 8 hold everything, 3, 6, 9-12 nothing): past `planner.operations.distribution.ENGINE_PAIRS`."""
    brokers = [broker(b, f"r{(b - 1) % 3}") for b in range(1, 13)]
    return shape(brokers, {"a.events": rotate([[1, 4], [2, 5], [3, 6]], partitions)}, size=GB)


def dead_broker(*, lagging: bool = False, log_dir_error: bool = False) -> Shape:
    """`new_rack` with broker 4 (rack r0) dead: out of every ISR, its partitions led by their next replica. With
    ``lagging``, broker 6 is also out of the ISR of a.orders-1; with ``log_dir_error``, broker 4 is alive but
    one of its log dirs failed (it leads nothing, and its replicas in the other dir are still in the ISRs)."""
    s = new_rack()
    parts = []
    for p in s.snapshot.partitions:
        if 4 in p.replicas:
            isr = tuple(b for b in p.replicas if log_dir_error or b != 4 and not (lagging and p.partition == 1 and b == 6))
            p = replace(p, leader=next(b for b in p.replicas if b != 4), isr=isr)
        parts.append(p)
    errors = (LogDirError(4, "/data/kafka", "KafkaStorageException"),) if log_dir_error else ()
    return Shape(replace(s.snapshot, partitions=tuple(parts), log_dir_errors=errors), s.policy, s.profile)


def generated_pool(seed: int = 0) -> Shape:
    """One pool of 60 brokers over three racks, 300 topics of about 20 partitions (RF 3, 6,000 partitions) placed
    at random (`benchmarks.random_clusters.random_cluster`): past `planner.operations.distribution.ENGINE_PAIRS`."""
    return Shape(*random_cluster(60, 300, 1, partitions=20, misplaced=0.0, floating=0.0, seed=seed))


def _random_pool(brokers: Sequence[Broker], partitions: int, topics: int, seed: int, *, mu: float, sigma: float,
                 hot: Mapping[int, float] = {}, lead: int | None = None) -> Shape:
    """``partitions`` RF-3 partitions over ``topics`` topics of pool a, one replica per rack on random brokers,
    lognormal sizes (e^``mu`` bytes, ``sigma``) and rates (``hot``: topic number → bytes/s in; its partitions led from broker ``lead``)."""
    rng = np.random.default_rng(seed)
    racks: dict[str, list[int]] = {}
    for b in brokers:  # without racks: three groups of brokers stand in for them
        racks.setdefault(str(b.rack) if b.rack is not None else f"g{b.id % 3}", []).append(b.id)
    parts, rows = [], {}
    for t in range(topics):
        name, total = f"a.t{t}", 0
        for i in range(partitions // topics):
            reps = [int(rng.choice(racks[r])) for r in sorted(racks)]
            reps = [reps[j] for j in rng.permutation(len(reps))]
            if t in hot and lead is not None:
                rack = {x.id: x.rack for x in brokers}
                reps = [lead] + [b for b in reps if b != lead and rack[b] != rack[lead]]
            size = int(rng.lognormal(mu, sigma))
            total += size
            parts.append(PartitionState(name, i, tuple(reps), leader=reps[0], isr=tuple(reps), sizes=(size,) * 3))
        rate = hot.get(t, float(rng.lognormal(14.0, 0.5)))
        rows[name] = profile_row(name, partitions // topics, rate, 2 * rate, float(total))
    snap = ClusterSnapshot("day2", tuple(brokers), tuple(TopicState(f"a.t{t}") for t in range(topics)), tuple(parts))
    return Shape(snap, parse_policy(POLICY), rows)


def big_broker_of_seven(partitions: int = 140, seed: int = 3, *, racks: bool = True) -> Shape:
    """Pool a: seven brokers on three racks (or none), broker 7 (rack r0) four times larger; random RF-3
    partitions. Without racks broker 7's fair share (4/10 of the pool) exceeds the one replica of every partition
    it can hold: the band cannot be met."""
    brokers = [broker(b, f"r{(b - 1) % 3}" if racks else None, scale=4.0 if b == 7 else 1.0) for b in range(1, 8)]
    return _random_pool(brokers, partitions, 10, seed, mu=22.5, sigma=1.0)


def hot_pool(partitions: int = 30, seed: int = 0) -> Shape:
    """Pool a: nine brokers on three racks, random RF-3 partitions; topic a.t0 is hot (25 MB/s in), led from
    broker 1."""
    brokers = [broker(b, f"r{(b - 1) % 3}") for b in range(1, 10)]
    return _random_pool(brokers, partitions, 5, seed, mu=23.0, sigma=0.7, hot={0: 25e6}, lead=1)
