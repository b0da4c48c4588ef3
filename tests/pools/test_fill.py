"""The seed's array helpers against their plain definitions: held partitions by key, loads summed as np.add.at sums."""

from __future__ import annotations

import numpy as np

from pools.fill import add_loads, held_mask
from tests.pools.audit.helpers import healthy, snapshot


def test_held_mask_marks_exactly_the_partitions_named_by_key():
    snap = snapshot(healthy("a-x", (1, 2, 3), partitions=5) + healthy("b-y", (4, 5, 6), partitions=2))
    keys = {("a-x", 3), ("b-y", 0), ("b-y", 7), ("gone", 0), ("a-x", -1)}  # unknown partition and topic match none
    expected = [(p.topic, p.partition) in keys for p in snap.partitions]
    assert held_mask(snap, keys).tolist() == expected
    assert not held_mask(snap, {}).any() and len(held_mask(snap, {})) == len(snap.partitions)


def test_add_loads_adds_every_float_in_np_add_at_order():
    rng = np.random.default_rng(7)
    rows = rng.integers(-1, 5, (400, 3))
    follower = rng.random((400, 6)) * 10.0 ** rng.integers(-8, 9, (400, 6))  # magnitudes where order shows
    extra = rng.random((400, 6)) * 10.0 ** rng.integers(-8, 9, (400, 6))
    base = rng.random((5, 6))
    expected = base.copy()
    part, slot = np.nonzero(rows >= 0)
    np.add.at(expected, rows[part, slot], follower[part])
    lead = np.flatnonzero(rows[:, 0] >= 0)
    np.add.at(expected, rows[lead, 0], extra[lead])
    assert np.array_equal(add_loads(base, rows, follower, extra), expected)
