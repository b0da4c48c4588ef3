"""Brokers still to buy: their ids, racks and capacity, and the plan file that names them."""

from __future__ import annotations

import json
import re

import pytest

from pools.errors import InputError
from pools.new_brokers import (PlannedBroker, new_broker_ids, parse_broker_ids, placeholder_brokers, rack_alternated,
                               spread_over_racks, taken_ids, with_planned_brokers)
from pools.plan_file import Plan, SolverReport, plan_from_dict, plan_to_json
from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState, TopicState

CAP = Capacity(nw_in=100.0, nw_out=100.0, disk=1000.0, replicas=10.0)


def _snapshot() -> ClusterSnapshot:
    brokers = tuple(Broker(b, f"r{b % 3}", CAP, "core") for b in (1, 2, 3))
    # broker 7 is gone from the inventory but a replica still names it: its id is taken
    return ClusterSnapshot("c", brokers, (TopicState("t"),), (PartitionState("t", 0, (1, 7), leader=1, sizes=(5, 5)),))


def test_default_ids_follow_every_id_the_cluster_knows_gone_brokers_included() -> None:
    snapshot = _snapshot()
    assert taken_ids(snapshot) == {1, 2, 3, 7}
    planned = placeholder_brokers({"core": {"r1": 1, "r2": 2}, "aux": {"": 1}}, CAP, taken=taken_ids(snapshot))
    assert [(b.id, b.rack, b.pool) for b in planned] == [(8, None, "aux"), (9, "r1", "core"), (10, "r2", "core"),
                                                         (11, "r2", "core")]


def test_given_ids_are_used_in_order_and_checked() -> None:
    assert new_broker_ids(2, {1, 2}, (105, 101, 300)) == (105, 101)
    for given, message in [((101, 101), "broker 101 is given twice"), ((2, 101), "broker 2 is already in the cluster"),
                           ((101,), "the plan needs 2 new broker(s), got 1 id(s) (101)")]:
        with pytest.raises(InputError, match="^--new-broker-ids: " + re.escape(message)):
            new_broker_ids(2, {1, 2}, given)


@pytest.mark.parametrize("text", ["", "a", "5-", "-5", "7-5", "1,,2", "2147483648", "0-60000"])
def test_bad_id_lists_are_refused(text: str) -> None:
    with pytest.raises(InputError, match="^--new-broker-ids: expected ids such as 101,102 or 101-103"):
        parse_broker_ids(text)


def test_racks_alternate_like_kafkas_rack_aware_list() -> None:
    assert rack_alternated({"r3": 1, "r1": 3, "r2": 2}) == ("r1", "r2", "r3", "r1", "r2", "r1")
    assert spread_over_racks(5, ["a", "b"]) == {"a": 3, "b": 2}


def test_planned_brokers_join_the_snapshot_empty_and_in_no_pool() -> None:
    snapshot = _snapshot()
    planned = (PlannedBroker(8, "r2", "core", CAP), PlannedBroker(3, "r0", "core", CAP))
    joined = with_planned_brokers(snapshot, planned)
    assert joined.broker_ids == (1, 2, 3, 8) and joined.broker_by_id[8] == Broker(8, "r2", CAP)
    assert joined.broker_by_id[3] is snapshot.broker_by_id[3]  # a broker that has joined is the snapshot's


def _plan(planned: tuple[PlannedBroker, ...], brokers_to_add: int) -> dict:
    plan = Plan("c", {1: "core", 8: None}, {1: "core", 8: "core"}, {"t": "core"}, (), {"core": brokers_to_add},
                SolverReport("HiGHS", "Optimal", "Optimal", 0.0, 0.0, 0.0), planned_brokers=planned)
    return json.loads(plan_to_json(plan))


def test_plan_file_round_trips_planned_brokers_and_omits_them_when_none() -> None:
    doc = _plan((PlannedBroker(8, "r2", "core", CAP),), 1)
    assert doc["planned_brokers"] == [{"id": 8, "rack": "r2", "pool": "core", "capacity": CAP.to_dict()}]
    assert plan_to_json(plan_from_dict(doc)) == plan_to_json(plan_from_dict(json.loads(json.dumps(doc))))
    assert plan_from_dict(doc).planned_brokers == (PlannedBroker(8, "r2", "core", CAP),)
    assert "planned_brokers" not in _plan((), 0)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["brokers"].update({"8": None}), r"planned_brokers\[0\]\.id: expected broker 8 in brokers with pool"),
    (lambda d: d["brokers_before"].update({"8": "core"}), r"planned_brokers\[0\]\.id: expected broker 8 in brokers"),
    (lambda d: d["brokers_to_add"].update({"core": 2}), r"brokers_to_add\.core: expected 1 \(its planned_brokers\)"),
    (lambda d: d["planned_brokers"][0]["capacity"].update({"disk": -1}), r"planned_brokers\[0\]\.capacity\.disk"),
])
def test_plan_file_checks_planned_brokers_against_its_tables(edit, message: str) -> None:
    doc = _plan((PlannedBroker(8, "r2", "core", CAP),), 1)
    edit(doc)
    with pytest.raises(InputError, match=message):
        plan_from_dict(doc, source="plan.json")
