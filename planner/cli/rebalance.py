"""`poolplan rebalance`: bring every broker of a pool within a band of its mean; write plan.json."""

from __future__ import annotations

import click

from planner.cli.brokers import finish, load_inputs, operation_options
from planner.cli.options import FiniteRange

__all__ = ["command"]

_DIMENSIONS = ("nw_in", "nw_out", "disk", "replicas", "leaders", "leader_nw_in")


@click.command(name="rebalance")
@operation_options
@click.option("--pool", "pools", multiple=True, help="A pool to rebalance (repeatable) [default: every pool].")
@click.option("--band", default=0.10, show_default=True, type=FiniteRange(min=0, max=1),
              help="Allowed deviation from the pool's mean utilisation, as a fraction of it (0.1 = Cruise "
                   "Control's balance threshold 1.10).")
@click.option("--dimension", "dimensions", multiple=True, type=click.Choice(_DIMENSIONS),
              help="A dimension to balance (repeatable) [default: all six].")
@click.option("--max-moved-bytes", type=click.IntRange(min=0),
              help="Bytes each pool may copy at most; then the best balance within them [default: no limit].")
def command(snapshot_path: str, policy_path: str, profile_dir: str | None, groups_path: str | None,
            horizon_days: int | None, out_dir: str, pools: tuple[str, ...], band: float,
            dimensions: tuple[str, ...], max_moved_bytes: int | None) -> int:
    """Rebalance pools: every broker within --band of its pool's mean utilisation in network in and out, disk,
    replicas, leaders and leaders' bytes-in, at the fewest moved bytes; preferred-leader changes (no copy) first,
    rack spread kept, no replica leaving its pool.

    Writes OUT/plan.json for `poolplan emit`; prints each pool's spread before and after and the bytes moved
    against a lower bound. Exit 0 with a plan (what stays outside the band is a warning); 2 on bad input.
    """
    from planner.operations import rebalance

    inputs = load_inputs(snapshot_path, policy_path, profile_dir, groups_path, horizon_days, out_dir)
    return finish(rebalance(inputs, pools=pools, band=band, dimensions=dimensions or _DIMENSIONS,
                            max_moved_bytes=max_moved_bytes), out_dir)
