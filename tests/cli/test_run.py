"""`poolplan run` without Spark: exit code is the most severe stage's, config errors stop it before any stage."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_CONFIG = """
[run]
stages = ["sample", "snapshot", "audit", "report"]
[sample]
seed = 3
brokers = 6
topics = 6
days = 2
step = 60
[snapshot]
describe = "{sample}/kafka/topics-describe.txt"
log-dirs = "{sample}/kafka/log-dirs"
inventory = "{sample}/brokers.toml"
cluster = "sample"
[audit]
policy = "{sample}/pools.toml"
fail-on = "%s"
[report]
policy = "{sample}/pools.toml"
"""


@pytest.mark.slow
def test_audit_findings_make_the_run_exit_1_and_run_json_records_each_stage(tmp_path: Path, run_cli) -> None:
    config = tmp_path / "q.toml"
    config.write_text(_CONFIG % "error")
    code, _, err = run_cli("run", "--config", config, "--out", tmp_path / "run")
    assert code == 1, err
    assert "exit 1: audit" in err
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert [(s["stage"], s["exit_code"]) for s in record["stages"]] == [
        ("sample", 0), ("snapshot", 0), ("audit", 1), ("report", 0)]
    assert record["stages"][2]["options"] == {"policy": f"{tmp_path / 'run'}/sample/pools.toml", "fail-on": "error"}
    config.write_text((_CONFIG % "error").replace('"audit", ', ""))
    code, _, err = run_cli("run", "--config", config, "--out", tmp_path / "run", "--force")
    assert code == 0, err
    assert not (tmp_path / "run" / "audit").exists()


def test_a_typo_in_a_later_stage_stops_the_run_before_its_first_stage(tmp_path: Path, run_cli) -> None:
    config = tmp_path / "q.toml"
    config.write_text(_CONFIG.replace('fail-on = "%s"', 'fail-onn = "error"'))
    code, _, err = run_cli("run", "--config", config, "--out", tmp_path / "run")
    assert code == 2 and "Traceback" not in err
    assert "audit.fail-onn: unknown option of poolplan audit" in err
    assert "sample" not in err.split("error:")[0]  # no stage started
    assert not (tmp_path / "run").exists() and [p.name for p in tmp_path.iterdir()] == ["q.toml"]


@pytest.mark.parametrize(("table", "message"), [
    ('[brokers-decommission]\npolicy = "{sample}/pools.toml"',
     "brokers-decommission.broker: missing (poolplan brokers decommission requires it)"),
    ('[brokers-decommission]\nbroker = [1]\n[rebalance]\nband = 0.2',
     "run.stages: rebalance and brokers-decommission each write the run's plan; keep one"),
])
def test_an_operation_table_in_error_stops_the_run_before_its_first_stage(tmp_path: Path, run_cli, table: str,
                                                                          message: str) -> None:
    config = tmp_path / "q.toml"
    config.write_text((_CONFIG % "error").replace('stages = ["sample", "snapshot", "audit", "report"]\n', "") + table)
    code, _, err = run_cli("run", "--config", config, "--out", tmp_path / "run")
    assert code == 2 and err.strip().splitlines() == [f"error: {config}: {message}"], err
    assert not (tmp_path / "run").exists()


_STAGE_LINE = re.compile(r"^(sample|snapshot|ingest|plan|emit|audit|report) +(\d+\.\d s|\d+ s|\d+ min \d\d s|\d+ h \d\d min)  "
                         r"(\S+): \S")
_NOISE = ("[Stage", "Running HiGHS", "Copyright (c)", "py4j", "Using incubator modules", "NativeCodeLoader", "log4j",
          "Traceback", ".tmp")


def _run_logged(argv: list[str], log: Path, cwd: Path) -> tuple[int, str]:
    """``poolplan ARGV`` in a child process with its standard output and error in one file, as cron would."""
    with log.open("w") as out:
        code = subprocess.run([sys.executable, "-c", "import sys; from planner.cli import main; sys.exit(main(sys.argv[1:]))",
                               *argv], stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}).returncode
    return code, log.read_text()


def _check_story(text: str, stages: list[str], run: str) -> list[str]:
    """The run's log reads as a story: its stage lines, each with a time and a final path; no noise."""
    assert "\r" not in text
    for noise in _NOISE:
        assert noise not in text, noise
    lines = text.splitlines()
    said = [m for m in map(_STAGE_LINE.match, lines) if m]
    assert [m.group(1) for m in said] == stages, text
    assert all(m.group(3).startswith(run) for m in said), text
    return lines


@pytest.mark.slow
def test_a_run_logged_to_a_file_reads_as_a_short_story(tmp_path: Path) -> None:
    config = tmp_path / "q.toml"
    config.write_text(_CONFIG % "error")
    code, text = _run_logged(["run", "--config", config.name, "--out", "runs/q"], tmp_path / "console.txt", tmp_path)
    assert code == 1, text
    lines = _check_story(text, ["sample", "snapshot", "audit", "report"], "runs/q")
    assert lines[0] == "poolplan run of q.toml into runs/q: sample, snapshot, audit, report"
    assert re.search(r"^audit .*findings\.json: \d+ findings \(\d+ critical, \d+ error", text, re.M), text
    assert re.search(r"^done in .*: runs/q \(exit 1: audit\)$", text, re.M), text
    assert re.search(r"^  findings: \d+ critical, \d+ error, \d+ warning, \d+ info", text, re.M), text
    assert "  report: runs/q/report/report.html" in lines and lines[-1] == "  log: runs/q/run.log"
    assert re.search(r"\d+ files \(\d+(\.\d)? (kB|MB)\)", text), text  # sizes in decimal units, never raw bytes
    log = (tmp_path / "runs" / "q" / "run.log").read_text()
    assert all(line in log for line in lines if _STAGE_LINE.match(line)) and ".tmp" not in log


@pytest.mark.slow
def test_the_sample_quarterly_run_logged_to_a_file(tmp_path: Path) -> None:
    """The shipped quarterly config, Spark and the solver included, with its output in a file (cron, CI)."""
    code, text = _run_logged(["run", "--config", str(ROOT / "conf" / "quarterly.toml"), "--out", "q"],
                             tmp_path / "console.txt", tmp_path)
    assert code == 1, text  # the sample cluster has findings at error
    _check_story(text, ["sample", "snapshot", "ingest", "plan", "emit", "audit", "report"], "q")
    assert re.search(r"^  plan: \d+ partitions? moves?, [\d.]+ (kB|MB|GB|TB) to copy; (no brokers to add|\d+ broker)",
                     text, re.M), text
    quality = json.loads((tmp_path / "q" / "profile" / "quality.json").read_text())
    assert (quality["history"], quality["quarantine"]) == ("history", "quarantine")
    spark_log = (tmp_path / "q" / "profile" / "spark.log").read_text()
    assert "Executor" in spark_log or "SparkContext" in spark_log  # Spark's own log went to the run directory


def test_a_stage_that_finds_no_pools_is_a_result_of_the_run_not_its_end(tmp_path: Path, capsys) -> None:
    """As before the run called library functions: an InfeasibleError from a stage is its exit 1, the run goes on."""
    from types import SimpleNamespace

    from planner.cli.run import _run_stage, _Shown
    from pools.errors import InfeasibleError

    def plan(options: object, *, progress: object) -> None:
        raise InfeasibleError(f"no pool plan satisfies {tmp_path}/.run.x.tmp/sample/pools.toml: tenants a and b")

    call = SimpleNamespace(stage=SimpleNamespace(run_name="plan", call=plan), options=None)
    said = _run_stage(call, _Shown(tmp_path / ".run.x.tmp", tmp_path / "run"))
    assert said.code == 1 and said.headline is None
    err = capsys.readouterr().err
    assert re.match(r"plan +\d\.\d s  infeasible: no pool plan satisfies \S*run/sample/pools\.toml: tenants a and b$",
                    err.strip()), err


def test_a_plan_onto_brokers_still_to_buy_is_emitted_and_no_plan_skips_emit(tmp_path: Path) -> None:
    """The plan stage's exit 1 with a plan (brokers to buy): emit runs, its bundle refuses until they join."""
    from types import SimpleNamespace

    from planner.cli.run import _without_plan

    def call(stage: str, plan: Path) -> SimpleNamespace:
        return SimpleNamespace(stage=SimpleNamespace(run_name=stage), options=SimpleNamespace(plan_path=str(plan)))

    written = tmp_path / "plan.json"
    written.write_text("{}")
    emit = call("emit", written)
    assert _without_plan(emit) is emit
    assert _without_plan(call("emit", tmp_path / "none.json")) is None


_DECOMMISSION = """
[run]
stages = [%s"snapshot", "brokers-decommission", "emit", "audit", "report"]
[sample]
seed = 7
brokers = 9
topics = 30
days = 2
[snapshot]
describe = "%s/kafka/topics-describe.txt"
log-dirs = "%s/kafka/log-dirs"
inventory = "%s/brokers.toml"
cluster = "sample"
[brokers-decommission]
broker = [%d]
policy = "%s/pools.toml"
[audit]
policy = "%s/pools.toml"
"""


@pytest.mark.slow
def test_a_decommission_run_emits_its_plan_and_a_refused_one_skips_emit(tmp_path: Path, run_cli) -> None:
    """A day-2 run without ingest: the operation's plan.json goes to emit; refused, it is the stage's exit 1."""
    from pools.kafka_formats import parse_reassignment_json

    config, run = tmp_path / "d.toml", tmp_path / "run"
    config.write_text(_DECOMMISSION % ('"sample", ', *["{sample}"] * 3, 5, *["{sample}"] * 2))
    code, _, err = run_cli("run", "--config", config, "--out", run)
    record = {s["stage"]: s["exit_code"] for s in json.loads((run / "run.json").read_text())["stages"]}
    assert record["brokers-decommission"] == 0 and record["emit"] == 0, err
    assert code == max(record.values()) and "Traceback" not in err
    plan = json.loads((run / "plan" / "plan.json").read_text())
    assert plan["operation"]["name"] == "decommission" and plan["operation"]["arguments"] == {"brokers": [5]}
    moves = parse_reassignment_json((run / "bundle" / "reassignment.json").read_text())
    assert moves and all(5 not in m.replicas for m in moves)
    assert re.search(r"^brokers-decommission +\S+ s  \S+/plan/plan\.json: \d+ partitions change", err, re.M), err

    sample = run / "sample"  # pool stream keeps two racks without broker 6: refused
    config.write_text(_DECOMMISSION % ("", *[sample] * 3, 6, *[sample] * 2))
    code, _, err = run_cli("run", "--config", config, "--out", tmp_path / "refused")
    record = {s["stage"]: s["exit_code"] for s in json.loads((tmp_path / "refused" / "run.json").read_text())["stages"]}
    assert record == {"snapshot": 0, "brokers-decommission": 1, "audit": record["audit"], "report": 0}, err
    assert code == 1 and "Traceback" not in err
    assert "infeasible: cannot decommission broker(s) 6: pool 'stream' would span 2 rack(s), needs 3" in err
    assert re.search(r"^emit +skipped  the brokers-decommission stage is infeasible", err, re.M), err
    assert not (tmp_path / "refused" / "plan").exists() and not (tmp_path / "refused" / "bundle").exists()
    assert (tmp_path / "refused" / "audit" / "findings.json").exists()


@pytest.mark.slow
def test_the_sample_decommission_run_drains_its_broker(tmp_path: Path) -> None:
    """The shipped conf/decommission.toml, Spark included: broker 5 drains and emit writes the bundle."""
    code, text = _run_logged(["run", "--config", str(ROOT / "conf" / "decommission.toml"), "--out", "d"],
                             tmp_path / "console.txt", tmp_path)
    record = {s["stage"]: s["exit_code"] for s in json.loads((tmp_path / "d" / "run.json").read_text())["stages"]}
    assert record["brokers-decommission"] == 0 and record["emit"] == 0 and code == max(record.values()), text
    assert json.loads((tmp_path / "d" / "plan" / "plan.json").read_text())["operation"]["name"] == "decommission"
    assert (tmp_path / "d" / "bundle" / "reassignment.json").exists()
