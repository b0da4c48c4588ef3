"""What-if: the scenario's changes to the inputs, its file's validation, and its figures against a full run."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from planner.cli import main
from planner.stages.whatif import parse_changes
from planner.whatif import SCALED_FIELDS, Scenario, apply_scenario, load_scenario
from pools.errors import InputError
from pools.policy import load_policy
from pools.profile import load_profile, save_profile
from pools.snapshot import load_snapshot

from .report.conftest import build_run
from .report.sample_run import build_sample_run


def test_apply_scales_a_tenants_topics_adds_brokers_and_moves_a_tenant(tmp_path):
    run = build_run(tmp_path / "run")
    scenario = Scenario(demand=(("tenant", "ads", 2.0),), add_brokers=(("b", 2),), move_tenant=(("ads", "b"),))
    snap, profile, policy = apply_scenario(run, run / "pools.toml", scenario, tmp_path / "out")
    before, after = load_profile(run / "profile"), load_profile(profile)
    for name in SCALED_FIELDS:  # ads owns a-x: every rate, size and forecast doubles; b-y is untouched
        assert getattr(after["a-x"], name) == pytest.approx(2 * getattr(before["a-x"], name)), name
    assert after["b-y"] == before["b-y"]
    assert after["a-x"].bytes_in_p99_growth_per_day == before["a-x"].bytes_in_p99_growth_per_day
    brokers = load_snapshot(snap).brokers
    assert [(b.id, b.pool, b.capacity.nw_in) for b in brokers[-2:]] == [(7, "b", 1e8), (8, "b", 1e8)]
    assert "ads" in next(p for p in load_policy(policy).pools if p.name == "b").tenants
    assert all("ads" not in p.tenants for p in load_policy(policy).pools if p.name != "b")
    assert load_scenario(tmp_path / "out" / "scenario.toml") == scenario


@pytest.mark.parametrize(("text", "message"), [
    ("[[demand]]\ntenant = 'a'\nfactor = 0\n", r"s.toml: demand\[0\].factor: expected a positive number, got 0"),
    ("[[demand]]\ntenant = 'a'\npool = 'p'\nfactor = 2\n", r"demand\[0\]: expected exactly one of tenant or pool"),
    ("[[add_brokers]]\npool = 'p'\ncount = 1.5\n", r"add_brokers\[0\].count: expected a whole number >= 1"),
    ("[[move_tenant]]\ntenant = 'a'\n", r"move_tenant\[0\].pool: expected a name, got None"),
    ("[[lose]]\n", r"s.toml: lose: unknown table"),
    ("[[demand]\n", r"s.toml: not valid TOML"),
])
def test_a_bad_scenario_names_the_file_and_field(tmp_path, text, message):
    (tmp_path / "s.toml").write_text(text)
    with pytest.raises(InputError, match=message):
        load_scenario(tmp_path / "s.toml")


@pytest.mark.parametrize(("flags", "message"), [
    ((("ads=2",), (), ()), r"--demand 'ads=2': expected tenant:NAME=FACTOR"),
    ((("tenant:ads=-1",), (), ()), r"factor must be a positive number"),
    (((), ("b=0",), ()), r"--add-brokers 'b=0': the count must be a whole number >= 1"),
    (((), (), ("ads",)), r"--move-tenant 'ads': expected NAME=VALUE"),
])
def test_bad_flags_name_the_flag(flags, message):
    with pytest.raises(InputError, match=message):
        parse_changes(*flags)


def test_unknown_names_exit_2_with_one_line(tmp_path, capsys):
    run = build_run(tmp_path / "run")
    code = main(["whatif", str(run), "--policy", str(run / "pools.toml"), "--demand", "tenant:nobody=2"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown tenant 'nobody'" in err[0]
    assert not (run / "whatif").exists()


@pytest.mark.slow
def test_a_scenarios_figures_are_those_of_a_full_run_with_the_changed_inputs(tmp_path):
    def run_cli(*argv):
        return main([str(a) for a in argv]), "", ""

    run = build_sample_run(tmp_path / "run", run_cli)
    policy, groups = run / "pools-fixed.toml", run / "sample" / "kafka" / "consumer-groups.txt"
    assert run_cli("whatif", run, "--policy", policy, "--demand", "tenant:ads=2.5", "--consumer-groups", groups,
                   "--out", tmp_path / "whatif")[0] in (0, 1)
    # the full run: the changed profile written here, independently, then plan and report as usual
    full = tmp_path / "full"
    full.mkdir()
    (full / "snapshot.json").write_bytes((run / "snapshot.json").read_bytes())
    tenant = load_policy(policy).tenant_of
    rows = []
    for topic, row in sorted(load_profile(run / "profile").items()):
        if tenant(topic) == "ads":
            row = type(row)(**{f.name: (getattr(row, f.name) if f.name not in SCALED_FIELDS or getattr(row, f.name)
                                        is None else (round(getattr(row, f.name) * 2.5) if f.name == "storage_bytes"
                                                      else getattr(row, f.name) * 2.5)) for f in fields(row)})
        rows.append(row)
    save_profile(full / "profile", rows)
    assert run_cli("plan", "--snapshot", full / "snapshot.json", "--policy", policy, "--profile", full / "profile",
                   "--consumer-groups", groups, "--out", full / "plan")[0] in (0, 1)
    assert run_cli("report", full, "--policy", policy, "--compare", run)[0] == 0
    whatif = json.loads((tmp_path / "whatif" / "plan" / "plan.json").read_text())
    assert whatif == json.loads((full / "plan" / "plan.json").read_text())
    assert (tmp_path / "whatif" / "report" / "report.md").read_text() == (full / "report" / "report.md").read_text()
    assert "| to move |" in (full / "report" / "report.md").read_text()
