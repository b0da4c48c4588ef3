"""The run config: stage order, tables checked against each command's own options before any stage runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.cli.runconfig import PLAN_STAGES, STAGES, load_run_config, stage_call
from planner.stages.operations import DecommissionOptions
from planner.stages.plan import PlanOptions
from pools.errors import InputError


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "q.toml"
    path.write_text(text)
    return path


def test_stage_tables_become_typed_parameters(tmp_path: Path) -> None:
    (tmp_path / "pools.toml").write_text("")
    path = _config(tmp_path, """
[run]
out = "out/q"
stages = ["snapshot", "plan", "report"]
[snapshot]
describe = "{sample}/kafka/topics-describe.txt"
inventory = "{sample}/brokers.toml"
[plan]
policy = "{config_dir}/pools.toml"
time-limit = 60
threads = 2
[ingest]
prom = ["a/*.prom", "b/*.prom"]
""")
    cfg = load_run_config(path)
    assert cfg.stages == ("snapshot", "plan", "report")
    run = tmp_path / "run"
    plan = stage_call(cfg, "plan", run)
    assert plan.params["policy_path"] == f"{tmp_path.resolve()}/pools.toml"
    assert plan.params["time_limit"] == 60.0 and plan.params["threads"] == 2 and plan.params["gap"] == 0.01
    assert plan.params["snapshot_path"] == f"{run}/snapshot.json" and plan.params["out_dir"] == f"{run}/plan"
    assert plan.shown == {"policy": f"{tmp_path.resolve()}/pools.toml", "time-limit": 60, "threads": 2}
    assert plan.options == PlanOptions(snapshot_path=f"{run}/snapshot.json", policy_path=f"{tmp_path.resolve()}/pools.toml",
                                       profile_dir=f"{run}/profile", out_dir=f"{run}/plan", solver="highs",
                                       time_limit=60.0, gap=0.01, threads=2)
    snapshot = stage_call(cfg, "snapshot", run)
    assert snapshot.params["describe_path"] == f"{run}/sample/kafka/topics-describe.txt"
    ingest = stage_call(cfg, "ingest", run)
    assert ingest.options.prom == ("a/*.prom", "b/*.prom") and ingest.options.prometheus is None
    assert stage_call(cfg, "report", run).options.run_dir == str(run)


def test_a_rebalance_table_makes_a_day2_run(tmp_path: Path) -> None:
    (tmp_path / "pools.toml").write_text("")
    cfg = load_run_config(_config(tmp_path, "[rebalance]\npool = ['a']\nmax-moved-bytes = 1000\n"
                                            f"[audit]\npolicy = '{tmp_path}/pools.toml'\n"))
    assert "rebalance" in cfg.stages and "plan" not in cfg.stages
    run = tmp_path / "run"
    call = stage_call(cfg, "rebalance", run)
    assert call.params["pools"] == ("a",) and call.params["max_moved_bytes"] == 1000
    assert call.params["out_dir"] == f"{run}/plan"
    assert call.options.pools == ("a",) and call.options.out_dir == f"{run}/plan"
    assert stage_call(cfg, "audit", run).params["plan_path"] == f"{run}/plan/plan.json"
    with pytest.raises(InputError, match=r"rebalance\.band: "):
        stage_call(load_run_config(_config(tmp_path, "[rebalance]\nband = 'wide'\n")), "rebalance", run)


def test_the_new_operation_options_are_run_keys(tmp_path: Path) -> None:
    cfg = load_run_config(_config(tmp_path, "[rebalance]\nleaders-only = true\ndimension-band = ['disk=0.05']\n"
                                            "exclude-topic = ['a[.].*']\nexclude-broker = [3]\n"))
    call = stage_call(cfg, "rebalance", tmp_path / "run")
    assert call.options.leaders_only and call.options.dimension_bands == (("disk", 0.05),)
    assert call.options.exclude_topics == ("a[.].*",) and call.options.exclude_brokers == (3,)
    with pytest.raises(InputError, match=r"rebalance\.dimension-band: expected DIMENSION=FRACTION"):
        stage_call(load_run_config(_config(tmp_path, "[rebalance]\ndimension-band = ['cpu=1']\n")), "rebalance",
                   tmp_path / "run")
    cfg = load_run_config(_config(tmp_path, "[brokers-replace]\nold = 1\nnew = 2\nallow-rack-change = true\n"))
    assert stage_call(cfg, "brokers-replace", tmp_path / "run").options.allow_rack_change
    cfg = load_run_config(_config(tmp_path, "[brokers-decommission]\nbroker = [1]\nto = [2, 3]\n"))
    assert stage_call(cfg, "brokers-decommission", tmp_path / "run").options.to == (2, 3)
    cfg = load_run_config(_config(tmp_path, "[brokers-demote]\nbroker = [1]\n"))
    assert stage_call(cfg, "brokers-demote", tmp_path / "run").options.brokers == (1,)


def test_an_operation_table_makes_a_day2_run_its_profile_the_runs_only_with_ingest(tmp_path: Path) -> None:
    (tmp_path / "pools.toml").write_text("")
    cfg = load_run_config(_config(tmp_path, "[brokers-decommission]\nbroker = [5, 6]\n"
                                            f"[audit]\npolicy = '{tmp_path}/pools.toml'\n"))
    assert "brokers-decommission" in cfg.stages and "plan" not in cfg.stages and "ingest" in cfg.stages
    run = tmp_path / "run"
    call = stage_call(cfg, "brokers-decommission", run)
    assert call.options == DecommissionOptions(snapshot_path=f"{run}/snapshot.json", profile_dir=f"{run}/profile",
                                               out_dir=f"{run}/plan", brokers=(5, 6))
    assert stage_call(cfg, "audit", run).params["plan_path"] == f"{run}/plan/plan.json"
    cfg = load_run_config(_config(tmp_path, "[run]\nstages = ['set-replication-factor', 'emit']\n"
                                            "[set-replication-factor]\ntopic = ['a.orders']\nreplication-factor = 3\n"
                                            f"profile = '{tmp_path}'\n"))
    call = stage_call(cfg, "set-replication-factor", run)
    assert call.options.topics == ("a.orders",) and call.options.replication_factor == 3
    assert call.options.profile_dir == str(tmp_path)


def test_default_stages_skip_sample_unless_configured(tmp_path: Path) -> None:
    assert "sample" not in load_run_config(_config(tmp_path, "")).stages
    assert load_run_config(_config(tmp_path, "[sample]\nseed = 1\n")).stages == tuple(
        s for s in STAGES if s == "plan" or s not in PLAN_STAGES)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[run]\nstages = ['bogus']", r"run\.stages: unknown stage 'bogus'"),
        ("[run]\nstages = ['plan', 'snapshot']", r"run\.stages: stages must be in the order"),
        ("[run]\ncolour = 1", r"run\.colour: unknown key"),
        ("[planner]\nx = 1", r"planner: unknown table"),
        ("[run\n", r"invalid TOML"),
        ("plan = 3", r"plan: expected a table of plan options"),
        ("[run]\nstages = ['plan', 'rebalance']", r"run\.stages: plan and rebalance each write the run's plan"),
        ("[rebalance]\n[brokers-replace]\nold = 1\nnew = 2",
         r"run\.stages: rebalance and brokers-replace each write the run's plan; keep one"),
    ],
)
def test_run_table_errors_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_run_config(_config(tmp_path, text))


@pytest.mark.parametrize(
    ("stage", "table", "message"),
    [
        ("plan", "time-limt = 60", r"plan\.time-limt: unknown option of poolplan plan; expected one of"),
        ("plan", "time-limit = 'soon'", r"plan\.time-limit: expected a number, got 'soon'"),
        ("plan", "time-limit = 0.5", r"plan\.time-limit: 0\.5 is not in the range x>=1"),
        ("plan", "time-limit = nan", r"plan\.time-limit: nan is not a finite number"),
        ("plan", "threads = 1.5", r"plan\.threads: expected an integer, got 1\.5"),
        ("plan", "solver = 'glpk'", r"plan\.solver: 'glpk' is not one of 'highs', 'cbc'"),
        ("plan", "snapshot = 'x.json'", r"plan\.snapshot: supplied by the run"),
        ("plan", "policy = 'nowhere/pools.toml'", r"plan\.policy: nowhere/pools\.toml: no such file or directory"),
        ("plan", "policy = ['a', 'b']", r"plan\.policy: expected a single value, got a list"),
        ("emit", "leader-preserving = 'yes'", r"emit\.leader-preserving: expected true or false, got 'yes'"),
        ("audit", "policy = '{config_dir}/q.toml'\nfail-on = 'loud'", r"audit\.fail-on: 'loud' is not one of"),
        ("snapshot", "inventory = '{config_dir}/q.toml'", r"snapshot: --describe: expected kafka-topics\.sh --describe output, or "
                                     r"--bootstrap-server to capture the cluster now"),
        ("snapshot", "inventory = '{config_dir}/q.toml'\nbootstrap-server = 'b:9092'\nlog-dirs = '{config_dir}'", r"snapshot: --log-dirs: not with --bootstrap"),
        ("plan", "policy = '{nowhere}/p.toml'", r"plan\.policy: bad placeholder"),
        ("ingest", "days = 3", r"ingest: --days, --start, --end, --step and the other Prometheus options need --prometheus"),
        ("brokers-decommission", "brokers = [5]",
         r"brokers-decommission\.brokers: unknown option of poolplan brokers decommission; expected one of broker, "),
        ("brokers-decommission", "policy = '{config_dir}/q.toml'",
         r"brokers-decommission\.broker: missing \(poolplan brokers decommission requires it\)"),
        ("brokers-add", "broker = [10]", r"brokers-add\.pool: missing \(poolplan brokers add requires it\)"),
        ("set-replication-factor", "topic = ['a']",
         r"set-replication-factor\.replication-factor: missing \(poolplan set-replication-factor requires it\)"),
        ("brokers-replace", "old = 1\nnew = -1", r"brokers-replace\.new: -1 is not in the range"),
        ("brokers-decommission", "broker = [5]\nprofile = 'p'", r"brokers-decommission\.profile: supplied by the run"),
    ],
)
def test_stage_table_errors_name_stage_and_key(tmp_path: Path, stage: str, table: str, message: str) -> None:
    cfg = load_run_config(_config(tmp_path, f"[{stage}]\n{table}\n"))
    with pytest.raises(InputError, match=message):
        stage_call(cfg, stage, tmp_path / "run")


@pytest.mark.parametrize("name", ["quarterly.toml", "rebalance.toml", "decommission.toml", "kafka4.toml", "audit.toml"])
def test_the_shipped_run_configs_pass_the_check(tmp_path: Path, name: str) -> None:
    cfg = load_run_config(Path(__file__).resolve().parents[2] / "conf" / name)
    for stage in cfg.stages:
        stage_call(cfg, stage, tmp_path / "run")


@pytest.mark.parametrize(("value", "ids", "message"), [
    ('"101-103, 110"', (101, 102, 103, 110), None), ("7", (7,), None),
    ('"x"', None, "plan.new-broker-ids: expected ids such as 101,102 or 101-103, got 'x'"),
    ("[1, 2]", None, "plan.new-broker-ids: expected a single value, got a list")])
def test_the_ids_of_the_brokers_to_buy_are_a_plan_key(tmp_path: Path, value: str, ids, message) -> None:
    (tmp_path / "q.toml").write_text(f'[run]\nstages = ["plan"]\n[plan]\npolicy = "conf/pools.toml"\n'
                                     f"new-broker-ids = {value}\n")
    config = load_run_config(tmp_path / "q.toml", out=str(tmp_path / "run"))
    if message is None:
        assert stage_call(config, "plan", tmp_path / "run").options.new_broker_ids == ids
    else:
        with pytest.raises(InputError, match=message.replace("[", r"\[").replace("(", r"\(")):
            stage_call(config, "plan", tmp_path / "run")
