"""The report stage: the quarterly report (HTML, Markdown and SVG charts) from a run directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pools.progress import ProgressReporter, no_progress

__all__ = ["ReportOptions", "ReportResult", "report"]


@dataclass(frozen=True)
class ReportOptions:
    """The options of ``poolplan report``."""

    run_dir: str
    policy_path: str | None = None
    out_dir: str | None = None
    previous_dir: str | None = None


@dataclass(frozen=True)
class ReportResult:
    """Where the report was written, how many charts it has and the stage outputs the run lacked."""

    html: Path
    charts: int
    missing: tuple[str, ...] = ()


def report(options: ReportOptions, *, progress: ProgressReporter = no_progress) -> ReportResult:
    """Write report.html (self-contained), report.md and charts/*.svg into ``out_dir`` (default RUN_DIR/report).

    Reads snapshot.json, profile/, plan/plan.json, bundle/summary.json and audit/findings.json; a missing or
    unreadable stage output is named in the report instead of stopping it. The run given as ``previous_dir``
    must be readable.

    Raises
    ------
    InputError
        For a run directory that is not one, an unreadable ``previous_dir`` or an output that cannot be written.
    """
    from planner.report import CHART_NAMES, build_model, load_previous_run, load_run, render_report
    from pools.atomic import check_output, remove_file, write_text

    out = check_output(Path(options.out_dir) if options.out_dir else Path(options.run_dir) / "report")
    progress("reading the run")
    run = load_run(options.run_dir, policy=options.policy_path)
    previous = load_previous_run(options.previous_dir, current=options.run_dir) if options.previous_dir else None
    progress("rendering the report and its charts")
    rendered = render_report(build_model(run, previous), has_policy=run.policy is not None)
    for name in CHART_NAMES:
        path = out / "charts" / f"{name}.svg"
        if name in rendered.charts:
            write_text(path, rendered.charts[name])
        else:
            remove_file(path)
    write_text(out / "report.md", rendered.markdown)
    write_text(out / "report.html", rendered.html)
    return ReportResult(out / "report.html", len(rendered.charts), tuple(sorted(run.notes)))
