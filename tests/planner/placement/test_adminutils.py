"""`AdminUtils.assignReplicasToBrokers`: Kafka's vectors exactly, invariants and the oracle on random clusters."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.java_semantics import JavaRandom
from planner.placement import (
    AdminOperationError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    PlacementError,
    assign_replicas_to_brokers,
)
from planner.placement.adminutils import assign_replicas_array, rack_alternated_broker_list
from tests.planner.placement import reference
from tests.planner.placement.conftest import expected_error, kafka_error, load_vectors

VECTORS = load_vectors("admin_utils.jsonl")


def _brokers(vector: dict) -> list[tuple[int, str | None]]:
    return [(b["id"], b["rack"]) for b in vector["input"]["brokers"]]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_conformance_vector(vector: dict) -> None:
    args = vector["input"]
    call = lambda: assign_replicas_to_brokers(  # noqa: E731
        _brokers(vector),
        args["partitions"],
        args["replication_factor"],
        args["fixed_start_index"],
        args["start_partition_id"],
        seed=args.get("rand_seed"),
    )
    if "error" in vector:
        with pytest.raises(PlacementError) as info:
            call()
        assert kafka_error(info.value) == expected_error(vector)
        return
    got = call()
    assert list(got.items()) == [(p, r) for p, r in vector["expected"]["assignment"]]
    if "rack_alternated_brokers" in vector["expected"]:
        racks = dict(_brokers(vector))
        assert rack_alternated_broker_list(racks) == vector["expected"]["rack_alternated_brokers"]


SEEDED = [v for v in VECTORS if "rand_seed" in v["input"]]


@pytest.mark.parametrize("vector", SEEDED, ids=[v["id"] for v in SEEDED])
def test_seeded_draws_are_start_index_then_shift(vector: dict) -> None:
    args = vector["input"]
    rnd = JavaRandom(args["rand_seed"])
    n = len({b for b, _ in _brokers(vector)})
    assert [rnd.next_int(n), rnd.next_int(n)] == [args["start_index"], args["next_replica_shift"]]


def test_seeded_vectors_exist_for_both_paths() -> None:
    assert {v["category"] for v in SEEDED} == {"seeded_random_path_rack_unaware", "seeded_random_path_rack_aware"}


def test_fixed_start_index_is_also_the_initial_shift() -> None:
    brokers = [(b, None) for b in range(5)]
    # start index 2 and shift 2: replica 2 sits 1 + (2 % 4) = 3 places after the leader.
    assert assign_replicas_to_brokers(brokers, 1, 2, fixed_start_index=2) == {0: [2, 0]}


def test_shift_counts_only_rounds_the_loop_reaches() -> None:
    brokers = [(b, None) for b in range(6)]
    added = assign_replicas_to_brokers(brokers, 6, 2, fixed_start_index=0, start_partition_id=12)
    # Partition 12 bumps the shift once (0 -> 1), not twice: follower 1 + (1 % 5) = 2 after the leader.
    assert added[12] == [0, 2]


@pytest.mark.parametrize(
    ("brokers", "n", "rf", "error", "message"),
    [
        ([(1, None)], 0, 0, InvalidPartitionsError, "Number of partitions must be larger than 0."),
        ([(1, None)], 1, 0, InvalidReplicationFactorError, "Replication factor must be larger than 0."),
        ([(1, "a")], 1, 2, InvalidReplicationFactorError, "Replication factor: 2 larger than available brokers: 1."),
        ([(1, "a"), (2, None)], 1, 1, AdminOperationError, "Not all brokers have rack information"),
    ],
)
def test_errors_in_kafka_order(brokers, n, rf, error, message) -> None:
    with pytest.raises(error, match=message):
        assign_replicas_to_brokers(brokers, n, rf, fixed_start_index=0)


def test_empty_string_is_a_rack() -> None:
    got = assign_replicas_to_brokers([(1, ""), (2, "a"), (3, "")], 3, 2, fixed_start_index=0)
    assert all({r for r in reps} & {2} for reps in got.values())


def test_java_int_overflow_of_the_start_index_fails_like_java() -> None:
    with pytest.raises(PlacementError, match=r"^Index -\d+ out of bounds for length 3$"):
        assign_replicas_to_brokers([(1, None), (2, None), (3, None)], 2, 1, (1 << 31) - 1, 1)


def test_same_seed_same_output_and_none_is_random_but_valid() -> None:
    brokers = [(b, f"r{b % 3}") for b in range(9)]
    assert assign_replicas_to_brokers(brokers, 50, 3, seed=7) == assign_replicas_to_brokers(brokers, 50, 3, seed=7)
    fresh = assign_replicas_to_brokers(brokers, 50, 3)
    assert sorted(fresh) == list(range(50)) and all(len(set(r)) == 3 for r in fresh.values())


@st.composite
def clusters(draw, racked: bool):
    ids = draw(st.lists(st.integers(0, 500), min_size=1, max_size=24, unique=True))
    ids = draw(st.permutations(ids))
    rack_names = draw(st.lists(st.sampled_from(["a", "b", "B", "rack1", "rack10", "rack2", ""]), min_size=1, max_size=5, unique=True))
    brokers = [(b, draw(st.sampled_from(rack_names)) if racked else None) for b in ids]
    rf = draw(st.integers(1, min(len(ids), 5)))
    n = draw(st.integers(1, 120))
    fixed = draw(st.integers(-1, 40))
    start = draw(st.integers(-1, 3000))
    seed = draw(st.integers(-(1 << 63), (1 << 63) - 1))
    return brokers, n, rf, fixed, start, seed


@given(st.booleans().flatmap(clusters))
def test_matches_oracle_and_invariants(case) -> None:
    brokers, n, rf, fixed, start, seed = case
    got = assign_replicas_to_brokers(brokers, n, rf, fixed, start, seed=seed)
    assert got == reference.admin_utils(brokers, n, rf, fixed, start, seed)
    assert list(got) == list(range(max(0, start), max(0, start) + n))
    rack = dict(brokers)
    n_racks = len(set(rack.values()))
    for replicas in got.values():
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert len({rack[b] for b in replicas}) == min(rf, n_racks)
    leaders = Counter(r[0] for r in got.values())
    assert max(leaders.values()) - min(leaders.values(), default=0) <= 1
    assert len(leaders) == min(n, len(brokers))


@given(
    st.booleans(),
    st.integers(1, 12),
    st.integers(1, 3),
    st.integers(1, 40),
    st.integers((1 << 31) - 200, (1 << 31) - 1),
    st.integers((1 << 31) - 100, (1 << 31) - 1),
    st.booleans(),
)
def test_java_int_overflow_matches_oracle(racked, n_brokers, rf, n, fixed, start, huge_start) -> None:
    """Start indices and partition ids near ``Integer.MAX_VALUE`` overflow exactly as in Java."""
    brokers = [(b, f"r{b % 3}" if racked else None) for b in range(n_brokers)]
    rf = min(rf, n_brokers)
    start = start if huge_start else 0
    try:
        expected = reference.admin_utils(brokers, n, rf, fixed, start)
    except IndexError as exc:
        with pytest.raises(PlacementError, match=f"^{exc}$"):
            assign_replicas_to_brokers(brokers, n, rf, fixed, start)
        return
    assert assign_replicas_to_brokers(brokers, n, rf, fixed, start) == expected


@pytest.mark.parametrize("racks", [2, 3, 4])
@pytest.mark.parametrize("spin", [1, 7, 40, 150])
def test_overflowed_shift_spins_like_kafka(racks, spin) -> None:
    """``shift * racks`` wrapping to ``-spin``: Kafka's search spins until ``shift + k >= 0``."""
    shift = ((1 << 32) - spin) // racks
    brokers = [(b, f"r{b % racks}") for b in range(3 * racks + 1)]
    try:
        expected = reference.admin_utils(brokers, 30, racks, shift, 0, skip_negative_rounds=False)
    except IndexError as exc:
        with pytest.raises(PlacementError, match=f"^{exc}$"):
            assign_replicas_to_brokers(brokers, 30, racks, shift, 0)
        return
    assert assign_replicas_to_brokers(brokers, 30, racks, shift, 0) == expected


@pytest.mark.parametrize("racks", [2, 3, 4])
@pytest.mark.parametrize("spin", [1, 7, 40, 150])
def test_overflowed_shift_spins_then_places(racks, spin) -> None:
    """The same, for a leader at the end of the list, where the spin ends in a placement."""
    shift = ((1 << 32) - spin) // racks
    n = 3 * racks + 1
    brokers = [(b, f"r{b % racks}") for b in range(n)]
    placed = 0
    for pid in range(2 * n):
        try:
            expected = reference.admin_utils(brokers, 1, racks, shift, pid, skip_negative_rounds=False)
        except IndexError:
            continue
        assert assign_replicas_to_brokers(brokers, 1, racks, shift, pid) == expected
        placed += 1
    assert placed


def test_arrays_match_mapping() -> None:
    brokers = [(b, f"r{b % 4}") for b in range(20)]
    ids, table = assign_replicas_array(brokers, 40, 3, fixed_start_index=3, start_partition_id=5)
    assert dict(zip(ids.tolist(), table.tolist())) == assign_replicas_to_brokers(brokers, 40, 3, 3, 5)
