"""The Java semantics against values computed by Java itself (documented constants and Kafka's vectors)."""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.java_semantics import (
    INT_MAX,
    JavaRandom,
    hash_order,
    hashset_copy_capacity,
    int32,
    java_shuffle,
    parse_java_int,
    string_hash,
    table_size_for,
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
                    assert hash_order(ids, string_hash) == step["input"]["java_hashmap_member_order"]
                    checked += 1
    assert checked > 100


def test_java_hashes() -> None:
    assert string_hash("foo") == 101574
    assert string_hash("polygenelubricants") == -2147483648
    assert topic_partition_hash("foo", 0) == 31 * 31 + 101574
    assert hash_order([17, 1, 2], lambda x: x) == [17, 1, 2]
    assert hash_order([2, 17, 1], lambda x: x) == [17, 1, 2]
    # 13 keys resize the default table to 32 slots: 40 & 31 == 8
    assert hash_order(list(range(13)), lambda x: 12 - x if x < 12 else 40) == [11, 10, 9, 8, 7, 6, 5, 4, 12, 3, 2, 1, 0]


def test_lone_surrogates_hash_and_sort_as_one_utf16_code_unit() -> None:
    # Java strings may hold a lone surrogate (Jackson reads "\ud800" as one); hashCode and compareTo see one char
    assert string_hash("\ud800") == 0xD800 and string_hash("a\udc00") == 97 * 31 + 0xDC00
    assert utf16_key("\ud800") < utf16_key("\ue000") and utf16_key("\udfff") > utf16_key("\U0001F680")


def test_initial_capacity_is_the_constructor_argument() -> None:
    # new HashMap<>(32) starts with 32 slots; 25 keys exceed 24 = 0.75 * 32 and double it to 64
    keys = list(range(25))
    assert hash_order(keys, lambda k: k * 32, initial_capacity=32) == hash_order(keys, lambda k: k * 32, initial_capacity=64)
    assert hash_order([1, 33], lambda k: k, initial_capacity=32) == [1, 33]  # same bucket, insertion order
    assert hash_order([33, 1], lambda k: k, initial_capacity=64) == [1, 33]


def test_hashset_copy_capacity_is_javas_float_expression() -> None:
    # Math.max((int) (c.size() / .75f) + 1, 16): 12 / .75f is exactly 16.0, so the table is 32, not 16
    assert [hashset_copy_capacity(n) for n in (0, 11, 12, 13, 96)] == [16, 16, 17, 18, 129]
    assert table_size_for(hashset_copy_capacity(12)) == 32
    # in float, 12582913 / .75 rounds up to 16777218 (a double gives 16777217.33, truncated to 16777217)
    assert hashset_copy_capacity(12_582_913) == 16_777_219
    assert hashset_copy_capacity(INT_MAX) == 16  # the cast saturates at INT_MAX and + 1 wraps to INT_MIN


@given(st.integers(-(1 << 40), 1 << 40), st.integers(-(1 << 40), 1 << 40))
def test_int32_is_twos_complement_arithmetic(a: int, b: int) -> None:
    assert int32(int32(a) + int32(b)) == int32(a + b)
    assert int32(int32(a) * int32(b)) == int32(a * b)
    assert -(1 << 31) <= int32(a) <= INT_MAX


def test_parse_java_int() -> None:
    assert parse_java_int("-12") == -12 and parse_java_int("+7") == 7 and parse_java_int("\u0663") == 3
    for bad in ("", "-", "1_0", " 1", "2147483648", "1.0"):
        with pytest.raises(ValueError, match=f'For input string: "{bad}"'):
            parse_java_int(bad)


# --- JavaRandom.next_ints: vectorised nextInt draws against the one-at-a-time next_int ---------------------------

_MULT, _ADD, _MASK = 0x5DEECE66D, 0xB, (1 << 48) - 1


def _seed_whose_draw_is_rejected(steps_before: int) -> int:
    """A seed whose ``steps_before``-th next(31) is 2**31 - 1, found by running the LCG backwards."""
    inverse = pow(_MULT, -1, 1 << 48)
    state = ((1 << 31) - 1) << 17 | 12345
    for _ in range(steps_before + 1):
        state = ((state - _ADD) * inverse) & _MASK
    return state ^ _MULT


@given(st.integers(-(1 << 63), (1 << 63) - 1), st.lists(st.integers(1, (1 << 31) - 1), max_size=300))
def test_vectorised_draws_are_java_randoms(seed: int, bounds: list[int]) -> None:
    rnd, vectorised = JavaRandom(seed), JavaRandom(seed)
    got = vectorised.next_ints(np.array(bounds, dtype=np.int64))
    assert got.tolist() == [rnd.next_int(b) for b in bounds]
    assert vectorised.next_ints([1000]).tolist() == [rnd.next_int(1000)]  # the same state left behind


def test_vectorised_rejection_shifts_later_draws() -> None:
    for position in (0, 1, 5):
        seed = _seed_whose_draw_is_rejected(position)
        bounds = [7, 6, 5, 4, 3, 100, 9, 10, 11]
        rnd = JavaRandom(seed)
        expected = [rnd.next_int(b) for b in bounds]
        assert JavaRandom(seed).next_ints(np.array(bounds)).tolist() == expected
        # The crafted draw really reads 2**31 - 1, which every non-power-of-two bound here rejects.
        plain = JavaRandom(seed)
        for b in bounds[:position]:
            plain.next_int(b)
        assert plain.next_bits(31) == (1 << 31) - 1


def test_vectorised_power_of_two_takes_high_bits() -> None:
    got = JavaRandom(42).next_ints(np.array([1, 2, 16, 1 << 30]))
    rnd = JavaRandom(42)
    assert got.tolist() == [rnd.next_int(b) for b in (1, 2, 16, 1 << 30)]
    assert got[0] == 0
