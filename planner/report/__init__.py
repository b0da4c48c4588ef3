"""The quarterly report: one self-contained HTML page and a Markdown twin, from a run directory.

Names are imported on first use, so a reader of the model alone (the audit's metrics) does not load the charts'
plotting library.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each public name and the module that defines it.
_HOMES = {"load_run": "inputs", "load_previous_run": "inputs", "RunInputs": "inputs", "RUN_FILES": "inputs",
          "build_model": "model", "ReportModel": "model", "render_report": "render", "RenderedReport": "render",
          "CHART_NAMES": "render"}

__all__ = ["load_run", "load_previous_run", "RunInputs", "RUN_FILES", "build_model", "ReportModel", "render_report",
           "RenderedReport", "CHART_NAMES"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
