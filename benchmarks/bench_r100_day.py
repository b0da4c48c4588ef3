"""Benchmark: one day of the reference cluster R100 as raw per-(broker, topic) counters, through `poolplan ingest`.

R100 is 100 brokers on 5 racks, 2,000 topics, about 60,000 partitions at RF 3, scraped every minute. Kafka's
``BrokerTopicMetrics`` meters (bytes in, bytes out, messages in) live on the brokers that lead a partition of the
topic, so a topic with P partitions has min(P, 100) series per metric: about 50,000 (broker, topic) pairs and
150,000 counter series, 1,440 samples each a day (about 216 M samples).

The inputs are ``/api/v1/query_range`` responses exactly as Prometheus writes them (compact JSON, labels sorted,
integer-second timestamps, string values), one file per metric and group of ``--brokers-per-file`` brokers: the
split an operator makes to stay under Prometheus' default ``--query.max-samples`` of 50 M (one metric of all
brokers for a day is 72 M samples). The metric names are jmx_exporter's without ``lowercaseOutputName``
(``kafka_server_BrokerTopicMetrics_BytesIn_total``); ``instance`` is ``kafka-<id>:7071``, mapped to broker ids by
the ``broker-map.toml`` written beside the exports. Counters rise steadily from 13-digit values (no resets), with
a diurnal swing; every pair is fixed-width, which lets numpy write them at disk speed (no per-sample Python).

The script writes ``--hours`` of that day (24 = the whole day; 3, 6, 12 show whether time is linear) for
``--topics`` of the 2,000 topics under ``--dir`` (reused when present), runs ``poolplan ingest --query-range ...
--broker-map ...`` with the default settings in a child process as a user would, and prints wall time, samples,
samples/s, the peak resident memory of the driver, the JVM and the Python workers (sampled every 0.2 s, see
`bench_ingest_scale.measure`) and the load average. ``--increment`` then generates the following ``--hours``
and ingests them onto the history the first run wrote (the daily pull of an existing cluster).

    nice python benchmarks/bench_r100_day.py --hours 3 --dir /work/scratch/r100/h3    # 1/8 of a day
    nice python benchmarks/bench_r100_day.py --hours 24 --dir /work/scratch/r100/day --increment

Generated inputs are large (about 6.3 GB a day): keep ``--dir`` out of the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from bench_ingest_scale import measure

T0 = 1_792_972_800  # 2026-10-26T00:00:00Z
BROKERS = 100
RACKS = 5
TOPICS = 2_000
METRICS = (
    "kafka_server_BrokerTopicMetrics_BytesIn_total",
    "kafka_server_BrokerTopicMetrics_BytesOut_total",
    "kafka_server_BrokerTopicMetrics_MessagesIn_total",
)
#: partition counts an operator picks, weighted so that 2,000 topics hold about 60,000 partitions
PARTITIONS = np.array([1, 3, 6, 12, 24, 30, 48, 60, 100, 120])
WEIGHTS = np.array([0.06, 0.10, 0.16, 0.18, 0.14, 0.12, 0.08, 0.07, 0.05, 0.04])
DIGITS = 13  # every counter value has 13 digits: fixed-width pairs
PAIR = b'[0000000000,"0000000000000"],'  # 29 bytes: timestamp at 1..10, value at 13..25


def topology(topics: int, seed: int = 100) -> list[tuple[str, np.ndarray, float]]:
    """``(topic, leader brokers, bytes-in/s of the topic)`` for the first ``topics`` of R100's 2,000.

    Leaders go round-robin from a random first broker, as Kafka's assignment of a new topic places them, so a
    topic with P partitions has min(P, 100) leader brokers.

    >>> t = topology(2_000)
    >>> sum(len(b) for _, b, _ in t) > 40_000
    True
    """
    rng = np.random.default_rng(seed)
    parts = rng.choice(PARTITIONS, size=TOPICS, p=WEIGHTS / WEIGHTS.sum())
    first = rng.integers(0, BROKERS, size=TOPICS)
    rate = np.minimum(rng.lognormal(np.log(3e5), 1.5, size=TOPICS), 2e7)  # bytes-in/s of the topic
    out = []
    for t in range(topics):
        leaders = np.unique((first[t] + np.arange(min(int(parts[t]), BROKERS))) % BROKERS) + 1
        out.append((f"r100.topic-{t:04d}", leaders, float(rate[t])))
    return out


def _counters(seed: tuple[int, ...], per_second: np.ndarray, minutes: int) -> np.ndarray:
    """Counter values (series x minutes + 1 scrapes from T0) rising at ``per_second`` with a diurnal swing, 13 digits.

    Each hour's increments come from their own seed, so the first hours are the same whatever ``minutes`` is:
    a later slice continues an earlier one's counters exactly.
    """
    hours = -(-minutes // 60)
    noise = np.concatenate([np.random.default_rng([*seed, h]).gamma(4.0, 15.0, size=(per_second.size, 60)) for h in range(hours)], axis=1)
    m = np.arange(1, minutes + 1)
    diurnal = 1.0 + 0.5 * np.sin(2 * np.pi * (m / 1440.0 - 0.3))
    increments = noise[:, :minutes] * per_second[:, None] * diurnal[None, :]
    base = 10**12 + (np.arange(per_second.size, dtype=np.int64) * 7_919_993) % (10**12)
    return np.concatenate([base[:, None], base[:, None] + np.cumsum(increments, axis=1).astype(np.int64)], axis=1)


def _series_bytes(stamps: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Every series' value pairs as fixed-width bytes: uint8 (series, pairs, 29), the last comma included."""
    n, k = values.shape
    out = np.empty((n, k, len(PAIR)), dtype=np.uint8)
    out[:] = np.frombuffer(PAIR, dtype=np.uint8)
    ts = stamps.astype(np.int64)
    for d in range(10):
        out[:, :, 1 + d] = (48 + ts // 10 ** (9 - d) % 10)[None, :]
    if values.max() >= 10**DIGITS or values.min() < 10 ** (DIGITS - 1):
        raise ValueError("a counter left the 13-digit range: lower the rates")
    for d in range(DIGITS):
        out[:, :, 13 + d] = 48 + values // 10 ** (DIGITS - 1 - d) % 10
    return out


def generate(out: Path, hours: int, topics: int, brokers_per_file: int, start_minute: int = 0) -> tuple[list[Path], int, int]:
    """Write the exports and ``broker-map.toml`` (skipped when ``out/done.json`` exists); return the files, the
    samples and the series."""
    done = out / "done.json"
    if done.exists():
        meta = json.loads(done.read_text())
        return [out / f for f in meta["files"]], meta["samples"], meta["series"]
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    minutes = hours * 60
    stamps = T0 + 60 * np.arange(start_minute, start_minute + minutes + 1)
    pairs = [(b, topic, rate / len(leaders)) for topic, leaders, rate in topology(topics) for b in leaders.tolist()]
    by_broker: dict[int, list[tuple[str, float]]] = {}
    for b, topic, rate in pairs:
        by_broker.setdefault(b, []).append((topic, rate))
    names, samples = [], 0
    for i, metric in enumerate(METRICS):
        scale = 1.0 / 1_000.0 if "Messages" in metric else (1.3 if "BytesOut" in metric else 1.0)
        for g in range(1, BROKERS + 1, brokers_per_file):
            group = range(g, min(g + brokers_per_file, BROKERS + 1))
            # Prometheus sorts a matrix's series by their labels: instance before topic
            rows = sorted((f"kafka-{b}:7071", topic, rate) for b in group for topic, rate in by_broker.get(b, []))
            if not rows:
                continue
            path = out / f"{metric}-b{g:03d}.json"
            with path.open("wb") as fh:
                fh.write(b'{"status":"success","data":{"resultType":"matrix","result":[')
                for c in range(0, len(rows), 500):
                    chunk = rows[c:c + 500]
                    # from T0 on, so that a later slice continues the earlier one's counters exactly
                    values = _counters((i, g, c), np.array([r[2] for r in chunk]) * scale, start_minute + minutes)[:, start_minute:]
                    body = _series_bytes(stamps, values)
                    for s, (instance, topic, _) in enumerate(chunk):
                        head = (f'{{"metric":{{"__name__":"{metric}","instance":"{instance}","job":"kafka",'
                                f'"topic":"{topic}"}},"values":[').encode()
                        fh.write((b"," if c or s else b"") + head + body[s].tobytes()[:-1] + b"]}")
                    samples += body.shape[0] * body.shape[1]
                fh.write(b"]}}\n")
            names.append(path.name)
    (out / "broker-map.toml").write_text("".join(f'"kafka-{b}:7071" = {b}\n' for b in range(1, BROKERS + 1)))
    done.write_text(json.dumps({"files": names, "samples": samples, "series": len(pairs) * len(METRICS)}))
    return [out / n for n in names], samples, len(pairs) * len(METRICS)


def _ingest(exports: Path, out: Path, history: Path | None) -> dict[str, float]:
    poolplan = str(Path(sys.executable).with_name("poolplan"))
    argv = [poolplan, "ingest", "--query-range", str(exports / "kafka_*.json"), "--broker-map", str(exports / "broker-map.toml"),
            "--cluster", "r100", "--out", str(out)]
    return measure(argv + (["--history", str(history)] if history else []))


def _line(what: str, r: dict[str, float], samples: int) -> str:
    return (f"{what:<22} wall {r['wall']:7.1f} s  exit {r['code']}  {samples / r['wall'] / 1e6:5.2f} M samples/s  peak RSS "
            f"driver {r['driver']:6.0f} MB  JVM {r['jvm']:6.0f} MB (anonymous {r['jvm_anon']:6.0f} MB)  Python workers "
            f"{r['workers']:6.0f} MB  load(1m) before {r['load1']:.2f} after {os.getloadavg()[0]:.2f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", type=Path, required=True, help="where the exports and the outputs go (reused when present)")
    p.add_argument("--hours", type=int, default=24, help="hours of the day to generate (24: the whole day)")
    p.add_argument("--topics", type=int, default=TOPICS, help=f"the first N of R100's {TOPICS:,} topics")
    p.add_argument("--brokers-per-file", type=int, default=10)
    p.add_argument("--increment", action="store_true", help="then ingest the next --hours onto the first run's history")
    p.add_argument("--generate-only", action="store_true")
    a = p.parse_args()
    if not 1 <= a.hours <= 24 or not 1 <= a.topics <= TOPICS or a.brokers_per_file < 1:
        p.error(f"--hours 1-24, --topics 1-{TOPICS}, --brokers-per-file >= 1")
    t = time.monotonic()
    files, samples, series = generate(a.dir / "exports", a.hours, a.topics, a.brokers_per_file)
    size = sum(f.stat().st_size for f in files)
    print(f"R100 {a.hours} h, {a.topics:,} topics: {series:,} series, {samples:,} samples, {len(files)} files, "
          f"{size / 1e9:.2f} GB (ready in {time.monotonic() - t:.0f} s)", flush=True)
    if a.generate_only:
        return 0
    out = a.dir / "profile"
    shutil.rmtree(out, ignore_errors=True)
    r = _ingest(a.dir / "exports", out, None)
    print(_line("first run", r, samples), flush=True)
    if r["code"] != 0 or not a.increment:
        return int(r["code"] != 0)
    nxt, more, _ = generate(a.dir / "exports-next", a.hours, a.topics, a.brokers_per_file, start_minute=a.hours * 60)
    again = a.dir / "profile-next"
    shutil.rmtree(again, ignore_errors=True)
    i = _ingest(a.dir / "exports-next", again, out / "history")
    print(_line(f"+{a.hours} h onto history", i, more), flush=True)
    return int(i["code"] != 0)


if __name__ == "__main__":
    sys.exit(main())
