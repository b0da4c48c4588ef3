"""Reassignment and topics-to-move JSON, read, checked and written as ``kafka-reassign-partitions.sh`` does.

Mirrors ``ReassignPartitionsCommand`` (tools module): ``parsePartitionReassignmentData`` and
``parseExecuteAssignmentArgs`` (``--execute``), the cluster checks of ``executeAssignment``,
``parseGenerateAssignmentArgs``/``parseTopicsData`` (``--generate``), ``formatAsReassignmentJson``,
``calculateProposedMoveMap`` with ``calculateLeaderThrottles``/``calculateFollowerThrottles``/
``calculateReassigningBrokers``, and the rollback text ``--execute`` prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pools.errors import InputError
from pools.java_semantics import (
    INT_MAX,
    INT_MIN,
    hash_order,
    hashset_copy_capacity,
    parse_java_int,
    string_hash,
    topic_partition_hash,
    utf16_key,
)
from pools.kafka_formats.java_json import JacksonParseError, encode_compact, java_list_str, read_tree, render_node

__all__ = [
    "ANY_LOG_DIR",
    "ReassignmentEntry",
    "ReassignmentError",
    "ReassignmentThrottles",
    "parse_reassignment_json",
    "format_reassignment_json",
    "format_current_assignment",
    "parse_topics_to_move_json",
    "format_topics_to_move_json",
    "calculate_throttles",
    "log_dir_moving_brokers",
    "sort_key",
]

ANY_LOG_DIR = "any"
CANNOT_EXECUTE_BECAUSE_OF_EXISTING_MESSAGE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to override "
    "this and create a new partition assignment in addition to the existing one. The --additional flag "
    "can also be used to change the throttle by resubmitting the current reassignment."
)
_JSON_MAPPING = "com.fasterxml.jackson.databind.JsonMappingException"
_ADMIN_OPERATION = "org.apache.kafka.server.common.AdminOperationException"
_ADMIN_COMMAND_FAILED = "org.apache.kafka.server.common.AdminCommandFailedException"
_UNKNOWN_TOPIC = "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"
_EXECUTION = "java.util.concurrent.ExecutionException"
_TERSE = "org.apache.kafka.tools.TerseException"


@dataclass(frozen=True, slots=True)
class ReassignmentEntry:
    """One partition of a reassignment file: target replicas (first = preferred leader) and log dirs."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.replicas) != len(self.log_dirs):
            raise ValueError(
                f"{self.topic}-{self.partition}: {len(self.replicas)} replicas but {len(self.log_dirs)} log dirs"
            )


@dataclass(frozen=True, slots=True)
class ReassignmentThrottles:
    """The throttle configuration ``--execute --throttle`` sets.

    ``leader`` and ``follower`` map each topic to its ``leader.replication.throttled.replicas`` /
    ``follower.replication.throttled.replicas`` value; ``reassigning_brokers`` get the rate.
    """

    leader: dict[str, str]
    follower: dict[str, str]
    reassigning_brokers: tuple[int, ...]


class ReassignmentError(InputError):
    """A reassignment or topics-to-move input Kafka's tool rejects; ``str()`` is the line it prints.

    ``exception`` is the Java exception class, ``message`` its ``getMessage()`` (first line) and
    ``printed`` the tool's first output line: ``"Error: " + message``, or the bare message for a
    ``TerseException``.
    """

    def __init__(self, exception: str, message: str, cause: str | None = None) -> None:
        self.exception = exception
        self.message = message
        self.cause = cause
        self.printed = message if exception == _TERSE else f"Error: {message}"
        super().__init__(self.printed)


def sort_key(topic: str, partition: int) -> tuple[bytes, int]:
    """Kafka's ``compareTopicPartitions`` order: topic by ``String.compareTo``, then partition."""
    return utf16_key(topic), partition


def parse_reassignment_json(
    text: str, cluster: Mapping[str, Any] | None = None, additional: bool = False
) -> list[ReassignmentEntry]:
    """Parse and validate a ``--reassignment-json-file`` exactly as ``--execute`` does.

    Parameters
    ----------
    text : str
        The file's content.
    cluster : mapping, optional
        ``{"brokers": [ids], "topics": {topic: [[replicas] per partition]},
        "reassignments_in_progress": bool}``; when given, the checks ``executeAssignment`` makes
        against the cluster follow the parse checks.
    additional : bool
        ``--additional``: allow executing while another reassignment is in progress.

    Returns
    -------
    list of ReassignmentEntry
        Sorted by topic and partition; ``log_dirs`` filled with ``"any"`` where absent.

    Raises
    ------
    ReassignmentError
        In Kafka's order: JSON syntax, ``version``, ``partitions``, field types, ``log_dirs`` length,
        empty list, empty replicas, duplicate partitions, duplicate replicas; then in-progress
        reassignment, unknown broker, unknown topic, unknown partition.

    Examples
    --------
    >>> parse_reassignment_json('{"partitions":[{"topic":"foo","partition":0,"replicas":[2,1]}]} junk')
    [ReassignmentEntry(topic='foo', partition=0, replicas=(2, 1), log_dirs=('any', 'any'))]
    >>> parse_reassignment_json('{"partitions":[{"topic":"foo","partition":0,"replicas":[1,1e0]}]}')
    Traceback (most recent call last):
    ...
    pools.kafka_formats.reassignment.ReassignmentError: Error: Expected `Integer` value, received 1.0
    """
    entries = _parse_partitions(text)
    _validate_execute(entries)
    if cluster is not None:
        _check_against_cluster(entries, cluster, additional)
    return sorted(entries, key=lambda e: sort_key(e.topic, e.partition))


def format_reassignment_json(entries: Iterable[ReassignmentEntry | Mapping[str, Any]]) -> str:
    """``formatAsReassignmentJson``: compact, sorted by topic and partition, ``log_dirs`` always present.

    Accepts `ReassignmentEntry` values or mappings with ``topic``, ``partition``, ``replicas`` and
    optional ``log_dirs``.

    Examples
    --------
    >>> format_reassignment_json([{"topic": "b", "partition": 0, "replicas": [3]},
    ...                           {"topic": "a", "partition": 1, "replicas": [1, 2]}])
    '{"version":1,"partitions":[{"topic":"a","partition":1,"replicas":[1,2],"log_dirs":["any","any"]},{"topic":"b","partition":0,"replicas":[3],"log_dirs":["any"]}]}'
    """
    rows = []
    for e in entries:
        if isinstance(e, ReassignmentEntry):
            topic, partition, replicas, dirs = e.topic, e.partition, list(e.replicas), list(e.log_dirs)
        else:
            topic, partition, replicas = e["topic"], int(e["partition"]), [int(r) for r in e["replicas"]]
            dirs = list(e.get("log_dirs") or [ANY_LOG_DIR] * len(replicas))
        rows.append((sort_key(topic, partition), topic, partition, replicas, dirs))
    rows.sort(key=lambda r: r[0])
    partitions = [{"topic": t, "partition": p, "replicas": r, "log_dirs": d} for _, t, p, r, d in rows]
    return encode_compact({"version": 1, "partitions": partitions})


def format_current_assignment(current: Mapping[tuple[str, int], Sequence[int]]) -> str:
    """The rollback text ``--execute`` prints: the current replicas of the partitions it moves."""
    entries = [ReassignmentEntry(t, p, tuple(r), (ANY_LOG_DIR,) * len(r)) for (t, p), r in current.items()]
    return (
        "Current partition replica assignment\n\n"
        f"{format_reassignment_json(entries)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )


def parse_topics_to_move_json(text: str, broker_list: str | Sequence[int]) -> tuple[list[int], list[str]]:
    """Parse ``--broker-list`` and ``--topics-to-move-json-file`` as ``--generate`` does.

    Returns ``(brokers, topics)`` in the order given.

    Raises
    ------
    ReassignmentError
        Broker list syntax (Java ``split(",")`` then ``Integer.parseInt``) or duplicates, invalid JSON
        (``The input string is not a valid JSON``), ``version``, field types, duplicate topics.
    """
    if not isinstance(broker_list, str):
        broker_list = ",".join(str(b) for b in broker_list)
    parts = broker_list.split(",")
    while parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if parts == [""] and broker_list != "":
        parts = []
    try:
        brokers = [parse_java_int(p) for p in parts]
    except ValueError as exc:
        raise ReassignmentError("java.lang.NumberFormatException", str(exc)) from None
    dup_brokers = _duplicates(brokers, lambda b: b)
    if dup_brokers:
        raise ReassignmentError(
            _ADMIN_COMMAND_FAILED, f"Broker list contains duplicate entries: {java_list_str(dup_brokers)}"
        )
    topics = _parse_topics(text)
    dup_topics = _duplicates(topics, string_hash)
    if dup_topics:
        raise ReassignmentError(
            _ADMIN_COMMAND_FAILED,
            f"List of topics to reassign contains duplicate entries: {java_list_str(dup_topics)}",
        )
    return brokers, topics


def format_topics_to_move_json(topics: Iterable[str]) -> str:
    """A topics-to-move file for ``--generate``: ``{"version":1,"topics":[{"topic":..},..]}``."""
    return encode_compact({"version": 1, "topics": [{"topic": t} for t in topics]})


def calculate_throttles(
    proposed: Mapping[tuple[str, int], Sequence[int]],
    current: Mapping[tuple[str, int], Sequence[int]],
    *,
    in_progress: Mapping[tuple[str, int], tuple[Sequence[int], Sequence[int]]] | None = None,
) -> ReassignmentThrottles:
    """The topic and broker throttles ``--execute --throttle`` sets for a reassignment.

    Parameters
    ----------
    proposed : mapping
        ``(topic, partition) -> target replicas``.
    current : mapping
        ``(topic, partition) -> current replicas`` of at least the proposed partitions.
    in_progress : mapping, optional
        Reassignments already running: ``(topic, partition) -> (replicas, adding_replicas)``.

    Notes
    -----
    Mirrors ``calculateProposedMoveMap``: a partition's sources are its current replicas (those of a
    running reassignment minus its adding replicas), its destinations the targets not among them.
    Leader throttles list ``partition:source``, follower throttles ``partition:destination``, each
    sorted as strings (``10:1`` before ``2:1``); every source and destination is a reassigning broker.

    Examples
    --------
    >>> t = calculate_throttles({("t", 10): [3, 1], ("t", 2): [1, 4]}, {("t", 10): [1, 2], ("t", 2): [1, 2]})
    >>> t.leader, t.follower, t.reassigning_brokers
    ({'t': '10:1,10:2,2:1,2:2'}, {'t': '10:3,2:4'}, (1, 2, 3, 4))
    """
    moves: dict[str, dict[int, tuple[frozenset[int], frozenset[int]]]] = {}
    for (topic, partition), (replicas, adding) in (in_progress or {}).items():
        sources = frozenset(replicas) - frozenset(adding)
        moves.setdefault(topic, {})[partition] = (sources, frozenset(adding))
    for (topic, partition), replicas in proposed.items():
        part_moves = moves.setdefault(topic, {})
        if partition in part_moves:
            sources = part_moves[partition][0]
        elif (topic, partition) in current:
            sources = frozenset(current[(topic, partition)])
        else:
            raise ValueError(f"Trying to reassign a topic partition {topic}-{partition} with 0 replicas")
        part_moves[partition] = (sources, frozenset(replicas) - sources)
    leader, follower, brokers = {}, {}, set()
    for topic, part_moves in moves.items():
        leader[topic] = ",".join(sorted({f"{p}:{b}" for p, (src, _) in part_moves.items() for b in src}))
        follower[topic] = ",".join(
            sorted({f"{p}:{b}" for p, (src, dst) in part_moves.items() for b in dst if b not in src})
        )
        for src, dst in part_moves.values():
            brokers |= src | dst
    return ReassignmentThrottles(dict(sorted(leader.items())), dict(sorted(follower.items())), tuple(sorted(brokers)))


def log_dir_moving_brokers(entries: Iterable[ReassignmentEntry]) -> tuple[int, ...]:
    """Brokers that get a ``--replica-alter-log-dirs-throttle``: those with a non-``any`` log dir."""
    return tuple(
        sorted({r for e in entries for r, d in zip(e.replicas, e.log_dirs, strict=True) if d != ANY_LOG_DIR})
    )


# -- parsing ---------------------------------------------------------------------------------


def _tree(text: str) -> Any:
    if not text:
        raise ReassignmentError(
            _ADMIN_OPERATION, "com.fasterxml.jackson.core.JsonParseException: The input string shouldn't be empty"
        )
    try:
        return read_tree(text)
    except JacksonParseError as exc:
        raise ReassignmentError(_ADMIN_OPERATION, f"{exc.java_class}: {exc.message}") from None


def _mapping_error(message: str) -> ReassignmentError:
    return ReassignmentError(_JSON_MAPPING, message)


def _as_object(node: Any) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise _mapping_error(f"Expected JSON object, received {render_node(node)}")
    return node


def _as_array(node: Any) -> list[Any]:
    if not isinstance(node, list):
        raise _mapping_error(f"Expected JSON array, received {render_node(node)}")
    return node


def _field(obj: dict[str, Any], name: str) -> Any:
    if name not in obj:
        raise _mapping_error(f"No such field exists: `{name}`")
    return obj[name]


def _to_int(node: Any) -> int:
    if isinstance(node, bool) or not isinstance(node, int) or not INT_MIN <= node <= INT_MAX:
        raise _mapping_error(f"Expected `Integer` value, received {render_node(node)}")
    return node


def _to_str(node: Any) -> str:
    if not isinstance(node, str):
        raise _mapping_error(f"Expected `String` value, received {render_node(node)}")
    return node


def _to_list(node: Any, decode: Any) -> list[Any]:
    if not isinstance(node, list):
        raise _mapping_error(f"Expected `JSON array` value, received {render_node(node)}")
    return [decode(n) for n in node]


def _version(root: dict[str, Any]) -> int:
    version = _to_int(root["version"]) if "version" in root else 1
    if version != 1:
        raise ReassignmentError(_ADMIN_OPERATION, f"Not supported version field value {version}")
    return version


def _parse_partitions(text: str) -> list[ReassignmentEntry]:
    root = _as_object(_tree(text))
    _version(root)
    entries = []
    for item in _as_array(root["partitions"]) if "partitions" in root else []:
        fields = _as_object(item)
        topic = _to_str(_field(fields, "topic"))
        partition = _to_int(_field(fields, "partition"))
        replicas = _to_list(_field(fields, "replicas"), _to_int)
        dirs = _to_list(fields["log_dirs"], _to_str) if "log_dirs" in fields else [ANY_LOG_DIR] * len(replicas)
        if len(replicas) != len(dirs):
            raise ReassignmentError(
                _ADMIN_COMMAND_FAILED,
                f"Size of replicas list {java_list_str(replicas)} is different from size of log dirs list "
                f"{java_list_str(dirs)} for partition {topic}-{partition}",
            )
        entries.append(ReassignmentEntry(topic, partition, tuple(replicas), tuple(dirs)))
    return entries


def _parse_topics(text: str) -> list[str]:
    if not text:
        raise ReassignmentError(_ADMIN_OPERATION, "The input string is not a valid JSON")
    try:
        tree = read_tree(text)
    except JacksonParseError:
        raise ReassignmentError(_ADMIN_OPERATION, "The input string is not a valid JSON") from None
    root = _as_object(tree)
    _version(root)
    return [_to_str(_field(_as_object(t), "topic")) for t in (_as_array(root["topics"]) if "topics" in root else [])]


# -- validation --------------------------------------------------------------------------------


def _tp_hash(tp: tuple[str, int]) -> int:
    return topic_partition_hash(tp[0], tp[1])


def _duplicates(items: Sequence[Any], hash_of: Any) -> list[Any]:
    """``ToolsUtils.duplicates``: the repeated items, in ``HashSet`` iteration order."""
    seen: set[Any] = set()
    repeated = []
    for item in items:
        if item in seen:
            repeated.append(item)
        seen.add(item)
    return hash_order(repeated, hash_of)


def _validate_execute(entries: list[ReassignmentEntry]) -> None:
    if not entries:
        raise ReassignmentError(_ADMIN_COMMAND_FAILED, "Partition reassignment list cannot be empty")
    if any(not e.replicas for e in entries):
        raise ReassignmentError(_ADMIN_COMMAND_FAILED, "Partition replica list cannot be empty")
    dup_parts = _duplicates([(e.topic, e.partition) for e in entries], _tp_hash)
    if dup_parts:
        raise ReassignmentError(
            _ADMIN_COMMAND_FAILED,
            "Partition reassignment contains duplicate topic partitions: " + ",".join(f"{t}-{p}" for t, p in dup_parts),
        )
    messages = []
    for e in entries:
        dups = _duplicates(e.replicas, lambda b: b)
        if dups:
            messages.append(f"{e.topic}-{e.partition} contains multiple entries for {','.join(map(str, dups))}")
    if messages:
        raise ReassignmentError(
            _ADMIN_COMMAND_FAILED, "Partition replica lists may not contain duplicate entries: " + ". ".join(messages)
        )


def _check_against_cluster(entries: list[ReassignmentEntry], cluster: Mapping[str, Any], additional: bool) -> None:
    if cluster.get("reassignments_in_progress") and not additional:
        raise ReassignmentError(_TERSE, CANNOT_EXECUTE_BECAUSE_OF_EXISTING_MESSAGE)
    replicas_of = {(e.topic, e.partition): e.replicas for e in entries}
    proposed = hash_order(list(replicas_of), _tp_hash)
    brokers = hash_order([b for tp in proposed for b in replicas_of[tp]], lambda b: b)
    known = set(cluster.get("brokers", ()))
    unknown = [b for b in brokers if b not in known]
    if unknown:
        raise ReassignmentError(_ADMIN_COMMAND_FAILED, f"Unknown broker id {unknown[0]}")
    topics = cluster.get("topics", {})
    for topic in hash_order([t for t, _ in proposed], string_hash):
        if topic not in topics:
            message = f"{_UNKNOWN_TOPIC}: Topic {topic} not found."
            raise ReassignmentError(_EXECUTION, message, cause=f"Topic {topic} not found.")
    missing = [(t, p) for t, p in proposed if not 0 <= p < len(topics[t])]
    if missing:
        capacity = hashset_copy_capacity(len(proposed))
        names = ", ".join(f"{t}-{p}" for t, p in hash_order(missing, _tp_hash, initial_capacity=capacity))
        cause = f"Unable to find partition: {names}"
        raise ReassignmentError(_EXECUTION, f"{_UNKNOWN_TOPIC}: {cause}", cause=cause)
