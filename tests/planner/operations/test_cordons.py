"""Cordoned brokers (KIP-1066) in every day-2 operation, the plan's placement and the validator: no new replica
lands on a cordoned broker, while its own replicas may still leave it."""

from __future__ import annotations

import dataclasses

import pytest

from planner.operations import (
    add_brokers,
    decommission_brokers,
    operation_inputs,
    rebalance,
    replace_broker,
    set_replication_factor,
)
from planner.validator import check_cordons, validate_plan
from pools.errors import InfeasibleError, InputError

from .shapes import Shape, broker, new_rack, shape, skewed_pool


def _cordon(s: Shape, *brokers: int, dirs: tuple[str, ...] = ()) -> Shape:
    """``s`` with ``brokers`` cordoned (``dirs`` given: only those log dirs, of their dirs ``/d1``, ``/d2``)."""
    out = []
    for b in s.snapshot.brokers:
        if b.id in brokers:
            b = dataclasses.replace(b, log_dirs=("/d1", "/d2"), cordoned_log_dirs=dirs) if dirs else \
                dataclasses.replace(b, cordoned=True)
        out.append(b)
    return dataclasses.replace(s, snapshot=dataclasses.replace(s.snapshot, brokers=tuple(out)))


def _inputs(s: Shape):
    return operation_inputs(s.snapshot, s.policy, s.profile)


def _new_on(plan, broker: int) -> list:
    return [m for m in plan.partitions if broker in m.replicas and broker not in m.old_replicas]


def test_a_rebalance_fills_every_empty_broker_but_the_cordoned_one() -> None:
    naive = rebalance(_inputs(skewed_pool()))
    assert _new_on(naive.plan, 4)  # the empty broker 4 is where a plan that ignores cordons puts replicas
    s = _cordon(skewed_pool(), 4)
    op = rebalance(_inputs(s))
    assert not _new_on(op.plan, 4) and _new_on(op.plan, 5) and _new_on(op.plan, 6)
    assert validate_plan(s.snapshot, s.policy, op.plan, _inputs(s).forecast) == []
    assert "broker 4 is cordoned: all log dirs: it takes no new replica" in op.plan.warnings
    # the validator rejects the naive plan on the cordoned snapshot
    found = check_cordons(s.snapshot, s.policy, naive.plan, {})
    assert found and all(v.rule == "cordons" and v.hard
                         and "a new replica on broker 4, which is cordoned (all log dirs)" in v.message for v in found)


def test_the_windows_of_a_large_pool_keep_the_cordon(monkeypatch) -> None:
    # the large-pool path (the search, then the engine's model window by window), windows of 2 of the 6 brokers
    from planner.operations import distribution, polish

    monkeypatch.setattr(distribution, "ENGINE_PAIRS", 0)
    monkeypatch.setattr(polish, "WINDOW_BROKERS", 2)
    s = _cordon(skewed_pool(), 4)
    op = rebalance(_inputs(s))
    assert op.plan.placement["a"]["status"] == "greedy"
    assert not _new_on(op.plan, 4) and _new_on(op.plan, 5) and _new_on(op.plan, 6)
    assert validate_plan(s.snapshot, s.policy, op.plan, _inputs(s).forecast) == []


def test_a_broker_with_one_open_log_dir_still_takes_replicas() -> None:
    s = _cordon(skewed_pool(), 4, dirs=("/d2",))
    op = rebalance(_inputs(s))
    assert _new_on(op.plan, 4)  # Kafka places them in /d1 ("any" in the reassignment)
    assert check_cordons(s.snapshot, s.policy, op.plan, {}) == []


def test_decommission_drains_a_cordoned_broker_onto_open_ones_only() -> None:
    four_racks = shape([broker(b, f"r{(b - 1) % 4}") for b in range(1, 9)],
                       {"a.orders": [(1, 2, 3), (2, 3, 1), (3, 1, 2)] * 4})
    naive = decommission_brokers(_inputs(four_racks), [1])
    assert _new_on(naive.plan, 4) or _new_on(naive.plan, 5)
    s = _cordon(four_racks, 1, 4, 5)  # 1 is cordoned before its drain; 4 and 5 for other reasons
    op = decommission_brokers(_inputs(s), [1])
    assert all(1 not in m.replicas for m in op.plan.partitions)  # a cordoned broker still gives its replicas
    assert not _new_on(op.plan, 4) and not _new_on(op.plan, 5) and _new_on(op.plan, 8)
    assert validate_plan(s.snapshot, s.policy, op.plan, _inputs(s).forecast) == []


def test_added_brokers_take_nothing_when_cordoned() -> None:
    s = _cordon(new_rack(), 8)
    op = add_brokers(_inputs(s), "a", [7, 8, 9])
    assert not _new_on(op.plan, 8) and _new_on(op.plan, 7) and _new_on(op.plan, 9)
    assert "broker 8 is cordoned: all log dirs: it joins pool 'a' but takes no replica" in op.plan.warnings


def test_a_cordoned_broker_cannot_replace_another() -> None:
    s = _cordon(new_rack(), 7)
    with pytest.raises(InputError, match="--new: broker 7 is cordoned: all log dirs; it can take no replica"):
        replace_broker(_inputs(s), 1, 7)


def test_raising_the_replication_factor_skips_cordoned_brokers() -> None:
    s = _cordon(new_rack(), 4, 5)
    op = set_replication_factor(_inputs(s), ["a\\..*"], 4)
    assert not _new_on(op.plan, 4) and not _new_on(op.plan, 5)
    assert all(len(m.replicas) == 4 for m in op.plan.partitions)


def test_a_drain_counts_a_cordoned_broker_only_for_its_own_load() -> None:
    # five 50 MB/s brokers, 100 MB/s of nw_in: draining broker 5 leaves 0.7 x (4 - 1 tolerated) x 50 = 105 MB/s.
    # Cordoned, broker 4 takes none of broker 5's replicas and counts for its own 20 MB/s only (20 / 0.7)
    from benchmarks.random_clusters import profile_row
    from pools.policy import parse_policy
    from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState, TopicState

    cap = Capacity(nw_in=50e6, nw_out=500e6, disk=1e13, replicas=1000)
    parts = tuple(PartitionState("t", p, (1 + p % 5, 1 + (p + 1) % 5), leader=1 + p % 5, sizes=(10, 10))
                  for p in range(10))
    policy = parse_policy('[defaults]\nheadroom = 0.7\ntolerated_broker_failures = 1\nmin_brokers = 2\n\n'
                          '[[pool]]\nname = "core"\ndefault = true\n')
    profile = {"t": profile_row("t", 10, 50e6, 0.0, 80.0)}

    def drain(cordoned: bool):
        brokers = tuple(Broker(b, None, cap, "core", cordoned=cordoned and b == 4) for b in range(1, 6))
        snap = ClusterSnapshot("c", brokers, (TopicState("t"),), parts)
        return decommission_brokers(operation_inputs(snap, policy, profile), [5])

    assert drain(False).plan.brokers[5] is None
    with pytest.raises(InfeasibleError, match="pool 'core' nw_in demand 1e[+]08 exceeds the 9e[+]07 it could carry"):
        drain(True)
