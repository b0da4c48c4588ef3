"""`poolplan whatif`: a run's inputs changed by a scenario, planned and reported again against the run."""

from __future__ import annotations

from typing import Any

import click

from planner.cli.options import FiniteRange
from planner.cli.stage import Outcome, Stage, run_command
from planner.stages.whatif import WhatifOptions, WhatifResult, whatif

__all__ = ["command", "STAGE"]


@click.command(name="whatif")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--policy", "policy_path", required=True, type=click.Path(dir_okay=False),
              help="The pool policy the run was planned with (TOML).")
@click.option("--scenario", "scenario_path", type=click.Path(dir_okay=False),
              help="Scenario file (TOML: [[demand]], [[add_brokers]], [[move_tenant]], [[lose_rack]]; see "
                   "docs/formats.md).")
@click.option("--demand", multiple=True, metavar="tenant:NAME=K|pool:NAME=K",
              help="A tenant's or pool's topics at K times their traffic and size (repeatable).")
@click.option("--add-brokers", multiple=True, metavar="POOL=N",
              help="N brokers of the policy's [new_broker] type join POOL (repeatable).")
@click.option("--move-tenant", multiple=True, metavar="TENANT=POOL", help="TENANT's topics go to POOL (repeatable).")
@click.option("--lose-rack", multiple=True, metavar="RACK",
              help="Every broker of RACK is gone: its replicas are lost, leaders move, what is left is planned "
                   "(repeatable).")
@click.option("--consumer-groups", "groups_path", type=click.Path(dir_okay=False),
              help="kafka-consumer-groups.sh --describe output, as the run's plan used it.")
@click.option("--time-limit", default=60.0, show_default=True, type=FiniteRange(min=1),
              help="Wall-clock safety net for the plan's solving, seconds (work limits end every search; a plan "
                   "the net cuts says so in its warnings).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="Output directory [default: RUN_DIR/whatif]: the changed inputs, plan/ and report/.")
def command(**params: Any) -> int:
    """Answer a what-if on RUN_DIR: change its inputs by a scenario, plan them, and write the report compared
    with the run (runway, N−1, brokers to add and their cost, and what changed)."""
    return run_command(STAGE, params)


def _outcome(result: WhatifResult) -> Outcome:
    lost = result.lost
    if lost is not None and lost.get("plan_refused"):
        said = f"reported without a plan, which the racks left cannot make: {lost['plan_refused']}"
    else:
        said = "planned and reported" + (f"; the pools lack: {'; '.join(result.shortfall)}" if result.shortfall
                                         else "; it fits")
    if lost is not None:
        said += (f"; losing rack(s) {', '.join(lost['racks'])} (broker(s) {', '.join(map(str, lost['brokers']))}) "
                 f"leaves {len(lost['under_replicated']):,d} partition(s) under-replicated and "
                 f"{len(lost['offline']):,d} offline; {len(lost['rf_unmet']):,d} have a replication factor above the "
                 f"{len(lost['racks_left'])} rack(s) left" + (f"; planned with the rack rules relaxed: "
                                                               f"{'; '.join(lost['relaxed'])}" if lost.get("relaxed")
                                                               else "") + f" ({result.out_dir / 'lost_racks.json'})")
    code = 1 if lost is not None and lost.get("plan_refused") else 0
    return Outcome(subject="what-if", summary=said, written=result.html, code=code,
                   headline=f"what-if: {result.html}")


STAGE = Stage("whatif", command, lambda params: WhatifOptions(**params), whatif, _outcome)
