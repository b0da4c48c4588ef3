"""`poolplan sample`: write a deterministic synthetic cluster in Kafka's own formats, with its truth."""

from __future__ import annotations

from typing import Any

import click

from planner.cli.stage import Outcome, Stage, run_command
from planner.sample.cluster import DEFAULT_DAYS, DEFAULT_STEP_S
from planner.sample.inflight import STATES
from planner.stages.sample import SampleOptions, SampleResult, sample
from pools.units import format_bytes, format_plural

__all__ = ["command", "STAGE"]


@click.command(name="sample")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory to create (written atomically; see docs/sample.md for the layout).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0), help="Seed of the generator.")
@click.option("--brokers", default=9, show_default=True, type=int, help="Brokers (at least 6; the last has no pool).")
@click.option("--topics", default=30, show_default=True, type=int, help="Topics (at least 6).")
@click.option("--days", default=DEFAULT_DAYS, show_default=True, type=int,
              help="Days of metrics before --end (default a quarter, 13 weeks).")
@click.option("--step", "step_s", default=DEFAULT_STEP_S, show_default=True, type=int,
              help="Scrape interval, seconds (a divisor of 900).")
@click.option("--end", "end_date", default="2026-11-02", show_default=True,
              help="End of the window (YYYY-MM-DD, midnight UTC).")
@click.option("--cluster", default="sample", show_default=True, help="Cluster name recorded in the truth.")
@click.option("--kafka-4", "kafka_4", is_flag=True,
              help="Kafka 4.x variant: a cordoned broker, a 4-dir JBOD broker (one dir at 90 %, one cordoned), a "
                   "tiered topic and min.insync.replicas=3 on one topic; adds kafka/broker-configs.txt.")
@click.option("--inflight", type=click.Choice(list(STATES)),
              help="Also write inflight/: a bundle isolating every topic in its pool, successive log-dirs captures "
                   "and --verify output of it part-way (running), with one partition stalled (stuck), or finished "
                   "(done); read them with `poolplan progress`.")
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
def command(**params: Any) -> int:
    """Generate a realistic synthetic cluster: tool outputs, metric logs, inventory, policy and truth.json.

    Same options give byte-identical files. The truth lists every planted problem (misplaced tenants, a
    broker and a topic without pool, rack sharing, ISR trouble, an offline partition, a reassignment, a
    failed log dir, leaders not preferred) so later stages can be checked against it.
    """
    return run_command(STAGE, params)


def _outcome(result: SampleResult) -> Outcome:
    o = result.options
    return Outcome(
        subject=f"sample {o.cluster!r} (seed {o.seed})",
        summary=f"{o.brokers} brokers, {o.topics} topics, {o.days} days; "
                f"{format_plural(result.files, 'file')} ({format_bytes(result.size_bytes)})",
        written=result.out_dir,
    )


STAGE = Stage("sample", command, lambda params: SampleOptions(**params), sample, _outcome)
