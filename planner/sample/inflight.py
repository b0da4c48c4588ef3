"""What an operator captures while a reassignment runs, generated: log-dirs captures and ``--verify`` output.

For the bundle's moves (current replicas → target) on a snapshot, `inflight_captures` writes one
``kafka-log-dirs.sh --describe`` capture per entry of ``fractions``: every current replica at the partition's
size, every new replica at that fraction of it (a partition in ``stalled`` stays at the first fraction), and
`verify_output` the matching ``kafka-reassign-partitions.sh --verify`` text (Kafka's ``ReassignPartitionsCommand``
lines; a finished reassignment clears the throttles unless ``preserve_throttles``). `poolplan progress` reads them
back (`planner.emit.progress`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from planner.sample.cluster import DATA_DIR
from planner.sample.writers import format_log_dirs
from pools.snapshot import ClusterSnapshot

__all__ = ["inflight_captures", "verify_output"]

Moves = Mapping[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]


def inflight_captures(snapshot: ClusterSnapshot, moves: Moves, fractions: Sequence[float],
                      stalled: Collection[tuple[str, int]] = ()) -> list[str]:
    """One log-dirs capture per fraction of the copy done (see the module docstring); ``moves`` maps each moving
    partition to its (current, target) replicas."""
    out = []
    for k, fraction in enumerate(fractions):
        rows: dict[int, list] = {b.id: [] for b in snapshot.brokers}
        for p in snapshot.partitions:
            key = (p.topic, p.partition)
            old, new = moves.get(key, (p.replicas, p.replicas))
            done = fractions[0] if key in stalled else fraction
            for b in sorted(set(old) | set(new)):
                if b not in rows:
                    continue
                size = p.size_bytes if b in old else int(p.size_bytes * done)
                if b in old and b not in new and done >= 1.0 and k == len(fractions) - 1:
                    continue  # a finished move deletes the replicas it leaves
                rows[b].append((f"{p.topic}-{p.partition}", size, 0, False))
        out.append(format_log_dirs([(b, [(DATA_DIR, None, sorted(r))]) for b, r in sorted(rows.items())]))
    return out


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
