"""The ``ingest`` stage as one library call: typed options in, profile out (the CLI and ``poolplan run`` share it).

`IngestOptions` holds every option of ``poolplan ingest`` with its type; `ingest` validates them all
(globs, the broker map, the snapshot, the output directory, the Prometheus settings) before any work,
pulls from Prometheus when asked, checks the inputs and the history (`spark_jobs.ingest.check_inputs`), builds
the SparkSession and runs `spark_jobs.ingest.run`. Bad input found on the way leaves the output directory as it
was (`_as_it_was_on_bad_input`).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from pools.atomic import check_output, make_dir
from pools.errors import InputError
from pools.pool_rules import DEFAULT_FORECAST_HORIZON_DAYS
from pools.progress import ProgressReporter, no_progress

if TYPE_CHECKING:
    from spark_jobs.metric_names import MetricNames
    from spark_jobs.prometheus import PrometheusSource

__all__ = ["IngestOptions", "PrometheusOptions", "ingest", "parse_time", "parse_duration"]


@dataclass(frozen=True)
class PrometheusOptions:
    """``--prometheus URL`` and its settings (see `spark_jobs.prometheus`)."""

    url: str
    days: int | None = None
    start: str | None = None
    end: str | None = None
    step: str = "60s"
    query: str = "counters"
    #: ``raw`` (every per-(broker, topic) series, as ``query`` says) or ``per-topic`` (the server's sums per topic).
    mode: str = "raw"
    timeout_s: float = 120.0
    in_flight: int = 4
    retries: int = 5
    bearer_token_file: str | None = None
    bearer_token_env: str | None = None
    basic_auth_user: str | None = None
    basic_auth_password_file: str | None = None
    basic_auth_password_env: str | None = None
    ca_file: str | None = None
    insecure: bool = False
    #: Quarantine (with a warning) the series of instances with traffic that the broker map does not name,
    #: instead of failing.
    quarantine_unmapped: bool = False


@dataclass(frozen=True)
class IngestOptions:
    """Every option of ``poolplan ingest``."""

    out: str
    prom: tuple[str, ...] = ()
    query_range: tuple[str, ...] = ()
    telegraf: tuple[str, ...] = ()
    log_dirs: tuple[str, ...] = ()
    normalized_json: tuple[str, ...] = ()
    history: str | None = None
    broker_map: str | None = None
    cluster: str | None = None
    snapshot: str | None = None
    horizon_days: int = DEFAULT_FORECAST_HORIZON_DAYS
    range_values: str = "auto"
    #: A metric-names file (`spark_jobs.metric_names`): series names and topic/instance labels of every reader.
    metric_names: str | None = None
    prometheus: PrometheusOptions | None = None
    master: str = "local[*]"
    remote: str | None = None
    conf: tuple[str, ...] = field(default_factory=tuple)


def parse_duration(text: str, *, option: str) -> int:
    """Whole seconds of a Prometheus duration (``60s``, ``5m``, ``1h30m``).

    >>> parse_duration("1m30s", option="--step")
    90
    """
    from spark_jobs.metric_names import duration_s

    seconds = duration_s(text)
    if not seconds or seconds != int(seconds):
        raise InputError(f"{option} {text!r}: expected a duration of whole seconds like 60s, 5m or 1h")
    return int(seconds)


def parse_time(text: str, *, option: str) -> datetime:
    """A UTC time from RFC 3339 (``2025-03-03T00:00:00Z``), a date (midnight UTC) or Unix seconds.

    >>> parse_time("2025-03-03", option="--start").isoformat()
    '2025-03-03T00:00:00+00:00'
    """
    try:
        if text.replace(".", "", 1).isdigit():
            return datetime.fromtimestamp(float(text), tz=timezone.utc)
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        raise InputError(
            f"{option} {text!r}: expected an RFC 3339 time (2025-03-03T00:00:00Z), a date or Unix seconds") from None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def _secret(file: str | None, env: str | None, what: str) -> str | None:
    from pools.files import read_text

    if file and env:
        raise InputError(f"give the {what} either from a file or from an environment variable, not both")
    if file:
        value = read_text(file).strip()
        if not value:
            raise InputError(f"{file}: empty (expected the {what})")
        return value
    if env:
        value = os.environ.get(env, "").strip()
        if not value:
            raise InputError(f"environment variable {env} is not set or empty (expected the {what})")
        return value
    return None


def prometheus_source(options: PrometheusOptions, *, now: datetime | None = None,
    names: MetricNames | None = None) -> PrometheusSource:
    """The validated `spark_jobs.prometheus.PrometheusSource` of the options (reading by the `MetricNames` ``names``).

    ``--end`` defaults to now and is exclusive (a sample at exactly ``--end`` is not read), ``--start`` to
    ``--days`` (default 14) whole days before the end's midnight.
    """
    from spark_jobs.metric_names import DEFAULT

    from spark_jobs.prometheus import MODES, QUERIES, PrometheusSource

    if not options.url.startswith(("http://", "https://")):
        raise InputError(f"--prometheus {options.url!r}: expected an http:// or https:// URL of the Prometheus API")
    if options.query not in QUERIES:
        raise InputError(f"--prometheus-query {options.query!r}: expected one of {', '.join(QUERIES)}")
    end = parse_time(options.end, option="--end") if options.end else (now or datetime.now(timezone.utc))
    if options.start and options.days is not None:
        raise InputError("give --start or --days, not both")
    if options.start:
        start = parse_time(options.start, option="--start")
    else:
        days = 14 if options.days is None else options.days
        if days < 1:
            raise InputError(f"--days {days}: expected at least 1")
        midnight = end.replace(hour=0, minute=0, second=0, microsecond=0)
        start = midnight - timedelta(days=days) if midnight < end else midnight - timedelta(days=days)
    if start >= end:
        raise InputError(f"--start {start:%Y-%m-%dT%H:%M:%SZ} is not before --end {end:%Y-%m-%dT%H:%M:%SZ}")
    if options.mode not in MODES:
        raise InputError(f"--prometheus-mode {options.mode!r}: expected one of {', '.join(MODES)}")
    if options.mode == "per-topic" and options.query != "counters":
        raise InputError(
            f"--prometheus-query {options.query}: it says how the raw mode reads counters; --prometheus-mode per-topic "
            "has its own query")
    step = parse_duration(options.step, option="--step")
    if options.mode == "per-topic" and (step % 60 or 86_400 % step):
        raise InputError(
            f"--step {options.step!r}: the per-topic mode needs whole minutes that divide a day (60s, 5m, 15m, 1h …)")
    if options.ca_file:
        from pools.files import read_bytes

        read_bytes(options.ca_file)
    if options.in_flight < 1 or options.retries < 0 or options.timeout_s <= 0:
        raise InputError("--max-in-flight must be at least 1, --retries at least 0 and --timeout positive")
    token = _secret(options.bearer_token_file, options.bearer_token_env, "bearer token")
    password = _secret(options.basic_auth_password_file, options.basic_auth_password_env, "basic-auth password")
    if token and options.basic_auth_user:
        raise InputError("give a bearer token or basic auth, not both")
    if options.basic_auth_user and password is None:
        raise InputError("--basic-auth-user needs --basic-auth-password-file or --basic-auth-password-env")
    return PrometheusSource(
        url=options.url,
        start=start,
        end=end,
        query=options.query,
        step_s=step,
        timeout_s=options.timeout_s,
        in_flight=options.in_flight,
        retries=options.retries,
        bearer_token=token,
        basic_auth=(options.basic_auth_user, password) if options.basic_auth_user and password is not None else None,
        ca_file=options.ca_file,
        insecure=options.insecure,
        names=names or DEFAULT,
        mode=options.mode,
    )


def ingest(options: IngestOptions, *, progress: ProgressReporter = no_progress, spark_console: bool = False):
    """Run the ingest stage; return the `spark_jobs.ingest.IngestResult`.

    Every option is checked before Spark starts or Prometheus is asked. Spark's log and what the JVM prints go
    to ``OUT/spark.log``; with ``spark_console`` they show on standard error too. ``progress`` hears each step
    and the running Spark stages' tasks.

    Raises
    ------
    InputError
        For a bad option or input (exit 2); ``OUT`` is then as it was (removed when this run created it).
    JobError
        For a failure that is not the input's: Spark out of memory or dead, Prometheus unreachable (exit 3).
    """
    with _as_it_was_on_bad_input(Path(options.out)):
        return _ingest(options, progress=progress, spark_console=spark_console)


@contextmanager
def _as_it_was_on_bad_input(out: Path) -> Iterator[None]:
    """On an `InputError`, leave ``out`` as it was: remove the directories this run created (``out`` and any
    missing parent), or in a directory the user had, remove what the run added at its top level and put back
    the Spark log it replaced. Other failures (exit 3) keep ``OUT/spark.log``: their message points to it."""
    from spark_jobs.spark_log import LOG_FILE, release_log

    created = out
    while not created.parent.exists() and created.parent != created:
        created = created.parent
    existed = out.is_dir()
    before = set(os.listdir(out)) if existed else set()
    log, saved = out / LOG_FILE, None
    if existed and log.is_file():
        saved = out / f".{LOG_FILE}.{uuid.uuid4().hex}.before"
        shutil.copy2(log, saved)
    try:
        yield
    except InputError:
        release_log(log)
        if not existed:
            shutil.rmtree(created, ignore_errors=True)
        else:
            if saved is not None:
                os.replace(saved, log)
            for name in sorted(set(os.listdir(out)) - before):
                path = out / name
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink()
        raise
    finally:
        if saved is not None and saved.exists():
            saved.unlink()


def _ingest(options: IngestOptions, *, progress: ProgressReporter, spark_console: bool):
    """`ingest` inside its guard of the output directory."""
    from spark_jobs.ingest_inputs import expand_globs, load_broker_map, partition_counts
    from spark_jobs.metric_names import load_metric_names
    from spark_jobs.metric_names import parse_range_values
    from spark_jobs.session import parse_conf

    check_output(options.out)
    if options.history:
        check_output(options.history)
    make_dir(options.out)  # a file system that refuses it (read-only, /sys) is exit 2 here, not a traceback later
    globs = {
        "--prom": options.prom,
        "--query-range": options.query_range,
        "--telegraf": options.telegraf,
        "--log-dirs": options.log_dirs,
        "--normalized-json": options.normalized_json,
    }
    files = {k: expand_globs(v, option=k) for k, v in globs.items()}
    snap_cluster, counts = partition_counts(options.snapshot)
    bmap = load_broker_map(options.broker_map)
    spark_conf = parse_conf(options.conf)
    try:
        declared = parse_range_values(options.range_values)
    except ValueError as exc:
        raise InputError(f"--range-values {exc}") from None
    names = load_metric_names(options.metric_names)
    source = prometheus_source(options.prometheus, names=names) if options.prometheus else None
    cluster = options.cluster or snap_cluster or "default"
    history = options.history or os.path.join(options.out, "history")

    from spark_jobs.ingest import IngestInputs, IngestParams, check_inputs, run
    from spark_jobs.session import active_session_exists, build_session
    from spark_jobs.spark_log import LOG_FILE
    from spark_jobs.spark_progress import spark_progress

    fetched = None
    if source is not None:
        from spark_jobs.prometheus import fetch

        fetched = fetch(source, history, cluster, progress=progress)
    inputs = IngestInputs(
        *files.values(),
        history=options.history,
        prometheus=fetched.files if fetched else (),
        prometheus_days=fetched.days if fetched else (),
    )
    check_inputs(inputs, options.out)
    quarantine = bool(options.prometheus and options.prometheus.quarantine_unmapped)
    params = IngestParams(cluster, bmap, options.horizon_days, counts, declared, names, quarantine)
    shared = active_session_exists()
    progress("starting Spark")
    try:
        spark = build_session(options.master, options.remote, spark_conf,
                              jvm_log=None if spark_console else os.path.join(options.out, LOG_FILE))
    except Exception as exc:
        from spark_jobs.spark_log import job_failure

        failure = job_failure(exc, None)
        if failure is None:
            raise
        raise failure from None
    stop = not shared
    try:
        with spark_progress(spark, progress) as tracked:
            result = run(spark, inputs, options.out, params, progress=tracked, echo=spark_console)
    except Exception as exc:
        from pools.errors import JobError

        stop = stop and not isinstance(exc, JobError)  # a dead JVM cannot be stopped
        raise
    finally:
        if stop:
            spark.stop()
    if fetched is not None:
        from spark_jobs.prometheus import mark_committed

        from pools.atomic import write_json
        from spark_jobs.ingest import QUALITY_FILE

        mark_committed(fetched, result.prometheus_days)
        result.quality["prometheus"] = {
            "url": source.url if source else None,
            "query": source.query if source else None,
            "mode": source.mode if source else None,
            "requests": fetched.requests,
            "samples_per_s": round(fetched.samples_per_s),
            "days": list(fetched.days),
            "days_committed": sorted(set(fetched.complete) & set(result.prometheus_days)),
            "series": [s.record() for s in fetched.series],
        }
        if fetched.checks is not None:
            result.quality["prometheus"]["per_topic"] = fetched.checks.record()
        write_json(result.out_dir / QUALITY_FILE, result.quality)
    return result
