"""`poolplan report`: the quarterly report (HTML and Markdown) from a run directory."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

__all__ = ["command"]

_console = Console(highlight=False, soft_wrap=True)


@click.command(name="report")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False),
              help="Pool policy (TOML), to show tenants; without it the report groups topics by pool only.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="Output directory [default: RUN_DIR/report]; report.html, report.md and charts/ are replaced.")
@click.option("--compare", "previous_dir", type=click.Path(file_okay=False),
              help="An earlier run directory: the report adds what changed per pool and topic since then.")
def command(run_dir: str, policy_path: str | None, out_dir: str | None, previous_dir: str | None) -> int:
    """Write the quarterly report for RUN_DIR: report.html (self-contained), report.md and charts/*.svg.

    Reads snapshot.json, profile/, plan/plan.json, bundle/summary.json and audit/findings.json; a missing or
    unreadable stage output is named in the report instead of stopping it. The run given to --compare must be
    readable: an unreadable file in it stops the report (exit 2).
    """
    from planner.report import CHART_NAMES, build_model, load_previous_run, load_run, render_report
    from pools.atomic import check_output, remove_file, write_text

    out = check_output(Path(out_dir) if out_dir else Path(run_dir) / "report")
    run = load_run(run_dir, policy=policy_path)
    previous = load_previous_run(previous_dir, current=run_dir) if previous_dir else None
    rendered = render_report(build_model(run, previous), has_policy=run.policy is not None)
    for name in CHART_NAMES:
        path = out / "charts" / f"{name}.svg"
        if name in rendered.charts:
            write_text(path, rendered.charts[name])
        else:
            remove_file(path)
    write_text(out / "report.md", rendered.markdown)
    write_text(out / "report.html", rendered.html)
    missing = f"; missing: {', '.join(sorted(run.notes))}" if run.notes else ""
    _console.print(f"report: {out / 'report.html'} ({len(rendered.charts)} charts{missing})")
    return 0
