"""The audit rules: stateless checks ``check_<kind>(snapshot, policy, loads) -> list[Finding]``, one per kind.

This module holds the isolation, partition-health and leadership rules and the registry `RULES`; the capacity
rules live in `pools.audit.capacity`. Every rule reads the shared arrays of `pools.cluster_arrays` and is vectorised
over partitions and replicas.
Partition health is a ladder: a partition is reported once, at its worst state (offline, then under min ISR,
then under-replicated); a preferred-leader finding needs a healthy partition.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pools.audit.capacity import (
    check_pool_cannot_lose_broker,
    check_replica_count_over_limit,
    check_utilisation_over_headroom,
)
from pools.audit.common import SEVERITY, finding, pool_name
from pools.audit.durability import check_at_min_isr, check_min_isr_after_broker_loss, check_single_replica_topic
from pools.audit.findings import Finding, Severity
from pools.audit.fixes import PLAN_FIX, fix_targets, replica_span
from pools.audit.loads import Loads
from pools.audit.log_dirs import check_log_dir_over_headroom, check_replicas_on_cordoned
from pools.cluster_arrays import ClusterArrays, PoolArrays, cluster_arrays, pool_arrays
from pools.health import partition_states
from pools.policy import PoolPolicy
from pools.pool_rules import racks_required
from pools.snapshot import ClusterSnapshot

__all__ = [
    "Rule",
    "RULES",
    "LEADER_SKEW",
    "check_replica_outside_pool",
    "check_broker_mixed_pools",
    "check_broker_without_pool",
    "check_topic_without_pool",
    "check_rack_shared",
    "check_offline_partition",
    "check_under_min_isr",
    "check_under_replicated",
    "check_reassignment_in_progress",
    "check_log_dir_error",
    "check_replica_count_over_limit",
    "check_leader_not_preferred",
    "check_utilisation_over_headroom",
    "check_pool_cannot_lose_broker",
    "check_leader_count_skew",
    "check_replicas_on_cordoned",
    "check_log_dir_over_headroom",
    "check_min_isr_after_broker_loss",
    "check_at_min_isr",
    "check_single_replica_topic",
]

#: A broker's leader count is skewed when it is above ``ceil(mean * (1 + LEADER_SKEW))`` or below
#: ``floor(mean * (1 - LEADER_SKEW))``, the mean over the brokers of its pool (Cruise Control's
#: LeaderReplicaDistributionGoal bounds, with a wider threshold than its 1.10 default).
LEADER_SKEW = 0.5

Check = Callable[[ClusterSnapshot, PoolPolicy, Loads], list[Finding]]


@dataclass(frozen=True, slots=True)
class Rule:
    """A registered rule: the finding kind it reports, its check and its default severity."""

    kind: str
    check: Check
    severity: Severity


# --- isolation --------------------------------------------------------------------------------------------


def check_replica_outside_pool(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Replicas on a broker outside their topic's pool (another pool's broker or a broker in no pool).

    One finding per misplaced replica; the fix reassigns the partition to its pool's seed placement
    (`pools.audit.fixes`: the brokers a plan would choose), throttled.
    """
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    want = p.topic_pool[a.rep_topic]
    bad = np.flatnonzero((want >= 0) & (p.broker_pool[a.rep_broker] != want))
    fixes = fix_targets(snapshot, policy, loads) if len(bad) else None
    out: list[Finding] = []
    for r in bad.tolist():
        part = int(a.rep_part[r])
        pool = p.pools[int(want[r])]
        out.append(
            finding(
                "replica_outside_pool",
                pool=pool,
                broker=_broker_id(a, int(a.rep_broker[r]), snapshot, part, int(a.rep_pos[r])),
                topic=a.topics[int(a.part_topic[part])],
                partition=int(a.part_id[part]),
                evidence={
                    "broker_pool": pool_name(p, int(p.broker_pool[a.rep_broker[r]])),
                    "replicas": list(snapshot.partitions[part].replicas),
                    "size_bytes": int(a.rep_size[r]),
                },
                fix=fixes.fix(part),
            )
        )
    return out


def check_broker_mixed_pools(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Brokers carrying replicas of topics of more than one pool (topics in no pool not counted)."""
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    counts = _broker_pool_replicas(a, p)
    out = []
    for b in np.flatnonzero((counts > 0).sum(axis=1) > 1).tolist():
        own = int(p.broker_pool[b])
        out.append(
            finding(
                "broker_mixed_pools",
                pool=pool_name(p, own),
                broker=int(a.broker_ids[b]),
                evidence={"replicas_by_pool": {p.pools[j]: int(c) for j, c in enumerate(counts[b]) if c}},
                fix=PLAN_FIX,
            )
        )
    return out


def check_broker_without_pool(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Brokers no pool claims: no pool tag the policy knows and not pinned by any pool."""
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    out = []
    for b in np.flatnonzero(p.broker_pool[: a.n_brokers] < 0).tolist():
        broker = snapshot.broker_by_id[int(a.broker_ids[b])]
        out.append(
            finding(
                "broker_without_pool",
                broker=broker.id,
                evidence={"pool_tag": broker.pool, "rack": broker.rack, "replicas": int(loads.now[b, 3])},
                fix=f"$EDITOR $POLICY  # pin broker {broker.id} in a [[pool]] brokers list, "
                "or give it a pool tag in the broker inventory",
            )
        )
    return out


def check_topic_without_pool(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Topics that no pool selector, tenant or default pool matches."""
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    parts = np.bincount(a.part_topic, minlength=len(a.topics))
    size = np.bincount(a.part_topic, weights=a.part_size.astype(float), minlength=len(a.topics))
    return [
        finding(
            "topic_without_pool",
            topic=a.topics[t],
            evidence={"partitions": int(parts[t]), "size_bytes": int(size[t]), "tenant": policy.tenant_of(a.topics[t])},
            fix=f"$EDITOR $POLICY  # add a selector matching {a.topics[t]!r} to a [[pool]] or [[tenant]] topics "
            "list, or make one pool the default",
        )
        for t in np.flatnonzero(p.topic_pool < 0).tolist()
    ]


def check_rack_shared(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Partitions whose replicas span fewer racks than they could: fewer than min(RF, racks of the pool).

    The racks available are those of the brokers of the topic's pool (of the whole cluster for a topic in no
    pool); partitions with a replica on a broker without a rack are not judged.
    """
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    if not a.racks:
        return []
    rep_rack = np.append(a.broker_rack, -1)[a.rep_broker]
    unracked = np.bincount(a.rep_part, weights=(rep_rack < 0), minlength=len(a.part_rf)) > 0
    distinct = _distinct_racks(a, rep_rack)
    pool_racks = _pool_rack_counts(a, p)
    tp = p.topic_pool[a.part_topic]
    available = np.where(tp >= 0, pool_racks[np.maximum(tp, 0)], len(a.racks))
    bad = np.flatnonzero(~unracked & (distinct < racks_required(a.part_rf, available)))
    fixes = fix_targets(snapshot, policy, loads) if len(bad) else None
    out = []
    for part in bad.tolist():
        pool = int(tp[part])
        out.append(
            finding(
                "rack_shared",
                pool=pool_name(p, pool),
                topic=a.topics[int(a.part_topic[part])],
                partition=int(a.part_id[part]),
                evidence={
                    "replicas": list(snapshot.partitions[part].replicas),
                    "racks": [a.racks[int(r)] for r in rep_rack[replica_span(a, part)]],
                    "distinct_racks": int(distinct[part]),
                    "racks_available": int(available[part]),
                },
                fix=fixes.fix(part),
            )
        )
    return out


# --- partition health ---------------------------------------------------------------------------------------


def check_offline_partition(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Partitions without a leader (``Leader: none``). One with eligible leader replicas (KIP-966: ``Elr`` not
    empty) gets a leader back, without losing data, as soon as one of them is up: its fix brings them back and
    never elects uncleanly; the others' last resort is an unclean election (naming ``LastKnownElr``, the replicas
    most likely to hold the latest data, when Kafka reports them)."""
    a = cluster_arrays(snapshot)
    out = []
    for part in np.flatnonzero(a.part_offline).tolist():
        p = snapshot.partitions[part]
        if p.elr:
            fix = (f"# bring broker(s) {_ids(p.elr)} back: the controller elects a leader from the ELR (KIP-966) "
                   "without losing data; no unclean election")
        else:
            first = f"brokers {_ids(p.last_known_elr)} (last known ELR) or {{replicas}}" if p.last_known_elr \
                else "brokers {replicas}"
            fix = ("kafka-leader-election.sh --bootstrap-server $BOOTSTRAP --election-type UNCLEAN "
                   f"--topic {{topic}} --partition {{partition}}  # last resort, loses data: first bring {first} back")
        out.append(_partition_finding("offline_partition", snapshot, policy, part, fix=fix))
    return out


def check_under_min_isr(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Partitions with a leader whose reported ISR is smaller than the topic's ``min.insync.replicas``
    (`pools.health.partition_states`: an empty ISR with a leader is not reported, so not under min ISR)."""
    a, states = cluster_arrays(snapshot), partition_states(snapshot)
    bad = ~states.offline & states.isr_reported & (states.in_sync < _min_isr(snapshot, a))
    return [
        _partition_finding(
            "under_min_isr", snapshot, policy, part,
            fix="kafka-topics.sh --bootstrap-server $BOOTSTRAP --describe --under-min-isr-partitions "
            "--topic {topic}  # acks=all producers fail: restart or repair out-of-sync brokers {out_of_sync}",
        )
        for part in np.flatnonzero(bad).tolist()
    ]


def check_under_replicated(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Partitions with a leader and more than min ISR whose reported ISR lacks a replica: the planner's
    under-replicated (`pools.health.partition_states`), so a partition the audit reports is one the plan holds.

    A reassignment's adding replicas are not expected in the ISR yet, as `kafka-topics.sh` leaves them out of the
    replication factor.
    """
    a, states = cluster_arrays(snapshot), partition_states(snapshot)
    bad = states.under_replicated & (states.in_sync > _min_isr(snapshot, a))  # at min ISR: `check_at_min_isr`
    return [
        _partition_finding(
            "under_replicated", snapshot, policy, part,
            fix="kafka-topics.sh --bootstrap-server $BOOTSTRAP --describe --under-replicated-partitions "
            "--topic {topic}  # then restart or repair out-of-sync brokers {out_of_sync}",
        )
        for part in np.flatnonzero(bad).tolist()
    ]


def check_reassignment_in_progress(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Partitions with adding or removing replicas (a reassignment has not finished)."""
    a = cluster_arrays(snapshot)
    bad = (a.part_adding > 0) | (a.part_removing > 0)
    return [
        _partition_finding(
            "reassignment_in_progress", snapshot, policy, part,
            fix="kafka-reassign-partitions.sh --bootstrap-server $BOOTSTRAP --list  "
            "# then --verify with its reassignment file, or --cancel it",
        )
        for part in np.flatnonzero(bad).tolist()
    ]


def check_log_dir_error(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Log directories `kafka-log-dirs.sh` reported with an error."""
    p = pool_arrays(snapshot, policy)
    a = cluster_arrays(snapshot)
    out = []
    for e in snapshot.log_dir_errors:
        pos = int(np.searchsorted(a.broker_ids, e.broker))
        known = pos < a.n_brokers and int(a.broker_ids[pos]) == e.broker
        out.append(
            finding(
                "log_dir_error",
                pool=pool_name(p, int(p.broker_pool[pos])) if known else None,
                broker=e.broker,
                evidence={"log_dir": e.log_dir, "error": e.error},
                fix=f"kafka-log-dirs.sh --bootstrap-server $BOOTSTRAP --describe --broker-list {e.broker}  "
                f"# then replace the disk behind {e.log_dir} on broker {e.broker} and restart it",
            )
        )
    return out


# --- capacity -------------------------------------------------------------------------------------------------


# --- leadership -------------------------------------------------------------------------------------------------


def check_leader_not_preferred(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Healthy partitions led by a replica other than the first (preferred) one while the preferred replica is
    in the ISR, so a preferred leader election would move leadership back."""
    a = cluster_arrays(snapshot)
    first = a.part_start[a.part_rf > 0]
    has = np.flatnonzero(a.part_rf > 0)
    preferred = np.full(len(a.part_rf), -1)
    preferred[has] = a.rep_broker[first]
    preferred_in_isr = np.zeros(len(a.part_rf), dtype=bool)
    preferred_in_isr[has] = a.rep_in_isr[first]
    leader_in_isr = _leader_in_isr(a)
    healthy = ~a.part_offline & (a.part_isr >= _min_isr(snapshot, a))
    bad = healthy & leader_in_isr & preferred_in_isr & (a.part_leader != preferred) & (a.part_adding == 0)
    return [
        _partition_finding(
            "leader_not_preferred", snapshot, policy, part,
            fix="kafka-leader-election.sh --bootstrap-server $BOOTSTRAP --election-type PREFERRED "
            "--topic {topic} --partition {partition}",
        )
        for part in np.flatnonzero(bad).tolist()
    ]


def check_leader_count_skew(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Brokers leading far more or far fewer partitions than the mean of their pool (see `LEADER_SKEW`)."""
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    led = a.part_leader[a.part_leader >= 0]
    leaders = np.bincount(led, minlength=a.n_brokers)[: a.n_brokers]
    preferred = np.bincount(a.rep_broker[a.rep_pos == 0], minlength=a.n_brokers + 1)[: a.n_brokers]
    out = []
    for j, pool in enumerate(p.pools):
        members = np.flatnonzero(p.broker_pool[: a.n_brokers] == j)
        if len(members) < 2:
            continue
        mean = float(leaders[members].mean())
        upper, lower = math.ceil(mean * (1 + LEADER_SKEW)), math.floor(mean * (1 - LEADER_SKEW))
        for b in members.tolist():
            if lower <= leaders[b] <= upper:
                continue
            balanced = lower <= preferred[b] <= upper
            out.append(
                finding(
                    "leader_count_skew",
                    pool=pool,
                    broker=int(a.broker_ids[b]),
                    evidence={
                        "leaders": int(leaders[b]),
                        "preferred_leaders": int(preferred[b]),
                        "pool_mean": round(mean, 3),
                        "allowed": [lower, upper],
                    },
                    fix="kafka-leader-election.sh --bootstrap-server $BOOTSTRAP --election-type PREFERRED "
                    "--all-topic-partitions" if balanced else PLAN_FIX,
                )
            )
    return out


RULES: tuple[Rule, ...] = (
    Rule("replica_outside_pool", check_replica_outside_pool, SEVERITY["replica_outside_pool"]),
    Rule("broker_mixed_pools", check_broker_mixed_pools, SEVERITY["broker_mixed_pools"]),
    Rule("broker_without_pool", check_broker_without_pool, SEVERITY["broker_without_pool"]),
    Rule("topic_without_pool", check_topic_without_pool, SEVERITY["topic_without_pool"]),
    Rule("rack_shared", check_rack_shared, SEVERITY["rack_shared"]),
    Rule("offline_partition", check_offline_partition, SEVERITY["offline_partition"]),
    Rule("under_min_isr", check_under_min_isr, SEVERITY["under_min_isr"]),
    Rule("under_replicated", check_under_replicated, SEVERITY["under_replicated"]),
    Rule("reassignment_in_progress", check_reassignment_in_progress, SEVERITY["reassignment_in_progress"]),
    Rule("log_dir_error", check_log_dir_error, SEVERITY["log_dir_error"]),
    Rule("replica_count_over_limit", check_replica_count_over_limit, SEVERITY["replica_count_over_limit"]),
    Rule("utilisation_over_headroom", check_utilisation_over_headroom, SEVERITY["utilisation_over_headroom"]),
    Rule("pool_cannot_lose_broker", check_pool_cannot_lose_broker, SEVERITY["pool_cannot_lose_broker"]),
    Rule("leader_not_preferred", check_leader_not_preferred, SEVERITY["leader_not_preferred"]),
    Rule("leader_count_skew", check_leader_count_skew, SEVERITY["leader_count_skew"]),
    Rule("replicas_on_cordoned", check_replicas_on_cordoned, SEVERITY["replicas_on_cordoned"]),
    Rule("log_dir_over_headroom", check_log_dir_over_headroom, SEVERITY["log_dir_over_headroom"]),
    Rule("min_isr_after_broker_loss", check_min_isr_after_broker_loss, SEVERITY["min_isr_after_broker_loss"]),
    Rule("at_min_isr", check_at_min_isr, SEVERITY["at_min_isr"]),
    Rule("single_replica_topic", check_single_replica_topic, SEVERITY["single_replica_topic"]),
)


# --- helpers ----------------------------------------------------------------------------------------------------


def _partition_finding(kind: str, snapshot: ClusterSnapshot, policy: PoolPolicy, part: int, *, fix: str) -> Finding:
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    state = snapshot.partitions[part]
    min_isr = snapshot.topic_by_name[state.topic].min_insync_replicas if state.topic in snapshot.topic_by_name else 1
    out_of_sync = [b for b in state.replicas if b not in state.isr]
    evidence = {"replicas": list(state.replicas), "leader": state.leader, "isr": list(state.isr),
                "min_insync_replicas": min_isr}
    if state.elr or state.last_known_elr:  # KIP-966, as kafka-topics.sh prints them
        evidence |= {"elr": list(state.elr or ()), "last_known_elr": list(state.last_known_elr or ())}
    if state.adding_replicas or state.removing_replicas:
        evidence |= {"adding_replicas": list(state.adding_replicas), "removing_replicas": list(state.removing_replicas)}
    text = fix.format(topic=state.topic, partition=state.partition, replicas=_ids(state.replicas),
                      out_of_sync=_ids(out_of_sync))
    return finding(kind, pool=pool_name(p, int(p.topic_pool[a.part_topic[part]])), topic=state.topic,
                    partition=state.partition, evidence=evidence, fix=text)


def _min_isr(snapshot: ClusterSnapshot, a: ClusterArrays) -> np.ndarray:
    per_topic = np.array([snapshot.topic_by_name[t].min_insync_replicas if t in snapshot.topic_by_name else 1
                          for t in a.topics], dtype=np.int64)
    return per_topic[a.part_topic] if len(a.topics) else np.zeros(0, dtype=np.int64)


def _leader_in_isr(a: ClusterArrays) -> np.ndarray:
    hit = a.rep_in_isr & (a.rep_broker == a.part_leader[a.rep_part])
    out = np.zeros(len(a.part_rf), dtype=bool)
    out[a.rep_part[hit]] = True
    return out


def _broker_pool_replicas(a: ClusterArrays, p: PoolArrays) -> np.ndarray:
    n_pools = len(p.pools)
    tp = p.topic_pool[a.rep_topic]
    keep = (tp >= 0) & (a.rep_broker < a.n_brokers)
    flat = np.bincount(a.rep_broker[keep] * n_pools + tp[keep], minlength=a.n_brokers * n_pools)
    return flat.reshape(a.n_brokers, n_pools)


def _distinct_racks(a: ClusterArrays, rep_rack: np.ndarray) -> np.ndarray:
    """Distinct racks among each partition's replicas (replicas without a rack not counted)."""
    n = len(a.part_rf)
    if len(a.racks) <= 63 and len(rep_rack):
        bits = np.where(rep_rack >= 0, np.left_shift(np.uint64(1), np.maximum(rep_rack, 0).astype(np.uint64)),
                        np.uint64(0))
        masks = np.zeros(n, dtype=np.uint64)
        has = a.part_rf > 0
        masks[has] = np.bitwise_or.reduceat(bits, a.part_start[has])
        return np.bitwise_count(masks).astype(np.int64)
    key = a.rep_part * len(a.racks) + np.maximum(rep_rack, 0)
    return np.bincount(np.unique(key[rep_rack >= 0]) // len(a.racks), minlength=n)


def _pool_rack_counts(a: ClusterArrays, p: PoolArrays) -> np.ndarray:
    counts = np.zeros(max(len(p.pools), 1), dtype=np.int64)
    for j in range(len(p.pools)):
        racks = a.broker_rack[p.broker_pool[: a.n_brokers] == j]
        counts[j] = len(set(racks[racks >= 0].tolist()))
    return counts


def _ids(brokers) -> str:
    return ", ".join(map(str, brokers))


def _broker_id(a: ClusterArrays, pos: int, snapshot: ClusterSnapshot, part: int, rep_pos: int) -> int:
    return int(a.broker_ids[pos]) if pos < a.n_brokers else snapshot.partitions[part].replicas[rep_pos]


