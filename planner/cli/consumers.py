"""`poolplan consumers`: size consumer groups per assignor, or simulate a rebalance script."""

from __future__ import annotations

__all__ = ["command", "validate_options"]

from collections.abc import Mapping
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from planner.cli.options import FINITE
from pools.errors import InputError
from pools.units import format_rate

_FILE = click.Path(dir_okay=False)


@click.command(name="consumers")
@click.option("--describe", "describe_path", type=_FILE,
              help="`kafka-consumer-groups.sh --describe --all-groups` output.")
@click.option("--members", "members_path", type=_FILE,
              help="`--describe --all-groups --members --verbose` output (the groups' consumer ids).")
@click.option("--profile", "profile_dir", type=click.Path(),
              help="Topic profile directory (rates per topic and partition).")
@click.option("--config", "config_path", type=_FILE, help="Member capacity and strategies (conf/consumers.toml).")
@click.option("--capacity-bytes", type=FINITE, help="Bytes/s one member processes (overrides the config).")
@click.option("--capacity-messages", type=FINITE, help="Messages/s one member processes (overrides the config).")
@click.option("--headroom", type=FINITE, help="Usable fraction of a member's capacity (overrides the config).")
@click.option("--strategy", "strategies", multiple=True,
              help="Assignor to compare (repeat); default: the config's list, else all.")
@click.option("--group", "groups", multiple=True, help="Only these groups (repeat).")
@click.option("--simulate", "events_path", type=_FILE, help="Rebalance script (JSON: topics, members, events).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Standard output format.")
@click.option("--out", "out_path", type=_FILE, help="Also write the JSON report here.")
@click.option("--force", is_flag=True, help="Replace an existing --out file.")
def command(**opts: Any) -> int:
    """Size consumer groups under each assignor, or simulate a rebalance script with --simulate.

    Sizing reads the groups and their lag from --describe, rates from --profile and a member's capacity
    from --config or the --capacity-* options. It reports each member's load under every strategy at
    today's member count, the lag catch-up time, the fewest members that stay within the headroom and
    the strategy that balances the group best. --simulate drives a group through join, leave, crash,
    return, subscribe, add_partitions, create_topic and delete_topic events and reports, per round,
    the partition counts and bytes per member and the partitions moved and revoked.

    Exit 1 when a group with members has one past the headroom today, else 0.
    """
    from planner.assignors.groups import load_consumers_config, profile_rates, simulate_script, size_groups
    from planner.assignors.strategies import DEFAULT_ASSIGNORS, Assignor
    from pools.atomic import check_output, dump_json, write_text
    from pools.profile import load_profile_dir

    validate_options(opts)
    if opts["out_path"]:
        check_output(opts["out_path"], directory=False, overwrite=opts["force"])
    config = load_consumers_config(opts["config_path"])
    strategies = tuple(Assignor.parse(s, where="--strategy") for s in opts["strategies"]) or config.strategies
    if not strategies:
        strategies = (Assignor.COOPERATIVE_STICKY,) if opts["events_path"] else DEFAULT_ASSIGNORS
    rates = profile_rates(*load_profile_dir(opts["profile_dir"])) if opts["profile_dir"] else None
    if opts["events_path"]:
        report = simulate_script(opts["events_path"], strategies, rates)
    else:
        assert rates is not None  # validate_options requires --profile for sizing
        overrides = {"bytes_per_s": opts["capacity_bytes"], "messages_per_s": opts["capacity_messages"],
                     "headroom": opts["headroom"]}
        report = size_groups(opts["describe_path"], rates, config, strategies, members=opts["members_path"],
                             groups=opts["groups"], overrides=overrides)
    if opts["out_path"]:
        write_text(opts["out_path"], dump_json(report))
    if opts["fmt"] == "json":
        click.echo(dump_json(report), nl=False)
    elif opts["events_path"]:
        _print_simulation(report)
    else:
        _print_sizing(report)
    over = [g["group"] for g in report.get("groups", ()) if g["over_capacity"]]
    if over:
        click.echo(f"{len(over)} group(s) have a member past the headroom: {', '.join(over)}", err=True)
    return 1 if over else 0


def validate_options(opts: Mapping[str, Any]) -> None:
    """Cross-option rules: sizing needs --describe and --profile; --simulate stands alone."""
    if opts["events_path"]:
        if opts["describe_path"] or opts["members_path"] or opts["groups"]:
            raise InputError("--simulate takes the group from its script; drop --describe, --members and --group")
        return
    if not opts["describe_path"]:
        raise InputError("give --describe (kafka-consumer-groups.sh --describe --all-groups output) or --simulate")
    if not opts["profile_dir"]:
        raise InputError("--profile: sizing needs the topic profile for per-partition rates")




def _fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}min" if seconds >= 120 else f"{seconds:.0f}s"
    return f"{seconds / 3600:.1f}h"


def _console() -> Console:
    """Standard output; wide enough for the tables when it is a file or a pipe."""
    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=200)


def _print_sizing(report: Mapping[str, Any]) -> None:
    table = Table(title="consumer groups: load per strategy at today's member count")
    for col in (
        "group", "members", "partitions", "lag", "strategy", "busiest %", "spread", "catch-up", "needed", "best"
    ):
        table.add_column(col, justify="left" if col in ("group", "strategy", "best") else "right")
    for g in report["groups"]:
        rows = ([("current", g["current"])] if g["current"] else []) + list(g["strategies"].items())
        for i, (name, s) in enumerate(rows):
            catch = s["catch_up_seconds"]
            table.add_row(
                g["group"] if i == 0 else "",
                str(g["current_members"]) if i == 0 else "",
                str(g["partitions"]) if i == 0 else "",
                str(g["lag"]) if i == 0 else "",
                name,
                f"{100 * s['max_utilization']:.1f}",
                f"{s['bytes_spread']:.2f}",
                _fmt_seconds(catch),
                "-" if s["required_members"] is None else str(s["required_members"]),
                "*" if name == g["best_strategy"] else "",
            )
    out = _console()
    out.print(table)
    fan = ", ".join(f"{t}={n}" for t, n in report["topic_fanout"].items())
    out.print(f"topic fan-out (groups per topic): {fan}")


def _print_simulation(report: Mapping[str, Any]) -> None:
    for strategy, steps in report["simulation"].items():
        table = Table(title=f"rebalance simulation: {strategy}")
        for col in ("step", "round", "event", "gen", "partitions min-max", "rate min-max", "moved", "revoked"):
            table.add_column(col, justify="left" if col == "event" else "right")
        for s in steps:
            counts = list(s["partition_counts"].values()) or [0]
            rates = list(s["member_bytes"].values()) or [0.0]
            table.add_row(
                str(s["step"]), str(s["round"]), s["event"], str(s["generation"]),
                f"{min(counts)}-{max(counts)}", f"{format_rate(min(rates))}-{format_rate(max(rates))}",
                str(len(s["moved"])), str(len(s["revoked"])),
            )
        _console().print(table)

