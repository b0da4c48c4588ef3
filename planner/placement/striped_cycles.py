"""Whole reshuffle cycles of the striped placer by arithmetic, when every rack stripes simply.

When ``RF <= R`` and every rack has an unfenced broker, partition ``e`` of a cycle takes replica
``t`` from the unfenced list of the rack at striping position ``offset + e + t``, and each list
touch returns ``brokers[(offset + shift) % size]``, where the shift only depends on how often the
list was touched before in the cycle and on whether its first touch repeats the list's epoch from
an earlier cycle ("stale": no rotation, the index continues). So the only sequential state is one
offset/index/epoch per list and cycle. A cycle in which a stale list is already exhausted would
make Kafka move on to other racks; it is placed by the partition-by-partition path instead.
"""

from __future__ import annotations

__all__ = ["place_cycles"]

from dataclasses import dataclass
from typing import Any

import numpy as np


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
    for i, order in enumerate(orders.tolist()):
        m = min(cycle, n_partitions - row)
        touches = tables if m == cycle else _Touches.build(n_racks, rf, m)
        first_pos = placer.rack_offset % n_racks
        plan = []
        for q, h in enumerate(order):
            d = (q - first_pos) % n_racks
            count = touches.count[d]
            if count:
                lst = 2 * h + 1
                stale = touches.first[d] == epoch[lst]
                if stale and index[lst] >= sizes[lst]:
                    plan = None
                    break
                plan.append((h, lst, d, count, stale))
        if plan is None:
            _fill(placer, out, run_row, row, orders[run_start:i], contents[run_start:i], run_offset,
                  (o_tab[run_start:i], stale_tab[run_start:i], index_tab[run_start:i]), tables, cycle)
            placer.racks, placer.contents = order, contents[i]
            placer.place_cycle(out, row, m)
            row += m
            run_start, run_row, run_offset = i + 1, row, placer.rack_offset % n_racks
            continue
        for h, lst, d, count, stale in plan:
            o_tab[i, h], stale_tab[i, h], index_tab[i, h] = offset[lst], stale, index[lst]
            offset[lst] = (offset[lst] + count - stale) % sizes[lst]
            index[lst] = index[lst] + 1 if stale and count == 1 else 1
            epoch[lst] = touches.last[d]
        placer.rack_offset = (first_pos + m - 1) % n_racks + 1
        row += m
    _fill(placer, out, run_row, row, orders[run_start:], contents[run_start:], run_offset,
          (o_tab[run_start:], stale_tab[run_start:], index_tab[run_start:]), tables, cycle)
    return row


@dataclass(frozen=True, slots=True)
class _Touches:
    """Touches of the rack at distance ``d`` from a cycle's first striping position, for ``m`` partitions.

    ``before[d, r]`` counts the partitions ``e < r`` of one R-long round that touch it; ``count``,
    ``first`` and ``last`` give how often, and at which epochs, it is touched in the cycle;
    ``first_cell`` is the flat (epoch, replica) cell of its first touch.
    """

    before: np.ndarray
    count: list[int]
    first: list[int]
    last: list[int]
    first_cell: list[int]

    @classmethod
    def build(cls, n_racks: int, rf: int, m: int) -> _Touches:
        d = np.arange(n_racks)[:, None]
        r = np.arange(n_racks)[None, :]
        touched = (d - r) % n_racks < rf
        before = np.zeros((n_racks, n_racks + 1), dtype=np.int64)
        before[:, 1:] = np.cumsum(touched, axis=1)
        count = (m // n_racks) * rf + before[:, m % n_racks]
        first = np.where(d[:, 0] < rf, 0, d[:, 0] - rf + 1)
        residues = (d - np.arange(rf)[None, :]) % n_racks
        last = np.where(residues <= m - 1, residues + n_racks * ((m - 1 - residues) // n_racks), -1).max(axis=1)
        first_cell = first * rf + (d[:, 0] - first)
        return cls(before[:, :n_racks], count.tolist(), first.tolist(), last.tolist(), first_cell.tolist())


def _fill(placer: Any, out: np.ndarray, row: int, stop: int, orders: np.ndarray, contents: np.ndarray,
          first_pos: int, tabs: tuple[np.ndarray, np.ndarray, np.ndarray], touches: _Touches, cycle: int) -> None:
    """Write rows ``row:stop``: consecutive arithmetic cycles, all full except possibly the last.

    Cell ``(e, t)`` of a cycle is the ``k``-th touch of the rack at distance ``d = (e + t) % R``;
    ``k`` and ``d`` are the same in every cycle, so they are computed once and the per-cycle
    state is gathered per (cycle, distance).
    """
    if stop <= row:
        return
    n_cycles, n_racks = orders.shape
    rf, width = out.shape[1], contents.shape[1]
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
    d_cell = (e + np.arange(rf)) % n_racks
    k_cell = touches.before[d_cell, e % n_racks] + (e // n_racks) * rf
    n_cells = (stop - row) * rf
    # Cell-sized arrays are int32 (a chunk holds at most ~2**20 list slots): half the memory traffic.
    gd = ((cycles * n_racks).astype(np.int32)[:, :, None] + d_cell.astype(np.int32).ravel()).ravel()[:n_cells]
    k = np.tile(k_cell.astype(np.int32).ravel(), n_cycles)[:n_cells]
    pos = ((o + 1 - stale).astype(np.int32).ravel()[gd] + k) % sizes.astype(np.int32).ravel()[gd]
    values = contents.ravel()[base.astype(np.int32).ravel()[gd] + pos]
    # A stale first touch continues the old index instead of rotating: fix those few cells.
    first_cell = np.asarray(touches.first_cell, dtype=np.int64)[None, :] + cycles * cycle * rf
    fix = (stale == 1) & (first_cell < n_cells)
    index = index_tab[cycles, h]
    values[first_cell[fix]] = contents.ravel()[base[fix] + (o[fix] + index[fix]) % sizes[fix]]
    out[row:stop] = values.reshape(-1, rf)
