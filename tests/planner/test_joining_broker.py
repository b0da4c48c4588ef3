"""A broker that joins a pool carries a fair share afterwards (the sample's spare broker joining its busiest pool),
and the plan counts it in the pool's capacity only because it holds that share."""

from __future__ import annotations

from dataclasses import replace

from planner.placement.minimal_move import FAIR_SHARE_BAND
from planner.pool_planner import plan_pools
from planner.validator import validate_plan
from pools.demand import topic_demand
from pools.snapshot import DIMENSIONS, Broker
from tests.pools.audit.helpers import CAP, healthy, policy, profile_row, snapshot

SPARE = 7


def _cluster():
    """Pool a (brokers 1-3, 12 partitions) is over its usable disk at forecast with one tolerated failure; pool b
    has room; broker 7 is a spare in no pool and holds nothing, like the sample's last broker."""
    small = replace(CAP, disk=9_000.0)
    brokers = [Broker(i, f"r{(i - 1) % 3 + 1}", small if i <= 3 else replace(CAP, disk=1e6), "a" if i <= 3 else "b")
               for i in range(1, 7)]
    brokers.append(Broker(SPARE, "r1", small, None))
    parts = healthy("a-x", (1, 2, 3), partitions=12, size=375) + healthy("b-y", (4, 5, 6), partitions=6)
    snap = snapshot(parts, broker_list=brokers)
    profile = {t: replace(profile_row(t, 1e5, 0.001), partitions=n) for t, n in (("a-x", 12), ("b-y", 6))}
    return snap, profile


def test_a_joining_broker_ends_near_its_fair_share_in_every_dimension() -> None:
    """Every partition has RF 3 over pool a's three racks, so each rack carries a third of the replicas' load
    whatever the placement: broker 7 shares rack r1's third with broker 1 (its fair share in network in, disk and
    replicas is its rack's mean), and the pool's mean in network out, which leaders carry wherever they are."""
    snap, profile = _cluster()
    plan = plan_pools(snap, policy(), profile, gap=0.0).plan
    assert plan.brokers_before[SPARE] is None and plan.brokers[SPARE] == "a"
    assert validate_plan(snap, policy(), plan, topic_demand(snap, profile)) == []
    members = [b for b, p in plan.brokers.items() if p == "a"]
    cell = plan.utilisation.broker
    for dim in DIMENSIONS:
        peers = [1, SPARE] if dim != "nw_out" else members
        use = {b: cell(b, dim).after / cell(b, dim).capacity for b in members}
        mean = sum(cell(b, dim).after for b in peers) / sum(cell(b, dim).capacity for b in peers)
        assert mean > 0
        assert abs(use[SPARE] - mean) <= FAIR_SHARE_BAND * mean + 1e-9, (dim, use, mean)
    # it got its share by copies onto it, not because the denominator grew: half of its rack's 12 replicas
    held = sum(SPARE in m.replicas for m in plan.partitions)
    assert 5 <= held <= 7 and plan.placement["a"]["extra_bytes"] >= 0
