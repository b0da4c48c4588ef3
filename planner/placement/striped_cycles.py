"""Whole reshuffle cycles of the striped placer by arithmetic, when every rack stripes simply.

When every rack has at least ``ceil(RF / R)`` unfenced brokers, partition ``e`` of a cycle takes
replica ``t`` from the unfenced list of the rack at striping position ``offset + e + t`` (mod R):
the leader's rack is skipped once and the walk wraps round to it. A rack's list is first touched
in a partition at a new epoch and rotates, unless that epoch repeats the one it was last touched
in, in an earlier cycle ("stale": no rotation, the index continues); further touches in the same
partition continue the index. So a list returns ``brokers[(offset + shift) % size]`` where the
shift only depends on how many earlier partitions of the cycle touched it, and the only
sequential state is one offset/index/epoch per list and cycle. A cycle in which a stale list would
run out makes Kafka move on to other racks or fenced brokers; it is placed by the
partition-by-partition path instead.
"""

from __future__ import annotations

__all__ = ["place_cycles", "stripes_simply"]

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def stripes_simply(unfenced_sizes: Sequence[int], rf: int) -> bool:
    """Whether every rack can give each partition all the replicas striping asks of it, unfenced."""
    n_racks = len(unfenced_sizes)
    return n_racks > 0 and min(unfenced_sizes) >= -(-rf // n_racks)


def place_cycles(placer: Any, out: np.ndarray, row: int, orders: np.ndarray, contents: np.ndarray, cycle: int) -> int:
    """Place the cycles of one chunk into ``out`` from ``row``; return the next row.

    Parameters
    ----------
    placer : striped._Placer
        Holds the per-list ``offset``/``index``/``epoch``, ``sizes``, ``starts``, ``rack_offset``
        and ``place_cycle`` (the fallback); updated in place.
    out : ndarray (P, RF)
        The placement being filled.
    orders, contents : ndarray (K, R), (K, T)
        Rack order (HashMap positions in striping order) and list contents of each cycle.
    cycle : int
        Partitions per cycle (U).
    """
    n_partitions, rf = out.shape
    n_cycles, n_racks = orders.shape
    sizes, offset, index, epoch = placer.sizes, placer.offset, placer.index, placer.epoch
    tables = _Touches.build(n_racks, rf, cycle)
    o_tab = np.zeros((n_cycles, n_racks), dtype=np.int64)
    stale_tab = np.zeros((n_cycles, n_racks), dtype=np.int64)
    index_tab = np.zeros((n_cycles, n_racks), dtype=np.int64)
    run_start, run_row, run_offset = 0, row, placer.rack_offset % n_racks
    i = 0
    while i < n_cycles:
        m = min(cycle, n_partitions - row)
        if m == cycle >= 2 * n_racks and row > 0:
            # Long cycles: a list's first touch (epoch < R) never repeats its last one (epoch >= R).
            stop = min(n_cycles, i + (n_partitions - row) // cycle)
            o_tab[i:stop] = _advance(placer, orders[i:stop], tables, cycle)
            row += (stop - i) * cycle
            i = stop
            continue
        order = orders[i].tolist()
        touches = tables if m == cycle else _Touches.build(n_racks, rf, m)
        first_pos = placer.rack_offset % n_racks
        plan = _plan(order, first_pos, touches, placer)
        if plan is None:
            _fill(placer, out, run_row, row, orders[run_start:i], contents[run_start:i], run_offset,
                  (o_tab[run_start:i], stale_tab[run_start:i], index_tab[run_start:i]), tables, cycle)
            placer.racks, placer.contents = order, contents[i]
            placer.place_cycle(out, row, m)
            row += m
            run_start, run_row, run_offset = i + 1, row, placer.rack_offset % n_racks
            i += 1
            continue
        for h, lst, d, count, stale in plan:
            o_tab[i, h], stale_tab[i, h], index_tab[i, h] = offset[lst], stale, index[lst]
            offset[lst] = (offset[lst] + count - stale) % sizes[lst]
            index[lst] = index[lst] + touches.first_n[d] if stale and count == 1 else touches.last_n[d]
            epoch[lst] = touches.last[d]
        placer.rack_offset = (first_pos + m - 1) % n_racks + 1
        row += m
        i += 1
    _fill(placer, out, run_row, row, orders[run_start:], contents[run_start:], run_offset,
          (o_tab[run_start:], stale_tab[run_start:], index_tab[run_start:]), tables, cycle)
    return row


def _advance(placer: Any, orders: np.ndarray, touches: _Touches, cycle: int) -> np.ndarray:
    """Offsets (K, R) at the start of K full, stale-free cycles; moves the lists' state past them.

    Every list is touched in every such cycle (``cycle >= R``), so its offset simply advances by
    its touch count, and its index and epoch are those of its last touch in the last cycle.
    """
    n_cycles, n_racks = orders.shape
    first_pos = placer.rack_offset % n_racks
    starts = (first_pos + np.arange(n_cycles, dtype=np.int64) * cycle) % n_racks
    position = np.empty_like(orders)
    position[np.arange(n_cycles)[:, None], orders] = np.arange(n_racks)
    distance = (position - starts[:, None]) % n_racks
    count = np.asarray(touches.count, dtype=np.int64)[distance]
    unfenced = 2 * np.arange(n_racks) + 1
    sizes = np.asarray(placer.sizes, dtype=np.int64)[unfenced]
    total = np.cumsum(count, axis=0)
    offsets = (np.asarray(placer.offset, dtype=np.int64)[unfenced] + total - count) % sizes
    for h, (lst, d) in enumerate(zip(unfenced.tolist(), distance[-1].tolist())):
        placer.offset[lst] = int(offsets[-1, h] + count[-1, h]) % placer.sizes[lst]
        placer.index[lst], placer.epoch[lst] = touches.last_n[d], touches.last[d]
    placer.rack_offset = (first_pos + n_cycles * cycle - 1) % n_racks + 1
    return offsets


def _plan(order: list[int], first_pos: int, touches: _Touches,
          placer: Any) -> list[tuple[int, int, int, int, bool]] | None:
    """``(rack, list, distance, partitions touching, stale)`` per touched rack, or None to fall back."""
    plan = []
    for q, h in enumerate(order):
        d = (q - first_pos) % len(order)
        count = touches.count[d]
        if count:
            lst = 2 * h + 1
            stale = touches.first[d] == placer.epoch[lst]
            if stale and placer.index[lst] + touches.first_n[d] > placer.sizes[lst]:
                return None
            plan.append((h, lst, d, count, stale))
    return plan


@dataclass(frozen=True, slots=True)
class _Touches:
    """How partitions touch the rack at distance ``d`` from a cycle's first striping position.

    A partition touches ``w = min(RF, R)`` racks. ``before[d, r]`` counts the partitions ``e < r``
    of one R-long round that touch rack ``d``; in a cycle of ``m`` partitions it is touched by
    ``count[d]`` of them, the first at epoch ``first[d]`` (in cell ``first_cell[d]`` of the flat
    (epoch, replica) grid, ``first_n[d]`` times) and the last at epoch ``last[d]`` (``last_n[d]``
    times).
    """

    before: np.ndarray
    count: list[int]
    first: list[int]
    last: list[int]
    first_cell: list[int]
    first_n: list[int]
    last_n: list[int]

    @classmethod
    def build(cls, n_racks: int, rf: int, m: int) -> _Touches:
        w = min(rf, n_racks)
        d = np.arange(n_racks)
        touched = (d[:, None] - d[None, :]) % n_racks < w
        before = np.zeros((n_racks, n_racks + 1), dtype=np.int64)
        before[:, 1:] = np.cumsum(touched, axis=1)
        count = (m // n_racks) * w + before[:, m % n_racks]
        first = np.where(d < w, 0, d - w + 1)
        residues = (d[:, None] - np.arange(w)[None, :]) % n_racks
        last = np.where(residues <= m - 1, residues + n_racks * ((m - 1 - residues) // n_racks), -1).max(axis=1)
        return cls(
            before=before[:, :n_racks],
            count=count.tolist(),
            first=first.tolist(),
            last=last.tolist(),
            first_cell=(first * rf + (d - first)).tolist(),
            first_n=_touches_in_partition(d - first, rf, n_racks).tolist(),
            last_n=_touches_in_partition((d - last) % n_racks, rf, n_racks).tolist(),
        )


def _touches_in_partition(t0: np.ndarray, rf: int, n_racks: int) -> np.ndarray:
    """Replicas ``t < rf`` with ``t = t0 (mod R)``: how often one partition takes from that rack."""
    return np.where(t0 < rf, (rf - 1 - t0) // n_racks + 1, 0)


def _fill(placer: Any, out: np.ndarray, row: int, stop: int, orders: np.ndarray, contents: np.ndarray,
          first_pos: int, tabs: tuple[np.ndarray, np.ndarray, np.ndarray], touches: _Touches, cycle: int) -> None:
    """Write rows ``row:stop``: consecutive arithmetic cycles, all full except possibly the last.

    Cell ``(e, t)`` of a cycle is touch ``t // R`` in partition ``e`` of the rack at distance
    ``d = (e + t) % R``, which ``k`` earlier partitions touched; ``d`` and ``k`` are the same in
    every cycle, so they are computed once and the per-cycle state is gathered per (cycle, rack).
    """
    if stop <= row:
        return
    n_cycles, n_racks = orders.shape
    rf, width = out.shape[1], contents.shape[1]
    w = min(rf, n_racks)
    o_tab, stale_tab, index_tab = tabs
    cycles = np.arange(n_cycles, dtype=np.int64)[:, None]
    distance = np.arange(n_racks, dtype=np.int64)[None, :]
    h = orders[cycles, (first_pos + cycles * cycle + distance) % n_racks]
    lst = 2 * h + 1
    sizes = np.asarray(placer.sizes, dtype=np.int64)[lst]
    o = o_tab[cycles, h]
    stale = stale_tab[cycles, h]
    base = cycles * width + placer.starts[lst]
    e = np.arange(cycle, dtype=np.int64)[:, None]
    slot = np.arange(rf, dtype=np.int64)
    d_cell = (e + slot) % n_racks
    k_cell = touches.before[d_cell, e % n_racks] + (e // n_racks) * w + slot // n_racks
    n_cells = (stop - row) * rf
    # Cell-sized arrays are int32 (a chunk holds at most ~2**20 list slots): half the memory traffic.
    gd = ((cycles * n_racks).astype(np.int32)[:, :, None] + d_cell.astype(np.int32).ravel()).ravel()[:n_cells]
    k = np.tile(k_cell.astype(np.int32).ravel(), n_cycles)[:n_cells]
    pos = np.take((o + 1 - stale).astype(np.int32).ravel(), gd)
    pos += k
    pos %= np.take(sizes.astype(np.int32).ravel(), gd)
    pos += np.take(base.astype(np.int32).ravel(), gd)
    values = np.take(contents.ravel(), pos)
    # A stale first touch continues the old index instead of rotating: fix those few cells.
    first_cell = np.asarray(touches.first_cell, dtype=np.int64)[None, :] + cycles * cycle * rf
    first_n = np.asarray(touches.first_n, dtype=np.int64)[None, :]
    index = index_tab[cycles, h]
    for j in range(-(-rf // n_racks)):
        cell = first_cell + j * n_racks
        fix = (stale == 1) & (j < first_n) & (cell < n_cells)
        values[cell[fix]] = contents.ravel()[base[fix] + (o[fix] + index[fix] + j) % sizes[fix]]
    out[row:stop] = values.reshape(-1, rf)
