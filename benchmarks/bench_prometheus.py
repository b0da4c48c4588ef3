"""Benchmark: `poolplan ingest --prometheus` pulling a sample's history from a real local Prometheus server.

Backfills Debian's ``prometheus`` with the counter samples of ``poolplan sample --brokers B --topics T --days D``
(``promtool tsdb create-blocks-from openmetrics``), starts it on a loopback port, then runs ``poolplan ingest
--prometheus URL`` as a user would, once with raw counters (``--prometheus-query counters``, the default) and
once with ``increase()`` computed by the server. Prints for each: the wall time of the whole ingest, the
fetch's samples per second (as ``quality.json`` records it), the requests and the samples fetched. The server is
stopped at the end, whatever happens.

    python benchmarks/bench_prometheus.py --brokers 12 --topics 60 --days 7 --dir /tmp/bench-prom-pull

Needs ``prometheus`` and ``promtool`` on PATH (``apt-get install prometheus``). Keep ``--dir`` out of the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def backfill(spec, data: Path) -> tuple[int, float]:
    """Write the sample's counters as OpenMetrics and turn them into TSDB blocks under ``data``; return the
    samples and the seconds the backfill took (skipped when ``data`` already holds them)."""
    from planner.sample.sample_dir import counters_openmetrics

    done = data / "bench.json"
    if done.exists():
        meta = json.loads(done.read_text())
        return meta["samples"], meta["seconds"]
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    started = time.monotonic()
    metrics = data.parent / "counters.om"
    samples = 0
    with metrics.open("w") as fh:
        for line in counters_openmetrics(spec):
            samples += line.count("\n") - line.count("# ")
            fh.write(line)
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=72h", str(metrics), str(data)],
        check=True, capture_output=True,
    )
    metrics.unlink()
    seconds = time.monotonic() - started
    done.write_text(json.dumps({"samples": samples, "seconds": seconds}))
    return samples, seconds


def serve(data: Path, log: Path) -> tuple[subprocess.Popen, str]:
    config = data.parent / "prometheus.yml"
    config.write_text("global: {}\nscrape_configs: []\n")
    port = _free_port()
    proc = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={data}", "--storage.tsdb.retention.time=10y",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log.open("w"), stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"prometheus did not start: {log.read_text()[-2000:]}")
        time.sleep(0.5)


def main() -> int:
    from planner.sample.cluster import SampleSpec

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", type=int, default=12)
    p.add_argument("--topics", type=int, default=60)
    p.add_argument("--days", type=int, default=7)
    p.add_argument("--dir", type=Path, required=True)
    a = p.parse_args()
    spec = SampleSpec(brokers=a.brokers, topics=a.topics, days=a.days)
    poolplan = str(Path(sys.executable).with_name("poolplan"))
    sample = a.dir / "sample"
    if not (sample / "broker-map.toml").exists():  # the instance label -> broker id map of the same sample
        subprocess.run([poolplan, "sample", "--out", str(sample), "--seed", str(spec.seed), "--brokers", str(a.brokers),
                        "--topics", str(a.topics), "--days", str(a.days)], check=True, capture_output=True)
    samples, seconds = backfill(spec, a.dir / "data")
    print(f"backfill: {samples:,} counter samples in {seconds:.0f} s ({spec.brokers} brokers, {spec.topics} topics, {spec.days} days)")
    start = datetime.fromtimestamp(spec.end - spec.days * 86_400, tz=timezone.utc).isoformat()
    end = datetime.fromtimestamp(spec.end + 60, tz=timezone.utc).isoformat()
    proc, url = serve(a.dir / "data", a.dir / "prometheus.log")
    try:
        for query in ("counters", "increase"):
            out = a.dir / f"profile-{query}"
            shutil.rmtree(out, ignore_errors=True)
            load = os.getloadavg()[0]
            t = time.monotonic()
            run = subprocess.run(
                [poolplan, "ingest", "--prometheus", url, "--prometheus-query", query, "--start", start, "--end", end,
                 "--broker-map", str(sample / "broker-map.toml"), "--cluster", "sample", "--out", str(out)],
                capture_output=True, text=True,
            )
            wall = time.monotonic() - t
            if run.returncode != 0:
                print(run.stderr[-3000:], file=sys.stderr)
                return run.returncode
            quality = json.loads((out / "quality.json").read_text())
            pull = quality["prometheus"]
            print(
                f"{query:9s} ingest wall {wall:6.1f} s  fetch {pull['samples_per_s']:>10,} samples/s  requests {pull['requests']:>4}  "
                f"records read {quality['totals']['read']:>12,}  load(1m) before {load:.2f} after {os.getloadavg()[0]:.2f}"
            )
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
