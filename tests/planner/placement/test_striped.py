"""`StripedReplicaPlacer`: Kafka's vectors exactly, invariants and the oracle on random clusters."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.placement import (
    IllegalArgumentError,
    InvalidReplicationFactorError,
    PlacementError,
    striped_place,
)
from tests.planner.placement import reference
from tests.planner.placement.conftest import expected_error, kafka_error, load_vectors
from tests.plugin import examples

VECTORS = load_vectors("striped_placer.jsonl")


def _brokers(vector: dict) -> list[tuple[int, str | None, bool]]:
    return [(b["id"], b["rack"], b["fenced"]) for b in vector["input"]["brokers"]]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_conformance_vector(vector: dict) -> None:
    args = vector["input"]
    call = lambda: striped_place(  # noqa: E731
        _brokers(vector), args["num_partitions"], args["replication_factor"], args["random_seed"], args["start_partition"]
    )
    if "error" in vector:
        with pytest.raises(PlacementError) as info:
            call()
        assert kafka_error(info.value) == expected_error(vector)
        return
    assert call() == [r for _, r in vector["expected"]["assignment"]]


def test_javadoc_example() -> None:
    nine = [(10 * r + i, "ABC"[r - 1], False) for r in (1, 2, 3) for i in range(3)]
    assert striped_place(nine, 3, 3, 10) == [[10, 20, 30], [21, 31, 11], [32, 12, 22]]


@pytest.mark.parametrize(
    ("brokers", "rf", "error", "message"),
    [
        ([], 0, InvalidReplicationFactorError, r"^Invalid replication factor 0: the replication factor must be positive\.$"),
        ([], 1, InvalidReplicationFactorError, r"^All brokers are currently fenced\.$"),
        ([(1, None, True)], 3, InvalidReplicationFactorError, r"^All brokers are currently fenced\.$"),
        (
            [(1, "a", False), (2, "b", True)],
            3,
            InvalidReplicationFactorError,
            r"^The target replication factor of 3 cannot be reached because only 2 broker\(s\) are registered\.$",
        ),
        ([(1, None, False)], 65536 + 1, None, None),
        ([(1, None, False)], 65535, InvalidReplicationFactorError, r"^Invalid replication factor -1: "),
    ],
)
def test_errors_in_kafka_order(brokers, rf, error, message) -> None:
    if error is None:  # a Java short: 65537 is 1
        assert striped_place(brokers, 2, rf, 0) == [[1], [1]]
        return
    with pytest.raises(error, match=message):
        striped_place(brokers, 5, rf, 0)


def test_negative_partition_count_fails_after_validation() -> None:
    with pytest.raises(IllegalArgumentError, match=r"^Illegal Capacity: -2$"):
        striped_place([(1, None, False)], -2, 1, 0)
    with pytest.raises(InvalidReplicationFactorError):
        striped_place([(1, None, True)], -2, 1, 0)


def test_zero_partitions() -> None:
    assert striped_place([(1, None, False)], 0, 1, 0) == []


def test_single_unfenced_broker_leads_everything_without_reshuffle() -> None:
    brokers = [(1, "a", False), (2, "b", True), (3, "c", True)]
    got = striped_place(brokers, 50, 3, 99)
    assert all(r[0] == 1 and sorted(r) == [1, 2, 3] for r in got)


@st.composite
def clusters(draw):
    n = draw(st.integers(1, 30))
    ids = draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n, unique=True))
    names = draw(
        st.lists(st.sampled_from([None, "", "a", "Aa", "BB", "rack1", "rack10", "rack2", "Z", "\U0001f680", "\uffff"]),
                 min_size=1, max_size=8, unique=True)
    )
    brokers = [(b, draw(st.sampled_from(names)), draw(st.booleans()) and draw(st.booleans())) for b in ids]
    if all(f for _, _, f in brokers):
        b, r, _ = brokers[0]
        brokers[0] = (b, r, False)
    rf = draw(st.integers(1, min(n, 5)))
    unfenced = sum(not f for _, _, f in brokers)
    p = draw(st.integers(0, 4 * unfenced + 2))
    seed = draw(st.integers(-(1 << 63), (1 << 63) - 1))
    return brokers, p, rf, seed


@given(clusters())
def test_matches_oracle_and_invariants(case) -> None:
    brokers, p, rf, seed = case
    got = striped_place(brokers, p, rf, seed)
    assert got == reference.striped(brokers, p, rf, seed)
    rack = {b: r for b, r, _ in brokers}
    fenced = {b for b, _, f in brokers if f}
    n_racks = len(set(rack.values()))
    for replicas in got:
        assert replicas[0] not in fenced
        assert len(set(replicas)) == rf
        assert len({rack[b] for b in replicas}) == min(rf, n_racks)


@settings(max_examples=examples(40))
@given(st.integers(1, 5), st.integers(2, 6), st.integers(1, 4), st.integers(-(1 << 40), 1 << 40))
def test_even_racks_lead_equally_each_round(racks, per_rack, rounds, seed) -> None:
    """Rack offsets stripe the leaders: each rack leads ``per_rack`` times in every U partitions."""
    brokers = [(10 * r + i, f"r{r}", False) for r in range(racks) for i in range(per_rack)]
    got = striped_place(brokers, rounds * len(brokers), min(3, racks), seed)
    assert Counter(r[0] // 10 for r in got) == Counter({r: rounds * per_rack for r in range(racks)})


@pytest.mark.parametrize("chunk", [1, 40, 1000])
@pytest.mark.parametrize(
    ("brokers", "rf"),
    [
        ([(b, f"r{b % 4}", False) for b in range(24)], 3),  # long cycles: advanced by cumulative sums
        ([(b, f"r{b % 5}", b % 7 == 0) for b in range(12)], 2),  # short cycles, stale epochs
        ([(b, None, b == 3) for b in range(9)], 3),  # one rack, RF > racks
        ([(b, "ab"[b % 2], b % 2 == 1 and b > 2) for b in range(10)], 3),  # a rack short of unfenced brokers
    ],
)
def test_chunked_draws_match_oracle(monkeypatch, chunk, brokers, rf) -> None:
    """Reshuffles are drawn and composed in chunks; chunk boundaries must not change anything."""
    import planner.placement.striped as striped

    monkeypatch.setattr(striped, "_DRAWS_PER_CHUNK", chunk)
    unfenced = sum(not f for _, _, f in brokers)
    p = 9 * unfenced + 5
    assert striped_place(brokers, p, rf, 12345) == reference.striped(brokers, p, rf, 12345)
