"""`poolplan snapshot`: join kafka-topics/kafka-log-dirs output and the broker inventory into snapshot.json."""

from __future__ import annotations

import re
from pathlib import Path

import click
from rich.console import Console

__all__ = ["command", "latest_log_dirs", "taken_at_from_name"]

_console = Console(highlight=False, soft_wrap=True)
_STAMP = re.compile(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z")


@click.command(name="snapshot")
@click.option("--describe", "describe_path", required=True, type=click.Path(dir_okay=False),
              help="kafka-topics.sh --describe output.")
@click.option("--log-dirs", "log_dirs_path", type=click.Path(),
              help="kafka-log-dirs.sh --describe output, or a directory of them (the latest by name is used).")
@click.option("--inventory", "inventory_path", required=True, type=click.Path(dir_okay=False),
              help="Broker inventory: brokers.toml, or Cruise Control capacity.json.")
@click.option("--cluster", default="kafka", show_default=True, help="Cluster name.")
@click.option("--taken-at", default=None,
              help="Capture time (ISO-8601); default: the YYYYMMDDTHHMMSSZ stamp in the log-dirs file name.")
@click.option("--out", "out_path", default="snapshot.json", show_default=True, type=click.Path(dir_okay=False),
              help="Snapshot file to write (replaced atomically).")
def command(describe_path: str, log_dirs_path: str | None, inventory_path: str, cluster: str,
            taken_at: str | None, out_path: str) -> int:
    """Build a cluster snapshot (brokers, topics, every partition with replica sizes and log dirs)."""
    from pools.atomic import check_output
    from pools.files import load_toml, read_text
    from pools.kafka_formats.cruise_control import parse_capacity_json
    from pools.kafka_formats.inventory import inventory_from_dict
    from pools.errors import InputError
    from pools.snapshot import is_iso_time, save_snapshot
    from pools.snapshot_build import build_snapshot

    check_output(out_path, directory=False)
    if taken_at is not None and not is_iso_time(taken_at):
        raise InputError(f"--taken-at: expected an ISO-8601 time such as 2026-11-02T00:00:00Z, got {taken_at!r}")
    log_dirs_file = latest_log_dirs(Path(log_dirs_path)) if log_dirs_path else None
    if inventory_path.endswith(".json"):
        inventory = parse_capacity_json(read_text(inventory_path), source=inventory_path)
    else:
        inventory = inventory_from_dict(load_toml(inventory_path), source=inventory_path)
    snapshot = build_snapshot(
        read_text(describe_path),
        read_text(log_dirs_file) if log_dirs_file else None,
        inventory,
        cluster=cluster,
        taken_at=taken_at or (taken_at_from_name(log_dirs_file.name) if log_dirs_file else None),
        sources={"describe": describe_path, "log_dirs": str(log_dirs_file)},
    )
    save_snapshot(snapshot, out_path)
    _console.print(
        f"snapshot of {cluster}: {len(snapshot.brokers)} brokers, {len(snapshot.topics)} topics, "
        f"{len(snapshot.partitions)} partitions, {len(snapshot.log_dir_errors)} log dir error(s); wrote {out_path}"
    )
    return 0


def latest_log_dirs(path: Path) -> Path:
    """``path`` itself, or for a directory its last regular file by name (names carry the capture time)."""
    from pools.errors import InputError

    if not path.is_dir():
        return path
    try:
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    except OSError as exc:
        raise InputError(f"--log-dirs: {path}: cannot be listed ({exc.strerror or exc})") from None
    if not files:
        raise InputError(f"--log-dirs: {path}: directory has no files")
    return files[-1]


def taken_at_from_name(name: str) -> str | None:
    """``2026-11-02T00:00:00Z`` from a name containing ``20261102T000000Z``, else None."""
    m = _STAMP.search(name)
    if m is None:
        return None
    y, mo, d, h, mi, s = m.groups()
    return f"{y}-{mo}-{d}T{h}:{mi}:{s}Z"
