"""Pulling the per-(broker, topic) meters straight from a Prometheus HTTP API (Prometheus, Thanos, Mimir,
VictoriaMetrics).

**Which series.** The names are found on the server (`discover`): its metric names through the label-values API
(``/api/v1/label/__name__/values``), read by `spark_jobs.metric_names` (every spelling of Kafka's
``BytesIn``/``BytesOut``/``MessagesIn`` meters the common exporters write, or a user's ``--metric-names`` file, and
of the tiered-storage ``RemoteCopyBytesPerSec``/``RemoteFetchBytesPerSec`` meters where the server has them:
`MetricNames.minute_meter`); for each candidate the label-values API says which meters it carries (jmx_exporter's
default export keeps the meter in a ``name`` label) and for how many topics. Per metric one series name is used: a
counter before a rate gauge, then the one with most topics. ``quality.json`` lists every candidate, used or not, and
why.

**What is fetched**, per series name and UTC day the history lacks:

``counters`` (the default), a counter
    every stored sample, with its own timestamp: an instant query of a range selector
    (``{__name__="...",topic!=""}[86400000ms]`` at the day's last millisecond before ``--end``). The same
    samples the exposition text holds, so a missed scrape stays a gap and a re-created meter is seen as one.
``increase``, a counter
    ``sum by (<instance labels>, topic) (increase(<counter>[<step>]))`` through ``query_range``, chunked under
    11,000 points. Computed by the server: it loses bytes (see docs/formats.md for the figures).
a rate gauge (either query)
    ``avg_over_time(<gauge>[<step> - 1ms])`` through ``query_range``: the rate of each step (the scrape inside
    it, never one of the step before), read as its bytes; a step without a scrape stays a gap.

**Per-topic mode** (``--prometheus-mode per-topic``): the server sums each meter per topic and only those
series travel, ``brokers × topics`` counters becoming ``topics`` series; each row is the topic's total over its
brokers (`spark_jobs.history_contract.ALL_BROKERS`). Per series name and day, through ``query_range`` on the grid of
every minute's last millisecond (``…:00:59.999``):

a counter
    ``sum by (topic) (irate(<counter>[119999ms]))``. A window of two minutes less a millisecond holds exactly
    the two scrapes around one scrape step of a 60 s target whatever its scrape offset, in 2.x's closed ranges
    as in 3.x's left-open ones (``[1m]`` holds one scrape: no rate at all; ``[2m]`` holds three when scrapes
    fall on the minute: two steps averaged). Over those two samples ``irate()`` is the step's increase over its
    length, with no extrapolation (``rate()`` extrapolates to the window's edges and, near a new meter's zero,
    cuts it short: a step too low); a reset in the step counts the new meter's value, as the raw rules do. The
    value at ``m + 119.999 s`` is the step that starts in minute ``m``: the minute the raw path credits it to,
    so a minute where every series has its two scrapes is the raw path's sum exactly. What it cannot see is
    pulled beside it, for bytes-in, as sparse series: ``count by (topic) (count_over_time(<counter>[119999ms])
    < 2)`` (a series with one scrape in the window: twice for a missed scrape, whose two minutes' bytes the sum
    lacks; once for a meter's first scrape, whose bytes since its creation it lacks; once after its last) and
    ``sum by (topic) (resets(<counter>[119999ms])) > 0``; ``quality.json`` reports both.
a team's recording rule (``topic:<meter>:rate1m``, `MetricNames.recorded`), or a rate gauge
    ``sum by (topic) (avg_over_time(<series>[59999ms]))``: the rate recorded in each minute, as it is. When its
    series carry no label but the name and the topic (``/api/v1/labels``), each topic is one series and
    ``avg_over_time(<series>[59999ms])`` is the same answer, without the server regrouping every series at every
    step (three quarters of its time on 2,000 topics).
a step longer than 60 s (``--step 5m``)
    peaks kept: ``max_over_time(<the one-minute sum, offset 1ms>[<step> - 1ms:1m])``, the highest one-minute
    rate of the step, stored as the step's rate (a step's minutes are the ones one minute before it: a
    subquery is evaluated at whole minutes).

**The spool.** Each response is streamed to a file under the history's ``_prometheus/<cluster>/``, checked
to be a complete ``success`` matrix document (by its first and last bytes when it is in the server's own compact
layout, a truncated transfer being the HTTP client's error; else element by element) and only then given its name,
which is a digest of what was asked (server, path, query, range, step), so a response is reused only for the same
question and a failed or foreign one never. A day counts as fetched once the ingest has committed rows of it
(``days.json``, per server and query); a re-run after an interrupt reuses the checked responses and asks only for
the rest.

**Faults.** Requests run several at a time. A refused connection (server down or gone mid-pull) stops the pull
at once: nothing more is sent. Errors, 429 and 5xx are retried with exponential backoff (``Retry-After``
honoured) while the request is younger than `RETRY_BUDGET_S`. An answer that is HTML, ``404`` or ``501`` means the
URL is not the API (exit 2); any other answer that is not the API's is a failure of the server (exit 3).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from pools.atomic import make_dir
from pools.errors import InputError, JobError
from pools.progress import ProgressReporter, no_progress
from spark_jobs.metric_names import COUNTER, DEFAULT, METRICS, RATE, REMOTE_METRICS, MetricNames, closest

__all__ = [
    "PrometheusSource",
    "Fetched",
    "Series",
    "fetch",
    "discover",
    "QUERIES",
    "MAX_POINTS",
    "committed_days",
    "SPOOL_DIR",
    "mark_committed",
    "RETRY_BUDGET_S",
    "MODES",
    "PerTopicChecks",
]

#: Prometheus rejects a range query asking for more points than this per series.
MAX_POINTS = 11_000
#: Where the spool and the list of committed days live, inside the history folder (Spark skips ``_`` folders).
SPOOL_DIR = "_prometheus"
QUERIES = ("counters", "increase")
#: ``--prometheus-mode``: every per-(broker, topic) series as `QUERIES` says, or the server's per-topic sums.
MODES = ("raw", "per-topic")
#: A per-topic rate window: the two scrapes around one step of a 60 s target, never three (see the module doc).
_STEP_WINDOW_MS = 119_999
#: The (series, minute) values a per-topic request of counters may make the server hold at once: under
#: Prometheus' default ``--query.max-samples`` (50 M) with room for other queries (R100: 100-minute requests).
_INNER_SAMPLES = 20_000_000
#: Recording rules with a window up to this are read before the counters in the per-topic mode.
_SHORT_RULE_S = 120
#: Seconds after its start a request is no longer retried (errors, 429, 5xx), whatever ``--retries`` allows.
RETRY_BUDGET_S = 60.0
_DAY = 86_400
#: Samples before a run of missing days that are fetched too, so its first minute has a predecessor.
_MARGIN_S = 600
#: The file name of a checked response: ``<metric>-<day>-<digest>.json``.
_DIGEST_CHARS = 20
_log = logging.getLogger(__name__)
#: Prefixes of the names a Prometheus server and Go programs export about themselves: never a close name.
#: The meters pulled: Kafka's per-topic meters, then the tiered-storage ones (none needed: a cluster without tiered
#: storage has none).
_PULLED = (*METRICS, *REMOTE_METRICS)
_SERVER_OWN = ("go_", "process_", "prometheus_", "promhttp_", "scrape_", "net_conntrack_")


@dataclass(frozen=True)
class PrometheusSource:
    """Where and how to pull: the API's base URL, the time range (``end`` exclusive) and the request settings."""

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
    names: MetricNames = DEFAULT
    mode: str = "raw"

    def days(self) -> list[date]:
        """The UTC days the range touches."""
        first, last = self.start.date(), (self.end - timedelta(microseconds=1)).date()
        return [first + timedelta(days=i) for i in range((last - first).days + 1)]

    def identity(self) -> str:
        """What makes two pulls give the same rows: the server, the query, the step and the names read by."""
        names = self.names
        key = [self.url.rstrip("/"), self.query, self.step_s, sorted(names.names.items()), names.topic_label,
            names.instance_labels, sorted(names.select.items())]
        if self.mode != "raw":  # the raw pulls of earlier versions keep their identity
            key = [*key[:1], self.mode, *key[2:]]
        return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:_DIGEST_CHARS]


@dataclass(frozen=True)
class Series:
    """A candidate series name on the server: the metric it is, counter or rate, the matchers that select it,
    how many topics it has in the range, and whether it is used and why."""

    metric: str
    type: str
    name: str
    match: Mapping[str, str]
    topics: int
    used: bool = False
    why: str = ""
    #: A recording rule's window (``type`` ``rate`` or ``increase``, summed per topic already), else 0.
    window_s: float = 0
    #: Of a counter pulled per topic: the instances carrying it (its series are at most ``topics × instances``).
    instances: int = 0
    #: Each topic is one series in the range, labelled by the topic alone (a recording rule summed per topic):
    #: the per-topic query reads it without the server's ``sum by (topic)`` (`per_topic_query`).
    one_per_topic: bool = False

    def record(self) -> dict[str, Any]:
        out = {"metric": self.metric, "name": self.name, "match": dict(self.match), "type": self.type,
            "topics": self.topics,
               "used": self.used, "why": self.why}
        return {**out, "recording_rule_window_s": self.window_s} if self.window_s else out


@dataclass(frozen=True)
class Fetched:
    """What `fetch` left for the ingest: the spooled documents, the days they cover, the days that are whole,
    the series found (used or not) and the pull's figures."""

    files: tuple[str, ...]
    days: tuple[str, ...]
    complete: tuple[str, ...]
    spool: Path
    samples_per_s: float
    requests: int
    series: tuple[Series, ...] = ()
    identity: str = ""
    #: What a per-topic pull of counters could not see in the days fetched (None: no counter pulled per topic).
    checks: PerTopicChecks | None = None


@dataclass(frozen=True)
class PerTopicChecks:
    """What a per-topic pull of counters cannot see, per topic, from the sparse check series: ``unseen``
    series-minutes (one scrape in the window: the sum lacks that series' step) and counter ``resets``."""

    unseen: Mapping[str, int]
    resets: Mapping[str, int]

    def record(self) -> dict[str, Any]:
        return {
            "unseen_series_minutes": sum(self.unseen.values()),
            "counter_resets": sum(self.resets.values()),
            "unseen_by_topic": {t: self.unseen[t] for t in sorted(self.unseen)},
            "resets_by_topic": {t: self.resets[t] for t in sorted(self.resets)},
            "cannot_see": "a series-minute with one scrape in its two-minute window is missing from the topic's sum: "
                          "a missed scrape (two minutes of that series' bytes) or a meter's first scrape (its bytes "
                          "since it was created); resets are counted as the raw path counts them",
        }


def _spool(history: str, cluster: str) -> Path:
    if "://" in history and not history.startswith("file:"):
        raise InputError(
            f"--history {history}: a Prometheus pull keeps its spool next to a local history; give a local --history")
    return Path(history.removeprefix("file://").removeprefix("file:")) / SPOOL_DIR / cluster


def _read_days(path: Path) -> dict[str, list[str]]:
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        pulls = doc.get("pulls", {}) if "days" not in doc else {}  # the unkeyed list of earlier versions: fetch again
        if not isinstance(pulls, dict) or not all(isinstance(v, list) for v in pulls.values()):
            raise TypeError
        return pulls
    except (ValueError, TypeError, AttributeError):
        raise InputError(
            f"{path}: not the list of fetched days poolplan writes; delete it to fetch every day again") from None


def committed_days(history: str, cluster: str, identity: str) -> set[str]:
    """The days of ``cluster`` a previous pull of the same `PrometheusSource.identity` committed into ``history``."""
    return set(_read_days(_spool(history, cluster) / "days.json").get(identity, []))


def mark_committed(fetched: Fetched, usable: Sequence[str]) -> None:
    """After the history commit: record the whole days that gave ``usable`` rows as fetched, and drop every
    response in the spool (the history holds their rows now)."""
    from pools.atomic import write_json

    path = fetched.spool / "days.json"
    pulls = _read_days(path)
    pulls[fetched.identity] = sorted(set(pulls.get(fetched.identity, [])) | (set(fetched.complete) & set(usable)))
    write_json(path, {"pulls": {k: pulls[k] for k in sorted(pulls)}})
    for response in fetched.spool.glob("*.json"):  # this pull's, and any other pull's left by a failure
        if response.name != "days.json":
            response.unlink(missing_ok=True)


class _Stop(Exception):
    """The pull was stopped by another request's failure."""


class _Client:
    """One connection pool, auth and TLS settings, retries within `RETRY_BUDGET_S`, and the pull's stop flag."""

    def __init__(self, source: PrometheusSource) -> None:
        import urllib3

        tls: dict[str, object] = {}
        if source.insecure:
            tls["cert_reqs"] = "CERT_NONE"
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        elif source.ca_file:
            tls["ca_certs"] = source.ca_file
        self.pool = urllib3.PoolManager(
            num_pools=4, maxsize=max(1, source.in_flight), retries=False,
            timeout=urllib3.Timeout(connect=10, read=source.timeout_s), **tls
        )
        self.base = source.url.rstrip("/")
        self.retries = source.retries
        headers = {"Accept": "application/json", **source.headers}
        if source.bearer_token:
            headers["Authorization"] = f"Bearer {source.bearer_token}"
        elif source.basic_auth:
            headers.update(urllib3.make_headers(basic_auth=":".join(source.basic_auth)))
        self.headers = headers
        self.stopped = threading.Event()

    def _send(self, method: str, path: str, params: Mapping[str, str] | Sequence[tuple[str, str]]):
        """The response (not read yet) of a request, after the retries it is allowed; a final status as is."""
        import urllib3

        body = urlencode(params)
        started = time.monotonic()
        attempt = 0
        while True:
            wait: float | None = None
            if self.stopped.is_set():
                raise _Stop
            try:
                if method == "GET":
                    response = self.pool.request("GET", f"{self.base}{path}?{body}", headers=self.headers,
                        preload_content=False)
                else:
                    headers = {**self.headers, "Content-Type": "application/x-www-form-urlencoded"}
                    response = self.pool.request("POST", self.base + path, body=body, headers=headers,
                        preload_content=False)
            except (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError) as exc:
                self.stopped.set()
                raise JobError(
                    f"Prometheus at {self.base} cannot be reached ({_reason(exc)}): is it running, and is the URL "
                    "right?") from None
            except urllib3.exceptions.HTTPError as exc:
                failure = f"stopped answering {path} ({_reason(exc)})"
            else:
                if response.status not in (429, 500, 502, 503, 504):
                    return response
                wait = _retry_after(response.headers.get("Retry-After"))
                failure = f"answered {path} with HTTP {response.status}: {_detail(response.read(2000))}"
                response.release_conn()
            now = time.monotonic()
            delay = wait if wait is not None else min(0.5 * 2**attempt, 10.0)
            if attempt >= self.retries or now + delay - started > RETRY_BUDGET_S:
                self.stopped.set()
                raise JobError(
                    f"Prometheus at {self.base} {failure}; gave up after {attempt + 1} attempt(s) in "
                    f"{now - started:.0f} s")
            attempt += 1
            time.sleep(delay)

    def get_json(self, path: str, params: Sequence[tuple[str, str]]) -> Any:
        """The ``data`` of a small API answer (label values), checked to be the API's."""
        response = self._send("GET", path, params)
        try:
            text = response.read()
        finally:
            response.release_conn()
        self._check_status(response, text, path, dict(params).get("match[]", ""))
        doc = _api_document(text)
        if doc is None or doc.get("status") != "success" or not isinstance(doc.get("data"), list):
            raise JobError(
                f"Prometheus at {self.base} answered {path} with something that is not the Prometheus API: "
                f"{_detail(text)}")
        return doc["data"]

    def fetch(self, path: str, params: Mapping[str, str], target: Path) -> int:
        """POST a query, stream the answer into ``target`` while checking it is a whole ``success`` matrix; return
        its value pairs. The file gets its name only once checked (`_whole_matrix`)."""
        import urllib3

        response = self._send("POST", path, params)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                if response.status != 200 or not _is_json(response):
                    head = response.read(4000)
                    self._check_status(response, head, path, params.get("query", ""))
                    raise JobError(
                        f"Prometheus at {self.base} answered {path} with something that is not the Prometheus API: "
                        f"{_detail(head)}")
                ends = _Ends()
                try:
                    for chunk in response.stream(1 << 20):
                        if self.stopped.is_set():
                            raise _Stop
                        fh.write(chunk)
                        ends.feed(chunk)
                except urllib3.exceptions.HTTPError as exc:
                    self.stopped.set()
                    raise JobError(
                        f"Prometheus at {self.base} stopped answering {path} mid-answer ({_reason(exc)})") from None
            pairs = ends.pairs if ends.canonical() else self._whole_matrix(Path(tmp), path)
            os.replace(tmp, target)
            return pairs
        finally:
            response.release_conn()
            Path(tmp).unlink(missing_ok=True)

    def _whole_matrix(self, file: Path, path: str) -> int:
        """The value pairs of the answer in ``file`` after checking its whole structure (`spark_jobs.json_stream`):
        a complete ``success`` matrix document, whatever its layout."""
        from spark_jobs.json_stream import BROKEN, END, SERIES, read_chunks, split_result

        pairs, end = 0, None
        with file.open("rb") as fh:
            for kind, item in split_result(read_chunks(fh)):
                if kind == SERIES:
                    pairs += item.count(b'"]')
                elif kind == END:
                    end = item
                elif kind == BROKEN:
                    raise JobError(
                        f"Prometheus at {self.base} sent a broken answer to {path} (did it stop mid-answer?): "
                        f"{item[:200]}")
        data = end.get("data") if isinstance(end, dict) else None
        if (not isinstance(end, dict) or end.get("status") != "success"
                or not isinstance(data, dict) or data.get("resultType") != "matrix"):
            raise JobError(
                f"Prometheus at {self.base} answered {path} with something that is not a range result: "
                f"{str(end)[:200]}")
        return pairs

    def _check_status(self, response, text: bytes, path: str, query: str) -> None:
        """Raise for an answer that is not a success: exit 2 for a wrong URL or a rejected query, else 3."""
        status = response.status
        where = f"Prometheus at {self.base}"
        html = not _is_json(response) and b"<html" in text[:2000].lower()
        if status in (404, 405, 501) or html:
            self.stopped.set()
            raise InputError(
                f"--prometheus {self.base}: {path} answered HTTP {status}{' with an HTML page' if html else ''}, not "
                "the Prometheus HTTP API (give the server's base URL, e.g. http://host:9090, or Thanos/Mimir's "
                "Prometheus API prefix)"
            )
        if status in (400, 422):
            self.stopped.set()
            raise InputError(f"{where} rejected {path} query {query!r} (HTTP {status}: {_detail(text)})")
        if status in (401, 403):
            self.stopped.set()
            raise InputError(
                f"{where} refused {path} (HTTP {status}: {_detail(text)}); check "
                "--bearer-token-file/--bearer-token-env or --basic-auth")
        if status != 200:
            self.stopped.set()
            raise JobError(f"{where} failed {path} (HTTP {status}: {_detail(text)})")


#: How Prometheus (and the servers sharing its API code) begin and end a range result, compact: a document that
#: begins with `_HEAD` and ends with `_TAIL` (its last series' values closed, or an empty result) is a whole one.
_HEAD = b'{"status":"success","data":{"resultType":"matrix","result":['
_TAIL = re.compile(rb'(?:\]\]\}|"result":\[)\]\}\}\s*$')


class _Ends:
    """What `_Client.fetch` keeps of an answer as it streams by: its head, its last bytes and its value pairs
    (each pair's value string closes with ``"]``), at the cost of a byte count per chunk.

    >>> ends = _Ends()
    >>> for part in (_HEAD + b'{"metric":{"topic":"a"},"values":[[1,"2"', b'],[61,"3"]]}]}}'):
    ...     ends.feed(part)
    >>> ends.canonical(), ends.pairs
    (True, 2)
    >>> ends = _Ends(); ends.feed(_HEAD + b'{"metric":{"topic":"a"},"values":[[1,"2"]]}')  # cut off after a series
    >>> ends.canonical()
    False
    """

    def __init__(self) -> None:
        self.head = b""
        self.tail = b""
        self.pairs = 0

    def feed(self, chunk: bytes) -> None:
        if len(self.head) < len(_HEAD):
            self.head += chunk[: len(_HEAD) - len(self.head)]
        self.pairs += chunk.count(b'"]') + (self.tail.endswith(b'"') and chunk.startswith(b"]"))
        self.tail = (self.tail + chunk[-64:])[-64:]

    def canonical(self) -> bool:
        """Whether the answer is a whole ``success`` matrix in the servers' own compact layout (else it is checked
        element by element: `_Client._whole_matrix`)."""
        return self.head == _HEAD and _TAIL.search(self.tail) is not None


def _is_json(response) -> bool:
    return "json" in (response.headers.get("Content-Type") or "").lower()


def _api_document(text: bytes) -> dict[str, Any] | None:
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _detail(text: bytes) -> str:
    doc = _api_document(text)
    if doc is not None and ("error" in doc or "errorType" in doc):
        return f"{doc.get('errorType', '')}: {doc.get('error', '')}".strip(": ")
    line = text.decode("utf-8", "replace").strip().splitlines()
    return line[0][:200] if line else "empty answer"


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    text = str(reason)
    return text.split(": ", 1)[-1] if "Errno" in text else text


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _iso(ts: float) -> str:
    return f"{ts:.3f}"


def discover(client: _Client, source: PrometheusSource) -> tuple[Series, ...]:
    """The candidate series on the server in the range, each marked used or not with the reason.

    Raises
    ------
    InputError
        When no candidate of ``bytes_in`` has a per-topic series: the message lists the closest names.
    """
    names = source.names
    span = [("start", _iso(source.start.timestamp())), ("end", _iso(source.end.timestamp()))]
    selector = "{" + ",".join(f'{k}="{v}"' for k, v in sorted(names.select.items())) + "}"
    select = [("match[]", selector)] if names.select else []
    all_names = sorted(client.get_json("/api/v1/label/__name__/values", [*span, *select]))
    found: list[Series] = []
    for name in all_names:
        if not names.candidate(name):
            continue
        label_sets: list[dict[str, str]] = [{}]
        for label in names.meter_label_values(name):
            values = client.get_json(f"/api/v1/label/{label}/values",
                [*span, ("match[]", "{" + names.matchers({"__name__": name}) + "}")])
            label_sets = [{label: v} for v in sorted(values) if names.minute_meter(name, {label: v})]
            if label_sets:
                break
        for extra in label_sets:
            meter = names.minute_meter(name, extra)
            if meter is None or meter.metric not in _PULLED:
                continue
            match = {"__name__": name, **extra}
            topics = client.get_json(f"/api/v1/label/{names.topic_label}/values",
                [*span, ("match[]", "{" + names.matchers(match) + "}")])
            found.append(Series(meter.metric, meter.type, name, match, len(topics)))
    if source.mode == "per-topic":  # a team's recording rules summed per topic (never for a metric the user named)
        for name in all_names:
            rule = names.recorded(name)
            if rule is None or not rule.per_topic or rule.metric in names.names:
                continue
            topics = client.get_json(f"/api/v1/label/{names.topic_label}/values",
                [*span, ("match[]", "{" + names.matchers({"__name__": name}) + "}")])
            found.append(
                Series(rule.metric, rule.operation, name, {"__name__": name}, len(topics), window_s=rule.window_s))
        found = [_with_instances(client, s, names, span) if s.type == COUNTER and s.topics else s for s in found]
    chosen = []
    for metric in _PULLED:
        ranked = sorted((s for s in found if s.metric == metric and s.topics),
            key=lambda s: (_rank(s), -s.topics, s.name, sorted(s.match.items())))
        for i, s in enumerate(ranked):
            used = ranked[0]
            why = _why(s, source) if i == 0 else (
                f"another spelling of {metric}: {used.name} is used ({_why(used, source).split(':')[0]})")
            chosen.append(replace(s, used=i == 0, why=why))
        chosen += [Series(s.metric, s.type, s.name, s.match, 0, False, "no series with a topic label in the range")
            for s in found if s.metric == metric and not s.topics]
    if source.mode == "per-topic":
        chosen = [_with_one_per_topic(client, s, names, span) if s.used and s.type != COUNTER else s for s in chosen]
    if not any(s.used and s.metric == "bytes_in" for s in chosen):
        default = "kafka_server_brokertopicmetrics_bytesin_total"
        wanted = names.names["bytes_in"][0] if "bytes_in" in names.names else default
        known = all_names or sorted(client.get_json("/api/v1/label/__name__/values", select))  # the names of any time
        near = closest(wanted, [n for n in known if not n.startswith(_SERVER_OWN)] or known)
        where = (f" with {names.matchers()}" if names.select or names.topic_label != "topic"
                 else f" with a {names.topic_label} label")
        raise InputError(
            f"Prometheus at {client.base} has no series of Kafka's BytesInPerSec meter{where} between "
            f"{source.start:%Y-%m-%dT%H:%M:%SZ} and {source.end:%Y-%m-%dT%H:%M:%SZ}; closest names it has: "
            f"{', '.join(near) if near else 'none'} (name yours with --metric-names FILE, or check the time range)"
        )
    return tuple(chosen)


def _with_instances(client: _Client, series: Series, names: MetricNames, span: Sequence[tuple[str, str]]) -> Series:
    """``series`` with the number of instances carrying it (by the first instance label that has values)."""
    for label in names.instance_labels:
        values = client.get_json(f"/api/v1/label/{label}/values",
            [*span, ("match[]", "{" + names.matchers(series.match) + "}")])
        if values:
            return replace(series, instances=len(values))
    return series


def _with_one_per_topic(client: _Client, series: Series, names: MetricNames, span: Sequence[tuple[str, str]]) -> Series:
    """``series`` marked `Series.one_per_topic` when its series in the range carry no label but the name and the
    topic (``/api/v1/labels``, an index look-up): the name being fixed, each topic is then one series, and
    ``sum by (topic)`` of it is itself, value for value and label for label. Skipping that per-step regrouping
    saves about three quarters of the server's time on R100's 2,000 topics."""
    labels = client.get_json("/api/v1/labels", [("match[]", "{" + names.matchers(series.match) + "}"), *span])
    return replace(series, one_per_topic=set(labels) == {"__name__", names.topic_label})


def _rank(series: Series) -> int:
    """Which series of a meter is read first: a short recording rule (per-topic mode), a counter, a longer
    recording rule, a rate gauge."""
    if series.window_s:
        return 0 if series.window_s <= _SHORT_RULE_S else 2
    return 1 if series.type == COUNTER else 3


def _why(series: Series, source: PrometheusSource) -> str:
    """Why ``series`` is the one read of its meter (for ``quality.json``)."""
    if series.window_s:
        window = f"{series.window_s:g} s"
        if series.window_s <= _SHORT_RULE_S:
            return (f"a recording rule summed per topic ({series.type} over {window}): read as it is, "
                    "no per-broker series")
        return (f"a recording rule summed per topic, no counter of the meter on the server: less exact "
                f"({series.type} over {window} flattens shorter peaks)")
    if series.type == COUNTER:
        if source.mode == "per-topic":
            return ("a counter of the meter: summed per topic by the server, each scrape step's rate exactly "
                    "(what it cannot see: quality.json)")
        return "a counter of the meter: converted exactly"
    return (f"no counter of the meter on the server: its rate gauge, read as the rate of each {source.step_s} s step "
            "(less exact: a one-minute EWMA flattens shorter peaks)")


@dataclass(frozen=True)
class _Request:
    day: str
    path: str
    params: Mapping[str, str]
    target: Path
    #: A per-topic check series (`PerTopicChecks`: ``unseen`` or ``resets``), not rows; else empty.
    check: str = ""


def _requests(source: PrometheusSource, days: Sequence[date], spool: Path, series: Sequence[Series]) -> list[_Request]:
    """The requests for ``days`` (plus a margin before each run of consecutive days), one file each, named by
    a digest of the server, path and parameters."""
    out = []
    wanted = sorted(days)
    names = source.names
    by = ", ".join(dict.fromkeys((*names.instance_labels, names.topic_label)))
    if source.mode == "per-topic":
        return _per_topic_requests(source, wanted, spool, series)
    for s in (s for s in series if s.used):
        selector = "{" + names.matchers(s.match) + "}"
        # the file name's metric prefix says what a result without __name__ is (`spark_jobs.query_range`)
        base = s.name if s.metric in names.names else f"kafka_server_brokertopicmetrics_{s.metric.replace('_', '')}"
        for i, day in enumerate(wanted):
            start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp()
            first_of_run = i == 0 or (day - wanted[i - 1]).days > 1
            begin = start - _MARGIN_S if first_of_run else start
            end = min(start + _DAY, source.end.timestamp())
            begin = max(begin, source.start.timestamp() - _MARGIN_S)
            if end <= begin:
                continue
            name = day.isoformat()
            if s.type == COUNTER and source.query == "counters":
                window_ms = int(round((end - begin) * 1000))
                params = {"query": f"{selector}[{window_ms}ms]", "time": _iso(end - 0.001)}
                out.append(_request(source, name, "/api/v1/query", params, spool, s.metric))
                continue
            step = source.step_s
            if s.type == COUNTER:
                expr = f"sum by ({by}) (increase({selector}[{step}s]))"
                prefix = f"instance_topic:{base}:increase{step}s"
            else:
                # (t - step, t]: one scrape per step, whether the server's ranges are closed (2.x) or left-open (3.x)
                expr, prefix = f"avg_over_time({selector}[{step * 1000 - 1}ms])", f"instance_topic:{base}:rate{step}s"
            first = -(-(begin + step) // step) * step
            chunk = step * (MAX_POINTS - 1)
            while first <= end:
                last = min(first + chunk, end)
                params = {"query": expr, "start": _iso(first), "end": _iso(last), "step": f"{step}s"}
                out.append(_request(source, name, "/api/v1/query_range", params, spool, prefix))
                first = last + step
    return out


def per_topic_query(series: Series, names: MetricNames, step_s: int) -> str:
    """The PromQL of a per-topic pull of ``series`` at a step of ``step_s`` (see the module doc): each value is a
    topic's rate in bytes (or messages) per second, summed over its brokers.

    >>> s = Series("bytes_in", "counter", "x_total", {"__name__": "x_total"}, 1)
    >>> per_topic_query(s, DEFAULT, 60)
    'sum by (topic) (irate({__name__="x_total",topic!=""}[119999ms]))'
    >>> per_topic_query(s, DEFAULT, 300)
    'max_over_time(sum by (topic) (irate({__name__="x_total",topic!=""}[119999ms] offset 1ms))[299999ms:1m])'
    >>> rule = Series("bytes_in", "rate", "topic:x:rate1m", {"__name__": "topic:x:rate1m"}, 1, window_s=60,
    ...               one_per_topic=True)
    >>> per_topic_query(rule, DEFAULT, 60)
    'avg_over_time({__name__="topic:x:rate1m",topic!=""}[59999ms])'
    """
    selector = "{" + names.matchers(series.match) + "}"
    offset = " offset 1ms" if step_s > 60 else ""
    if series.type == COUNTER:
        inner = f"irate({selector}[{_STEP_WINDOW_MS}ms]{offset})"
    else:  # a rate gauge or a recording rule: its value in each minute
        inner = f"avg_over_time({selector}[59999ms]{offset})"
        if series.type == "increase":
            inner = f"{inner} / {series.window_s:g}"
    expr = inner if series.one_per_topic else f"sum by ({names.topic_label}) ({inner})"
    return expr if step_s <= 60 else f"max_over_time({expr}[{step_s * 1000 - 1}ms:1m])"


def _per_topic_requests(source: PrometheusSource, days: Sequence[date], spool: Path,
    series: Sequence[Series]) -> list[_Request]:
    """One ``query_range`` per used series and day (a day's points are far under `MAX_POINTS`), on the grid
    whose value at ``t`` is the rate of the minute (or step) that starts ``step + 60 s`` before ``t + 1 ms``;
    for bytes-in counters the two sparse check series beside it."""
    names, step = source.names, source.step_s
    out = []
    for s in (s for s in series if s.used):
        selector = "{" + names.matchers(s.match) + "}"
        # a built-in spelling: the level:metric:operation convention
        base = f"kafka_server_brokertopicmetrics_{s.metric.replace('_', '')}"
        queries = [(per_topic_query(s, names, step), f"{names.topic_label}:{base}:rate{step}s", "")]
        if s.type == COUNTER and s.metric == "bytes_in":
            window = f"{selector}[{_STEP_WINDOW_MS}ms]"
            queries += [
                (f"count by ({names.topic_label}) (count_over_time({window}) < 2)", f"check:{base}:unseen", "unseen"),
                (f"sum by ({names.topic_label}) (resets({window})) > 0", f"check:{base}:resets", "resets"),
            ]
        # the server holds every (series, minute) of the inner irate() at once: keep it under its --query.max-samples
        per_request = max(1, _INNER_SAMPLES // max(1, s.topics * s.instances)) if s.type == COUNTER else MAX_POINTS
        for day in days:
            midnight = datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp()
            for expr, prefix, check in queries:
                grid = 60 if check else step  # the checks count every minute
                # the first whole step
                block = midnight + -(-max(0.0, source.start.timestamp() - midnight) // grid) * grid
                first = block + grid + 59.999
                last = min(midnight + _DAY + 59.999, source.end.timestamp() - 0.001)
                points = max(1, min(per_request * 60 // grid, MAX_POINTS))
                while first <= last:
                    end = first + min((last - first) // grid, points - 1) * grid
                    params = {"query": expr, "start": _iso(first), "end": _iso(end), "step": f"{grid}s"}
                    out.append(
                        replace(_request(source, day.isoformat(), "/api/v1/query_range", params, spool, prefix),
                            check=check))
                    first = end + grid
    return out


def _request(source: PrometheusSource, day: str, path: str, params: Mapping[str, str], spool: Path,
    prefix: str) -> _Request:
    key = json.dumps([source.url.rstrip("/"), path, sorted(params.items())]).encode()
    digest = hashlib.sha256(key).hexdigest()[:_DIGEST_CHARS]
    return _Request(day, path, params, spool / f"{prefix}-{day}-{digest}.json")


def _clean_spool(spool: Path) -> None:
    """Remove what a checked response is not: temporary parts and the unkeyed files of earlier versions."""
    for path in spool.iterdir():
        if path.name == "days.json":
            continue
        digest = path.name.removesuffix(".json").rsplit("-", 1)[-1]
        checked = path.suffix == ".json" and not path.name.startswith(".") and len(digest) == _DIGEST_CHARS
        if not checked and path.is_file():
            path.unlink(missing_ok=True)


def fetch(
    source: PrometheusSource,
    history: str,
    cluster: str,
    *,
    progress: ProgressReporter = no_progress,
) -> Fetched:
    """Find the series (`discover`), fetch what the history lacks into the spool; return the documents to ingest.

    Raises
    ------
    InputError
        For a URL that is not the Prometheus API, a rejected query, refused credentials or no series found.
    JobError
        When Prometheus cannot be reached, stops answering or answers something that is not its API.
    """
    if source.query not in QUERIES:
        raise InputError(f"--prometheus-query {source.query!r}: expected one of {', '.join(QUERIES)}")
    if source.mode not in MODES:
        raise InputError(f"--prometheus-mode {source.mode!r}: expected one of {', '.join(MODES)}")
    spool = _spool(history, cluster)
    identity = source.identity()
    done = committed_days(history, cluster, identity)
    now = datetime.now(timezone.utc)
    days = [d for d in source.days() if d.isoformat() not in done]
    complete = tuple(
        d.isoformat()
        for d in days
        if datetime(d.year, d.month, d.day, tzinfo=timezone.utc) + timedelta(days=1) <= min(source.end, now)
        and datetime(d.year, d.month, d.day, tzinfo=timezone.utc) >= source.start
    )
    client = _Client(source)
    progress(f"Prometheus: finding Kafka's series on {source.url}")
    series = discover(client, source)
    for s in series:
        if s.used and s.type == RATE:
            _log.warning("Prometheus: %s has no counter on %s; reading its rate gauge %s (less exact)", s.metric,
                source.url, s.name)
    make_dir(spool)
    _clean_spool(spool)
    requests = _requests(source, days, spool, series)
    todo = [r for r in requests if not r.target.exists()]
    started = time.monotonic()
    pairs = [0, 0]
    lock = threading.Lock()
    step = f"Prometheus: fetching {len(todo)} responses for {len(days)} day(s) from {source.url}"

    def get(request: _Request) -> None:
        n = client.fetch(request.path, request.params, request.target)
        with lock:
            pairs[0] += n
            pairs[1] += 1
            done = pairs[1]
        progress(step, done=done, total=len(todo), unit="requests")

    if todo:
        progress(step, done=0, total=len(todo), unit="requests")
        with ThreadPoolExecutor(max_workers=max(1, source.in_flight)) as pool:
            futures = [pool.submit(get, r) for r in todo]
            failure: BaseException | None = None
            for future in futures:
                try:
                    future.result()
                except _Stop:
                    continue
                except BaseException as exc:  # the first failure is reported; the rest were stopped by it
                    if failure is None:
                        failure = exc
                        client.stopped.set()
                        for other in futures:
                            other.cancel()
            if failure is not None:
                raise failure
    elapsed = max(time.monotonic() - started, 1e-9)
    files = tuple(str(r.target) for r in requests if not r.check)
    checks = _read_checks([r for r in requests if r.check]) if any(r.check for r in requests) else None
    return Fetched(files, tuple(d.isoformat() for d in days), complete, spool, pairs[0] / elapsed if todo else 0.0,
        len(todo), series, identity,
                   checks)


def _read_checks(requests: Sequence[_Request]) -> PerTopicChecks:
    """Sum the sparse check series of a per-topic pull per topic (each value a count of one minute)."""
    totals: dict[str, dict[str, int]] = {"unseen": {}, "resets": {}}
    for request in requests:
        doc = json.loads(request.target.read_bytes())
        counts = totals[request.check]
        for series in doc["data"]["result"]:
            topic = next(iter(series["metric"].values()), "")  # `by (topic)`: the one label
            counts[topic] = counts.get(topic, 0) + int(sum(round(float(v)) for _, v in series["values"]))
    return PerTopicChecks(totals["unseen"], totals["resets"])
