"""The consumer assignors sizing and simulation compare, as one enum parsed once at the edge (CLI, config, script)."""

from __future__ import annotations

from enum import StrEnum

from pools.errors import InputError

__all__ = ["Assignor", "DEFAULT_ASSIGNORS"]


class Assignor(StrEnum):
    """Client assignors by their ``partition.assignment.strategy`` names, then the KIP-848 broker-side ``uniform``
    and ``range`` (called ``server-range`` here to tell it apart from the client one)."""

    RANGE = "range"
    ROUNDROBIN = "roundrobin"
    STICKY = "sticky"
    COOPERATIVE_STICKY = "cooperative-sticky"
    UNIFORM = "uniform"
    SERVER_RANGE = "server-range"

    @property
    def server_side(self) -> bool:
        """True for the KIP-848 assignors the group coordinator runs."""
        return self in (Assignor.UNIFORM, Assignor.SERVER_RANGE)

    @property
    def range_like(self) -> bool:
        """True when partition 0 of every topic goes to the first member however many join (range assignors)."""
        return self in (Assignor.RANGE, Assignor.SERVER_RANGE)

    @classmethod
    def parse(cls, value: object, *, where: str = "strategy") -> Assignor:
        """``value`` as an `Assignor`, else an `InputError` naming ``where`` and the choices.

        >>> Assignor.parse("cooperative-sticky") is Assignor.COOPERATIVE_STICKY
        True
        >>> Assignor.parse("fair", where="--strategy")
        Traceback (most recent call last):
        ...
        pools.errors.InputError: --strategy: unknown assignor 'fair'; expected one of range, roundrobin, sticky, cooperative-sticky, uniform, server-range
        """
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(a.value for a in cls)
            raise InputError(f"{where}: unknown assignor {value!r}; expected one of {names}") from None


#: The assignors compared when none are named (eager ``sticky`` balances as ``cooperative-sticky`` does).
DEFAULT_ASSIGNORS: tuple[Assignor, ...] = (
    Assignor.RANGE, Assignor.ROUNDROBIN, Assignor.COOPERATIVE_STICKY, Assignor.UNIFORM, Assignor.SERVER_RANGE,
)
