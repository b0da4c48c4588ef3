"""Balance of a pool, per dimension: each broker's load against its fair share.

The dimensions are the engine's (`planner.placement.engine.ENGINE_DIMENSIONS`): network in and out, disk,
replicas, leaders and leaders' bytes-in. A broker's utilisation is its load over its weight (its capacity; for
leaders its replica capacity, for leaders' bytes-in its network-in capacity, as the engine bands them); the
pool's mean is its total load over its total weight. Each broker is measured against its fair share
(`planner.placement.engine.fair_share`: the pool mean, or its rack's where partitions whose RF reaches the pool's
racks pin load to every rack): ``max`` and ``min`` are the busiest and idlest broker's load over that share
(1.0 = exactly its share), ``outside_band`` counts brokers more than ``band`` from it (Cruise Control's
distribution goals with ``balance.threshold`` = 1 + band) and ``distance`` sums how far they are outside it, in
fair shares (what `planner.placement.exact.exact_placement` minimises within a budget).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from planner.placement.engine import ENGINE_DIMENSIONS, band_weights, fair_share
from planner.placement.minimal_move import engine_loads
from pools.cluster_arrays import cluster_arrays
from pools.demand import Demand, partition_loads
from pools.fill import current_targets, load_on
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = ["broker_loads", "rack_pinned", "pool_balance", "spread"]


def broker_loads(snapshot: ClusterSnapshot, demands: Mapping[str, Demand],
                 assignment: Mapping[tuple[str, int], tuple[int, ...]] | None = None) -> dict[int, np.ndarray]:
    """Load per broker in `ENGINE_DIMENSIONS` with every partition on ``assignment`` (its current replicas where
    omitted; the first replica leads), at the replication factor of that placement (a leader replicates to its
    followers there)."""
    a = cluster_arrays(snapshot)
    everything = np.arange(len(a.part_rf))
    follower, extra = engine_loads(partition_loads(snapshot, demands), everything, _rf(snapshot, assignment))
    load = load_on(a, np.arange(a.n_brokers), _rows(snapshot, assignment), follower, extra)
    return {int(b): load[i] for i, b in enumerate(a.broker_ids.tolist())}


def rack_pinned(snapshot: ClusterSnapshot, demands: Mapping[str, Demand], brokers: Sequence[int],
                assignment: Mapping[tuple[str, int], tuple[int, ...]] | None = None) -> dict[int, np.ndarray]:
    """Load `ENGINE_DIMENSIONS` that racks pin among ``brokers`` (a pool): each partition placed on them whose RF
    reaches their racks has one replica in every rack; it is booked on each rack's first broker (`fair_share`
    sums it per rack)."""
    a = cluster_arrays(snapshot)
    ids = sorted(brokers)
    out = {b: np.zeros(len(ENGINE_DIMENSIONS)) for b in ids}
    rack = {b.id: b.rack for b in snapshot.brokers}
    racks = {rack[b] for b in ids}
    if len(racks) < 2 or None in racks:
        return out
    rows = _rows(snapshot, assignment)
    inside = np.isin(np.where(rows >= 0, a.broker_ids[np.maximum(rows, 0)], -1), np.array(ids)) | (rows < 0)
    rf = _rf(snapshot, assignment)
    parts = np.flatnonzero(inside.all(axis=1) & (rf >= len(racks)))
    follower, _ = engine_loads(partition_loads(snapshot, demands), parts, rf[parts])
    for r in sorted(racks):
        out[min(b for b in ids if rack[b] == r)] += follower.sum(axis=0)
    return out


def _rf(snapshot: ClusterSnapshot, assignment: Mapping[tuple[str, int], tuple[int, ...]] | None) -> np.ndarray:
    """Every partition's replication factor with ``assignment`` applied (an RF change gives new lengths)."""
    rf = cluster_arrays(snapshot).part_rf.copy()
    if assignment:
        for i, p in enumerate(snapshot.partitions):
            new = assignment.get((p.topic, p.partition))
            if new is not None:
                rf[i] = len(new)
    return rf


def _rows(snapshot: ClusterSnapshot, assignment: Mapping[tuple[str, int], tuple[int, ...]] | None) -> np.ndarray:
    """Every partition's replicas as broker positions (`pools.fill.current_targets`), ``assignment`` applied."""
    a = cluster_arrays(snapshot)
    rows = current_targets(a)
    if assignment:
        pos = {int(b): i for i, b in enumerate(a.broker_ids.tolist())}
        width = max([rows.shape[1], *(len(r) for r in assignment.values())])
        if width > rows.shape[1]:
            rows = np.pad(rows, ((0, 0), (0, width - rows.shape[1])), constant_values=-1)
        for i, p in enumerate(snapshot.partitions):
            new = assignment.get((p.topic, p.partition))
            if new is not None and new != p.replicas:
                rows[i] = -1
                rows[i, : len(new)] = [pos.get(b, -1) for b in new]
    return rows


def _weights(snapshot: ClusterSnapshot, brokers: Sequence[int]) -> np.ndarray:
    cap = np.array([[snapshot.broker_by_id[b].capacity.get(d) for d in DIMENSIONS] for b in brokers],
                   dtype=float).reshape(len(brokers), len(DIMENSIONS))
    return band_weights(cap)


def pool_balance(snapshot: ClusterSnapshot, loads: Mapping[int, np.ndarray], brokers: Sequence[int],
                 band: float, pinned: Mapping[int, np.ndarray] | None = None,
                 dimension_bands: Mapping[str, float] | None = None) -> dict[str, dict[str, float | int]]:
    """Per `ENGINE_DIMENSIONS` name: ``mean`` utilisation, ``max`` and ``min`` over each broker's fair share,
    ``outside_band`` and ``distance`` (see the module docstring; against ``dimension_bands`` where it names the
    dimension, else ``band``), with the load `rack_pinned` (none when omitted: the pool mean);
    a dimension with no load or no weight is omitted.

    Examples
    --------
    >>> from pools.snapshot import Broker, Capacity
    >>> snap = ClusterSnapshot("c", (Broker(1, None, Capacity(10, 10, 100, 10)),
    ...                              Broker(2, None, Capacity(10, 10, 100, 10))), (), ())
    >>> loads = {1: np.array([6.0, 0, 0, 3, 0, 0]), 2: np.array([2.0, 0, 0, 1, 0, 0])}
    >>> pool_balance(snap, loads, [1, 2], 0.1)["nw_in"]
    {'mean': 0.4, 'max': 1.5, 'min': 0.5, 'outside_band': 2, 'distance': 0.8}
    """
    if not brokers:
        return {}
    ids = sorted(brokers)
    weight = _weights(snapshot, ids)
    load = np.array([loads[b] for b in ids], dtype=float)
    rack_of = {r: i for i, r in enumerate(sorted({str(snapshot.broker_by_id[b].rack) for b in ids}))}
    rack = np.array([rack_of[str(snapshot.broker_by_id[b].rack)] if snapshot.broker_by_id[b].rack is not None
                     else -1 for b in ids], dtype=np.int64)
    held = np.array([pinned[b] for b in ids], dtype=float) if pinned else np.zeros_like(load)
    share = fair_share(load.sum(axis=0), weight, rack, held)
    out: dict[str, dict[str, float | int]] = {}
    for d, name in enumerate(ENGINE_DIMENSIONS):
        total_w, total = float(weight[:, d].sum()), float(load[:, d].sum())
        if total_w <= 0 or total <= 0:
            continue
        mean = total / total_w
        ratio = np.where(share[:, d] > 0, load[:, d] / np.where(share[:, d] > 0, share[:, d], 1.0), 0.0)
        off = np.where(share[:, d] > 0, np.abs(ratio - 1.0), 0.0)
        beta = (dimension_bands or {}).get(name, band)
        out[name] = {"mean": round(mean, 6), "max": round(float(ratio.max()), 4), "min": round(float(ratio.min()), 4),
                     "outside_band": int((off > beta + 1e-9).sum()),
                     "distance": round(float(np.maximum(off - beta, 0.0).sum()), 4)}
    return out


def spread(balance: Mapping[str, Mapping[str, float | int]]) -> dict[str, float]:
    """Per dimension, the gap between the busiest and the idlest broker each over its fair share.

    Examples
    --------
    >>> spread({"disk": {"mean": 0.5, "max": 1.2, "min": 0.9, "outside_band": 1}})
    {'disk': 0.3}
    """
    return {d: round(float(v["max"]) - float(v["min"]), 4) for d, v in balance.items()}
