"""The audit's durability rules, as Kafka judges a partition: by its ISR against its topic's ``min.insync.replicas``.

A partition keeps accepting ``acks=all`` writes while its ISR has at least ``min.insync.replicas`` members (with
eligible leader replicas, KIP-966, the high watermark stops below it too). Losing ``tolerated_broker_failures``
brokers of the pool (a failure, or a rolling restart taking one down at a time) removes up to that many in-sync
replicas of a partition; when fewer than ``min.insync.replicas`` remain the partition goes read-only for those
producers. Each topic is judged by its own setting, on its partitions with every replica in sync; the report's N−1
judges every writable partition by the ISR Kafka reports now (`topics_below_min_isr`'s ``current``), so a partition
already short of a replica counts with the ISR it has. The broker named is the one whose loss blocks most of the
topic's partitions (ties: the lowest id), the biggest loss the topic can suffer.

- ``at_min_isr`` (`check_at_min_isr`): a partition whose ISR is exactly its ``min.insync.replicas``, below its
  replication factor (``kafka-topics.sh --describe --at-min-isr-partitions``): one more loss makes it read-only,
  whatever the policy tolerates.
- ``single_replica_topic``: a topic of replication factor 1 in a pool that must survive a broker loss: that loss
  takes its partitions offline, not only read-only. It replaces ``min_isr_after_broker_loss`` for such a topic.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from pools.audit.common import finding, pool_name
from pools.audit.findings import Finding
from pools.audit.loads import Loads
from pools.cluster_arrays import cluster_arrays, pool_arrays
from pools.health import partition_states
from pools.policy import PoolPolicy
from pools.pool_rules import PoolRules
from pools.snapshot import ClusterSnapshot

__all__ = ["check_at_min_isr", "check_min_isr_after_broker_loss", "check_single_replica_topic", "topics_below_min_isr"]


def check_min_isr_after_broker_loss(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Topics with partitions that drop below ``min.insync.replicas`` when their pool loses its
    ``tolerated_broker_failures`` brokers (see the module docstring): one finding per topic of replication factor
    2 or more."""
    return [f for f in topics_below_min_isr(snapshot, policy) if f.kind == "min_isr_after_broker_loss"]


def check_single_replica_topic(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Topics of replication factor 1 in a pool that tolerates a broker failure: its loss takes their partitions
    offline (see the module docstring); the fix raises the replication factor."""
    return [f for f in topics_below_min_isr(snapshot, policy) if f.kind == "single_replica_topic"]


def topics_below_min_isr(snapshot: ClusterSnapshot, policy: PoolPolicy, *, at_least: int = 0,
                         current: bool = False) -> list[Finding]:
    """`check_min_isr_after_broker_loss` and `check_single_replica_topic` losing at least ``at_least`` brokers per
    pool (the report's N−1 view loses one even where the policy tolerates none). The audit judges each topic's
    settings, on its partitions with every replica in sync (`check_at_min_isr` and the partition-health rules
    report the others); ``current`` judges every writable partition by the ISR it has now, so the report's N−1
    names a partition already at its min ISR too.

    >>> from pools.policy import parse_policy
    >>> from pools.snapshot import Broker, Capacity, PartitionState, TopicState
    >>> parts = (PartitionState("a", 0, (1, 2, 3), 1, (1, 2, 3)), PartitionState("b", 0, (1, 2, 3), 1, (1, 2, 3)))
    >>> topics = (TopicState("a", configs={"min.insync.replicas": "3"}),
    ...           TopicState("b", configs={"min.insync.replicas": "2"}))
    >>> snap = ClusterSnapshot("c", tuple(Broker(i, None, Capacity(1, 1, 1, 1)) for i in (1, 2, 3)), topics, parts)
    >>> policy = parse_policy('[[pool]]\\nname = "p"\\ndefault = true\\n')
    >>> [(f.topic, f.evidence["lost_brokers"]) for f in topics_below_min_isr(snap, policy)]
    [('a', [1])]
    """
    rules = PoolRules.from_policy(policy)
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    pools = [pool_name(p, int(p.topic_pool[i])) for i in range(len(a.topics))]
    needs = np.array([_min_isr(snapshot, t) for t in a.topics], dtype=np.int64)
    losses = np.array([max(rules.limits(pool).tolerated_failures, at_least) for pool in pools], dtype=np.int64)
    need_p, k_p = needs[a.part_topic], losses[a.part_topic]
    states = partition_states(snapshot)
    if current:  # the ISR as Kafka reports it (every replica when it reports none)
        now = np.where(states.isr_reported, states.in_sync, a.part_rf)
        risky = ~states.offline & (need_p <= now) & (now < need_p + k_p)
    else:  # the topic's own settings: partitions with every replica in sync (the ISR not reported counts as such)
        full = ~states.isr_reported | (states.in_sync >= a.part_rf)
        risky = ~states.offline & full & (need_p <= a.part_rf) & (a.part_rf < need_p + k_p)
    flagged: dict[int, list[int]] = {}
    for i in np.flatnonzero(risky).tolist():
        flagged.setdefault(int(a.part_topic[i]), []).append(i)
    out = []
    for t, rows in sorted(flagged.items(), key=lambda item: a.topics[item[0]]):
        topic, pool, need, k = a.topics[t], pools[t], int(needs[t]), int(losses[t])
        parts = snapshot.partitions_by_topic[topic]
        at_risk = [snapshot.partitions[i] for i in rows]
        hits = Counter(b for q in at_risk for b in (q.isr or q.replicas))
        worst = min(hits, key=lambda b: (-hits[b], b))
        lost = {worst} | _next_largest(hits, worst, k - 1)
        blocked = [q.partition for q in at_risk if sum(b not in lost for b in (q.isr or q.replicas)) < need]
        rf = max(len(q.replicas) for q in parts)
        fixes = []
        if rf - k >= 1:
            fixes.append(f"kafka-configs.sh --bootstrap-server $BOOTSTRAP --alter --entity-type topics "
                         f"--entity-name {topic} --add-config min.insync.replicas={rf - k}")
        raise_rf = (f"poolplan set-replication-factor --snapshot $SNAPSHOT --policy $POLICY --topic '{topic}' "
                    f"--replication-factor {need + k} --out plan && poolplan emit --plan plan/plan.json "
                    f"--snapshot $SNAPSHOT --out bundle")
        fix = f"{fixes[0]}  # or keep it and raise the replication factor: {raise_rf}" if fixes else raise_rf
        short = sum(bool(q.isr) and len(q.isr) < len(q.replicas) for q in at_risk)
        out.append(finding(
            "single_replica_topic" if rf == 1 else "min_isr_after_broker_loss", pool=pool, topic=topic,
            evidence={"min_insync_replicas": need, "replication_factor": rf, "tolerated_broker_failures": k,
                      "lost_brokers": sorted(int(b) for b in lost), "partitions_blocked": len(blocked),
                      "partitions_at_risk": len(at_risk), "partitions_short_of_isr": short,
                      "partitions": [f"{topic}-{q}" for q in blocked[:20]]},
            fix=raise_rf if rf == 1 else fix,
        ))
    return out


def check_at_min_isr(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Partitions with a leader whose reported ISR is exactly the topic's ``min.insync.replicas``, below the
    replication factor (a reassignment's adding replicas left out, as `kafka-topics.sh` does): one more loss among
    its in-sync brokers makes it read-only for ``acks=all`` producers (see the module docstring).

    >>> from pools.audit.loads import audit_loads
    >>> from pools.policy import parse_policy
    >>> from pools.snapshot import Broker, Capacity, PartitionState, TopicState
    >>> parts = (PartitionState("t", 0, (1, 2, 3), 1, (1, 2)), PartitionState("t", 1, (1, 2, 3), 1, (1, 2, 3)))
    >>> snap = ClusterSnapshot("c", tuple(Broker(i, None, Capacity(1, 1, 1, 1)) for i in (1, 2, 3)),
    ...                        (TopicState("t", configs={"min.insync.replicas": "2"}),), parts)
    >>> [(f.partition, f.fix.split("#")[1].strip()) for f in check_at_min_isr(snap,
    ...     parse_policy('[[pool]]\\nname = "p"\\ndefault = true\\n'), audit_loads(snap))]
    [(0, 'one more loss among brokers 1, 2 makes it read-only for acks=all: restart or repair out-of-sync brokers 3')]
    """
    a, p, states = cluster_arrays(snapshot), pool_arrays(snapshot, policy), partition_states(snapshot)
    needs = np.array([_min_isr(snapshot, t) for t in a.topics], dtype=np.int64)[a.part_topic] if len(a.topics) \
        else np.zeros(0, dtype=np.int64)
    at_min = ~states.offline & states.isr_reported & (states.in_sync == needs) & (needs < a.part_rf - a.part_adding)
    out = []
    for i in np.flatnonzero(at_min).tolist():
        q = snapshot.partitions[i]
        behind = ", ".join(str(b) for b in q.replicas if b not in q.isr and b not in q.adding_replicas)
        out.append(finding(
            "at_min_isr", pool=pool_name(p, int(p.topic_pool[a.part_topic[i]])), topic=q.topic, partition=q.partition,
            evidence={"replicas": list(q.replicas), "leader": q.leader, "isr": list(q.isr),
                      "min_insync_replicas": int(needs[i])},
            fix=f"kafka-topics.sh --bootstrap-server $BOOTSTRAP --describe --at-min-isr-partitions --topic {q.topic}"
                f"  # one more loss among brokers {', '.join(map(str, q.isr))} makes it read-only for acks=all: "
                f"restart or repair out-of-sync brokers {behind}",
        ))
    return out


def _min_isr(snapshot: ClusterSnapshot, topic: str) -> int:
    state = snapshot.topic_by_name.get(topic)
    return state.min_insync_replicas if state is not None else 1


def _next_largest(hits: Counter, worst: int, n: int) -> set[int]:
    """The ``n`` brokers after ``worst`` holding most at-risk replicas (ties: lowest id)."""
    rest = sorted((b for b in hits if b != worst), key=lambda b: (-hits[b], b))
    return set(rest[:max(n, 0)])

