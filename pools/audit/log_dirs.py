"""The audit's log-dir rules (Kafka 4.x): replicas left on a cordoned broker or log dir (KIP-1066), and a JBOD
log dir over its headroom while its broker is under.

A JBOD broker's log dir holds `pools.pool_rules.log_dir_capacity` (the inventory's capacity for it, else an equal
share of the broker's disk; the evidence says which). Sizes are the replicas' current sizes (local bytes).
Both rules read each replica's log dir from the snapshot and look only at brokers with a cordon or several dirs.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from pools.audit.common import finding, num, pool_name, ratio
from pools.audit.findings import Finding
from pools.audit.loads import Loads
from pools.cluster_arrays import cluster_arrays, pool_arrays
from pools.health import open_log_dirs
from pools.kafka_formats.reassignment import ANY_LOG_DIR, format_reassignment_json
from pools.policy import PoolPolicy
from pools.pool_rules import PoolRules, log_dir_capacity, over_limit
from pools.snapshot import Broker, ClusterSnapshot, PartitionState
from pools.throttle import INTRA_BROKER_THROTTLE_BPS

__all__ = ["SHOWN", "check_replicas_on_cordoned", "check_log_dir_over_headroom"]

#: Partitions named in evidence and moved by one fix, largest first; a fix over more says to audit again.
SHOWN = 20


def check_replicas_on_cordoned(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """Replicas on a cordoned broker or in a cordoned log dir: one finding per broker (a whole cordoned broker)
    or per cordoned dir holding replicas. A cordoned broker or dir takes no new replica but keeps serving the
    ones it has; the fix drains it (a broker: ``poolplan brokers decommission``; a dir: an intra-broker move to
    the broker's emptiest open dir), or uncordons it when it should serve on."""
    brokers = {b.id: b for b in snapshot.brokers if b.cordoned or b.cordoned_log_dirs}
    if not brokers:
        return []
    held = _replicas_by_dir(snapshot, set(brokers))
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    out = []
    for broker_id, b in sorted(brokers.items()):
        pool = pool_name(p, int(p.broker_pool[int(np.searchsorted(a.broker_ids, broker_id))]))
        dirs = held.get(broker_id, {})
        if b.cordoned:
            replicas = sorted((r for rs in dirs.values() for r in rs), key=_largest_first)
            if replicas:
                out.append(_cordoned(broker_id, pool, None, replicas,
                                     f"poolplan brokers decommission --snapshot $SNAPSHOT --policy $POLICY "
                                     f"--broker {broker_id} --out plan && poolplan emit --plan plan/plan.json "
                                     f"--snapshot $SNAPSHOT --out bundle  # or, if broker {broker_id} should serve "
                                     f"on: {_uncordon(b)}"))
            continue
        open_dirs = list(open_log_dirs(b))
        for log_dir in b.cordoned_log_dirs:
            replicas = sorted(dirs.get(log_dir, ()), key=_largest_first)
            if not replicas:
                continue
            target = min(open_dirs, key=lambda d: (sum(s for _, s in dirs.get(d, ())), d)) if open_dirs else None
            fix = (_dir_move(broker_id, replicas[:SHOWN], target) if target is not None else
                   f"# broker {broker_id} has no open log dir to move them to: uncordon one with kafka-configs.sh")
            out.append(_cordoned(broker_id, pool, log_dir, replicas, fix))
    return out


def _uncordon(broker: Broker) -> str:
    """How to lift a broker's cordon: delete the config where Kafka holds one (`pools.snapshot.Broker.kafka_cordon`;
    ``kafka-configs.sh`` refuses to delete a config that is not set), else edit the file that gives it."""
    if broker.kafka_cordon():
        return (f"kafka-configs.sh --bootstrap-server $BOOTSTRAP --alter --entity-type brokers --entity-name "
                f"{broker.id} --delete-config cordoned.log.dirs")
    return f"remove its cordon from {broker.cordon_source() or 'the inventory'}"


def check_log_dir_over_headroom(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> list[Finding]:
    """A log dir of a JBOD broker over the disk headroom of its capacity (`pools.pool_rules.log_dir_capacity`) while
    the broker as a whole is within its headroom: Kafka fills dirs unevenly (new replicas go to the dir with the
    fewest partitions), and a full dir goes offline with every replica in it. The fix moves the dir's largest
    replicas to the broker's emptiest open dir (by fill) until the dir is back within headroom."""
    jbod = {b.id: b for b in snapshot.brokers if len(b.log_dirs) > 1}
    if not jbod:
        return []
    held = _replicas_by_dir(snapshot, set(jbod))
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    rules = PoolRules.from_policy(policy)
    out = []
    for broker_id, b in sorted(jbod.items()):
        pool = pool_name(p, int(p.broker_pool[int(np.searchsorted(a.broker_ids, broker_id))]))
        headroom = rules.limits(pool).headroom_of("disk")
        dirs = held.get(broker_id, {})
        used = {d: sum(s for _, s in dirs.get(d, ())) for d in b.log_dirs}
        total = sum(used.values())
        if over_limit(total, headroom * b.capacity.disk):
            continue  # a broker over its headroom is utilisation_over_headroom's finding
        for log_dir in b.log_dirs:
            share = log_dir_capacity(b, log_dir)
            if share <= 0 or not over_limit(used[log_dir], headroom * share):
                continue
            open_dirs = [d for d in open_log_dirs(b) if d != log_dir]
            moving, excess = [], used[log_dir] - headroom * share
            for r in sorted(dirs.get(log_dir, ()), key=_largest_first):
                if excess <= 0 or len(moving) == SHOWN:
                    break
                moving.append(r)
                excess -= r[1]
            target = min(open_dirs, key=lambda d: (used[d] / max(log_dir_capacity(b, d), 1.0), d)) \
                if open_dirs else None
            fix = (_dir_move(broker_id, moving, target) if target is not None and moving else
                   f"# broker {broker_id} has no other open log dir: add a disk or move replicas off the broker")
            out.append(finding(
                "log_dir_over_headroom", pool=pool, broker=broker_id,
                evidence={"log_dir": log_dir, "log_dirs": len(b.log_dirs), "size_bytes": num(used[log_dir]),
                          "capacity": num(share), "capacity_from": "inventory" if log_dir in dict(b.log_dir_capacities)
                          else "equal share of the broker's disk", "headroom": headroom,
                          "utilisation": ratio(used[log_dir], share),
                          "broker_utilisation": ratio(total, b.capacity.disk)},
                fix=fix,
            ))
    return out


_Replica = tuple[PartitionState, int]


def _replicas_by_dir(snapshot: ClusterSnapshot, brokers: set[int]) -> dict[int, dict[str, list[_Replica]]]:
    """Per broker of ``brokers``, per log dir: the (partition, size) of each replica the snapshot places there."""
    out: dict[int, dict[str, list[_Replica]]] = defaultdict(lambda: defaultdict(list))
    for p in snapshot.partitions:
        if not p.log_dirs or brokers.isdisjoint(p.replicas):
            continue
        for b, d, s in zip(p.replicas, p.log_dirs, p.sizes or (None,) * len(p.replicas), strict=True):
            if b in brokers and d is not None:
                out[b][d].append((p, s or 0))
    return out


def _largest_first(r: _Replica) -> tuple[int, str, int]:
    return -r[1], r[0].topic, r[0].partition


def _cordoned(broker: int, pool: str | None, log_dir: str | None, replicas: list[_Replica], fix: str) -> Finding:
    return finding(
        "replicas_on_cordoned", pool=pool, broker=broker,
        evidence={"log_dir": log_dir, "replicas": len(replicas), "size_bytes": num(sum(s for _, s in replicas)),
                  "partitions": [f"{p.topic}-{p.partition}" for p, _ in replicas[:SHOWN]]},
        fix=fix,
    )


def _dir_move(broker: int, replicas: list[_Replica], target: str) -> str:
    """``kafka-reassign-partitions.sh`` moving ``replicas`` of ``broker`` into its log dir ``target`` (same replica
    lists, ``log_dirs`` naming ``target`` for this broker and ``any`` for the others), throttled."""
    text = format_reassignment_json(
        [{"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas),
          "log_dirs": [target if b == broker else ANY_LOG_DIR for b in p.replicas]} for p, _ in replicas]
    )
    return (f"kafka-reassign-partitions.sh --bootstrap-server $BOOTSTRAP --execute --replica-alter-log-dirs-throttle "
            f"{INTRA_BROKER_THROTTLE_BPS} --reassignment-json-file <(echo '{text}')  # then the same with --verify "
            "until it reports completed; audit again for any replicas left")
