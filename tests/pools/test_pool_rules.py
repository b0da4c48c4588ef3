"""The pool rules against brute force: failure tolerance over every failure set, sizing by linear search."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pools.policy import parse_policy
from pools.pool_rules import (
    DEFAULT_FORECAST_HORIZON_DAYS,
    DEFAULT_HEADROOM,
    PoolRules,
    brokers_to_fit,
    failing_brokers,
    failure_loss,
    over_limit,
    usable_capacity,
)

capacities = st.lists(st.sampled_from([0.0, 25.0, 50.0, 80.0, 125.0]), max_size=7)


@given(capacities, st.integers(0, 8))
def test_usable_capacity_is_the_worst_case_over_every_failure_set(caps: list[float], k: int) -> None:
    # the operator cannot choose which brokers fail: the pool must hold with ANY k of them down
    worst = min((sum(caps) - sum(down) for down in itertools.combinations(caps, min(k, len(caps)))), default=0.0)
    assert math.isclose(usable_capacity(caps, k), worst, abs_tol=1e-9)
    assert math.isclose(failure_loss(caps, k) + usable_capacity(caps, k), sum(caps), abs_tol=1e-9)
    down = failing_brokers(caps, k)
    assert len(down) == min(k, len(caps)) and math.isclose(sum(caps[i] for i in down), failure_loss(caps, k))


@given(capacities, st.sampled_from([0.0, 10.0, 50.0, 200.0]), st.integers(0, 2000).map(float),
       st.sampled_from([0.5, 0.7, 1.0]), st.integers(0, 3))
def test_brokers_to_fit_is_the_fewest_that_fit(caps, new, demand, headroom, k) -> None:
    def fits(n: int) -> bool:
        return not over_limit(demand, headroom * usable_capacity(caps + [new] * n, k))

    found = brokers_to_fit(caps, new, demand, headroom, k)
    search = next((n for n in range(1000) if fits(n)), None)
    assert found == search


def test_adding_a_broker_never_lowers_usable_capacity() -> None:
    for caps in itertools.product([0.0, 30.0, 90.0], repeat=4):
        for k in range(4):
            for extra in (0.0, 30.0, 200.0):
                assert usable_capacity([*caps, extra], k) >= usable_capacity(caps, k)


def test_limits_are_resolved_once_from_the_policy_with_one_set_of_defaults() -> None:
    policy = parse_policy(
        '[defaults]\ntolerated_broker_failures = 2\nforecast_horizon_days = 30\n'
        '[[pool]]\nname = "a"\nmin_brokers = 5\nheadroom = { nw_in = 0.5, nw_out = 0.6, disk = 0.8, replicas = 0.9 }\n'
        '[[pool]]\nname = "b"\n'
    )
    rules = PoolRules.from_policy(policy)
    a, b = rules.pools["a"], rules.pools["b"]
    assert (a.headroom, a.min_brokers, a.tolerated_failures, a.horizon_days) == ((0.5, 0.6, 0.8, 0.9), 5, 2, 30)
    assert b.headroom == (DEFAULT_HEADROOM,) * 4 and b.min_brokers == 3 and b.min_racks == 1
    assert rules.limits("unknown") == rules.limits(None) == rules.default
    assert PoolRules.from_policy(policy, horizon_days=7).horizon_days == 7
    bare = PoolRules.from_policy(parse_policy('[[pool]]\nname = "x"\n'))
    assert bare.horizon_days == DEFAULT_FORECAST_HORIZON_DAYS and bare.tolerated_failures == 1


def test_over_limit_has_one_tolerance_for_numbers_and_arrays() -> None:
    load, limit = np.array([1.0, 105.00001, 106.0]), np.array([1.0, 105.0, 105.0])
    assert over_limit(load, limit).tolist() == [False, False, True]
    assert [over_limit(float(x), float(y)) for x, y in zip(load, limit)] == [False, False, True]


def test_every_default_is_the_one_in_pool_rules() -> None:
    from planner.cli.ingest import command as ingest_command
    from pools.policy import Defaults
    from pools.pool_rules import DEFAULT_MIN_BROKERS, DEFAULT_TOLERATED_BROKER_FAILURES
    from spark_jobs.ingest import IngestParams

    parsed = parse_policy('[[pool]]\nname = "x"\n').defaults
    assert parsed == Defaults()
    assert (dict(parsed.headroom), parsed.tolerated_broker_failures, parsed.forecast_horizon_days,
            parsed.min_brokers) == ({"nw_in": DEFAULT_HEADROOM, "nw_out": DEFAULT_HEADROOM, "disk": DEFAULT_HEADROOM,
                                     "replicas": DEFAULT_HEADROOM}, DEFAULT_TOLERATED_BROKER_FAILURES,
                                    DEFAULT_FORECAST_HORIZON_DAYS, DEFAULT_MIN_BROKERS)
    horizon = next(o for o in ingest_command.params if o.name == "horizon_days")
    assert horizon.default == IngestParams("c").horizon_days == DEFAULT_FORECAST_HORIZON_DAYS
