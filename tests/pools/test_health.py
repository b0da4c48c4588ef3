"""Cluster health: brokers gone from the snapshot are drained, their partitions evacuated where a leader is left."""

from __future__ import annotations

from pools.health import cluster_health
from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState


def test_replicas_on_a_broker_gone_from_the_snapshot_are_evacuated_where_the_leader_is_in_sync() -> None:
    cap = Capacity(1, 1, 1, 1)
    parts = (PartitionState("t", 0, (3, 1, 2), leader=1, isr=(1, 2)),   # only trouble: gone broker 3
             PartitionState("t", 1, (1, 3), leader=None, isr=(3,)),     # offline: nothing to copy from
             PartitionState("t", 2, (1, 2, 3), leader=1, isr=(1,)))     # broker 2 out of sync too: held
    health = cluster_health(ClusterSnapshot("c", (Broker(1, "a", cap), Broker(2, "b", cap)), (), parts))
    assert dict(health.evacuated) == {("t", 0): "under-replicated"} and health.drained == (3,)
    assert dict(health.partitions) == {("t", 1): "offline", ("t", 2): "under-replicated"}


def test_a_snapshot_listing_every_broker_drains_none() -> None:
    cap = Capacity(1, 1, 1, 1)
    parts = (PartitionState("t", 0, (2, 1), leader=1, isr=(1,)),)
    health = cluster_health(ClusterSnapshot("c", (Broker(1, "a", cap), Broker(2, "b", cap)), (), parts))
    assert not health.evacuated and health.drained == () and dict(health.partitions) == {("t", 0): "under-replicated"}
