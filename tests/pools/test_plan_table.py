"""The plan's partitions as columns (`pools.plan_file.PartitionTable`): the same plan, the same plan.json bytes
and the same moves as the tuple of `PartitionMove`s it replaces."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pools.atomic import dump_json
from pools.plan_file import PartitionMove, PartitionTable, Plan, Reason, SolverReport, load_plan, plan_to_json, save_plan


def _moves(seed: int = 7, n: int = 400) -> list[PartitionMove]:
    """Partitions that stay, move, only reorder, change their factor, are empty or carry a reason, shuffled."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        topic = rng.choice(["orders", "clicks-v2", "zé\"tä", "a"])
        old = tuple(rng.sample(range(1, 9), rng.randint(1, 4)))
        kind = rng.choice(["stay", "stay", "move", "reorder", "grow", "shrink"])
        new = {"stay": old, "move": (*old[:-1], 9 + i % 3), "reorder": old[::-1] if len(old) > 1 else old,
               "grow": (*old, 12), "shrink": old[:1]}[kind]
        left, reason = tuple(b for b in old if b not in new), None
        if new != old and rng.random() < 0.7:  # a reason plan.json accepts for the move
            reason = rng.choice([Reason("relieve", broker=new[0], dimension="nw_in", bound=70.123456789123,
                                        without=82.5, leader_only=set(old) == set(new)),
                                 Reason("isolate", brokers=left) if left else Reason("rack_spread", leader_only=set(old) == set(new)),
                                 Reason("replication_factor") if len(old) != len(new) else None])
        out.append(PartitionMove(topic, i, old, new, rng.choice([0, 1, 10**12 + i]), reason))
    return rng.sample(out, len(out))


def _plan(partitions) -> Plan:
    return Plan(cluster="c1", brokers_before={b: None for b in range(1, 13)}, brokers={b: "p" for b in range(1, 13)},
                topics={"orders": "p", "clicks-v2": "p", "zé\"tä": "p", "a": "p"}, partitions=partitions,
                brokers_to_add={"p": 0}, solver=SolverReport("HiGHS", "Optimal", "Optimal", 1.0, 1.0, 0.0),
                utilisation={"pools": {}}, warnings=("w",))


def _json_of_entries(plan: Plan) -> str:
    """plan.json as `json.dumps` writes each entry of `Plan.to_dict` (the format's definition)."""
    doc = plan.to_dict()
    rows = ",\n".join("    " + json.dumps(p, sort_keys=True) for p in doc.pop("partitions"))
    return dump_json(doc).replace('"solver": {', f'"partitions": [\n{rows}\n  ],\n  "solver": {{', 1)


def test_a_table_is_the_same_plan_with_the_same_bytes_as_its_moves(tmp_path: Path) -> None:
    moves = _moves()
    listed = _plan(tuple(moves))
    table = PartitionTable.from_moves(moves)
    columns = _plan(table)
    assert isinstance(columns.partitions, PartitionTable)
    assert columns.partitions == listed.partitions and list(columns.partitions) == list(listed.partitions)
    assert columns.moves == listed.moves and len(columns.moves) < len(moves)
    assert columns.moved_bytes == listed.moved_bytes == sum(m.moved_bytes for m in moves)
    assert plan_to_json(columns) == plan_to_json(listed) == _json_of_entries(listed)
    save_plan(columns, tmp_path / "plan.json")
    assert load_plan(tmp_path / "plan.json") == columns


def test_a_table_builds_each_move_once_and_reads_rows_by_key() -> None:
    plan = _plan(PartitionTable.from_moves(_moves()))
    table = plan.partitions
    first = plan.moves[0]
    assert first is next(m for m in table if m.changed) is table[int(np.flatnonzero(table.changed)[0])]
    assert table[-1] == table[len(table) - 1] and table[2:5] == tuple(table)[2:5]
    rows = table.rows_of([(first.topic, first.partition), ("absent", 0), (first.topic, 10**6)])
    assert rows.tolist()[1:] == [-1, -1] and table[int(rows[0])] is first


def test_a_table_sorts_its_rows_and_refuses_unsorted_topics() -> None:
    table = PartitionTable(("a", "b"), np.array([1, 0, 0]), np.array([0, 5, 2]), np.array([[1], [2], [3]]),
                           np.array([[1], [2], [4]]), np.array([1, 2, 3]))
    assert [(m.topic, m.partition) for m in table] == [("a", 2), ("a", 5), ("b", 0)]
    assert [m.replicas for m in table.moves] == [(4,)] and int(table.copied.sum()) == 3
    with pytest.raises(ValueError, match="sorted"):
        PartitionTable(("b", "a"), np.array([0]), np.array([0]), np.array([[1]]), np.array([[1]]), np.array([0]))


def test_reasons_stay_on_the_rows_that_move() -> None:
    moves = _moves(seed=3)
    table = PartitionTable.from_moves(moves)
    assert set(table.reasons) <= set(np.flatnonzero(table.changed).tolist())
    bare = replace(_plan(table), partitions=table.with_reasons({}))
    assert all(m.reason is None for m in bare.partitions)
    assert '"reason"' not in plan_to_json(bare) and '"reason"' in plan_to_json(_plan(table))


@pytest.mark.parametrize("old", [np.zeros(0), np.zeros((0, 3))])
def test_an_empty_table_has_no_moves_and_equals_an_empty_plan(old: np.ndarray) -> None:
    table = PartitionTable((), np.zeros(0), np.zeros(0), old, old, np.zeros(0))
    assert list(table) == [] and list(table.moves) == [] and int(table.copied.sum()) == 0
    assert PartitionTable.from_moves(()).old.shape[0] == 0
