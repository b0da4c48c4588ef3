"""Which Prometheus series are Kafka's per-topic meters: the one home of metric-name spellings and label names.

Kafka's ``kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=<t>`` meter reaches Prometheus under
whatever name the exporter's rules make of it. Recognised here (case-insensitively, underscores ignored), for
``BytesIn``, ``BytesOut`` and ``MessagesIn``:

=====================================================================  ===========================================
``kafka_server_BrokerTopicMetrics_BytesIn_total`` (or lower-cased)      jmx_exporter's ``kafka-2_0_0`` rules, Strimzi
``kafka_server_brokertopicmetrics_bytesinpersec``                       Confluent's ``kafka_broker.yml`` (``Count``)
``kafka_server_BrokerTopicMetrics_Count{name="BytesInPerSec"}``         jmx_exporter with no rules
``kafka_topic_BytesInPerSec_total{metric="BytesInPerSec"}``             ``kafka_topic_$1_total`` rules
``kafka_server_BrokerTopicMetrics_OneMinuteRate{name="BytesInPerSec"}`` no rules, as Cruise Control queries it
``kafka_server_brokertopicmetrics_bytesinpersec_oneminuterate``         Confluent's ``OneMinuteRate``
``kafka_server_broker_topic_metrics_bytesinpersec_rate``                ``..._rate`` rules
=====================================================================  ===========================================

A team's **recording rules** are recognised by Prometheus' naming convention ``level:metric:operation``
(`MetricNames.recorded`): ``topic:kafka_server_brokertopicmetrics_bytesin:rate1m`` is bytes-in summed per topic
(the level names the labels kept: ``topic``, ``cluster_topic``; none of the instance labels), as a per-second
rate over one minute. ``poolplan ingest --prometheus-mode per-topic`` reads such series instead of the counters
when their window is at most two minutes.

A name ending in ``_total``, ``_count`` or nothing is the meter's ``Count``: a **counter**, converted exactly. A
name ending in ``OneMinuteRate`` or ``_rate`` is a **rate gauge** (bytes per second, a one-minute EWMA in Kafka's
Yammer meters): read as the rate of the step that ends at its time, which flattens peaks shorter than a minute,
so it is less exact and used only when no counter of the meter exists. Other attributes (``FiveMinuteRate``,
``MeanRate``) and other meters (``ReplicationBytesInPerSec``, ``TotalProduceRequestsPerSec`` …) are not used.

The topic is the ``topic`` label and the broker the first of ``instance``, ``pod`` found in the broker map; a
`MetricNames` file (``--metric-names``, TOML) can name other series, labels and a selector:

.. code-block:: toml

    [metrics]                       # a metric's series: a name (a counter), or a name and its type
    bytes_in = "my_kafka_bytes_in_total"
    bytes_out = { name = "my_kafka_bytes_out_rate", type = "rate" }
    [labels]
    topic = "topic_name"            # the label holding the topic
    instance = ["kubernetes_pod_name", "instance"]   # labels naming the broker, looked up in the broker map
    [select]                        # label matchers every pulled series must have (one cluster of a shared server)
    job = "kafka-prod"

Examples
--------
>>> DEFAULT.meter("kafka_server_BrokerTopicMetrics_BytesIn_total", {})
Meter(metric='bytes_in', type='counter')
>>> DEFAULT.meter("kafka_server_BrokerTopicMetrics_OneMinuteRate", {"name": "BytesOutPerSec"})
Meter(metric='bytes_out', type='rate')
>>> DEFAULT.meter("kafka_server_brokertopicmetrics_replicationbytesin_total", {}) is None
True
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pools.errors import InputError

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = [
    "Meter", "Recorded", "MetricNames", "DEFAULT", "METRICS", "COUNTER", "RATE", "LOG_SIZE", "METER_LABELS",
    "SQUASHED_PATTERN", "load_metric_names", "closest",
    "ID_PATTERN", "is_id", "RangeValues", "parse_range_values", "REMOTE_FETCH", "REMOTE_COPY", "REMOTE_LOG_SIZE",
    "GAUGE", "REMOTE_METRICS", "SIZE_METRICS",
]

#: The normalized metrics of Kafka's per-topic meters (`spark_jobs.records.COUNTER_METRICS`).
METRICS = ("bytes_in", "bytes_out", "messages_in")
COUNTER, RATE = "counter", "rate"
#: The normalized metric of a replica's size (``kafka_log_log_size``, or ``kafka_log_Log_Value{name="Size"}``).
LOG_SIZE = "log_size"
_METER = {"bytesin": "bytes_in", "bytesout": "bytes_out", "messagesin": "messages_in"}
#: A metric name lower-cased with its underscores removed: prefix, meter (or none: then in a label), attribute.
SQUASHED_PATTERN = (
    r"^kafka(?:serverbrokertopicmetrics|topic)(bytesin|bytesout|messagesin)?(?:persec)?"
    r"(total|count|oneminuterate|rate)?$"
)
_SQUASHED = re.compile(SQUASHED_PATTERN)
_LOG_SIZE = re.compile(r"^kafkaloglog(size|value)$")
#: A meter label's value (``BytesInPerSec``) lower-cased with its underscores removed.
_METER_LABEL_VALUE = r"^(bytesin|bytesout|messagesin)persec$"
#: Labels that carry the meter when the name does not (jmx_exporter's default export; ``kafka_topic_*{metric=}``).
METER_LABELS = ("name", "metric")
#: Kafka's tiered-storage metrics (KIP-405, ``kafka.server:type=BrokerTopicMetrics,name=...,topic=<t>``), normalized:
#: the ``RemoteFetchBytesPerSec`` and ``RemoteCopyBytesPerSec`` meters (bytes read from and copied to remote storage)
#: and the ``RemoteLogSizeBytes`` gauge (the topic's bytes in remote storage). `MetricNames.remote` reads them; the
#: per-topic meters' readers (`MetricNames.meter`) never take them for one of `METRICS`.
REMOTE_FETCH, REMOTE_COPY, REMOTE_LOG_SIZE = "remote_fetch_bytes", "remote_copy_bytes", "remote_log_size"
#: The remote meters the history keeps per minute beside `METRICS` (`MetricNames.minute_meter`), in its columns' order.
REMOTE_METRICS = (REMOTE_COPY, REMOTE_FETCH)
GAUGE = "gauge"
#: The metrics that are sizes (size records, not counters): a replica's bytes on disk (per partition) and a topic's
#: bytes in the remote store on one broker (``RemoteLogSizeBytes``, no partition).
SIZE_METRICS = (LOG_SIZE, REMOTE_LOG_SIZE)
_REMOTE_METER = {"remotefetchbytes": REMOTE_FETCH, "remotecopybytes": REMOTE_COPY}
_REMOTE_SQUASHED = re.compile(r"^kafka(?:serverbrokertopicmetrics|topic)(remotefetchbytes|remotecopybytes)?(?:persec)?"
                              r"(total|count|oneminuterate|rate)?$")
_REMOTE_LABEL_VALUE = re.compile(r"^(remotefetchbytes|remotecopybytes)persec$")
_REMOTE_SIZE = re.compile(r"^kafka(?:serverbrokertopicmetrics|topic)(remotelogsizebytes)?(value)?$")
#: A broker or partition id as a label value writes it: 1 to 9 ASCII digits (a Java int). Spark, RE2 and `is_id`
#: read it.
ID_PATTERN = r"^[0-9]{1,9}$"
_ID = re.compile(ID_PATTERN.removesuffix("$") + r"\Z")  # Python's '$' also matches before a final line feed
_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: A recording rule's name: ``level:metric:operation`` with the operation ``rate<window>`` or ``increase<window>``.
_RULE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):([A-Za-z_][A-Za-z0-9_]*):(increase|rate)((?:\d+(?:ms|[smhdwy]))+)$")
_DURATION = re.compile(r"(\d+)(ms|[smhdwy])")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800, "y": 31_536_000}


def duration_s(text: str) -> float | None:
    """Seconds of a Prometheus duration (``90s``, ``1m30s``, ``119999ms``), None for anything else.

    >>> duration_s("1m30s"), duration_s("5x")
    (90, None)
    """
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(int(n) * _UNIT_S[u] for n, u in parts)


@dataclass(frozen=True, slots=True)
class Meter:
    """What a series is: one of `METRICS` (or `LOG_SIZE`) and whether its values are a counter or a rate."""

    metric: str
    type: str


@dataclass(frozen=True, slots=True)
class Recorded:
    """What a recording rule's series is: one of `METRICS`, ``rate`` (per second) or ``increase`` (bytes) over
    ``window_s``, and whether its level keeps only the topic (``per_topic``: summed over brokers)."""

    metric: str
    operation: str
    window_s: float
    per_topic: bool


def is_id(text: str) -> bool:
    """Whether a label value is a broker or partition id (`ID_PATTERN`).

    >>> is_id("7"), is_id("1234567890"), is_id("\\u0661"), is_id("7\\n")
    (True, False, False, False)
    """
    return _ID.match(text) is not None



def _named_meter(pattern: re.Pattern[str], label_value: str | re.Pattern[str], squashed: str,
                 labels: Mapping[str, str]) -> tuple[str, str | None] | None:
    """The meter and attribute a squashed series name spells by ``pattern``; a name that spells only the attribute
    takes its meter from the first of `METER_LABELS` whose value matches ``label_value`` (None: neither)."""
    match = pattern.match(squashed)
    if match is None:
        return None
    meter, attribute = match.groups()
    if meter is None:
        if attribute is None:
            return None
        found = (re.match(label_value, _squash(labels.get(k, ""))) for k in METER_LABELS)
        meter = next((f.group(1) for f in found if f is not None), None)
        if meter is None:
            return None
    return meter, attribute

def _squash(text: str) -> str:
    return text.lower().replace("_", "")


def _attribute_type(attribute: str | None) -> str:
    return RATE if attribute in ("oneminuterate", "rate") else COUNTER


@dataclass(frozen=True)
class MetricNames:
    """The names and labels to read Kafka's per-topic meters by: the built-in spellings, or a user's file."""

    #: metric → (series name, type) named by the user; the built-in spellings are then not used for it
    names: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    topic_label: str = "topic"
    instance_labels: tuple[str, ...] = ("instance", "pod")
    #: label → value every series must carry
    select: Mapping[str, str] = field(default_factory=dict)
    source: str | None = None

    def meter(self, name: str | None, labels: Mapping[str, str]) -> Meter | None:
        """The meter a series of ``name`` with ``labels`` is, or None when it is none of Kafka's per-topic meters."""
        if not name:
            return None
        for metric, (given, kind) in sorted(self.names.items()):
            if name == given:
                return Meter(metric, kind)
        squashed = _squash(name)
        if _LOG_SIZE.match(squashed) and (squashed.endswith("size") or labels.get("name", "").lower() == "size"):
            return Meter(LOG_SIZE, COUNTER)
        named = _named_meter(_SQUASHED, _METER_LABEL_VALUE, squashed, labels)
        if named is None:
            return None
        meter, attribute = named
        metric = _METER.get(meter)
        if metric is None or metric in self.names:
            return None
        return Meter(metric, _attribute_type(attribute))

    def remote(self, name: str | None, labels: Mapping[str, str]) -> Meter | None:
        """The tiered-storage metric a series is (`REMOTE_FETCH`, `REMOTE_COPY`: a counter or a rate gauge;
        `REMOTE_LOG_SIZE`: a gauge of bytes), in the spellings `meter` knows for the per-topic meters, or None.

        >>> DEFAULT.remote("kafka_server_BrokerTopicMetrics_RemoteFetchBytes_total", {})
        Meter(metric='remote_fetch_bytes', type='counter')
        >>> DEFAULT.remote("kafka_server_BrokerTopicMetrics_OneMinuteRate", {"name": "RemoteCopyBytesPerSec"})
        Meter(metric='remote_copy_bytes', type='rate')
        >>> DEFAULT.remote("kafka_server_BrokerTopicMetrics_Value", {"name": "RemoteLogSizeBytes"})
        Meter(metric='remote_log_size', type='gauge')
        >>> DEFAULT.remote("kafka_server_BrokerTopicMetrics_BytesOut_total", {}) is None
        True
        """
        if not name:
            return None
        squashed = _squash(name)
        size = _REMOTE_SIZE.match(squashed)
        if size is not None:
            named, attribute = size.groups()
            in_label = any(_squash(labels.get(k, "")) == "remotelogsizebytes" for k in METER_LABELS)
            if (named is not None and attribute in (None, "value")) or (named is None and attribute and in_label):
                return Meter(REMOTE_LOG_SIZE, GAUGE)
            return None
        named = _named_meter(_REMOTE_SQUASHED, _REMOTE_LABEL_VALUE, squashed, labels)
        if named is None:
            return None
        meter, attribute = named
        return Meter(_REMOTE_METER[meter], _attribute_type(attribute))

    def minute_meter(self, name: str | None, labels: Mapping[str, str]) -> Meter | None:
        """A meter whose increases the history keeps per minute: one of `METRICS` (or `LOG_SIZE`, `meter`), or a
        tiered-storage meter of `REMOTE_METRICS` (`remote`; never the ``RemoteLogSizeBytes`` gauge), else None.

        >>> DEFAULT.minute_meter("kafka_server_BrokerTopicMetrics_Count", {"name": "RemoteCopyBytesPerSec"})
        Meter(metric='remote_copy_bytes', type='counter')
        >>> DEFAULT.minute_meter("kafka_server_brokertopicmetrics_remotelogsizebytes", {}) is None
        True
        """
        meter = self.meter(name, labels)
        if meter is None:
            meter = self.remote(name, labels)
        return None if meter is None or meter.type == GAUGE else meter

    def recorded(self, name: str) -> Recorded | None:
        """The recording rule a series name is by the ``level:metric:operation`` convention, or None.

        >>> DEFAULT.recorded("topic:kafka_server_brokertopicmetrics_bytesin:rate1m")
        Recorded(metric='bytes_in', operation='rate', window_s=60, per_topic=True)
        >>> DEFAULT.recorded("instance_topic:kafka_server_brokertopicmetrics_bytesin_total:increase1m").per_topic
        False
        """
        match = _RULE.match(name)
        if match is None:
            return None
        level, base, operation, window = match.groups()
        # the convention names a built-in spelling
        meter = DEFAULT.minute_meter(base, {}) or DEFAULT.minute_meter(base + "_total", {})
        seconds = duration_s(window)
        if meter is None or meter.metric not in (*METRICS, *REMOTE_METRICS) or not seconds:
            return None
        kept = set(level.split("_"))
        per_topic = self.topic_label in kept | {level} or "topic" in kept
        per_topic = per_topic and not any(label in kept for label in self.instance_labels) and "broker" not in kept
        return Recorded(meter.metric, operation, seconds, per_topic)

    def counter_column(self, name: Column, label: Callable[[str], Column]) -> Column:
        """`meter` as a Spark column, for counters only (a rate gauge gives null): the metric of the series named
        ``name`` (a column), whose label values ``label(label_name)`` gives (columns), or null."""
        from pyspark.sql import functions as F

        squashed = F.regexp_replace(F.lower(name), "_", "")
        meter = F.regexp_extract(squashed, SQUASHED_PATTERN, 1)
        attribute = F.regexp_extract(squashed, SQUASHED_PATTERN, 2)
        in_label = [
            F.nullif(F.regexp_extract(F.regexp_replace(F.lower(label(k)), "_", ""), _METER_LABEL_VALUE, 1), F.lit(""))
            for k in METER_LABELS]
        meter = F.when(meter != "", meter).when(attribute != "", F.coalesce(*in_label))
        metric = F.create_map(*[F.lit(x) for kv in sorted(_METER.items()) for x in kv])[meter]
        builtin = F.when(squashed.rlike(SQUASHED_PATTERN) & attribute.isin("", "total", "count"), metric)
        if self.names:  # a metric the user named is read only from the series named
            builtin = F.when(~builtin.isin(*sorted(self.names)), builtin)
        size = F.when(squashed == "kafkaloglogsize", F.lit(LOG_SIZE)).when(
            (squashed == "kafkaloglogvalue") & (F.lower(label("name")) == "size"), F.lit(LOG_SIZE)
        )
        given = [F.when(name == n, F.lit(m)) for m, (n, kind) in sorted(self.names.items()) if kind == COUNTER]
        return F.coalesce(*given, size, builtin)

    def meter_label_values(self, name: str) -> tuple[str, ...]:
        """When ``name`` names no meter itself (``kafka_server_BrokerTopicMetrics_Count``): the label that carries
        it, else empty. ``("name",)`` for jmx_exporter's default export."""
        squashed = _squash(name)
        if name in {n for n, _ in self.names.values()}:
            return ()
        for pattern in (_SQUASHED, _REMOTE_SQUASHED):
            match = pattern.match(squashed)
            if match is not None and match.group(1) is None and match.group(2) is not None:
                return METER_LABELS
        return ()

    def candidate(self, name: str) -> bool:
        """Whether ``name`` can be a meter of `minute_meter` by its name alone (some also need a label:
        `meter_label_values`)."""
        if name in {n for n, _ in self.names.values()}:
            return True
        match = _SQUASHED.match(_squash(name))
        if match is not None and (match.group(1) is not None or match.group(2) is not None) and (
            match.group(1) is None or _METER[match.group(1)] not in self.names
        ):
            return True
        remote = _REMOTE_SQUASHED.match(_squash(name))  # a tiered-storage meter (`minute_meter`)
        return remote is not None and remote.group(1) is not None

    def broker(self, labels: Mapping[str, str], broker_map: Mapping[str, int]) -> int | None:
        """The broker id of a series: the first instance label found in ``broker_map``, else a label that is an id."""
        for label in self.instance_labels:
            value = labels.get(label)
            if value is None:
                continue
            if value in broker_map:
                return int(broker_map[value])
            if is_id(value):
                return int(value)
        return None

    def instance(self, labels: Mapping[str, str]) -> str | None:
        """The first instance label's value of a series (what an unmapped broker is named by)."""
        return next((labels[k] for k in self.instance_labels if labels.get(k)), None)

    def matchers(self, extra: Mapping[str, str] | None = None) -> str:
        """The PromQL label matchers of every series pulled: the selector, ``topic!=""`` and ``extra``.

        >>> DEFAULT.matchers({"__name__": "x"})
        '__name__="x",topic!=""'
        """
        equal = {**(extra or {}), **self.select}
        parts = [f'{k}="{_escape(v)}"' for k, v in sorted(equal.items(), key=lambda kv: (kv[0] != "__name__", kv[0]))]
        parts.insert(1 if "__name__" in equal else 0, f'{self.topic_label}!=""')
        return ",".join(parts)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


DEFAULT = MetricNames()


def closest(wanted: str, names: list[str], n: int = 5) -> list[str]:
    """The ``n`` names of ``names`` most like ``wanted`` (case and underscores aside), most alike first.

    >>> closest("kafka_server_brokertopicmetrics_bytesin_total", ["up", "kafka_broker_bytes_in", "go_gc"], 2)
    ['kafka_broker_bytes_in', 'go_gc']
    """
    key = _squash(wanted)
    scored = sorted(names, key=lambda n: (-difflib.SequenceMatcher(None, key, _squash(n)).ratio(), n))
    return scored[:n]


def load_metric_names(path: str | None) -> MetricNames:
    """Read a metric-names file (TOML, see the module doc); `DEFAULT` without one.

    Raises
    ------
    InputError
        Naming the file and key for an unknown table or key, a metric that is not one of `METRICS`, a type
        that is neither ``counter`` nor ``rate``, or a label name PromQL would not accept.
    """
    if path is None:
        return DEFAULT
    from pools.files import load_toml

    doc = load_toml(Path(path))
    where = str(path)
    unknown = sorted(set(doc) - {"metrics", "labels", "select"})
    if unknown:
        raise InputError(f"{where}: [{unknown[0]}]: unknown table (expected [metrics], [labels] or [select])")
    names: dict[str, tuple[str, str]] = {}
    for metric, value in _table(doc, "metrics", where).items():
        if metric not in METRICS:
            raise InputError(f"{where}: metrics.{metric}: unknown metric (expected one of {', '.join(METRICS)})")
        if isinstance(value, str):
            value = {"name": value}
        if (not isinstance(value, Mapping) or not isinstance(value.get("name"), str) or not value["name"]
                or set(value) - {"name", "type"}):
            raise InputError(
                f'{where}: metrics.{metric}: expected a series name or {{ name = "...", type = "counter" or "rate" }}')
        kind = value.get("type", COUNTER)
        if kind not in (COUNTER, RATE):
            raise InputError(f"{where}: metrics.{metric}.type: expected counter or rate, got {kind!r}")
        names[metric] = (value["name"], kind)
    labels = _table(doc, "labels", where)
    extra = sorted(set(labels) - {"topic", "instance"})
    if extra:
        raise InputError(f"{where}: labels.{extra[0]}: unknown key (expected topic or instance)")
    topic = labels.get("topic", DEFAULT.topic_label)
    instance = labels.get("instance", list(DEFAULT.instance_labels))
    instance = [instance] if isinstance(instance, str) else instance
    if (not isinstance(instance, list) or not instance
            or not all(isinstance(i, str) and _LABEL_NAME.match(i) for i in instance)):
        raise InputError(f"{where}: labels.instance: expected a label name or a list of label names")
    if not isinstance(topic, str) or not _LABEL_NAME.match(topic):
        raise InputError(f"{where}: labels.topic: expected a label name, got {topic!r}")
    select = _table(doc, "select", where)
    for key, value in select.items():
        if not _LABEL_NAME.match(key) or not isinstance(value, str):
            raise InputError(f'{where}: select.{key}: expected label = "value"')
    return MetricNames(names, topic, tuple(instance), dict(select), where)


def _table(doc: Mapping[str, object], name: str, where: str) -> Mapping[str, object]:
    value = doc.get(name, {})
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: {name}: expected a table [{name}]")
    return value


@dataclass(frozen=True, slots=True)
class RangeValues:
    """What a series' values are: raw counters (``operation`` None) or ``increase``/``rate`` over ``window_s``."""

    operation: str | None = None
    window_s: float | None = None

    @property
    def label(self) -> str:
        return "counter" if self.operation is None else f"{self.operation}:{self.window_s:g}s"


def parse_range_values(text: str | None) -> RangeValues | None:
    """``--range-values``: ``auto`` (None: by name), ``counter``, ``increase:<window>`` or ``rate:<window>``.

    >>> parse_range_values("increase:1m"), parse_range_values("auto")
    (RangeValues(operation='increase', window_s=60), None)

    Raises
    ------
    ValueError
        For any other text.
    """
    if text is None or text == "auto":
        return None
    if text == "counter":
        return RangeValues()
    op, _, window = text.partition(":")
    seconds = duration_s(window)
    if op not in ("increase", "rate") or not seconds:
        raise ValueError(f"{text!r}: expected auto, counter, increase:<window> or rate:<window> (e.g. increase:1m)")
    return RangeValues(op, seconds)
