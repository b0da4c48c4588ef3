"""The report as a person sees it: headless Chromium loads it with no console errors and shows every chart."""

from __future__ import annotations

import shutil

import pytest

from planner.report import CHART_NAMES

from .browser import chromium, load_page

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium() is None, reason="needs Debian's chromium package (installed by .ci/run)"),
]


def test_the_driver_sees_console_errors_and_failed_loads(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><img src="missing.png"><script>console.error("boom");'
                    "nosuch();</script></body></html>")
    result = load_page(page, {"img": "img"})
    assert result.counts == {"img": 1}
    assert any("boom" in e for e in result.errors)
    assert any("nosuch" in e for e in result.errors)
    assert any("load failed" in e or "missing.png" in e for e in result.errors)


def test_report_loads_cleanly_with_every_chart(run_dir, run_cli):
    assert run_cli("report", run_dir, "--policy", run_dir / "pools.toml")[0] == 0
    html = run_dir / "report" / "report.html"
    selectors = {name: f"figure#chart-{name} svg" for name in CHART_NAMES}
    selectors["sections"] = "section"
    selectors["missing"] = ".missing"
    result = load_page(html, selectors)
    assert result.errors == []
    # the hand-built profile has no backtest.parquet: its section says so, the one part missing
    assert result.counts == {**dict.fromkeys(CHART_NAMES, 1), "sections": 13, "missing": 1}
    assert result.screenshot.startswith(b"\x89PNG") and len(result.screenshot) > 50_000


def test_report_of_a_partial_run_still_renders(tmp_path, run_cli):
    from .conftest import build_run

    run = build_run(tmp_path / "run", stages=("snapshot", "audit"))
    shutil.rmtree(run / "profile", ignore_errors=True)
    assert run_cli("report", run)[0] == 0
    result = load_page(run / "report" / "report.html", {"charts": "figure.chart svg", "missing": ".missing"})
    assert result.errors == []
    # notes, runway, backtest, cost, risks, topics, tenants without a policy, batches
    assert result.counts == {"charts": 3, "missing": 8}
