"""One enum for every assignor: Kafka's names per side, parsed once, one error type, the same runs whichever
door a strategy comes in by."""

from __future__ import annotations

import pytest

import planner.assignors as assignors
from planner.assignors import AssignorError, assign, assign_server
from planner.assignors.simulate import simulate
from planner.assignors.sizing import MemberCapacity, strategy_load
from planner.assignors.strategies import Assignor
from pools.errors import InputError

TOPICS = [{"name": "t0", "topic_id": "YktLOJt6pftV1GyvTUrl_g", "partitions": 5}]
SERVER_MEMBERS = [{"member_id": m, "instance_id": None, "rack": None, "topics": ["t0"], "current_assignment": {}}
                  for m in ("A", "B")]
CLIENT_MEMBERS = [{"member_id": m, "group_instance_id": None, "rack": None, "topics": ["t0"],
                   "owned_partitions": {}, "generation": None} for m in ("A", "B")]


def test_the_package_strategy_name_is_the_one_enum() -> None:
    assert assignors.Strategy is Assignor and assignors.Assignor is Assignor
    assert not hasattr(__import__("planner.assignors.server", fromlist=["x"]), "ServerStrategy")


@pytest.mark.parametrize(("name", "side", "expected"), [
    ("range", "client", Assignor.RANGE), ("range", "server", Assignor.SERVER_RANGE),
    ("uniform", "server", Assignor.UNIFORM), ("cooperative-sticky", "client", Assignor.COOPERATIVE_STICKY),
    ("server-range", None, Assignor.SERVER_RANGE), ("range", None, Assignor.RANGE),
])
def test_kafka_names_are_read_per_side(name: str, side, expected: Assignor) -> None:
    chosen = Assignor.parse(name, side=side)
    assert chosen is expected
    assert chosen.kafka_name == name or side is None


@pytest.mark.parametrize(("value", "side", "message"), [
    ("uniform", "client", "strategy: unknown client assignor 'uniform'; expected one of range, roundrobin, sticky, "
                          "cooperative-sticky"),
    ("server-range", "server", "strategy: unknown server assignor 'server-range'; expected one of uniform, range"),
    (Assignor.STICKY, "server", "strategy: unknown server assignor 'sticky'"),
    (3, None, "strategy: unknown assignor 3"),
])
def test_an_unknown_name_is_one_error_type(value, side, message: str) -> None:
    with pytest.raises(AssignorError, match=f"^{message}") as info:
        Assignor.parse(value, side=side)
    assert isinstance(info.value, InputError)


def test_the_contract_functions_parse_with_the_enum() -> None:
    with pytest.raises(AssignorError, match="unknown client assignor 'uniform'"):
        assign("uniform", {"t0": 5}, CLIENT_MEMBERS)
    with pytest.raises(AssignorError, match="unknown server assignor 'roundrobin'"):
        assign_server("roundrobin", TOPICS, SERVER_MEMBERS)
    assert assign(Assignor.RANGE, {"t0": 5}, CLIENT_MEMBERS) == assign("range", {"t0": 5}, CLIENT_MEMBERS)
    assert assign_server(Assignor.SERVER_RANGE, TOPICS, SERVER_MEMBERS) == assign_server("range", TOPICS, SERVER_MEMBERS)


@pytest.mark.parametrize(("strategy", "counts"), [
    (Assignor.SERVER_RANGE, {"A": 2, "B": 0}), (Assignor.UNIFORM, {"A": 1, "B": 1}), (Assignor.RANGE, {"A": 2, "B": 0}),
])
def test_simulation_and_sizing_run_the_assignor_named(strategy: Assignor, counts: dict[str, int]) -> None:
    # two one-partition topics: a range assignor gives partition 0 of each to the first member, uniform spreads them
    topics = {"t0": 1, "t1": 1}
    members = [{"member_id": m, "topics": ["t0", "t1"]} for m in ("A", "B")]
    step = simulate(strategy, topics, members, [])[0]
    assert dict(step.partition_counts) == counts
    load = strategy_load(strategy, topics, {}, MemberCapacity(bytes_per_s=1.0), ["A", "B"])
    assert dict(load.member_partitions) == counts
