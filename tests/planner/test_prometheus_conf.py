"""The alert rules and the Grafana dashboard that ship with poolplan: promtool checks and unit-tests the rules, and
every metric they or the dashboard query is one `poolplan audit --metrics` writes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import date
from pathlib import Path

import pytest

from planner.audit_metrics import audit_metrics
from planner.report.runway import Crossing, PoolRunway, Runway
from pools.audit.drift import drift
from pools.audit.findings import Finding, Severity

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "conf" / "prometheus" / "poolplan-rules.yml"
RULE_TESTS = ROOT / "conf" / "prometheus" / "poolplan-rules.test.yml"
DASHBOARD = ROOT / "conf" / "grafana" / "poolplan-dashboard.json"
_NAME = re.compile(r"\bpoolplan_[a-z_]+\b")

needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None,
                                    reason="needs promtool (Debian's prometheus package; .ci/run installs it)")


def _promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False)


def _written_names() -> set[str]:
    """Every family an audit with a profile, a lead time and --since writes."""
    row = PoolRunway("core", "nw_in", 1.0, 2.0, 10.0, 7.0, 7.0, Crossing("day", 3), Crossing("after"),
                     Crossing("flat"), Crossing("after"), (1.0,), (1.0,), (1.0,))
    runway = Runway(date(2026, 11, 1), 90, 90, 30, (row,), ())
    found = [Finding("replica_outside_pool", Severity.ERROR, pool="core", topic="t", partition=0)]
    metrics = audit_metrics("c", found, taken_at=None, fail_on=Severity.ERROR, pools=(), pool_names=("core",),
                            runway=runway, lead_time_days=30, drift=drift([], found, since="x"))
    return {f.name for f in metrics.families} | {"poolplan_pool_utilisation_ratio", "poolplan_pool_limit_ratio"}


def _yaml_values(path: Path, key: str) -> list[str]:
    """The values of ``key:`` in a YAML file (no YAML library here): inline, or a folded ``>-`` block."""
    lines = path.read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        m = re.match(rf"^(\s*)(?:- )?{key}: (.*)$", line)
        if not m:
            continue
        if m.group(2) != ">-":
            out.append(m.group(2).strip().strip("'\""))
            continue
        block = []
        for follow in lines[i + 1:]:
            if follow.strip() and len(follow) - len(follow.lstrip()) <= len(m.group(1)):
                break
            block.append(follow.strip())
        out.append(" ".join(block).strip())
    return out


def _rule_exprs() -> list[str]:
    return _yaml_values(RULES, "expr")


def _dashboard_exprs() -> list[str]:
    doc = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p["targets"]]
    exprs += [v["definition"] for v in doc["templating"]["list"] if "definition" in v]
    return exprs


@needs_promtool
def test_the_rules_pass_promtool_check_and_their_unit_tests() -> None:
    done = _promtool("check", "rules", str(RULES))
    assert done.returncode == 0 and "SUCCESS: 5 rules found" in done.stdout, done.stdout + done.stderr
    done = _promtool("test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr


def test_every_alert_the_issue_names_is_there() -> None:
    alerts = set(_yaml_values(RULES, "alert"))
    assert len(_rule_exprs()) == 5
    assert alerts == {"PoolplanIsolationDrift", "PoolplanCriticalFinding", "PoolplanPoolPastLimit",
                      "PoolplanRunwayShorterThanLeadTime", "PoolplanAuditStale"}
    assert set(_yaml_values(RULE_TESTS, "alertname")) == alerts


def test_rules_and_dashboard_query_only_metrics_the_audit_writes() -> None:
    written = _written_names()
    used_by_rules = {n for e in _rule_exprs() for n in _NAME.findall(e)}
    used_by_dashboard = {n for e in _dashboard_exprs() for n in _NAME.findall(e)}
    assert used_by_rules and used_by_rules <= written, used_by_rules - written
    assert used_by_dashboard and used_by_dashboard <= written, used_by_dashboard - written
    assert used_by_rules <= used_by_dashboard  # what pages is on the dashboard too


@needs_promtool
def test_the_dashboard_queries_are_promql(tmp_path) -> None:
    """Each panel query, its variables filled in, checked by promtool as a recording rule's expression."""
    exprs = [e.replace("$cluster", "prod") for e in _dashboard_exprs() if not e.startswith("label_values(")]
    rules = {"groups": [{"name": "dashboard", "rules": [{"record": f"dashboard:query{i}", "expr": e}
                                                          for i, e in enumerate(exprs)]}]}
    (tmp_path / "dashboard.yml").write_text(json.dumps(rules))  # JSON is YAML
    done = _promtool("check", "rules", str(tmp_path / "dashboard.yml"))
    assert done.returncode == 0, done.stdout + done.stderr
