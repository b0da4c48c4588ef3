"""Kafka's KRaft `StripedReplicaPlacer`: racks striped round-robin, per-rack fenced/unfenced broker lists."""

from __future__ import annotations

__all__ = ["striped_place", "striped_place_array"]

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from pools.java_semantics import JavaRandom, hash_order, int32, string_hash, utf16_key
from planner.placement.errors import IllegalArgumentError, InvalidReplicationFactorError
from planner.placement.pylists import rows_to_lists
from planner.placement.striped_cycles import place_cycles, stripes_simply

_DRAWS_PER_CHUNK = 1 << 20


def striped_place(
    brokers: Sequence[tuple[int, str | None, bool]],
    num_partitions: int,
    replication_factor: int,
    seed: int,
    start_partition: int = 0,
) -> list[list[int]]:
    """Place partitions exactly as ``new StripedReplicaPlacer(new Random(seed)).place(...)`` does.

    Parameters
    ----------
    brokers : sequence of (broker_id, rack or None, fenced)
        The usable brokers in the controller's listing order (it decides HashMap ties of racks).
    num_partitions : int
        Partitions to place.
    replication_factor : int
        Replicas per partition, passed to Kafka as a Java ``short``.
    seed : int
        Seed of the `java.util.Random` (signed 64-bit; only the low 48 bits matter).
    start_partition : int
        ``PlacementSpec.startPartition``; the placer ignores it, the i-th list is partition
        ``start_partition + i``.

    Returns
    -------
    list[list[int]]
        Replicas per partition in placement order; the first replica is the preferred leader.

    Raises
    ------
    InvalidReplicationFactorError
        Replication factor not positive, every broker fenced (or none), or more replicas than brokers.
    IllegalArgumentError
        ``num_partitions < 0`` (Kafka's callers reject it earlier).

    See Also
    --------
    planner.placement.adminutils.assign_replicas_to_brokers : the ZooKeeper-era placement.

    Notes
    -----
    Mirrors `org.apache.kafka.metadata.placement.StripedReplicaPlacer` of Kafka 3.0-4.0
    (without the later ``existingPartitionAssignments`` continuation): racks visited in Java
    `HashMap` order for the random draws and sorted (null first, `String.compareTo`) for striping,
    per-list epochs, a reshuffle of racks and lists after every U (unfenced brokers) partitions.
    Draws and shuffles are vectorised; runs of reshuffle cycles in which every rack supplies each
    replica from a fresh list are placed by arithmetic, the rest partition by partition.

    Examples
    --------
    >>> nine = [(10 * r + i, "ABC"[r - 1], False) for r in (1, 2, 3) for i in range(3)]
    >>> striped_place(nine, 3, 3, seed=10)
    [[10, 20, 30], [21, 31, 11], [32, 12, 22]]
    """
    return rows_to_lists(striped_place_array(brokers, num_partitions, replication_factor, seed))


def striped_place_array(
    brokers: Sequence[tuple[int, str | None, bool]],
    num_partitions: int,
    replication_factor: int,
    seed: int,
) -> np.ndarray:
    """`striped_place` as an int64 array (P, RF) in placement order."""
    rf = _java_short(replication_factor)
    cluster = _Cluster.build(brokers)
    if rf <= 0:
        raise InvalidReplicationFactorError(
            f"Invalid replication factor {rf}: the replication factor must be positive."
        )
    if cluster.unfenced == 0:
        raise InvalidReplicationFactorError("All brokers are currently fenced.")
    if rf > cluster.total:
        raise InvalidReplicationFactorError(
            f"The target replication factor of {rf} cannot be reached because only "
            f"{cluster.total} broker(s) are registered."
        )
    if num_partitions < 0:
        raise IllegalArgumentError(f"Illegal Capacity: {num_partitions}")
    return _Placer(cluster, seed).place(num_partitions, rf)


@dataclass(frozen=True, slots=True)
class _Cluster:
    """The placer's view of the brokers.

    Lists are numbered ``2h`` (fenced) and ``2h + 1`` (unfenced) for the rack at position ``h`` of
    the rack HashMap's iteration order; ``sorted_racks`` gives those positions in rack-name order.
    """

    lists: tuple[tuple[int, ...], ...]
    sorted_racks: tuple[int, ...]
    unfenced: int
    total: int

    @classmethod
    def build(cls, brokers: Sequence[tuple[int, str | None, bool]]) -> _Cluster:
        seen = list(dict.fromkeys(rack for _, rack, _ in brokers))
        hashed = hash_order(seen, lambda rack: 0 if rack is None else string_hash(rack))
        position = {rack: h for h, rack in enumerate(hashed)}
        members: list[list[int]] = [[] for _ in range(2 * len(hashed))]
        for broker_id, rack, fenced in brokers:
            members[2 * position[rack] + (0 if fenced else 1)].append(broker_id)
        names = sorted(hashed, key=lambda rack: (rack is not None, utf16_key(rack or "")))
        return cls(
            lists=tuple(tuple(sorted(m)) for m in members),
            sorted_racks=tuple(position[rack] for rack in names),
            unfenced=sum(not fenced for _, _, fenced in brokers),
            total=len(brokers),
        )

    def construction_bounds(self) -> list[int]:
        """`nextInt` bounds drawn when the placer is built: each non-empty list, then the rack offset."""
        return [len(m) for m in self.lists if m] + ([len(self.sorted_racks)] if self.sorted_racks else [])

    def reshuffle_bounds(self) -> list[int]:
        """`nextInt` bounds of one reshuffle: rack names, then every list in HashMap order."""
        return [b for size in [len(self.sorted_racks), *map(len, self.lists)] for b in range(size, 1, -1)]


class _Placer:
    """The mutable state of one `place()` call: per-list offset/index/epoch, rack order and offset."""

    def __init__(self, cluster: _Cluster, seed: int) -> None:
        self.cluster = cluster
        bounds = cluster.construction_bounds()
        self.random = JavaRandom(seed)
        draws = self.random.next_ints(bounds)
        drawn = iter(draws.tolist())
        self.sizes = [len(m) for m in cluster.lists]
        self.offset = [next(drawn) if size else 0 for size in self.sizes]
        self.rack_offset = next(drawn) if cluster.sorted_racks else 0
        self.index = [0] * len(self.sizes)
        self.epoch = [0] * len(self.sizes)
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self.contents = np.array([b for m in cluster.lists for b in m], dtype=np.int64)
        self.racks = list(cluster.sorted_racks)

    def place(self, num_partitions: int, rf: int) -> np.ndarray:
        """Place ``num_partitions`` partitions: cycles of U partitions separated by reshuffles."""
        out = np.empty((num_partitions, rf), dtype=np.int64)
        u = self.cluster.unfenced
        cycle = u if u > 1 else max(num_partitions, 1)
        n_cycles = -(-num_partitions // cycle)
        striped = stripes_simply(self.sizes[1::2], rf)
        row = 0
        for orders, contents in self._cycles(n_cycles):
            if striped:
                row = place_cycles(self, out, row, orders, contents, cycle)
                continue
            for order, cycle_contents in zip(orders, contents):
                self.racks, self.contents = order.tolist(), cycle_contents
                n = min(cycle, num_partitions - row)
                self.place_cycle(out, row, n)
                row += n
        return out

    def _cycles(self, count: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield the rack order (K, R) and list contents (K, T) of the next ``count`` cycles, in chunks.

        The first cycle keeps the construction order; each later one follows a reshuffle, whose
        permutations are drawn for a whole chunk at once.
        """
        bounds = np.array(self.cluster.reshuffle_bounds(), dtype=np.int64)
        per_chunk = max(1, _DRAWS_PER_CHUNK // max(len(bounds), 1))
        sizes = [len(self.racks), *self.sizes]
        starts = [0, *(len(self.racks) + self.starts[:-1]).tolist()]
        n_racks = len(self.racks)
        state = np.concatenate([np.array(self.racks, dtype=np.int64), self.contents])
        done = 0
        while done < count:
            k = min(per_chunk, count - done)
            reshuffles = k - 1 if done == 0 else k
            draws = self.random.next_ints(np.tile(bounds, reshuffles))
            perms = _fisher_yates(draws.reshape(reshuffles, len(bounds)), sizes, starts)
            states = np.empty((k, len(state)), dtype=np.int64)
            first = k - reshuffles
            states[0] = state if first else state[perms[0]]
            for i in range(1, k):
                states[i] = states[i - 1][perms[i - first]]
            state = states[-1]
            done += k
            yield states[:, :n_racks], np.ascontiguousarray(states[:, n_racks:])

    def place_cycle(self, out: np.ndarray, row: int, n: int) -> None:
        """Place ``n`` partitions with epochs ``0..n-1``, one at a time (`RackList.place`)."""
        racks, sizes, offset, index, epoch = self.racks, self.sizes, self.offset, self.index, self.epoch
        contents, starts = self.contents.tolist(), self.starts.tolist()
        n_racks, rf = len(racks), out.shape[1]

        def take(lst: int, e: int) -> int:
            size = sizes[lst]
            if size == 0:
                return -1
            if epoch[lst] != e:
                epoch[lst], index[lst], offset[lst] = e, 0, (offset[lst] + 1) % size
            if index[lst] >= size:
                return -1
            broker = contents[starts[lst] + (index[lst] + offset[lst]) % size]
            index[lst] += 1
            return broker

        rack_offset = self.rack_offset
        placed = []
        for e in range(n):
            if rack_offset == n_racks:
                rack_offset = 0
            leader_rack = rack_offset
            while (broker := take(2 * racks[leader_rack] + 1, e)) < 0:
                leader_rack = (leader_rack + 1) % n_racks
            replicas = [broker]
            cursor = rack_offset
            for _ in range(1, rf):
                broker = -1
                while broker < 0:
                    if cursor == leader_rack:
                        leader_rack = -1
                    else:
                        h = racks[cursor]
                        broker = take(2 * h + 1, e)
                        if broker < 0:
                            broker = take(2 * h, e)
                    cursor = (cursor + 1) % n_racks
                replicas.append(broker)
            placed.append(replicas)
            rack_offset += 1
        self.rack_offset = rack_offset
        if n:
            out[row : row + n] = placed


def _fisher_yates(draws: np.ndarray, sizes: Sequence[int], starts: Sequence[int]) -> np.ndarray:
    """Permutations of `Collections.shuffle` for many reshuffles at once.

    ``draws`` (K, D) holds each reshuffle's draws, list after list (``size - 1`` each, bounds
    ``size..2``); the result (K, sum(sizes)) permutes each list within its slice. Lists of equal
    size swap in step, all reshuffles at once.
    """
    k = draws.shape[0]
    perm = np.tile(np.arange(sum(sizes), dtype=np.int64), (k, 1))
    columns = np.cumsum([0, *(max(size - 1, 0) for size in sizes)])[:-1]
    groups: dict[int, list[int]] = {}
    for n, size in enumerate(sizes):
        if size > 1:
            groups.setdefault(size, []).append(n)
    flat = perm.ravel()
    row_base = (np.arange(k, dtype=np.int64) * perm.shape[1])[:, None]
    for size, members in groups.items():
        first = row_base + np.asarray(starts, dtype=np.int64)[members]
        column = columns[members]
        for step, i in enumerate(range(size, 1, -1)):
            j = (first + draws[:, column + step]).ravel()
            last = (first + (i - 1)).ravel()
            a = flat[last]
            flat[last] = flat[j]
            flat[j] = a
    return perm


def _java_short(value: int) -> int:
    """The value cast to a Java ``short``, as ``PlacementSpec`` stores the replication factor."""
    return int32(value << 16) >> 16
