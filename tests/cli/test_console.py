"""The console's progress: plain periodic lines off a terminal, an estimate of the time left, final paths only."""

from __future__ import annotations

import logging

import pytest

from planner.cli import console
from planner.cli.console import FIRST_LINE_AFTER, LINE_EVERY, StageProgress


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _printed(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line]


def test_off_a_terminal_a_plain_line_after_the_first_delay_then_every_interval(capsys) -> None:
    clock = _Clock()
    progress = StageProgress("ingest", live=False, clock=clock)
    progress("reading the metric logs", done=0, total=40, unit="tasks")
    clock.now += FIRST_LINE_AFTER - 1
    progress.tick()
    assert _printed(capsys) == []
    clock.now += 1
    progress("reading the metric logs", done=10, total=40, unit="tasks")
    progress.tick()
    lines = _printed(capsys)
    # 10 tasks in 10 s: 30 left take about 30 s
    assert lines == ["  ingest 10 s: reading the metric logs, 10/40 tasks, about 30 s left"]
    assert "\r" not in "".join(lines)
    clock.now += LINE_EVERY - 1
    progress.tick()
    assert _printed(capsys) == []
    clock.now += 1
    progress.tick()
    assert _printed(capsys) == ["  ingest 40 s: reading the metric logs, 10/40 tasks, about 2 min left"]


def test_a_new_count_restarts_the_estimate_and_a_note_is_shown_as_is() -> None:
    clock = _Clock()
    progress = StageProgress("plan", live=False, clock=clock)
    progress("batching", done=5, total=10, unit="moves")
    clock.now += 1
    assert progress.text() == "plan 1.0 s: batching, 5/10 moves"  # under two seconds of a count: no estimate
    progress("solving the pool model", note="gap 3.10 %, at most 28 s left")
    assert progress.text() == "plan 1.0 s: solving the pool model (gap 3.10 %, at most 28 s left)"


def test_shown_rewrites_temporary_paths_and_quiet_levels_print_nothing(capsys) -> None:
    clock = _Clock()
    progress = StageProgress("ingest", live=False, clock=clock, shown=lambda t: t.replace("/r/.run.x.tmp", "runs/q"))
    progress("merging the new days into the history /r/.run.x.tmp/profile/history")
    assert progress.text() == "ingest 0.0 s: merging the new days into the history runs/q/profile/history"
    quiet = StageProgress("ingest", level=logging.WARNING, live=False, clock=clock)
    quiet("reading")
    clock.now += 100
    quiet.tick()
    assert _printed(capsys) == []


def test_debug_prints_every_step_as_it_starts(capsys) -> None:
    clock = _Clock()
    progress = StageProgress("emit", level=logging.DEBUG, live=False, clock=clock)
    progress("batching the moves (phase 1)", done=0, total=3, unit="moves")
    progress("batching the moves (phase 1)", done=1, total=3, unit="moves")
    assert _printed(capsys) == ["  emit 0.0 s: batching the moves (phase 1)"]


def test_other_libraries_info_records_stay_off_the_console_below_debug(capsys) -> None:
    root = logging.getLogger()
    handlers, level, shown = list(root.handlers), root.level, console.console_level()
    try:
        console.configure_logging(logging.INFO)
        logging.getLogger("py4j.clientserver").info("Closing down clientserver connection")
        logging.getLogger("planner.example").info("own step")
        logging.getLogger("py4j.clientserver").warning("lost the JVM")
        assert _printed(capsys) == ["  planner.example: own step", "warning: lost the JVM"]
    finally:
        console.configure_logging(shown)
        root.handlers[:] = handlers
        root.setLevel(level)
