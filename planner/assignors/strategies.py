"""Kafka's consumer assignors, client and server side, as one enum parsed once at the edge (CLI, config, the
contract functions `planner.assignors.assign` and `assign_server`)."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from planner.assignors.errors import AssignorError

__all__ = ["Assignor", "DEFAULT_ASSIGNORS", "Side"]

Side = Literal["client", "server"]
"""Who runs an assignor: the group leader (``partition.assignment.strategy``) or, under KIP-848's consumer
protocol, the group coordinator (``group.consumer.assignors``)."""


class Assignor(StrEnum):
    """Every assignor poolplan runs, by the name its CLI and ``consumers.toml`` use.

    The client assignors keep their ``partition.assignment.strategy`` names; the KIP-848 server assignors their
    ``group.consumer.assignors`` names, except that Kafka calls both range assignors ``range``: where either can be
    named, the server one is ``server-range``. `kafka_name` is the name in Kafka's own configuration, and `parse`
    with a ``side`` reads that name.

    >>> Assignor.SERVER_RANGE.kafka_name, Assignor.SERVER_RANGE.side, Assignor.RANGE.side
    ('range', 'server', 'client')
    """

    RANGE = "range"
    ROUNDROBIN = "roundrobin"
    STICKY = "sticky"
    COOPERATIVE_STICKY = "cooperative-sticky"
    UNIFORM = "uniform"
    SERVER_RANGE = "server-range"

    @property
    def side(self) -> Side:
        """``server`` for the KIP-848 assignors the group coordinator runs, else ``client``."""
        return "server" if self in (Assignor.UNIFORM, Assignor.SERVER_RANGE) else "client"

    @property
    def server_side(self) -> bool:
        """True for the KIP-848 assignors the group coordinator runs."""
        return self.side == "server"

    @property
    def kafka_name(self) -> str:
        """The name in Kafka's configuration: ``range`` for both range assignors."""
        return "range" if self is Assignor.SERVER_RANGE else self.value

    @property
    def range_like(self) -> bool:
        """True when partition 0 of every topic goes to the first member however many join (range assignors)."""
        return self in (Assignor.RANGE, Assignor.SERVER_RANGE)

    @classmethod
    def parse(cls, value: object, *, where: str = "strategy", side: Side | None = None) -> Assignor:
        """``value`` as an `Assignor`, else an `AssignorError` (an `InputError`) naming ``where`` and the choices.

        Without ``side`` every assignor is read by its poolplan name; with one, only that side's assignors, by
        their Kafka names (so ``range`` with ``side="server"`` is `SERVER_RANGE`). An `Assignor` of that side is
        taken as it is.

        >>> Assignor.parse("cooperative-sticky") is Assignor.COOPERATIVE_STICKY
        True
        >>> Assignor.parse("range", side="server") is Assignor.SERVER_RANGE
        True
        >>> Assignor.parse("fair", where="--strategy")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        planner.assignors.errors.AssignorError: --strategy: unknown assignor 'fair'; expected one of range, roundrobin,
        sticky, cooperative-sticky, uniform, server-range
        >>> Assignor.parse("sticky", side="server")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        planner.assignors.errors.AssignorError: strategy: unknown server assignor 'sticky'; expected one of uniform,
        range
        """
        choices = {a.value: a for a in cls} if side is None else {a.kafka_name: a for a in cls if a.side == side}
        if isinstance(value, cls) and (side is None or value.side == side):
            return value
        if isinstance(value, str) and not isinstance(value, cls) and value in choices:
            return choices[value]
        kind = "assignor" if side is None else f"{side} assignor"
        shown = value.value if isinstance(value, cls) else value
        raise AssignorError(f"{where}: unknown {kind} {shown!r}; expected one of {', '.join(choices)}")


#: The assignors compared when none are named (eager ``sticky`` balances as ``cooperative-sticky`` does).
DEFAULT_ASSIGNORS: tuple[Assignor, ...] = (
    Assignor.RANGE, Assignor.ROUNDROBIN, Assignor.COOPERATIVE_STICKY, Assignor.UNIFORM, Assignor.SERVER_RANGE,
)
