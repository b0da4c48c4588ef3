"""Broker-side uniform and range assignors: Kafka's conformance vectors and invariants on random groups."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.assignors.errors import AssignorError
from planner.assignors.server import assign_server, build_group_spec, parse_uuid
from pools.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "data" / "conformance"


def _steps(name: str) -> list[pytest.param]:
    params = []
    for line in (DATA / name).read_text().splitlines():
        case = json.loads(line)
        for step in case["steps"]:
            params.append(pytest.param(case["assignor"], step, id=f"{case['id']}-{step['step']}"))
    return params


STEPS = _steps("uniform_server.jsonl") + _steps("range_server.jsonl")


def _topics(step: dict) -> list[dict]:
    return [{k: t[k] for k in ("name", "topic_id", "partitions")} for t in step["input"]["topics"]]


@pytest.mark.parametrize(("assignor", "step"), STEPS)
def test_conformance_vector(assignor: str, step: dict) -> None:
    topics, members = _topics(step), step["input"]["members"]
    if "error" in step:
        with pytest.raises(AssignorError) as info:
            assign_server(assignor, topics, members)
        assert str(info.value) == step["error"]["message"]
    else:
        assert assign_server(assignor, topics, members) == step["expected"]["assignment"]


@pytest.mark.parametrize(("assignor", "step"), STEPS)
def test_group_spec_reproduces_java_orders(assignor: str, step: dict) -> None:
    spec = build_group_spec(_topics(step), step["input"]["members"])
    recorded = step["input"].get("subscription_type")
    if recorded:
        assert spec.subscription_type == recorded
    recorded_order = step["input"].get("java_hashmap_member_order")
    if recorded_order is not None:
        assert [m.member_id for m in spec.members] == recorded_order


def test_parse_uuid_matches_recorded_halves() -> None:
    line = json.loads((DATA / "uniform_server.jsonl").read_text().splitlines()[0])
    for topic in line["steps"][0]["input"]["topics"]:
        assert parse_uuid(topic["topic_id"]) == (topic["msb"], topic["lsb"])


@pytest.mark.parametrize(
    ("topic_id", "match"),
    [("AAAA", "decoded as 3 bytes"), ("!!!!!!!!!!!!!!!!!!!!!!", "not valid"), ("A" * 25, "at most 24")],
)
def test_parse_uuid_rejects_malformed(topic_id: str, match: str) -> None:
    with pytest.raises(AssignorError, match=match):
        parse_uuid(topic_id)


def test_bad_input_is_an_input_error_naming_the_field() -> None:
    topics = [{"name": "t", "topic_id": _uuid(1), "partitions": 2}]
    with pytest.raises(InputError, match=r"members\[1\]: duplicate member_id 'a'"):
        assign_server("uniform", topics, [_member("a", ["t"]), _member("a", ["t"])])
    with pytest.raises(InputError, match="unknown server assignor 'sticky'"):
        assign_server("sticky", topics, [])
    with pytest.raises(InputError, match=r"current_assignment\['t'\]: expected partition ids in \[0, 2\)"):
        assign_server("uniform", topics, [_member("a", ["t"], {"t": [2]})])


def test_empty_group_and_empty_subscriptions() -> None:
    topics = [{"name": "t", "topic_id": _uuid(1), "partitions": 2}]
    assert assign_server("uniform", topics, []) == {}
    assert assign_server("range", topics, [_member("a", []), _member("b", [])]) == {"a": {}, "b": {}}


def test_range_missing_topic_message() -> None:
    topics = [{"name": "t", "topic_id": _uuid(1), "partitions": -1}]
    with pytest.raises(AssignorError, match="^Member is subscribed to a non-existent topic$"):
        assign_server("range", topics, [_member("a", ["t"])])


# --- invariants on random groups ---------------------------------------------------------------


def _uuid(n: int) -> str:
    return base64.urlsafe_b64encode(n.to_bytes(16, "big")).rstrip(b"=").decode()


def _member(member_id: str, topics: list[str], owned: dict | None = None, instance_id: str | None = None) -> dict:
    return {
        "member_id": member_id,
        "instance_id": instance_id,
        "rack": None,
        "topics": topics,
        "current_assignment": owned or {},
    }


@st.composite
def groups(draw: st.DrawFn, homogeneous: bool) -> tuple[list[dict], list[dict]]:
    n_topics = draw(st.integers(1, 5))
    topics = [
        {"name": f"t{i}", "topic_id": _uuid(draw(st.integers(1, 2**128 - 1))), "partitions": draw(st.integers(0, 40))}
        for i in range(n_topics)
    ]
    if len({t["topic_id"] for t in topics}) < n_topics:
        topics = [dict(t, topic_id=_uuid(i + 1)) for i, t in enumerate(topics)]
    names = [t["name"] for t in topics]
    n_members = draw(st.integers(1, 8))
    ids = draw(st.lists(st.text("abcAB0-", min_size=1, max_size=4), min_size=n_members, max_size=n_members, unique=True))
    subs = [names if homogeneous else draw(st.lists(st.sampled_from(names), unique=True)) for _ in ids]
    # a random previous owner per partition (possibly nobody), never two owners
    owned: list[dict[str, list[int]]] = [{} for _ in ids]
    for t in topics:
        for p in range(t["partitions"]):
            who = draw(st.integers(-1, n_members - 1))
            if who >= 0:
                owned[who].setdefault(t["name"], []).append(p)
    members = [_member(m, s, o) for m, s, o in zip(ids, subs, owned)]
    return topics, members


def _check_valid(topics: list[dict], members: list[dict], result: dict) -> None:
    assert list(result) == [m["member_id"] for m in members]
    seen: dict[tuple[str, int], str] = {}
    subs = {m["member_id"]: set(m["topics"]) for m in members}
    for member_id, per_topic in result.items():
        for topic, parts in per_topic.items():
            assert topic in subs[member_id], "assigned a topic the member does not subscribe to"
            assert parts == sorted(parts)
            for p in parts:
                assert (topic, p) not in seen, "partition assigned twice"
                seen[(topic, p)] = member_id
    subscribed = set().union(*subs.values()) if subs else set()
    expected = {(t["name"], p) for t in topics if t["name"] in subscribed for p in range(t["partitions"])}
    assert set(seen) == expected


@given(groups(homogeneous=True))
def test_uniform_homogeneous_is_valid_balanced_and_sticky(group: tuple[list[dict], list[dict]]) -> None:
    topics, members = group
    result = assign_server("uniform", topics, members)
    _check_valid(topics, members, result)
    sizes = [sum(map(len, a.values())) for a in result.values()]
    assert max(sizes) - min(sizes) <= 1
    floor = sum(t["partitions"] for t in topics) // len(members)
    for m in members:
        owned = {(t, p) for t, ps in m["current_assignment"].items() for p in ps}
        kept = {(t, p) for t, ps in result[m["member_id"]].items() for p in ps} & owned
        assert len(kept) >= min(len(owned), floor)
    again = [dict(m, current_assignment=result[m["member_id"]]) for m in members]
    assert assign_server("uniform", topics, again) == result


@given(groups(homogeneous=False))
def test_uniform_heterogeneous_is_valid_and_a_fixpoint(group: tuple[list[dict], list[dict]]) -> None:
    topics, members = group
    result = assign_server("uniform", topics, members)
    _check_valid(topics, members, result)
    again = [dict(m, current_assignment=result[m["member_id"]]) for m in members]
    assert assign_server("uniform", topics, again) == result


@given(groups(homogeneous=False))
def test_range_gives_contiguous_balanced_ranges(group: tuple[list[dict], list[dict]]) -> None:
    topics, members = group
    result = assign_server("range", topics, members)
    _check_valid(topics, members, result)
    for t in topics:
        subscribers = [m["member_id"] for m in members if t["name"] in m["topics"]]
        counts = [len(result[m].get(t["name"], [])) for m in subscribers]
        if counts:
            assert max(counts) - min(counts) <= 1
        for m in subscribers:
            parts = result[m].get(t["name"], [])
            assert parts == list(range(parts[0], parts[0] + len(parts))) if parts else True
    # range ignores the current assignment
    fresh = [dict(m, current_assignment={}) for m in members]
    assert assign_server("range", topics, fresh) == result


@given(st.lists(st.integers(0, 200_000), min_size=1, max_size=300, unique=True))
def test_owned_partitions_follow_java_hashset_integer_order(partitions: list[int]) -> None:
    from planner.assignors.server_spec import hashset_order
    from pools.java_semantics import hash_order, hashset_copy_capacity

    expected = hash_order(partitions, lambda p: p, initial_capacity=hashset_copy_capacity(len(partitions)))
    assert list(hashset_order(partitions)) == expected


@given(st.lists(st.integers(0, 6), min_size=1, max_size=12), st.integers(0, 40))
def test_bulk_least_loaded_matches_one_at_a_time(sizes: list[int], count: int) -> None:
    from planner.assignors.server_uniform import _Balancer

    one_sizes, bulk_sizes = list(sizes), list(sizes)
    one, bulk = _Balancer(one_sizes), _Balancer(bulk_sizes)
    members = list(range(len(sizes)))
    one.initialize(members)
    bulk.initialize(members)
    singles = []
    for _ in range(count):
        index = one.next_least_loaded()
        singles.append(index)
        one_sizes[index] += 1  # the builder assigns before asking again
    assert bulk.next_least_loaded_many(count) == singles


def test_subscription_size_counts_unresolved_names_like_topic_ids() -> None:
    topics = [{"name": f"t{i}", "topic_id": _uuid(i + 1), "partitions": 1} for i in range(11)]
    names = [t["name"] for t in topics] + ["deleted"]
    spec = build_group_spec(topics, [_member("a", names + ["t0"])])
    (member,) = spec.members
    assert len(member.topic_ids) == 11 and member.subscription_size == 12  # `TopicIds.size()` sizes the HashSet
