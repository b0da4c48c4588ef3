"""kafka-reassign-partitions input handling: the conformance vectors and Kafka's rules case by case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.errors import InputError
from pools.kafka_formats import (
    ReassignmentEntry,
    ReassignmentError,
    calculate_throttles,
    format_current_assignment,
    format_reassignment_json,
    format_topics_to_move_json,
    log_dir_moving_brokers,
    parse_reassignment_json,
    parse_topics_to_move_json,
)

VECTORS = Path(__file__).resolve().parents[2] / "data" / "conformance" / "reassign_json.jsonl"
CASES = [json.loads(line) for line in VECTORS.read_text().splitlines() if line.strip()]


def _execute(inp: dict) -> dict:
    entries = parse_reassignment_json(inp["reassignment_json"], inp.get("cluster"), inp.get("additional", False))
    got = {
        "partitions": [{"topic": e.topic, "partition": e.partition, "replicas": list(e.replicas)} for e in entries],
        "replica_log_dirs": [
            {"topic": e.topic, "partition": e.partition, "replica": r, "log_dir": d}
            for e in entries
            for r, d in zip(e.replicas, e.log_dirs)
            if d != "any"
        ],
        "normalized_json": format_reassignment_json(entries),
    }
    if "cluster" in inp:
        topics = inp["cluster"]["topics"]
        current = {(e.topic, e.partition): topics[e.topic][e.partition] for e in entries}
        throttles = calculate_throttles({(e.topic, e.partition): e.replicas for e in entries}, current)
        got |= {
            "rollback_text": format_current_assignment(current),
            "leader_throttled_replicas": throttles.leader,
            "follower_throttled_replicas": throttles.follower,
            "reassigning_brokers": list(throttles.reassigning_brokers),
            "log_dir_moving_brokers": list(log_dir_moving_brokers(entries)),
        }
    return got


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_conformance_vector(case: dict) -> None:
    inp = case["input"]
    if "error" in case:
        with pytest.raises(ReassignmentError) as info:
            if inp["mode"] == "execute":
                _execute(inp)
            else:
                parse_topics_to_move_json(inp["topics_to_move_json"], inp["broker_list"])
        err = case["error"]
        assert info.value.exception == err["exception"]
        if case.get("jackson_dependent_message"):
            assert str(info.value).split(":")[0:2] == err["printed"].split(":")[0:2]
        else:
            assert info.value.message == err["message"]
            assert str(info.value) == err["printed"]
        return
    if inp["mode"] == "execute":
        assert _execute(inp) == case["expected"]
    else:
        brokers, topics = parse_topics_to_move_json(inp["topics_to_move_json"], inp["broker_list"])
        assert {"brokers": brokers, "topics": topics} == case["expected"]


def _one(**fields) -> str:
    entry = {"topic": "foo", "partition": 0, "replicas": [1, 2]} | fields
    return json.dumps({"version": 1, "partitions": [entry]})


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("", "Error: com.fasterxml.jackson.core.JsonParseException: The input string shouldn't be empty"),
        ("[]", "Error: Expected JSON object, received []"),
        ('{"version": 2, "partitions": []}', "Error: Not supported version field value 2"),
        ('{"version": "1"}', 'Error: Expected `Integer` value, received "1"'),
        ('{"version": 1.0}', "Error: Expected `Integer` value, received 1.0"),
        ('{"version": 1e0}', "Error: Expected `Integer` value, received 1.0"),
        ('{"version": null}', "Error: Expected `Integer` value, received null"),
        ('{"version": 1}', "Error: Partition reassignment list cannot be empty"),
        ('{"partitions": []}', "Error: Partition reassignment list cannot be empty"),
        ('{"partitions": {}}', "Error: Expected JSON array, received {}"),
        ('{"partitions": [1]}', "Error: Expected JSON object, received 1"),
        ('{"partitions": [{"partition": 0, "replicas": [1]}]}', "Error: No such field exists: `topic`"),
        (_one(topic=5), "Error: Expected `String` value, received 5"),
        (_one(partition="0"), 'Error: Expected `Integer` value, received "0"'),
        (_one(partition=3000000000), "Error: Expected `Integer` value, received 3000000000"),
        (_one(partition=True), "Error: Expected `Integer` value, received true"),
        (_one(replicas="1,2"), 'Error: Expected `JSON array` value, received "1,2"'),
        (_one(replicas=[1, "2"]), 'Error: Expected `Integer` value, received "2"'),
        (_one(replicas=[1, {"a": [1, 2.5]}]), 'Error: Expected `Integer` value, received {"a":[1,2.5]}'),
        (_one(log_dirs="any"), 'Error: Expected `JSON array` value, received "any"'),
        (
            _one(log_dirs=["any"]),
            "Error: Size of replicas list [1, 2] is different from size of log dirs list [any] for partition foo-0",
        ),
        (_one(replicas=[]), "Error: Partition replica list cannot be empty"),
        (_one(replicas=[1, 2, 1]), "Error: Partition replica lists may not contain duplicate entries: foo-0 contains multiple entries for 1"),
    ],
)
def test_parse_errors_print_kafkas_line(text: str, printed: str) -> None:
    with pytest.raises(ReassignmentError) as info:
        parse_reassignment_json(text)
    assert str(info.value) == printed
    assert isinstance(info.value, InputError)


def test_log_dirs_length_is_checked_while_parsing_so_it_wins_over_empty_replicas() -> None:
    text = json.dumps({"partitions": [
        {"topic": "foo", "partition": 0, "replicas": []},
        {"topic": "foo", "partition": 1, "replicas": [1], "log_dirs": []},
    ]})
    with pytest.raises(ReassignmentError, match=r"size of log dirs list \[\] for partition foo-1$"):
        parse_reassignment_json(text)


def test_duplicate_messages_follow_hashset_iteration_order() -> None:
    # 17 and 1 share bucket 1 of a 16-slot table: insertion order; 2 and 1 sit in buckets 2 and 1.
    with pytest.raises(ReassignmentError, match="entries for 17,1$"):
        parse_reassignment_json(_one(replicas=[17, 1, 17, 1]))
    with pytest.raises(ReassignmentError, match="entries for 1,2$"):
        parse_reassignment_json(_one(replicas=[2, 1, 2, 1]))
    text = json.dumps({"partitions": [
        {"topic": "b", "partition": 0, "replicas": [1]}, {"topic": "a", "partition": 0, "replicas": [1]},
        {"topic": "b", "partition": 0, "replicas": [1, 1]}, {"topic": "a", "partition": 0, "replicas": [2]},
    ]})
    # hash("a") = 97, hash("b") = 98: TopicPartition hashes 961+97 and 961+98 -> buckets 2 and 3.
    with pytest.raises(ReassignmentError, match="duplicate topic partitions: a-0,b-0$"):
        parse_reassignment_json(text)


def test_trailing_text_after_the_json_value_is_accepted() -> None:
    entries = parse_reassignment_json(_one() + " trailing garbage ]")
    assert entries == [ReassignmentEntry("foo", 0, (1, 2), ("any", "any"))]


def test_syntax_errors_name_jacksons_exception() -> None:
    with pytest.raises(ReassignmentError) as info:
        parse_reassignment_json('{"partitions": [1 2]}')
    assert str(info.value).startswith(
        "Error: com.fasterxml.jackson.core.JsonParseException: Unexpected character ('2' (code 50)): "
        "was expecting comma to separate Array entries"
    )
    with pytest.raises(ReassignmentError) as info:
        parse_reassignment_json('{"partitions": [')
    assert str(info.value).startswith("Error: com.fasterxml.jackson.core.io.JsonEOFException: Unexpected end-of-input")


CLUSTER = {"brokers": [1, 2, 3], "topics": {"foo": [[1, 2], [2, 3]], "bar": [[3]]}}


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        (_one(replicas=[1, 9]), "Error: Unknown broker id 9"),
        (_one(topic="baz"), "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic baz not found."),
        (_one(partition=2), "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Unable to find partition: foo-2"),
        (_one(partition=-1), "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Unable to find partition: foo--1"),
    ],
)
def test_cluster_checks(text: str, printed: str) -> None:
    with pytest.raises(ReassignmentError) as info:
        parse_reassignment_json(text, CLUSTER)
    assert str(info.value) == printed


def test_in_progress_reassignment_needs_additional_and_prints_tersely() -> None:
    cluster = CLUSTER | {"reassignments_in_progress": True}
    with pytest.raises(ReassignmentError) as info:
        parse_reassignment_json(_one(replicas=[1, 9]), cluster)
    assert str(info.value).startswith("Cannot execute because there is an existing partition assignment.  Use --additional")
    with pytest.raises(ReassignmentError, match="Unknown broker id 9"):
        parse_reassignment_json(_one(replicas=[1, 9]), cluster, additional=True)
    assert parse_reassignment_json(_one(replicas=[3, 1]), cluster, additional=True)[0].replicas == (3, 1)


def test_throttle_lists_sort_as_strings_and_count_running_moves() -> None:
    proposed = {("t", 2): [1, 4], ("t", 10): [5, 1]}
    current = {("t", 2): [1, 2], ("t", 10): [1, 2]}
    throttles = calculate_throttles(proposed, current)
    assert throttles.leader == {"t": "10:1,10:2,2:1,2:2"}
    assert throttles.follower == {"t": "10:5,2:4"}
    assert throttles.reassigning_brokers == (1, 2, 4, 5)
    running = calculate_throttles(proposed, current, in_progress={("t", 2): ([1, 2, 3], [3]), ("u", 0): ([7, 8], [8])})
    assert running.leader == {"t": "10:1,10:2,2:1,2:2", "u": "0:7"}
    assert running.follower == {"t": "10:5,2:4", "u": "0:8"}


def test_format_is_kafkas_canonical_compact_form() -> None:
    entries = [ReassignmentEntry("b", 0, (2,), ("/d\n",)), {"topic": "a", "partition": 10, "replicas": [1]},
               {"topic": "a", "partition": 9, "replicas": [3, 1]}]
    assert format_reassignment_json(entries) == (
        '{"version":1,"partitions":[{"topic":"a","partition":9,"replicas":[3,1],"log_dirs":["any","any"]},'
        '{"topic":"a","partition":10,"replicas":[1],"log_dirs":["any"]},'
        '{"topic":"b","partition":0,"replicas":[2],"log_dirs":["/d\\n"]}]}'
    )
    assert parse_reassignment_json(format_reassignment_json(entries))[2].log_dirs == ("/d\n",)


@pytest.mark.parametrize(
    ("broker_list", "text", "printed"),
    [
        ("1, 2", '{"topics": []}', 'Error: For input string: " 2"'),
        ("", '{"topics": []}', 'Error: For input string: ""'),
        ("1,,2", '{"topics": []}', 'Error: For input string: ""'),
        ("1,x", "{", 'Error: For input string: "x"'),
        ("2147483648", "{}", 'Error: For input string: "2147483648"'),
        ("1,1,2,2", "{", "Error: Broker list contains duplicate entries: [1, 2]"),
        ("1", "{", "Error: The input string is not a valid JSON"),
        ("1", "", "Error: The input string is not a valid JSON"),
        ("1", "[]", "Error: Expected JSON object, received []"),
        ("1", '{"version": 2}', "Error: Not supported version field value 2"),
        ("1", '{"topics": [{"name": "a"}]}', "Error: No such field exists: `topic`"),
        ("1", '{"topics": [{"topic": 1}]}', "Error: Expected `String` value, received 1"),
        ("1", '{"topics": [{"topic": "b"}, {"topic": "a"}, {"topic": "b"}, {"topic": "a"}]}',
         "Error: List of topics to reassign contains duplicate entries: [a, b]"),
    ],
)
def test_generate_errors(broker_list: str, text: str, printed: str) -> None:
    with pytest.raises(ReassignmentError) as info:
        parse_topics_to_move_json(text, broker_list)
    assert str(info.value) == printed


def test_generate_broker_list_follows_java_split() -> None:
    assert parse_topics_to_move_json('{"topics":[{"topic":"x"}]}', "1,2,,") == ([1, 2], ["x"])
    assert parse_topics_to_move_json("{}", "+3,-4") == ([3, -4], [])
    assert parse_topics_to_move_json(format_topics_to_move_json(["b", "a"]), [5, 6]) == ([5, 6], ["b", "a"])


_json_leaf = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=4)
_json_any = st.recursive(
    _json_leaf,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
        st.sampled_from(["version", "partitions", "topic", "partition", "replicas", "log_dirs", "x"]), kids, max_size=4
    ),
    max_leaves=12,
)


@given(st.one_of(st.text(max_size=40), _json_any.map(json.dumps)))
def test_any_input_is_accepted_or_rejected_with_kafkas_line(text: str) -> None:
    try:
        entries = parse_reassignment_json(text)
    except ReassignmentError as exc:
        assert str(exc).startswith("Error: ") and exc.exception.count(".") >= 2
    else:
        assert parse_reassignment_json(format_reassignment_json(entries)) == entries


@given(
    st.dictionaries(
        st.tuples(st.text(min_size=1, max_size=6), st.integers(0, 50)),
        st.tuples(st.lists(st.integers(0, 99), min_size=1, max_size=4, unique=True), st.sampled_from(["any", "/d1"])),
        min_size=1,
        max_size=8,
    )
)
def test_format_then_parse_round_trips(assignment: dict) -> None:
    entries = [ReassignmentEntry(t, p, tuple(r), (d,) * len(r)) for (t, p), (r, d) in assignment.items()]
    parsed = parse_reassignment_json(format_reassignment_json(entries))
    assert {(e.topic, e.partition): e for e in parsed} == {(e.topic, e.partition): e for e in entries}
    assert [e.topic.encode("utf-16-be") for e in parsed] == sorted(e.topic.encode("utf-16-be") for e in parsed)
