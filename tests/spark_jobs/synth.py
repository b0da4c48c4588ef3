"""Small synthetic inputs with known per-minute bytes, and the plain-Python profile they must give."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

T0 = int(datetime(2025, 3, 3, tzinfo=timezone.utc).timestamp())  # a Monday
FAMILIES = {"bytes_in": "bytesin", "bytes_out": "bytesout", "messages_in": "messagesin"}


@dataclass
class Cluster:
    """Per (broker, topic, metric) the bytes of each scrape interval; None where the meter does not exist."""

    minutes: int
    brokers: tuple[int, ...] = (1, 2, 3)
    topics: tuple[str, ...] = ("orders", "payments.ledger", "clicks-v2")
    traffic: dict[tuple[int, str, str], list[int | None]] = field(default_factory=dict)
    resets: set[tuple[int, str, str, int]] = field(default_factory=set)

    def scrape_ms(self, broker: int, k: int) -> int:
        return (T0 + 60 * k) * 1000 + 250 * broker


def build(minutes: int = 240, seed: int = 7) -> Cluster:
    """Traffic with a meter closed for a while (leader moved away and back) and an in-place counter reset."""
    rng = random.Random(seed)
    c = Cluster(minutes=minutes)
    for b in c.brokers:
        for i, t in enumerate(c.topics):
            base = rng.randint(10_000, 5_000_000) * (i + 1)
            bytes_in = [None] + [rng.randint(0, base) for _ in range(minutes)]
            c.traffic[(b, t, "bytes_in")] = bytes_in
            c.traffic[(b, t, "messages_in")] = [None] + [v // 100 if v is not None else None for v in bytes_in[1:]]
            c.traffic[(b, t, "bytes_out")] = [None] + [v * 2 for v in bytes_in[1:]]
    # broker 2 stops leading "orders" for scrapes 50..69: meters closed (absent), re-created at 70
    for metric in ("bytes_in", "messages_in"):
        series = c.traffic[(2, "orders", metric)]
        for k in range(50, 70):
            series[k] = None
    # broker 3's "clicks-v2" counters restart from 0 during interval 120 (no scrape missed)
    for metric in FAMILIES:
        c.resets.add((3, "clicks-v2", metric, 120))
    return c


def counter_values(c: Cluster, key: tuple[int, str, str]) -> list[float | None]:
    """The Count each scrape reads (None = series absent)."""
    out: list[float | None] = []
    total = 0
    broker, topic, metric = key
    present_before = False
    for k, v in enumerate(c.traffic[key]):
        if k == 0:
            total = 1_000_000_000 * broker  # history before the first scrape
            out.append(float(total))
            present_before = True
            continue
        if v is None:
            out.append(None)
            present_before = False
            continue
        if not present_before or (broker, topic, metric, k) in c.resets:
            total = 0
        total += v
        present_before = True
        out.append(float(total))
    return out


def write_prom(c: Cluster, root: Path, *, mixed_case: bool = False) -> dict[str, int]:
    """Write ``<root>/prom/kafka-<b>/<day>.prom`` files; return the broker map (instance → id)."""
    broker_map = {}
    for b in c.brokers:
        inst = f"kafka-{b}:7071"
        broker_map[inst] = b
        values = {key: counter_values(c, key) for key in c.traffic if key[0] == b}
        by_day: dict[str, list[str]] = {}
        for k in range(c.minutes + 1):
            ts = c.scrape_ms(b, k)
            day = datetime.fromtimestamp(ts / 1000, tz=timezone.utc).strftime("%Y-%m-%d")
            lines = by_day.setdefault(day, [])
            for metric, fam in FAMILIES.items():
                name = f"kafka_server_brokertopicmetrics_{fam}_total"
                if mixed_case:
                    name = f"kafka_server_BrokerTopicMetrics_{fam.capitalize()}_total"
                lines.append(f"# HELP {name} Attribute exposed for management")
                lines.append(f"# TYPE {name} counter")
                lines.append(f'{name}{{instance="{inst}",job="kafka",}} {1.0e12 + k:.10E} {ts}')
                for t in c.topics:
                    v = values[(b, t, metric)][k]
                    if v is not None:
                        lines.append(f'{name}{{instance="{inst}",job="kafka",topic="{t}",}} {_java_double(v)} {ts}')
        for day, lines in by_day.items():
            path = root / "prom" / f"kafka-{b}" / f"{day}.prom"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n")
    return broker_map


def _java_double(v: float) -> str:
    """How Java's Double.toString prints a counter (``1.0004966371E10``)."""
    if v == 0:
        return "0.0"
    if 1e-3 <= abs(v) < 1e7:
        return repr(float(v))
    mantissa, exp = f"{v:.16E}".split("E")
    mantissa = mantissa.rstrip("0")
    if mantissa.endswith("."):
        mantissa += "0"
    return f"{mantissa}E{int(exp)}"


def write_log_dirs(root: Path, snapshots: dict[str, dict[int, list[tuple[str, int, bool]]]]) -> list[Path]:
    """``snapshots``: stamp → broker → [(topic-partition, size, isFuture)]; one file per stamp."""
    paths = []
    for stamp, brokers in sorted(snapshots.items()):
        doc = {
            "version": 1,
            "brokers": [
                {
                    "broker": b,
                    "logDirs": [
                        {
                            "logDir": "/var/lib/kafka/data",
                            "error": None,
                            "partitions": [
                                {"partition": p, "size": s, "offsetLag": 0, "isFuture": f} for p, s, f in replicas
                            ],
                        }
                    ],
                }
                for b, replicas in sorted(brokers.items())
            ],
        }
        path = root / "log-dirs" / f"log-dirs-{stamp}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        ids = ",".join(str(b) for b in sorted(brokers))
        path.write_text(
            "Querying brokers for log directories information\n"
            f"Received log directory information from brokers {ids}\n" + json.dumps(doc, separators=(",", ":")) + "\n"
        )
        paths.append(path)
    return paths


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), in plain Python."""
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def expected_rates(c: Cluster, metric: str) -> dict[str, list[float]]:
    """Per topic, the per-minute rate summed over brokers, from the true bytes (every interval is 60 s)."""
    out: dict[str, list[float]] = {}
    for t in c.topics:
        per_minute = []
        for k in range(1, c.minutes + 1):
            vals = [c.traffic[(b, t, metric)][k] for b in c.brokers]
            present = [v for v in vals if v is not None]
            if present:
                per_minute.append(sum(present) / 60)
        out[t] = per_minute
    return out


def write_query_range(c: Cluster, root: Path, *, name_in_labels: bool = True) -> None:
    """Write the same raw counters as query_range exports ``<root>/query_range/<metric>-<week>.json``."""
    for metric, fam in FAMILIES.items():
        name = f"kafka_server_brokertopicmetrics_{fam}_total"
        result = []
        for (b, t, m) in sorted(c.traffic):
            if m != metric:
                continue
            labels = {"instance": f"kafka-{b}:7071", "job": "kafka", "topic": t}
            if name_in_labels:
                labels["__name__"] = name
            values = counter_values(c, (b, t, m))
            pairs = [[c.scrape_ms(b, k) / 1000, f"{v}"] for k, v in enumerate(values) if v is not None]
            result.append({"metric": labels, "values": pairs})
        doc = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        path = root / "query_range" / f"{name}-2025-W10.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1))
