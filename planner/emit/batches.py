"""Split a plan's partition moves into batches ``kafka-reassign-partitions.sh`` can run one after another.

Each batch respects a per-broker limit on concurrent partition movements (Cruise Control's
``num.concurrent.partition.movements.per.broker``, default 5, counted on every broker of the old and new
replica sets), an optional cap on partitions per batch and an optional byte budget per batch (a move larger
than the budget runs alone). Batches are built greedily, largest moves first; a broker that was *hot*
(at its movement limit) in one batch receives no new replica in the next while other work is available.
With ``leader_preserving`` the moves run in two phases: first the data copies with the current leader kept
first in the replica list, then a reorder-only phase that sets the final preferred leaders.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pools.java_semantics import utf16_key
from pools.progress import ProgressReporter, no_progress

__all__ = ["DEFAULT_MOVES_PER_BROKER", "BatchLimits", "BatchMove", "Batch", "plan_batches", "apply_batches",
           "one_replica_steps"]

#: Cruise Control's default ``num.concurrent.partition.movements.per.broker``.
DEFAULT_MOVES_PER_BROKER = 5
#: How many queued moves of one broker a batch looks at before moving on (keeps batching linear).
_SCAN_PER_BROKER = 64


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """Per-batch limits: movements per broker, partitions per batch (None = any), moved bytes (None = any); with
    ``round_robin`` a batch takes one move per destination broker in turn (spreading the batch's copies over the
    brokers, Cruise Control #2382) instead of filling the busiest destination first."""

    moves_per_broker: int = DEFAULT_MOVES_PER_BROKER
    partitions_per_batch: int | None = None
    bytes_per_batch: int | None = None
    round_robin: bool = False

    def __post_init__(self) -> None:
        if self.moves_per_broker < 1:
            raise ValueError(f"moves_per_broker: expected >= 1, got {self.moves_per_broker}")
        if self.partitions_per_batch is not None and self.partitions_per_batch < 1:
            raise ValueError(f"partitions_per_batch: expected >= 1, got {self.partitions_per_batch}")
        if self.bytes_per_batch is not None and self.bytes_per_batch < 1:
            raise ValueError(f"bytes_per_batch: expected >= 1, got {self.bytes_per_batch}")


@dataclass(frozen=True, slots=True)
class BatchMove:
    """One partition in one batch: its replicas before the batch and the replicas the batch sets."""

    topic: str
    partition: int
    old_replicas: tuple[int, ...]
    replicas: tuple[int, ...]
    size_bytes: int

    @property
    def adding(self) -> tuple[int, ...]:
        """Brokers that copy the partition in this batch."""
        old = set(self.old_replicas)
        return tuple(b for b in self.replicas if b not in old)

    @property
    def moved_bytes(self) -> int:
        """Bytes copied to new replicas in this batch."""
        return self.size_bytes * len(self.adding)

    @property
    def brokers(self) -> frozenset[int]:
        """Every broker the movement involves (old and new replicas), as Cruise Control counts them."""
        return frozenset(self.old_replicas) | frozenset(self.replicas)


@dataclass(frozen=True, slots=True)
class Batch:
    """A batch: its phase (1 = data copy, 2 = final leader order), moves sorted by topic and partition."""

    index: int
    phase: int
    moves: tuple[BatchMove, ...]
    hot_brokers: tuple[int, ...]

    @property
    def moved_bytes(self) -> int:
        return sum(m.moved_bytes for m in self.moves)


def plan_batches(
    moves: Iterable[object],
    *,
    limits: BatchLimits = BatchLimits(),
    leader_preserving: bool = False,
    leaders: Mapping[tuple[str, int], int | None] | None = None,
    one_replica_at_a_time: bool = False,
    relieve_first: frozenset[int] = frozenset(),
    progress: ProgressReporter = no_progress,
) -> tuple[Batch, ...]:
    """Batch the changed partitions of a plan.

    Parameters
    ----------
    moves : iterable
        Objects with ``topic``, ``partition``, ``old_replicas``, ``replicas`` and ``size_bytes`` (e.g.
        `pools.plan_file.PartitionMove`); unchanged partitions are skipped.
    limits : BatchLimits
        Per-broker, per-batch and byte limits.
    leader_preserving : bool
        Run data copies with the current leader kept first, then a second phase with the final order.
    leaders : mapping, optional
        Current leader per partition (default: the first old replica).
    one_replica_at_a_time : bool
        At most one new replica per partition at a time: a move adding k replicas becomes k steps
        (`one_replica_steps`), step j of every partition in the batches after those of step j - 1.
    relieve_first : frozenset of int
        Brokers over their limit before the plan: moves that take a replica off one of them are batched first.
    progress : ProgressReporter
        Told the moves batched so far.

    Returns
    -------
    tuple of Batch
        Numbered from 1. Applying them in order (`apply_batches`) yields every move's target.

    Notes
    -----
    Greedy first-fit in decreasing moved bytes over per-destination queues (largest queue head first);
    O(B * N * k) for B batches, N brokers and a constant scan depth k.
    """
    changed = [
        BatchMove(m.topic, m.partition, tuple(m.old_replicas), tuple(m.replicas), int(m.size_bytes))
        for m in moves
        if tuple(m.old_replicas) != tuple(m.replicas)
    ]
    if not leader_preserving:
        return _stepped(changed, limits, one_replica_at_a_time, relieve_first, progress)
    first, second = [], []
    for m in changed:
        leader = (leaders or {}).get((m.topic, m.partition), m.old_replicas[0] if m.old_replicas else None)
        if leader is not None and leader in m.replicas and m.replicas[0] != leader:
            interim = (leader, *(b for b in m.replicas if b != leader))
            if interim != m.old_replicas:
                first.append(BatchMove(m.topic, m.partition, m.old_replicas, interim, m.size_bytes))
            second.append(BatchMove(m.topic, m.partition, interim, m.replicas, m.size_bytes))
        else:
            first.append(m)
    batches = _stepped(first, limits, one_replica_at_a_time, relieve_first, progress)
    return batches + _batch_phase(second, limits, phase=2, start=len(batches) + 1, progress=progress)


def one_replica_steps(move: BatchMove) -> tuple[BatchMove, ...]:
    """``move`` as steps that each copy at most one new replica: each new broker takes the place of a broker the
    move removes (in order), or joins when none is left; the last step sets the final list (its order and any
    further removals).

    >>> [s.replicas for s in one_replica_steps(BatchMove("t", 0, (1, 2, 3), (4, 5, 6), 10))]
    [(4, 2, 3), (4, 5, 3), (4, 5, 6)]
    >>> [s.replicas for s in one_replica_steps(BatchMove("t", 0, (1, 2), (3, 1, 4), 10))]
    [(1, 3), (3, 1, 4)]
    """
    adding = move.adding
    if len(adding) <= 1:
        return (move,)
    removing = [b for b in move.old_replicas if b not in move.replicas]
    steps, current = [], move.old_replicas
    for k, b in enumerate(adding[:-1]):
        nxt = tuple(b if x == removing[k] else x for x in current) if k < len(removing) else (*current, b)
        steps.append(BatchMove(move.topic, move.partition, current, nxt, move.size_bytes))
        current = nxt
    steps.append(BatchMove(move.topic, move.partition, current, move.replicas, move.size_bytes))
    return tuple(steps)


def _stepped(moves: list[BatchMove], limits: BatchLimits, one_at_a_time: bool, relieve: frozenset[int],
             progress: ProgressReporter) -> tuple[Batch, ...]:
    """Phase-1 batches of ``moves``; one new replica per partition at a time when asked (see `plan_batches`)."""
    if not one_at_a_time:
        return _batch_phase(moves, limits, phase=1, start=1, relieve=relieve, progress=progress)
    steps = [one_replica_steps(m) for m in moves]
    batches: tuple[Batch, ...] = ()
    for j in range(max((len(s) for s in steps), default=0)):
        batches += _batch_phase([s[j] for s in steps if j < len(s)], limits, phase=1, start=len(batches) + 1,
                                relieve=relieve, progress=progress)
    return batches


def apply_batches(
    current: Mapping[tuple[str, int], Sequence[int]], batches: Iterable[Batch]
) -> dict[tuple[str, int], tuple[int, ...]]:
    """Replica lists after running ``batches`` in order from ``current``.

    Raises
    ------
    ValueError
        When a batch's ``old_replicas`` does not match the state it is applied to.
    """
    state = {tp: tuple(r) for tp, r in current.items()}
    for batch in batches:
        for m in batch.moves:
            tp = (m.topic, m.partition)
            if state.get(tp) != m.old_replicas:
                found = state.get(tp)
                raise ValueError(f"batch {batch.index}: {m.topic}-{m.partition} is {found}, expected {m.old_replicas}")
            state[tp] = m.replicas
    return state


def _batch_phase(moves: list[BatchMove], limits: BatchLimits, *, phase: int, start: int,
                 relieve: frozenset[int] = frozenset(), progress: ProgressReporter = no_progress) -> tuple[Batch, ...]:
    items = [_Item(m, relieve) for m in moves]
    items.sort(key=lambda i: (not i.relieves, -i.moved, utf16_key(i.move.topic), i.move.partition))
    queues: dict[int, deque[_Item]] = {}
    for item in items:
        key = item.adding[0] if item.adding else item.move.replicas[0]
        queues.setdefault(key, deque()).append(item)
    batches: list[Batch] = []
    remaining = len(items)
    hot_before: frozenset[int] = frozenset()
    step = f"batching the moves (phase {phase})"
    while remaining:
        progress(step, done=len(items) - remaining, total=len(items), unit="moves")
        chosen = _fill(queues, limits, avoid=hot_before)
        if not chosen:
            chosen = _fill(queues, limits, avoid=frozenset())
        remaining -= len(chosen)
        counts: dict[int, int] = {}
        for item in chosen:
            for b in item.brokers:
                counts[b] = counts.get(b, 0) + 1
        hot = tuple(sorted(b for b, c in counts.items() if c >= limits.moves_per_broker))
        ordered = sorted((i.move for i in chosen), key=lambda m: (utf16_key(m.topic), m.partition))
        batches.append(Batch(start + len(batches), phase, tuple(ordered), hot))
        hot_before = frozenset(hot)
    return tuple(batches)


class _Item:
    """A move with the figures batching looks at, computed once."""

    __slots__ = ("move", "brokers", "adding", "adding_set", "moved", "relieves")

    def __init__(self, move: BatchMove, relieve: frozenset[int] = frozenset()) -> None:
        self.move = move
        self.relieves = not relieve.isdisjoint(set(move.old_replicas) - set(move.replicas))
        self.brokers = move.brokers
        self.adding = move.adding
        self.adding_set = frozenset(self.adding)
        self.moved = move.size_bytes * len(self.adding)


def _fill(queues: dict[int, deque[_Item]], limits: BatchLimits, *, avoid: frozenset[int]) -> list[_Item]:
    """One batch: take fitting moves from each broker's queue, skipping destinations in ``avoid``; with
    ``limits.round_robin`` one move per destination in turn, round after round, instead of a queue at a time."""
    chosen: list[_Item] = []
    counts: dict[int, int] = {}
    saturated: set[int] = set()
    limit = limits.moves_per_broker
    cap = limits.partitions_per_batch
    budget = limits.bytes_per_batch
    per_turn = 1 if limits.round_robin else None
    order = sorted(queues, key=lambda k: (not queues[k][0].relieves, -queues[k][0].moved, k))
    total_bytes, taken = 0, True
    while taken and not (cap is not None and len(chosen) >= cap):
        taken = False
        for key in order:
            queue = queues[key]
            skipped: list[_Item] = []
            scanned = turn = 0
            while queue and scanned < _SCAN_PER_BROKER and key not in saturated and turn != per_turn:
                item = queue.popleft()
                scanned += 1
                if (
                    saturated.isdisjoint(item.brokers)
                    and avoid.isdisjoint(item.adding_set)
                    and (budget is None or not chosen or total_bytes + item.moved <= budget)
                ):
                    chosen.append(item)
                    total_bytes += item.moved
                    turn += 1
                    taken = True
                    for b in item.brokers:
                        counts[b] = counts.get(b, 0) + 1
                        if counts[b] >= limit:
                            saturated.add(b)
                    if cap is not None and len(chosen) >= cap:
                        break
                else:
                    skipped.append(item)
            queue.extendleft(reversed(skipped))
            if cap is not None and len(chosen) >= cap:
                break
        if per_turn is None:
            break
    for key in [k for k, q in queues.items() if not q]:
        del queues[key]
    return chosen
