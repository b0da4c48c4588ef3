"""Day-2 operations on the shapes operators meet: the plan passes the validator, never crosses a pool boundary,
keeps rack spread, and copies no more than the lower bound or the exact reference allows."""

from __future__ import annotations

import dataclasses

import pytest

from planner.operations import (
    add_brokers,
    decommission_brokers,
    operation_inputs,
    rebalance,
    replace_broker,
)
from planner.placement.engine import ENGINE_DIMENSIONS
from planner.placement.exact import exact_placement
from planner.validator import validate_plan
from pools.errors import InfeasibleError, InputError
from pools.policy import parse_policy
from pools.snapshot import DIMENSIONS

from .shapes import (
    POLICY,
    profile as shape_profile,
    shape,
    big_broker,
    dead_broker,
    generated_pool,
    hot_tenant,
    large_skewed_pool,
    last_broker_to_drain,
    new_rack,
    skewed_pool,
)

#: Moved bytes within 1 % of the exact optimum (the engine stops at a 0.1 % MIP gap).
MARGIN = 1.01


def _inputs(s, **kw):
    return operation_inputs(s.snapshot, s.policy, s.profile, **kw)


def _check(s, op) -> None:
    """The invariants every operation keeps: a valid plan, pools not crossed, rack spread, RF unchanged."""
    snap, plan = s.snapshot, op.plan
    assert validate_plan(snap, s.policy, plan, _inputs(s).forecast) == []
    assert not [w for w in plan.warnings if w.startswith("validator:")]
    rack = {b.id: b.rack for b in snap.brokers}
    for m in plan.partitions:
        pool = plan.topics[m.topic]
        assert all(plan.brokers[b] == pool for b in m.replicas), m
        racks = {rack[b] for b in plan.brokers if plan.brokers[b] == pool}
        assert len({rack[b] for b in m.replicas}) == min(len(m.replicas), len(racks)), m
        rf = plan.operation.get("replication_factors", {}).get(m.topic, len(m.old_replicas))
        assert len(m.replicas) == rf == len(set(m.replicas))
    assert op.lower_bound <= op.moved_bytes == plan.moved_bytes
    assert plan.operation["moved_bytes"] == op.moved_bytes


def _moved(snap, assignment) -> int:
    return sum(p.size_bytes * sum(b not in p.replicas for b in assignment[p.topic, p.partition])
               for p in snap.partitions if (p.topic, p.partition) in assignment)


def test_decommission_drains_the_broker_at_the_lower_bound() -> None:
    s = last_broker_to_drain()
    op = decommission_brokers(_inputs(s), [4])
    _check(s, op)
    assert all(4 not in m.replicas for m in op.plan.partitions)
    on_4 = sum(p.size_bytes for p in s.snapshot.partitions if 4 in p.replicas)
    assert op.moved_bytes == op.lower_bound == on_4  # each drained replica copied once, nothing else
    assert op.plan.brokers[4] is None and op.plan.brokers_before[4] == "a"
    # the rack rule sends broker 4's replicas (rack r0) to broker 1, the only other broker in r0
    assert all(1 in m.replicas for m in op.plan.partitions if 4 in m.old_replicas)


def test_decommission_refuses_with_what_the_pool_would_lack() -> None:
    s = last_broker_to_drain()
    with pytest.raises(InfeasibleError) as err:
        decommission_brokers(_inputs(s), [1, 4])
    assert "pool 'a' would keep 2 broker(s), needs 3" in str(err.value)
    assert "pool 'a' would span 2 rack(s), needs 3" in str(err.value)


def test_decommission_refuses_when_the_rest_lacks_capacity() -> None:
    s = skewed_pool()
    tight = parse_policy(POLICY.replace("headroom = 0.8", "headroom = 0.25"))
    inputs = operation_inputs(s.snapshot, tight, s.profile)
    with pytest.raises(InfeasibleError) as err:
        decommission_brokers(inputs, [5, 6])
    assert "pool 'a' disk demand" in str(err.value) and "25% of its usable capacity" in str(err.value)
    roomy = operation_inputs(s.snapshot, parse_policy(POLICY.replace("headroom = 0.8", "headroom = 0.35")), s.profile)
    assert decommission_brokers(roomy, [6]).plan.brokers[6] is None  # one broker fewer still fits


def test_decommission_refuses_when_a_rack_left_with_fewer_brokers_cannot_hold_its_replicas() -> None:
    # draining broker 6 leaves broker 3 alone in rack r2: it must hold a replica of every RF-3 partition, 90 MB/s
    # of nw_in against its 80 MB/s limit, although the pool as a whole has room (270 of 320 MB/s)
    s = dataclasses.replace(new_rack(), profile=shape_profile(new_rack(), {"a.orders": 90e6}))
    inputs = _inputs(s)
    with pytest.raises(InfeasibleError) as err:
        decommission_brokers(inputs, [6])
    message = str(err.value)
    assert "rack 'r2' of pool 'a' would keep broker(s) 3, which must hold a replica of each of the 18 partition(s)" \
        in message and "nw_in 9e+07 against the 8e+07 it can carry (80% of its capacity)" in message
    assert "disk" not in message and "pool 'a' nw_in demand" not in message
    with pytest.raises(InfeasibleError, match="rack 'r0' of pool 'a' would keep broker\\(s\\) 1"):
        decommission_brokers(inputs, [4])
    moved = tuple(dataclasses.replace(b, rack="r1") if b.id == 8 else b for b in s.snapshot.brokers)
    s8 = dataclasses.replace(s, snapshot=dataclasses.replace(s.snapshot, brokers=moved))
    with pytest.raises(InfeasibleError, match="cannot replace broker 4 by 8: rack 'r0' of pool 'a' would keep "
                                              "broker\\(s\\) 1,"):
        replace_broker(_inputs(s8), 4, 8, allow_rack_change=True)  # the same drain, with a broker of rack r1 in
    tight = _inputs(dataclasses.replace(s, profile=shape_profile(s, {"a.orders": 70e6})))
    assert decommission_brokers(tight, [6]).plan.brokers[6] is None


def test_decommission_warns_only_of_what_the_operator_did_not_ask_for() -> None:
    # the validator said "broker 6 is pinned to pool 'a' but the plan puts it in None" of the broker asked to be
    # drained, and judged the topic in no pool twice more, although the operation leaves it where it is
    s = new_rack()
    legacy = shape([], {"z.legacy": [(1, 2, 3), (4, 5, 3)]}).snapshot
    snap = dataclasses.replace(s.snapshot, topics=s.snapshot.topics + legacy.topics,
                               partitions=s.snapshot.partitions + legacy.partitions)
    pinned = parse_policy(POLICY.replace('name = "a"', 'name = "a"\nbrokers = [6]'))
    assert pinned.pinned_pool == {6: "a"}
    op = decommission_brokers(operation_inputs(snap, pinned, s.profile), [6])
    assert op.plan.brokers[6] is None
    assert not [w for w in op.plan.warnings if w.startswith("validator:")], op.plan.warnings
    assert [w for w in op.plan.warnings if "no pool" in w] == [
        "1 topic(s) are in no pool and stay where they are: z.legacy"]


def test_decommission_sends_the_drained_replicas_only_to_the_destination_brokers() -> None:
    s = large_skewed_pool()  # 12 brokers, rack r0 = 1, 4, 7, 10; RF 3 on 3 racks: 1's replicas stay in r0
    op = decommission_brokers(_inputs(s), [1], destinations=[10, 11])
    _check(s, op)
    gained = {b for m in op.plan.moves for b in set(m.replicas) - set(m.old_replicas)}
    assert gained == {10} and op.plan.operation["arguments"]["to"] == [10, 11]
    assert op.moved_bytes == op.lower_bound
    with pytest.raises(InfeasibleError, match="--to: no destination broker can take the drained replica"):
        decommission_brokers(_inputs(s), [1], destinations=[11])  # r1 only: the partitions use it already
    with pytest.raises(InputError, match="--to: broker 1 cannot take replicas"):
        decommission_brokers(_inputs(s), [1], destinations=[1])
    # a broker without a rack spreads nothing: RF 3 over 3 racks needs a rack per replica (pools.pool_rules)
    unracked = dataclasses.replace(s, snapshot=dataclasses.replace(s.snapshot, brokers=tuple(
        dataclasses.replace(b, rack=None) if b.id == 11 else b for b in s.snapshot.brokers)))
    with pytest.raises(InfeasibleError, match="--to: no destination broker can take the drained replica"):
        decommission_brokers(_inputs(unracked), [1], destinations=[11])


def test_decommission_rejects_unknown_brokers_as_bad_input() -> None:
    s = last_broker_to_drain()
    with pytest.raises(InputError, match="--broker: broker 42 is not in the snapshot"):
        decommission_brokers(_inputs(s), [42])


def test_replace_is_a_straight_swap_copying_each_replica_once() -> None:
    s = new_rack()
    op = replace_broker(_inputs(s), 1, 7, allow_rack_change=True)  # broker 7: a new rack, in no pool yet
    _check(s, op)
    assert "cross-rack replace (--allow-rack-change): broker 7 (rack r3) takes 9 of broker 1's (rack r0) 9 " \
        "replica(s), 0 go to other brokers of pool 'a' to keep their rack spread" in op.plan.warnings
    for m in op.plan.partitions:
        assert m.replicas == tuple(7 if b == 1 else b for b in m.old_replicas)  # same slot, leadership kept
    assert op.moved_bytes == op.lower_bound == sum(p.size_bytes for p in s.snapshot.partitions if 1 in p.replicas)
    assert op.plan.brokers[7] == "a" and op.plan.brokers[1] is None


def test_replace_keeps_rack_spread_where_a_swap_would_break_it() -> None:
    s = skewed_pool()
    # 1 is in rack r0, 5 in r1 with broker 2: every partition uses r1 already, so nothing could swap straight
    with pytest.raises(InputError, match=r"--new: broker 5 is in rack 'r1', broker 1 in 'r0': broker 5 would take 0 "
                                         r"of broker 1's 12 replica\(s\) and 12 would go to other brokers of pool "
                                         r"'a' to keep their rack spread; pass --allow-rack-change"):
        replace_broker(_inputs(s), 1, 5)
    op = replace_broker(_inputs(s), 1, 5, allow_rack_change=True)
    _check(s, op)
    assert op.moved_bytes == op.lower_bound
    assert any("went to another broker than 5" in w for w in op.plan.warnings)
    assert all(1 not in m.replicas for m in op.plan.partitions)


def test_demote_moves_leadership_off_a_broker_copying_nothing() -> None:
    from planner.operations import demote_brokers

    s = hot_tenant()  # broker 1 leads every a.clicks partition
    parts = tuple(dataclasses.replace(p, isr=(1, 2)) if (p.topic, p.partition) == ("a.clicks", 2) else
                  dataclasses.replace(p, replicas=(1, 2, 9), isr=(1, 2, 9)) if (p.topic, p.partition) == ("a.orders", 0)
                  else p for p in s.snapshot.partitions)
    # a.clicks-2 = [1, 2, 6]: 6 is out of sync (under-replicated); a.orders-0 has a replica on 9, in pool b
    s = dataclasses.replace(s, snapshot=dataclasses.replace(s.snapshot, partitions=parts))
    led = [p for p in parts if p.replicas[0] == 1 and (p.topic, p.partition) != ("a.clicks", 2)]
    op = demote_brokers(_inputs(s), [1])
    assert not [w for w in op.plan.warnings if w.startswith("validator:")], op.plan.warnings
    assert op.moved_bytes == 0 and op.plan.operation["name"] == "demote"
    after = {(m.topic, m.partition): m.replicas for m in op.plan.partitions}
    for p in led:
        new = after[p.topic, p.partition]
        assert set(new) == set(p.replicas) and new[0] != 1 and new[-1] == 1, (p, new)
    assert after["a.clicks", 2] == (1, 2, 6)  # held until repaired, and said so
    assert after["a.orders", 0] == (2, 9, 1)  # demoted, led inside its pool; where 9 sits is the audit's finding
    assert "1 partition(s) keep broker(s) 1 as preferred leader: no other replica is in sync and healthy, or the " \
        "partition must be repaired first: a.clicks-2" in op.plan.warnings
    assert [m for m in op.plan.partitions if m.replicas[0] == 1] == [m for m in op.plan.partitions
                                                                      if (m.topic, m.partition) == ("a.clicks", 2)]
    leaders = op.balance["a"]["leaders"]
    assert leaders["after"]["max"] < leaders["before"]["max"]
    with pytest.raises(InputError, match="--broker: broker 42 is not in the snapshot"):
        demote_brokers(_inputs(s), [42])


def test_replace_never_crosses_a_pool_boundary() -> None:
    s = hot_tenant()
    with pytest.raises(InputError, match="never crosses a pool boundary"):
        replace_broker(_inputs(s), 1, 7)


def test_added_brokers_in_a_new_rack_take_a_fair_share_near_the_exact_optimum() -> None:
    s = new_rack()
    inputs = _inputs(s)
    op = add_brokers(inputs, "a", [7, 8, 9])
    _check(s, op)
    for b in (7, 8, 9):
        assert sum(b in m.replicas for m in op.plan.partitions) > 0
        assert op.plan.brokers[b] == "a"
    best = exact_placement(s.snapshot, inputs.forecast, ["a.orders"], list(range(1, 10)),
                           headroom=inputs.rules.limits("a").headroom, band=0.10, band_brokers=[7, 8, 9])
    assert best.optimal
    assert best.moved_bytes <= op.moved_bytes <= MARGIN * best.moved_bytes


def test_brokers_the_inventory_already_tags_with_the_pool_are_added_like_new_ones() -> None:
    # provisioning a broker with its pool tag is the natural way; add used to refuse it ("decommission it first")
    s = new_rack()
    brokers = tuple(dataclasses.replace(b, pool="a") if b.id in (7, 8, 9) else b for b in s.snapshot.brokers)
    tagged = dataclasses.replace(s, snapshot=dataclasses.replace(s.snapshot, brokers=brokers))
    inputs = _inputs(tagged)
    assert inputs.brokers[7] == "a"
    op = add_brokers(inputs, "a", [7, 8, 9])
    _check(tagged, op)
    plain = add_brokers(_inputs(s), "a", [7, 8, 9])
    assert [m.replicas for m in op.plan.partitions] == [m.replicas for m in plain.plan.partitions]
    assert not [w for w in op.plan.warnings if "already in pool" in w]  # they held nothing yet
    again = add_brokers(_inputs(dataclasses.replace(tagged, snapshot=dataclasses.replace(
        tagged.snapshot, partitions=tuple(dataclasses.replace(p, replicas=tuple(op.plan.partitions[i].replicas))
                                          for i, p in enumerate(tagged.snapshot.partitions))))), "a", [7])
    assert [w for w in again.plan.warnings if "broker 7 is already in pool 'a' with" in w and "rebalance" in w]
    with pytest.raises(InputError, match="--broker: broker 7 is in pool 'b', not 'a'"):
        add_brokers(_inputs(hot_tenant()), "a", [7])


def test_added_brokers_take_their_share_of_leadership_without_copying_more() -> None:
    """Without a profile, leadership is the only thing that tells a lead from a follower: an added broker that
    took replicas whose leader left used to lead none of them."""
    s = new_rack()
    inputs = operation_inputs(s.snapshot, s.policy)  # no profile: no traffic
    op = add_brokers(inputs, "a", [7])
    _check(s, op)
    leads = {b: sum(m.replicas[0] == b for m in op.plan.partitions) for b in range(1, 8)}
    share = len(op.plan.partitions) / 7
    assert abs(leads[7] - share) <= 0.10 * share + 1, leads
    assert max(leads.values()) - min(leads.values()) <= 2, leads


def test_rebalance_reaches_the_band_near_the_exact_optimum() -> None:
    s = skewed_pool()
    inputs = _inputs(s)
    op = rebalance(inputs, dimensions=DIMENSIONS)
    _check(s, op)
    table = op.balance["a"]
    for d in DIMENSIONS:
        assert table[d]["before"]["outside_band"] == 6 and table[d]["after"]["outside_band"] == 0, d
    best = exact_placement(s.snapshot, inputs.forecast, ["a.orders"], list(range(1, 7)),
                           headroom=inputs.rules.limits("a").headroom, band=0.10, band_brokers=list(range(1, 7)))
    assert best.optimal
    assert best.moved_bytes <= op.moved_bytes <= MARGIN * best.moved_bytes
    assert op.lower_bound <= best.moved_bytes


def test_rebalance_fills_a_much_larger_broker() -> None:
    s = big_broker()
    op = rebalance(_inputs(s))
    _check(s, op)
    disk = op.balance["a"]["disk"]
    # RF 3 over three racks: broker 5's share is 4/5 of rack r1's third, and it starts near half of that
    assert disk["before"]["min"] < 0.75 and disk["after"]["min"] > disk["before"]["min"]
    assert all(v["after"]["outside_band"] == 0 for v in op.balance["a"].values())
    assert disk["after"]["max"] - disk["after"]["min"] < disk["before"]["max"] - disk["before"]["min"]
    gained = [m for m in op.plan.moves if 5 in m.replicas and 5 not in m.old_replicas]
    assert gained


def test_rebalance_of_a_hot_tenant_within_a_zero_budget_moves_leaders_only() -> None:
    s = hot_tenant()
    op = rebalance(_inputs(s), pools=["a"], max_moved_bytes=0)
    _check(s, op)
    assert op.moved_bytes == 0 and op.plan.moves
    assert all(set(m.replicas) == set(m.old_replicas) for m in op.plan.moves)  # preferred-leader changes only
    out = op.balance["a"]["nw_out"]
    assert out["after"]["max"] < out["before"]["max"]
    assert "b" not in op.balance and all(m.topic.startswith("a.") for m in op.plan.moves)
    with pytest.raises(InputError, match="--pool: unknown pool 'c'"):
        rebalance(_inputs(s), pools=["c"])


def test_a_leaders_only_rebalance_is_a_zero_budget_by_name() -> None:
    s = hot_tenant()
    op = rebalance(_inputs(s), pools=["a"], leaders_only=True)
    _check(s, op)
    zero = rebalance(_inputs(s), pools=["a"], max_moved_bytes=0)
    assert [m.replicas for m in op.plan.partitions] == [m.replicas for m in zero.plan.partitions]
    assert op.moved_bytes == 0 and op.plan.operation["arguments"]["leaders_only"] is True
    with pytest.raises(InputError, match="--max-moved-bytes: a leaders-only rebalance copies nothing"):
        rebalance(_inputs(s), leaders_only=True, max_moved_bytes=10)


def test_rebalance_leaves_excluded_topics_and_brokers_alone() -> None:
    s = skewed_pool()  # every partition on brokers 1, 2, 3; 4, 5, 6 empty
    s = dataclasses.replace(s, snapshot=dataclasses.replace(s.snapshot, partitions=s.snapshot.partitions + shape(
        [], {"a.keep": [(1, 2, 3)] * 3}).snapshot.partitions, topics=s.snapshot.topics + shape(
        [], {"a.keep": [(1, 2, 3)]}).snapshot.topics), profile=s.profile | shape([], {"a.keep": [(1, 2, 3)] * 3}).profile)
    op = rebalance(_inputs(s), exclude_topics=["a\\.ke.*"], exclude_brokers=[6], dimensions=DIMENSIONS)
    _check(s, op)
    assert op.moved_bytes > 0
    assert all(m.replicas == m.old_replicas for m in op.plan.partitions if m.topic == "a.keep")
    assert not [m for m in op.plan.moves if 6 in m.replicas]
    assert {b for m in op.plan.moves for b in m.replicas} >= {4, 5}
    with pytest.raises(InputError, match="--exclude-topic: 'nope' matches no topic"):
        rebalance(_inputs(s), exclude_topics=["nope"])
    with pytest.raises(InputError, match="--exclude-broker: broker 42 is not in the snapshot"):
        rebalance(_inputs(s), exclude_brokers=[42])


def test_a_dimension_with_a_band_of_its_own_is_held_to_it() -> None:
    s = skewed_pool()
    wide = rebalance(_inputs(s), band=0.5, dimensions=DIMENSIONS)
    tight = rebalance(_inputs(s), band=0.5, dimensions=DIMENSIONS, dimension_bands={"disk": 0.05})
    _check(s, tight)
    disk = tight.balance["a"]["disk"]["after"]
    assert disk["outside_band"] == 0 and 0.95 - 1e-4 <= disk["min"] <= disk["max"] <= 1.05 + 1e-4
    assert wide.balance["a"]["disk"]["after"]["max"] - wide.balance["a"]["disk"]["after"]["min"] > 0.1
    assert tight.plan.operation["arguments"]["dimension_bands"] == {"disk": 0.05}
    with pytest.raises(InputError, match="--dimension-band: expected DIMENSION=FRACTION"):
        rebalance(_inputs(s), dimension_bands={"cpu": 0.1})


def test_a_cluster_wide_budget_bounds_every_pool_together() -> None:
    s = hot_tenant()
    free = rebalance(_inputs(s), dimensions=DIMENSIONS)
    assert free.moved_bytes > 0
    total = free.moved_bytes // 2
    capped = rebalance(_inputs(s), dimensions=DIMENSIONS, max_moved_bytes_total=total)
    _check(s, capped)
    assert 0 < capped.moved_bytes <= total
    assert capped.plan.operation["arguments"]["max_moved_bytes_total"] == total


def test_operations_are_deterministic() -> None:
    s = big_broker()
    first = rebalance(_inputs(s)).plan.to_dict()
    assert rebalance(_inputs(s)).plan.to_dict() == first
    s = last_broker_to_drain()
    assert decommission_brokers(_inputs(s), [4]).plan.to_dict() == decommission_brokers(_inputs(s), [4]).plan.to_dict()


@pytest.mark.slow
def test_a_large_pool_is_rebalanced_by_the_distribution_search() -> None:
    from planner.operations.distribution import ENGINE_PAIRS

    s = large_skewed_pool()
    assert len(s.snapshot.partitions) * 12 > ENGINE_PAIRS
    op = rebalance(_inputs(s))
    _check(s, op)
    assert op.plan.placement["a"]["status"] == "greedy"
    table = op.balance["a"]
    for d in ("nw_in", "disk", "replicas", "leaders"):
        before, after = table[d]["before"], table[d]["after"]
        assert after["max"] - after["min"] < before["max"] - before["min"], d
        assert after["outside_band"] < before["outside_band"], d
    assert op.moved_bytes <= 1.25 * op.lower_bound  # copies little beyond the disk that must arrive
    budget = op.moved_bytes // 4
    capped = rebalance(_inputs(s), max_moved_bytes=budget)
    _check(s, capped)
    assert 0 < capped.moved_bytes <= budget
    assert rebalance(_inputs(s)).plan.to_dict() == op.plan.to_dict()


@pytest.mark.slow  # two rebalances of a 60-broker pool, each through ~10 windows of the polish
def test_the_distribution_search_brings_every_broker_of_a_generated_pool_into_the_band() -> None:
    # single moves and swaps off the brokers above the band left 2 nw_in, 2 disk and 4 replicas brokers outside
    # it (local optima); moves onto the brokers below it, from any broker, and swaps with complementary partners
    # reach it in all six dimensions
    s = generated_pool()
    op = rebalance(_inputs(s))
    _check(s, op)
    assert op.plan.placement["p0"]["status"] == "greedy"
    assert {d: v["after"]["outside_band"] for d, v in op.balance["p0"].items()} == dict.fromkeys(ENGINE_DIMENSIONS, 0)
    assert not [w for w in op.plan.warnings if "outside" in w]
    assert op.moved_bytes <= 1.15 * op.lower_bound
    assert rebalance(_inputs(s)).plan.to_dict() == op.plan.to_dict()


def test_raising_the_replication_factor_adds_replicas_on_new_racks_and_least_loaded_brokers() -> None:
    from planner.operations import set_replication_factor

    s = new_rack()  # pool a: racks r0-r2 (brokers 1-6); RF 3 -> 3 racks already, so the fourth replica shares
    op = set_replication_factor(_inputs(s), ["a\\..*"], 4)
    assert op.plan.operation["replication_factors"] == {"a.orders": 4}
    _check(s, op)
    for m in op.plan.partitions:
        assert len(m.replicas) == 4 and m.replicas[:3] == m.old_replicas  # kept, leader first
    assert op.moved_bytes == op.lower_bound == sum(p.size_bytes for p in s.snapshot.partitions)
    counts = [sum(b in m.replicas for m in op.plan.partitions) for b in range(1, 7)]
    assert max(counts) - min(counts) <= 2  # the added replicas spread over the least-loaded brokers


def test_lowering_the_replication_factor_keeps_the_leader_and_the_rack_spread() -> None:
    from dataclasses import replace

    from planner.operations import set_replication_factor

    s = skewed_pool()
    parts = tuple(replace(p, leader=p.replicas[1]) if p.partition == 0 else p for p in s.snapshot.partitions)
    s = replace(s, snapshot=replace(s.snapshot, partitions=parts))
    op = set_replication_factor(_inputs(s), ["a.orders"], 2)
    _check(s, op)
    assert op.moved_bytes == 0
    for m in op.plan.partitions:
        leader = next(p.leader for p in parts if p.partition == m.partition)
        assert len(m.replicas) == 2 and m.replicas[0] == leader and set(m.replicas) < set(m.old_replicas)


def test_the_balance_of_a_replication_factor_change_is_reckoned_at_the_new_factor() -> None:
    # the balance table counted leaders' replication traffic and rack pinning at the snapshot's RF 3: with RF 2 on
    # three racks nothing is pinned to a rack, and a leader replicates to one follower, as the load table says
    from planner.operations import set_replication_factor

    s = new_rack()
    op = set_replication_factor(_inputs(s), ["a.orders"], 2)
    loads = op.plan.utilisation
    for d in DIMENSIONS:
        after = {b: loads.broker(b, d).after / loads.broker(b, d).capacity for b in range(1, 7)}
        mean = sum(after.values()) / 6
        table = op.balance["a"][d]["after"]
        assert table["mean"] == pytest.approx(mean, abs=1e-6), d
        assert table["max"] == pytest.approx(max(after.values()) / mean, abs=1e-4), d  # the pool mean: no rack pinning
        assert table["min"] == pytest.approx(min(after.values()) / mean, abs=1e-4), d


def test_lowering_the_replication_factor_drops_a_replica_outside_the_pool_first() -> None:
    from planner.operations import set_replication_factor

    s = new_rack()  # brokers 7-9 are in no pool
    parts = tuple(dataclasses.replace(p, replicas=(1, 2, 7), isr=(1, 2, 7), leader=1) if p.partition == 0 else p
                  for p in s.snapshot.partitions)
    s = dataclasses.replace(s, snapshot=dataclasses.replace(s.snapshot, partitions=parts))
    op = set_replication_factor(_inputs(s), ["a.orders"], 2)
    assert next(m.replicas for m in op.plan.partitions if m.partition == 0) == (1, 2)
    assert not [w for w in op.plan.warnings if w.startswith("validator:")]


def test_replication_factor_below_min_insync_replicas_is_bad_input() -> None:
    from dataclasses import replace

    from planner.operations import set_replication_factor
    from pools.snapshot import TopicState

    s = skewed_pool()
    s = replace(s, snapshot=replace(s.snapshot, topics=(TopicState("a.orders", configs={"min.insync.replicas": "2"}),)))
    with pytest.raises(InputError, match="min.insync.replicas=2"):
        set_replication_factor(_inputs(s), ["a.orders"], 1)
    with pytest.raises(InputError, match="matches no topic"):
        set_replication_factor(_inputs(s), ["nope"], 2)
    with pytest.raises(InfeasibleError, match="fewer than the replication factor 7"):
        set_replication_factor(_inputs(s), ["a.orders"], 7)


@pytest.mark.parametrize("log_dir_error", [False, True], ids=["offline", "log-dir-error"])
def test_decommission_evacuates_an_unhealthy_broker_from_the_in_sync_leaders(log_dir_error) -> None:
    s = dead_broker(log_dir_error=log_dir_error)
    op = decommission_brokers(_inputs(s), [4])
    _check(s, op)
    plan = op.plan
    assert plan.operation["drained"] == [4] and plan.drained == (4,)
    on_4 = [p for p in s.snapshot.partitions if 4 in p.replicas]
    for p in on_4:
        new = dict(((m.topic, m.partition), m.replicas) for m in plan.partitions)[p.topic, p.partition]
        assert 4 not in new and set(p.replicas) - {4} <= set(new)  # only the replica on 4 moved
        assert new[0] == (p.replicas[0] if p.replicas[0] != 4 else p.leader)  # the in-sync leader leads
    assert op.moved_bytes == op.lower_bound == sum(p.size_bytes for p in on_4)
    assert any(f"{len(on_4)} partition(s) with their only unhealthy replica on drained broker(s) 4" in w
               for w in plan.warnings)


def test_replace_of_a_dead_broker_is_a_straight_swap() -> None:
    s = dead_broker()
    op = replace_broker(_inputs(s), 4, 7, allow_rack_change=True)
    _check(s, op)
    for m in op.plan.partitions:
        assert m.replicas == tuple(7 if b == 4 else b for b in m.old_replicas)


def test_a_dead_broker_holding_a_partition_lagging_elsewhere_is_refused() -> None:
    s = dead_broker(lagging=True)
    for drain in (lambda i: decommission_brokers(i, [4]), lambda i: replace_broker(i, 4, 7, allow_rack_change=True)):
        with pytest.raises(InfeasibleError, match=r"1 partition\(s\) on them must keep their replicas until "
                                                  r"repaired .*: a\.orders-1 \(under-replicated\)"):
            drain(_inputs(s))


def test_the_validator_lets_a_drain_move_only_the_drained_replica_of_an_unhealthy_partition() -> None:
    s = dead_broker()
    plan = decommission_brokers(_inputs(s), [4]).plan
    demands = _inputs(s).forecast
    assert validate_plan(s.snapshot, s.policy, plan, demands) == []
    # a.orders-1 is (5, 6, 4) with 6 in sync: moving 6 as well is not an evacuation
    bad = dataclasses.replace(plan, partitions=tuple(
        dataclasses.replace(m, replicas=(5, 3, 1)) if (m.topic, m.partition) == ("a.orders", 1) else m
        for m in plan.partitions))
    found = [v.message for v in validate_plan(s.snapshot, s.policy, bad, demands) if v.rule == "health"]
    assert found == ["partition a.orders-1 is under-replicated: the plan may only replace its replicas on drained "
                     "broker(s) [4], but changes [5, 6, 4] to [5, 3, 1]"]
    # the same evacuation without operation.drained is a held partition moved
    undrained = dataclasses.replace(plan, operation={k: v for k, v in plan.operation.items() if k != "drained"})
    found = [v.message for v in validate_plan(s.snapshot, s.policy, undrained, demands) if v.rule == "health"]
    assert found and all("is under-replicated but the plan changes its replicas" in m for m in found)


def test_an_evacuated_partition_with_a_replica_outside_its_pool_comes_back_into_it() -> None:
    s = dead_broker()
    parts = tuple(dataclasses.replace(p, replicas=(5, 7, 4), isr=(5, 7), leader=5) if p.partition == 1 else p
                  for p in s.snapshot.partitions)  # broker 7 is in no pool
    s = dataclasses.replace(s, snapshot=dataclasses.replace(s.snapshot, partitions=parts))
    op = decommission_brokers(_inputs(s), [4])
    _check(s, op)
    new = next(m.replicas for m in op.plan.partitions if m.partition == 1)
    assert new[0] == 5 and not {4, 7} & set(new)
