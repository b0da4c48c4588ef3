"""Waves under a change budget: every wave's end state keeps each broker within headroom or no worse than before,
replicas outside their pool never increase, the waves copy exactly the one-shot plan's bytes, and a plan that
cannot be cut names the move that blocks it."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from planner.emit import EmitOptions, build_bundle
from planner.emit.waves import cut_waves, wave_bundles
from planner.pool_planner import plan_pools
from pools.demand import broker_load, topic_demand
from pools.errors import InfeasibleError
from pools.snapshot import DIMENSIONS
from tests.planner.placement.test_prune import _cluster


@pytest.fixture(scope="module")
def case():
    snap, policy, profile = _cluster(3)
    plan = plan_pools(snap, policy, profile).plan
    return snap, plan, topic_demand(snap, profile, None, "forecast")


def _outside(plan, assignment) -> int:
    return sum(plan.brokers.get(b) != plan.topics[t] for (t, _), reps in assignment.items() for b in reps)


def test_every_wave_leaves_the_cluster_no_worse_and_the_waves_add_up_to_the_plan(case) -> None:
    snap, plan, demands = case
    budget = plan.moved_bytes // 5
    waves = cut_waves(plan, snap, demands, budget)
    assert len(waves) >= 5
    assert sum(w.copied_bytes for w in waves) == plan.moved_bytes  # margin 0: every partition moves once
    keys = [(m.topic, m.partition) for w in waves for m in w.moves]
    assert sorted(keys) == sorted((m.topic, m.partition) for m in plan.moves) and len(set(keys)) == len(keys)
    headroom = {p: [plan.pool_headroom(p, d) for d in DIMENSIONS] for p in plan.utilisation.pool_names}
    cap = {b.id: np.array([b.capacity.get(d) for d in DIMENSIONS]) for b in snap.brokers}
    state = {(p.topic, p.partition): p.replicas for p in snap.partitions}
    before = broker_load(snap, demands, state)
    end = broker_load(snap, demands, {(m.topic, m.partition): m.replicas for m in plan.partitions})
    outside = _outside(plan, state)
    for w in waves:
        assert w.copied_bytes <= budget or len(w.moves) == 1
        state |= {(m.topic, m.partition): m.replicas for m in w.moves}
        after = broker_load(snap, demands, state)
        for b in cap:
            pool = plan.brokers.get(b)
            if pool is None:
                continue
            limit = cap[b] * np.array(headroom[pool])
            for k, d in enumerate(DIMENSIONS):
                assert after[b][d] <= max(limit[k], before[b][d], end[b][d]) * (1 + 1e-9) + 1e-6, (w.index, b, d)
        assert _outside(plan, state) == w.outside_pool <= outside
        outside = w.outside_pool
    assert state == {(m.topic, m.partition): m.replicas for m in plan.partitions}


def test_each_wave_is_a_complete_bundle_whose_rollback_restores_its_start(case) -> None:
    snap, plan, demands = case
    waves = cut_waves(plan, snap, demands, plan.moved_bytes // 3)
    files = wave_bundles(plan, snap, waves, EmitOptions())
    index = json.loads(files["waves.json"])
    assert index["one_shot_bytes"] == index["waves_bytes"] == plan.moved_bytes and index["margin"] == 0.0
    for w, row in zip(waves, index["waves"], strict=True):
        name = row["dir"]
        for f in ("reassignment.json", "rollback.json", "runbook.md", "summary.json", "batches/index.json"):
            assert f"{name}/{f}" in files
        moved = {(p["topic"], p["partition"]): p["replicas"]
                 for p in json.loads(files[f"{name}/reassignment.json"])["partitions"]}
        back = {(p["topic"], p["partition"]): p["replicas"]
                for p in json.loads(files[f"{name}/rollback.json"])["partitions"]}
        assert moved == {(m.topic, m.partition): list(m.replicas) for m in w.moves}
        assert back == {(m.topic, m.partition): list(m.old_replicas) for m in w.moves}
        assert f"wave {w.index} of {len(waves)}" in files[f"{name}/runbook.md"].splitlines()[0]
    assert files == wave_bundles(plan, snap, cut_waves(plan, snap, demands, plan.moved_bytes // 3), EmitOptions())


def test_a_plan_that_cannot_be_cut_names_the_move_that_blocks_it(case) -> None:
    """A hand-edited plan puts one replica outside its topic's pool: no wave may add an isolation finding."""
    snap, plan, demands = case
    move = next(m for m in plan.moves if m.reason.rule in ("relieve", "fill"))
    stranger = next(b for b, p in sorted(plan.brokers.items()) if p is not None and p != plan.topics[move.topic]
                    and b not in move.replicas)
    edited = replace(move, replicas=(*move.replicas[:-1], stranger), reason=None)
    bad = replace(plan, partitions=tuple(edited if p is move else p for p in plan.partitions))
    with pytest.raises(InfeasibleError, match=f"moving {move.topic}-{move.partition} .* puts a replica on broker"
                                              f"\\(s\\) {stranger}, outside pool"):
        cut_waves(replace(bad, partitions=tuple(p if p is edited else replace(p, replicas=p.old_replicas, reason=None)
                                                for p in bad.partitions)), snap, demands, plan.moved_bytes)


def test_a_rotation_no_single_move_can_start_runs_as_one_wave(case) -> None:
    """Three equal partitions rotate over three brokers already at their limit: each move alone would push a
    broker over it, so the three run in one wave (whatever the budget)."""
    snap, plan, demands = case
    topic = next(t for t in sorted(plan.topics) if len(snap.partitions_by_topic[t]) >= 3
                 and snap.partitions_by_topic[t][0].size_bytes > 0)
    p0, p1, p2 = snap.partitions_by_topic[topic][:3]
    a, b, c = 901, 902, 903  # three brokers of the topic's pool, rack-less: hand-made for the rotation
    pool = plan.topics[topic]
    brokers = tuple(x for x in snap.brokers) + tuple(replace(snap.brokers[0], id=i, rack=None, pool=pool)
                                                     for i in (a, b, c))
    parts = {(p.topic, p.partition): p for p in snap.partitions}
    for p, (old, new) in zip((p0, p1, p2), ((a, b), (b, c), (c, a)), strict=True):
        parts[p.topic, p.partition] = replace(p, replicas=(old,), leader=old, isr=(old,), sizes=(p.size_bytes,))
    snap2 = replace(snap, brokers=brokers, partitions=tuple(parts.values()))
    moves = {(p.topic, p.partition): n for p, (_, n) in zip((p0, p1, p2), ((a, b), (b, c), (c, a)), strict=True)}
    from pools.plan_file import PartitionMove
    cycle = replace(plan, brokers={**plan.brokers, a: pool, b: pool, c: pool},
                    partitions=tuple(PartitionMove(p.topic, p.partition, p.replicas,
                                                   (moves[p.topic, p.partition],) if (p.topic, p.partition) in moves
                                                   else p.replicas, p.size_bytes) for p in snap2.partitions),
                    utilisation=replace(plan.utilisation, pools={
                        q: {d: replace(cell, headroom=1e-12) for d, cell in row.items()}
                        for q, row in plan.utilisation.pools.items()}))
    waves = cut_waves(cycle, snap2, topic_demand(snap2, {}, None, "forecast"), 1)
    assert [len(w.moves) for w in waves] == [3]


def test_waves_together_reassign_exactly_what_the_one_shot_bundle_does(case) -> None:
    """Even under a budget above the plan, a move that needs room first waits a wave: the waves' reassignments
    together are the one-shot bundle's."""
    snap, plan, demands = case
    waves = cut_waves(plan, snap, demands, plan.moved_bytes + 1)
    files = wave_bundles(plan, snap, waves, EmitOptions())
    one = json.loads(build_bundle(plan, snap, EmitOptions())["reassignment.json"])["partitions"]
    every = [p for w in waves for p in json.loads(files[f"wave-{w.index:03d}/reassignment.json"])["partitions"]]
    key = lambda p: (p["topic"], p["partition"])  # noqa: E731
    assert sorted(every, key=key) == sorted(one, key=key)
