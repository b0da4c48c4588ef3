"""`poolplan report RUN_DIR` as a user runs it."""

from __future__ import annotations

import re

import pytest

from tests.planner.report.conftest import build_run


@pytest.mark.slow
def test_report_writes_html_markdown_and_charts(tmp_path, run_cli):
    run = build_run(tmp_path / "run")
    code, out, _ = run_cli("report", run, "--policy", run / "pools.toml")
    assert code == 0 and re.search(r"^report \([\d.]+ s\): 7 charts; wrote ", out), out
    files = sorted(p.relative_to(run / "report").as_posix() for p in (run / "report").rglob("*") if p.is_file())
    assert files == ["charts/batches.svg", "charts/findings.svg", "charts/growth.svg", "charts/heatmap.svg",
                     "charts/pools.svg", "charts/runway.svg", "charts/throughput.svg", "report.html", "report.md"]
    first = (run / "report" / "report.html").read_bytes()
    assert run_cli("report", run, "--policy", run / "pools.toml")[0] == 0
    assert (run / "report" / "report.html").read_bytes() == first


@pytest.mark.slow
def test_stale_charts_are_removed_and_missing_stages_named(tmp_path, run_cli):
    run = build_run(tmp_path / "run")
    assert run_cli("report", run)[0] == 0
    (run / "bundle" / "summary.json").unlink()
    code, out, _ = run_cli("report", run, "--out", run / "report")
    assert code == 0 and "missing: bundle" in out
    assert not (run / "report" / "charts" / "batches.svg").exists()


def test_bad_run_dir_exits_2(tmp_path, run_cli):
    code, _, err = run_cli("report", tmp_path / "missing")
    assert code == 2 and "not a directory" in err


def test_compare_adds_the_changes_since_an_earlier_run(tmp_path, run_cli):
    previous = build_run(tmp_path / "q3", load=0.5, rates=(10e6, 35e6))
    run = build_run(tmp_path / "q4")
    code, _, err = run_cli("report", run, "--policy", run / "pools.toml", "--compare", previous)
    assert code == 0, err
    text = (run / "report" / "report.md").read_text()
    assert "## Since the previous run" in text and "| a-x | a | bytes in, p99 | 10.0 MB/s | 20.0 MB/s | +10.0 MB/s |" in text


def test_an_unreadable_previous_run_is_one_line_and_exit_2(tmp_path, run_cli):
    previous = build_run(tmp_path / "q3")
    (previous / "plan" / "plan.json").write_text('{"version": 1, "cluster": ')
    run = build_run(tmp_path / "q4")
    before = sorted(p.name for p in run.rglob("*"))
    code, out, err = run_cli("report", run, "--compare", previous)
    assert code == 2 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "--compare:" in lines[0] and "plan.json" in lines[0], err
    assert sorted(p.name for p in run.rglob("*")) == before  # nothing written
    code, _, err = run_cli("report", run, "--compare", tmp_path / "nowhere")
    assert code == 2 and "nowhere: not a directory" in err
