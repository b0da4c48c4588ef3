"""`poolplan emit`: turn a plan into the reassignment bundle operators run with Kafka's tools."""

from __future__ import annotations

from typing import Any

import click

from planner.cli.options import FINITE, renamed_option, take_renamed
from planner.cli.stage import Outcome, Stage, run_command
from planner.stages.emit import LOG_DIR_PLACEMENTS, EmitResult, EmitStageOptions, emit
from pools.units import format_plural
from pools.throttle import DEFAULT_THROTTLE_FRACTION

__all__ = ["command", "STAGE"]


@click.command(name="emit")
@click.option("--plan", "plan_path", required=True, type=click.Path(dir_okay=False),
    help="plan.json from `poolplan plan`.")
@click.option(
    "--snapshot", "snapshot_path", required=True, type=click.Path(dir_okay=False),
    help="Cluster snapshot the plan was made from (with --rebase-wave: one taken after the earlier waves ran).",
)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Bundle directory to write.")
@click.option(
    "--max-moves-per-broker", default=5, show_default=True, type=int,
    help="Concurrent partition movements per broker in a batch (Cruise Control's default).",
)
@click.option("--max-partitions-per-batch", default=None, type=int, help="Partitions per batch (default: no limit).")
@click.option("--max-bytes-per-batch", default=None, type=int, help="Bytes copied per batch (default: no limit).")
@click.option(
    "--throttle-fraction", default=DEFAULT_THROTTLE_FRACTION, show_default=True, type=FINITE,
    help="Share of the busiest involved broker's spare network capacity (at forecast peak) replication may use.",
)
@click.option(
    "--leader-preserving/--no-leader-preserving", default=False, show_default=True,
    help="Copy data with the current leader kept first, then set the final leaders in a second phase.",
)
@click.option(
    "--round-robin", is_flag=True,
    help="Fill each batch one move per destination broker in turn, spreading copies over the brokers.",
)
@click.option(
    "--one-replica-at-a-time", is_flag=True,
    help="At most one new replica per partition at a time: a partition moving k replicas takes k steps.",
)
@click.option(
    "--bootstrap-server", default="<BOOTSTRAP_SERVERS>", show_default=True,
    help="Value written into the runbook's commands.",
)
@click.option(
    "--wave-bytes", type=int, default=None,
    help="Cut the plan into waves copying at most this many bytes each (a larger move runs alone); every wave "
         "leaves each broker within headroom or no worse than before, and is a complete bundle under wave-NNN/.",
)
@click.option("--wave-hours", type=FINITE, default=None,
              help="Cut the plan into waves of about this many hours each at the planned throttles.")
@click.option(
    "--rebase-wave", type=int, default=None,
    help="Re-derive wave N of the waves --wave-bytes/--wave-hours cut, from a --snapshot taken after the earlier "
         "waves ran: the same targets where the cluster is as planned (its bundle in --out, rollback from the "
         "cluster as it is), refused naming the drift where it is not.",
)
@click.option("--profile", "profile_dir", type=click.Path(), default=None,
              help="Topic profile for the waves' broker loads (default: size as disk, one replica, no traffic).")
@click.option(
    "--kafka-version", default=None,
    help="The cluster's Kafka version (e.g. 4.3.1): from 4.3 a drain's runbook cordons the drained brokers first; "
         "unknown: the step is marked 'Kafka 4.3 or later'.",
)
@click.option(
    "--log-dir-placement", type=click.Choice(LOG_DIR_PLACEMENTS), default="any", show_default=True,
    help="balance: name the log dir of each new replica on a JBOD broker (its emptiest open dir) and even out each "
         "broker's dirs with moves inside it (log-dirs/broker-N.json, own throttle); any: let the broker choose.",
)
@renamed_option("--log-dirs", "--log-dir-placement", type=click.Choice(LOG_DIR_PLACEMENTS))
@click.option("--force", is_flag=True, help="Replace an existing bundle directory.")
def command(**params: Any) -> int:
    """Write reassignment.json, rollback.json, batches/, leader-election.json, runbook.md and summary.json.

    Every reassignment file is checked with the Kafka-exact parser against the snapshot before anything is
    written; the bundle directory appears atomically and the same plan always gives the same bytes.
    """
    return run_command(STAGE, params)


def _outcome(result: EmitResult) -> Outcome:
    waves = f"{format_plural(result.waves, 'wave')}, " if result.waves else ""
    return Outcome(subject="bundle", summary=f"{waves}{format_plural(result.batches, 'batch', 'batches')}, "
                   f"{format_plural(result.files, 'file')}", written=result.out_dir)


def _options(params: dict[str, Any]) -> EmitStageOptions:
    options = dict(params)
    take_renamed(options, "--log-dirs", "--log-dir-placement", "log_dir_placement")
    return EmitStageOptions(**options)


STAGE = Stage("emit", command, _options, emit, _outcome, stdout=False)
