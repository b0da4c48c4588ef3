"""Capture a running cluster with Kafka's own tools, keeping each tool's raw output (``poolplan snapshot
--bootstrap-server``).

The tools and what is kept of them, in a directory beside the snapshot, under the names ``poolplan snapshot``
reads them by (so a capture replays: ``poolplan snapshot --describe DIR/topics-describe.txt --log-dirs
DIR/log-dirs --broker-configs DIR/broker-configs.txt``):

- ``kafka-topics.sh --describe``: ``topics-describe.txt`` (every topic's configs that are not Kafka's defaults,
  broker-wide ones included, and each partition's replicas, leader, ISR and reassignment);
- ``kafka-log-dirs.sh --describe``: ``log-dirs/log-dirs-<capture time>.txt`` (the time names the snapshot's);
- ``kafka-configs.sh --describe --entity-type brokers --all``: ``broker-configs.txt`` (cordons, KIP-1066);
- ``kafka-reassign-partitions.sh --list``: ``reassignments.txt``, where the version has the option (Kafka 2.5+).

A tool is looked up in ``--kafka-bin`` or on ``PATH``, as ``NAME.sh`` or ``NAME`` (Confluent's packages drop the
suffix). A missing tool or an unreadable ``--command-config`` is an `InputError` before any tool runs; a tool that
fails or outlives the timeout is a `JobError` with the tool's own last line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pools.errors import InputError, JobError

__all__ = ["Tools", "Capture", "find_tools", "check_command_config", "check_bootstrap", "check_replaceable", "capture",
           "TOOL_NAMES"]

TOOL_NAMES = ("kafka-topics", "kafka-log-dirs", "kafka-configs", "kafka-reassign-partitions")
DESCRIBE_FILE = "topics-describe.txt"
LOG_DIRS_DIR = "log-dirs"
BROKER_CONFIGS_FILE = "broker-configs.txt"
REASSIGNMENTS_FILE = "reassignments.txt"
_HOST_PORT = re.compile(r"^[^\s,]+:(\d{1,5})$")
#: What joptsimple prints for an option the tool's version does not have (``kafka-reassign-partitions --list``).
_UNRECOGNIZED = re.compile(r"\blist is not a recognized option\b")


@dataclass(frozen=True)
class Tools:
    """The path of each Kafka tool, by its name without ``.sh``."""

    paths: dict[str, str]

    def __getitem__(self, name: str) -> str:
        return self.paths[name]


@dataclass(frozen=True)
class Capture:
    """Where the raw outputs were written (``reassignments`` ``None``: the version has no ``--list``)."""

    describe: Path
    log_dirs: Path
    broker_configs: Path
    reassignments: Path | None


def check_bootstrap(value: str) -> str:
    """``value`` when it is ``HOST:PORT[,HOST:PORT...]``, else an `InputError` naming ``--bootstrap-server``.

    >>> check_bootstrap("b1:9092,b2:9092")
    'b1:9092,b2:9092'
    """
    parts = value.split(",")
    if not value or not all((m := _HOST_PORT.match(p)) and 0 < int(m.group(1)) < 65536 for p in parts):
        raise InputError(f"--bootstrap-server: expected HOST:PORT[,HOST:PORT...], got {value!r}")
    return value


def find_tools(kafka_bin: str | None) -> Tools:
    """Every tool of `TOOL_NAMES`, from ``kafka_bin`` or ``PATH``; an `InputError` naming the first missing one."""
    paths = {}
    for name in TOOL_NAMES:
        if kafka_bin is not None:
            found = next((str(p) for p in (Path(kafka_bin) / f"{name}.sh", Path(kafka_bin) / name)
                          if p.is_file() and os.access(p, os.X_OK)), None)
            where = f"--kafka-bin: {kafka_bin}: no executable {name}.sh or {name}"
        else:
            found = shutil.which(f"{name}.sh") or shutil.which(name)
            where = f"{name}.sh: not found on PATH (install the Kafka CLI, or give --kafka-bin DIR)"
        if found is None:
            raise InputError(where)
        paths[name] = found
    return Tools(paths)


def check_command_config(path: str | None) -> None:
    """An `InputError` naming ``--command-config`` when the file cannot be read (the tools would fail later)."""
    if path is None:
        return
    try:
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise InputError(f"--command-config: {path}: cannot be read ({exc.strerror or exc})") from None


def check_replaceable(path: Path) -> None:
    """An `InputError` unless ``path`` is absent or an earlier capture (holding only the names a capture writes):
    a capture replaces its predecessor, never a directory of the user's that happens to share its name."""
    if not path.exists():
        return
    ours = {DESCRIBE_FILE, LOG_DIRS_DIR, BROKER_CONFIGS_FILE, REASSIGNMENTS_FILE}
    try:
        names = {p.name for p in path.iterdir()} if path.is_dir() else None
    except OSError as exc:
        raise InputError(f"{path}: cannot be listed ({exc.strerror or exc})") from None
    if names is None or not names <= ours or DESCRIBE_FILE not in names:
        raise InputError(f"{path}: exists and is not an earlier capture (expected only {', '.join(sorted(ours))}); "
                         "give --out a directory of its own")


def capture(tools: Tools, bootstrap: str, into: Path, *, taken_at: datetime, command_config: str | None = None,
            timeout: float = 600.0) -> Capture:
    """Run the tools against ``bootstrap`` and write their standard output, unchanged, into ``into``.

    Raises
    ------
    JobError
        ``kafka-topics.sh --describe failed (exit 1): <its last line>``, or one that did not finish in ``timeout``.
    """
    common = ["--bootstrap-server", bootstrap, *(["--command-config", command_config] if command_config else [])]
    describe = into / DESCRIBE_FILE
    describe.write_bytes(_run(tools, "kafka-topics", common, ["--describe"], timeout))
    log_dirs = into / LOG_DIRS_DIR / f"log-dirs-{taken_at.strftime('%Y%m%dT%H%M%SZ')}.txt"
    log_dirs.parent.mkdir()
    log_dirs.write_bytes(_run(tools, "kafka-log-dirs", common, ["--describe"], timeout))
    configs = into / BROKER_CONFIGS_FILE
    configs.write_bytes(_run(tools, "kafka-configs", common, ["--describe", "--entity-type", "brokers", "--all"],
                             timeout))
    reassignments: Path | None = into / REASSIGNMENTS_FILE
    listing = _run(tools, "kafka-reassign-partitions", common, ["--list"], timeout, unsupported=_UNRECOGNIZED)
    if listing is None:
        reassignments = None
    else:
        reassignments.write_bytes(listing)
    return Capture(describe, log_dirs.parent, configs, reassignments)


def _run(tools: Tools, name: str, common: list[str], args: list[str], timeout: float, *,
         unsupported: re.Pattern[str] | None = None) -> bytes | None:
    """The standard output of one tool run with the ``common`` connection options; ``None`` when it failed saying
    ``unsupported``."""
    shown = f"{name}.sh {' '.join(args)}"
    try:
        done = subprocess.run([tools[name], *common, *args], capture_output=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise JobError(f"{shown} did not finish within {timeout:g} s (is the cluster reachable?)") from None
    except OSError as exc:
        raise JobError(f"{shown} could not be started: {exc.strerror or exc}") from None
    if done.returncode == 0:
        return done.stdout
    text = (done.stderr + b"\n" + done.stdout).decode("utf-8", "replace")
    if unsupported is not None and unsupported.search(text):
        return None
    raise JobError(f"{shown} failed (exit {done.returncode}): {_last_line(done.stderr, done.stdout)}")


def _last_line(*outputs: bytes) -> str:
    """The last non-blank line of the first output that has one (standard error first)."""
    for out in outputs:
        lines = [line.strip() for line in out.decode("utf-8", "replace").splitlines() if line.strip()]
        if lines:
            return lines[-1]
    return "(no output)"
