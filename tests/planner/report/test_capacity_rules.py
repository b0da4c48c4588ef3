"""The report asks the pool rules their precedence: a pool's own limits, else the policy default, for every pool."""

from __future__ import annotations

import pytest

from planner.report.capacity import pool_rules
from planner.report.inputs import RunInputs
from pools.policy import parse_policy

POLICY = parse_policy('[defaults]\nheadroom = 0.7\ntolerated_broker_failures = 2\n'
                      '[[pool]]\nname = "core"\nheadroom = 0.6\n')
CAPS = {"1": 50.0, "2": 80.0, "3": 60.0, "4": 40.0}


@pytest.mark.parametrize(("pool", "headroom"), [("core", 0.6), ("unnamed", 0.7)])
def test_the_report_uses_the_limits_the_pool_rules_give(pool: str, headroom: float) -> None:
    limits = pool_rules(RunInputs("run", policy=POLICY), pool, "disk", CAPS)
    # a pool the policy does not name is held to the policy defaults, as PoolRules.limits holds it
    assert limits.max_utilisation == headroom
    assert limits.lost == ("2", "3") and limits.usable == 90.0  # the two largest brokers fail


def test_without_a_policy_one_broker_fails_and_no_maximum_is_known() -> None:
    limits = pool_rules(RunInputs("run"), "core", "disk", CAPS)
    assert limits.max_utilisation is None and limits.lost == ("2",) and limits.usable == 150.0
