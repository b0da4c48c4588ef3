"""`poolplan consumers`: size consumer groups per assignor, or simulate a rebalance script."""

from __future__ import annotations

__all__ = ["command", "load_consumers_config", "validate_options", "validate_strategies", "ConsumersConfig"]

import json
import logging
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from pools.errors import InputError
from pools.units import format_rate

_CAPACITY_KEYS = {"bytes_per_s", "messages_per_s", "headroom"}
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConsumersConfig:
    """``conf/consumers.toml``: the default member capacity, per-group overrides, strategies to compare."""

    capacity: Mapping[str, float]
    groups: Mapping[str, Mapping[str, float]]
    strategies: tuple[str, ...]


_FILE = click.Path(dir_okay=False)


@click.command(name="consumers")
@click.option("--describe", "describe_path", type=_FILE,
              help="`kafka-consumer-groups.sh --describe --all-groups` output.")
@click.option("--members", "members_path", type=_FILE,
              help="`--describe --all-groups --members --verbose` output (the groups' consumer ids).")
@click.option("--profile", "profile_dir", type=click.Path(),
              help="Topic profile directory (rates per topic and partition).")
@click.option("--config", "config_path", type=_FILE, help="Member capacity and strategies (conf/consumers.toml).")
@click.option("--capacity-bytes", type=float, help="Bytes/s one member processes (overrides the config).")
@click.option("--capacity-messages", type=float, help="Messages/s one member processes (overrides the config).")
@click.option("--headroom", type=float, help="Usable fraction of a member's capacity (overrides the config).")
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
    from pools.atomic import dump_json, write_text

    validate_options(opts)
    config = load_consumers_config(opts["config_path"]) if opts["config_path"] else ConsumersConfig({}, {}, ())
    strategies = tuple(opts["strategies"]) or config.strategies or _default_strategies(opts["events_path"])
    validate_strategies(strategies)
    rates = _profile_rates(opts["profile_dir"]) if opts["profile_dir"] else None
    if opts["events_path"]:
        report = _simulate(opts["events_path"], strategies, rates)
    else:
        report = _size(opts, config, strategies, rates)
    if opts["out_path"]:
        if Path(opts["out_path"]).exists() and not opts["force"]:
            raise InputError(f"{opts['out_path']}: already exists; pass --force to replace it")
        write_text(opts["out_path"], dump_json(report))
    if opts["fmt"] == "json":
        click.echo(dump_json(report), nl=False)
    else:
        if opts["events_path"]:
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


def validate_strategies(strategies: Sequence[str]) -> None:
    """Every strategy must be an assignor sizing and simulation know."""
    from planner.assignors.sizing import STRATEGY_NAMES

    for name in strategies:
        if name not in STRATEGY_NAMES:
            raise InputError(f"--strategy: unknown assignor {name!r}; expected one of {', '.join(STRATEGY_NAMES)}")


def load_consumers_config(path: str) -> ConsumersConfig:
    """Read and validate ``conf/consumers.toml``; errors name the file and key."""
    try:
        doc = tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from None
    unknown = sorted(set(doc) - {"capacity", "groups", "strategies"})
    if unknown:
        raise InputError(f"{path}: {unknown[0]}: unknown table; expected capacity, groups or strategies")
    capacity = _capacity_table(doc.get("capacity", {}), f"{path}: capacity")
    groups_doc = doc.get("groups", {})
    if not isinstance(groups_doc, dict):
        raise InputError(f"{path}: groups: expected tables [groups.<group id>]")
    groups = {g: _capacity_table(t, f"{path}: groups.{g}") for g, t in groups_doc.items()}
    compare = doc.get("strategies", {}).get("compare", [])
    if not isinstance(compare, list) or not all(isinstance(s, str) for s in compare):
        raise InputError(f"{path}: strategies.compare: expected a list of assignor names")
    return ConsumersConfig(capacity, groups, tuple(compare))


def _capacity_table(table: Any, where: str) -> dict[str, float]:
    if not isinstance(table, dict):
        raise InputError(f"{where}: expected a table")
    for key, value in table.items():
        if key not in _CAPACITY_KEYS:
            raise InputError(f"{where}.{key}: unknown key; expected one of {', '.join(sorted(_CAPACITY_KEYS))}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{where}.{key}: expected a number, got {value!r}")
    return {k: float(v) for k, v in table.items()}


def _default_strategies(events_path: str | None) -> tuple[str, ...]:
    from planner.assignors.sizing import DEFAULT_STRATEGIES

    return ("cooperative-sticky",) if events_path else DEFAULT_STRATEGIES


def _capacity(opts: Mapping[str, Any], config: ConsumersConfig, group: str):  # -> MemberCapacity
    from planner.assignors.sizing import MemberCapacity

    merged = {**config.capacity, **config.groups.get(group, {})}
    for key, opt in (("bytes_per_s", "capacity_bytes"), ("messages_per_s", "capacity_messages"), ("headroom", "headroom")):
        if opts[opt] is not None:
            merged[key] = opts[opt]
    try:
        return MemberCapacity(**merged)
    except InputError as exc:
        raise InputError(f"group {group!r}: {exc} (set it in --config or with --capacity-bytes/--capacity-messages)") from None


def _profile_rates(profile_dir: str) -> dict[str, Any]:
    """Topic counts and rates from the profile, plus partition sizes and rates where present."""
    from pools.profile import PARTITION_PROFILE_FILE, load_partition_profile, load_profile

    topics = load_profile(profile_dir)
    partition_file = Path(profile_dir) / PARTITION_PROFILE_FILE
    parts = load_partition_profile(profile_dir) if Path(profile_dir).is_dir() and partition_file.exists() else {}
    return {
        "counts": {t: p.partitions for t, p in topics.items()},
        "topic_rates": {t: (p.bytes_in_p99, p.messages_in_p99 or 0.0) for t, p in topics.items()},
        "sizes": {k: float(v.size_bytes) for k, v in parts.items()},
        "bytes": {k: v.bytes_in_rate for k, v in parts.items()},
    }


def _partition_rates(rates: Mapping[str, Any], counts: Mapping[str, int]):
    from planner.assignors.sizing import spread_topic_rates

    return spread_topic_rates(counts, rates["topic_rates"], partition_sizes=rates["sizes"], partition_bytes=rates["bytes"])


def _size(opts: Mapping[str, Any], config: ConsumersConfig, strategies: Sequence[str], rates: Mapping[str, Any]) -> dict[str, Any]:
    from planner.assignors.sizing import consumer_bytes_out, size_group, topic_fanout
    from pools.kafka_formats.consumer_groups import parse_consumer_group_members, parse_consumer_groups_describe

    path = opts["describe_path"]
    groups = parse_consumer_groups_describe(Path(path).read_text(), source=path)
    members: dict[str, list[str]] = {}
    if opts["members_path"]:
        mpath = opts["members_path"]
        for m in parse_consumer_group_members(Path(mpath).read_text(), source=mpath):
            members.setdefault(m.group, []).append(m.consumer_id)
    unprofiled = sorted({t for g in groups for t in g.topics} - rates["counts"].keys())
    if unprofiled:
        _log.warning("no profile rates for %d topic(s), counted as idle: %s", len(unprofiled), ", ".join(unprofiled))
    wanted = set(opts["groups"])
    missing = wanted - {g.group for g in groups}
    if missing:
        raise InputError(f"--group: {sorted(missing)[0]!r} is not in {path}")
    reports = []
    for g in groups:
        if wanted and g.group not in wanted:
            continue
        counts = {}
        for t in g.topics:
            described = 1 + max(p.partition for p in g.partitions if p.topic == t)
            counts[t] = max(rates["counts"].get(t, 0), described)
        lag = {(p.topic, p.partition): p.lag or 0 for p in g.partitions}
        live: dict[str, dict[str, list[int]]] = {}
        for p in g.partitions:
            if p.consumer_id is not None:
                live.setdefault(p.consumer_id, {}).setdefault(p.topic, []).append(p.partition)
        for consumer in members.get(g.group, ()):
            live.setdefault(consumer, {})
        sizing = size_group(
            g.group, counts, _partition_rates(rates, counts), _capacity(opts, config, g.group),
            current_members=members.get(g.group) or list(g.consumers), current_assignment=live, lag=lag,
            strategies=strategies,
        )
        reports.append({**sizing.as_dict(), "active": g.active})
    fanout = topic_fanout(groups)
    bytes_in = {t: rates["topic_rates"].get(t, (0.0, 0.0))[0] for t in fanout}
    return {"groups": reports, "topic_fanout": fanout, "consumer_bytes_out": consumer_bytes_out(bytes_in, fanout)}


def _simulate(events_path: str, strategies: Sequence[str], rates: Mapping[str, Any] | None) -> dict[str, Any]:
    from planner.assignors.simulate import simulate

    try:
        script = json.loads(Path(events_path).read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{events_path}: line {exc.lineno}: not valid JSON: {exc.msg}") from None
    if not isinstance(script, dict) or not {"topics", "members", "events"} <= script.keys():
        raise InputError(f"{events_path}: expected an object with topics, members and events")
    topics = script["topics"]
    partition_bytes = _partition_rates(rates, topics) if rates else {}
    byte_rates = {k: r.bytes_per_s for k, r in partition_bytes.items()}
    runs = {}
    for strategy in strategies:
        try:
            steps = simulate(strategy, topics, script["members"], script["events"], partition_bytes=byte_rates, topic_ids=script.get("topic_ids"))
        except InputError as exc:
            raise InputError(f"{events_path}: {exc}") from None
        runs[strategy] = [s.as_dict() for s in steps]
    return {"simulation": runs}


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
    for col in ("group", "members", "partitions", "lag", "strategy", "busiest %", "spread", "catch-up", "needed", "best"):
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

