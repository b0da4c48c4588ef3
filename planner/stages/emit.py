"""The emit stage: a plan turned into the reassignment bundle operators run with Kafka's tools."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pools.errors import InputError
from pools.progress import Progress, no_progress

__all__ = ["EmitStageOptions", "EmitResult", "emit", "validate_emit_options"]


@dataclass(frozen=True)
class EmitStageOptions:
    """The options of ``poolplan emit`` (the bundle's own settings are `planner.emit.EmitOptions`)."""

    plan_path: str
    snapshot_path: str
    out_dir: str
    max_moves_per_broker: int
    throttle_fraction: float
    leader_preserving: bool
    bootstrap_server: str
    max_partitions_per_batch: int | None = None
    max_bytes_per_batch: int | None = None
    force: bool = False
    kafka_version: str | None = None
    log_dirs: str = "any"


@dataclass(frozen=True)
class EmitResult:
    """The bundle directory, its batches and its files."""

    out_dir: Path
    batches: int
    files: int


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


def emit(options: EmitStageOptions, *, progress: Progress = no_progress) -> EmitResult:
    """Write reassignment.json, rollback.json, batches/, leader-election.json, runbook.md and summary.json.

    Every reassignment file is checked with the Kafka-exact parser against the snapshot before anything is
    written; the bundle directory appears atomically and the same plan always gives the same bytes.

    Raises
    ------
    InputError
        For a bad option, an unreadable input, a plan that does not match the snapshot or an existing output
        (without ``force``).
    """
    from planner.emit import BatchLimits, EmitOptions, build_bundle, write_bundle
    from planner.emit.runbook import parse_kafka_version
    from pools.atomic import check_output
    from pools.plan import load_plan
    from pools.snapshot import load_snapshot

    validate_emit_options(options.max_moves_per_broker, options.max_partitions_per_batch,
                          options.max_bytes_per_batch, options.throttle_fraction)
    if options.kafka_version is not None:
        parse_kafka_version(options.kafka_version)
    check_output(options.out_dir, overwrite=options.force)
    bundle = EmitOptions(
        limits=BatchLimits(options.max_moves_per_broker, options.max_partitions_per_batch, options.max_bytes_per_batch),
        leader_preserving=options.leader_preserving,
        throttle_fraction=options.throttle_fraction,
        bootstrap=options.bootstrap_server,
        kafka_version=options.kafka_version,
        log_dirs=options.log_dirs,
    )
    progress("reading the plan and the snapshot")
    plan, snapshot = load_plan(options.plan_path), load_snapshot(options.snapshot_path)
    files = build_bundle(plan, snapshot, bundle, plan_source=options.plan_path, progress=progress)
    progress("writing the bundle")
    out = write_bundle(options.out_dir, files, overwrite=options.force)
    batches = sum(1 for name in files if name.startswith("batches/") and name != "batches/index.json")
    return EmitResult(out, batches, len(files))
