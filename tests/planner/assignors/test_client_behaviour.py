"""Targeted Kafka behaviours of the client assignors: static members, racks, claims, errors."""

from __future__ import annotations

import pytest

from planner.assignors import AssignorError, assign
from planner.assignors.common import java_member_order, parse_members
from planner.assignors.sticky_movements import _JavaHashSet
from pools.java_semantics import hash_order, topic_partition_hash
from pools.errors import InputError


def member(mid, topics, *, instance=None, rack=None, owned=None, generation=None):
    return {"member_id": mid, "group_instance_id": instance, "rack": rack, "topics": list(topics),
            "owned_partitions": owned or {}, "generation": generation}


def test_static_members_sort_before_dynamic_ones_by_instance_id() -> None:
    members = [member("a", ["t"]), member("z", ["t"], instance="i1"), member("m", ["t"], instance="")]
    got = assign("range", {"t": 3}, members)
    # "" is a static instance id and sorts first, then "i1", then the dynamic member.
    assert got == {"a": {"t": [2]}, "z": {"t": [1]}, "m": {"t": [0]}}


def test_member_ids_compare_as_utf16_code_units() -> None:
    members = [member("C2", ["t"]), member("C10", ["t"])]
    assert assign("range", {"t": 3}, members) == {"C2": {"t": [2]}, "C10": {"t": [0, 1]}}


def test_empty_consumer_rack_counts_as_no_rack() -> None:
    racks = {"t": [["r1"], ["r2"]]}
    with_empty = [member("a", ["t"], rack=""), member("b", ["t"], rack="r1")]
    got = assign("range", {"t": 2}, with_empty, racks)
    # A rack-less consumer matches every partition in the rack pass, so a (first in order) takes
    # partition 0; were "" a rack, a would match nothing and b would take partition 0.
    assert got == {"a": {"t": [0]}, "b": {"t": [1]}}
    assert got == assign("range", {"t": 2}, [member("a", ["t"]), member("b", ["t"], rack="r1")], racks)


def test_rack_aware_range_keeps_per_topic_quota() -> None:
    racks = {"t": [["r1"], ["r1"], ["r1"], ["r2"]]}
    members = [member("a", ["t"], rack="r1"), member("b", ["t"], rack="r2")]
    got = assign("range", {"t": 4}, members, racks)
    assert got == {"a": {"t": [0, 1]}, "b": {"t": [2, 3]}}


def test_roundrobin_skips_members_not_subscribed() -> None:
    members = [member("a", ["t0"]), member("b", ["t0", "t1"])]
    assert assign("roundrobin", {"t0": 2, "t1": 2}, members) == {"a": {"t0": [0]}, "b": {"t0": [1], "t1": [0, 1]}}


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("sticky", {"a": {"t": [0, 1]}, "b": {"t": [2, 3]}}),
        # The doubly-claimed partition counts as transferring and is withheld for one round.
        ("cooperative-sticky", {"a": {"t": [0]}, "b": {"t": [2, 3]}}),
    ],
)
def test_same_generation_double_claim_is_revoked_from_both(strategy: str, expected: dict) -> None:
    members = [
        member("a", ["t"], owned={"t": [0, 1]}, generation=3),
        member("b", ["t"], owned={"t": [1, 2]}, generation=3),
    ]
    assert assign(strategy, {"t": 4}, members) == expected


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_older_generation_claim_loses(strategy: str) -> None:
    members = [
        member("old", ["t"], owned={"t": [0, 1]}, generation=1),
        member("new", ["t"], owned={"t": [1]}, generation=2),
    ]
    got = assign(strategy, {"t": 2}, members)
    assert got == {"old": {"t": [0]}, "new": {"t": [1]}}


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_vanished_topic_claims_are_dropped(strategy: str) -> None:
    members = [
        member("a", ["t", "gone"], owned={"t": [0], "gone": [0, 1]}, generation=1),
        member("b", ["t", "gone"], owned={"t": [1]}, generation=1),
    ]
    assert assign(strategy, {"t": 2}, members) == {"a": {"t": [0]}, "b": {"t": [1]}}


def test_cooperative_withholds_partition_still_owned_by_another_member() -> None:
    members = [
        member("a", ["t"], owned={"t": [0, 1, 2, 3]}, generation=1),
        member("b", ["t"], generation=None),
    ]
    got = assign("cooperative-sticky", {"t": 4}, members)
    assert got == {"a": {"t": [0, 1]}, "b": {}}
    eager = assign("sticky", {"t": 4}, members)
    assert eager == {"a": {"t": [0, 1]}, "b": {"t": [2, 3]}}


def test_subscription_change_takes_the_general_path_and_revokes() -> None:
    members = [
        member("a", ["t0"], owned={"t0": [0], "t1": [0]}, generation=1),
        member("b", ["t0", "t1"], owned={"t0": [1], "t1": [1]}, generation=1),
    ]
    got = assign("cooperative-sticky", {"t0": 2, "t1": 2}, members)
    # a drops t1: t1-0 goes to b and, to rebalance, t0-1 moves from b to a. Both are still owned
    # by their old member, so the cooperative assignor withholds them this round.
    assert got == {"a": {"t0": [0]}, "b": {"t1": [1]}}
    assert assign("sticky", {"t0": 2, "t1": 2}, members) == {"a": {"t0": [0, 1]}, "b": {"t1": [0, 1]}}


def test_java_member_order_follows_hashmap_buckets() -> None:
    ms = parse_members([member(m, []) for m in ("consumer-10", "consumer-2", "a", "B")])
    # bucket = (h ^ h >>> 16) & 15 of String.hashCode: "a" (97 -> 1), "B" (66 -> 2) come first.
    assert [m.member_id for m in java_member_order(ms)][:2] == ["a", "B"]


def test_java_hashset_first_follows_buckets_resizes_and_removals() -> None:
    s = _JavaHashSet()
    inserted = [("t", p) for p in (40, 7, 23, 1, 55, 16, 3, 31, 9, 64, 2, 12, 48, 5)]  # 14 > 12: resized to 32
    for tp in inserted:
        s.add(tp)
    for gone in inserted[::3]:
        s.remove(gone)
    remaining = [tp for tp in inserted if tp not in inserted[::3]]
    expected = hash_order(remaining, lambda tp: topic_partition_hash(*tp), initial_capacity=32)
    assert s.first() == expected[0]


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_no_members_gives_empty_assignment(strategy: str) -> None:
    assert assign(strategy, {"t": 3}, []) == {}


def test_sticky_with_no_members_fails_like_kafka() -> None:
    with pytest.raises(AssignorError, match="/ by zero"):
        assign("sticky", {"t": 3}, [])


def test_unknown_strategy_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown client assignor 'fair'"):
        assign("fair", {"t": 1}, [member("a", ["t"])])


@pytest.mark.parametrize(
    ("members", "topics", "message"),
    [
        ([member("a", ["t"]), member("a", ["t"])], {"t": 1}, r"members\[1\]\.member_id: duplicate member id 'a'"),
        ([{**member("a", []), "topics": "t"}], {"t": 1}, r"members\[0\]\.topics: expected a list"),
        ([member("a", ["t"], generation="1")], {"t": 1}, r"members\[0\]\.generation"),
        ([member("a", ["t"], owned={"t": [-1]})], {"t": 1}, r"members\[0\]\.owned_partitions\['t'\]"),
        ([member("a", ["t"])], {"t": -1}, r"topics\['t'\]: expected a partition count"),
    ],
)
def test_malformed_input_names_the_field(members, topics, message) -> None:
    with pytest.raises(AssignorError, match=message):
        assign("range", topics, members)


def test_claim_beyond_partition_count_is_replayed_like_kafka() -> None:
    """Kafka keeps a claimed partition id the topic does not have and walks the rest as usual."""
    members = [member("a", ["t"], owned={"t": [5]}, generation=1), member("b", ["t"])]
    assert assign("sticky", {"t": 2}, members) == {"a": {"t": [5]}, "b": {"t": [0, 1]}}


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_topics_order_as_utf16_code_units(strategy: str) -> None:
    """U+1F600 is a surrogate pair (0xD83D...) in Java, so it sorts before U+FF61."""
    emoji, halfwidth = "\U0001F600", "\uff61"
    members = [member("m0", [halfwidth, emoji]), member("m1", [halfwidth, emoji])]
    got = assign(strategy, {halfwidth: 1, emoji: 1}, members)
    if strategy == "range":
        assert got == {"m0": {emoji: [0], halfwidth: [0]}, "m1": {}}
        assert list(got["m0"]) == [emoji, halfwidth]
    else:
        # Partitions are dealt in topic order, so the first sorted member takes the emoji topic.
        assert got == {"m0": {emoji: [0]}, "m1": {halfwidth: [0]}}
