"""The snapshot stage: kafka-topics/kafka-log-dirs output and the broker inventory joined into snapshot.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pools.capture_time import taken_at_from_name
from pools.errors import InputError
from pools.progress import Progress, no_progress

__all__ = ["SnapshotOptions", "SnapshotResult", "snapshot", "latest_log_dirs"]

if TYPE_CHECKING:
    from pools.snapshot import ClusterSnapshot


@dataclass(frozen=True)
class SnapshotOptions:
    """The options of ``poolplan snapshot``."""

    describe_path: str
    inventory_path: str
    out_path: str
    cluster: str
    log_dirs_path: str | None = None
    taken_at: str | None = None
    broker_configs_path: str | None = None


@dataclass(frozen=True)
class SnapshotResult:
    """The snapshot written and where."""

    out_path: Path
    snapshot: ClusterSnapshot


def snapshot(options: SnapshotOptions, *, progress: Progress = no_progress) -> SnapshotResult:
    """Build the cluster snapshot (brokers, topics, every partition with replica sizes and log dirs) and save it.

    Raises
    ------
    InputError
        For an unreadable or malformed input (naming the file and line) or a ``taken_at`` that is not ISO-8601.
    """
    from pools.atomic import check_output
    from pools.files import load_toml, read_text
    from pools.kafka_formats.cruise_control import parse_capacity_json
    from pools.kafka_formats.inventory import inventory_from_dict
    from pools.snapshot import is_iso_time, save_snapshot
    from pools.snapshot_build import build_snapshot

    check_output(options.out_path, directory=False)
    if options.taken_at is not None and not is_iso_time(options.taken_at):
        raise InputError(f"--taken-at: expected an ISO-8601 time such as 2026-11-02T00:00:00Z, got {options.taken_at!r}")
    log_dirs_file = latest_log_dirs(Path(options.log_dirs_path)) if options.log_dirs_path else None
    progress("reading the broker inventory")
    if options.inventory_path.endswith(".json"):
        inventory = parse_capacity_json(read_text(options.inventory_path), source=options.inventory_path)
    else:
        inventory = inventory_from_dict(load_toml(options.inventory_path), source=options.inventory_path)
    progress("reading kafka-topics and kafka-log-dirs output")
    built = build_snapshot(
        read_text(options.describe_path),
        read_text(log_dirs_file) if log_dirs_file else None,
        inventory,
        cluster=options.cluster,
        taken_at=options.taken_at or (taken_at_from_name(log_dirs_file.name) if log_dirs_file else None),
        sources={"describe": options.describe_path, "log_dirs": str(log_dirs_file),
                 "broker_configs": str(options.broker_configs_path)},
        broker_configs_text=read_text(options.broker_configs_path) if options.broker_configs_path else None,
    )
    progress("writing the snapshot")
    save_snapshot(built, options.out_path)
    return SnapshotResult(Path(options.out_path), built)


def latest_log_dirs(path: Path) -> Path:
    """``path`` itself, or for a directory its last regular file by name (names carry the capture time)."""
    if not path.is_dir():
        return path
    try:
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    except OSError as exc:
        raise InputError(f"--log-dirs: {path}: cannot be listed ({exc.strerror or exc})") from None
    if not files:
        raise InputError(f"--log-dirs: {path}: directory has no files")
    return files[-1]
