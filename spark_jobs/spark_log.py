"""Spark's own output and failures: the JVM's log goes to a file, a failed job becomes one line.

`spark_log` routes the JVM's log4j output (and py4j's Python log, which prints a traceback per broken
connection when the JVM dies) into a file for the duration of a job, so the console shows poolplan's
progress only (``echo`` shows Spark's log on the console too); any command that runs Spark can use it (the run
puts it in its run directory). What the JVM prints before log4j starts goes to the same file through
`spark_jobs.session.build_session`'s ``jvm_log``.
`job_failure` turns what a failed job raises into a `pools.errors.JobError` naming the cause, what to
change and the log file, or an `InputError` when the job failed on an unreadable input file.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pools.errors import InputError, JobError, PoolplanError

__all__ = ["LOG_FILE", "spark_log", "release_log", "job_failure"]

#: The log file's name in an output directory.
LOG_FILE = "spark.log"

_PATTERN = "%d{yyyy-MM-dd HH:mm:ss.SSS} %p %c{1}: %m%n%ex"
_TO_FILE = """status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = {pattern}
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
"""
_ALSO_CONSOLE = """appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = {pattern}
rootLogger.appenderRef.console.ref = console
"""
_TO_CONSOLE = """status = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = {pattern}
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
"""


def _reconfigure(spark, text: str, config: Path) -> bool:
    """Reconfigure the driver JVM's log4j from ``text`` (written to ``config``); False without a local JVM."""
    jvm = getattr(getattr(spark, "sparkContext", None), "_jvm", None) if not _is_connect(spark) else None
    if jvm is None:
        return False
    config.write_text(text, encoding="utf-8")
    jvm.org.apache.logging.log4j.core.config.Configurator.reconfigure(jvm.java.net.URI(config.resolve().as_uri()))
    return True


def _is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextmanager
def spark_log(spark, path: str | Path, *, echo: bool = False) -> Iterator[Path]:
    """Send the JVM's log and py4j's Python log to ``path`` while the block runs; the console gets WARN again after.

    With ``echo`` the JVM's log (INFO and up) shows on standard error too. With Spark Connect (no local JVM) only
    py4j's log is redirected.
    """
    log = Path(path)
    log.parent.mkdir(parents=True, exist_ok=True)
    config = log.with_name(f".{log.name}.log4j2.properties")
    py4j = logging.getLogger("py4j")
    handler = logging.FileHandler(log, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    saved = py4j.handlers[:], py4j.propagate
    py4j.handlers[:] = [handler]
    py4j.propagate = False
    # py4j also logs a traceback per broken connection on the root logger: those go to the file too
    diverted = _FromPy4j(handler)
    logging.getLogger().addFilter(diverted)
    routed = failed = False
    try:
        try:
            text = _TO_FILE + (_ALSO_CONSOLE if echo else "")
            routed = _reconfigure(spark, text.format(path=log.resolve().as_posix(), pattern=_PATTERN), config)
        except Exception:  # noqa: BLE001 - a JVM that cannot be reached: the job itself will say so
            routed = False
        yield log
    except BaseException:
        failed = True
        raise
    finally:
        if routed:
            try:
                _reconfigure(spark, _TO_CONSOLE.format(pattern=_PATTERN), config)
            except Exception:  # noqa: BLE001 - the JVM may be gone; nothing to restore then
                pass
        config.unlink(missing_ok=True)
        if not failed:
            logging.getLogger().removeFilter(diverted)
            handler.close()
            py4j.handlers[:], py4j.propagate = saved
        else:  # py4j keeps logging into the file: a dead JVM's broken connections are noise there
            _KEPT[log.resolve()] = (handler, diverted)


#: Log files py4j keeps writing into after a failed `spark_log` block, with their handler and root filter.
_KEPT: dict[Path, tuple[logging.Handler, _FromPy4j]] = {}


def release_log(path: str | Path) -> None:
    """Stop py4j writing into ``path`` after a failed `spark_log` block (its records are dropped instead), so
    the file can be removed or put back as it was without py4j re-creating or appending to it at exit."""
    kept = _KEPT.pop(Path(path).resolve(), None)
    if kept is None:
        return
    handler, diverted = kept
    handler.close()
    dropped = logging.NullHandler()
    logging.getLogger("py4j").handlers[:] = [dropped]
    diverted.handler = dropped


class _FromPy4j(logging.Filter):
    """Sends the root logger's records that py4j made to the log file instead of the console."""

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self.handler = handler

    def filter(self, record: logging.LogRecord) -> bool:
        if f"{os.sep}py4j{os.sep}" in record.pathname:
            self.handler.handle(record)
            return False
        return True


_FILE_ERRORS = re.compile(
    r"(?:FAILED_READ_FILE\S*|Could not read footer for file|is not a Parquet file|FileNotFoundException|"
    r"Encountered error while reading file)[^\n]*?((?:file:|hdfs:|s3a?:|gs:|abfss?:)?/[^\s,'\"]+)"
)


def job_failure(exc: BaseException, log: Path | None) -> PoolplanError | None:
    """The poolplan error for an exception a Spark job raised (None when it is not Spark's).

    Out of memory, a lost executor and a dead or unreachable JVM become a `JobError` (exit 3) naming the
    cause, the setting to change and the log; an input file Spark could not read becomes an `InputError`.
    """
    if isinstance(exc, PoolplanError):
        return None
    name = type(exc).__name__
    module = type(exc).__module__
    text = str(exc)
    logged = _tail(log) if _spark_error(name, module) else ""
    where = f"; Spark's log: {log}" if log is not None else ""
    if not _spark_error(name, module):
        return None
    out_of_memory = JobError(
        "Spark ran out of memory (java.lang.OutOfMemoryError): raise the heap with --conf spark.driver.memory=8g "
        "(embedded local[*]; spark.executor.memory on a cluster), run on a cluster with --master, or ingest "
        f"fewer days at a time{where}"
    )
    if "OutOfMemoryError" in text:
        return out_of_memory
    if "ExecutorLostFailure" in text or "Lost executor" in text:
        return JobError(
            "a Spark executor was lost (ExecutorLostFailure: killed or out of memory): give executors more memory "
            f"(--conf spark.executor.memory=...), check the cluster manager's logs, or retry{where}"
        )
    match = _FILE_ERRORS.search(text)
    if match:
        return InputError(f"{match.group(1).rstrip('.')}: Spark could not read this file ({_first_line(text)})")
    if name in ("Py4JNetworkError", "ConnectionRefusedError", "ConnectionResetError", "BrokenPipeError") or any(
        s in text
        for s in ("Answer from Java side is empty", "SparkContext was shut down", "stopped SparkContext",
                  "Connection refused")
    ):
        if "OutOfMemoryError" in logged:
            return out_of_memory
        return JobError(
            "Spark's JVM died during the job (most often out of memory): raise --conf spark.driver.memory, "
            f"or run on a cluster with --master{where}"
        )
    python = _PYTHON_ERROR.findall(text)
    if python:
        return JobError(f"a Spark Python worker failed: {python[-1][:300]}{where}")
    return JobError(f"the Spark job failed: {_first_line(text)}{where}")


_PYTHON_ERROR = re.compile(r"^(\w+(?:Error|Exception): .+)$", re.M)


def _spark_error(name: str, module: str) -> bool:
    """Whether an exception of this class comes from Spark, py4j or a broken connection to the JVM."""
    return module.startswith(("py4j", "pyspark")) or name in ("ConnectionRefusedError", "ConnectionResetError",
        "BrokenPipeError")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("JVM stacktrace", "at ")):
            return line[:300]
    return text[:300]


def _tail(log: Path | None, size: int = 1 << 20) -> str:
    if log is None or not log.exists():
        return ""
    with log.open("rb") as fh:
        fh.seek(max(0, log.stat().st_size - size))
        return fh.read().decode("utf-8", "replace")
