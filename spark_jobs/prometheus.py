"""Pulling the per-(broker, topic) counters straight from a Prometheus HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics).

What is fetched, per metric and UTC day the history lacks:

``counters`` (the default)
    every stored sample of the raw counters, with its own timestamp: an instant query of a range selector
    (``kafka_server_brokertopicmetrics_bytesin_total{topic!=""}[86400000ms]`` at the day's last millisecond).
    The same samples the exposition text holds, so a missed scrape stays a gap (a ``query_range`` of the raw
    counter fills gaps of up to the lookback delta with stale values) and a re-created meter is seen as
    one; Prometheus' 11,000-points limit does not apply to it.
``increase``
    ``sum by (instance, topic) (increase(<counter>{topic!=""}[<step>]))`` through ``query_range`` at
    ``step``, chunked so no request asks for more than 11,000 points per series. Computed by the server,
    extrapolated to the window edges (non-integer), and blind to a meter re-created within a window.

Each response is streamed to a spool file (a ``query_range``-shaped document) under the history's
``_prometheus/<cluster>/`` folder, then read like a ``--query-range`` export, so one reader serves both. A
day counts as fetched once the whole ingest has committed it (``days.json`` there); a re-run after an
interrupt reuses the spooled responses and asks only for what is missing. Requests run several at a time,
with timeouts, and are retried with exponential backoff on connection errors, 429 and 5xx (``Retry-After``
honoured).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlencode

from pools.errors import InputError, JobError

__all__ = [
    "PrometheusSource",
    "Fetched",
    "fetch",
    "QUERIES",
    "MAX_POINTS",
    "committed_days",
    "SPOOL_DIR",
    "mark_committed",
]

#: Prometheus rejects a range query asking for more points than this per series.
MAX_POINTS = 11_000
#: Where the spool and the list of committed days live, inside the history folder (Spark skips ``_`` folders).
SPOOL_DIR = "_prometheus"
#: The counters pulled, by the jmx_exporter name (`spark_jobs.records.PROM_METRICS`).
COUNTERS = (
    "kafka_server_brokertopicmetrics_bytesin_total",
    "kafka_server_brokertopicmetrics_bytesout_total",
    "kafka_server_brokertopicmetrics_messagesin_total",
)
QUERIES = ("counters", "increase")
_DAY = 86_400
#: Samples before a run of missing days that are fetched too, so its first minute has a predecessor.
_MARGIN_S = 600


@dataclass(frozen=True)
class PrometheusSource:
    """Where and how to pull: the API's base URL, the time range and the request settings."""

    url: str
    start: datetime
    end: datetime
    query: str = "counters"
    step_s: int = 60
    timeout_s: float = 120.0
    in_flight: int = 4
    retries: int = 5
    bearer_token: str | None = None
    basic_auth: tuple[str, str] | None = None
    ca_file: str | None = None
    insecure: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)

    def days(self) -> list[date]:
        """The UTC days the range touches."""
        first, last = self.start.date(), (self.end - timedelta(microseconds=1)).date()
        return [first + timedelta(days=i) for i in range((last - first).days + 1)]


@dataclass(frozen=True)
class Fetched:
    """What `fetch` left for the ingest: the spooled documents, the days they cover and whether each is whole."""

    files: tuple[str, ...]
    days: tuple[str, ...]
    complete: tuple[str, ...]
    spool: Path
    samples_per_s: float
    requests: int


def _spool(history: str, cluster: str) -> Path:
    if "://" in history and not history.startswith("file:"):
        raise InputError(f"--history {history}: a Prometheus pull keeps its spool next to a local history; give a local --history")
    return Path(history.removeprefix("file://").removeprefix("file:")) / SPOOL_DIR / cluster


def committed_days(history: str, cluster: str) -> set[str]:
    """The days of ``cluster`` a previous ingest fetched whole and committed into ``history``."""
    path = _spool(history, cluster) / "days.json"
    if not path.exists():
        return set()
    try:
        return set(json.loads(path.read_text(encoding="utf-8"))["days"])
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{path}: not the list of fetched days poolplan writes; delete it to fetch every day again") from None


def mark_committed(fetched: Fetched) -> None:
    """After the history commit: record the whole days as fetched and drop their spooled responses."""
    path = fetched.spool / "days.json"
    done = sorted(set(json.loads(path.read_text(encoding="utf-8"))["days"]) | set(fetched.complete)) if path.exists() else sorted(fetched.complete)
    from pools.atomic import write_json

    write_json(path, {"days": done})
    for name in fetched.files:
        Path(name).unlink(missing_ok=True)


class _Client:
    """One connection pool, retries with backoff, auth and TLS settings."""

    def __init__(self, source: PrometheusSource) -> None:
        import urllib3

        retry = urllib3.Retry(
            total=source.retries,
            backoff_factor=0.5,
            backoff_max=30,
            status_forcelist=(429, 500, 502, 503, 504),
            allowed_methods=frozenset({"GET", "POST"}),
            respect_retry_after_header=True,
            raise_on_status=False,
        )
        tls: dict[str, object] = {}
        if source.insecure:
            tls["cert_reqs"] = "CERT_NONE"
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        elif source.ca_file:
            tls["ca_certs"] = source.ca_file
        self.pool = urllib3.PoolManager(
            num_pools=4, maxsize=max(1, source.in_flight), retries=retry, timeout=urllib3.Timeout(connect=10, read=source.timeout_s), **tls
        )
        self.base = source.url.rstrip("/")
        headers = {"Accept": "application/json", **source.headers}
        if source.bearer_token:
            headers["Authorization"] = f"Bearer {source.bearer_token}"
        elif source.basic_auth:
            headers.update(urllib3.make_headers(basic_auth=":".join(source.basic_auth)))
        self.headers = headers

    def post(self, path: str, params: Mapping[str, str], target: Path) -> int:
        """POST a form to ``path`` and stream the response into ``target`` (atomically); return its status."""
        import urllib3

        body = urlencode(params)
        headers = {**self.headers, "Content-Type": "application/x-www-form-urlencoded"}
        try:
            response = self.pool.request("POST", self.base + path, body=body, headers=headers, preload_content=False)
        except urllib3.exceptions.MaxRetryError as exc:
            raise JobError(f"Prometheus at {self.base} did not answer {path} after retries: {exc.reason}") from None
        except urllib3.exceptions.HTTPError as exc:
            raise JobError(f"Prometheus at {self.base}: {path} failed: {exc}") from None
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                for chunk in response.stream(1 << 20):
                    fh.write(chunk)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        finally:
            response.release_conn()
        return response.status


@dataclass(frozen=True)
class _Request:
    metric: str
    day: str
    path: str
    params: Mapping[str, str]
    target: Path


def _iso(ts: float) -> str:
    return f"{ts:.3f}"


def _requests(source: PrometheusSource, days: Sequence[date], spool: Path) -> list[_Request]:
    """The requests for ``days`` (plus a margin before each run of consecutive days), one file each."""
    out = []
    wanted = sorted(days)
    for metric in COUNTERS:
        for i, day in enumerate(wanted):
            start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp()
            first_of_run = i == 0 or (day - wanted[i - 1]).days > 1
            begin = start - _MARGIN_S if first_of_run else start
            end = min(start + _DAY, source.end.timestamp())
            begin = max(begin, source.start.timestamp() - _MARGIN_S)
            if end <= begin:
                continue
            name = day.isoformat()
            if source.query == "counters":
                window_ms = int(round((end - begin) * 1000))
                params = {"query": f'{metric}{{topic!=""}}[{window_ms}ms]', "time": _iso(end - 0.001)}
                out.append(_Request(metric, name, "/api/v1/query", params, spool / f"{metric}-{name}.json"))
                continue
            step = source.step_s
            expr = f'sum by (instance, pod, topic) (increase({metric}{{topic!=""}}[{step}s]))'
            base = metric.removesuffix("_total")
            first = math.ceil((begin + step) / step) * step
            chunk = step * (MAX_POINTS - 1)
            k = 0
            while first <= end:
                last = min(first + chunk, end)
                params = {"query": expr, "start": _iso(first), "end": _iso(last), "step": f"{step}s"}
                target = spool / f"instance_topic:{base}:increase{step}s-{name}-{k:03d}.json"
                out.append(_Request(metric, name, "/api/v1/query_range", params, target))
                first, k = last + step, k + 1
    return out


def fetch(
    source: PrometheusSource,
    history: str,
    cluster: str,
    *,
    progress: Callable[[str], None] = lambda _m: None,
) -> Fetched:
    """Fetch what the history lacks into the spool; return the documents to ingest.

    Raises
    ------
    InputError
        When Prometheus rejects a query (the message is its ``error``), or no counter returns any series
        in the whole range.
    JobError
        When Prometheus cannot be reached after the retries.
    """
    if source.query not in QUERIES:
        raise InputError(f"--prometheus-query {source.query!r}: expected one of {', '.join(QUERIES)}")
    spool = _spool(history, cluster)
    done = committed_days(history, cluster)
    now = datetime.now(timezone.utc)
    days = [d for d in source.days() if d.isoformat() not in done]
    complete = tuple(
        d.isoformat()
        for d in days
        if datetime(d.year, d.month, d.day, tzinfo=timezone.utc) + timedelta(days=1) <= min(source.end, now)
        and datetime(d.year, d.month, d.day, tzinfo=timezone.utc) >= source.start
    )
    spool.mkdir(parents=True, exist_ok=True)
    requests = _requests(source, days, spool)
    todo = [r for r in requests if not r.target.exists()]
    client = _Client(source)
    started = time.monotonic()
    fetched = [0]
    lock = threading.Lock()

    def get(request: _Request) -> None:
        status = client.post(request.path, request.params, request.target)
        if status != 200:
            _rejected(request, status, source)
        with lock:
            fetched[0] += 1
            n = fetched[0]
        elapsed = time.monotonic() - started
        eta = elapsed / n * (len(todo) - n)
        progress(f"Prometheus: {n}/{len(todo)} requests, {elapsed:.0f} s, about {eta:.0f} s left")

    if todo:
        progress(f"Prometheus: fetching {len(todo)} responses for {len(days)} day(s) from {source.url}")
        with ThreadPoolExecutor(max_workers=max(1, source.in_flight)) as pool:
            for future in [pool.submit(get, r) for r in todo]:
                future.result()
    elapsed = max(time.monotonic() - started, 1e-9)
    files = tuple(str(r.target) for r in requests)
    samples = _check_series(requests, todo, source)
    return Fetched(files, tuple(d.isoformat() for d in days), complete, spool, samples / elapsed if todo else 0.0, len(todo))


def _rejected(request: _Request, status: int, source: PrometheusSource) -> None:
    text = request.target.read_text(encoding="utf-8", errors="replace")[:2000]
    request.target.unlink(missing_ok=True)
    try:
        doc = json.loads(text)
        detail = f"{doc.get('errorType', '')}: {doc.get('error', '')}".strip(": ")
    except ValueError:
        detail = text.strip().splitlines()[0] if text.strip() else "empty response"
    where = f"{source.url}{request.path} query {request.params['query']!r}"
    if status in (400, 422):
        raise InputError(f"Prometheus rejected {where} (HTTP {status}: {detail})")
    if status in (401, 403):
        raise InputError(f"Prometheus refused {where} (HTTP {status}: {detail}); check --bearer-token-file/--bearer-token-env or --basic-auth")
    raise JobError(f"Prometheus failed {where} (HTTP {status}: {detail}) after {source.retries} retries")


def _check_series(requests: Sequence[_Request], fetched: Sequence[_Request], source: PrometheusSource) -> int:
    """The value pairs in the newly ``fetched`` responses; raise when no response of ``requests`` holds a series."""
    samples = 0
    any_series = False
    for r in requests:
        if not r.target.exists():
            continue
        with r.target.open("rb") as fh:
            while chunk := fh.read(1 << 24):
                any_series = any_series or b'"values"' in chunk
                if r in fetched:
                    samples += chunk.count(b'"]')
        if any_series and not fetched:
            break
    if not any_series:
        raise InputError(
            f"Prometheus at {source.url} returned no series of {', '.join(COUNTERS)} with a topic label between "
            f"{source.start:%Y-%m-%dT%H:%M:%SZ} and {source.end:%Y-%m-%dT%H:%M:%SZ} (is jmx_exporter's per-topic "
            "BrokerTopicMetrics rule scraped, and is the time range right?)"
        )
    return samples
