"""`poolplan report`: the quarterly report (HTML and Markdown) from a run directory."""

from __future__ import annotations

from typing import Any

import click

from planner.cli.options import policy_option
from planner.cli.stage import Outcome, Stage, run_command
from planner.stages.report import ReportOptions, ReportResult, report
from pools.units import format_plural

__all__ = ["command", "STAGE"]


@click.command(name="report")
@click.argument("run_dir", type=click.Path(file_okay=False))
@policy_option(help="Pool policy (TOML), to show tenants; without it the report groups topics by pool only.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="Output directory [default: RUN_DIR/report]; report.html, report.md and charts/ are replaced.")
@click.option("--compare", "previous_dir", type=click.Path(file_okay=False),
              help="An earlier run directory: the report adds what changed per pool and topic since then.")
def command(**params: Any) -> int:
    """Write the quarterly report for RUN_DIR: report.html (self-contained), report.md and charts/*.svg.

    Reads snapshot.json, profile/, plan/plan.json, bundle/summary.json and audit/findings.json (and, when present,
    progress/progress.json from `poolplan progress --out`); a missing or
    unreadable stage output is named in the report instead of stopping it. The run given to --compare must be
    readable: an unreadable file in it stops the report (exit 2).
    """
    return run_command(STAGE, params)


def _outcome(result: ReportResult) -> Outcome:
    missing = f"; missing: {', '.join(result.missing)}" if result.missing else ""
    return Outcome(subject="report", summary=f"{format_plural(result.charts, 'chart')}{missing}", written=result.html,
                   headline=f"report: {result.html}")


STAGE = Stage("report", command, lambda params: ReportOptions(**params), report, _outcome)
