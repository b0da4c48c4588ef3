"""The audit's durability rule: topics whose ``min.insync.replicas`` cannot be met once their pool loses brokers.

A partition keeps accepting ``acks=all`` writes while its ISR has at least ``min.insync.replicas`` members (with
eligible leader replicas, KIP-966, the high watermark stops below it too). Losing ``tolerated_broker_failures``
brokers of the pool (a failure, or a rolling restart taking one down at a time) removes up to that many in-sync
replicas of a partition; when fewer than ``min.insync.replicas`` remain the partition goes read-only for those
producers. Each topic is judged by its own setting, on its partitions with every replica in sync (the
partition-health rules report the others: one more loss is what makes an under-replicated partition urgent). The broker named is the one whose loss blocks most of the topic's partitions (ties: the
lowest id), the biggest loss the topic can suffer.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from pools.audit.common import finding, pool_name
from pools.audit.findings import Finding
from pools.audit.loads import Loads
from pools.cluster_arrays import cluster_arrays, pool_arrays
from pools.policy import PoolPolicy
from pools.pool_rules import PoolRules
from pools.snapshot import ClusterSnapshot

__all__ = ["check_min_isr_after_broker_loss", "topics_below_min_isr"]


def check_min_isr_after_broker_loss(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Topics with partitions that drop below ``min.insync.replicas`` when their pool loses its
    ``tolerated_broker_failures`` brokers (see the module docstring): one finding per topic."""
    return topics_below_min_isr(snapshot, policy)


def topics_below_min_isr(snapshot: ClusterSnapshot, policy: PoolPolicy, *, at_least: int = 0) -> list[Finding]:
    """`check_min_isr_after_broker_loss` losing at least ``at_least`` brokers per pool (the report's N−1 view
    loses one even where the policy tolerates none).

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
    in_sync = (a.part_isr == 0) | (a.part_isr >= a.part_rf)  # every replica in sync (or the ISR not reported)
    risky = ~a.part_offline & in_sync & (need_p <= a.part_rf) & (a.part_rf < need_p + k_p)
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
        out.append(finding(
            "min_isr_after_broker_loss", pool=pool, topic=topic,
            evidence={"min_insync_replicas": need, "replication_factor": rf, "tolerated_broker_failures": k,
                      "lost_brokers": sorted(int(b) for b in lost), "partitions_blocked": len(blocked),
                      "partitions_at_risk": len(at_risk), "partitions": [f"{topic}-{q}" for q in blocked[:20]]},
            fix=fix,
        ))
    return out


def _min_isr(snapshot: ClusterSnapshot, topic: str) -> int:
    state = snapshot.topic_by_name.get(topic)
    return state.min_insync_replicas if state is not None else 1


def _next_largest(hits: Counter, worst: int, n: int) -> set[int]:
    """The ``n`` brokers after ``worst`` holding most at-risk replicas (ties: lowest id)."""
    rest = sorted((b for b in hits if b != worst), key=lambda b: (-hits[b], b))
    return set(rest[:max(n, 0)])

