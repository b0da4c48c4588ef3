"""Audit loads agree with `pools.demand` (the planner's model) and drive the forecast checks."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pools.audit import audit, audit_loads
from pools.demand import broker_load, topic_demand
from pools.snapshot import DIMENSIONS
from .helpers import CAP, POLICY, brokers, healthy, policy, profile_row, snapshot, with_partition


def test_vectorised_loads_match_demand_broker_load():
    parts = healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6), partitions=4)
    parts = with_partition(parts, "b-y", 1, leader=6)  # a leader that is not the first replica
    parts = with_partition(parts, "b-y", 2, leader=None, isr=())  # no leader: the first replica leads
    snap = snapshot(parts)
    profile = {"a-x": profile_row("a-x", 2e6, 0.01), "b-y": profile_row("b-y", 5e6, 0.002)}
    loads = audit_loads(snap, profile)
    for basis, table, dims in (("now", loads.now, ("nw_in", "nw_out", "replicas")),
                               ("forecast", loads.forecast, DIMENSIONS)):
        expected = broker_load(snap, topic_demand(snap, profile, at=basis))
        for i, b in enumerate(sorted(expected)):
            for d in dims:
                assert np.isclose(table[i, DIMENSIONS.index(d)], expected[b][d]), (basis, b, d)
    # current disk is what the replicas hold
    assert loads.now[:, 2].tolist() == [3000.0] * 3 + [4000.0] * 3


def test_forecast_over_headroom_is_a_warning_and_not_repeated():
    profile = {"a-x": profile_row("a-x", 20e6, 0.01), "b-y": profile_row("b-y", 1e6, 0.0)}
    # a-x: 20 MB/s now on each of 3 brokers; at +1 %/day for 90 days about 49 MB/s, over 0.7 x 60 MB/s
    b = brokers({i: {"capacity": replace(CAP, nw_in=60e6)} for i in (1, 2, 3)})
    found = [f for f in audit(snapshot(broker_list=b), policy(), profile) if f.kind == "utilisation_over_headroom"]
    nw_in = [f for f in found if f.evidence["dimension"] == "nw_in"]
    assert sorted((f.evidence["scope"], f.broker, f.evidence["basis"], f.severity.value) for f in nw_in) == [
        ("broker", 1, "forecast", "warning"), ("broker", 2, "forecast", "warning"),
        ("broker", 3, "forecast", "warning"), ("pool", None, "forecast", "warning")]
    # over now as well: reported once, for now, as an error
    b = brokers({i: {"capacity": replace(CAP, nw_in=25e6)} for i in (1, 2, 3)})
    found = [f for f in audit(snapshot(broker_list=b), policy(), profile)
             if f.kind == "utilisation_over_headroom" and f.evidence["dimension"] == "nw_in"]
    assert sorted({(f.evidence["basis"], f.severity.value) for f in found}) == [("now", "error")]
    assert len(found) == 4


def test_the_forecast_is_at_the_policys_horizon_unless_overridden():
    # a-x: 20 MB/s on each broker of pool a, +1 %/day: 49 MB/s in 90 days (over 0.7 x 60), 27 MB/s in 30 (under)
    profile = {"a-x": profile_row("a-x", 20e6, 0.01), "b-y": profile_row("b-y", 1e6, 0.0)}
    b = brokers({i: {"capacity": replace(CAP, nw_in=60e6)} for i in (1, 2, 3)})

    def over(pol, **kw):
        return sorted(f.broker or 0 for f in audit(snapshot(broker_list=b), pol, profile, **kw)
                      if f.kind == "utilisation_over_headroom" and f.evidence["dimension"] == "nw_in")

    assert over(policy()) == [0, 1, 2, 3]  # the default horizon, 90 days
    in_30_days = policy(POLICY.replace("min_brokers = 3", "min_brokers = 3\nforecast_horizon_days = 30"))
    assert over(in_30_days) == []
    assert over(in_30_days, horizon_days=90) == [0, 1, 2, 3]
