"""``kafka-topics.sh --describe`` text, Kafka 2.x to 4.x, read into plain values.

Mirrors ``TopicCommand.printDescription``: a topic line ``Topic: t<TAB>TopicId: ..<TAB>PartitionCount: n
<TAB>ReplicationFactor: rf<TAB>Configs: k=v,..[<TAB>MarkedForDeletion: true]`` followed by partition lines
``<TAB>Topic: t<TAB>Partition: p<TAB>Leader: id|none<TAB>Replicas: ..<TAB>Isr: ..[<TAB>Adding Replicas: ..
<TAB>Removing Replicas: ..][<TAB>Elr: ..|N/A<TAB>LastKnownElr: ..|N/A][<TAB>MarkedForDeletion: true]``.
Fields are split on tabs, then on the first colon (2.x printed no space after it); unknown keys are
ignored; partition lines without a topic line (``--under-replicated-partitions``) are accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pools.errors import InputError
from pools.input_limits import INT32_MAX, MAX_BROKER_ID, MAX_PARTITIONS_PER_TOPIC, MAX_REPLICATION_FACTOR

__all__ = ["PartitionDescription", "TopicDescription", "parse_topics_describe"]

#: Log lines the tools mix into captured output (``[2024-..] WARN ...``, ``WARN ...``).
_LOG_LINE = re.compile(r"^(\[[^\]]*\]\s*)?(TRACE|DEBUG|INFO|WARN|WARNING|ERROR)\b")


@dataclass(frozen=True, slots=True)
class PartitionDescription:
    """One partition line. ``leader`` is None for ``none``; ``elr``/``last_known_elr`` None for ``N/A``."""

    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    marked_for_deletion: bool = False
    line: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class TopicDescription:
    """One topic with its partitions in the order printed; ``configs`` holds the non-default configs.

    ``line`` is the line of the topic's header (0 when the output had none), as ``PartitionDescription.line``
    is its partition line's, for messages that point at the text.
    """

    topic: str
    topic_id: str | None
    partition_count: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict, hash=False)
    marked_for_deletion: bool = False
    partitions: tuple[PartitionDescription, ...] = ()
    line: int = field(default=0, compare=False)


def parse_topics_describe(text: str, *, source: str = "<kafka-topics --describe>") -> list[TopicDescription]:
    """Parse ``kafka-topics.sh --describe`` output.

    Parameters
    ----------
    text : str
        The captured output; log lines (e.g. the 3.8+ ``WARN ... DescribeTopicPartitions``) and blank
        lines are skipped.
    source : str
        File name used in error messages.

    Returns
    -------
    list of TopicDescription
        In the order printed.

    Raises
    ------
    InputError
        ``source:line: field: expected ...`` for a missing or malformed required field.
    """
    topics: dict[str, dict] = {}
    first_other = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r\n")
        stripped = line.lstrip(" \t")
        if not stripped.startswith("Topic:"):
            if stripped and first_other is None and not _LOG_LINE.match(stripped):
                first_other = lineno
            continue
        fields = _fields(stripped)
        where = f"{source}:{lineno}"
        name = fields["Topic"]
        if "Partition" in fields:
            part = _partition(fields, where, lineno)
            topics.setdefault(name, {"partitions": []})["partitions"].append(part)
        else:
            entry = topics.setdefault(name, {"partitions": []})
            if "header" in entry:
                raise InputError(f"{where}: Topic: {name!r} is described twice")
            entry["header"] = (
                fields.get("TopicId"),
                _int(fields, "PartitionCount", where, MAX_PARTITIONS_PER_TOPIC),
                _int(fields, "ReplicationFactor", where, MAX_REPLICATION_FACTOR),
                _configs(fields.get("Configs", "")),
                fields.get("MarkedForDeletion", "").strip() == "true",
            )
            entry["line"] = lineno
    if not topics and first_other is not None:
        raise InputError(f"{source}:{first_other}: expected 'Topic: <name>' lines from kafka-topics.sh --describe")
    result = []
    for name, entry in topics.items():
        parts = tuple(entry["partitions"])
        topic_id, count, rf, configs, deleted = entry.get(
            "header", (None, len(parts), max((len(p.replicas) for p in parts), default=0), {}, False)
        )
        result.append(TopicDescription(name, topic_id, count, rf, configs, deleted, parts, entry.get("line", 0)))
    return result


def _fields(line: str) -> dict[str, str]:
    fields = {}
    for chunk in line.split("\t"):
        key, sep, value = chunk.partition(":")
        if sep:
            fields[key.strip()] = value[1:] if value.startswith(" ") else value
    return fields


def _int(fields: dict[str, str], key: str, where: str, high: int = INT32_MAX) -> int:
    if key not in fields:
        raise InputError(f"{where}: {key}: missing (expected '{key}: <integer>')")
    value = fields[key].strip()
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number <= high:
        limit = ""
        if number > high and key.startswith("Partition"):
            limit = f" (the limit of {MAX_PARTITIONS_PER_TOPIC} partitions per topic)"
        raise InputError(f"{where}: {key}: expected an integer in 0..{high}{limit}, got {value!r}")
    return number


def _ids(fields: dict[str, str], key: str, where: str, *, required: bool = False) -> tuple[int, ...] | None:
    if key not in fields:
        if required:
            raise InputError(f"{where}: {key}: missing (expected a comma-separated list of broker ids)")
        return ()
    value = fields[key].strip()
    if value == "N/A":
        return None
    if not value:
        return ()
    try:
        ids = tuple(int(v) for v in value.split(","))
    except ValueError:
        ids = (-1,)
    if min(ids) < 0 or max(ids) > MAX_BROKER_ID:
        raise InputError(f"{where}: {key}: expected a comma-separated list of broker ids, got {value!r}")
    return ids


def _partition(fields: dict[str, str], where: str, lineno: int) -> PartitionDescription:
    leader_text = fields.get("Leader")
    if leader_text is None:
        raise InputError(f"{where}: Leader: missing (expected a broker id or 'none')")
    leader_text = leader_text.strip()
    if leader_text == "none":
        leader = None
    else:
        try:
            leader = int(leader_text)
        except ValueError:
            leader = MAX_BROKER_ID + 1
        if leader > MAX_BROKER_ID:
            raise InputError(f"{where}: Leader: expected a broker id or 'none', got {leader_text!r}")
        leader = None if leader < 0 else leader
    replicas = _ids(fields, "Replicas", where, required=True)
    isr = _ids(fields, "Isr", where, required=True)
    if replicas is None or isr is None:
        raise InputError(f"{where}: Replicas/Isr: expected a list of broker ids, got 'N/A'")
    return PartitionDescription(
        topic=fields["Topic"],
        partition=_int(fields, "Partition", where, MAX_PARTITIONS_PER_TOPIC - 1),
        leader=leader,
        replicas=replicas,
        isr=isr,
        adding_replicas=_ids(fields, "Adding Replicas", where) or (),
        removing_replicas=_ids(fields, "Removing Replicas", where) or (),
        elr=_ids(fields, "Elr", where) if "Elr" in fields else None,
        last_known_elr=_ids(fields, "LastKnownElr", where) if "LastKnownElr" in fields else None,
        marked_for_deletion=fields.get("MarkedForDeletion", "").strip() == "true",
        line=lineno,
    )


def _configs(text: str) -> dict[str, str]:
    """``k=v,k=v``; an item without ``=`` continues the previous value (values such as ``0:1,1:2``)."""
    configs: dict[str, str] = {}
    last = None
    for item in text.strip().split(","):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if sep:
            configs[key] = value
            last = key
        elif last is not None:
            configs[last] += "," + item
    return configs
