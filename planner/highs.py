"""HiGHS without its banner: the one way poolplan constructs a highspy model.

highspy's constructor registers its callback hook (``Highs::setCallback``), which prints the "Running HiGHS ...
Copyright" header while the console log is still on, whatever options are set afterwards; turning
``log_to_console`` off first keeps the log for a logging callback and nothing for the console.
"""

from __future__ import annotations

import highspy

__all__ = ["QuietHighs"]


class QuietHighs(highspy.Highs):
    """A `highspy.Highs` that never writes to standard output.

    >>> h = QuietHighs()
    >>> h.getOptionValue("log_to_console")[1]
    False
    """

    def enableCallbacks(self) -> None:
        self.setOptionValue("log_to_console", False)
        super().enableCallbacks()
