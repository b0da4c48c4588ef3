"""`poolplan progress`: where a running reassignment stands (bytes, rate, ETA, stuck, slow and diverged copies,
ISR, min ISR, leaders, throttles) and, when it must stop, why and how."""

from __future__ import annotations

import json
from typing import Any

import click

from planner.cli.options import FINITE, renamed_option, take_renamed
from planner.emit.progress import DONE, IN_PROGRESS, SLOW_SHARE, SLOW_WINDOW, STOP, reassignment_progress
from planner.emit.runbook import BOOTSTRAP_PLACEHOLDER
from pools.atomic import check_output, dump_json, write_text
from pools.units import format_bytes, format_duration, format_percent, format_rate

__all__ = ["command"]


@click.command(name="progress")
@click.option("--bundle", "bundle_dir", required=True, type=click.Path(file_okay=False),
              help="The bundle being run (from `poolplan emit`).")
@click.option("--log-dirs-capture", "captures", multiple=True, type=click.Path(dir_okay=False),
              help="A kafka-log-dirs.sh --describe capture (required; repeat, in any order: two or more give the "
                   "rate); each carries its time as a first line `date -u +%Y-%m-%dT%H:%M:%SZ` or "
                   "YYYYMMDDTHHMMSSZ in its name.")
@renamed_option("--log-dirs", "--log-dirs-capture", multiple=True, type=click.Path(dir_okay=False))
@click.option("--describe", "describes", multiple=True, type=click.Path(dir_okay=False),
              help="kafka-topics.sh --describe captures in any order, stamped likewise (repeat): ISR, min ISR, "
                   "leaders.")
@click.option("--interval", default=60.0, show_default=True, type=FINITE,
              help="Seconds between successive captures when they carry no time (then given oldest first).")
@click.option("--verify", "verify_path", type=click.Path(dir_okay=False),
              help="Output of kafka-reassign-partitions.sh --verify for the running batch (or the whole bundle).")
@click.option("--slow-share", default=SLOW_SHARE, show_default=True, type=FINITE,
              help=f"A copy is slow below this share of its part of the batch's throttle over the last "
                   f"{SLOW_WINDOW} captures.")
@click.option("--bootstrap-server", "bootstrap", default=BOOTSTRAP_PLACEHOLDER, show_default=True,
              help="Value written into the commands that stop the batch.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--out", "out_path", type=click.Path(dir_okay=False),
              help="Also write the JSON form there (atomically); RUN_DIR/progress/progress.json puts it in the "
                   "report of RUN_DIR.")
def command(**params: Any) -> int:
    """Report per batch and per destination broker the bytes copied of the total, the rate, the ETA; copies
    stuck (no growth between the last two captures), slow or diverged; with --describe, the new replicas in the
    ISR, partitions under min ISR and leaders not preferred; throttles still set after completion. When it must
    stop, it says why and prints the commands that cancel the running batch and remove its throttles.

    Exit codes: 0 done, 1 in progress, 2 bad input, 3 a failure that is not the input's, 4 stop (stuck, diverged
    or under min ISR: act now).
    """
    take_renamed(params, "--log-dirs", "--log-dirs-capture", "captures", run_key=False)
    return _report(**params)


def _report(bundle_dir: str, captures: tuple[str, ...], describes: tuple[str, ...], interval: float,
            verify_path: str | None, slow_share: float, bootstrap: str, fmt: str, out_path: str | None) -> int:
    """`command`'s report and exit code, once the captures given under the old spelling are taken."""
    if out_path is not None:
        check_output(out_path, directory=False)
    p = reassignment_progress(bundle_dir, captures, interval=interval, verify=verify_path, describes=describes,
                              slow_share=slow_share, bootstrap=bootstrap)
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
    for r in p.slow:
        click.echo(f"slow: {r['partition']} onto broker {r['broker']}: {format_rate(r['rate_Bps'])}, below "
                   f"{format_percent(p.slow_share)} of its part of the throttle "
                   f"({format_rate(r['throttle_share_Bps'])})")
    if p.isr:
        pending = ", ".join(f"{r['partition']} on broker {r['broker']}" for r in p.isr["pending"]) or "none"
        click.echo(f"ISR: {len(p.isr['joined'])} new replica(s) joined; not yet: {pending}")
    for r in p.was_under_min_isr:
        click.echo(f"was under min ISR in {r['capture']}, recovered since: {r['partition']}")
    if p.leaders_not_preferred:
        click.echo("finished but not led by the preferred replica: " + ", ".join(
            f"{r['partition']} (leader {r['leader']}, preferred {r['preferred']})" for r in p.leaders_not_preferred)
            + f"; run kafka-leader-election.sh --bootstrap-server {bootstrap} --election-type PREFERRED "
              "--path-to-json-file leader-election.json")
    if p.throttles_left:
        click.echo("throttles are still set although every partition is complete: remove them "
                   "(kafka-reassign-partitions.sh --verify without --preserve-throttles)")
    if p.stop:
        click.echo("STOP:")
        for line in p.stop["reasons"]:
            click.echo(f"  {line}")
        click.echo("to stop cleanly, cancel the running batch (this restores its partitions' replicas and clears "
                   "its throttles), then check that the throttles are gone, or delete them:")
        for line in p.stop["commands"]:
            click.echo(f"  {line}")
    click.echo({DONE: "done", IN_PROGRESS: "in progress", STOP: "stop"}[p.exit_code])
    return p.exit_code
