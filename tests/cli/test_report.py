"""`poolplan report RUN_DIR` as a user runs it."""

from __future__ import annotations

from tests.planner.report.conftest import build_run


def test_report_writes_html_markdown_and_charts(tmp_path, run_cli):
    run = build_run(tmp_path / "run")
    code, out, _ = run_cli("report", run, "--policy", run / "pools.toml")
    assert code == 0 and "(6 charts)" in out
    files = sorted(p.relative_to(run / "report").as_posix() for p in (run / "report").rglob("*") if p.is_file())
    assert files == ["charts/batches.svg", "charts/findings.svg", "charts/growth.svg", "charts/heatmap.svg",
                     "charts/pools.svg", "charts/throughput.svg", "report.html", "report.md"]
    first = (run / "report" / "report.html").read_bytes()
    assert run_cli("report", run, "--policy", run / "pools.toml")[0] == 0
    assert (run / "report" / "report.html").read_bytes() == first


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
