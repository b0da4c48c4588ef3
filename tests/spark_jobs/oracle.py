"""A plain-Python reading of the same raw files, for checking the Spark job on `poolplan sample` output.

Independent of Spark: parses exposition text and query_range documents with the standard library and
applies the documented counter rules (per broker scrape rounds; a series absent from the previous round was
re-created from 0; a drop is a reset; the increase is credited to the minute the window starts in).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

METRICS = {
    "kafka_server_brokertopicmetrics_bytesin_total": "bytes_in",
    "kafka_server_brokertopicmetrics_bytesout_total": "bytes_out",
    "kafka_server_brokertopicmetrics_messagesin_total": "messages_in",
}
_LINE = re.compile(r"^(\w+)\{([^}]*)\}\s+(\S+)\s+(\d+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def samples(root: Path, broker_map: dict[str, int]) -> dict[tuple[int, str, str], dict[int, float]]:
    """(broker, topic, metric) → {ts_ms: value} from ``metrics/prom`` and ``metrics/query_range``."""
    out: dict[tuple[int, str, str], dict[int, float]] = defaultdict(dict)
    for path in sorted((root / "metrics" / "prom").rglob("*.prom")):
        for line in path.read_text().splitlines():
            m = _LINE.match(line)
            if not m or m.group(1).lower() not in METRICS:
                continue
            labels = dict(_LABEL.findall(m.group(2)))
            if labels.get("topic"):
                key = (broker_map[labels["instance"]], labels["topic"], METRICS[m.group(1).lower()])
                out[key][int(m.group(4))] = float(m.group(3))
    for path in sorted((root / "metrics" / "query_range").glob("*.json")):
        for series in json.loads(path.read_text())["data"]["result"]:
            labels = series["metric"]
            metric = METRICS.get(labels["__name__"].lower())
            if metric and labels.get("topic"):
                key = (broker_map[labels["instance"]], labels["topic"], metric)
                for ts, value in series["values"]:
                    out[key][round(float(ts) * 1000)] = float(value)
    return out


def topic_minute_rates(series: dict[tuple[int, str, str], dict[int, float]], metric: str) -> dict[str, dict[int, float]]:
    """topic → {minute_ms: Σ over brokers of increase / window seconds}."""
    rounds: dict[int, list[int]] = defaultdict(list)
    for (broker, _, _), points in series.items():
        rounds[broker].extend(points)
    round_of: dict[int, dict[int, int]] = {}
    round_start: dict[int, list[int]] = {}
    for broker, stamps in rounds.items():
        ordered = sorted(set(stamps))
        idx, starts, mapping = 0, [ordered[0]], {}
        for prev, ts in zip([None, *ordered], ordered):
            if prev is not None and ts - prev > 5_000:
                idx += 1
                starts.append(ts)
            mapping[ts] = idx
        round_of[broker], round_start[broker] = mapping, starts
    per_row: dict[tuple[int, str, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for (broker, topic, m), points in series.items():
        if m != metric:
            continue
        prev = None
        for ts in sorted(points):
            value, r = points[ts], round_of[broker][ts]
            if prev is None or round_of[broker][prev] < r - 1:
                if r == 0:
                    prev = ts
                    continue
                start, delta = round_start[broker][r - 1], value
            else:
                start = prev
                delta = value if value < points[prev] else value - points[prev]
            row = per_row[(broker, topic, start // 60_000 * 60_000)]
            row[0] += delta
            row[1] += ts - start
            prev = ts
    rates: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for (_, topic, minute), (delta, span_ms) in per_row.items():
        rates[topic][minute] += round(delta) / max(round(span_ms / 1000), 1)
    return rates
