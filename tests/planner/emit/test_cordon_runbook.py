"""The runbook of a drain cordons the drained brokers first on Kafka 4.3+ (KIP-1066)."""

from __future__ import annotations

import pytest

from planner.emit import EmitOptions, build_bundle
from planner.operations import decommission_brokers, operation_inputs, rebalance
from pools.errors import InputError
from tests.planner.operations.shapes import skewed_pool

CORDON = "--alter --entity-type brokers --entity-name 1 --add-config 'cordoned.log.dirs=*'"
UNCORDON = "--alter --entity-type brokers --entity-name 1 --delete-config cordoned.log.dirs"


def _runbook(version, op="decommission"):
    s = skewed_pool()
    inputs = operation_inputs(s.snapshot, s.policy, s.profile)
    plan = decommission_brokers(inputs, [1]).plan if op == "decommission" else rebalance(inputs).plan
    return build_bundle(plan, s.snapshot, EmitOptions(kafka_version=version))["runbook.md"]


def test_on_kafka_4_3_the_drained_broker_is_cordoned_before_the_first_batch():
    text = _runbook("4.3.1")
    assert CORDON in text and UNCORDON in text and "Kafka 4.3 or later" not in text
    assert text.index(CORDON) < text.index("### Batch 1")
    assert "--describe --entity-type brokers --entity-name <id>" in text


def test_an_unknown_version_marks_the_step_and_an_older_one_has_none():
    assert CORDON in (text := _runbook(None)) and "Kafka 4.3 or later" in text
    assert CORDON not in _runbook("4.2") and "cordoned.log.dirs" not in _runbook("3.9.1")


def test_a_rebalance_cordons_nothing():
    assert "cordoned.log.dirs" not in _runbook("4.3", op="rebalance")


def test_a_malformed_version_is_bad_input():
    with pytest.raises(InputError, match="--kafka-version: expected a Kafka version"):
        _runbook("latest")
