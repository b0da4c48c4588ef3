"""How long work tells the console where it is: one callback shape every stage, job and solver uses.

A stage function takes ``progress: ProgressReporter`` and calls it as it works: ``progress("reading the metric logs")``
when a step starts, ``progress("batching the moves", done=1200, total=5000, unit="moves")`` as countable work
advances, and ``note=`` for live detail the console cannot compute (``"gap 3.1 %, at most 28 s left"``). The
console (``planner/cli/console.py``) owns what is shown: elapsed time, the estimate of what is left (from
``done``/``total``), a live line on a terminal and periodic plain lines in a log file. A library call without a
console passes nothing and gets `no_progress`.

Callbacks may come from more than one thread (a Spark status poller, the solver's log callback); a console
must accept that.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["ProgressReporter", "no_progress"]


class ProgressReporter(Protocol):
    """``progress(step, *, done=None, total=None, unit="", note="")``: where the work is now.

    Parameters
    ----------
    step : str
        What is being done, in a few words (``"ordering every series by time"``); the same text while one step
        lasts, so the console can time it.
    done, total : int, optional
        Countable work finished and in all (tasks, moves, requests); the console estimates the time left from them.
    unit : str
        What ``done`` and ``total`` count (``"tasks"``).
    note : str
        Detail to show as is (``"Spark stage 12"``, ``"gap 3.1 %"``).
    """

    def __call__(self, step: str, /, *, done: int | None = None, total: int | None = None, unit: str = "",
                 note: str = "") -> None: ...


def no_progress(step: str, /, *, done: int | None = None, total: int | None = None, unit: str = "",
                note: str = "") -> None:
    """A `ProgressReporter` that shows nothing (the default of every library call).

    >>> no_progress("reading", done=1, total=2, unit="files")
    """
