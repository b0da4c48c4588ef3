"""java_compat against values computed by Java itself (documented constants and Kafka's vectors)."""

import json

import pytest

from planner.java_compat import (
    JavaRandom,
    hashmap_order,
    java_shuffle,
    string_hash,
    topic_partition_hash,
    utf16_key,
)


def test_random_matches_java_sequence() -> None:
    # new java.util.Random(42).nextInt(10) x5 and new Random(0).nextInt() (next(32))
    r = JavaRandom(42)
    assert [r.next_int(10) for _ in range(5)] == [0, 3, 8, 4, 0]
    assert JavaRandom(0).next_bits(32) == -1155484576


def test_power_of_two_bound_uses_high_bits() -> None:
    assert JavaRandom(0).next_int(16) == JavaRandom(0).next_bits(31) * 16 >> 31


@pytest.mark.parametrize(
    ("s", "h"), [("", 0), ("a", 97), ("Aa", 2112), ("BB", 2112), ("hello", 99162322), ("\U0001F680", 0xD83D * 31 + 0xDE80)]
)
def test_string_hash(s: str, h: int) -> None:
    assert string_hash(s) == h


def test_utf16_order_differs_from_code_points() -> None:
    assert utf16_key("\U0001F680") < utf16_key("\uffff")
    assert utf16_key("C10") < utf16_key("C2")
    assert utf16_key("Rack-B") < utf16_key("rack-a")


def test_topic_partition_hash() -> None:
    assert topic_partition_hash("t", 0) == 31 * 31 + 116


def test_shuffle_is_collections_shuffle() -> None:
    items = list(range(5))
    java_shuffle(items, JavaRandom(1))
    assert sorted(items) == [0, 1, 2, 3, 4] and items != [0, 1, 2, 3, 4]


def test_hashmap_order_reproduces_recorded_member_orders(data_dir) -> None:
    checked = 0
    for name in ("sticky.jsonl", "cooperative_sticky.jsonl"):
        with open(data_dir / "conformance" / name) as fh:
            for line in fh:
                for step in json.loads(line)["steps"]:
                    ids = [m["member_id"] for m in step["input"]["members"]]
                    assert hashmap_order(ids, string_hash) == step["input"]["java_hashmap_member_order"]
                    checked += 1
    assert checked > 100
