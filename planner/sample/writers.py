"""Text exactly as Kafka's tools, jmx_exporter and Prometheus print it, for the synthetic cluster.

Each function returns the text of one file; nothing here touches the file system. Formats (see
``docs/sample.md`` and the kafka-formats README):

- ``kafka-topics.sh --describe`` (3.8+: tab-separated, ``Elr: N/A``), ``kafka-log-dirs.sh --describe``
  (two status lines, one compact JSON line), ``kafka-consumer-groups.sh --describe --all-groups`` and
  ``--members --verbose`` (fixed-width columns, captured with ``2>&1``);
- Prometheus text exposition 0.0.4 as jmx_exporter writes it (``# HELP``/``# TYPE``, trailing comma in the
  label set, Java doubles such as ``1.0004966371E10``) with the scrape time appended in milliseconds;
- a ``/api/v1/query_range`` response (compact JSON, float-second timestamps, string values).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

__all__ = [
    "java_double",
    "prom_float",
    "format_topics_describe",
    "format_log_dirs",
    "format_consumer_offsets",
    "format_consumer_members",
    "format_prom_text",
    "format_query_range",
    "format_openmetrics",
    "PROM_HELP",
]

#: ``(log_dir, error, [(topic-partition, size, offset_lag, is_future)])``
LogDirEntry = tuple[str, str | None, Sequence[tuple[str, int, int, bool]]]
#: ``(consumer_id, host, client_id, [(topic, partition)])``
MemberEntry = tuple[str, str, str, Sequence[tuple[str, int]]]
#: ``(metric name, type, [(label text, values)])``
PromFamily = tuple[str, str, Sequence[tuple[str, np.ndarray]]]

#: jmx_exporter's HELP text for each family (the bean it first saw), keyed by lowercase metric name.
PROM_HELP: dict[str, str] = {
    "kafka_server_brokertopicmetrics_bytesin_total":
        "Attribute exposed for management (kafka.server<type=BrokerTopicMetrics, name=BytesInPerSec><>Count)",
    "kafka_server_brokertopicmetrics_bytesout_total":
        "Attribute exposed for management (kafka.server<type=BrokerTopicMetrics, name=BytesOutPerSec><>Count)",
    "kafka_server_brokertopicmetrics_messagesin_total":
        "Attribute exposed for management (kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec><>Count)",
    "kafka_log_log_size": "Attribute exposed for management (kafka.log<type=Log, name=Size><>Value)",
}


def java_double(value: float) -> str:
    """``Double.toString``: plain decimal in [1e-3, 1e7), else ``d.dddE<n>``; shortest round-trip digits.

    Examples
    --------
    >>> java_double(10004966371.0), java_double(4096.0), java_double(0.0), java_double(1e22)
    ('1.0004966371E10', '4096.0', '0.0', '1.0E22')
    """
    v = float(value)
    if v == 0:
        return "0.0"
    if 1e-3 <= abs(v) < 1e7:
        return repr(v)
    mantissa, _, exp = repr(v).partition("e")
    sign = "-" if mantissa.startswith("-") else ""
    whole, _, frac = mantissa.lstrip("-").partition(".")
    digits = whole + frac
    exponent = (int(exp) if exp else 0) + len(whole) - 1
    significant = digits.lstrip("0")
    exponent -= len(digits) - len(significant)
    significant = significant.rstrip("0") or "0"
    return f"{sign}{significant[0]}.{significant[1:] or '0'}E{exponent}"


def prom_float(value: float) -> str:
    """Prometheus' JSON sample value: Go ``FormatFloat(v, 'f', -1, 64)``.

    >>> prom_float(4966371.0), prom_float(0.25)
    ('4966371', '0.25')
    """
    return np.format_float_positional(float(value), trim="-")


def format_topics_describe(topics: Iterable[dict], partitions: dict[str, Sequence[dict]]) -> str:
    """``kafka-topics.sh --describe`` (3.8+) for ``topics`` (dicts: topic, topic_id, replication_factor,
    configs) and their partitions (dicts: partition, leader, replicas, isr, adding, removing)."""
    lines = []
    for t in sorted(topics, key=lambda t: t["topic"]):
        parts = partitions[t["topic"]]
        configs = ",".join(f"{k}={v}" for k, v in t["configs"])
        lines.append(
            f"Topic: {t['topic']}\tTopicId: {t['topic_id']}\tPartitionCount: {len(parts)}\t"
            f"ReplicationFactor: {t['replication_factor']}\tConfigs: {configs}"
        )
        for p in parts:
            leader = "none" if p["leader"] is None else str(p["leader"])
            line = (
                f"\tTopic: {t['topic']}\tPartition: {p['partition']}\tLeader: {leader}\t"
                f"Replicas: {_ids(p['replicas'])}\tIsr: {_ids(p['isr'])}"
            )
            if p.get("adding") or p.get("removing"):
                line += f"\tAdding Replicas: {_ids(p['adding'])}\tRemoving Replicas: {_ids(p['removing'])}"
            lines.append(line + "\tElr: N/A\tLastKnownElr: N/A")
    return "\n".join(lines) + "\n"


def format_log_dirs(brokers: Sequence[tuple[int, Sequence[LogDirEntry]]]) -> str:
    """``kafka-log-dirs.sh --describe``: ``brokers`` = ``[(id, [(log_dir, error, [(topic-partition, size,
    offset_lag, is_future)])])]``."""
    doc = {
        "version": 1,
        "brokers": [
            {
                "broker": broker,
                "logDirs": [
                    {
                        "logDir": log_dir,
                        "error": error,
                        "partitions": [
                            {"partition": name, "size": size, "offsetLag": lag, "isFuture": future}
                            for name, size, lag, future in replicas
                        ],
                    }
                    for log_dir, error, replicas in dirs
                ],
            }
            for broker, dirs in brokers
        ],
    }
    ids = ",".join(str(b) for b, _ in brokers)
    return (
        "Querying brokers for log directories information\n"
        f"Received log directory information from brokers {ids}\n"
        f"{json.dumps(doc, separators=(',', ':'))}\n"
    )


def format_consumer_offsets(groups: Sequence[tuple[str, bool, Sequence[tuple]]]) -> str:
    """``kafka-consumer-groups.sh --describe --all-groups`` captured with ``2>&1``.

    ``groups`` = ``[(group, active, [(topic, partition, current, log_end, lag, consumer_id, host,
    client_id)])]`` with None for ``-``. Mirrors ``ConsumerGroupCommand.printOffsets``: widths grow with the
    longest group, topic, consumer id and host (at least 15); each table starts with a blank line.
    """
    out = []
    for group, active, rows in groups:
        if not active:
            out.append(f"\nConsumer group '{group}' has no active members.\n")
        cells = [[_dash(v) for v in (group, *row)] for row in rows]
        widths = [max([15, *(len(c[i]) for c in cells)]) for i in (0, 1, 6, 7)]
        fmt = (
            f"%-{widths[0]}s %-{widths[1]}s %-10s %-15s %-15s %-15s %-{widths[2]}s %-{widths[3]}s %s"
        )
        out.append("\n" + fmt % ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                 "CONSUMER-ID", "HOST", "CLIENT-ID"))
        out.extend("\n" + fmt % tuple(c) for c in cells)
        out.append("\n")
    return "".join(out)


def format_consumer_members(groups: Sequence[tuple[str, Sequence[MemberEntry]]]) -> str:
    """``kafka-consumer-groups.sh --describe --all-groups --members --verbose`` (Kafka 3.6 layout).

    ``groups`` = ``[(group, [(consumer_id, host, client_id, [(topic, partition)])])]``; a group without
    members prints the "no active members" notice only.
    """
    out = []
    for group, members in groups:
        if not members:
            out.append(f"\nConsumer group '{group}' has no active members.\n")
            continue
        widths = [
            max(15, len(group)),
            max([15, *(len(m[0]) for m in members)]),
            max([15, *(len(m[1]) for m in members)]),
            max([15, *(len(m[2]) for m in members)]),
        ]
        fmt = f"%-{widths[0]}s %-{widths[1]}s %-{widths[2]}s %-{widths[3]}s %-15s "
        out.append("\n" + fmt % ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS") + "ASSIGNMENT\n")
        for consumer_id, host, client_id, assignment in members:
            out.append(fmt % (group, consumer_id, host, client_id, len(assignment)) + _assignment(assignment) + "\n")
    return "".join(out)


def format_prom_text(families: Sequence[PromFamily], times_ms: np.ndarray) -> str:
    """Exposition text for one file: per family ``# HELP``, ``# TYPE`` then its samples, scrape by scrape.

    ``families`` = ``[(name, type, [(label_text, values)])]`` where ``label_text`` is the inside of the
    braces with its trailing comma (``instance="kafka-1:7071",job="kafka",topic="t",``) and ``values`` is
    aligned with ``times_ms`` (NaN = not exported at that scrape).
    """
    out: list[str] = []
    for name, kind, series in families:
        if not series:
            continue
        out.append(f"# HELP {name} {PROM_HELP[name]}\n# TYPE {name} {kind}\n")
        present = [(labels, values, ~np.isnan(values)) for labels, values in series]
        for k, ts in enumerate(times_ms.tolist()):
            for labels, values, ok in present:
                if ok[k]:
                    out.append(f"{name}{{{labels}}} {java_double(values[k])} {ts}\n")
    return "".join(out)


def format_query_range(series: Sequence[tuple[dict[str, str], np.ndarray]], times_s: np.ndarray) -> str:
    """A ``/api/v1/query_range`` response: ``series`` = ``[(labels incl. __name__, values)]`` on ``times_s``.

    Series without any value in the range are left out (Prometheus returns no empty series).
    """
    results = []
    stamps = [str(int(t)) for t in times_s.tolist()]
    for labels, values in sorted(series, key=lambda s: sorted(s[0].items())):
        ok = np.flatnonzero(~np.isnan(values))
        if ok.size == 0:
            continue
        metric = json.dumps(dict(sorted(labels.items())), separators=(",", ":"))
        points = ",".join(f'[{stamps[k]},"{prom_float(values[k])}"]' for k in ok.tolist())
        results.append(f'{{"metric":{metric},"values":[{points}]}}')
    return '{"status":"success","data":{"resultType":"matrix","result":[' + ",".join(results) + "]}}\n"


def format_openmetrics(family: str, series: Sequence[tuple[str, np.ndarray]], times_s: np.ndarray) -> Iterator[str]:
    """OpenMetrics text of one counter family for ``promtool tsdb create-blocks-from openmetrics``.

    ``family`` is the name without ``_total`` (``# TYPE <family> counter``; samples are ``<family>_total``);
    ``series`` = ``[(label text, values)]`` on ``times_s`` (NaN = absent). Series by series, each in time
    order (promtool drops out-of-order samples silently), timestamps in seconds. The caller ends the file
    with ``# EOF``.

    >>> text = format_openmetrics("x", [('a="1"', np.array([1.0, np.nan, 3.0]))], np.array([60, 120, 180]))
    >>> print("".join(text), end="")
    # TYPE x counter
    x_total{a="1"} 1 60
    x_total{a="1"} 3 180
    """
    yield f"# TYPE {family} counter\n"
    stamps = [str(int(t)) for t in times_s.tolist()]
    for labels, values in series:
        ok = np.flatnonzero(~np.isnan(values))
        yield "".join(f"{family}_total{{{labels}}} {prom_float(values[k])} {stamps[k]}\n" for k in ok.tolist())


def _ids(ids: Sequence[int]) -> str:
    return ",".join(str(i) for i in ids)


def _dash(value: object) -> str:
    return "-" if value is None else str(value)


def _assignment(assignment: Sequence[tuple[str, int]]) -> str:
    if not assignment:
        return "-"
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(partition)
    return ", ".join(f"{t}({','.join(str(p) for p in sorted(ps))})" for t, ps in sorted(by_topic.items()))
