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
    from pools.kafka_formats.cruise_control import parse_capacity_json
    from pools.kafka_formats.inventory import parse_inventory_toml
    from pools.snapshot import save_snapshot
    from pools.snapshot_build import build_snapshot

    log_dirs_file = latest_log_dirs(Path(log_dirs_path)) if log_dirs_path else None
    inventory_text = _read(Path(inventory_path))
    if inventory_path.endswith(".json"):
        inventory = parse_capacity_json(inventory_text, source=inventory_path)
    else:
        inventory = parse_inventory_toml(inventory_text, source=inventory_path)
    snapshot = build_snapshot(
        _read(Path(describe_path)),
        _read(log_dirs_file) if log_dirs_file else None,
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
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
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


def _read(path: Path) -> str:
    from pools.errors import InputError

    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
