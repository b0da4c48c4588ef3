"""`poolplan progress`: where a running reassignment stands (bytes, rate, ETA, stuck partitions, throttles)."""

from __future__ import annotations

import json

import click

from planner.cli.options import FINITE
from planner.emit.progress import reassignment_progress
from pools.atomic import check_output, dump_json, write_text
from pools.units import format_bytes, format_duration, format_rate

__all__ = ["command"]


@click.command(name="progress")
@click.option("--bundle", "bundle_dir", required=True, type=click.Path(file_okay=False),
              help="The bundle being run (from `poolplan emit`).")
@click.option("--log-dirs", "captures", required=True, multiple=True, type=click.Path(dir_okay=False),
              help="kafka-log-dirs.sh --describe captures, oldest first (repeat; two or more give the rate).")
@click.option("--interval", default=60.0, show_default=True, type=FINITE,
              help="Seconds between successive --log-dirs captures.")
@click.option("--verify", "verify_path", type=click.Path(dir_okay=False),
              help="Output of kafka-reassign-partitions.sh --verify for the running batch (or the whole bundle).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--out", "out_path", type=click.Path(dir_okay=False),
              help="Also write the JSON form there (atomically); RUN_DIR/progress/progress.json puts it in the "
                   "report of RUN_DIR.")
def command(bundle_dir: str, captures: tuple[str, ...], interval: float, verify_path: str | None, fmt: str,
            out_path: str | None) -> int:
    """Report per batch and per destination broker the bytes copied of the total, the rate, the ETA, partitions
    stuck (no progress between the last two captures) and throttles still set after completion.

    Exit codes: 0 done, 1 in progress, 2 bad input, 3 stuck.
    """
    if out_path is not None:
        check_output(out_path, directory=False)
    p = reassignment_progress(bundle_dir, captures, interval=interval, verify=verify_path)
    if out_path is not None:
        write_text(out_path, dump_json(p.to_dict()))
    if fmt == "json":
        click.echo(json.dumps(p.to_dict(), indent=2, sort_keys=True))
        return p.exit_code
    eta = format_duration(p.eta_seconds) if p.eta_seconds is not None else "unknown"
    rate = format_rate(p.rate) if p.rate is not None else "unknown (one capture)"
    click.echo(f"{format_bytes(p.done_bytes)} of {format_bytes(p.total_bytes)} copied; rate {rate}; ETA {eta}")
    for name, rows in (("batch", p.batches), ("broker", p.brokers)):
        for r in rows:
            left = format_duration(r["eta_seconds"]) if r["eta_seconds"] is not None else "-"
            click.echo(f"  {name} {r[name]}: {format_bytes(r['done_bytes'])} of {format_bytes(r['total_bytes'])}"
                       f" ({r['replicas']} new replica(s)), ETA {left}")
    if p.stuck:
        click.echo(f"stuck (no progress between the last two captures): {', '.join(p.stuck)}")
    if p.diverged:
        click.echo(f"diverged (--verify reports another replica set): {', '.join(p.diverged)}")
    if p.throttles_left:
        click.echo("throttles are still set although every partition is complete: remove them "
                   "(kafka-reassign-partitions.sh --verify without --preserve-throttles)")
    click.echo({0: "done", 1: "in progress", 3: "stuck"}[p.exit_code])
    return p.exit_code
