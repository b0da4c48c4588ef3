"""The emit stage: a plan turned into the reassignment bundle operators run with Kafka's tools."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pools.errors import InputError
from pools.progress import ProgressReporter, no_progress

__all__ = ["LOG_DIR_PLACEMENTS", "EmitStageOptions", "EmitResult", "emit", "validate_emit_options"]

#: ``--log-dir-placement``: ``any`` lets each broker choose a new replica's log dir; ``balance`` names one on JBOD
#: brokers and evens out their dirs (`planner.emit.log_dirs`).
LOG_DIR_PLACEMENTS = ("any", "balance")


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
    one_replica_at_a_time: bool = False
    round_robin: bool = False
    wave_bytes: int | None = None
    wave_hours: float | None = None
    profile_dir: str | None = None
    kafka_version: str | None = None
    log_dir_placement: str = "any"
    rebase_wave: int | None = None


@dataclass(frozen=True)
class EmitResult:
    """The bundle directory, its batches and its files."""

    out_dir: Path
    batches: int
    files: int
    waves: int = 0


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


def emit(options: EmitStageOptions, *, progress: ProgressReporter = no_progress) -> EmitResult:
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
    from planner.emit.waves import wave_bundles
    from planner.emit.runbook import parse_kafka_version
    from pools.atomic import check_output
    from pools.new_brokers import with_planned_brokers
    from pools.plan_file import load_plan
    from pools.snapshot import load_snapshot

    validate_emit_options(options.max_moves_per_broker, options.max_partitions_per_batch,
                          options.max_bytes_per_batch, options.throttle_fraction)
    if options.wave_bytes is not None and options.wave_bytes < 1:
        raise InputError(f"--wave-bytes: expected >= 1, got {options.wave_bytes}")
    if options.wave_hours is not None and not options.wave_hours > 0:
        raise InputError(f"--wave-hours: expected a number of hours > 0, got {options.wave_hours}")
    if options.rebase_wave is not None and options.rebase_wave < 1:
        raise InputError(f"--rebase-wave: expected a wave number >= 1, got {options.rebase_wave}")
    if options.kafka_version is not None:
        parse_kafka_version(options.kafka_version)
    check_output(options.out_dir, overwrite=options.force)
    bundle = EmitOptions(
        limits=BatchLimits(options.max_moves_per_broker, options.max_partitions_per_batch, options.max_bytes_per_batch,
                           options.round_robin),
        leader_preserving=options.leader_preserving,
        one_replica_at_a_time=options.one_replica_at_a_time,
        throttle_fraction=options.throttle_fraction,
        bootstrap=options.bootstrap_server,
        kafka_version=options.kafka_version,
        log_dir_placement=options.log_dir_placement,
    )
    progress("reading the plan and the snapshot")
    plan, snapshot = load_plan(options.plan_path), load_snapshot(options.snapshot_path)
    snapshot = with_planned_brokers(snapshot, plan.planned_brokers)  # brokers still to buy, as the bundle runs
    if options.rebase_wave is not None:
        files = _rebase(options, plan, snapshot, bundle, progress)
    else:
        files = build_bundle(plan, snapshot, bundle, plan_source=options.plan_path, progress=progress)
        if options.wave_bytes is not None or options.wave_hours is not None:
            one_shot = files
            files = wave_bundles(plan, snapshot, _cut(options, plan, snapshot, lambda: one_shot, progress), bundle)
    progress("writing the bundle")
    out = write_bundle(options.out_dir, files, overwrite=options.force)
    batches = sum(1 for name in files if "batches/" in name and not name.endswith("batches/index.json"))
    return EmitResult(out, batches, len(files), sum(1 for name in files if name.endswith("/reassignment.json")))


def _rebase(options: EmitStageOptions, plan, fresh, bundle, progress: ProgressReporter) -> dict[str, str]:
    """Wave ``--rebase-wave`` re-derived from the fresh ``--snapshot`` (`planner.emit.rebase`): the plan's waves cut
    again, with the same budget, on the cluster as planned, then wave N checked against the fresh cluster."""
    from planner.emit import build_bundle
    from planner.emit.rebase import as_planned, rebase_wave

    if options.wave_bytes is None and options.wave_hours is None:
        raise InputError("--rebase-wave: expected the --wave-bytes or --wave-hours (and --profile) the waves were "
                         "cut with")
    planned = as_planned(plan, fresh)
    waves = _cut(options, plan, planned, lambda: build_bundle(plan, planned, bundle, plan_source=options.plan_path),
                 progress)
    return rebase_wave(plan, fresh, waves, options.rebase_wave, bundle)


def _cut(options: EmitStageOptions, plan, snapshot, one_shot: Callable[[], dict[str, str]], progress: ProgressReporter):
    """The plan's waves (`planner.emit.waves.cut_waves`), loads at the plan's forecast from ``--profile`` (without
    it a partition carries its size as disk and one replica, and no traffic). ``--wave-hours`` becomes bytes at the
    one-shot bundle's (``one_shot()``) average planned copy rate (its bytes over its estimated time at the
    throttles); with both options the smaller budget wins."""
    import json

    from planner.emit.waves import cut_waves
    from pools.demand import at_horizon, topic_demand
    from pools.profile import load_profile_dir

    profile = partitions = None
    if options.profile_dir is not None:
        profile, partitions = load_profile_dir(options.profile_dir)
    rows = at_horizon(profile, plan.horizon_days) if profile is not None and plan.horizon_days is not None else (
        profile or {})
    demands = topic_demand(snapshot, rows, None, "forecast", partition_profile=partitions)
    budgets = [options.wave_bytes] if options.wave_bytes is not None else []
    if options.wave_hours is not None:
        summary = json.loads(one_shot()["summary.json"])
        rate = summary["moved_bytes"] / summary["estimated_seconds"] if summary["estimated_seconds"] else 0.0
        budgets.append(max(1, int(rate * options.wave_hours * 3600)))
    progress("cutting the plan into waves")
    return cut_waves(plan, snapshot, demands, min(budgets))
