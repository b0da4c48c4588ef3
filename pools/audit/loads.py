"""Per-broker load now and at the forecast, as arrays, for the audit's capacity checks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pools.cluster_arrays import ClusterArrays, cluster_arrays
from pools.demand import PartitionLoads, partition_loads, topic_demand
from pools.profile import PartitionProfile, TopicProfile
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = ["Loads", "audit_loads"]


@dataclass(frozen=True, eq=False)
class Loads:
    """Load per broker position (rows, as in `ClusterArrays.broker_ids`) and dimension (columns, `DIMENSIONS`).

    ``now`` is the current placement at the measured load, ``forecast`` the current placement at the forecast
    load; ``NaN`` marks what is unknown (traffic without a profile, any forecast but replica counts without one).
    ``partitions`` is the per-partition demand the fixes place by: at the forecast with a profile, else the
    partitions' sizes alone (as `pools.demand.topic_demand` models topics absent from a profile).
    """

    now: np.ndarray
    forecast: np.ndarray
    partitions: PartitionLoads

    def known(self, basis: str, dimension: str) -> bool:
        """True when ``basis`` ("now" or "forecast") has numbers for ``dimension``."""
        column = self.table(basis)[:, DIMENSIONS.index(dimension)]
        return len(column) > 0 and not bool(np.isnan(column).any())

    def table(self, basis: str) -> np.ndarray:
        """``now`` or ``forecast``."""
        return self.now if basis == "now" else self.forecast


def audit_loads(
    snapshot: ClusterSnapshot,
    profile: Mapping[str, TopicProfile] | None = None,
    *,
    fanout: Mapping[str, float] | float | None = None,
    partition_profile: Mapping[tuple[str, int], PartitionProfile] | None = None,
) -> Loads:
    """Broker loads for the audit.

    Replica counts come from the placement and current disk from the replicas' reported sizes. With a
    ``profile``, network traffic (now and forecast) and forecast disk come from `pools.demand.topic_demand`,
    spread over replicas as `pools.demand.replica_load` does (the leader carries bytes-in, consumer bytes-out,
    replication out and the remote fetch and copy; a follower carries replication in).

    Notes
    -----
    Vectorised: O(P + R) after `topic_demand`.
    """
    arrays = cluster_arrays(snapshot)
    b = arrays.n_brokers
    now = np.full((b, len(DIMENSIONS)), np.nan)
    forecast = np.full((b, len(DIMENSIONS)), np.nan)
    count = _per_broker(arrays, np.ones(len(arrays.rep_broker)))
    now[:, 3] = forecast[:, 3] = count
    now[:, 2] = _per_broker(arrays, arrays.rep_size.astype(float))
    partitions = partition_loads(snapshot, {})
    if profile is not None:
        leader = _leader_replicas(arrays)
        rf = arrays.part_rf[arrays.rep_part].astype(float)
        for basis, table in (("now", now), ("forecast", forecast)):
            demands = topic_demand(snapshot, profile, fanout, at=basis, partition_profile=partition_profile)
            shares = partition_loads(snapshot, demands)
            b_in, b_out, storage = shares.bytes_in, shares.bytes_out, shares.storage
            rep_in = b_in[arrays.rep_part]
            r_fetch, r_copy = shares.remote_fetch[arrays.rep_part], shares.remote_copy[arrays.rep_part]
            table[:, 0] = _per_broker(arrays, np.where(leader, rep_in + r_fetch, rep_in))
            leader_out = b_out[arrays.rep_part] + r_copy + rep_in * (rf - 1)
            table[:, 1] = _per_broker(arrays, np.where(leader, leader_out, 0.0))
            if basis == "forecast":
                table[:, 2] = _per_broker(arrays, storage[arrays.rep_part])
                partitions = shares
    return Loads(now=now, forecast=forecast, partitions=partitions)


def _per_broker(arrays: ClusterArrays, weights: np.ndarray) -> np.ndarray:
    return np.bincount(arrays.rep_broker, weights=weights, minlength=arrays.n_brokers + 1)[: arrays.n_brokers]


def _leader_replicas(arrays: ClusterArrays) -> np.ndarray:
    """Which replica leads each partition: the current leader when it is a replica, else the first replica."""
    is_current = (arrays.rep_broker == arrays.part_leader[arrays.rep_part]) & (arrays.part_leader[arrays.rep_part] >= 0)
    led = np.zeros(len(arrays.part_rf), dtype=bool)
    led[arrays.rep_part[is_current]] = True
    return is_current | (~led[arrays.rep_part] & (arrays.rep_pos == 0))
