"""The audit's reassignment fixes fix: applied to the cluster, the partition re-audits clean, with no more change
than the finding needs (the replaced replicas in their own slots, the leader kept) and racks preferred."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.random_clusters import random_cluster
from pools.audit import audit
from pools.audit.fixes import PLAN_FIX
from pools.cluster_arrays import cluster_arrays, pool_arrays
from planner.pool_planner import plan_pools
from pools.plan_file import PartitionMove
from pools.snapshot import ClusterSnapshot

from .helpers import POLICY, brokers, healthy, policy, snapshot, with_partition

REASSIGNED = ("replica_outside_pool", "rack_shared")


def _target(fix: str) -> tuple[int, ...]:
    return tuple(int(b) for b in re.search(r'"replicas":\[([0-9,]*)\]', fix).group(1).split(","))


def _scrambled(seed: int, unracked: int, share: float) -> tuple[ClusterSnapshot, object, dict]:
    """A random pooled cluster with ``share`` of its partitions put on random brokers of the whole cluster
    (replicas outside their pool, racks repeated) and ``unracked`` brokers without a rack."""
    snap, pol, profile = random_cluster(16, 10, 3, partitions=4, racks=3, misplaced=0.1, seed=seed)
    rng = np.random.default_rng(seed)
    ids = [b.id for b in snap.brokers]
    parts = []
    for p in snap.partitions:
        if rng.random() < share:
            reps = tuple(int(b) for b in rng.choice(ids, size=len(p.replicas), replace=False))
            p = replace(p, replicas=reps, leader=reps[0], isr=reps)
        parts.append(p)
    bare = set(rng.choice(ids, size=unracked, replace=False).tolist())
    broker_list = tuple(replace(b, rack=None) if b.id in bare else b for b in snap.brokers)
    return replace(snap, brokers=broker_list, partitions=tuple(parts)), pol, profile


def _applied(snap: ClusterSnapshot, targets: dict[tuple[str, int], tuple[int, ...]]) -> ClusterSnapshot:
    """The snapshot after the reassignments complete: new replicas in sync, the first one leading."""
    parts = []
    for p in snap.partitions:
        new = targets.get((p.topic, p.partition))
        if new is not None:
            p = replace(p, replicas=new, leader=new[0], isr=new, sizes=(p.size_bytes,) * len(new), log_dirs=())
        parts.append(p)
    return replace(snap, partitions=tuple(parts))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), unracked=st.integers(0, 2), share=st.sampled_from([0.1, 0.3]),
       with_profile=st.booleans())
def test_every_reassignment_fix_re_audits_clean_and_changes_only_what_it_must(seed, unracked, share, with_profile):
    snap, pol, profile = _scrambled(seed, unracked, share)
    profile = profile if with_profile else None
    found = [f for f in audit(snap, pol, profile) if f.kind in REASSIGNED]
    assert found, "the scrambled cluster has misplaced replicas"
    targets: dict[tuple[str, int], tuple[int, ...]] = {}
    for f in found:
        assert f.fix != PLAN_FIX, f  # every pool has brokers on every rack to spare: a reassignment repairs it
        target = _target(f.fix)
        assert targets.setdefault((f.topic, f.partition), target) == target  # one fix per partition
    after = audit(_applied(snap, targets), pol, profile)
    assert [f for f in after if f.kind in REASSIGNED] == []

    p = pool_arrays(snap, pol)
    pool_of = {b.id: p.broker_pool[i] for i, b in enumerate(snap.brokers)}
    rack = {b.id: b.rack for b in snap.brokers}
    index = {(q.topic, q.partition): q for q in snap.partitions}
    topics = list(cluster_arrays(snap).topics)
    for key, new in targets.items():
        old = index[key].replicas
        pool = p.topic_pool[topics.index(key[0])]
        inside = [pool_of[b] == pool for b in old]
        if inside[0]:
            assert new[0] == old[0]  # the preferred leader stays
        elif new[0] in old:  # a leaving leader's successor swaps into the first slot: undo the swap to compare
            at = old.index(new[0])
            new = (new[at],) + new[1:at] + (new[0],) + new[at + 1:]
        changed = [j for j in range(len(old)) if old[j] != new[j]]
        # replaced in place: every slot either keeps its broker or gets one the partition did not have
        assert all(new[j] not in old for j in changed), (old, new)
        outside = inside.count(False)
        racks_kept = {rack[b] for b, ok in zip(old, inside) if ok and rack[b] is not None}
        pool_racks = {rack[b] for b in pool_of if pool_of[b] == pool and rack[b] is not None}
        need = min(len(old), len(pool_racks))
        assert outside <= len(changed) <= max(outside, need - len(racks_kept)), (old, new)
        used = {rack[b] for b in new if rack[b] is not None}
        for j in changed:
            if rack[new[j]] is None:  # no broker without a rack while the pool has one on a rack not used
                spare = [b for b in pool_of if pool_of[b] == pool and b not in new and rack[b] not in used | {None}]
                assert spare == [], (old, new, spare)


def test_a_replaced_replica_keeps_its_slot_and_the_leader_stays():
    # [1, 6, 2]: 6 is pool b's; pool a's broker 3 takes its slot, not the end of the list
    parts = with_partition(healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6)), "a-x", 0,
                           replicas=(1, 6, 2), isr=(1, 6, 2), leader=1)
    found = [f for f in audit(snapshot(parts), policy()) if f.kind == "replica_outside_pool"]
    assert [_target(f.fix) for f in found] == [(1, 3, 2)]
    # the preferred leader leaves: the current leader, staying, takes the first slot
    parts = with_partition(parts, "a-x", 0, replicas=(6, 1, 2), isr=(6, 1, 2), leader=2)
    found = [f for f in audit(snapshot(parts), policy()) if f.kind == "replica_outside_pool"]
    assert [_target(f.fix) for f in found] == [(2, 1, 3)]


def test_a_broker_on_an_unused_rack_comes_before_one_without_a_rack():
    # pool a: 1 (r1), 2 (r2), 3 (r3), 7 (no rack, empty, so least loaded); a-x 0 on [1, 2, 5]: 5 is pool b's
    b = brokers()
    b.append(replace(b[0], id=7, rack=None))
    parts = with_partition(healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6)), "a-x", 0,
                           replicas=(1, 2, 5), isr=(1, 2, 5))
    found = [f for f in audit(snapshot(parts, broker_list=b), policy()) if f.kind == "replica_outside_pool"]
    assert [_target(f.fix) for f in found] == [(1, 2, 3)]


def test_no_fix_drops_a_replica_on_a_broker_gone_from_the_inventory():
    # broker 3 (pool a, rack r3) is gone; pool a keeps 1 and 2, too few for RF 3: the seed keeps a-x as it is,
    # so the fix is the plan (which says what the pool lacks), never a reassignment to two replicas
    snap = snapshot(broker_list=[b for b in brokers() if b.id != 3])
    found = [f for f in audit(snap, policy()) if f.kind == "replica_outside_pool"]
    assert len(found) == 3 and all(f.fix == PLAN_FIX for f in found)


def test_a_plan_move_that_only_reorders_is_not_a_rack_fix():
    # a-x 0 on [1, 3, 2] with 1 and 3 on rack r1; broker 8 (pool a, r3) is free
    b = brokers({3: {"rack": "r1"}})
    b.append(replace(b[0], id=8, rack="r3", pool="a"))
    parts = with_partition(healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6)), "a-x", 0,
                           replicas=(1, 3, 2), isr=(1, 3, 2))
    snap = snapshot(parts, broker_list=b)
    plan = plan_pools(snap, policy(), {}).plan
    reorder = PartitionMove("a-x", 0, (1, 3, 2), (1, 2, 3), 0)
    plan = replace(plan, partitions=tuple(reorder if (m.topic, m.partition) == ("a-x", 0) else m
                                          for m in plan.partitions))
    found = [f for f in audit(snap, policy(), plan=plan) if (f.kind, f.partition) == ("rack_shared", 0)]
    assert [_target(f.fix) for f in found] == [(1, 8, 2)]


def test_a_plan_target_on_a_broker_still_to_buy_is_not_a_fix_to_run_today():
    # as above, but the plan sends a-x 0 to broker 9, which the plan buys: the fix keeps to brokers there today
    from pools.new_brokers import PlannedBroker

    b = brokers({3: {"rack": "r1"}})
    b.append(replace(b[0], id=8, rack="r3", pool="a"))
    parts = with_partition(healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6)), "a-x", 0,
                           replicas=(1, 3, 2), isr=(1, 3, 2))
    snap = snapshot(parts, broker_list=b)
    plan = plan_pools(snap, policy(), {}).plan
    onto_new = PartitionMove("a-x", 0, (1, 3, 2), (1, 9, 2), 0)
    plan = replace(plan, partitions=tuple(onto_new if (m.topic, m.partition) == ("a-x", 0) else m
                                          for m in plan.partitions),
                   planned_brokers=(PlannedBroker(9, "r3", "a", b[0].capacity),))
    found = [f for f in audit(snap, policy(), plan=plan) if (f.kind, f.partition) == ("rack_shared", 0)]
    assert [_target(f.fix) for f in found] == [(1, 8, 2)]


def test_a_pool_without_brokers_gets_the_plan_as_its_fix():
    # pool c has topics but no broker (none pinned, none tagged): its replicas are outside it and no reassignment
    # can bring them in, so the fix is the plan (which says how many brokers the pool lacks); it was an IndexError
    pol = policy(POLICY + "\n[[pool]]\nname = \"c\"\ntopics = ['c-.*']\n")
    snap = snapshot(healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6)) + healthy("c-z", (1, 4, 5)))
    found = [f for f in audit(snap, pol) if f.kind == "replica_outside_pool" and f.topic == "c-z"]
    assert len(found) == 9 and all(f.fix == PLAN_FIX for f in found)  # each replica of its three partitions
