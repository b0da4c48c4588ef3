"""Placement previews: broker orders Kafka's callers use, added-partition numbering and start index."""

from __future__ import annotations

import pytest

from planner.placement import assign_replicas_to_brokers, striped_place
from planner.placement.preview import Algorithm, preview_added_partitions, preview_new_topic
from pools.errors import InputError


def test_striped_lists_brokers_in_controller_hashmap_order() -> None:
    # HashMap<Integer> with 16 buckets iterates 17, 33, 2, 18, 5, 21, so the rack-less group is seen
    # before the "" rack; both hash to 0, so that first-seen order decides which list draws first.
    rack = {2: "", 18: "", 17: None, 33: None, 5: "x", 21: "x"}
    got = preview_new_topic(sorted(rack.items()), "t", 6, 2, algorithm=Algorithm.STRIPED, seed=1)
    controller = [(b, rack[b], False) for b in (17, 33, 2, 18, 5, 21)]
    ascending = [(b, rack[b], False) for b in sorted(rack)]
    assert [list(r) for r in got.assignments] == striped_place(controller, 6, 2, 1)
    assert striped_place(controller, 6, 2, 1) != striped_place(ascending, 6, 2, 1)


def test_admin_utils_sorts_brokers_by_id() -> None:
    got = preview_new_topic([(3, None), (1, None), (2, None)], "t", 3, 2, algorithm=Algorithm.ADMIN_UTILS, start_index=0)
    assert got.assignments == ((1, 2), (2, 3), (3, 1))
    assert got.broker_counts() == [(1, None, 2, 1), (2, None, 2, 1), (3, None, 2, 1)]


@pytest.mark.parametrize(("head", "start"), [(1, 0), (4, 2), (5, 3), (9, 0)])
def test_added_partitions_start_at_first_broker_not_below_partition0_leader(head, start) -> None:
    brokers = [(1, None), (3, None), (4, None), (6, None)]
    got = preview_added_partitions(brokers, "t", [(head, 3)], 5, algorithm=Algorithm.ADMIN_UTILS)
    assert got.first_partition == 1
    expected = assign_replicas_to_brokers(brokers, 4, 2, fixed_start_index=start, start_partition_id=1)
    assert [list(r) for r in got.assignments] == list(expected.values())
    assert [e["partition"] for e in got.entries()] == [1, 2, 3, 4]


def test_fenced_id_must_be_a_candidate() -> None:
    with pytest.raises(InputError, match="fenced broker 9 is not among the candidate brokers"):
        preview_new_topic([(1, None)], "t", 1, 1, algorithm=Algorithm.STRIPED, fenced={9})
