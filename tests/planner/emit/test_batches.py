"""Batching: limits hold, batches compose to the target, hot brokers rest, leader-preserving phases."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.emit import BatchLimits, apply_batches, plan_batches
from pools.plan_file import PartitionMove
from tests.plugin import examples


def _random_moves(seed: int, n: int, brokers: int = 9, rf: int = 3) -> list[PartitionMove]:
    rnd = random.Random(seed)
    ids = list(range(1, brokers + 1))
    return [
        PartitionMove(f"t{i % 7}", i, tuple(rnd.sample(ids, rf)), tuple(rnd.sample(ids, rf)), rnd.randint(0, 10**10))
        for i in range(n)
    ]


@settings(max_examples=examples(40))
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(0, 120),
    per_broker=st.integers(1, 6),
    per_batch=st.none() | st.integers(1, 20),
    budget=st.none() | st.integers(1, 3 * 10**10),
    leader_preserving=st.booleans(),
)
def test_limits_hold_and_batches_compose_to_the_target(seed, n, per_broker, per_batch, budget, leader_preserving) -> None:
    moves = _random_moves(seed, n)
    limits = BatchLimits(per_broker, per_batch, budget)
    batches = plan_batches(moves, limits=limits, leader_preserving=leader_preserving)
    current = {(m.topic, m.partition): m.old_replicas for m in moves}
    final = apply_batches(current, batches)
    assert final == {(m.topic, m.partition): m.replicas for m in moves}
    assert [b.index for b in batches] == list(range(1, len(batches) + 1))
    for b in batches:
        keys = [(m.topic, m.partition) for m in b.moves]
        assert len(keys) == len(set(keys)) and b.moves
        counts: dict[int, int] = {}
        for m in b.moves:
            for broker in m.brokers:
                counts[broker] = counts.get(broker, 0) + 1
        assert max(counts.values()) <= per_broker
        assert per_batch is None or len(b.moves) <= per_batch
        assert budget is None or len(b.moves) == 1 or b.moved_bytes <= budget
    phases = [b.phase for b in batches]
    assert phases == sorted(phases)


def test_unchanged_partitions_are_not_moved() -> None:
    moves = [PartitionMove("a", 0, (1, 2), (1, 2), 5), PartitionMove("a", 1, (1, 2), (2, 1), 5)]
    (batch,) = plan_batches(moves)
    assert [(m.partition, m.replicas, m.moved_bytes) for m in batch.moves] == [(1, (2, 1), 0)]


def test_hot_brokers_rest_in_the_next_batch_when_other_work_exists() -> None:
    # Two disjoint groups of brokers; each group alone saturates its brokers, so batches alternate.
    moves = [PartitionMove("a", i, (1,), (2,), 100 - i) for i in range(6)]
    moves += [PartitionMove("b", i, (3,), (4,), 50 - i) for i in range(6)]
    batches = plan_batches(moves, limits=BatchLimits(moves_per_broker=2, partitions_per_batch=2))
    for prev, nxt in zip(batches, batches[1:]):
        assert not set(prev.hot_brokers) & {b for m in nxt.moves for b in m.adding}
    assert [sorted({m.topic for m in b.moves}) for b in batches] == [["a"], ["b"]] * 3


def test_unavoidable_hot_broker_still_makes_progress() -> None:
    moves = [PartitionMove("a", i, (1,), (2,), 10) for i in range(7)]
    batches = plan_batches(moves, limits=BatchLimits(moves_per_broker=3))
    assert [len(b.moves) for b in batches] == [3, 3, 1]


def test_byte_budget_and_oversized_move() -> None:
    moves = [PartitionMove("a", 0, (1,), (2,), 50), PartitionMove("a", 1, (3,), (4,), 30),
             PartitionMove("a", 2, (5,), (6,), 30), PartitionMove("a", 3, (7,), (8,), 500)]
    batches = plan_batches(moves, limits=BatchLimits(bytes_per_batch=80))
    assert [[m.partition for m in b.moves] for b in batches] == [[3], [0, 1], [2]]


def test_leader_preserving_keeps_the_current_leader_first_until_phase_two() -> None:
    moves = [
        PartitionMove("a", 0, (1, 2, 3), (4, 1, 2), 10),  # leader 1 stays: copy to 4 with 1 first, then reorder
        PartitionMove("a", 1, (1, 2, 3), (4, 5, 6), 10),  # leader leaves: one step
        PartitionMove("a", 2, (1, 2), (2, 1), 10),  # reorder only: phase 2 only
    ]
    batches = plan_batches(moves, leader_preserving=True, leaders={("a", 0): 1, ("a", 1): 2, ("a", 2): 1})
    phase1 = {m.partition: m.replicas for b in batches if b.phase == 1 for m in b.moves}
    phase2 = {m.partition: (m.old_replicas, m.replicas) for b in batches if b.phase == 2 for m in b.moves}
    assert phase1 == {0: (1, 4, 2), 1: (4, 5, 6)}
    assert phase2 == {0: ((1, 4, 2), (4, 1, 2)), 2: ((1, 2), (2, 1))}
    assert all(m.moved_bytes == 0 for b in batches if b.phase == 2 for m in b.moves)


def test_apply_batches_rejects_out_of_order_state() -> None:
    batches = plan_batches([PartitionMove("a", 0, (1,), (2,), 1)])
    with pytest.raises(ValueError, match="a-0 is \\(3,\\)"):
        apply_batches({("a", 0): (3,)}, batches)


def test_limits_validation() -> None:
    with pytest.raises(ValueError):
        BatchLimits(moves_per_broker=0)


def test_one_replica_at_a_time_splits_a_move_into_single_copies() -> None:
    """An RF 3 partition moving all its replicas becomes three steps in three batches; every batch copies at most
    one replica per partition, and the batches in order give the target."""
    from planner.emit.batches import BatchMove, apply_batches, one_replica_steps, plan_batches

    moves = [BatchMove("t", 0, (1, 2, 3), (4, 5, 6), 10), BatchMove("t", 1, (1, 2, 3), (2, 1, 3), 10),
             BatchMove("t", 2, (1, 2), (3, 1, 4), 10), BatchMove("t", 3, (1, 2, 3), (1, 4), 10)]
    batches = plan_batches(moves, one_replica_at_a_time=True)
    assert all(len(m.adding) <= 1 for b in batches for m in b.moves)
    assert sum((m.topic, m.partition) == ("t", 0) for b in batches for m in b.moves) == 3
    current = {(m.topic, m.partition): m.old_replicas for m in moves}
    assert apply_batches(current, batches) == {(m.topic, m.partition): m.replicas for m in moves}
    assert sum(m.moved_bytes for b in batches for m in b.moves) == sum(m.moved_bytes for m in moves)
    assert [s.replicas for s in one_replica_steps(moves[3])] == [(1, 4)]
    without = plan_batches(moves)
    assert any(len(m.adding) > 1 for b in without for m in b.moves)


def test_moves_relieving_a_broker_over_its_limit_run_first() -> None:
    from planner.emit.batches import BatchLimits, BatchMove, plan_batches

    moves = [BatchMove("t", i, (i + 10, 20), (i + 30, 20), 100 - i) for i in range(6)]
    moves.append(BatchMove("t", 9, (7, 20), (8, 20), 1))  # the smallest move relieves broker 7
    first = plan_batches(moves, limits=BatchLimits(moves_per_broker=1), relieve_first=frozenset({7}))[0]
    assert [(m.topic, m.partition) for m in first.moves] == [("t", 9)]
    plain = plan_batches(moves, limits=BatchLimits(moves_per_broker=1))[0]
    assert [(m.topic, m.partition) for m in plain.moves] == [("t", 0)]


def test_round_robin_spreads_a_batch_over_the_destinations() -> None:
    """Broker 1 receives six large moves, brokers 2 and 3 one small each; a batch of three partitions takes the
    three destinations in turn under round-robin, broker 1's three largest otherwise."""
    from planner.emit.batches import BatchLimits, BatchMove, plan_batches

    moves = [BatchMove("t", i, (10 + i,), (1,), 100 - i) for i in range(6)]
    moves += [BatchMove("u", 0, (20,), (2,), 5), BatchMove("u", 1, (21,), (3,), 4)]
    plain = plan_batches(moves, limits=BatchLimits(moves_per_broker=5, partitions_per_batch=3))[0]
    assert {m.replicas[0] for m in plain.moves} == {1}
    spread = plan_batches(moves, limits=BatchLimits(moves_per_broker=5, partitions_per_batch=3, round_robin=True))[0]
    assert sorted(m.replicas[0] for m in spread.moves) == [1, 2, 3]
    every = plan_batches(moves, limits=BatchLimits(moves_per_broker=5, round_robin=True))
    assert sum(len(b.moves) for b in every) == len(moves)


def test_topics_are_ordered_as_java_orders_strings_even_with_a_lone_surrogate() -> None:
    # a topic name read from JSON ("\ud800") may hold a lone surrogate, which Java compares as one code unit
    names = ["t\ud800", "t\U0001f680", "t\uffff", "ta"]
    moves = [PartitionMove(name, 0, (1, 2), (3, 4), 10) for name in names]
    (batch,) = plan_batches(moves, limits=BatchLimits(10, None, None))
    assert [m.topic for m in batch.moves] == ["ta", "t\ud800", "t\U0001f680", "t\uffff"]
