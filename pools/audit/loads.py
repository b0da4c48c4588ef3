"""Per-broker load now and at the forecast, as arrays, for the audit's capacity checks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pools.audit.index import ClusterArrays, cluster_arrays
from pools.demand import topic_demand
from pools.profile import PartitionProfile, TopicProfile
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = ["Loads", "audit_loads"]


@dataclass(frozen=True, eq=False)
class Loads:
    """Load per broker position (rows, as in `ClusterArrays.broker_ids`) and dimension (columns, `DIMENSIONS`).

    ``now`` is the current placement at the measured load, ``forecast`` the current placement at the forecast
    load; ``NaN`` marks what is unknown (traffic without a profile, any forecast but replica counts without one).
    """

    now: np.ndarray
    forecast: np.ndarray

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
    spread over replicas as `pools.demand.replica_load` does (the leader carries bytes-in, consumer bytes-out
    and replication out; a follower carries replication in).

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
    if profile is not None:
        leader = _leader_replicas(arrays)
        rf = arrays.part_rf[arrays.rep_part].astype(float)
        for basis, table in (("now", now), ("forecast", forecast)):
            demands = topic_demand(snapshot, profile, fanout, at=basis, partition_profile=partition_profile)
            b_in, b_out, storage = _shares(snapshot, demands, len(arrays.part_rf))
            rep_in = b_in[arrays.rep_part]
            table[:, 0] = _per_broker(arrays, rep_in)
            table[:, 1] = _per_broker(arrays, np.where(leader, b_out[arrays.rep_part] + rep_in * (rf - 1), 0.0))
            if basis == "forecast":
                table[:, 2] = _per_broker(arrays, storage[arrays.rep_part])
    return Loads(now=now, forecast=forecast)


def _per_broker(arrays: ClusterArrays, weights: np.ndarray) -> np.ndarray:
    return np.bincount(arrays.rep_broker, weights=weights, minlength=arrays.n_brokers + 1)[: arrays.n_brokers]


def _leader_replicas(arrays: ClusterArrays) -> np.ndarray:
    """Which replica leads each partition: the current leader when it is a replica, else the first replica."""
    is_current = (arrays.rep_broker == arrays.part_leader[arrays.rep_part]) & (arrays.part_leader[arrays.rep_part] >= 0)
    led = np.zeros(len(arrays.part_rf), dtype=bool)
    led[arrays.rep_part[is_current]] = True
    return is_current | (~led[arrays.rep_part] & (arrays.rep_pos == 0))


def _shares(snapshot: ClusterSnapshot, demands, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-partition bytes-in, consumer bytes-out and storage, aligned with ``snapshot.partitions``."""
    b_in, b_out, storage = np.zeros(n), np.zeros(n), np.zeros(n)
    i = 0
    for topic, parts in sorted(snapshot.partitions_by_topic.items()):
        shares = demands[topic].partitions
        k = len(parts)
        b_in[i : i + k] = [s.bytes_in for s in shares]
        b_out[i : i + k] = [s.bytes_out for s in shares]
        storage[i : i + k] = [s.storage for s in shares]
        i += k
    return b_in, b_out, storage
