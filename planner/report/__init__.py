"""The quarterly report: one self-contained HTML page and a Markdown twin, from a run directory."""

from planner.report.inputs import RUN_FILES, RunInputs, load_previous_run, load_run
from planner.report.model import ReportModel, build_model
from planner.report.render import CHART_NAMES, RenderedReport, render_report

__all__ = ["load_run", "load_previous_run", "RunInputs", "RUN_FILES", "build_model", "ReportModel", "render_report",
           "RenderedReport", "CHART_NAMES"]
