"""Vectorised `nextInt` draws against the one-at-a-time `JavaRandom`, including the rejection loop."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pools.java_semantics import JavaRandom
from planner.placement.draws import next_ints, scramble

_MULT, _ADD, _MASK = 0x5DEECE66D, 0xB, (1 << 48) - 1


def _seed_whose_draw_is_rejected(steps_before: int) -> int:
    """A seed whose ``steps_before``-th next(31) is 2**31 - 1, found by running the LCG backwards."""
    inverse = pow(_MULT, -1, 1 << 48)
    state = ((1 << 31) - 1) << 17 | 12345
    for _ in range(steps_before + 1):
        state = ((state - _ADD) * inverse) & _MASK
    return state ^ _MULT


@given(st.integers(-(1 << 63), (1 << 63) - 1), st.lists(st.integers(1, (1 << 31) - 1), max_size=300))
def test_same_draws_as_java_random(seed: int, bounds: list[int]) -> None:
    rnd = JavaRandom(seed)
    got, state = next_ints(scramble(seed), np.array(bounds, dtype=np.int64))
    assert got.tolist() == [rnd.next_int(b) for b in bounds]
    follow, _ = next_ints(state, np.array([1000]))
    assert follow.tolist() == [rnd.next_int(1000)]


def test_rejection_shifts_later_draws() -> None:
    for position in (0, 1, 5):
        seed = _seed_whose_draw_is_rejected(position)
        bounds = [7, 6, 5, 4, 3, 100, 9, 10, 11]
        rnd = JavaRandom(seed)
        expected = [rnd.next_int(b) for b in bounds]
        got, _ = next_ints(scramble(seed), np.array(bounds))
        assert got.tolist() == expected
        # The crafted draw really reads 2**31 - 1, which every non-power-of-two bound here rejects.
        plain = JavaRandom(seed)
        for b in bounds[:position]:
            plain.next_int(b)
        assert plain.next_bits(31) == (1 << 31) - 1


def test_power_of_two_takes_high_bits() -> None:
    got, _ = next_ints(scramble(42), np.array([1, 2, 16, 1 << 30]))
    rnd = JavaRandom(42)
    assert got.tolist() == [rnd.next_int(b) for b in (1, 2, 16, 1 << 30)]
    assert got[0] == 0
