"""Kafka's `AdminUtils.assignReplicasToBrokers`, rack-unaware and rack-aware, vectorised with numpy."""

from __future__ import annotations

__all__ = [
    "assign_replicas_to_brokers",
    "assign_replicas_array",
    "rack_alternated_broker_list",
]

import secrets
from collections.abc import Mapping, Sequence

import numpy as np

from pools.java_semantics import INT_MAX, JavaRandom, int32, utf16_key
from planner.placement.errors import (
    AdminOperationError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    PlacementError,
)
from planner.placement.pylists import rows_to_dict

#: Magnitudes above this may overflow a Java ``int`` (2**31).
_INT_LIMIT = INT_MAX + 1


def assign_replicas_to_brokers(
    brokers: Sequence[tuple[int, str | None]],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    seed: int | None = None,
) -> dict[int, list[int]]:
    """Place ``n_partitions`` partitions exactly as `AdminUtils.assignReplicasToBrokers` does.

    Parameters
    ----------
    brokers : sequence of (broker_id, rack or None)
        The brokers in the caller's order (the rack-unaware path walks them in this order).
    n_partitions, replication_factor : int
        Partitions to place and replicas per partition.
    fixed_start_index : int
        Index of the first partition's leader in the (rack-alternated) broker list; Kafka also uses
        it as the initial replica shift. Negative: draw both from ``JavaRandom(seed)``.
    start_partition_id : int
        Id of the first partition placed (added partitions start at the current count);
        values below 0 mean 0.
    seed : int, optional
        Seed of the `java.util.Random` standing in for ``AdminUtils.RAND``; a fresh random seed
        when None. Only read when ``fixed_start_index`` is negative.

    Returns
    -------
    dict[int, list[int]]
        Partition id to replicas; the first replica is the preferred leader.

    Raises
    ------
    InvalidPartitionsError
        ``n_partitions <= 0``.
    InvalidReplicationFactorError
        ``replication_factor <= 0`` or larger than the number of brokers.
    AdminOperationError
        Some but not all brokers have a rack.

    See Also
    --------
    assign_replicas_array : the same placement as numpy arrays.

    Notes
    -----
    Mirrors `org.apache.kafka.admin.AdminUtils`: errors in Kafka's order and words, the start index
    and shift drawn in that order with ``nextInt(numBrokers)``, the shift incremented only when the
    partition id reaches a positive multiple of the broker count, Java ``int`` overflow.
    O(P * RF) vectorised; the rack-aware follower search takes one pass per skipped broker.

    Examples
    --------
    >>> assign_replicas_to_brokers([(0, None), (1, None), (2, None)], 3, 2, fixed_start_index=0)
    {0: [0, 1], 1: [1, 2], 2: [2, 0]}
    """
    ids, table = assign_replicas_array(
        brokers,
        n_partitions,
        replication_factor,
        fixed_start_index=fixed_start_index,
        start_partition_id=start_partition_id,
        seed=seed,
    )
    return rows_to_dict(ids, table)


def assign_replicas_array(
    brokers: Sequence[tuple[int, str | None]],
    n_partitions: int,
    replication_factor: int,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    seed: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """`assign_replicas_to_brokers` as arrays: partition ids (P,) and replicas (P, RF), int64.

    Rows are in placement order; see `assign_replicas_to_brokers` for the parameters and errors.
    """
    if n_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}."
        )
    first_id = max(0, start_partition_id)
    pids = _java_int(first_id + np.arange(n_partitions, dtype=np.int64), first_id + n_partitions)
    if all(rack is None for _, rack in brokers):
        order = np.array([broker_id for broker_id, _ in brokers], dtype=np.int64)
        start, shift = _start_and_shift(len(order), fixed_start_index, seed)
        index = _rack_unaware_indices(pids, replication_factor, len(order), start, shift)
        return pids, order[index]
    if any(rack is None for _, rack in brokers):
        raise AdminOperationError("Not all brokers have rack information for replica rack aware assignment.")
    broker_rack = {broker_id: rack for broker_id, rack in brokers}
    order = np.array(rack_alternated_broker_list(broker_rack), dtype=np.int64)
    rack_names = sorted(set(broker_rack.values()), key=utf16_key)
    rack_code = {rack: code for code, rack in enumerate(rack_names)}
    racks = np.array([rack_code[broker_rack[int(b)]] for b in order], dtype=np.int64)
    start, shift = _start_and_shift(len(order), fixed_start_index, seed)
    index = _rack_aware_indices(pids, replication_factor, racks, len(rack_names), start, shift)
    return pids, order[index]


def rack_alternated_broker_list(broker_rack: Mapping[int, str]) -> list[int]:
    """`AdminUtils.getRackAlternatedBrokerList`: one broker per rack in turn.

    Racks in `String.compareTo` order, brokers ascending by id within a rack.

    Examples
    --------
    >>> rack_alternated_broker_list({0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"})
    [0, 3, 1, 5, 4, 2]
    """
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in broker_rack.items():
        by_rack.setdefault(rack, []).append(broker_id)
    columns = [sorted(by_rack[rack]) for rack in sorted(by_rack, key=utf16_key)]
    depth = max((len(c) for c in columns), default=0)
    return [c[row] for row in range(depth) for c in columns if row < len(c)]


def _start_and_shift(n_brokers: int, fixed_start_index: int, seed: int | None) -> tuple[int, int]:
    """The start index and the initial replica shift: both the fixed index, or two draws in that order."""
    if fixed_start_index >= 0:
        return fixed_start_index, fixed_start_index
    rnd = JavaRandom(secrets.randbits(64) - (1 << 63) if seed is None else seed)
    start = rnd.next_int(n_brokers)
    return start, rnd.next_int(n_brokers)


def _java_int(a: np.ndarray, bound: int) -> np.ndarray:
    """Java ``int`` overflow of int64 values whose magnitude is at most ``bound`` (a no-op below 2**31)."""
    return a if bound < _INT_LIMIT else int32(a)


def _shifts(pids: np.ndarray, n_brokers: int, shift: int) -> np.ndarray:
    """``nextReplicaShift`` per partition: +1 whenever the id is a positive multiple of the broker count."""
    bumps = (pids > 0) & (np.fmod(pids, n_brokers) == 0)
    return _java_int(shift + np.cumsum(bumps), shift + len(pids))


def _leaders(pids: np.ndarray, n_brokers: int, start: int) -> np.ndarray:
    """``firstReplicaIndex``: ``(currentPartitionId + startIndex) % n`` with int overflow and Java's ``%``."""
    return np.fmod(_java_int(pids + start, _pid_bound(pids) + start), n_brokers)


def _pid_bound(pids: np.ndarray) -> int:
    """Largest magnitude of the (consecutive, possibly wrapped) partition ids."""
    return max(abs(int(pids[0])), abs(int(pids[-1])), _INT_LIMIT if int(pids[-1]) < int(pids[0]) else 0)


def _replica_index(
    first: np.ndarray, second_shift: np.ndarray, k: np.ndarray | int, n_brokers: int, bound: int
) -> np.ndarray:
    """`AdminUtils.replicaIndex`: ``(first + 1 + (shift + k) % (n - 1)) % n`` in Java arithmetic.

    ``bound`` is the largest magnitude ``shift + k`` can have.
    """
    if n_brokers == 1:
        raise PlacementError("/ by zero")
    rest = np.fmod(_java_int(second_shift + k, bound), n_brokers - 1)
    return np.fmod(first + 1 + rest, n_brokers)


def _rack_unaware_indices(pids: np.ndarray, rf: int, n_brokers: int, start: int, shift: int) -> np.ndarray:
    """Broker-list indices (P, RF) of `assignReplicasToBrokersRackUnaware`."""
    shifts = _shifts(pids, n_brokers, shift)
    index = np.empty((len(pids), rf), dtype=np.int64)
    index[:, 0] = _leaders(pids, n_brokers, start)
    for j in range(rf - 1):
        index[:, j + 1] = _replica_index(index[:, 0], shifts, j, n_brokers, shift + len(pids) + rf)
    _raise_first_negative(index, n_brokers)
    return index


def _rack_aware_indices(
    pids: np.ndarray, rf: int, racks: np.ndarray, n_racks: int, start: int, shift: int
) -> np.ndarray:
    """Rack-alternated-list indices (P, RF) of `assignReplicasToBrokersRackAware`.

    When no Java ``int`` can overflow (``plain``), a partition's replicas only depend on its leader
    index and on ``shift * racks % (n - 1)``, which is constant over each run of ``n`` partitions:
    if there are fewer such pairs than partitions, each pair is searched once and looked up.
    """
    n_brokers, n_partitions = len(racks), len(pids)
    first = _leaders(pids, n_brokers, start)
    if rf == 1:
        _raise_first_negative(first[:, None], n_brokers)
        return first[:, None]
    if n_brokers == 1:
        raise PlacementError("/ by zero")
    shift_bound = (shift + n_partitions) * n_racks
    plain = _pid_bound(pids) + start < _INT_LIMIT and shift_bound + rf * n_brokers < _INT_LIMIT
    second_shift = _java_int(_shifts(pids, n_brokers, shift) * n_racks, shift_bound)
    if not plain:
        return _search(first, second_shift, rf, racks, n_racks, plain=False)
    base = second_shift % (n_brokers - 1)
    runs = np.concatenate([[0], np.flatnonzero(np.diff(base)) + 1])
    bases, run_key = np.unique(base[runs], return_inverse=True)
    if 2 * len(bases) * n_brokers > n_partitions:
        return _search(first, base, rf, racks, n_racks, plain=True)
    leaders = np.tile(np.arange(n_brokers, dtype=np.int64), len(bases))
    grid = _search(leaders, np.repeat(bases, n_brokers), rf, racks, n_racks, plain=True)
    lengths = np.diff(np.concatenate([runs, [n_partitions]]))
    return grid[np.repeat(run_key * n_brokers, lengths) + first]


def _search(
    first: np.ndarray, shifts: np.ndarray, rf: int, racks: np.ndarray, n_racks: int, *, plain: bool
) -> np.ndarray:
    """Follower search of the rack-aware path for leaders ``first`` (indices into the list).

    Every partition walks its own cursor ``k``; all partitions still searching for replica ``j``
    advance together, one pass per candidate, and drop out once they accept one. ``shifts`` is
    ``shift * racks`` reduced mod ``n - 1`` when ``plain`` (a search ends within ``n - 1`` steps,
    so non-negative arithmetic suffices), else the Java int, with Java's ``%`` and failures.
    """
    n_brokers, n_partitions = len(racks), len(first)
    index = np.empty((n_partitions, rf), dtype=np.int64)
    chosen_racks = np.empty((n_partitions, rf), dtype=np.int64)
    index[:, 0] = first
    chosen_racks[:, 0] = racks[first]
    alive = first >= 0
    failed = dict(zip(np.flatnonzero(~alive).tolist(), first[~alive].tolist()))
    cursor = np.zeros(n_partitions, dtype=np.int64)
    racks_used = np.ones(n_partitions, dtype=np.int64)
    brokers_used = np.ones(n_partitions, dtype=np.int64)
    steps = 0
    for j in range(1, rf):
        active = np.flatnonzero(alive) if failed else np.arange(n_partitions)
        search_start = None if plain else cursor.copy()
        while len(active):
            # While every partition is still searching, slices stand in for the index gathers.
            sel = slice(None) if len(active) == n_partitions else active
            if plain:
                step = shifts[sel] + cursor[sel]
                wrap = n_brokers - 1
                step = step % wrap if steps >= wrap else step - wrap * (step >= wrap)
                candidate = first[sel] + 1 + step
                candidate -= n_brokers * (candidate >= n_brokers)
            else:
                _skip_negative_rounds(cursor, active, shifts, search_start, n_brokers)
                candidate = _replica_index(first[active], shifts[active], cursor[active], n_brokers, 2 * _INT_LIMIT)
                bad = candidate < 0
                if bad.any():
                    failed.update(zip(active[bad].tolist(), candidate[bad].tolist()))
                    alive[active[bad]] = False
                    active, candidate = active[~bad], candidate[~bad]
                sel = active
            cursor[sel] += 1
            steps += 1
            rack = racks[candidate]
            seen_rack = chosen_racks[sel, 0] == rack
            seen_broker = index[sel, 0] == candidate
            for c in range(1, j):
                seen_rack |= chosen_racks[sel, c] == rack
                seen_broker |= index[sel, c] == candidate
            accept = (~seen_rack | (racks_used[sel] == n_racks)) & (~seen_broker | (brokers_used[sel] == n_brokers))
            done = active[accept]
            index[done, j] = candidate[accept]
            chosen_racks[done, j] = rack[accept]
            racks_used[done] += ~seen_rack[accept]
            brokers_used[done] += ~seen_broker[accept]
            active = active[~accept]
    if failed:
        p = min(failed)
        raise PlacementError(f"Index {failed[p]} out of bounds for length {n_brokers}")
    return index


def _skip_negative_rounds(
    cursor: np.ndarray, active: np.ndarray, second_shift: np.ndarray, search_start: np.ndarray, n_brokers: int
) -> None:
    """Jump cursors over fruitless rounds while ``shift + k`` is a negative (overflowed) Java int.

    Java's ``%`` of a negative number only reaches the leader and its neighbours, so a search can
    spin up to 2**31 steps until ``shift + k`` turns non-negative. The candidates repeat every
    ``n - 1`` steps, so after a full round without a match none can match before that point:
    move the cursor there, as Kafka's loop eventually does.
    """
    x = _java_int(second_shift[active] + cursor[active], 2 * _INT_LIMIT)
    stuck = (x < 0) & (cursor[active] - search_start[active] >= n_brokers - 1)
    cursor[active[stuck]] -= x[stuck]


def _raise_first_negative(index: np.ndarray, n_brokers: int) -> None:
    """Kafka indexes its broker list in row-major order; a negative index fails like Java's array access."""
    negative = np.flatnonzero(index < 0)
    if len(negative):
        raise PlacementError(f"Index {index.flat[negative[0]]} out of bounds for length {n_brokers}")
