"""`poolplan place`: preview where Kafka would put a new topic or added partitions."""

from __future__ import annotations

__all__ = ["command", "validate_options", "parse_brokers", "parse_ids"]

from collections.abc import Mapping
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pools.errors import InputError

_console = Console(highlight=False, soft_wrap=True)


@click.command(name="place")
@click.option("--algorithm", type=click.Choice(["striped", "admin-utils"]), default="striped", show_default=True,
              help="striped: a KRaft controller's StripedReplicaPlacer; admin-utils: AdminUtils (ZooKeeper era).")
@click.option("--brokers", "brokers_spec", help="Candidate brokers as id[:rack],... e.g. 1:r1,2:r2,3.")
@click.option("--snapshot", "snapshot_path", type=click.Path(dir_okay=False), help="Cluster snapshot (snapshot.json).")
@click.option("--pool", help="Only the snapshot's brokers tagged with this pool.")
@click.option("--fenced", "fenced_spec", help="Fenced broker ids, e.g. 3,7 (striped only).")
@click.option("--topic", required=True, help="Topic name.")
@click.option("--partitions", type=int, required=True,
              help="Partitions of the new topic; with --add-partitions the new total, as kafka-topics --alter.")
@click.option("--replication-factor", type=int, help="Replicas per partition (added partitions keep the topic's).")
@click.option("--add-partitions", is_flag=True, help="Grow an existing topic of --snapshot to --partitions.")
@click.option("--seed", type=click.IntRange(-(2**63), 2**63 - 1), default=0, show_default=True,
              help="Seed of the java.util.Random Kafka would use (a Java long).")
@click.option("--start-index", type=click.IntRange(-(2**31), 2**31 - 1),
    help="AdminUtils fixed start index (also its first replica shift).")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), help="Write reassignment JSON here.")
@click.option("--force", is_flag=True, help="Replace an existing --out file.")
def command(**opts: Any) -> int:
    """Preview Kafka's replica placement for a new topic (or added partitions) on a broker list or pool.

    Prints each partition's replicas (first = preferred leader) and the replicas and leaders per
    broker, or with --out writes the placement as kafka-reassign-partitions JSON. Added partitions
    with admin-utils start where AdminZkClient.addPartitions did: start partition = current count,
    start index = first broker (by id) with id >= partition 0's first replica.
    """
    from planner.placement.preview import Algorithm, preview_added_partitions, preview_new_topic
    from pools.atomic import check_output, write_text
    from pools.kafka_formats import format_reassignment_json

    validate_options(opts)
    if opts["out_path"]:
        check_output(opts["out_path"], directory=False, overwrite=opts["force"])
    brokers, existing = _candidates(opts)
    common = {
        "algorithm": Algorithm(opts["algorithm"]),
        "seed": opts["seed"],
        "start_index": opts["start_index"],
        "fenced": parse_ids(opts["fenced_spec"] or "", "--fenced"),
    }
    if opts["add_partitions"]:
        preview = preview_added_partitions(brokers, opts["topic"], existing, opts["partitions"], **common)
    else:
        preview = preview_new_topic(brokers, opts["topic"], opts["partitions"], opts["replication_factor"], **common)
    if opts["out_path"]:
        write_text(opts["out_path"], format_reassignment_json(preview.entries()) + "\n")
    else:
        _print_partitions(preview)
    _print_counts(preview)
    if opts["out_path"]:
        _console.print(f"wrote {len(preview.assignments)} partitions of {preview.topic} to {opts['out_path']}")
    return 0


def validate_options(opts: Mapping[str, Any]) -> None:
    """Cross-option rules: a topic name Kafka accepts; one broker source; --pool and --add-partitions need
    --snapshot; counts within limits.

    ``--partitions`` is at most `pools.input_limits.MAX_PARTITIONS_PER_TOPIC` and ``--replication-factor`` at most
    Kafka's (a Java short); checked before anything is allocated.
    """
    from pools.input_limits import MAX_PARTITIONS_PER_TOPIC, MAX_REPLICATION_FACTOR, check_count
    from pools.snapshot import topic_name_problem

    problem = topic_name_problem(opts["topic"])
    if problem is not None:
        raise InputError(f"--topic: {problem}")

    check_count(opts["partitions"], MAX_PARTITIONS_PER_TOPIC, "--partitions", minimum=-(2**31))
    if opts["replication_factor"] is not None:
        check_count(opts["replication_factor"], MAX_REPLICATION_FACTOR, "--replication-factor", minimum=-(2**31))
    if bool(opts["brokers_spec"]) == bool(opts["snapshot_path"]):
        raise InputError("give exactly one of --brokers (id[:rack],...) and --snapshot")
    if opts["pool"] and not opts["snapshot_path"]:
        raise InputError("--pool selects brokers of --snapshot; give --snapshot")
    if opts["add_partitions"] and not opts["snapshot_path"]:
        raise InputError("--add-partitions needs the topic's current partitions: give --snapshot")
    if not opts["add_partitions"] and opts["replication_factor"] is None:
        raise InputError("--replication-factor is required for a new topic")


def parse_brokers(spec: str) -> list[tuple[int, str | None]]:
    """``"1:r1,2:r2,3"`` to ``[(1, "r1"), (2, "r2"), (3, None)]``; a rack may be empty (``"4:"``)."""
    brokers: list[tuple[int, str | None]] = []
    for item in spec.split(","):
        broker, sep, rack = item.strip().partition(":")
        (broker_id,) = parse_ids(broker, "--brokers")
        brokers.append((broker_id, rack if sep else None))
    ids = [b for b, _ in brokers]
    duplicate = next((b for b in ids if ids.count(b) > 1), None)
    if duplicate is not None:
        raise InputError(f"--brokers: broker {duplicate} is listed twice")
    return brokers


def parse_ids(spec: str, option: str) -> list[int]:
    """Comma-separated broker ids; errors name the option and the bad item."""
    from pools.input_limits import MAX_BROKER_ID

    ids = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        try:
            ids.append(int(item))
        except ValueError:
            raise InputError(f"{option}: {item!r} is not a broker id (expected an integer)") from None
        if not 0 <= ids[-1] <= MAX_BROKER_ID:
            raise InputError(f"{option}: {item!r} is not a broker id (expected 0..{MAX_BROKER_ID})")
    if not ids and spec.strip():
        raise InputError(f"{option}: expected broker ids, got {spec!r}")
    if option == "--brokers" and len(ids) != 1:
        raise InputError(f"--brokers: expected id[:rack], got {spec!r}")
    return ids


def _candidates(opts: Mapping[str, Any]) -> tuple[list[tuple[int, str | None]], list[tuple[int, ...]]]:
    """The candidate brokers and, for --add-partitions, the topic's current replicas by partition."""
    if opts["brokers_spec"]:
        return parse_brokers(opts["brokers_spec"]), []
    from pools.snapshot import load_snapshot

    path, topic = opts["snapshot_path"], opts["topic"]
    snapshot = load_snapshot(path)
    brokers = [(b.id, b.rack) for b in snapshot.brokers if opts["pool"] is None or b.pool == opts["pool"]]
    if not brokers:
        pools = sorted({b.pool for b in snapshot.brokers if b.pool})
        raise InputError(f"{path}: pool {opts['pool']!r} has no brokers (pools: {', '.join(pools) or 'none'})")
    partitions = snapshot.partitions_by_topic.get(topic, ())
    if not opts["add_partitions"]:
        if partitions:
            raise InputError(f"{path}: topic {topic!r} already exists; use --add-partitions to grow it")
        return brokers, []
    if not partitions:
        raise InputError(f"{path}: topic {topic!r} has no partitions in the snapshot")
    ids = [p.partition for p in partitions]
    if ids != list(range(len(ids))):
        raise InputError(f"{path}: topic {topic!r}: partitions are not 0..{len(ids) - 1}")
    existing = [p.replicas for p in partitions]
    rf = opts["replication_factor"]
    if rf is not None and rf != len(existing[0]):
        raise InputError(
            f"--replication-factor {rf}: added partitions keep the topic's replication factor {len(existing[0])}"
        )
    return brokers, existing


def _print_partitions(preview: Any) -> None:
    table = Table(title=escape(f"{preview.topic}: {preview.algorithm} placement"))
    table.add_column("partition", justify="right")
    table.add_column("replicas (first = preferred leader)")
    for i, replicas in enumerate(preview.assignments):
        table.add_row(str(preview.first_partition + i), ",".join(map(str, replicas)))
    _console.print(table)


def _print_counts(preview: Any) -> None:
    table = Table(title="per broker")
    for name in ("broker", "rack", "replicas", "leaders"):
        table.add_column(name, justify="left" if name == "rack" else "right")
    for broker, rack, replicas, leaders in preview.broker_counts():
        shown = "-" if rack is None else repr(rack) if rack == "" else escape(rack)
        table.add_row(str(broker), shown, str(replicas), str(leaders))
    _console.print(table)
