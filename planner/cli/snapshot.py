"""`poolplan snapshot`: join kafka-topics/kafka-log-dirs output (saved, or captured now with Kafka's tools) and the
broker inventory into snapshot.json."""

from __future__ import annotations

from typing import Any

import click

from planner.cli.stage import Outcome, Stage, run_command
from planner.stages.snapshot import SnapshotOptions, SnapshotResult, snapshot
from pools.units import format_plural

__all__ = ["command", "STAGE"]


@click.command(name="snapshot")
@click.option("--bootstrap-server", "bootstrap_server", metavar="HOST:PORT",
              help="Capture the cluster now with Kafka's own tools (kafka-topics, kafka-log-dirs, kafka-configs, "
                   "kafka-reassign-partitions --list), keeping their raw output in kafka/ beside --out; instead of "
                   "--describe, --log-dirs, --broker-configs and --taken-at.")
@click.option("--command-config", "command_config", type=click.Path(dir_okay=False),
              help="With --bootstrap-server: the Admin client properties the tools get (security settings).")
@click.option("--kafka-bin", "kafka_bin", type=click.Path(file_okay=False),
              help="With --bootstrap-server: the directory of the Kafka tools (default: found on PATH).")
@click.option("--tool-timeout", "tool_timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              help="With --bootstrap-server: seconds each tool may run before the capture fails (exit 3).")
@click.option("--describe", "describe_path", type=click.Path(dir_okay=False),
              help="kafka-topics.sh --describe output (or --bootstrap-server).")
@click.option("--log-dirs", "log_dirs_path", type=click.Path(),
              help="kafka-log-dirs.sh --describe output, or a directory of them (the latest by name is used).")
@click.option("--broker-configs", "broker_configs_path", type=click.Path(dir_okay=False),
              help="kafka-configs.sh --describe --entity-type brokers [--all] output (Kafka 4.3+: cordoned.log.dirs).")
@click.option("--inventory", "inventory_path", required=True, type=click.Path(dir_okay=False),
              help="Broker inventory: brokers.toml, or Cruise Control capacity.json.")
@click.option("--cluster", default="kafka", show_default=True, help="Cluster name.")
@click.option("--taken-at", default=None,
              help="Capture time (ISO-8601); default: the YYYYMMDDTHHMMSSZ stamp in the log-dirs file name.")
@click.option("--out", "out_path", default="snapshot.json", show_default=True, type=click.Path(dir_okay=False),
              help="Snapshot file to write (replaced atomically).")
def command(**params: Any) -> int:
    """Build a cluster snapshot (brokers, topics, every partition with replica sizes and log dirs).

    From saved tool output (--describe ...) or from a running cluster (--bootstrap-server). Exit 2 on bad input,
    a missing Kafka tool or an unreadable --command-config; exit 3 when a tool fails (its own last line).
    """
    return run_command(STAGE, params)


def _outcome(result: SnapshotResult) -> Outcome:
    s = result.snapshot
    cordoned = sum(1 for b in s.brokers if b.cordoned or b.cordoned_log_dirs)
    return Outcome(
        subject=f"snapshot of {s.cluster}",
        summary=f"{format_plural(len(s.brokers), 'broker')}, {format_plural(len(s.topics), 'topic')}, "
                f"{format_plural(len(s.partitions), 'partition')}, "
                f"{format_plural(len(s.log_dir_errors), 'log dir error')}"
                + (f", {format_plural(cordoned, 'broker')} with cordons" if cordoned else ""),
        written=result.out_path,
        details=() if result.captured is None else (f"the Kafka tools' raw output: {result.captured}",),
    )


STAGE = Stage("snapshot", command, lambda params: SnapshotOptions(**params), snapshot, _outcome)
