"""Consumer-group sizing: rate spreading, per-strategy load, catch-up, members needed, fan-out."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.assignors.strategies import Assignor
from planner.assignors.sizing import (
    MemberCapacity,
    PartitionRate,
    consumer_bytes_out,
    required_members,
    size_group,
    spread_topic_rates,
    strategy_load,
    topic_fanout,
)
from pools.errors import InputError
from pools.kafka_formats.consumer_groups import parse_consumer_groups_describe
from tests.plugin import examples


def test_spread_prefers_measured_partition_rates_then_sizes_then_even() -> None:
    parts = {"a": 2, "b": 2, "c": 2}
    rates = spread_topic_rates(
        parts,
        {"a": (100.0, 10.0), "b": (100.0, 10.0), "c": (100.0, 10.0)},
        partition_sizes={("b", 0): 3, ("b", 1): 1},
        partition_bytes={("a", 0): 30.0, ("a", 1): 90.0, ("c", 0): 5.0},
    )
    assert rates[("a", 1)] == PartitionRate(90.0, 7.5)
    assert rates[("b", 0)] == PartitionRate(75.0, 7.5)
    assert rates[("c", 0)] == rates[("c", 1)] == PartitionRate(50.0, 5.0)


def test_range_piles_partition_zero_of_every_topic_on_one_member() -> None:
    parts = {f"t{i}": 3 for i in range(4)}
    rates = {(t, p): PartitionRate(10.0, 1.0) for t in parts for p in range(3)}
    cap = MemberCapacity(bytes_per_s=100.0, headroom=1.0)
    ids = ["m0", "m1"]
    rng = strategy_load(Assignor("range"), parts, rates, cap, ids)
    rr = strategy_load(Assignor("roundrobin"), parts, rates, cap, ids)
    assert rng.member_partitions == {"m0": 8, "m1": 4}
    assert rr.member_partitions == {"m0": 6, "m1": 6}
    assert rng.max_utilization == pytest.approx(0.8) and rr.max_utilization == pytest.approx(0.6)


def test_required_members_and_best_strategy() -> None:
    parts = {f"t{i}": 3 for i in range(4)}
    rates = {(t, p): PartitionRate(10.0, 1.0) for t in parts for p in range(3)}
    cap = MemberCapacity(bytes_per_s=40.0, headroom=0.75)  # 30 B/s usable: 3 partitions a member
    assert required_members(Assignor("roundrobin"), parts, rates, cap) == 4
    assert required_members(Assignor("uniform"), parts, rates, cap) == 4
    # range gives the first member one partition of each of the 4 topics whatever the count
    assert required_members(Assignor("range"), parts, rates, cap) is None
    sizing = size_group("g", parts, rates, cap, current_members=["a", "b"], strategies=[Assignor.RANGE, Assignor.ROUNDROBIN])
    assert sizing.best_strategy == "roundrobin"
    assert sizing.required == {"range": None, "roundrobin": 4}
    assert sizing.as_dict()["strategies"]["range"]["required_members"] is None


def test_a_partition_hotter_than_one_member_cannot_fit() -> None:
    rates = {("t", 0): PartitionRate(100.0, 1.0), ("t", 1): PartitionRate(1.0, 1.0)}
    assert required_members(Assignor("uniform"), {"t": 2}, rates, MemberCapacity(bytes_per_s=50.0)) is None


def test_catch_up_time_uses_spare_capacity() -> None:
    rates = {("t", 0): PartitionRate(1000.0, 10.0)}
    lag = {("t", 0): 900}
    load = strategy_load(Assignor("range"), {"t": 1}, rates, MemberCapacity(messages_per_s=100.0), ["m"], lag=lag)
    assert load.catch_up_seconds == pytest.approx(10.0)  # 900 msgs at 90 spare msg/s
    load = strategy_load(Assignor("range"), {"t": 1}, rates, MemberCapacity(bytes_per_s=2000.0), ["m"], lag=lag)
    assert load.catch_up_seconds == pytest.approx(90.0)  # 90,000 bytes at 1,000 spare B/s
    load = strategy_load(Assignor("range"), {"t": 1}, rates, MemberCapacity(messages_per_s=5.0), ["m"], lag=lag)
    assert math.isinf(load.catch_up_seconds)


@settings(max_examples=examples(25))
@given(
    st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(1, 12), min_size=1),
    st.floats(5.0, 200.0),
    st.sampled_from(["roundrobin", "uniform", "cooperative-sticky"]),
)
def test_required_members_is_the_smallest_count_that_fits(parts: dict[str, int], cap_bytes: float, strategy: str) -> None:
    rates = {(t, p): PartitionRate(float(1 + (p * 7) % 5), 1.0) for t, n in parts.items() for p in range(n)}
    cap = MemberCapacity(bytes_per_s=cap_bytes, headroom=0.9)
    need = required_members(Assignor(strategy), parts, rates, cap)
    if need is None:
        assert max(r.bytes_per_s for r in rates.values()) > cap_bytes * 0.9
        return
    fits = lambda n: strategy_load(Assignor(strategy), parts, rates, cap, [f"m{i}" for i in range(n)]).max_utilization <= 0.9  # noqa: E731
    assert fits(need)
    assert need == 1 or not fits(need - 1)


def test_fanout_from_describe_output(data_dir) -> None:
    groups = parse_consumer_groups_describe((data_dir / "kafka-formats" / "kafka-consumer-groups-describe.txt").read_text())
    assert topic_fanout(groups) == {"orders": 1, "payments.ledger": 1}
    assert topic_fanout(groups, active_only=True) == {"orders": 1}
    assert consumer_bytes_out({"orders": 5.0}, topic_fanout(groups)) == {"orders": 5.0}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({}, "give bytes_per_s and/or messages_per_s"), ({"bytes_per_s": 0}, "bytes_per_s must be > 0"),
     ({"bytes_per_s": 1, "headroom": 1.5}, r"headroom must be in \(0, 1\]")],
)
def test_capacity_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        MemberCapacity(**kwargs)
