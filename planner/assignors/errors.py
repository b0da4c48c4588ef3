"""The error the consumer assignors raise, carrying Kafka's message."""

from __future__ import annotations

__all__ = ["AssignorError"]

from pools.errors import InputError


class AssignorError(InputError):
    """An assignor rejected its input or reached a state Kafka's assignor raises on.

    ``str()`` is the message Kafka's Java code gives for the same case (for example the
    `IllegalStateException` texts of `AbstractStickyAssignor`), or, for malformed plain data, a
    message naming the field and what was expected.
    """
