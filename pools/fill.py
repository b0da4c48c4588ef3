"""The seed placement inside a pool: keep what is already in place, put each missing replica on the least-loaded broker.

Every placement starts here: the planner's engine (`planner.placement.engine`) optimises from this seed, and the
audit's reassignment fixes are this seed, so both send a partition to the same brokers. The rules:

- Held partitions (`pools.health`) are not placed: they keep their replicas and their load stays where it is
  (the caller passes it as ``base`` load). Evacuated ones are placed like the others: their replicas on
  drained brokers (no longer in the pool) are the missing ones.
- A replica already on a broker of the pool stays, unless it shares a rack with one kept before it (preferred
  leader first) and keeping it would leave too few replicas to span min(RF, racks of the pool) racks.
- Missing replicas, largest partition first (then topic and partition order), go to the broker with the lowest
  utilisation (its busiest dimension: load over headroom × capacity), on a rack the partition does not use yet
  when one has a broker, else on a broker without a rack, else anywhere; never to an excluded (unhealthy)
  broker. A new replica takes the slot of the one it replaces (the rest keep theirs). A pool with fewer brokers
  than the replication factor keeps replicas from outside the pool, in their slots, to fill up.
- A partition with a replica on a broker the snapshot lacks (gone from the inventory: a lost rack, a removed
  broker) gets a new replica in its place when the pool has an open broker for it. When its existing brokers
  (its own replicas on known brokers and the pool's open brokers) are fewer than its replication factor, it is
  **stranded**: it keeps its replicas as they are, held like `pools.health`'s, since the replication factor
  never shrinks and Kafka refuses a reassignment that names an unregistered broker.
- **The leader rule** (one for the plan and the audit): the preferred leader (first replica) stays first when
  it stays, since a non-preferred leader is the transient state an election or ``auto.leader.rebalance.enable``
  undoes; else the current leader when it stays; else the replica on the broker with the lowest network-out
  utilisation. The leader swaps slots with the replica in the first one.

A replica's load follows `pools.demand.replica_load`: every replica carries the partition's bytes-in, storage
and one replica; the leader also carries consumer bytes-out, replication to the followers and a tiered topic's
remote fetch (network in) and copy (network out).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from operator import truediv

import numpy as np

from collections.abc import Collection, Sequence

from pools.cluster_arrays import ClusterArrays, cluster_arrays
from pools.demand import PartitionLoads
from pools.health import ClusterHealth
from pools.pool_rules import headroom_limit
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = ["Seed", "seed_pools", "PoolFill", "fill_pool", "replica_loads", "current_targets", "load_on", "add_loads"]


@dataclass(frozen=True, eq=False)
class PoolFill:
    """The seed of one pool: ``target[i]`` holds the broker positions of partition ``parts[i]``, leader first,
    padded with -1; ``short`` counts partitions that kept replicas outside the pool for lack of brokers;
    ``stranded`` lists the positions (in the snapshot) of partitions that keep their replicas, one on a broker the
    snapshot lacks, for lack of brokers (see the module docstring)."""

    parts: np.ndarray
    target: np.ndarray
    short: int
    stranded: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass(frozen=True, eq=False)
class Seed:
    """Every partition's seed replicas as broker positions, leader first (-1 padding), aligned with the
    snapshot's partitions; ``held`` partitions (the stranded ones included) and those of topics in no pool keep
    their current replicas. ``short`` counts, per pool, partitions that kept replicas outside it for lack of
    brokers; ``stranded`` lists, per pool, the partitions that keep a replica on a broker the snapshot lacks."""

    target: np.ndarray
    held: np.ndarray
    short: dict[int, int]
    stranded: dict[int, np.ndarray] = field(default_factory=dict)


def seed_pools(
    snapshot: ClusterSnapshot,
    loads: PartitionLoads,
    part_pool: np.ndarray,
    pool_brokers: Sequence[np.ndarray],
    headroom: Sequence[np.ndarray],
    health: ClusterHealth,
) -> Seed:
    """The seed placement of every pool (see the module docstring): what the plan starts from and the audit fixes.

    Parameters
    ----------
    snapshot : ClusterSnapshot
    loads : PartitionLoads
        Per-partition demand (`pools.demand.partition_loads`; at the forecast when there is a profile).
    part_pool : ndarray of int
        Pool index of every partition's topic (-1 = in no pool: left where it is).
    pool_brokers : sequence of ndarray
        Per pool index, the positions (in the snapshot's sorted broker ids) of its brokers.
    headroom : sequence of ndarray
        Per pool index, the usable fraction of capacity per `DIMENSIONS`.
    health : ClusterHealth
        `pools.health.cluster_health` of the snapshot.

    Returns
    -------
    Seed
    """
    a = cluster_arrays(snapshot)
    capacity = np.array([[b.capacity.get(d) for d in DIMENSIONS] for b in snapshot.brokers],
                        dtype=float).reshape(len(snapshot.brokers), len(DIMENSIONS))
    held = held_mask(snapshot, health.partitions)
    closed = health.closed_mask(a.broker_ids)
    target = current_targets(a)
    fixed = np.flatnonzero(held | (part_pool < 0))
    follower, extra = replica_loads(loads, fixed, a.part_rf[fixed])
    short: dict[int, int] = {}
    stranded: dict[int, np.ndarray] = {}
    for j, (brokers, room) in enumerate(zip(pool_brokers, headroom, strict=True)):
        parts = np.flatnonzero((part_pool == j) & ~held)
        if not len(parts):
            continue
        base = load_on(a, brokers, target[fixed], follower, extra)
        limit = headroom_limit(capacity[brokers], np.asarray(room, dtype=float))
        fill = fill_pool(a, parts, brokers, loads, limit=limit, base=base, excluded=closed[brokers])
        target[parts, : fill.target.shape[1]] = fill.target
        if fill.short:
            short[j] = fill.short
        if len(fill.stranded):
            stranded[j] = fill.stranded
            held[fill.stranded] = True
    return Seed(target, held, short, stranded)


def current_targets(a: ClusterArrays) -> np.ndarray:
    """Every partition's current replicas as broker positions, shape (P, max RF), -1 padding (and for a broker
    the snapshot does not list)."""
    width = int(a.part_rf.max()) if len(a.part_rf) else 0
    out = np.full((len(a.part_rf), width), -1, dtype=np.int64)
    out[a.rep_part, a.rep_pos] = np.where(a.rep_broker < a.n_brokers, a.rep_broker, -1)
    return out


def held_mask(snapshot: ClusterSnapshot, keys: Collection[tuple[str, int]]) -> np.ndarray:
    """Per partition of the snapshot: whether it is one of ``keys`` (e.g. those `pools.health` holds)."""
    if not keys:
        return np.zeros(len(snapshot.partitions), dtype=bool)
    a = cluster_arrays(snapshot)  # one pass over the keys, none per partition
    topic_pos = {t: i for i, t in enumerate(a.topics)}
    stride = int(a.part_id.max(initial=0)) + 1
    wanted = [topic_pos[t] * stride + p for t, p in keys if t in topic_pos and 0 <= p < stride]
    return np.isin(a.part_topic * stride + a.part_id, np.array(wanted, dtype=np.int64))


def load_on(a: ClusterArrays, brokers: np.ndarray, rows: np.ndarray, follower: np.ndarray,
            extra: np.ndarray) -> np.ndarray:
    """Load that replica lists ``rows`` (broker positions, leader first) put on ``brokers``, shape (len(brokers), K)."""
    local = np.full(a.n_brokers + 1, -1, dtype=np.int64)
    local[brokers] = np.arange(len(brokers))
    here = np.where(rows >= 0, local[np.maximum(rows, 0)], -1)
    return add_loads(np.zeros((len(brokers), follower.shape[1])), here, follower, extra)


def add_loads(load: np.ndarray, rows: np.ndarray, follower: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """``load`` (B, K) plus what replica lists ``rows`` (broker indices into ``load``, leader first, -1 = none)
    put there: each replica its row of ``follower``, each leader also its row of ``extra``.

    The floats are added in the order ``np.add.at`` would add them (every replica row by row, then the leaders),
    with one `np.bincount` per column (``np.add.at`` is slow on large arrays).

    Examples
    --------
    >>> add_loads(np.ones((2, 1)), np.array([[1, 0], [1, -1]]), np.array([[2.0], [3.0]]), np.array([[10.0], [20.0]]))
    array([[ 3.],
           [36.]])
    """
    part, slot = np.nonzero(rows >= 0)
    lead = np.flatnonzero(rows[:, 0] >= 0) if rows.shape[1] else np.zeros(0, dtype=np.int64)
    return _added(load, np.concatenate((rows[part, slot], rows[lead, 0])), (follower, part), (extra, lead))


def _added(load: np.ndarray, index: np.ndarray, *sources: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``load`` (B, K) plus rows of load on the rows of ``load`` that ``index`` names: each ``(values, rows)`` of
    ``sources`` in turn contributes ``values[rows]``. The floats are added in the order ``np.add.at`` adds them,
    with one `np.bincount` per column (``np.add.at`` is slow on large arrays, and a column is gathered at a time).

    >>> _added(np.ones((2, 1)), np.array([1, 0, 1]), (np.array([[2.0], [3.0]]), np.array([0, 1])),
    ...        (np.array([[4.0]]), np.array([0]))).tolist()
    [[4.0], [7.0]]
    """
    at = np.concatenate((np.arange(len(load)), index))
    out = np.empty((len(load), load.shape[1]))
    for k in range(load.shape[1]):
        weights = np.concatenate((load[:, k], *(values[:, k][rows] for values, rows in sources)))
        out[:, k] = np.bincount(at, weights=weights, minlength=len(load))
    return out


def replica_loads(loads: PartitionLoads, parts: np.ndarray, rf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Follower load and the leader's extra load, shape (len(parts), 4) in `DIMENSIONS` order.

    Examples
    --------
    >>> f, x = replica_loads(PartitionLoads(np.array([2.0]), np.array([5.0]), np.array([7.0])), np.array([0]),
    ...                      np.array([3]))
    >>> f.tolist(), x.tolist()
    ([[2.0, 0.0, 7.0, 1.0]], [[0.0, 9.0, 0.0, 0.0]])
    """
    b_in = loads.bytes_in[parts]
    follower = np.zeros((len(parts), 4))
    follower[:, 0] = b_in
    follower[:, 2] = loads.storage[parts]
    follower[:, 3] = 1.0
    extra = np.zeros((len(parts), 4))
    extra[:, 0] = loads.remote_fetch[parts]
    extra[:, 1] = loads.bytes_out[parts] + loads.remote_copy[parts] + b_in * (rf - 1)
    return follower, extra


def fill_pool(
    a: ClusterArrays,
    parts: np.ndarray,
    brokers: np.ndarray,
    loads: PartitionLoads,
    *,
    limit: np.ndarray,
    base: np.ndarray | None = None,
    excluded: np.ndarray | None = None,
) -> PoolFill:
    """The seed placement of partitions ``parts`` on the pool's ``brokers`` (see the module docstring).

    Parameters
    ----------
    a : ClusterArrays
        The snapshot's arrays (`pools.cluster_arrays.cluster_arrays`).
    parts : ndarray of int
        Positions of the partitions to place (none of them held).
    brokers : ndarray of int
        Positions (in ``a.broker_ids``) of the pool's brokers, sorted.
    loads : PartitionLoads
        Per-partition demand (at the forecast for a plan).
    limit : ndarray, shape (len(brokers), 4)
        Headroom × capacity per broker and dimension.
    base : ndarray, shape (len(brokers), 4), optional
        Load already on the brokers that stays (held partitions).
    excluded : ndarray of bool, shape (len(brokers),), optional
        Brokers that take no new replica (unhealthy).

    Returns
    -------
    PoolFill

    Notes
    -----
    Vectorised except for partitions that need a new replica, a rack repair or a leader choice: those take
    O(RF · racks · log B) each through one heap of brokers per rack.
    """
    parts = np.asarray(parts, dtype=np.int64)
    brokers = np.asarray(brokers, dtype=np.int64)
    n_b = len(brokers)
    local = np.full(a.n_brokers + 1, -1, dtype=np.int64)
    local[brokers] = np.arange(n_b)
    rf = a.part_rf[parts]
    width = int(rf.max()) if len(parts) else 0
    starts = a.part_start[parts]
    flat = np.repeat(starts - np.concatenate(([0], np.cumsum(rf)[:-1])).astype(np.int64), rf) + np.arange(int(rf.sum()))
    row = np.repeat(np.arange(len(parts)), rf)
    rep_pos = a.rep_broker[flat]
    rep_local = local[rep_pos]
    rack = _local_racks(a, brokers)
    n_racks = len({int(r) for r in rack if r >= 0})
    kept = rep_local >= 0
    stuck = _stranded(row, rep_pos < a.n_brokers, rep_local, rf, excluded, n_b)
    known_slot = np.where(rep_pos < a.n_brokers, rep_pos, -1)
    # partitions whose kept replicas repeat a rack go through the rack rule one by one
    # a replica off the pool (-1) reads the appended -1: no rack (a pool without brokers has no rack to read)
    repeat = _repeated_rack(row, np.where(kept, np.append(rack, -1)[rep_local], -1), len(parts)) & ~stuck
    offsets = np.concatenate(([0], np.cumsum(rf)[:-1])).astype(np.int64)
    for i in np.flatnonzero(repeat).tolist():
        span = slice(int(offsets[i]), int(offsets[i] + rf[i]))
        kept[span] = _rack_diverse(rep_local[span], kept[span], rack, int(rf[i]), n_racks)
    follower, extra = replica_loads(loads, parts, rf)
    load = np.zeros((n_b, 4)) if base is None else np.array(base, dtype=float)
    load = _added(load, rep_local[kept], (follower, row[kept]))
    leader_pos = a.part_leader[parts]
    first = np.zeros(len(parts), dtype=bool)
    first[row[kept & (flat == starts[row])]] = True
    current = np.zeros(len(parts), dtype=bool)
    current[row[kept & (rep_pos == leader_pos[row]) & (leader_pos[row] >= 0)]] = True
    n_kept = np.bincount(row[kept], minlength=len(parts))
    settled = (n_kept == rf) & (first | current)
    target = np.full((len(parts), width), -1, dtype=np.int64)
    order_in_row = np.cumsum(kept) - 1 - np.concatenate(([0], np.cumsum(n_kept)[:-1])).astype(np.int64)[row]
    target[row[kept], order_in_row[kept]] = rep_pos[kept]
    # stranded partitions keep every replica in its slot, the preferred leader leading
    in_stuck = stuck[row]
    target[stuck] = -1
    target[row[in_stuck], (flat - starts[row])[in_stuck]] = known_slot[in_stuck]
    # settled partitions: the preferred leader leads when kept, else the current leader moves to the front
    lead = np.where(first, target[:, 0], leader_pos) if len(parts) else np.zeros(0, dtype=np.int64)
    moved_front = settled & ~first
    for i in np.flatnonzero(moved_front).tolist():
        reps = target[i, : rf[i]].tolist()
        reps.remove(int(lead[i]))
        target[i, : rf[i]] = [int(lead[i])] + reps
    done = np.flatnonzero(settled)
    load = _added(load, local[target[done, 0]], (extra, done))
    lead_in = np.flatnonzero(stuck & (target[:, 0] >= 0))
    lead_in = lead_in[local[target[lead_in, 0]] >= 0]
    load = _added(load, local[target[lead_in, 0]], (extra, lead_in))

    heaps = _RackHeaps(load, np.asarray(limit, dtype=float), rack, excluded)
    todo = np.flatnonzero(~settled & ~stuck)
    order = todo[np.lexsort((a.part_id[parts[todo]], a.part_topic[parts[todo]], -a.part_size[parts[todo]]))]
    # one partition after another (each pick moves the loads the next one reads): Python lists, no numpy scalars
    rf_of, offset_of, slot_of, kept_of = rf.tolist(), offsets.tolist(), rep_pos.tolist(), kept.tolist()
    local_of, ids_of, leader_of = local.tolist(), brokers.tolist(), leader_pos.tolist()
    first_of, current_of, known = first.tolist(), current.tolist(), a.n_brokers
    short = 0
    for i, own, lead_extra in zip(order.tolist(), follower[order].tolist(), extra[order].tolist(), strict=True):
        k, o = rf_of[i], offset_of[i]
        was = slot_of[o : o + k]
        slots = [b if keep else -1 for b, keep in zip(was, kept_of[o : o + k], strict=True)]
        chosen = [b for b in slots if b >= 0]
        chosen_local = [local_of[b] for b in chosen]
        picks = []
        while len(chosen) < k:
            pick = heaps.least_loaded(chosen_local)
            if pick is None:
                break
            heaps.add(pick, own)
            picks.append(ids_of[pick])
            chosen.append(picks[-1])
            chosen_local.append(pick)
        missing = k - len(chosen)
        short += missing > 0
        for j, b in enumerate(slots):  # replace in place; a pool too small keeps replicas from outside it
            if b >= 0:
                continue
            if missing and was[j] < known and was[j] not in slots and was[j] not in picks:
                slots[j], missing = was[j], missing - 1
            elif picks:
                slots[j] = picks.pop(0)
        chosen = [b for b in slots if b >= 0]
        if first_of[i]:
            leader = chosen[0]
        elif current_of[i] and leader_of[i] in chosen:
            leader = leader_of[i]
        else:
            leader = heaps.least_leading(chosen, local_of)
        if local_of[leader] >= 0:
            heaps.add(local_of[leader], lead_extra)
        at = chosen.index(leader)  # the leader swaps slots with the replica in the first one
        chosen[0], chosen[at] = chosen[at], chosen[0]
        target[i, :k] = chosen
    return PoolFill(parts, target, short, parts[stuck])


def _local_racks(a: ClusterArrays, brokers: np.ndarray) -> np.ndarray:
    """Rack code of each pool broker (-1 = no rack)."""
    return a.broker_rack[brokers] if len(brokers) else np.zeros(0, dtype=np.int64)


def _stranded(row: np.ndarray, known: np.ndarray, rep_local: np.ndarray, rf: np.ndarray,
              excluded: np.ndarray | None, n_brokers: int) -> np.ndarray:
    """Per partition: fewer existing brokers to hold it than its replication factor, i.e. its replicas on known
    brokers plus the pool's open brokers it does not use yet (a replica on an unknown broker has no stand-in).

    >>> row, rf = np.array([0, 0, 0, 1, 1, 1]), np.array([3, 3])
    >>> known = np.array([True, True, False, True, True, False])
    >>> _stranded(row, known, np.array([0, 1, -1, 0, 1, -1]), rf, np.array([False, False, True]), 3).tolist()
    [True, True]
    >>> _stranded(row, known, np.array([0, 1, -1, 0, 1, -1]), rf, None, 3).tolist()
    [False, False]
    >>> _stranded(row, known, np.full(6, -1), rf, None, 0).tolist()  # a pool without brokers strands everything
    [True, True]
    """
    is_open = np.ones(n_brokers, dtype=bool) if excluded is None else ~np.asarray(excluded, dtype=bool)
    n = len(rf)
    n_known = np.bincount(row[known], minlength=n)
    on_open = np.append(is_open, False)[rep_local]  # -1, a replica off the pool, reads the appended False
    reach = n_known + int(is_open.sum()) - np.bincount(row[on_open], minlength=n)
    return reach < rf


def _repeated_rack(row: np.ndarray, rack: np.ndarray, n: int) -> np.ndarray:
    """Partitions with two kept replicas on the same (known) rack."""
    out = np.zeros(n, dtype=bool)
    mask = rack >= 0
    if not mask.any():
        return out
    key = row[mask] * (int(rack.max()) + 1) + rack[mask]
    key.sort()
    dup = key[1:][key[1:] == key[:-1]]
    out[dup // (int(rack.max()) + 1)] = True
    return out


def _rack_diverse(rep_local: np.ndarray, kept: np.ndarray, rack: np.ndarray, rf: int, n_racks: int) -> np.ndarray:
    """Which kept replicas stay under the rack rule: a repeated rack only while the slots left still reach
    min(RF, racks) racks. Replicas are visited in order, the preferred leader first."""
    need = min(rf, n_racks)
    out = np.zeros(len(kept), dtype=bool)
    used: set[int] = set()
    count = 0
    for j in range(len(kept)):
        if not kept[j]:
            continue
        r = int(rack[rep_local[j]])
        if r >= 0 and r in used and rf - count - 1 < need - len(used):
            continue
        out[j] = True
        count += 1
        if r >= 0:
            used.add(r)
    return out


class _RackHeaps:
    """Brokers by utilisation (busiest dimension over its limit), one lazy heap per rack (-1 = no rack)."""

    def __init__(self, load: np.ndarray, limit: np.ndarray, rack: np.ndarray, excluded: np.ndarray | None) -> None:
        self.load = load.tolist()
        self.limit = np.where(limit > 0, limit, 1e-9).tolist()
        self.rack = rack.tolist()
        self.version = [0] * len(self.load)
        self.open = [True] * len(self.load) if excluded is None else (~np.asarray(excluded, dtype=bool)).tolist()
        self.heaps: dict[int, list[tuple[float, int, int]]] = {}
        for b, r in enumerate(self.rack):
            if self.open[b]:
                self.heaps.setdefault(r, []).append((self._score(b), b, 0))
        for h in self.heaps.values():
            heapq.heapify(h)
        self.racks = sorted(self.heaps)
        self.racked = [r for r in self.racks if r >= 0]
        self.unracked = [r for r in self.racks if r < 0]

    def _score(self, b: int) -> float:
        return max(map(truediv, self.load[b], self.limit[b]))

    def add(self, b: int, vector: list[float]) -> None:
        """Add ``vector`` (a load per `DIMENSIONS`) to broker ``b``."""
        self.load[b] = row = [v + x for v, x in zip(self.load[b], vector)]
        self.version[b] += 1
        heap = self.heaps.get(self.rack[b]) if self.open[b] else None
        if heap is not None:  # an excluded broker's load counts, it never takes one
            heapq.heappush(heap, (max(map(truediv, row, self.limit[b])), b, self.version[b]))

    def _top(self, r: int, skip: list[int]) -> tuple[float, int] | None:
        """The least-loaded broker of rack ``r`` not in ``skip``."""
        heap = self.heaps[r]
        aside = []
        found = None
        while heap:
            score, b, v = heap[0]
            if v != self.version[b]:
                heapq.heappop(heap)
                continue
            if b in skip:
                aside.append(heapq.heappop(heap))
                continue
            found = (score, b)
            break
        for entry in aside:
            heapq.heappush(heap, entry)
        return found

    def least_loaded(self, chosen: list[int]) -> int | None:
        """The least-loaded broker not in ``chosen``: on a rack ``chosen`` does not use when there is one, else
        without a rack, else anywhere."""
        used = {self.rack[b] for b in chosen if b >= 0}
        tops = [t for r in self.racked if r not in used and (t := self._top(r, chosen))]
        if not tops:
            tops = [t for r in self.unracked if (t := self._top(r, chosen))]
        if not tops:
            tops = [t for r in self.racks if (t := self._top(r, chosen))]
        return min(tops)[1] if tops else None

    def least_leading(self, chosen: list[int], local: list[int]) -> int:
        """The chosen broker with the lowest network-out utilisation (a broker outside the pool only if alone)."""
        inside = [b for b in chosen if local[b] >= 0]
        if not inside:
            return chosen[0]
        return min(inside, key=lambda b: (self.load[local[b]][1] / self.limit[local[b]][1], b))
