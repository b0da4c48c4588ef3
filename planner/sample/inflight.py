"""What an operator captures while a reassignment runs, generated: log-dirs captures and ``--verify`` output.

For the bundle's moves (current replicas → target) on a snapshot, `inflight_captures` writes one
``kafka-log-dirs.sh --describe`` capture per entry of ``fractions``: every current replica at the partition's
size, every new replica at that fraction of it (a partition in ``stalled`` stays at the first fraction),
`inflight_describe` a ``kafka-topics.sh --describe`` capture of the same moment (a running reassignment's
replicas, adding and removing replicas and ISR as Kafka prints them), and `verify_output` the matching
``kafka-reassign-partitions.sh --verify`` text (Kafka's ``ReassignPartitionsCommand`` lines; a finished
reassignment clears the throttles unless ``preserve_throttles``). `poolplan progress` reads them back
(`planner.emit.progress`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path

from planner.sample.cluster import DATA_DIR
from planner.sample.writers import format_log_dirs, format_topics_describe
from pools.snapshot import ClusterSnapshot

__all__ = ["STATES", "inflight_captures", "inflight_describe", "sample_inflight", "verify_output"]

Moves = Mapping[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]


def inflight_captures(snapshot: ClusterSnapshot, moves: Moves, fractions: Sequence[float],
                      stalled: Collection[tuple[str, int]] = (),
                      complete: Collection[tuple[str, int]] = ()) -> list[str]:
    """One log-dirs capture per fraction of the copy done (see the module docstring); ``moves`` maps each moving
    partition to its (current, target) replicas; a partition in ``complete`` has finished before the first
    capture (new replicas full, the replicas it leaves deleted)."""
    out = []
    for k, fraction in enumerate(fractions):
        rows: dict[int, list] = {b.id: [] for b in snapshot.brokers}
        for p in snapshot.partitions:
            key = (p.topic, p.partition)
            old, new = moves.get(key, (p.replicas, p.replicas))
            done = 1.0 if key in complete else fractions[0] if key in stalled else fraction
            for b in sorted(set(old) | set(new)):
                if b not in rows:
                    continue
                size = p.size_bytes if b in old else int(p.size_bytes * done)
                if b in old and b not in new and done >= 1.0 and (key in complete or k == len(fractions) - 1):
                    continue  # a finished move deletes the replicas it leaves
                rows[b].append((f"{p.topic}-{p.partition}", size, 0, False))
        out.append(format_log_dirs([(b, [(DATA_DIR, None, sorted(r))]) for b, r in sorted(rows.items())]))
    return out


def inflight_describe(snapshot: ClusterSnapshot, moves: Moves, *, complete: Collection[tuple[str, int]] = (),
                      joined: Collection[tuple[str, int, int]] = (),
                      out_of_isr: Mapping[tuple[str, int], Collection[int]] | None = None,
                      leaders: Mapping[tuple[str, int], int] | None = None) -> str:
    """``kafka-topics.sh --describe`` while ``moves`` run: a partition in ``complete`` has its target replicas (led
    by ``leaders`` or its first), another that moves lists its target then the replicas it leaves, with adding and
    removing replicas, and an ISR of its current replicas plus the new ones in ``joined`` ((topic, partition,
    broker)); ``out_of_isr`` drops brokers from a partition's ISR (a leader dropped leaves it leaderless)."""
    out_of_isr, leaders = out_of_isr or {}, leaders or {}
    rows: dict[str, list[dict]] = {}
    for p in snapshot.partitions:
        key = (p.topic, p.partition)
        old, new = moves.get(key, (p.replicas, p.replicas))
        if key in complete or set(old) == set(new):
            replicas, isr, adding, removing = tuple(new), tuple(new), (), ()
            leader = leaders.get(key, new[0]) if key in complete else old[0]
        else:
            adding = tuple(b for b in new if b not in old)
            removing = tuple(b for b in old if b not in new)
            replicas = (*new, *removing)
            isr = (*old, *(b for b in adding if (*key, b) in joined))
            leader = old[0]
        isr = tuple(b for b in isr if b not in out_of_isr.get(key, ()))
        rows.setdefault(p.topic, []).append({"partition": p.partition, "leader": leader if leader in isr else None,
                                             "replicas": replicas, "isr": isr, "adding": adding,
                                             "removing": removing})
    topics = [{"topic": t.topic, "topic_id": t.topic_id or "AAAAAAAAAAAAAAAAAAAAAA",
               "replication_factor": len(rows[t.topic][0]["replicas"]), "configs": sorted(t.configs.items())}
              for t in snapshot.topics if t.topic in rows]
    return format_topics_describe(topics, rows)


def verify_output(moves: Moves, done: Collection[tuple[str, int]], *, preserve_throttles: bool = False) -> str:
    """``kafka-reassign-partitions.sh --verify`` for ``moves``, the partitions in ``done`` complete."""
    lines = ["Status of partition reassignment:"]
    for (topic, partition) in sorted(moves):
        state = "is completed." if (topic, partition) in done else "is still in progress."
        lines.append(f"Reassignment of partition {topic}-{partition} {state}")
    if set(moves) <= set(done) and not preserve_throttles:
        lines.append("Clearing broker-level throttles on brokers " + ",".join(
            map(str, sorted({b for old, new in moves.values() for b in (*old, *new)}))))
        lines.append("Clearing topic-level throttles on topics " + ",".join(sorted({t for t, _ in moves})))
    return "\n".join(lines) + "\n"


#: The states ``poolplan sample --inflight`` can plant: the fractions of the copy done at each capture, whether one
#: partition stalls at the first, and whether ``--verify`` reports every partition complete.
STATES: dict[str, tuple[tuple[float, ...], bool, bool]] = {
    "running": ((0.2, 0.45, 0.7), False, False),
    "stuck": ((0.2, 0.45, 0.7), True, False),
    "done": ((0.4, 1.0), False, True),
}


def sample_inflight(sample_dir: Path, cluster: str, state: str) -> Iterator[tuple[str, str]]:
    """The files of ``inflight/`` for the sample written in ``sample_dir`` (paths relative to it).

    A snapshot of the sample's last capture, a plan that isolates every topic in its pool (each replica on a broker
    outside the topic's pool, per truth.json, moves to the pool's broker with the fewest replicas), its bundle
    (``inflight/bundle/``, as `poolplan emit` writes it), one log-dirs and one ``kafka-topics.sh --describe`` capture
    per fraction of ``STATES[state]`` (``inflight/log-dirs-<stamp>.txt``, ``inflight/topics-<stamp>.txt``, stamped
    60 s apart after the sample's last log-dirs capture) and ``inflight/verify.txt``. Unless ``done``, the last
    partitions in (topic, partition) order (fewer than half) are complete from the first capture and the rest copy
    at the fractions; in ``stuck``, the first moving partition stays at the first fraction.
    """
    from planner.emit import EmitOptions, build_bundle
    from pools.capture_time import taken_at_from_name
    from pools.files import load_toml, read_text
    from pools.kafka_formats.inventory import inventory_from_dict
    from pools.plan_file import PartitionMove, Plan, Reason, ReasonRule, SolverReport
    from pools.snapshot_build import build_snapshot

    kafka = sample_dir / "kafka"
    captures = sorted((kafka / "log-dirs").iterdir())
    configs = kafka / "broker-configs.txt"
    snap = build_snapshot(
        read_text(kafka / "topics-describe.txt"), read_text(captures[-1]),
        inventory_from_dict(load_toml(sample_dir / "brokers.toml"), source="brokers.toml"), cluster=cluster,
        broker_configs_text=read_text(configs) if configs.exists() else None)
    pool_of_topic = {t: row["pool"] for t, row in json.loads(read_text(sample_dir / "truth.json"))["topics"].items()}
    open_brokers = [b for b in snap.brokers if not b.cordoned]
    count = {b.id: 0 for b in snap.brokers}
    for p in snap.partitions:
        for r in p.replicas:
            count[r] = count.get(r, 0) + 1
    moves = []
    for p in snap.partitions:
        pool = pool_of_topic.get(p.topic)
        members = [b.id for b in open_brokers if pool is not None and b.pool == pool]
        outside = tuple(r for r in p.replicas if r not in members)
        spare = [b for b in members if b not in p.replicas]
        if not outside or len(spare) < len(outside) or len(set(p.replicas)) != len(p.replicas):
            continue
        target = list(p.replicas)
        for r in outside:
            dest = min((b for b in spare if b not in target), key=lambda b: (count[b], b))
            target[target.index(r)] = dest
            count[dest] += 1
        moves.append(PartitionMove(p.topic, p.partition, p.replicas, tuple(target), p.size_bytes,
                                   Reason(ReasonRule.ISOLATE, brokers=outside)))
    brokers = {b.id: b.pool for b in snap.brokers}
    plan = Plan(snap.cluster, brokers, brokers, {t: pool for t, pool in pool_of_topic.items() if pool}, tuple(moves),
                {}, SolverReport("sample", "Optimal", "sample in flight", None, None, None))
    for rel, text in build_bundle(plan, snap, EmitOptions()).items():
        yield f"inflight/bundle/{rel}", text
    fractions, stall, finished = STATES[state]
    by_key = {(m.topic, m.partition): (m.old_replicas, m.replicas) for m in moves}
    keys = sorted(by_key)
    stalled = keys[:1] if stall else []
    complete = keys if finished else keys[len(keys) // 2 + 1:]
    start = datetime.fromisoformat(str(taken_at_from_name(captures[-1].name)))  # the sample stamps every name
    stamps = [f"{start + timedelta(seconds=60 * k):%Y%m%dT%H%M%SZ}" for k in range(1, len(fractions) + 1)]
    for stamp, text in zip(stamps, inflight_captures(snap, by_key, fractions, stalled, complete), strict=True):
        yield f"inflight/log-dirs-{stamp}.txt", text
    for k, stamp in enumerate(stamps):
        done = keys if finished and k == len(stamps) - 1 else complete
        yield f"inflight/topics-{stamp}.txt", inflight_describe(snap, by_key, complete=done)
    yield "inflight/verify.txt", verify_output(by_key, complete)
