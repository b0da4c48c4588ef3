"""What poolplan shows while it works: progress with an estimate of the time left, and where log records go.

One console for diagnostics (standard error). While a stage works, `StageProgress` shows where it is: on a
terminal one live line (spinner, elapsed time, step, ``12/40 tasks, about 40 s left``); elsewhere (a CI log, cron
mail, ``> run.log``) no carriage returns, but a plain line once a stage has run for `FIRST_LINE_AFTER` seconds and
then every `LINE_EVERY` seconds. The level chosen with ``--log-level`` (``-v`` = DEBUG) decides how much:

- WARNING: each command's summary lines and warnings only;
- INFO (the default): also the progress of long work;
- DEBUG: also every step as it starts, poolplan's debug log, and the log of Spark, the JVM and the solver.

`configure_logging` sends log records to this console at the chosen level (other libraries' records below
WARNING only at DEBUG), so nothing prints after a command ends (py4j's INFO on exit, for instance).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from pools.units import format_duration, format_elapsed

__all__ = ["CONSOLE", "StageProgress", "configure_logging", "console_level", "stage_progress", "file_handler",
           "FIRST_LINE_AFTER", "LINE_EVERY"]

#: Standard error, where progress, warnings and `poolplan run`'s story go.
CONSOLE = Console(stderr=True, highlight=False, soft_wrap=True)

#: Seconds a stage runs before the first progress line in a file or pipe.
FIRST_LINE_AFTER = 10.0
#: Seconds between progress lines in a file or pipe.
LINE_EVERY = 30.0
#: Loggers whose INFO and DEBUG records are poolplan's own (others' show on the console from WARNING, or at DEBUG).
_OWN = ("planner", "pools", "spark_jobs")

_log = logging.getLogger(__name__)
_level = logging.INFO


def console_level() -> int:
    """The level the console shows (set by `configure_logging` from ``--log-level`` / ``-v``)."""
    return _level


def configure_logging(level: int) -> None:
    """Show log records at ``level`` on `CONSOLE`; keep every logger's DEBUG available to file handlers.

    Idempotent (a command run twice in one process configures once): the previous console handler is replaced.
    """
    global _level
    _level = level
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _ConsoleHandler)]:
        root.removeHandler(handler)
    root.addHandler(_ConsoleHandler(level))
    root.setLevel(logging.DEBUG)
    logging.getLogger("py4j").setLevel(logging.INFO)  # py4j's DEBUG is one record per call into the JVM


class _ConsoleHandler(logging.Handler):
    """Log records on `CONSOLE` (above a live progress line, when there is one)."""

    def __init__(self, level: int) -> None:
        super().__init__(level)

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "console", True) is False:  # already shown on the console (a story line)
            return False
        floor = logging.INFO if self.level <= logging.DEBUG else logging.WARNING
        return (_own(record) or record.levelno >= floor) and super().filter(record)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.levelno >= logging.WARNING:
                text = f"{record.levelname.lower()}: {message}"
            else:
                text = f"  {record.name}: {message}"
            if record.exc_info and self.level <= logging.DEBUG:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
            CONSOLE.print(text, markup=False)
        except Exception:  # noqa: BLE001 - logging must never raise (logging.Handler's own contract)
            self.handleError(record)


def file_handler(path: str) -> logging.Handler:
    """A log file's handler: poolplan's records from DEBUG, other libraries' from INFO (matplotlib's font search
    and py4j's calls into the JVM are DEBUG)."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(lambda record: _own(record) or record.levelno >= logging.INFO)
    return handler


def _own(record: logging.LogRecord) -> bool:
    return record.name.split(".")[0] in _OWN


@dataclass
class _Step:
    text: str
    started: float
    done: int | None = None
    total: int | None = None
    unit: str = ""
    note: str = ""
    baseline: tuple[float, int] | None = None  # (time, done) when this count was first seen


class StageProgress:
    """A `pools.progress.ProgressReporter` that shows a stage's progress on `CONSOLE` (see the module docstring).

    Parameters
    ----------
    stage : str
        The stage's name, shown first on every line.
    level : int
        The console's level: below INFO nothing is shown, at DEBUG every new step prints a line too.
    live : bool, optional
        A live line (terminal) or periodic plain lines; default: whether `CONSOLE` is a terminal.
    clock : callable
        Seconds, monotonic (tests pass a fake).
    shown : callable
        Rewrites a step's text before it is shown (``poolplan run`` names its temporary directory by its final name).
    """

    def __init__(self, stage: str, *, level: int = logging.INFO, live: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, shown: Callable[[str], str] = str) -> None:
        self.stage = stage
        self.shown = shown
        self.level = level
        self.live = CONSOLE.is_terminal if live is None else live
        self.clock = clock
        self.started = clock()
        self.step: _Step | None = None
        self.printed: float | None = None
        self._lock = threading.Lock()

    def __call__(self, step: str, /, *, done: int | None = None, total: int | None = None, unit: str = "",
                  note: str = "") -> None:
        now = self.clock()
        with self._lock:
            current = self.step
            new = current is None or current.text != step
            if new:
                current = self.step = _Step(step, now)
            assert current is not None
            if done is not None and total is not None:
                if (current.baseline is None or (total, unit) != (current.total, current.unit)
                        or done < (current.done or 0)):
                    current.baseline = (now, done)
            else:
                current.baseline = None
            current.done, current.total, current.unit, current.note = done, total, unit, note
        if new:
            _log.debug("%s: %s", self.stage, self.shown(step), extra={"console": False})
            if self.level <= logging.DEBUG:
                CONSOLE.print(f"  {self.stage} {format_elapsed(now - self.started)}: {self.shown(step)}", markup=False)

    def text(self, now: float | None = None) -> str:
        """The progress line: stage, elapsed time, step, counts with the time left, note."""
        now = self.clock() if now is None else now
        with self._lock:
            step = self.step
            parts = [f"{self.stage} {format_elapsed(now - self.started)}"]
            if step is None:
                return parts[0]
            detail = step.text
            if step.done is not None and step.total is not None:
                detail += f", {step.done:,}/{step.total:,} {step.unit}".rstrip()
                left = _time_left(step, now)
                if left is not None:
                    detail += f", about {format_duration(left)} left"
            if step.note:
                detail += f" ({step.note})"
        return self.shown(f"{parts[0]}: {detail}")

    def tick(self) -> None:
        """Print the periodic line when one is due (a file or pipe at INFO or DEBUG)."""
        if self.live or self.level > logging.INFO:
            return
        now = self.clock()
        due = FIRST_LINE_AFTER if self.printed is None else LINE_EVERY
        if now - (self.printed if self.printed is not None else self.started) >= due:
            self.printed = now
            CONSOLE.print(f"  {self.text(now)}", markup=False)


def _time_left(step: _Step, now: float) -> float | None:
    """Seconds left at the rate since this count was first seen (none before two seconds of it)."""
    if step.baseline is None or step.done is None or step.total is None:
        return None
    since, first = step.baseline
    if now - since < 2.0 or step.done <= first:
        return None
    return (now - since) * max(step.total - step.done, 0) / (step.done - first)


@contextmanager
def stage_progress(stage: str, *, shown: Callable[[str], str] = str) -> Iterator[StageProgress]:
    """A `StageProgress` for ``stage``, shown while the block runs (a live line, or a thread for the periodic lines)."""
    progress = StageProgress(stage, level=console_level(), shown=shown)
    if progress.level > logging.INFO:
        yield progress
        return
    if progress.live:
        with CONSOLE.status(_Live(progress)):
            yield progress
        return
    stop = threading.Event()

    def ticking() -> None:
        while not stop.wait(1.0):
            progress.tick()

    thread = threading.Thread(target=ticking, name=f"progress-{stage}", daemon=True)
    thread.start()
    try:
        yield progress
    finally:
        stop.set()
        thread.join()


class _Live:
    """The live line's text, rendered afresh on every refresh of the spinner."""

    def __init__(self, progress: StageProgress) -> None:
        self.progress = progress

    def __rich__(self) -> Text:
        return Text(self.progress.text())
