"""Throttle rates, Kafka's throttled-replica lists on the conformance vectors, and durations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.emit import MIN_THROTTLE_BPS, Batch, BatchMove, batch_throttle, throttle_rate
from pools.kafka_formats import parse_reassignment_json

VECTORS = Path(__file__).resolve().parents[2] / "data" / "conformance" / "reassign_json.jsonl"
WITH_CLUSTER = [
    c for c in map(json.loads, VECTORS.read_text().splitlines()) if "cluster" in c["input"] and "expected" in c
]


@pytest.mark.parametrize("case", WITH_CLUSTER, ids=[c["id"] for c in WITH_CLUSTER])
def test_batch_throttle_lists_match_kafka(case: dict) -> None:
    cluster = case["input"]["cluster"]
    entries = parse_reassignment_json(case["input"]["reassignment_json"], cluster)
    moves = tuple(
        BatchMove(e.topic, e.partition, tuple(cluster["topics"][e.topic][e.partition]), e.replicas, 1000)
        for e in entries
    )
    result = batch_throttle(Batch(1, 1, moves, ()), rate=1000, leaders={})
    assert result.leader == case["expected"]["leader_throttled_replicas"]
    assert result.follower == case["expected"]["follower_throttled_replicas"]
    assert list(result.reassigning_brokers) == case["expected"]["reassigning_brokers"]


def test_rate_is_a_fraction_of_the_busiest_brokers_spare_capacity() -> None:
    capacity = {1: (100e6, 100e6), 2: (100e6, 80e6), 3: (1e9, 1e9)}
    load = {1: (10e6, 10e6), 2: (20e6, 60e6)}
    assert throttle_rate({1, 2}, capacity=capacity, load=load, fraction=0.5) == 10_000_000
    assert throttle_rate({1, 3}, capacity=capacity, load=load, fraction=1.0) == 90_000_000
    assert throttle_rate({2}, capacity={2: (1e6, 1e6)}, load={2: (2e6, 0)}, fraction=0.5) == MIN_THROTTLE_BPS
    with pytest.raises(ValueError):
        throttle_rate({1}, capacity=capacity, load=load, fraction=0)


def test_duration_is_the_busiest_copy_at_the_rate() -> None:
    moves = (
        BatchMove("a", 0, (1, 2), (3, 4), 600),  # leader 2 serves 1200 B; 3 and 4 receive 600 B each
        BatchMove("a", 1, (1, 2), (1, 3), 500),  # leader 1 serves 500 B; 3 receives 500 B
    )
    t = batch_throttle(Batch(1, 1, moves, ()), rate=100, leaders={("a", 0): 2})
    assert t.bytes_out == {1: 500, 2: 1200} and t.bytes_in == {3: 1100, 4: 600}
    assert t.seconds == 12
