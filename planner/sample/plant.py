"""The problems the sample plants, each on its own partition, and the timed events behind the metrics.

Kinds use the audit's vocabulary and its precedence for partition health: a partition reports one of
``offline_partition`` (no leader), ``under_min_isr`` (a leader, ISR below ``min.insync.replicas``),
``at_min_isr`` (ISR exactly the minimum, below the replication factor), ``under_replicated`` (ISR above the
minimum but below the replication factor, adding replicas not counted). What is planted:

- ``broker_without_pool``: the spare broker (no pool tag, no pin, no replica);
- ``topic_without_pool``: the ``legacy.*`` topic (no tenant, no selector, no default pool);
- ``replica_outside_pool`` x4: two tenants of different pools each have two partitions whose last replica sits on
  a broker of the other pool (a rack the partition's other replicas do not use), so ``broker_mixed_pools`` for
  every broker receiving one; ``pool`` is the topic's pool;
- ``rack_shared``: a follower replaced by a pool broker in the rack of another replica;
- ``under_replicated`` (``at_min_isr`` when the ISR left is the topic's minimum): the last follower dropped from
  the ISR (ISR still at least min ISR);
- ``under_min_isr``: ISR shrunk to the leader on a topic with ``min.insync.replicas=2``;
- ``offline_partition`` + ``log_dir_error``: the leader's second log dir failed while it was the only ISR member:
  ``Leader: none``, ``Isr: <it>``, its replica missing from the log-dirs output, the dir reported with
  ``KafkaStorageException``;
- ``reassignment_in_progress``: a follower being replaced (``Adding``/``Removing Replicas``; the target keeps racks
  distinct where the pool has a free rack);
- ``leader_not_preferred`` x2: leadership moved to the second replica hours ago and never moved back.

Rolling restarts (one per ~4 days, none in the last 12 hours) move leadership away and back, closing and
re-creating the per-topic meters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from planner.sample.cluster import (
    DATA_DIR,
    FAILED_DIR,
    Problem,
    SampleCluster,
    SamplePartition,
    SamplePool,
    SampleTopic,
)

__all__ = ["plant_problems", "problem_key"]

_Fits = Callable[[SamplePartition, SampleTopic], bool]


def plant_problems(cluster: SampleCluster, rng: np.random.Generator) -> SampleCluster:
    """Return ``cluster`` with every problem planted, listed in ``planted`` (sorted), and its events.

    Raises
    ------
    AssertionError
        When no partition fits a problem; the layout (at least 6 topics of 3+ partitions) prevents it. The
        tightest case is ``replica_outside_pool`` with 8 brokers (pools of 4 and 3 brokers, the second on two
        racks): an RF-3 partition of the first pool fits only if its last replica is in a rack of the second
        pool, which rack-aware placement gives all but at most one partition per topic, and the first
        tenant has at least two topics.
    """
    pl = _Planter(cluster, rng)
    spare = cluster.brokers[-1].id
    pl.planted.append(Problem("broker_without_pool", broker=spare))
    pl.planted.append(Problem("topic_without_pool", topic=next(t.topic for t in cluster.topics if t.tenant is None)))
    pl.shrink_isr_below_min()
    pl.misplace_tenants()
    pl.share_rack()
    pl.drop_follower()
    failed, offline = pl.fail_log_dir()
    reassigned = pl.start_reassignment()
    not_preferred = [pl.move_leader() for _ in range(2)]
    events = (
        ("offline", offline.topic, offline.partition, int(rng.integers(20, 90)) * 60),
        ("reassignment", reassigned.topic, reassigned.partition, int(rng.integers(60, 180)) * 60),
        *(("not_preferred", p.topic, p.partition, int(rng.integers(3, 20)) * 3600) for p in not_preferred),
    )
    return replace(
        cluster,
        brokers=tuple(replace(b, log_dirs=(DATA_DIR, FAILED_DIR)) if b.id == failed else b for b in cluster.brokers),
        partitions=tuple(pl.parts[k] for k in sorted(pl.parts)),
        planted=tuple(sorted(set(pl.planted), key=problem_key)),
        events=events,
        failed_log_dir=(failed, FAILED_DIR),
        restarts=_restarts(cluster, spare, rng),
    )


class _Planter:
    """Picks distinct partitions (in a seeded random order) and rewrites them."""

    def __init__(self, cluster: SampleCluster, rng: np.random.Generator) -> None:
        self.rng = rng
        self.pools = {p.name: p for p in cluster.pools}
        self.pool_list = cluster.pools
        self.parts = {(p.topic, p.partition): p for p in cluster.partitions}
        self.topics = {t.topic: t for t in cluster.topics}
        self.rack = {b.id: b.rack for b in cluster.brokers}
        self.used: set[tuple[str, int]] = set()
        self.planted: list[Problem] = []

    def find(self, fits: _Fits) -> SamplePartition | None:
        keys = sorted(self.parts)
        for i in self.rng.permutation(len(keys)).tolist():
            p = self.parts[keys[i]]
            t = self.topics[p.topic]
            if keys[i] not in self.used and t.pool is not None and fits(p, t):
                self.used.add(keys[i])
                return p
        return None

    def pick(self, fits: _Fits) -> SamplePartition:
        p = self.find(fits)
        if p is None:
            raise AssertionError("no partition fits a planted problem")
        return p

    def put(self, p: SamplePartition, *problems: Problem) -> None:
        self.parts[(p.topic, p.partition)] = p
        self.planted.extend(problems)

    def pool_brokers(self, p: SamplePartition) -> tuple[int, ...]:
        return self.pools[self.topics[p.topic].pool].brokers

    def shrink_isr_below_min(self) -> None:
        p = self.pick(lambda p, t: t.min_insync_replicas >= 2)
        self.put(replace(p, isr=(p.replicas[0],)), Problem("under_min_isr", p.topic, p.partition))

    def free_in(self, pool: SamplePool, p: SamplePartition) -> list[int]:
        """Brokers of ``pool`` in a rack that ``p``'s replicas other than the last do not use.

        Empty when ``pool`` has two racks and those replicas cover both (8 brokers: pools of 4 and 3 brokers,
        an RF-3 partition of the first pool whose last replica is in the rack the second pool lacks).
        """
        racks = {self.rack[b] for b in p.replicas[:-1]}
        return [b for b in pool.brokers if self.rack[b] not in racks]

    def misplace_tenants(self) -> None:
        first, second = self.pool_list[0], self.pool_list[1]
        mixed: set[int] = set()
        for home, away in ((first, second), (second, first)):
            tenant = home.tenants[0]
            for _ in range(2):
                p = self.pick(lambda p, t: t.tenant == tenant and bool(self.free_in(away, p)))
                keep = p.replicas[:-1]
                free = self.free_in(away, p)
                same = [b for b in free if self.rack[b] == self.rack[p.replicas[-1]]] or free
                b = same[int(self.rng.integers(len(same)))]
                self.put(replace(p, replicas=keep + (b,), isr=keep + (b,)),
                         Problem("replica_outside_pool", p.topic, p.partition, broker=b, pool=home.name))
                mixed.add(b)
        self.planted += [Problem("broker_mixed_pools", broker=b) for b in sorted(mixed)]

    def share_rack(self) -> None:
        def sharing(p: SamplePartition) -> list[int]:
            racks = {self.rack[b] for b in p.replicas[:-1]}
            return [b for b in self.pool_brokers(p) if self.rack[b] in racks and b not in p.replicas]

        p = self.pick(lambda p, t: bool(sharing(p)))
        replicas = p.replicas[:-1] + (sharing(p)[0],)
        self.put(replace(p, replicas=replicas, isr=replicas), Problem("rack_shared", p.topic, p.partition))

    def drop_follower(self) -> None:
        p = self.pick(lambda p, t: len(p.replicas) - 1 >= t.min_insync_replicas)
        at_min = len(p.replicas) - 1 == self.topics[p.topic].min_insync_replicas  # one more loss: read-only
        self.put(replace(p, isr=p.replicas[:-1]),
                 Problem("at_min_isr" if at_min else "under_replicated", p.topic, p.partition))

    def fail_log_dir(self) -> tuple[int, SamplePartition]:
        p = self.pick(lambda p, t: True)
        failed = p.replicas[0]
        self.put(replace(p, leader=None, isr=(failed,)), Problem("offline_partition", p.topic, p.partition),
                 Problem("log_dir_error", broker=failed, log_dir=FAILED_DIR))
        return failed, p

    def start_reassignment(self) -> SamplePartition:
        def free_rack(p: SamplePartition) -> list[int]:
            racks = {self.rack[b] for b in p.replicas}
            return [b for b in self.pool_brokers(p) if b not in p.replicas and self.rack[b] not in racks]

        def same_rack(p: SamplePartition) -> list[int]:
            return [b for b in self.pool_brokers(p)
                    if b not in p.replicas and self.rack[b] == self.rack[p.replicas[-1]]]

        p = self.find(lambda p, t: bool(free_rack(p)))
        new = free_rack(p)[0] if p is not None else None
        if p is None:
            p = self.pick(lambda p, t: bool(same_rack(p)))
            new = same_rack(p)[0]
        old = p.replicas[-1]
        self.put(
            replace(p, replicas=p.replicas[:-1] + (new, old), isr=p.replicas, adding_replicas=(new,),
                    removing_replicas=(old,)),
            Problem("reassignment_in_progress", p.topic, p.partition),
        )
        return p

    def move_leader(self) -> SamplePartition:
        p = self.pick(lambda p, t: len(p.replicas) >= 2)
        self.put(replace(p, leader=p.replicas[1]), Problem("leader_not_preferred", p.topic, p.partition))
        return p


def _restarts(cluster: SampleCluster, spare: int, rng: np.random.Generator) -> tuple[tuple[int, int, int], ...]:
    """Rolling restarts ``(broker, down_at, up_at)`` in epoch seconds: one every ~4 days, none in the last 12 h."""
    spec = cluster.spec
    span = spec.days * 86_400 - 43_200
    candidates = [b.id for b in cluster.brokers if b.id != spare]
    n = max(1, spec.days // 4)
    out = []
    for i in range(n):
        lo = spec.start + i * span // n
        hi = spec.start + (i + 1) * span // n - 7_200
        down = int(rng.integers(lo // spec.step_s, hi // spec.step_s)) * spec.step_s
        up = down + int(rng.integers(3, 40)) * spec.step_s
        out.append((candidates[int(rng.integers(len(candidates)))], down, up))
    return tuple(out)


def problem_key(p: Problem) -> tuple:
    """The order of ``truth.json``'s ``planted`` list (absent fields first)."""
    return (p.kind, p.topic or "", -1 if p.partition is None else p.partition, -1 if p.broker is None else p.broker,
            p.pool or "", p.log_dir or "")
