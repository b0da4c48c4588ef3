"""Planning end to end on random pooled clusters: valid, deterministic, cheaper than placing from scratch."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.placement import assign_replicas_to_brokers
from planner.pool_planner import check_policy, plan_pools
from benchmarks.random_clusters import random_cluster
from planner.validator import validate_plan
from pools.demand import topic_demand
from pools.errors import InputError
from pools.plan_file import plan_to_json
from pools.policy import PoolSpec, TenantSpec
from pools.snapshot import DIMENSIONS, Capacity
from tests.plugin import examples


def _scratch_moved_bytes(snapshot, plan) -> int:
    """Bytes moved when every pool's topics are placed from scratch by AdminUtils on the pool's brokers."""
    moved = 0
    for topic, pool in plan.topics.items():
        brokers = sorted((b.id, b.rack) for b in snapshot.brokers if plan.brokers.get(b.id) == pool)
        parts = snapshot.partitions_by_topic[topic]
        target = assign_replicas_to_brokers(brokers, len(parts), len(parts[0].replicas), fixed_start_index=0)
        for p in parts:
            moved += p.size_bytes * sum(b not in p.replicas for b in target[p.partition])
    return moved


@settings(max_examples=examples(12))
@given(
    brokers=st.integers(9, 24),
    topics=st.integers(10, 60),
    pools=st.integers(2, 4),
    misplaced=st.floats(0.0, 0.4),
    load=st.floats(0.2, 0.6),
    seed=st.integers(0, 10_000),
)
def test_random_clusters_get_valid_plans(brokers, topics, pools, misplaced, load, seed) -> None:
    snapshot, policy, profile = random_cluster(brokers, topics, pools, misplaced=misplaced, load=load, seed=seed,
                                                  partitions=4)
    outcome = plan_pools(snapshot, policy, profile, time_limit=20, gap=0.0)
    plan = outcome.plan
    violations = validate_plan(snapshot, policy, plan, topic_demand(snapshot, profile))
    if not outcome.shortfall:
        # a partition hotter than any broker can leave its broker over the limit: only when the plan says so
        hot = {v.message.split()[1] for v in violations if v.rule == "broker_capacity"}
        assert all(v.rule == "broker_capacity" for v in violations), violations
        assert all(any(f" {b} stay over" in w or f" {b}," in w for w in plan.warnings) for b in hot), violations
        assert sum(plan.brokers_to_add.values()) == 0
        assert plan.moved_bytes <= _scratch_moved_bytes(snapshot, plan)
    else:  # placed onto the brokers still to buy, by the same rules: the plan is valid once they join
        assert sum(plan.brokers_to_add.values()) == len(plan.planned_brokers) > 0
        assert all(v.rule == "broker_capacity" for v in violations), violations
    assert plan.solver.status == "Optimal" and plan.solver.gap is not None


@pytest.mark.slow
def test_same_inputs_give_byte_identical_plans_however_long_they_take(monkeypatch) -> None:
    import time

    snapshot, policy, profile = random_cluster(15, 40, 3, misplaced=0.2, seed=7)
    first = plan_pools(snapshot, policy, profile)
    real = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: real() * 7 + 5)  # a machine busy enough to take 7x as long
    slow = plan_pools(snapshot, policy, profile)
    assert plan_to_json(first.plan) == plan_to_json(slow.plan)
    assert slow.solver_seconds > first.solver_seconds  # the time is measured, for the console only
    assert "seconds" not in plan_to_json(first.plan)


def test_isolates_tenants_and_moves_less_than_from_scratch() -> None:
    snapshot, policy, profile = random_cluster(18, 60, 3, misplaced=0.3, seed=3)
    plan = plan_pools(snapshot, policy, profile, gap=0.0).plan
    assert validate_plan(snapshot, policy, plan, topic_demand(snapshot, profile)) == []
    for topic, pool in plan.topics.items():
        if topic.startswith("tenant"):
            assert pool == f"p{topic.split('.')[0].removeprefix('tenant')}"
    assert 0 < plan.moved_bytes < _scratch_moved_bytes(snapshot, plan)
    pools = plan.utilisation.pools
    assert set(pools) == {"p0", "p1", "p2"} and set(pools["p0"]) == set(DIMENSIONS)
    disk = plan.utilisation.broker(1, "disk")
    assert None not in (disk.capacity, disk.now, disk.before, disk.after)
    assert set(plan.utilisation.to_dict()["brokers"]["1"]["disk"]) == {"capacity", "now", "before", "after"}


@pytest.mark.slow  # the placement's node limits take ~25 s idle (175 s at load average 15)
def test_shortfall_is_explained_per_pool_and_dimension() -> None:
    snapshot, policy, profile = random_cluster(12, 30, 2, seed=1, load=0.45)
    small = Capacity(**{d: snapshot.brokers[0].capacity.get(d) / 4 for d in DIMENSIONS})
    snapshot = replace(snapshot, brokers=tuple(replace(b, capacity=small) for b in snapshot.brokers))
    outcome = plan_pools(snapshot, policy, profile, time_limit=3600)  # work limits end it, not the net
    assert not [w for w in outcome.plan.warnings if "time limit" in w]
    assert sum(outcome.plan.brokers_to_add.values()) > 0
    assert any(s.startswith("pool p") and "more broker(s) for " in s and "at 80% headroom" in s
               for s in outcome.shortfall)
    assert set(outcome.shortfall) <= set(outcome.plan.warnings)
    # the brokers to buy are planned onto, by the rules of real brokers: rack spread, pools, capacity
    plan = outcome.plan
    assert sum(plan.brokers_to_add.values()) == len(plan.planned_brokers)
    assert validate_plan(snapshot, policy, plan, topic_demand(snapshot, profile)) == []
    for pool in plan.brokers_to_add:
        racks = [b.rack for b in plan.planned_brokers if b.pool == pool]
        assert all(a != b for a, b in zip(racks, racks[1:])) or len(set(racks)) == 1  # alternated
    assert all(plan.utilisation.broker(b.id, "replicas").after > 0 for b in plan.planned_brokers)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: replace(p, pools=p.pools + (PoolSpec("x", topics=(r"tenant0\..*",)), PoolSpec("y", topics=(r"tenant0\.t.*",)))),
         "conflicting selectors: topic 'tenant0.t"),
        (lambda p: replace(p, pools=(replace(p.pools[0], brokers=(99,)),) + p.pools[1:]), "pins broker(s) 99"),
        (lambda p: replace(p, pools=(replace(p.pools[0], min_racks=5),) + p.pools[1:]),
         "pool 'p0' needs min_racks=5 but can only span 3 rack(s)"),
    ],
)
def test_contradictory_policies_are_input_errors(edit, message: str) -> None:
    snapshot, policy, _ = random_cluster(12, 30, 2, seed=1)
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_policy(snapshot, edit(policy))


def test_replication_factor_above_the_racks_is_an_input_error() -> None:
    snapshot, policy, _ = random_cluster(12, 30, 2, seed=1, racks=2, rf=3)
    policy = replace(policy, new_broker=replace(policy.new_broker, racks=("r0", "r1")))
    with pytest.raises(InputError, match="replication factor 3 but pool 'p[01]' can only span 2 rack"):
        check_policy(snapshot, policy)


def test_a_policy_letting_replicas_wrap_places_rf_above_the_racks_as_kafka_does() -> None:
    snapshot, policy, profile = random_cluster(12, 30, 2, seed=1, racks=2, rf=3)
    policy = replace(policy, new_broker=replace(policy.new_broker, racks=("r0", "r1")),
                     defaults=replace(policy.defaults, rf_above_racks="wrap"))
    check_policy(snapshot, policy)  # no refusal: the replicas wrap around the two racks
    plan = plan_pools(snapshot, policy, profile).plan
    assert validate_plan(snapshot, policy, plan, topic_demand(snapshot, profile)) == []
    rack = {b.id: b.rack for b in snapshot.brokers}
    for m in plan.partitions:  # every rack holds a replica, none more than ceil(3 / 2)
        racks = [rack.get(b) for b in m.replicas]
        assert len(set(racks)) == 2 and max(racks.count(r) for r in set(racks)) == 2, m


def test_conflict_clique_larger_than_its_pools_is_an_input_error() -> None:
    snapshot, policy, _ = random_cluster(12, 30, 3, seed=1)  # tenants 0-1-2 conflict in a triangle
    everyone = ("tenant0", "tenant1", "tenant2")
    pools = (replace(policy.pools[0], tenants=everyone), replace(policy.pools[1], tenants=everyone),
             replace(policy.pools[2], tenants=()))
    with pytest.raises(InputError, match=r"tenants 'tenant0', 'tenant1', 'tenant2' must not share a pool but their "
                                         r"topics can only go to 2 pool\(s\) \(p0, p1\)"):
        check_policy(snapshot, replace(policy, pools=pools))


def test_tenant_fixed_together_is_named() -> None:
    snapshot, policy, _ = random_cluster(12, 30, 2, seed=1)
    tenants = (replace(policy.tenants[0], must_not_share_with=("tenant1",)), policy.tenants[1])
    pools = (replace(policy.pools[0], tenants=("tenant0", "tenant1")), replace(policy.pools[1], tenants=()))
    with pytest.raises(InputError, match=r"tenants 'tenant0', 'tenant1' must not share a pool but their topics can "
                                         r"only go to 1 pool\(s\) \(p0\)"):
        check_policy(snapshot, replace(policy, tenants=tenants, pools=pools))


@pytest.mark.slow
def test_extra_tenant_conflict_separates_floating_topics() -> None:
    snapshot, policy, profile = random_cluster(16, 40, 3, seed=5)
    # tenant2 may now go to p0 or p2 but must not share with tenant0 (fixed in p0): it must stay in p2
    pools = (replace(policy.pools[0], tenants=("tenant0", "tenant2")),) + policy.pools[1:]
    tenants = (policy.tenants[0], policy.tenants[1], TenantSpec("tenant2", (r"tenant2\..*",), ("tenant0",)))
    plan = plan_pools(snapshot, replace(policy, pools=pools, tenants=tenants), profile).plan
    assert {p for t, p in plan.topics.items() if t.startswith("tenant2.")} == {"p2"}


def test_topics_no_pool_takes_are_planned_where_they_move_least_with_a_warning() -> None:
    snapshot, policy, profile = random_cluster(12, 30, 2, seed=1)
    # no default pool and no tenant0: tenant0's topics (and misc.*) are claimed by nobody
    policy = replace(policy, pools=tuple(replace(s, default=False, tenants=s.tenants[1:] if s.name == "p0" else
                                                 s.tenants) for s in policy.pools), tenants=policy.tenants[1:])
    plan = plan_pools(snapshot, policy, profile).plan
    assert any("selected by no pool and the policy has no default pool" in w for w in plan.warnings)
    assert {p for t, p in plan.topics.items() if t.startswith("tenant0.")} == {"p0"}  # where their bytes are
    assert validate_plan(snapshot, policy, plan, topic_demand(snapshot, profile)) == []


def _four_broker_pool(bytes_in: float):
    """Issue 14's pool: four brokers of 50 MB/s network in, one RF-2 topic of ``bytes_in`` (nw_in demand ×2)."""
    from benchmarks.random_clusters import profile_row
    from pools.policy import Defaults, NewBrokerType, PoolPolicy
    from pools.snapshot import Broker, ClusterSnapshot, PartitionState, TopicState

    cap = Capacity(nw_in=50e6, nw_out=500e6, disk=1e13, replicas=1000)
    brokers = tuple(Broker(b, None, cap, "core") for b in range(1, 5))
    parts = tuple(PartitionState("t", p, (1 + p % 4, 1 + (p + 1) % 4), leader=1 + p % 4, sizes=(10, 10))
                  for p in range(8))
    snapshot = ClusterSnapshot("issue-14", brokers, (TopicState("t"),), parts)
    policy = PoolPolicy(
        defaults=Defaults(headroom=dict.fromkeys(DIMENSIONS, 0.7), tolerated_broker_failures=1, min_brokers=3),
        pools=(PoolSpec("core", default=True),),
        new_broker=NewBrokerType(Capacity(nw_in=100e6, nw_out=500e6, disk=1e13, replicas=1000)),
    )
    return snapshot, policy, {"t": profile_row("t", 8, bytes_in, 0.0, 80.0)}


def test_a_pool_that_fits_with_one_broker_down_needs_no_broker() -> None:
    # 80 MB/s of nw_in demand; four 50 MB/s brokers less the largest: 0.7 x 150 = 105 MB/s fits. The new-broker
    # type (100 MB/s) is larger, but nothing is added, so it is not the broker that fails.
    snapshot, policy, profile = _four_broker_pool(40e6)
    outcome = plan_pools(snapshot, policy, profile)
    assert outcome.shortfall == () and outcome.plan.brokers_to_add == {"core": 0}
    row = outcome.plan.utilisation.pool("core", "nw_in")
    assert (row.capacity_usable, row.demand_forecast) == (150e6, 80e6)
    assert validate_plan(snapshot, policy, outcome.plan, topic_demand(snapshot, profile)) == []


def test_a_pool_that_does_not_fit_is_told_what_it_lacks_with_its_failures() -> None:
    # 150 MB/s needs 214.3 usable: one added 100 MB/s broker would be the one to fail (300 - 100 = 200), so two
    snapshot, policy, profile = _four_broker_pool(75e6)
    outcome = plan_pools(snapshot, policy, profile)
    assert outcome.plan.brokers_to_add == {"core": 2}
    assert outcome.shortfall == ("pool core needs 2 more broker(s) for nw_in at 70% headroom with 1 broker(s) down",)
    assert outcome.plan.utilisation.pool("core", "nw_in").capacity_usable == 300e6


def test_a_pool_that_lacks_brokers_is_planned_onto_the_brokers_to_buy() -> None:
    # issue 24: the after-plan figures count only brokers that carry load, the bought ones included
    snapshot, policy, profile = _four_broker_pool(75e6)
    plan = plan_pools(snapshot, policy, profile).plan
    assert [(b.id, b.rack, b.pool, b.capacity) for b in plan.planned_brokers] == [
        (5, None, "core", policy.new_broker.capacity), (6, None, "core", policy.new_broker.capacity)]
    assert (plan.brokers[5], plan.brokers_before[5], plan.brokers_to_add) == ("core", None, {"core": 2})
    util = plan.utilisation
    assert all(util.broker(b, "nw_in").before > 0.7 * 50e6 for b in (1, 2, 3, 4))  # over today
    assert all(0 < util.broker(b, "nw_in").after <= 0.7 * util.broker(b, "nw_in").capacity for b in util.broker_ids)
    assert plan.over_limit_before() == {1, 2, 3, 4}
    pool = util.pool("core", "nw_in")
    assert pool.load_after == pool.demand_forecast == 150e6
    assert (pool.capacity, pool.capacity_with_added, pool.capacity_usable) == (200e6, 400e6, 300e6)
    assert {r for m in plan.moves for r in m.adding} == {5, 6}
    assert all(m.reason.rule in ("relieve", "fill") for m in plan.moves)
    assert validate_plan(snapshot, policy, plan, topic_demand(snapshot, profile)) == []


@pytest.mark.parametrize(("ids", "message"), [
    ((101, 102, 103), None), ((101,), "needs 2 new broker(s), got 1 id(s)"), ((4, 101), "broker 4 is already")])
def test_the_brokers_to_buy_take_the_ids_given(ids, message) -> None:
    snapshot, policy, profile = _four_broker_pool(75e6)
    if message is not None:
        with pytest.raises(InputError, match=re.escape(message)):
            plan_pools(snapshot, policy, profile, new_broker_ids=ids)
        return
    plan = plan_pools(snapshot, policy, profile, new_broker_ids=ids).plan
    assert [b.id for b in plan.planned_brokers] == [101, 102]
    assert any("--new-broker-ids: 1 id(s) unused" in w and w.endswith(": 103") for w in plan.warnings)


@pytest.mark.parametrize("closed", ["cordoned", "unhealthy"])
def test_a_closed_brokers_spare_capacity_does_not_count_toward_what_a_pool_lacks(closed: str) -> None:
    # 100 MB/s of nw_in demand fits four 50 MB/s brokers (0.7 x 150 = 105). Broker 4 takes no new replica: it
    # counts for its own 25 MB/s only (25 / 0.7 = 35.7), so 0.7 x (50 + 50 + 35.7) = 95 falls short by one broker
    from pools.snapshot import LogDirError

    snapshot, policy, profile = _four_broker_pool(50e6)
    assert plan_pools(snapshot, policy, profile).plan.brokers_to_add == {"core": 0}
    if closed == "cordoned":
        snapshot = replace(snapshot, brokers=tuple(replace(b, cordoned=b.id == 4) for b in snapshot.brokers))
    else:
        snapshot = replace(snapshot, log_dir_errors=(LogDirError(4, "/d", "KafkaStorageException"),))
    outcome = plan_pools(snapshot, policy, profile)
    assert outcome.plan.brokers_to_add == {"core": 1}
    assert outcome.shortfall == ("pool core needs 1 more broker(s) for nw_in at 70% headroom with 1 broker(s) down",)


def test_the_time_limit_bounds_the_placement_too() -> None:
    import time

    # the pool model solves in a second; placing its 70 partitions took ~30 s under a 300 s-per-solve net
    snapshot, policy, profile = random_cluster(10, 8, 2, partitions=8, misplaced=0.3, load=0.9, seed=3)
    started = time.monotonic()
    plan = plan_pools(snapshot, policy, profile, time_limit=2).plan
    assert time.monotonic() - started < 2 + 6
    cut = [pool for pool, p in plan.placement.items() if p["status"] == "time-limit"]
    warned = [w.split("'")[1] for w in plan.warnings if "the placement stopped at its time limit" in w]
    assert sorted(warned) == sorted(cut)  # a pool cut short is named


@pytest.mark.parametrize(("days", "warned"), [(14, True), (90, False), (120, False)])
def test_a_horizon_past_the_history_is_a_warning_of_the_plan(days: int, warned: bool) -> None:
    """pools.evidence: the 90-day plan rests on a trend when the growth was measured on fewer days (issue 39)."""
    from tests.pools.audit.helpers import policy, profile_row, snapshot

    profile = {t: replace(profile_row(t, 1e5, 0.001), days_observed=days) for t in ("a-x", "b-y")}
    plan = plan_pools(snapshot(), policy(), profile).plan
    beyond = [w for w in plan.warnings if "reaches past the" in w]
    assert beyond == ([f"the 90-day forecast horizon reaches past the {days} days of history the growth was fitted "
                       "on: what the plan buys for it rests on the measured trend, not on tested evidence (the report "
                       "dates such crossings as a trend)"] if warned else [])
