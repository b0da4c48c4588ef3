"""The plan inputs, read once: `load_plan_inputs` and the options plan, audit and the day-2 operations share."""

from __future__ import annotations

import pytest

from planner.stages.audit import AuditOptions
from planner.stages.operations import OperationOptions
from planner.stages.plan import PlanOptions
from planner.stages.plan_inputs import PlanInputOptions, load_plan_inputs
from pools.errors import InputError
from pools.snapshot import save_snapshot
from tests.pools.audit.helpers import POLICY, snapshot


def _inputs(tmp_path, **extra):
    save_snapshot(snapshot(), tmp_path / "snapshot.json")
    (tmp_path / "pools.toml").write_text(POLICY)
    return PlanInputOptions(snapshot_path=str(tmp_path / "snapshot.json"), policy_path=str(tmp_path / "pools.toml"),
                            **extra)


def test_every_planning_stage_takes_the_plan_inputs():
    for options in (PlanOptions, AuditOptions, OperationOptions):
        assert issubclass(options, PlanInputOptions)


def test_reads_snapshot_and_policy_without_profile_or_groups(tmp_path):
    inputs = load_plan_inputs(_inputs(tmp_path, horizon_days=7))
    assert inputs.snapshot.cluster == snapshot().cluster and inputs.policy.pools
    assert (inputs.profile, inputs.partitions, inputs.fanout, inputs.horizon_days, inputs.notes) == (
        None, None, None, 7, ())


def test_a_missing_profile_is_an_input_error_or_a_note(tmp_path):
    options = _inputs(tmp_path, profile_dir=str(tmp_path / "nope"))
    with pytest.raises(InputError, match="nope"):
        load_plan_inputs(options)
    assert load_plan_inputs(options, profile_required=False).notes == (
        f"no profile at {tmp_path / 'nope'}: traffic and forecast checks skipped",)


def test_the_shared_options_are_declared_once():
    from planner.cli import audit, brokers, plan, rebalance, replication

    commands = (plan.command, audit.command, rebalance.command, replication.command,
                *brokers.command.commands.values())
    for name in ("snapshot_path", "policy_path", "profile_dir", "groups_path", "horizon_days"):
        assert len({next(p for p in c.params if p.name == name).opts[0] for c in commands}) == 1, name
    for name in ("groups_path", "horizon_days"):
        assert len({next(p for p in c.params if p.name == name).help for c in commands}) == 1, name
