"""`poolplan sample`: write a deterministic synthetic cluster in Kafka's own formats, with its truth."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click
from rich.console import Console

__all__ = ["command"]

_console = Console(highlight=False, soft_wrap=True)


@click.command(name="sample")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory to create (written atomically; see docs/sample.md for the layout).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0), help="Seed of the generator.")
@click.option("--brokers", default=9, show_default=True, type=int, help="Brokers (at least 6; the last has no pool).")
@click.option("--topics", default=30, show_default=True, type=int, help="Topics (at least 6).")
@click.option("--days", default=14, show_default=True, type=int, help="Days of metrics before --end.")
@click.option("--step", "step_s", default=60, show_default=True, type=int, help="Scrape interval, seconds.")
@click.option("--end", "end_date", default="2026-11-02", show_default=True,
              help="End of the window (YYYY-MM-DD, midnight UTC).")
@click.option("--cluster", default="sample", show_default=True, help="Cluster name recorded in the truth.")
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
def command(out_dir: str, seed: int, brokers: int, topics: int, days: int, step_s: int, end_date: str,
            cluster: str, force: bool) -> int:
    """Generate a realistic synthetic cluster: tool outputs, metric logs, inventory, policy and truth.json.

    Same options give byte-identical files. The truth lists every planted problem (misplaced tenants, a
    broker and a topic without pool, rack sharing, ISR trouble, an offline partition, a reassignment, a
    failed log dir, leaders not preferred) so later stages can be checked against it.
    """
    from pools.atomic import atomic_dir, check_output, write_bytes
    from pools.errors import InputError
    from pools.units import format_bytes
    from planner.sample import SampleSpec, sample_files

    try:
        end = dt.datetime.strptime(end_date, "%Y-%m-%d").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        raise InputError(f"--end: expected a date YYYY-MM-DD, got {end_date!r}") from None
    spec = SampleSpec(seed=seed, brokers=brokers, topics=topics, days=days, step_s=step_s,
                      end=int(end.timestamp()), cluster=cluster)
    check_output(out_dir, overwrite=force)
    count = size = 0
    with atomic_dir(out_dir, overwrite=force) as tmp:
        for rel, text in sample_files(spec):
            data = text.encode("utf-8")
            write_bytes(Path(tmp) / rel, data)
            count, size = count + 1, size + len(data)
    _console.print(f"sample {cluster!r} (seed {seed}): {brokers} brokers, {topics} topics, {days} days; "
                   f"wrote {count} files ({format_bytes(size)}) to {out_dir}")
    return 0
