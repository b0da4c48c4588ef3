"""Option types every subcommand shares: numbers must be finite (click's FLOAT reads ``nan`` and ``inf``)."""

from __future__ import annotations

import math
from typing import Any

import click

__all__ = ["FINITE", "FiniteRange"]


class FiniteRange(click.FloatRange):
    """A `click.FloatRange` that also rejects ``nan`` and ``inf`` (which compare false against any bound)."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)


#: Any finite float.
FINITE = FiniteRange()
