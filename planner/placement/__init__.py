"""Kafka-exact replica placement: `AdminUtils.assignReplicasToBrokers` and the KRaft `StripedReplicaPlacer`."""

from __future__ import annotations

__all__ = [
    "assign_replicas_to_brokers",
    "striped_place",
    "PlacementError",
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "AdminOperationError",
    "IllegalArgumentError",
]

from planner.placement.adminutils import assign_replicas_to_brokers
from planner.placement.errors import (
    AdminOperationError,
    IllegalArgumentError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    PlacementError,
)
from planner.placement.striped import striped_place
