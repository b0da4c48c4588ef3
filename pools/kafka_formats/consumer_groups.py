"""Parsers for `kafka-consumer-groups.sh --describe` output: offsets, `--members [--verbose]`, `--state`."""

from __future__ import annotations

__all__ = [
    "PartitionOffsets",
    "ConsumerGroupOffsets",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "parse_consumer_groups_describe",
    "parse_consumer_group_members",
    "parse_consumer_group_state",
]

import re
from collections.abc import Iterator
from dataclasses import dataclass

from pools.errors import InputError
from pools.input_limits import INT32_MAX, INT64_MAX, MAX_PARTITIONS_PER_TOPIC

_OFFSETS_HEADER = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG")
_NOTICE = re.compile(r"^Consumer group '(?P<group>.*)' (?P<what>has no active members|is rebalancing)\.$")
_TOPIC_GROUP = re.compile(r"(?P<topic>[^\s(),]*)\((?P<parts>[0-9,\s]*)\)")


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """One row of the offsets table; ``None`` where the tool printed ``-``."""

    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None


@dataclass(frozen=True, slots=True)
class ConsumerGroupOffsets:
    """One group's table: its partitions in printed order and whether it has active members."""

    group: str
    active: bool
    partitions: tuple[PartitionOffsets, ...]

    @property
    def topics(self) -> tuple[str, ...]:
        """The topics the group has offsets for, in first-seen order."""
        return tuple(dict.fromkeys(p.topic for p in self.partitions))

    @property
    def consumers(self) -> tuple[str, ...]:
        """The consumer ids owning partitions, in first-seen order."""
        return tuple(dict.fromkeys(p.consumer_id for p in self.partitions if p.consumer_id is not None))


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """One row of ``--members [--verbose]``.

    ``assignment`` is ``None`` without ``--verbose``; otherwise ``(topic, partitions)`` pairs where the
    topic is ``None`` when the tool (Kafka 3.7+) printed only the partition groups.
    """

    group: str
    consumer_id: str
    group_instance_id: str | None
    host: str
    client_id: str
    partition_count: int
    assignment: tuple[tuple[str | None, tuple[int, ...]], ...] | None


@dataclass(frozen=True, slots=True)
class ConsumerGroupState:
    """One row of ``--state``."""

    group: str
    coordinator: str
    coordinator_id: int
    assignment_strategy: str
    state: str
    members: int


def parse_consumer_groups_describe(text: str, source: str = "<string>") -> tuple[ConsumerGroupOffsets, ...]:
    """Parse ``kafka-consumer-groups.sh --describe --group g | --all-groups`` offsets tables.

    Parameters
    ----------
    text : str
        The tool's output, with or without the standard-error notice lines.
    source : str
        The file name used in error messages.

    Returns
    -------
    tuple of ConsumerGroupOffsets
        One entry per group in printed order; a group announced as having no active members is
        ``active=False``.

    Raises
    ------
    InputError
        Naming ``source:line`` and what was expected, for a row before any header, a short row or a
        value that is neither an integer nor ``-``.

    Notes
    -----
    Mirrors `ConsumerGroupCommand.printOffsets`: fixed-width columns that whitespace splitting reads
    because only CLIENT-ID may contain spaces; it is taken as the rest of the line.

    Examples
    --------
    >>> out = "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID\\n"
    >>> out += "g t 0 5 9 4 c-1 /10.0.0.1 c\\n"
    >>> parse_consumer_groups_describe(out)[0].partitions[0].lag
    4
    """
    groups: dict[str, list[PartitionOffsets]] = {}
    inactive: set[str] = set()
    columns: list[str] | None = None
    for number, line in _lines(text):
        notice = _NOTICE.match(line)
        if notice:
            groups.setdefault(notice["group"], [])
            if notice["what"] == "has no active members":
                inactive.add(notice["group"])
            continue
        fields = line.split()
        if tuple(fields[:6]) == _OFFSETS_HEADER:
            columns = fields
            continue
        if columns is None:
            raise InputError(f"{source}:{number}: expected the header 'GROUP TOPIC PARTITION ...', got {line!r}")
        row = _offsets_row(fields, columns, source, number)
        groups.setdefault(row.group, []).append(row)
    return tuple(
        ConsumerGroupOffsets(
            group,
            group not in inactive and any(r.consumer_id is not None for r in rows),
            tuple(rows),
        )
        for group, rows in groups.items()
    )


def parse_consumer_group_members(text: str, source: str = "<string>") -> tuple[ConsumerGroupMember, ...]:
    """Parse ``kafka-consumer-groups.sh --describe --members [--verbose]``.

    Accepts both ASSIGNMENT spellings (``topic(0,1), other(2)`` up to 3.6, ``(0,1), (2)`` from 3.7)
    and the optional GROUP-INSTANCE-ID column; ``-`` is an empty assignment.

    Raises
    ------
    InputError
        Naming ``source:line``, for a row before any header, a short row, a #PARTITIONS that is not an
        integer, or an ASSIGNMENT that does not list #PARTITIONS partitions.

    Examples
    --------
    >>> out = "GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT\\n"
    >>> out += "g c-1 /10.0.0.1 c 3 t(0,1), u(4)\\n"
    >>> parse_consumer_group_members(out)[0].assignment
    (('t', (0, 1)), ('u', (4,)))
    """
    members: list[ConsumerGroupMember] = []
    columns: list[str] | None = None
    for number, line in _lines(text):
        if _NOTICE.match(line):
            continue
        fields = line.split()
        if fields[:2] == ["GROUP", "CONSUMER-ID"]:
            columns = fields
            continue
        if columns is None:
            raise InputError(f"{source}:{number}: expected the header 'GROUP CONSUMER-ID ...', got {line!r}")
        members.append(_member_row(fields, columns, source, number))
    return tuple(members)


def parse_consumer_group_state(text: str, source: str = "<string>") -> tuple[ConsumerGroupState, ...]:
    """Parse ``kafka-consumer-groups.sh --describe --state``: GROUP COORDINATOR (ID) STRATEGY STATE #MEMBERS.

    Raises
    ------
    InputError
        Naming ``source:line`` for a row that does not have those six fields.
    """
    states: list[ConsumerGroupState] = []
    for number, line in _lines(text):
        fields = line.split()
        if fields[:2] == ["GROUP", "COORDINATOR"] or _NOTICE.match(line):
            continue
        if len(fields) == 5:  # an empty ASSIGNMENT-STRATEGY column (group without members)
            fields.insert(3, "")
        ident = fields[2] if len(fields) == 6 else ""
        if len(fields) != 6 or not re.fullmatch(r"\(-?\d+\)", ident) or not fields[5].isdigit():
            raise InputError(
                f"{source}:{number}: expected 'GROUP HOST:PORT (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS', got {line!r}"
            )
        states.append(ConsumerGroupState(fields[0], fields[1], int(ident[1:-1]), fields[3], fields[4], int(fields[5])))
    return tuple(states)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line:
            yield number, line


def _offsets_row(fields: list[str], columns: list[str], source: str, number: int) -> PartitionOffsets:
    if len(fields) < 6:
        raise InputError(
            f"{source}:{number}: expected at least the 6 columns {' '.join(_OFFSETS_HEADER)}, got {fields!r}")
    extra = dict(zip(columns[6:], fields[6:]))
    client = " ".join(fields[len(columns) - 1 :]) if len(fields) >= len(columns) else None
    return PartitionOffsets(
        group=fields[0],
        topic=fields[1],
        partition=_int(fields[2], "PARTITION", source, number, dash=False, high=MAX_PARTITIONS_PER_TOPIC - 1),
        current_offset=_int(fields[3], "CURRENT-OFFSET", source, number),
        log_end_offset=_int(fields[4], "LOG-END-OFFSET", source, number),
        lag=_int(fields[5], "LAG", source, number, low=-INT64_MAX - 1),
        consumer_id=_dash(extra.get("CONSUMER-ID")),
        host=_dash(extra.get("HOST")),
        client_id=_dash(client),
    )


def _member_row(fields: list[str], columns: list[str], source: str, number: int) -> ConsumerGroupMember:
    with_instance = "GROUP-INSTANCE-ID" in columns
    fixed = 6 if with_instance else 5
    if len(fields) < fixed:
        raise InputError(f"{source}:{number}: expected {' '.join(columns)}, got {fields!r}")
    group, consumer = fields[0], fields[1]
    instance = _dash(fields[2]) if with_instance else None
    host, client, count_text = fields[fixed - 3 : fixed]
    count = _int(count_text, "#PARTITIONS", source, number, dash=False, high=INT32_MAX)
    assignment = None
    if "ASSIGNMENT" in columns:
        assignment = _assignment(" ".join(fields[fixed:]), source, number)
        listed = sum(len(parts) for _, parts in assignment)
        if listed != count:
            raise InputError(f"{source}:{number}: #PARTITIONS is {count} but ASSIGNMENT lists {listed} partitions")
    return ConsumerGroupMember(group, consumer, instance, host, client, count, assignment)


def _assignment(text: str, source: str, number: int) -> tuple[tuple[str | None, tuple[int, ...]], ...]:
    if text in ("", "-"):
        return ()
    groups = list(_TOPIC_GROUP.finditer(text))
    if not groups or _TOPIC_GROUP.sub("", text).replace(",", "").strip():
        raise InputError(
            f"{source}:{number}: expected ASSIGNMENT like 'topic(0,1), other(2)' or '(0,1), (2)', got {text!r}")
    out = tuple(
        (g["topic"] or None, tuple(int(p) for p in g["parts"].replace(" ", "").split(",") if p)) for g in groups
    )
    for _, parts in out:
        if any(p >= MAX_PARTITIONS_PER_TOPIC for p in parts):
            raise InputError(f"{source}:{number}: ASSIGNMENT: a partition is past the limit of "
                             f"{MAX_PARTITIONS_PER_TOPIC} partitions per topic")
    return out


def _int(
    text: str, column: str, source: str, number: int, *, dash: bool = True, low: int = 0, high: int = INT64_MAX
) -> int | None:
    if dash and text == "-":
        return None
    try:
        value = int(text)
    except ValueError:
        wanted = "an integer or '-'" if dash else "an integer"
        raise InputError(f"{source}:{number}: {column} must be {wanted}, got {text!r}") from None
    if not low <= value <= high:
        limit = f" (the limit of {MAX_PARTITIONS_PER_TOPIC} partitions per topic)" if column == "PARTITION" else ""
        raise InputError(f"{source}:{number}: {column} must be an integer in {low}..{high}{limit}, got {text!r}")
    return value


def _dash(text: str | None) -> str | None:
    return None if text in (None, "-") else text
