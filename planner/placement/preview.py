"""Preview where Kafka would place a new topic or added partitions, with either placement algorithm."""

from __future__ import annotations

__all__ = ["Algorithm", "PlacementPreview", "preview_new_topic", "preview_added_partitions"]

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pools.java_semantics import hash_order, int32
from planner.placement.adminutils import assign_replicas_to_brokers
from planner.placement.errors import InvalidPartitionsError
from planner.placement.striped import striped_place
from pools.errors import InputError


class Algorithm(StrEnum):
    """Which of Kafka's placers to mirror."""

    ADMIN_UTILS = "admin-utils"
    """`AdminUtils.assignReplicasToBrokers`: ZooKeeper-era CreateTopics/CreatePartitions, older ``--generate``."""
    STRIPED = "striped"
    """`StripedReplicaPlacer`: a KRaft controller's CreateTopics/CreatePartitions, recent ``--generate``."""


@dataclass(frozen=True, slots=True)
class PlacementPreview:
    """Replicas for partitions ``first_partition, first_partition + 1, ...`` of ``topic``."""

    topic: str
    algorithm: Algorithm
    first_partition: int
    assignments: tuple[tuple[int, ...], ...]
    brokers: tuple[tuple[int, str | None], ...]

    def entries(self) -> list[dict[str, object]]:
        """Reassignment entries (``topic``, ``partition``, ``replicas``) in partition order."""
        return [
            {"topic": self.topic, "partition": self.first_partition + i, "replicas": list(replicas)}
            for i, replicas in enumerate(self.assignments)
        ]

    def broker_counts(self) -> list[tuple[int, str | None, int, int]]:
        """``(broker_id, rack, replicas, leaders)`` for every candidate broker, by id."""
        replicas = Counter(b for r in self.assignments for b in r)
        leaders = Counter(r[0] for r in self.assignments)
        return [(b, rack, replicas[b], leaders[b]) for b, rack in sorted(self.brokers)]


def preview_new_topic(
    brokers: Sequence[tuple[int, str | None]],
    topic: str,
    partitions: int,
    replication_factor: int,
    *,
    algorithm: Algorithm,
    seed: int = 0,
    start_index: int | None = None,
    fenced: Collection[int] = frozenset(),
) -> PlacementPreview:
    """Place a new topic as Kafka would on ``brokers``.

    AdminUtils gets the brokers sorted by id (as ``AdminZkClient`` passed them) and draws its start
    index from ``seed`` unless ``start_index`` is given. The striped placer gets them in the
    iteration order of the controller's ``HashMap<Integer, ...>`` of registered brokers, with
    ``fenced`` brokers marked, and a ``new Random(seed)``.

    Raises
    ------
    PlacementError
        Whatever Kafka would reject (see `assign_replicas_to_brokers` and `striped_place`).
    InputError
        Options that do not apply to ``algorithm``, or fenced ids that are not candidates.
    """
    _check_options(brokers, algorithm, start_index, fenced)
    if algorithm is Algorithm.ADMIN_UTILS:
        placed = assign_replicas_to_brokers(
            sorted(brokers), partitions, replication_factor,
            -1 if start_index is None else start_index, 0, seed=seed,
        )
        assignments = [placed[p] for p in sorted(placed)]
    else:
        if partitions <= 0:
            raise InvalidPartitionsError("Number of partitions was set to an invalid non-positive value.")
        assignments = striped_place(_heartbeat_order(brokers, fenced), partitions, replication_factor, seed)
    return PlacementPreview(topic, algorithm, 0, tuple(map(tuple, assignments)), tuple(sorted(brokers)))


def preview_added_partitions(
    brokers: Sequence[tuple[int, str | None]],
    topic: str,
    existing: Sequence[Sequence[int]],
    total_partitions: int,
    *,
    algorithm: Algorithm,
    seed: int = 0,
    start_index: int | None = None,
    fenced: Collection[int] = frozenset(),
) -> PlacementPreview:
    """Place the partitions that grow ``topic`` from ``len(existing)`` to ``total_partitions``.

    ``existing`` holds the current replicas by partition id. The replication factor is partition 0's.
    AdminUtils, as ``AdminZkClient.addPartitions``: start partition id = current count and, unless
    given, start index = index of the first broker (sorted by id) whose id is >= partition 0's
    first replica (0 if none). Striped: the i-th placed list is partition ``len(existing) + i``.
    """
    _check_options(brokers, algorithm, start_index, fenced)
    current = len(existing)
    if not current:
        raise InputError(f"topic {topic!r} has no partitions to add to")
    if total_partitions <= current:
        raise InvalidPartitionsError(
            f"The number of partitions for a topic can only be increased. Topic {topic} currently has "
            f"{current} partitions, {total_partitions} would not be an increase."
        )
    rf, head = len(existing[0]), existing[0][0]
    if algorithm is Algorithm.ADMIN_UTILS:
        ordered = sorted(brokers)
        if start_index is None:
            start_index = next((i for i, (b, _) in enumerate(ordered) if b >= head), 0)
        placed = assign_replicas_to_brokers(ordered, total_partitions - current, rf, start_index, current, seed=seed)
        assignments = [placed[p] for p in sorted(placed)]
    else:
        assignments = striped_place(_heartbeat_order(brokers, fenced), total_partitions - current, rf, seed, current)
    return PlacementPreview(topic, algorithm, current, tuple(map(tuple, assignments)), tuple(sorted(brokers)))


def _check_options(
    brokers: Sequence[tuple[int, str | None]], algorithm: Algorithm, start_index: int | None, fenced: Collection[int]
) -> None:
    """Reject options the chosen algorithm has no use for, and fenced ids that are not brokers."""
    if algorithm is Algorithm.ADMIN_UTILS and fenced:
        raise InputError("fenced brokers only matter to the striped placer (--algorithm striped)")
    if algorithm is Algorithm.STRIPED and start_index is not None:
        raise InputError("a start index only applies to AdminUtils (--algorithm admin-utils)")
    if start_index is not None and start_index < 0:
        raise InputError(f"start index: expected a non-negative integer, got {start_index}")
    unknown = sorted(set(fenced) - {b for b, _ in brokers})
    if unknown:
        raise InputError(f"fenced broker {unknown[0]} is not among the candidate brokers")


def _heartbeat_order(brokers: Sequence[tuple[int, str | None]],
                     fenced: Collection[int]) -> list[tuple[int, str | None, bool]]:
    """The brokers as a KRaft controller lists them: its ``HashMap<Integer, ...>`` iteration order."""
    rack = dict(brokers)
    return [(b, rack[b], b in fenced) for b in hash_order(sorted(rack), int32)]
