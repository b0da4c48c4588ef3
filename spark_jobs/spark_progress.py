"""Spark's progress for poolplan's console: the running stages' tasks, polled from Spark's status tracker.

Spark's own console progress bar (``[Stage 3:=====>   (12 + 2) / 40]``) redraws one line with carriage returns,
which a log file keeps as garbage, so `spark_jobs.session` turns it off; `spark_progress` asks the status tracker
instead, once a second, and tells the job's `pools.progress.ProgressReporter` the tasks done and in all under the job's
current step (``converting counters to per-minute rows, 12/40 tasks (Spark stage 7)``): the console estimates
the time left from them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pools.progress import ProgressReporter

__all__ = ["spark_progress"]


@contextmanager
def spark_progress(spark, progress: ProgressReporter, *, every: float = 1.0) -> Iterator[ProgressReporter]:
    """A `ProgressReporter` for a Spark job: the job's steps pass through, and a thread adds the running stages' tasks.

    Without a local SparkContext (Spark Connect) the job's steps pass through alone. The thread stops when the
    block ends, and quietly when the JVM stops answering (the job itself reports that).
    """
    try:
        tracker = spark.sparkContext.statusTracker()
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: steps only
        yield progress
        return
    step: list[str] = []
    stop = threading.Event()

    def tracked(text: str, /, **detail: object) -> None:
        step[:] = [text]
        progress(text, **detail)  # type: ignore[arg-type]

    def poll() -> None:
        while not stop.wait(every):
            try:
                stages = [s for s in (tracker.getStageInfo(i) for i in tracker.getActiveStageIds()) if s is not None]
            except Exception:  # noqa: BLE001 - the JVM is gone or stopping
                return
            if stages and step and not stop.is_set():
                ids = ", ".join(str(s.stageId) for s in sorted(stages, key=lambda s: s.stageId))
                progress(step[0], done=sum(s.numCompletedTasks for s in stages), total=sum(s.numTasks for s in stages),
                         unit="tasks", note=f"Spark stage {ids}")

    thread = threading.Thread(target=poll, name="spark-progress", daemon=True)
    thread.start()
    try:
        yield tracked
    finally:
        stop.set()
        thread.join()
