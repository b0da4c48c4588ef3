"""Kafka's own client-assignor outputs (tests/data/conformance) reproduced step by step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.assignors import assign
from planner.assignors.common import java_member_order, parse_members

DATA = Path(__file__).resolve().parents[2] / "data" / "conformance"


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def _single(name: str) -> list:
    return [pytest.param(case, id=case["id"]) for case in _lines(name)]


def _steps(name: str) -> list:
    return [
        pytest.param(step, id=f"{scenario['id']}-step{step['step']}")
        for scenario in _lines(name)
        for step in scenario["steps"]
    ]


def _ordered(assignment: dict, members: list[dict]) -> list[tuple[str, list[tuple[str, list[int]]]]]:
    """Every member in the leader's order, each with its topics and partitions in the order given (not as sets: a
    partition given twice, or out of the contract's compareTo / ascending order, is a difference)."""
    return [(m["member_id"], [(t, list(ps)) for t, ps in assignment.get(m["member_id"], {}).items() if ps])
            for m in members]


@pytest.mark.parametrize("case", _single("range.jsonl"))
def test_range_matches_kafka(case: dict) -> None:
    got = assign("range", case["input"]["topics"], case["input"]["members"], case["input"].get("partition_racks"))
    assert list(got) == [m["member_id"] for m in case["input"]["members"]]
    assert _ordered(got, case["input"]["members"]) == _ordered(case["expected"]["assignment"], case["input"]["members"])


@pytest.mark.parametrize("case", _single("roundrobin.jsonl"))
def test_roundrobin_matches_kafka(case: dict) -> None:
    got = assign("roundrobin", case["input"]["topics"], case["input"]["members"], case["input"].get("partition_racks"))
    assert list(got) == [m["member_id"] for m in case["input"]["members"]]
    assert _ordered(got, case["input"]["members"]) == _ordered(case["expected"]["assignment"], case["input"]["members"])


@pytest.mark.parametrize("step", _steps("sticky.jsonl"))
def test_sticky_step_matches_kafka_exactly(step: dict) -> None:
    _check_step("sticky", step)


@pytest.mark.parametrize("step", _steps("cooperative_sticky.jsonl"))
def test_cooperative_sticky_step_matches_kafka_exactly(step: dict) -> None:
    _check_step("cooperative-sticky", step)


def _check_step(strategy: str, step: dict) -> None:
    inp = step["input"]
    got = assign(strategy, inp["topics"], inp["members"], inp.get("partition_racks"))
    assert list(got) == [m["member_id"] for m in inp["members"]]
    # Exact even where Kafka's result depends on HashMap/HashSet order (order_sensitive steps): the partitions of
    # each member in order, which the next step's owned_partitions hands back to the assignor in that order
    assert _ordered(got, inp["members"]) == _ordered(step["expected"]["assignment"], inp["members"])


def test_output_is_canonical() -> None:
    """Every member present, topics in compareTo order, partitions ascending."""
    members = [
        {"member_id": m, "group_instance_id": None, "rack": None, "topics": ["b", "B", "a"],
         "owned_partitions": {}, "generation": None}
        for m in ("m1", "m0", "idle")
    ]
    members[2]["topics"] = ["missing"]
    got = assign("roundrobin", {"a": 3, "b": 3, "B": 2}, members)
    assert list(got) == ["m1", "m0", "idle"]
    assert list(got["m0"]) == ["B", "a", "b"]
    assert got["idle"] == {}
    assert all(ps == sorted(ps) for topics in got.values() for ps in topics.values())


@pytest.mark.parametrize("step", _steps("sticky.jsonl") + _steps("cooperative_sticky.jsonl"))
def test_leader_hashmap_member_order_matches_java(step: dict) -> None:
    members = parse_members(step["input"]["members"])
    assert [m.member_id for m in java_member_order(members)] == step["input"]["java_hashmap_member_order"]
