"""`poolplan emit`: turn a plan into the reassignment bundle operators run with Kafka's tools."""

from __future__ import annotations

import click
from rich.console import Console

from planner.cli.options import FINITE
from pools.errors import InputError
from pools.throttle import DEFAULT_THROTTLE_FRACTION

__all__ = ["command", "validate_emit_options"]

_console = Console(stderr=True, highlight=False, soft_wrap=True)


def validate_emit_options(
    moves_per_broker: int, partitions_per_batch: int | None, bytes_per_batch: int | None, throttle_fraction: float
) -> None:
    """Cross-option rules: limits are positive, the throttle fraction lies in (0, 1]."""
    if moves_per_broker < 1:
        raise InputError(f"--max-moves-per-broker: expected >= 1, got {moves_per_broker}")
    if partitions_per_batch is not None and partitions_per_batch < 1:
        raise InputError(f"--max-partitions-per-batch: expected >= 1, got {partitions_per_batch}")
    if bytes_per_batch is not None and bytes_per_batch < 1:
        raise InputError(f"--max-bytes-per-batch: expected >= 1, got {bytes_per_batch}")
    if not 0 < throttle_fraction <= 1:
        raise InputError(f"--throttle-fraction: expected a number in (0, 1], got {throttle_fraction}")


@click.command(name="emit")
@click.option("--plan", "plan_path", required=True, type=click.Path(dir_okay=False), help="plan.json from `poolplan plan`.")
@click.option(
    "--snapshot", "snapshot_path", required=True, type=click.Path(dir_okay=False),
    help="Cluster snapshot the plan was made from.",
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
    "--bootstrap-server", default="<BOOTSTRAP_SERVERS>", show_default=True,
    help="Value written into the runbook's commands.",
)
@click.option("--force", is_flag=True, help="Replace an existing bundle directory.")
def command(
    plan_path: str,
    snapshot_path: str,
    out_dir: str,
    max_moves_per_broker: int,
    max_partitions_per_batch: int | None,
    max_bytes_per_batch: int | None,
    throttle_fraction: float,
    leader_preserving: bool,
    bootstrap_server: str,
    force: bool,
) -> int:
    """Write reassignment.json, rollback.json, batches/, leader-election.json, runbook.md and summary.json.

    Every reassignment file is checked with the Kafka-exact parser against the snapshot before anything is
    written; the bundle directory appears atomically and the same plan always gives the same bytes.
    """
    from planner.emit import BatchLimits, EmitOptions, build_bundle, write_bundle
    from pools.atomic import check_output
    from pools.plan import load_plan
    from pools.snapshot import load_snapshot

    validate_emit_options(max_moves_per_broker, max_partitions_per_batch, max_bytes_per_batch, throttle_fraction)
    check_output(out_dir, overwrite=force)
    options = EmitOptions(
        limits=BatchLimits(max_moves_per_broker, max_partitions_per_batch, max_bytes_per_batch),
        leader_preserving=leader_preserving,
        throttle_fraction=throttle_fraction,
        bootstrap=bootstrap_server,
    )
    files = build_bundle(load_plan(plan_path), load_snapshot(snapshot_path), options, plan_source=plan_path)
    write_bundle(out_dir, files, overwrite=force)
    batches = sum(1 for name in files if name.startswith("batches/") and name != "batches/index.json")
    _console.print(f"bundle: {out_dir} ({batches} batch{'es' if batches != 1 else ''}, {len(files)} files)")
    return 0
