"""The snapshot stage: kafka-topics/kafka-log-dirs output (saved, or captured now from a running cluster by Kafka's
own tools, `planner.capture`) and the broker inventory joined into snapshot.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pools.capture_time import taken_at_from_name
from pools.errors import InputError
from pools.progress import ProgressReporter, no_progress

__all__ = ["SnapshotOptions", "SnapshotResult", "snapshot", "latest_log_dirs"]

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pools.kafka_formats.inventory import BrokerCapacity
    from pools.snapshot import ClusterSnapshot

#: The directory beside the snapshot that holds the raw outputs of a capture (``--bootstrap-server``).
CAPTURE_DIR = "kafka"


@dataclass(frozen=True)
class SnapshotOptions:
    """The options of ``poolplan snapshot``: saved tool output (``describe_path`` ...) or a cluster to capture
    (``bootstrap_server`` with the tools' ``command_config``, ``kafka_bin`` and ``tool_timeout``), checked on
    construction."""

    inventory_path: str
    out_path: str
    cluster: str
    describe_path: str | None = None
    log_dirs_path: str | None = None
    taken_at: str | None = None
    broker_configs_path: str | None = None
    bootstrap_server: str | None = None
    command_config: str | None = None
    kafka_bin: str | None = None
    tool_timeout: float = 600.0

    def __post_init__(self) -> None:
        _check_sources(self)  # before any stage of a run: the run checks its config by building the options


@dataclass(frozen=True)
class SnapshotResult:
    """The snapshot written and where; ``captured``: the directory of the Kafka tools' raw output (a capture)."""

    out_path: Path
    snapshot: ClusterSnapshot
    captured: Path | None = None


def snapshot(options: SnapshotOptions, *, progress: ProgressReporter = no_progress) -> SnapshotResult:
    """Build the cluster snapshot (brokers, topics, every partition with replica sizes and log dirs) and save it.

    With ``bootstrap_server`` the Kafka tools' outputs are captured now into ``kafka/`` beside the snapshot
    (replaced with it; `planner.capture`) and read from there exactly as saved files are; the capture time is the
    snapshot's ``taken_at``.

    Raises
    ------
    InputError
        For an unreadable or malformed input (naming the file and line), a ``taken_at`` that is not ISO-8601,
        options of both ways at once, a missing Kafka tool or an unreadable ``command_config``.
    JobError
        When a Kafka tool fails (its own last line) or outlives ``tool_timeout``.
    """
    from pools.atomic import check_output
    from pools.files import read_text
    from pools.snapshot import is_iso_time

    check_output(options.out_path, directory=False)
    if options.bootstrap_server is not None:
        return _captured(options, progress)
    describe = options.describe_path or ""
    if options.taken_at is not None and not is_iso_time(options.taken_at):
        raise InputError("--taken-at: expected an ISO-8601 time such as 2026-11-02T00:00:00Z, "
                         f"got {options.taken_at!r}")
    log_dirs_file = latest_log_dirs(Path(options.log_dirs_path)) if options.log_dirs_path else None
    inventory = _inventory(options.inventory_path, progress)
    built = _build(
        read_text(describe), read_text(log_dirs_file) if log_dirs_file else None, inventory, options,
        options.taken_at or (taken_at_from_name(log_dirs_file.name) if log_dirs_file else None),
        {"describe": describe, "log_dirs": str(log_dirs_file), "broker_configs": str(options.broker_configs_path)},
        read_text(options.broker_configs_path) if options.broker_configs_path else None, progress)
    return SnapshotResult(Path(options.out_path), built)


def _inventory(path: str, progress: ProgressReporter) -> Mapping[int, BrokerCapacity]:
    """The broker inventory: ``brokers.toml``, or Cruise Control's ``capacity.json``."""
    from pools.files import load_toml, read_text
    from pools.kafka_formats.cruise_control import parse_capacity_json
    from pools.kafka_formats.inventory import inventory_from_dict

    progress("reading the broker inventory")
    if path.endswith(".json"):
        return parse_capacity_json(read_text(path), source=path)
    return inventory_from_dict(load_toml(path), source=path)


def _build(describe: str, log_dirs: str | None, inventory: Mapping[int, BrokerCapacity], options: SnapshotOptions,
           taken_at: str | None, sources: dict[str, str], broker_configs: str | None,
           progress: ProgressReporter) -> ClusterSnapshot:
    """The snapshot of the tools' outputs, saved to ``options.out_path``."""
    from pools.snapshot import save_snapshot
    from pools.snapshot_build import build_snapshot

    progress("reading kafka-topics and kafka-log-dirs output")
    built = build_snapshot(describe, log_dirs, inventory, cluster=options.cluster, taken_at=taken_at,
                           sources={**sources, "inventory": options.inventory_path},
                           broker_configs_text=broker_configs)
    progress("writing the snapshot")
    save_snapshot(built, options.out_path)
    return built


def _check_sources(options: SnapshotOptions) -> None:
    """Saved files or a running cluster, not both; the capture's options only with ``--bootstrap-server``."""
    saved = {"--describe": options.describe_path, "--log-dirs": options.log_dirs_path,
             "--broker-configs": options.broker_configs_path, "--taken-at": options.taken_at}
    if options.bootstrap_server is None:
        for name, value in {"--command-config": options.command_config, "--kafka-bin": options.kafka_bin}.items():
            if value is not None:
                raise InputError(f"{name}: only with --bootstrap-server (it configures the Kafka tools it runs)")
        if options.describe_path is None:
            raise InputError("--describe: expected kafka-topics.sh --describe output, or --bootstrap-server to "
                             "capture the cluster now")
        return
    given = [name for name, value in saved.items() if value is not None]
    if given:
        raise InputError(f"{given[0]}: not with --bootstrap-server (the capture takes every output itself, now)")


def _captured(options: SnapshotOptions, progress: ProgressReporter) -> SnapshotResult:
    """Capture the cluster with Kafka's tools into ``kafka/`` beside the snapshot, then build from the captures."""
    from datetime import datetime, timezone

    from planner.capture import capture, check_bootstrap, check_command_config, check_replaceable, find_tools
    from pools.atomic import atomic_dir
    from pools.files import read_text

    bootstrap = check_bootstrap(options.bootstrap_server or "")
    check_command_config(options.command_config)
    tools = find_tools(options.kafka_bin)
    inventory = _inventory(options.inventory_path, progress)
    target = Path(options.out_path).parent / CAPTURE_DIR
    check_replaceable(target)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    with atomic_dir(target, overwrite=True) as tmp:
        progress(f"capturing {bootstrap} with Kafka's tools")
        got = capture(tools, bootstrap, tmp, taken_at=now, command_config=options.command_config,
                      timeout=options.tool_timeout)
        final = {name: target / path.relative_to(tmp) for name, path in
                 {"describe": got.describe, "log_dirs": latest_log_dirs(got.log_dirs),
                  "broker_configs": got.broker_configs}.items()}
        built = _build(read_text(got.describe), read_text(latest_log_dirs(got.log_dirs)), inventory, options,
                       now.strftime("%Y-%m-%dT%H:%M:%SZ"), {k: str(v) for k, v in final.items()},
                       read_text(got.broker_configs), progress)
    return SnapshotResult(Path(options.out_path), built, target)


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
