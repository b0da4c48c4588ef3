"""Benchmark: R100's per-topic series pulled with ``poolplan ingest --prometheus-mode per-topic``, 1, 3 and 7 days
and a daily increment, extrapolated linearly to a quarter; and the Prometheus query load of both modes.

R100 is the issue's reference cluster: 100 brokers on 5 racks, 2,000 topics, about 60,000 partitions at RF 3,
1-minute scrapes. Its per-topic aggregates are 2,000 topics x 3 metrics x 1,440 samples a day (8.64 M). They are
written the way a team's recording rules store them (``topic:kafka_server_brokertopicmetrics_bytesin:rate1m``,
one sample a minute per topic, evaluated at :30) and backfilled into a throw-away Debian ``prometheus`` with
``promtool tsdb create-blocks-from openmetrics`` (one file and one 24 h block per day). Rates are lognormal per
topic (median 20 kB/s, a few topics at tens of MB/s), with a daily cycle, noise and rare bursts.

Each run is the command a user types, timed as a whole (JVM start included) with its peak memory (the largest
resident set of the command and its children, JVM and Python workers, sampled every 0.2 s):

- ``--days 1,3,7``: a first run over that many days into an empty history;
- the increment: the history of the 7-day run, plus one new day (``days.json`` makes the pull fetch that day only;
  the profile is computed over all 8 days, as a daily run does).

The query load is stated from the pull's own figures (requests, samples) and, with ``--probe-hours H``, measured on
H hours of R100's raw per-(broker, topic) counters (about 150,000 series, backfilled alongside): the server time of
the per-topic query over them and of the raw pull's range selector, per raw sample read, scaled to a quarter.

    python benchmarks/bench_r100_topics.py --dir /work/scratch/pertopic/r100 --days 1,3,7 --probe-hours 1

``--quarter`` adds the daily increment onto a quarter: 89 days synthesized straight into the history's layout (the
same generator), then benchmark day 0 pulled onto them (an older version's history: every day's profile partial is
computed once) and day 1 onto the 90 days (the daily increment proper). ``--days "" --quarter`` runs it alone.
Every run prints its wall time, the profile's seconds (from ``-v``'s step lines) and the load before and after.

Needs ``prometheus`` and ``promtool`` on PATH. Keep ``--dir`` out of the repository (about 1 GB of TSDB for 8 days).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

TOPICS = 2_000
BROKERS = 100
#: Brokers a topic's leaders sit on: 60,000 partitions over 2,000 topics is 30 each, led by 25 of the 100 brokers
#: (50,000 (broker, topic) series per metric, 150,000 in all).
LEADER_BROKERS = 25
METRICS = {"bytes_in": "bytesin", "bytes_out": "bytesout", "messages_in": "messagesin"}
#: The first benchmark day (a fixed date: the same data every time).
FIRST_DAY = datetime(2026, 9, 1, tzinfo=timezone.utc)
MINUTES = 1_440
QUARTER_DAYS = 90


def _topic_rates(rng: np.random.Generator) -> np.ndarray:
    """Each topic's median bytes-in rate (B/s): lognormal, median 20 kB/s."""
    return np.exp(rng.normal(np.log(20_000), 1.6, TOPICS))


def _day_rates(day: int, base: np.ndarray) -> dict[str, np.ndarray]:
    """metric -> (topics, minutes) rates of ``day``: a daily cycle, noise and rare bursts; bytes-out a fan-out of
    bytes-in, messages-in bytes-in over the topic's message size."""
    rng = np.random.default_rng(1000 + day)
    minute = np.arange(MINUTES)
    cycle = 1 + 0.5 * np.sin(2 * np.pi * (minute / MINUTES - 0.3))
    bytes_in = base[:, None] * cycle[None, :] * rng.lognormal(0, 0.25, (TOPICS, MINUTES))
    bursts = rng.random((TOPICS, MINUTES)) < 0.001
    bytes_in = np.where(bursts, bytes_in * rng.uniform(3, 8, (TOPICS, MINUTES)), bytes_in)
    fan_out = np.random.default_rng(7).integers(0, 4, TOPICS)[:, None]
    size = np.random.default_rng(8).uniform(200, 4_000, TOPICS)[:, None]
    return {"bytes_in": bytes_in, "bytes_out": bytes_in * fan_out, "messages_in": bytes_in / size}


def _write_day(day: int, base: np.ndarray, path: Path) -> int:
    """One day of the recorded per-topic series as OpenMetrics (series by series, in time order); the samples."""
    start = int((FIRST_DAY + timedelta(days=day)).timestamp())
    times = [str(t) for t in range(start + 30, start + 30 + 60 * MINUTES, 60)]  # a rule group evaluated at :30
    samples = 0
    with path.open("w") as fh:
        for metric, rates in _day_rates(day, base).items():
            name = f"topic:kafka_server_brokertopicmetrics_{METRICS[metric]}:rate1m"
            fh.write(f"# TYPE {name} gauge\n")
            for topic in range(TOPICS):
                prefix = f'{name}{{topic="topic-{topic:04d}"}} '
                values = np.char.mod("%.6g", rates[topic])
                fh.write("".join(f"{prefix}{v} {t}\n" for v, t in zip(values.tolist(), times)))
                samples += MINUTES
        fh.write("# EOF\n")
    return samples


def _probe_counters(hours: int, path: Path) -> int:
    """``hours`` of R100's raw per-(broker, topic) counters (bytes-in) from the first day's midnight, as
    OpenMetrics; the series written. Each topic's leaders sit on `LEADER_BROKERS` brokers, scraped at their own
    offset in the minute."""
    rng = np.random.default_rng(5)
    start = int(FIRST_DAY.timestamp())
    offsets = rng.uniform(0, 60, BROKERS).round(3)
    steps = hours * 60 + 2
    series = 0
    with path.open("w") as fh:
        fh.write("# TYPE kafka_server_brokertopicmetrics_bytesin counter\n")
        for topic in range(TOPICS):
            for broker in sorted(rng.choice(BROKERS, LEADER_BROKERS, replace=False).tolist()):
                values = np.cumsum(rng.integers(0, 2_000_000, steps)) + 10**9
                times = start + offsets[broker] + 60 * np.arange(steps)
                prefix = f'kafka_server_brokertopicmetrics_bytesin_total{{instance="kafka-{broker}:7071",topic="topic-{topic:04d}"}} '
                fh.write("".join(f"{prefix}{v} {t:.3f}\n" for v, t in zip(values.tolist(), times.tolist())))
                series += 1
        fh.write("# EOF\n")
    return series


def backfill(directory: Path, days: int, probe_hours: int) -> dict:
    """Backfill ``days`` days (and the probe's counters) into ``directory/data``, once; return what it holds."""
    data = directory / "data"
    meta_path = directory / "backfill.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {"days": 0, "samples": 0, "seconds": 0.0, "probe_hours": 0}
    base = _topic_rates(np.random.default_rng(1))
    data.mkdir(parents=True, exist_ok=True)
    for day in range(meta["days"], days):
        started = time.monotonic()
        text = directory / f"day-{day}.om"
        meta["samples"] += _write_day(day, base, text)
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h", str(text), str(data)],
                       check=True, capture_output=True)
        text.unlink()
        meta["days"] = day + 1
        meta["seconds"] += time.monotonic() - started
        meta_path.write_text(json.dumps(meta))
        print(f"backfilled day {day + 1}/{days} ({time.monotonic() - started:.0f} s)", flush=True)
    if probe_hours > meta["probe_hours"]:
        text = directory / "probe.om"
        meta["probe_series"] = _probe_counters(probe_hours, text)
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h", str(text), str(data)],
                       check=True, capture_output=True)
        text.unlink()
        meta["probe_hours"] = probe_hours
        meta_path.write_text(json.dumps(meta))
    return meta


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(directory: Path) -> tuple[subprocess.Popen, str]:
    config = directory / "prometheus.yml"
    config.write_text("global: {}\nscrape_configs: []\n")
    port = _free_port()
    proc = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={directory / 'data'}", "--storage.tsdb.retention.time=10y",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=(directory / "prometheus.log").open("w"), stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"prometheus did not start: {(directory / 'prometheus.log').read_text()[-2000:]}")
        time.sleep(0.5)


def _tree_rss_kb(pid: int) -> int:
    """The summed resident set (kB) of ``pid`` and its descendants."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                total += next((int(line.split()[1]) for line in fh if line.startswith("VmRSS:")), 0)
            with open(f"/proc/{p}/task/{p}/children") as fh:
                todo += [int(c) for c in fh.read().split()]
        except OSError:
            continue
    return total


def timed(cmd: list[str]) -> tuple[float, int, subprocess.CompletedProcess, list[tuple[float, str]]]:
    """Run ``cmd``; its wall seconds, peak memory (MB, the process tree), result and standard error's lines, each with
    the seconds since the start it arrived at."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    lines: list[tuple[float, str]] = []

    def watch() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            time.sleep(0.2)

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.monotonic() - started, line))

    threads = [threading.Thread(target=watch, daemon=True), threading.Thread(target=read, daemon=True)]
    for t in threads:
        t.start()
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.wait()
    for t in threads:
        t.join()
    err = "".join(line for _, line in lines)
    return time.monotonic() - started, peak[0] // 1024, subprocess.CompletedProcess(cmd, proc.returncode, out, err), lines


def _step_seconds(lines: list[tuple[float, str]], step: str, until: str) -> float | None:
    """Seconds from the ``-v`` console's line of ``step`` to the line of the step ``until``."""
    steps = [(t, line.split(": ", 1)[1]) for t, line in lines if line.startswith("  ingest ") and ": " in line]
    begin = next((t for t, text in steps if text.startswith(step)), None)
    end = next((t for t, text in steps if text.startswith(until)), None)
    return None if begin is None or end is None else end - begin


def ingest(url: str, out: Path, first_day: int, days: int, *, history: Path | None = None) -> dict:
    """``poolplan -v ingest --prometheus-mode per-topic`` over ``days`` days from benchmark day ``first_day`` (``-v``:
    the console prints each step as it starts, which times the profile)."""
    poolplan = str(Path(sys.executable).with_name("poolplan"))
    start = FIRST_DAY + timedelta(days=first_day)
    end = start + timedelta(days=days, minutes=2)  # the last minute's rate is recorded a minute and a half later
    cmd = [poolplan, "-v", "ingest", "--prometheus", url, "--prometheus-mode", "per-topic", "--start", start.isoformat(),
           "--end", end.isoformat(), "--cluster", "r100", "--out", str(out)]
    if history is not None:
        cmd += ["--history", str(history)]
    load = os.getloadavg()[0]
    wall, peak_mb, run, lines = timed(cmd)
    if run.returncode != 0:
        raise SystemExit(f"ingest failed ({run.returncode}): {run.stderr[-3000:]}")
    quality = json.loads((out / "quality.json").read_text())
    records = quality["sources"]["prometheus"]["read"]
    return {"days": days, "wall_s": wall, "records": records, "records_per_s": records / wall, "peak_mb": peak_mb,
            "requests": quality["prometheus"]["requests"], "load": load, "load_after": os.getloadavg()[0], "topics": quality["topics"],
            "profile_s": _step_seconds(lines, "computing the topic profile", "writing the quarantine")}


def synthesize_history(path: Path, days: int) -> None:
    """``days`` days of R100's per-topic history before the first benchmark day, straight into the history's layout
    (``cluster=r100/dt=<day>/``, one file a day, rows by topic and time, `broker_id` -1, source ``prometheus``), from the
    same generator as the backfilled days; days already there are kept."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = _topic_rates(np.random.default_rng(1))
    n = TOPICS * MINUTES
    topics = np.repeat(np.array([f"topic-{t:04d}" for t in range(TOPICS)], dtype=object), MINUTES)
    for back in range(1, days + 1):
        day = FIRST_DAY - timedelta(days=back)
        target = path / "cluster=r100" / f"dt={day:%Y-%m-%d}" / "part-00000-synthetic.c000.zstd.parquet"
        if target.exists():
            continue
        rates = _day_rates(-back, base)
        ts = int(day.timestamp()) * 1_000_000 + 60_000_000 * np.arange(MINUTES, dtype=np.int64)
        table = pa.table({
            "ts": pa.array(np.tile(ts, TOPICS), pa.timestamp("us", tz="UTC")),
            "interval_s": pa.array(np.full(n, 60, np.int32)),
            "broker_id": pa.array(np.full(n, -1, np.int32)),
            "topic": pa.array(topics, pa.string()),
            **{m: pa.array(np.round(rates[m] * 60).astype(np.int64).ravel()) for m in METRICS},
            "bytes_out_interval_s": pa.nulls(n, pa.int32()),
            "messages_in_interval_s": pa.nulls(n, pa.int32()),
            "source": pa.array(["prometheus"] * n, pa.string()),
            "flags": pa.array(np.zeros(n, np.int32)),
        })
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.tmp")
        pq.write_table(table, temporary, compression="zstd")
        os.replace(temporary, target)


def quarter(url: str, directory: Path) -> list[tuple[str, dict]]:
    """The daily increment onto a quarter: `QUARTER_DAYS` - 1 synthesized days, then benchmark day 0 pulled onto them
    (a history of an older version: no day has its profile partial yet), then day 1 onto the 90 days (each day has
    one: the daily increment)."""
    source = directory / "history-quarter-source"
    started = time.monotonic()
    synthesize_history(source, QUARTER_DAYS - 1)
    print(f"synthesized {QUARTER_DAYS - 1} days of history in {time.monotonic() - started:.0f} s", flush=True)
    history = directory / "history-quarter"
    shutil.rmtree(history, ignore_errors=True)
    shutil.copytree(source, history)
    runs = []
    for what, day in (("upgrade", 0), ("daily", 1)):
        out = directory / f"run-quarter-{what}"
        shutil.rmtree(out, ignore_errors=True)
        runs.append((what, ingest(url, out, day, 1, history=history)))
    return runs


def _query_seconds(url: str, path: str, params: dict[str, str]) -> tuple[float, int]:
    """The server's own evaluation time of a query (``stats=all``) and the samples it returned."""
    body = urllib.parse.urlencode({**params, "stats": "all"}).encode()
    with urllib.request.urlopen(urllib.request.Request(url + path, data=body), timeout=3600) as r:
        doc = json.loads(r.read())
    timings = doc["data"].get("stats", {}).get("timings", {})
    result = doc["data"]["result"]
    samples = sum(len(s.get("values", [])) for s in result) if doc["data"]["resultType"] == "matrix" else len(result)
    return float(timings.get("execTotalTime", 0.0)), samples


def probe(url: str, hours: int, series: int) -> dict:
    """Server time per raw sample read: the per-topic query over ``hours`` of the probe's counters, and the raw pull's
    range selector over the same samples."""
    start = FIRST_DAY.timestamp()
    raw_samples = series * (hours * 60 + 2)
    selector = '{__name__="kafka_server_brokertopicmetrics_bytesin_total",topic!=""}'
    per_topic_s, per_topic_out = _query_seconds(url, "/api/v1/query_range", {
        "query": f"sum by (topic) (irate({selector}[119999ms]))", "start": f"{start + 119.999:.3f}",
        "end": f"{start + hours * 3600 + 59.999:.3f}", "step": "60s"})
    window_ms = (hours * 60 + 2) * 60_000
    raw_s, _ = _query_seconds(url, "/api/v1/query", {"query": f"{selector}[{window_ms}ms]", "time": f"{start + (hours * 60 + 2) * 60 - 0.001:.3f}"})
    return {"hours": hours, "series": series, "raw_samples": raw_samples, "per_topic_s": per_topic_s, "per_topic_samples": per_topic_out,
            "raw_s": raw_s}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument("--days", default="1,3,7", help="first runs of these many days (comma-separated)")
    p.add_argument("--no-increment", action="store_true", help="skip the daily increment onto the longest run's history")
    p.add_argument("--probe-hours", type=int, default=0, help="hours of raw counters to measure the server's query time on")
    p.add_argument("--quarter", action="store_true",
                   help=f"the daily increment onto a quarter: {QUARTER_DAYS - 1} synthesized days, then two days pulled one at a time")
    a = p.parse_args()
    lengths = sorted({int(d) for d in a.days.split(",") if d})  # --days "": the probe alone
    needed = max((lengths[-1] if lengths else 0) + (0 if a.no_increment or not lengths else 1), 2 if a.quarter else 0)
    a.dir.mkdir(parents=True, exist_ok=True)
    meta = backfill(a.dir, needed, a.probe_hours)
    print(f"backfill: {meta['samples']:,} per-topic samples ({meta['days']} days, {TOPICS} topics x 3 metrics) in {meta['seconds']:.0f} s")
    proc, url = serve(a.dir)
    try:
        rows = []
        print(f"{'run':<10} {'days':>4} {'wall s':>7} {'profile s':>9} {'records':>12} {'records/s':>10} {'peak MB':>8} {'requests':>8} "
              f"{'load':>11}", flush=True)

        def show(what: str, r: dict) -> None:
            rows.append((what, r))
            profile = f"{r['profile_s']:>9.1f}" if r["profile_s"] is not None else f"{'?':>9}"
            print(f"{what:<10} {r['days']:>4} {r['wall_s']:>7.1f} {profile} {r['records']:>12,} {r['records_per_s']:>10,.0f} "
                  f"{r['peak_mb']:>8,} {r['requests']:>8} {r['load']:>5.1f}->{r['load_after']:<5.1f}", flush=True)

        for days in lengths:
            out = a.dir / f"run-{days}d"
            shutil.rmtree(out, ignore_errors=True)
            show("first run", ingest(url, out, 0, days))
        if lengths and not a.no_increment:
            base = a.dir / f"run-{lengths[-1]}d"
            out = a.dir / "run-increment"
            shutil.rmtree(out, ignore_errors=True)
            history = a.dir / "history-increment"
            shutil.rmtree(history, ignore_errors=True)
            shutil.copytree(base / "history", history)
            show("increment", ingest(url, out, 0, lengths[-1] + 1, history=history))
        if a.quarter:
            for what, r in quarter(url, a.dir):
                show(f"Q {what}", r)
            print(f"Q upgrade: day 0 onto {QUARTER_DAYS - 1} synthesized days without profile partials (each computed once); "
                  f"Q daily: day 1 onto the {QUARTER_DAYS} days, every partial stored")
        first = [r for what, r in rows if what == "first run"]
        if len(first) >= 2:
            slope, intercept = np.polyfit([r["days"] for r in first], [r["wall_s"] for r in first], 1)
            print(f"linear fit: {intercept:.1f} s + {slope:.1f} s/day; a {QUARTER_DAYS}-day first run: {intercept + slope * QUARTER_DAYS:.0f} s "
                  f"({(intercept + slope * QUARTER_DAYS) / 60:.1f} min)")
        per_day_requests = first[-1]["requests"] / first[-1]["days"] if first else 3
        print(f"query load, per-topic: {per_day_requests:.0f} requests/day, {TOPICS * MINUTES:,} samples per request; "
              f"a quarter: {per_day_requests * QUARTER_DAYS:.0f} requests, {TOPICS * 3 * MINUTES * QUARTER_DAYS / 1e6:.0f} M samples")
        if a.probe_hours:
            m = probe(url, a.probe_hours, meta["probe_series"])
            scale = 3 * (QUARTER_DAYS * 1440) / (m["hours"] * 60)  # three metrics, a quarter of minutes
            print(f"probe: {m['series']:,} raw bytes-in series x {m['hours']} h = {m['raw_samples']:,} raw samples; server time: per-topic "
                  f"sum by (topic)(irate) {m['per_topic_s']:.2f} s ({m['per_topic_samples']:,} samples out), raw range selector {m['raw_s']:.2f} s")
            print(f"quarter (3 metrics, scaled): per-topic from counters {m['per_topic_s'] * scale / 60:.0f} min of server time, "
                  f"{m['per_topic_samples'] * scale / 1e6:.0f} M samples sent; raw pull {m['raw_s'] * scale / 60:.0f} min of server time, "
                  f"{m['raw_samples'] * scale / 1e9:.1f} G samples sent")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
