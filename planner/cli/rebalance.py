"""`poolplan rebalance`: bring every broker of a pool within a band of its mean; write plan.json."""

from __future__ import annotations

from typing import Any

import click

from planner.cli.brokers import operation_options, operation_outcome
from planner.cli.options import FiniteRange
from planner.cli.stage import Stage, run_command
from planner.stages.operations import RebalanceOptions, rebalance

__all__ = ["command", "STAGE"]

_DIMENSIONS = ("nw_in", "nw_out", "disk", "replicas", "leaders", "leader_nw_in")


def _dimension_bands(values: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """``DIMENSION=FRACTION`` pairs, checked.

    >>> _dimension_bands(("disk=0.05", "nw_in=0.2"))
    (('disk', 0.05), ('nw_in', 0.2))
    """
    out = {}
    for value in values:
        name, _, fraction = value.partition("=")
        try:
            beta = float(fraction)
        except ValueError:
            beta = float("nan")
        if name not in _DIMENSIONS or not 0 <= beta <= 1:
            raise click.BadParameter(f"expected DIMENSION=FRACTION with a dimension of {', '.join(_DIMENSIONS)} "
                                     f"and a fraction from 0 to 1, got {value!r}")
        out[name] = beta
    return tuple(sorted(out.items()))


@click.command(name="rebalance")
@operation_options
@click.option("--pool", "pools", multiple=True, help="A pool to rebalance (repeatable) [default: every pool].")
@click.option("--band", default=0.10, show_default=True, type=FiniteRange(min=0, max=1),
              help="Allowed deviation from the pool's mean utilisation, as a fraction of it (0.1 = Cruise "
                   "Control's balance threshold 1.10).")
@click.option("--dimension", "dimensions", multiple=True, type=click.Choice(_DIMENSIONS),
              help="A dimension to balance (repeatable) [default: all six].")
@click.option("--dimension-band", "dimension_bands", multiple=True, metavar="DIMENSION=FRACTION",
              callback=lambda ctx, param, value: _dimension_bands(value),
              help="A band of its own for one dimension, e.g. disk=0.05 (repeatable) [default: --band].")
@click.option("--max-moved-bytes", type=click.IntRange(min=0),
              help="Bytes each pool may copy at most; then the best balance within them [default: no limit].")
@click.option("--max-moved-bytes-total", type=click.IntRange(min=0),
              help="Bytes the whole rebalance may copy at most, over every pool (the pools furthest from the band "
                   "first) [default: no limit].")
@click.option("--leaders-only", is_flag=True,
              help="Move preferred leaders only, copying nothing (instead of --max-moved-bytes 0).")
@click.option("--exclude-topic", "exclude_topics", multiple=True,
              help="A topic name or full-match regular expression whose partitions stay as they are (repeatable).")
@click.option("--exclude-broker", "exclude_brokers", multiple=True, type=click.IntRange(min=0, max=2**31 - 1),
              help="A broker that takes no new replica; it may give some (repeatable).")
def command(**params: Any) -> int:
    """Rebalance pools: every broker within --band of its pool's mean utilisation in network in and out, disk,
    replicas, leaders and leaders' bytes-in, at the fewest moved bytes; preferred-leader changes (no copy) first,
    rack spread kept, no replica leaving its pool.

    Writes OUT/plan.json for `poolplan emit`; prints each pool's spread before and after and the bytes moved
    against a lower bound. Exit 0 with a plan (what stays outside the band is a warning); 2 on bad input.
    """
    return run_command(STAGE, params)


STAGE = Stage("rebalance", command, lambda params: RebalanceOptions(**params), rebalance, operation_outcome)
