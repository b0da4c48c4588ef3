"""Placement errors named after the Kafka exceptions they mirror; ``str()`` is Kafka's message."""

from __future__ import annotations

__all__ = [
    "PlacementError",
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "AdminOperationError",
    "IllegalArgumentError",
]

from pools.errors import InputError


class PlacementError(InputError):
    """A placement request Kafka would reject (exit code 2).

    Also raised, with the JVM's message, where Kafka's code fails with a runtime exception
    (``ArithmeticException``, ``ArrayIndexOutOfBoundsException``) on inputs its callers never pass.
    """


class InvalidPartitionsError(PlacementError):
    """`org.apache.kafka.common.errors.InvalidPartitionsException`."""


class InvalidReplicationFactorError(PlacementError):
    """`org.apache.kafka.common.errors.InvalidReplicationFactorException`."""


class AdminOperationError(PlacementError):
    """`org.apache.kafka.server.common.AdminOperationException`."""


class IllegalArgumentError(PlacementError):
    """`java.lang.IllegalArgumentException` (a negative partition count reaching the placer)."""
