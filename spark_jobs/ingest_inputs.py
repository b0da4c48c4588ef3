"""Resolving the ingest job's inputs: file globs, the broker map and partition counts (no Spark import).

Kept apart from the job so ``poolplan ingest`` can validate its options before starting a JVM.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pools.errors import InputError
from pools.files import load_toml
from pools.snapshot import load_snapshot

__all__ = ["expand_globs", "load_broker_map", "partition_counts"]


def expand_globs(patterns: Sequence[str], *, option: str) -> tuple[str, ...]:
    """Expand local glob patterns into sorted, de-duplicated files; URIs (``hdfs://``, ``s3a://``) pass through.

    Raises
    ------
    InputError
        When a local pattern matches no file.
    """
    files: set[str] = set()
    uris: list[str] = []
    for pattern in patterns:
        if "://" in pattern:
            uris.append(pattern)
            continue
        matched = [p for p in glob.glob(os.path.expanduser(pattern), recursive=True) if os.path.isfile(p)]
        if not matched:
            raise InputError(f"{option} {pattern!r}: matches no file")
        files.update(os.path.abspath(p) for p in matched)
    return tuple(sorted(files)) + tuple(uris)


def load_broker_map(path: str | os.PathLike[str] | None) -> dict[str, int]:
    """Read the label → broker id map (TOML): ``"kafka-1:7071" = 1`` at top level or in any table.

    Keys are the values of the ``instance``, ``pod``, ``jolokia_agent_url`` or ``host`` label; nested tables
    (e.g. ``[brokers]`` or ``[instances]``) are flattened.

    Raises
    ------
    InputError
        Naming the file and key for unreadable TOML, a non-integer or negative id, or a key mapped twice.
    """
    if path is None:
        return {}
    source = Path(path)
    doc = load_toml(source)
    out: dict[str, int] = {}
    _flatten(doc, source, "", out)
    if not out:
        raise InputError(f"{source}: no entries (expected lines like \"kafka-1:7071\" = 1)")
    return out


def _flatten(table: Mapping[str, object], source: Path, prefix: str, out: dict[str, int]) -> None:
    for key, value in table.items():
        where = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _flatten(value, source, f"{where}.", out)
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InputError(f"{source}: {where}: expected a broker id (integer >= 0), got {value!r}")
        if key in out and out[key] != value:
            raise InputError(f"{source}: {where}: {key!r} is mapped to both {out[key]} and {value}")
        out[key] = value


def partition_counts(snapshot_path: str | os.PathLike[str] | None) -> tuple[str | None, dict[str, int]]:
    """``(cluster, topic → partition count)`` from a cluster snapshot, or ``(None, {})`` without one."""
    if snapshot_path is None:
        return None, {}
    snapshot = load_snapshot(snapshot_path)
    counts: dict[str, int] = {}
    for p in snapshot.partitions:
        counts[p.topic] = counts.get(p.topic, 0) + 1
    return snapshot.cluster, counts
