"""HiGHS without its banner, at a fixed thread count: the one way poolplan constructs a highspy model.

highspy's constructor registers its callback hook (``Highs::setCallback``), which prints the "Running HiGHS ...
Copyright" header while the console log is still on, whatever options are set afterwards; turning
``log_to_console`` off first keeps the log for a logging callback and nothing for the console.

HiGHS runs one thread scheduler per process, sized by the first solve's ``threads``; a later solve asking for
another count fails (``kError``, no solution: "the scheduler has already been initialized"). `use_threads`
restarts the scheduler whenever the count changes, so the pool model at ``--threads 2`` and the placement
engine's single-threaded solves can follow each other in one process.
"""

from __future__ import annotations

import highspy

__all__ = ["QuietHighs", "use_threads"]

_scheduler: list[int] = []  # the thread count the process's HiGHS scheduler was last sized for


class QuietHighs(highspy.Highs):
    """A `highspy.Highs` that never writes to standard output.

    >>> h = QuietHighs()
    >>> h.getOptionValue("log_to_console")[1]
    False
    """

    def enableCallbacks(self) -> None:
        self.setOptionValue("log_to_console", False)
        super().enableCallbacks()


def use_threads(threads: int, h: highspy.Highs | None = None) -> None:
    """Size HiGHS's scheduler for ``threads`` (restarting it when the last solve used another count) and set the
    option on ``h``; call it right before a solve (PuLP's own HiGHS too, with ``h`` None).

    >>> h = QuietHighs(); use_threads(1, h); h.getOptionValue("threads")[1]
    1
    """
    if _scheduler and _scheduler[0] != threads:
        highspy.Highs.resetThreadScheduler(True)  # blocking: the old workers stop first
    _scheduler[:] = [threads]
    if h is not None:
        h.setOptionValue("threads", threads)
