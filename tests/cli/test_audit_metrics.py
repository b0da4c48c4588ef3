"""`poolplan audit --metrics` and `--since`: the textfile a node exporter serves, and the drift between audits."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace

import pytest

from planner.audit_metrics import audit_metrics, crossing_seconds, render_textfile
from pools.audit.findings import Finding, Severity
from pools.snapshot import save_snapshot
from tests.cli.test_audit import write_inputs
from tests.pools.audit.helpers import healthy, snapshot, with_partition

DRIFTED = with_partition(healthy("a-x", (1, 2, 3)) + healthy("b-y", (4, 5, 6)), "a-x", 0, replicas=(1, 2, 6),
                         isr=(1, 2, 6))
#: 2026-11-01T00:00:00Z, the helpers' snapshot time.
TAKEN_AT = 1_793_491_200


def _samples(text: str) -> dict[str, float]:
    """``name{labels}`` → value of every sample line."""
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line and not line.startswith("#")}


def _promtool_check(text: str) -> None:
    if shutil.which("promtool") is None:
        pytest.skip("needs promtool (Debian's prometheus package; .ci/run installs it)")
    done = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr


def test_the_metrics_of_a_drifted_cluster(tmp_path, run_cli) -> None:
    metrics = tmp_path / "textfile" / "poolplan.prom"
    argv = [*write_inputs(tmp_path, DRIFTED), "--metrics", metrics]
    assert run_cli("audit", *argv)[0] == 1
    text = metrics.read_text()
    _promtool_check(text)
    got = _samples(text)
    assert {k: v for k, v in got.items() if not k.startswith("poolplan_pool_")} == {
        'poolplan_audit_findings{cluster="test",kind="broker_mixed_pools",pool="b",severity="error"}': 1,
        'poolplan_audit_findings{cluster="test",kind="replica_outside_pool",pool="a",severity="error"}': 1,
        'poolplan_audit_timestamp_seconds{cluster="test"}': TAKEN_AT,
        'poolplan_audit_failing{cluster="test",fail_on="error"}': 1,
        'poolplan_partitions_outside_pool{cluster="test",pool="a"}': 1,
        'poolplan_partitions_outside_pool{cluster="test",pool="b"}': 0,
    }
    # replicas: 9 on 3 brokers of 100 each (a-x-0 has one on broker 6); one of three lost at 70 % headroom
    utilisation = got['poolplan_pool_utilisation_ratio{cluster="test",dimension="replicas",pool="a"}']
    assert utilisation == pytest.approx(8 / 300)
    assert got['poolplan_pool_limit_ratio{cluster="test",dimension="replicas",pool="a"}'] == pytest.approx(0.7 * 2 / 3)
    assert "poolplan_pool_runway_seconds" not in text and "poolplan_audit_new_findings" not in text  # no profile
    assert metrics.stat().st_mode & 0o777 == 0o644  # the node exporter runs as another user
    assert run_cli("audit", *argv)[0] == 1 and metrics.read_text() == text  # byte for byte
    assert sorted(p.name for p in metrics.parent.iterdir()) == ["poolplan.prom"]  # no temp file left


def test_a_clean_audit_reports_zero_outside_and_not_failing(tmp_path, run_cli) -> None:
    metrics = tmp_path / "poolplan.prom"
    assert run_cli("audit", *write_inputs(tmp_path), "--metrics", metrics)[0] == 0
    got = _samples(metrics.read_text())
    assert got['poolplan_audit_failing{cluster="test",fail_on="error"}'] == 0
    assert got['poolplan_partitions_outside_pool{cluster="test",pool="a"}'] == 0
    assert not any(k.startswith("poolplan_audit_findings") for k in got)


def test_runway_and_lead_time_are_the_reports(tmp_path, run_cli) -> None:
    """The runway samples are the report's runway of the same inputs (`planner.report`), in seconds."""
    from planner.report.inputs import RunInputs
    from planner.report.model import build_model
    from pools.policy import load_policy
    from pools.profile import save_profile
    from pools.snapshot import load_snapshot
    from tests.pools.audit.helpers import POLICY, profile_row

    argv = write_inputs(tmp_path)
    (tmp_path / "pools.toml").write_text(POLICY + "\n[new_broker]\nnw_in = 1e8\nnw_out = 1e8\ndisk = 1e12\n"
                                                  "replicas = 100\nlead_time_days = 45\n")
    rows = [profile_row("a-x", 80e6, 0.0), profile_row("b-y", 1e6, 0.02)]
    save_profile(tmp_path / "profile", rows)
    metrics = tmp_path / "poolplan.prom"
    assert run_cli("audit", *argv, "--profile", tmp_path / "profile", "--metrics", metrics)[0] == 1
    text = metrics.read_text()
    _promtool_check(text)
    got = _samples(text)
    assert got['poolplan_procurement_lead_time_seconds{cluster="test"}'] == 45 * 86400
    run = RunInputs("r", snapshot=load_snapshot(tmp_path / "snapshot.json"), profile={r.topic: r for r in rows},
                    policy=load_policy(tmp_path / "pools.toml"))
    runway = build_model(run).runway
    expected = {f'poolplan_pool_runway_seconds{{cluster="test",dimension="{r.dimension}",edge="{e}",pool="{r.pool}"}}':
                crossing_seconds(getattr(r, e)) for r in runway.rows for e in ("earliest", "likely", "latest")}
    assert {k: v for k, v in got.items() if k.startswith("poolplan_pool_runway")} == \
        {k: v for k, v in expected.items() if v is not None}
    # a-x's 80 MB/s is already past pool a's network limit (70 % of two brokers' 100 MB/s of three): runway 0
    assert got['poolplan_pool_runway_seconds{cluster="test",dimension="nw_in",edge="latest",pool="a"}'] == 0
    assert got['poolplan_pool_utilisation_ratio{cluster="test",dimension="nw_in",pool="a"}'] == pytest.approx(0.8)
    # b-y grows 2 % a day from 1 MB/s: its crossings are dated or past the 90 days of history (+Inf)
    assert any(v > 0 for k, v in got.items() if k.startswith("poolplan_pool_runway") and 'pool="b"' in k)


def test_finding_kinds_are_taken_as_they_come() -> None:
    """A kind the metrics never heard of (issue 34 adds some) is counted like any other; label text is escaped."""
    found = [Finding("at_min_isr", Severity.WARNING, pool="a", topic="t", partition=0),
             Finding("at_min_isr", Severity.WARNING, pool="a", topic="t", partition=1),
             Finding("rf_1", Severity.ERROR, pool='we"ird\\pool', topic="u", partition=0)]
    text = render_textfile(audit_metrics("c", found, taken_at="2026-11-01T00:00:00Z", fail_on=Severity.CRITICAL,
                                         pools=(), pool_names=(), runway=None, lead_time_days=None, drift=None))
    got = _samples(text)
    assert got['poolplan_audit_findings{cluster="c",kind="at_min_isr",pool="a",severity="warning"}'] == 2
    assert got['poolplan_audit_findings{cluster="c",kind="rf_1",pool="we\\"ird\\\\pool",severity="error"}'] == 1
    assert got['poolplan_audit_failing{cluster="c",fail_on="critical"}'] == 0
    _promtool_check(text)


def test_since_lists_what_appeared_cleared_and_persisted(tmp_path, run_cli) -> None:
    clean_dir, metrics = tmp_path / "clean", tmp_path / "poolplan.prom"
    argv = write_inputs(tmp_path)
    assert run_cli("audit", *argv[:-1], clean_dir)[0] == 0
    save_snapshot(snapshot(DRIFTED), tmp_path / "snapshot.json")
    code, out, _ = run_cli("audit", *argv, "--since", clean_dir, "--metrics", metrics)
    assert code == 1 and "since the earlier audit 2 appeared, 0 cleared, 0 persisted" in out
    doc = json.loads((tmp_path / "audit" / "drift.json").read_text())
    assert doc["counts"] == {"appeared": 2, "cleared": 0, "persisted": 0}
    assert [f["kind"] for f in doc["appeared"]] == ["broker_mixed_pools", "replica_outside_pool"]
    assert doc["since"] == str(clean_dir / "findings.json")
    assert "## Since" in (tmp_path / "audit" / "findings.md").read_text()
    got = _samples(metrics.read_text())
    assert got['poolplan_audit_new_findings{cluster="test"}'] == 2
    assert got['poolplan_audit_cleared_findings{cluster="test"}'] == 0
    # the same drift audited again, against its own directory (read before it is replaced): all persisted
    code, out, _ = run_cli("audit", *argv, "--since", tmp_path / "audit", "--metrics", metrics)
    assert "0 appeared, 0 cleared, 2 persisted" in out
    assert _samples(metrics.read_text())['poolplan_audit_new_findings{cluster="test"}'] == 0
    # repaired: both cleared; a run directory is accepted too (its audit/findings.json)
    save_snapshot(snapshot(), tmp_path / "snapshot.json")
    code, out, _ = run_cli("audit", *argv, "--since", tmp_path)
    assert code == 0 and "0 appeared, 2 cleared, 0 persisted" in out
    # without --since, an earlier drift.json is not left behind as this audit's
    assert run_cli("audit", *argv)[0] == 0 and not (tmp_path / "audit" / "drift.json").exists()


def test_evidence_numbers_do_not_make_a_finding_new() -> None:
    from pools.audit.drift import drift

    a = Finding("replica_outside_pool", Severity.ERROR, pool="a", broker=6, topic="t", partition=0,
                evidence={"broker_pool": "b", "size_bytes": 10, "replicas": [1, 6]})
    grown = replace(a, evidence={**a.evidence, "size_bytes": 99})
    elsewhere = replace(a, evidence={**a.evidence, "broker_pool": None})
    d = drift([a], [grown, elsewhere], since="x")
    assert (d.persisted, d.appeared, d.cleared) == ((grown,), (elsewhere,), ())


@pytest.mark.parametrize("case", ["missing", "empty", "malformed", "other-cluster"])
def test_a_bad_since_is_exit_2_in_one_line_and_writes_nothing(tmp_path, run_cli, case) -> None:
    argv = write_inputs(tmp_path)
    earlier = tmp_path / "earlier"
    if case != "missing":
        earlier.mkdir()
    if case == "malformed":
        (earlier / "findings.json").write_text('{"version": 1, "findings": [{"kind": "x"}]}')
    if case == "other-cluster":
        (earlier / "findings.json").write_text('{"version": 1, "cluster": "prod", "findings": []}')
    code, out, err = run_cli("audit", *argv, "--since", earlier, "--metrics", tmp_path / "m.prom")
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: --since: "), err
    expected = {"missing": "earlier: not a directory", "empty": "holds no findings.json",
                "malformed": "findings[0].severity", "other-cluster": "cluster: expected 'test'"}[case]
    assert expected in err
    assert not (tmp_path / "audit").exists() and not (tmp_path / "m.prom").exists()


def test_an_unwritable_metrics_file_is_exit_2_before_the_audit(tmp_path, run_cli) -> None:
    (tmp_path / "dir.prom").mkdir()
    code, _, err = run_cli("audit", *write_inputs(tmp_path), "--metrics", tmp_path / "dir.prom")
    assert code == 2 and "dir.prom" in err and not (tmp_path / "audit").exists()
