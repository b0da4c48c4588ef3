"""JBOD log-dir targets of a bundle (``poolplan emit --log-dir-placement balance``): where each new replica lands on a
broker with several log dirs, and the moves between a broker's dirs that even them out.

Per broker with two or more open log dirs (`pools.health.open_log_dirs`: none on a cordoned broker, KIP-1066; a
broker with a log dir in error is left alone), each dir holding `pools.pool_rules.log_dir_capacity`:

1. The dirs' fill after the plan starts from today's replicas in each dir, less those the plan takes off the
   broker.
2. **Targets**: each replica the plan adds to the broker goes to its open dir with the lowest fill (bytes over
   the dir's capacity; largest replicas first); the bundle's ``log_dirs`` names that dir, ``any`` elsewhere.
3. **Moves inside the broker** (what a ``rebalance --log-dirs`` would move): while the fullest and the emptiest
   open dir (by fill: bytes over the dir's capacity) differ by more than `LOG_DIR_BAND`, the replica of the
   fullest dir whose size is nearest the bytes that would even the two (half the gap for dirs of one size; below
   twice that, so the spread shrinks) moves to the emptiest; partitions the plan
   moves or holds (`pools.health`) stay. At most `MAX_MOVES_PER_BROKER` per broker, fewest bytes first: each
   move is a full local copy.

Everything is deterministic: ties go to the first dir by name, then topic and partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pools.health import ClusterHealth, open_log_dirs
from pools.pool_rules import log_dir_capacity
from pools.snapshot import ClusterSnapshot

__all__ = ["LOG_DIR_BAND", "MAX_MOVES_PER_BROKER", "LogDirMove", "LogDirPlan", "balance_log_dirs"]

#: Fill spread (bytes over each dir's capacity) within which a broker's open dirs count as even.
LOG_DIR_BAND = 0.1
#: Moves between one broker's dirs in one bundle, at most.
MAX_MOVES_PER_BROKER = 200


@dataclass(frozen=True, slots=True)
class LogDirMove:
    """One replica moving between two log dirs of its broker."""

    topic: str
    partition: int
    broker: int
    from_dir: str
    to_dir: str
    size_bytes: int


@dataclass(frozen=True)
class LogDirPlan:
    """``targets``: ``(topic, partition, broker) -> dir`` of the replicas the plan adds; ``moves``: per broker,
    the moves between its dirs; ``fill``: per broker, each open dir's bytes ``(after the plan, after the
    moves)``."""

    targets: Mapping[tuple[str, int, int], str]
    moves: Mapping[int, tuple[LogDirMove, ...]]
    fill: Mapping[int, Mapping[str, tuple[int, int]]]


def balance_log_dirs(snapshot: ClusterSnapshot, target: Mapping[tuple[str, int], tuple[int, ...]],
                     health: ClusterHealth) -> LogDirPlan:
    """The log-dir targets and moves for a plan whose partitions ``target`` lists (the rest stay).

    Examples
    --------
    >>> from pools.health import cluster_health
    >>> from pools.snapshot import Broker, Capacity, PartitionState
    >>> jbod = Broker(1, None, Capacity(1, 1, 200, 10), log_dirs=("/a", "/b"))
    >>> parts = (PartitionState("t", 0, (1,), 1, (1,), log_dirs=("/a",), sizes=(60,)),
    ...          PartitionState("t", 1, (1,), 1, (1,), log_dirs=("/a",), sizes=(30,)),
    ...          PartitionState("t", 2, (2,), 2, (2,), log_dirs=("/d",), sizes=(20,)))
    >>> snap = ClusterSnapshot("c", (jbod, Broker(2, None, Capacity(1, 1, 200, 10))), (), parts)
    >>> out = balance_log_dirs(snap, {("t", 2): (1,)}, cluster_health(snap))
    >>> dict(out.targets), [(m.partition, m.to_dir) for m in out.moves[1]], dict(out.fill[1])
    ({('t', 2, 1): '/b'}, [(1, '/b')], {'/a': (90, 60), '/b': (20, 50)})
    """
    brokers = {b.id: b for b in snapshot.brokers if b.id not in health.brokers and len(open_log_dirs(b)) > 1}
    if not brokers:
        return LogDirPlan({}, {}, {})
    held: dict[int, dict[str, list[tuple[int, str, int]]]] = {b: {d: [] for d in brokers[b].log_dirs} for b in brokers}
    incoming: dict[int, list[tuple[int, str, int]]] = {b: [] for b in brokers}
    fixed = set(target) | set(health.partitions) | set(health.evacuated)
    for p in snapshot.partitions:
        key = (p.topic, p.partition)
        after = target.get(key, p.replicas)
        for j, b in enumerate(p.replicas):
            if b in brokers and b in after and p.log_dirs and p.log_dirs[j] in held[b]:
                size = (p.sizes[j] if p.sizes and p.sizes[j] is not None else 0)
                held[b][p.log_dirs[j]].append((size, p.topic, p.partition) if key not in fixed else (size, "", -1))
        for b in set(after) - set(p.replicas):
            if b in brokers:
                incoming[b].append((p.size_bytes, p.topic, p.partition))
    targets: dict[tuple[str, int, int], str] = {}
    moves: dict[int, tuple[LogDirMove, ...]] = {}
    fill: dict[int, dict[str, tuple[int, int]]] = {}
    for broker_id in sorted(brokers):
        b = brokers[broker_id]
        open_dirs = list(open_log_dirs(b))
        used = {d: sum(s for s, _, _ in held[broker_id][d]) for d in b.log_dirs}
        cap = {d: max(log_dir_capacity(b, d), 1.0) for d in b.log_dirs}
        for size, topic, partition in sorted(incoming[broker_id], key=lambda r: (-r[0], r[1], r[2])):
            d = min(open_dirs, key=lambda x: (used[x] / cap[x], x))
            targets[topic, partition, broker_id] = d
            used[d] += size
        planned = dict(used)
        movable = {d: sorted(r for r in held[broker_id][d] if r[2] >= 0) for d in open_dirs}
        done = _even_out(broker_id, open_dirs, used, movable, LOG_DIR_BAND, cap)
        if done:
            moves[broker_id] = done
        fill[broker_id] = {d: (planned[d], used[d]) for d in open_dirs}
    return LogDirPlan(targets, moves, fill)


def _even_out(broker: int, dirs: list[str], used: dict[str, int], movable: dict[str, list[tuple[int, str, int]]],
              band: float, cap: Mapping[str, float]) -> tuple[LogDirMove, ...]:
    """Moves from the fullest to the emptiest of ``dirs`` (by fill: bytes over the dir's ``cap``) until their fills
    are within ``band`` (updates ``used``). Each move takes the replica nearest the bytes that would even the two
    dirs, below twice that (so the spread shrinks): half the gap between two dirs of one size."""
    out: list[LogDirMove] = []
    while len(out) < MAX_MOVES_PER_BROKER:
        full = max(dirs, key=lambda d: (used[d] / cap[d], d))
        empty = min(dirs, key=lambda d: (used[d] / cap[d], d))
        if used[full] / cap[full] - used[empty] / cap[empty] <= band:
            break
        even = (used[full] * cap[empty] - used[empty] * cap[full]) / (cap[full] + cap[empty])
        fits = [r for r in movable[full] if 0 < r[0] < 2 * even]
        if not fits:
            break
        pick = min(fits, key=lambda r: (abs(even - r[0]), r[1], r[2]))
        movable[full].remove(pick)
        movable[empty].append(pick)
        used[full] -= pick[0]
        used[empty] += pick[0]
        out.append(LogDirMove(pick[1], pick[2], broker, full, empty, pick[0]))
    return tuple(_undo_chains(out))


def _undo_chains(moves: Iterable[LogDirMove]) -> list[LogDirMove]:
    """One move per replica, from its first dir to its last (a replica moved twice is copied once)."""
    first: dict[tuple[str, int], LogDirMove] = {}
    last: dict[tuple[str, int], LogDirMove] = {}
    for m in moves:
        first.setdefault((m.topic, m.partition), m)
        last[m.topic, m.partition] = m
    out = [LogDirMove(m.topic, m.partition, m.broker, m.from_dir, last[k].to_dir, m.size_bytes)
           for k, m in first.items()]
    return sorted((m for m in out if m.from_dir != m.to_dir), key=lambda m: (m.topic, m.partition))
