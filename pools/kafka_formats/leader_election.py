"""The ``--path-to-json-file`` input of ``kafka-leader-election.sh``: ``{"partitions":[{"topic":..,"partition":..}]}``.

Mirrors ``LeaderElectionCommand.parseReplicaElectionData``: a ``partitions`` array of objects with a
string ``topic`` and an int ``partition``; duplicates are rejected.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pools.errors import InputError
from pools.java_semantics import INT_MAX, INT_MIN
from pools.kafka_formats.java_json import JacksonParseError, encode_compact, read_tree, render_node
from pools.kafka_formats.reassignment import sort_key

__all__ = ["format_leader_election_json", "parse_leader_election_json"]


def format_leader_election_json(partitions: Iterable[tuple[str, int]]) -> str:
    """Compact ``{"partitions":[{"topic":..,"partition":..}]}``, deduplicated, sorted by topic and partition."""
    unique = sorted(set(partitions), key=lambda tp: sort_key(*tp))
    return encode_compact({"partitions": [{"topic": t, "partition": p} for t, p in unique]})


def parse_leader_election_json(text: str, *, source: str = "leader-election.json") -> list[tuple[str, int]]:
    """Read a leader-election file into ``[(topic, partition)]`` in file order.

    Raises
    ------
    InputError
        ``source: partitions[i].topic: expected ...`` for invalid JSON, missing fields, wrong types and
        duplicate partitions.
    """
    try:
        doc = read_tree(text)
    except JacksonParseError as exc:
        raise InputError(f"{source}: invalid JSON: {exc.message}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{source}: expected a JSON object, received {render_node(doc) or 'nothing'}")
    if "partitions" not in doc:
        raise InputError(f'{source}: Replica election data is missing "partitions" field')
    items = doc["partitions"]
    if not isinstance(items, list):
        raise InputError(f"{source}: partitions: expected a JSON array, received {render_node(items)}")
    result: list[tuple[str, int]] = []
    seen: set[tuple[str, int]] = set()
    for i, item in enumerate(items):
        result.append(_entry(item, source, f"partitions[{i}]"))
        if result[-1] in seen:
            t, p = result[-1]
            raise InputError(f"{source}: partitions[{i}]: duplicate partition {t}-{p}")
        seen.add(result[-1])
    return result


def _entry(item: Any, source: str, path: str) -> tuple[str, int]:
    if not isinstance(item, dict):
        raise InputError(f"{source}: {path}: expected a JSON object, received {render_node(item)}")
    for key in ("topic", "partition"):
        if key not in item:
            raise InputError(f"{source}: {path}: No such field exists: `{key}`")
    topic, partition = item["topic"], item["partition"]
    if not isinstance(topic, str):
        raise InputError(f"{source}: {path}.topic: Expected `String` value, received {render_node(topic)}")
    if isinstance(partition, bool) or not isinstance(partition, int) or not INT_MIN <= partition <= INT_MAX:
        raise InputError(f"{source}: {path}.partition: Expected `Integer` value, received {render_node(partition)}")
    return topic, partition
