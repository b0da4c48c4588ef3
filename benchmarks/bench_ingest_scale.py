"""Benchmark: `poolplan ingest` on query_range exports of growing size, with the default settings.

Writes synthetic ``/api/v1/query_range`` exports (raw counters of B brokers x T topics, one metric and one
week at a 60 s step per file, compact JSON as Prometheus writes it) of about ``--gb`` GB in ``--files``
files under ``--dir`` (reused when present), then runs ``poolplan ingest --query-range ...`` in a child
process exactly as a user would and samples the memory of every process it starts every 0.2 s. Prints
wall time, value pairs read, records per second, the peak resident memory of the driver (the poolplan
Python process), the JVM and the Python workers, and the load average before the run. With ``--history``
it then runs the same profile from the Parquet history alone.

    python benchmarks/bench_ingest_scale.py --gb 1 --files 1 --dir /tmp/bench-scale-1g   # one 1 GB file
    python benchmarks/bench_ingest_scale.py --gb 4 --files 16 --dir /tmp/bench-scale-4g --history
    nice python benchmarks/bench_ingest_scale.py --set --dir /work/scratch/bench-scale      # the whole export set

``--set`` runs the export set of docs/benchmarks/ingest.md one after the other: one 0.25 GB file, one 1 GB
file, 4 GB in 16 files (``--dir``/0.25g-1, 1g-1, 4g-16; about 5.3 GB on disk), and prints one line each. Memory
is the peak of each process kind's resident set summed over its processes (sampled every 0.2 s), and ``total``
the peak of everything the command started at one instant: what the machine must hold.

Generated inputs are large: keep ``--dir`` out of the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

T0 = 1_792_972_800  # 2026-10-26T00:00:00Z, a Monday
WEEK_POINTS = 7 * 1440
NAMES = (
    "kafka_server_brokertopicmetrics_bytesin_total",
    "kafka_server_brokertopicmetrics_bytesout_total",
    "kafka_server_brokertopicmetrics_messagesin_total",
)
BROKERS = 12
PAIR_BYTES = 26  # about: [1793000000,"1234567890123"],
#: The export set of docs/benchmarks/ingest.md: (GB, files)
EXPORT_SET = ((0.25, 1), (1.0, 1), (4.0, 16))


def generate(out: Path, gb: float, files: int) -> tuple[list[Path], int]:
    """Write the exports (skipped when ``out/done.json`` exists); return the files and the value pairs."""
    done = out / "done.json"
    if done.exists():
        meta = json.loads(done.read_text())
        return [out / f for f in meta["files"]], meta["pairs"]
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    series = max(1, int(gb * 1e9 / files / (WEEK_POINTS * PAIR_BYTES)))
    topics = max(1, series // BROKERS)
    rng = np.random.default_rng(0)
    names, pairs = [], 0
    for i in range(files):
        metric, week = NAMES[i % 3], i // 3
        start = T0 + week * 7 * 86_400
        stamps = [str(start + 60 * k).encode() for k in range(1, WEEK_POINTS + 1)]
        path = out / f"{metric}-w{week:03d}.json"
        with path.open("wb") as fh:
            fh.write(b'{"status":"success","data":{"resultType":"matrix","result":[')
            for s in range(topics * BROKERS):
                broker, topic = s % BROKERS + 1, s // BROKERS
                values = np.cumsum(rng.gamma(2.0, 5_000.0 * (1 + topic % 50), WEEK_POINTS)).astype(np.int64) + 10**9
                body = b",".join(b'[%s,"%d"]' % (t, v) for t, v in zip(stamps, values.tolist()))
                head = b'{"metric":{"__name__":"%s","instance":"%d","job":"kafka","topic":"t%05d"},"values":[' % (metric.encode(), broker, topic)
                fh.write((b"," if s else b"") + head + body + b"]}")
                pairs += WEEK_POINTS
            fh.write(b"]}}\n")
        names.append(path.name)
    done.write_text(json.dumps({"files": names, "pairs": pairs}))
    return [out / n for n in names], pairs


def _rss_kb(pid: int, field: str = "VmRSS") -> int:
    """Resident memory of ``pid`` in kB: all of it (``VmRSS``) or only its anonymous memory (``RssAnon``: heap,
    native buffers; not the file pages of memory-mapped shuffle files, which the kernel can drop)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text().split()
            out += [int(c) for c in text]
    except OSError:
        pass
    return out


def _kind(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    if "java" in cmd.split(" ", 1)[0]:
        return "jvm"
    return "workers"


def measure(argv: list[str]) -> dict[str, float]:
    """Run ``argv``; return wall seconds, the exit code and peak RSS (MB) of the driver, the JVM and the Python workers."""
    load = os.getloadavg()
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peaks = {"driver": 0, "jvm": 0, "jvm_anon": 0, "workers": 0, "total": 0}
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            now = {"driver": _rss_kb(proc.pid), "jvm": 0, "jvm_anon": 0, "workers": 0}
            todo = _children(proc.pid)
            while todo:
                pid = todo.pop()
                todo += _children(pid)
                kind = _kind(pid)
                if kind in now:
                    now[kind] += _rss_kb(pid)
                if kind == "jvm":
                    now["jvm_anon"] += _rss_kb(pid, "RssAnon")
            now["total"] = now["driver"] + now["jvm"] + now["workers"]
            for k, v in now.items():
                peaks[k] = max(peaks[k], v)
            time.sleep(0.2)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    _, err = proc.communicate()
    stop.set()
    thread.join()
    wall = time.monotonic() - started
    if proc.returncode != 0:
        print(err[-3000:], file=sys.stderr)
    return {"wall": wall, "code": proc.returncode, "load1": load[0], **{k: v / 1024 for k, v in peaks.items()}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gb", type=float)
    p.add_argument("--files", type=int)
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument("--history", action="store_true", help="then profile from the Parquet history alone")
    p.add_argument("--sample", type=Path, help="instead: ingest this `poolplan sample` directory's metrics as `poolplan run` does")
    p.add_argument("--set", action="store_true", help="the export set: 0.25 GB in 1 file, 1 GB in 1 file, 4 GB in 16 files")
    a = p.parse_args()
    if a.sample:
        return _sample(a.sample, a.dir)
    if a.set:
        codes = [_exports(a.dir / f"{gb:g}g-{files}", gb, files, history=a.history) for gb, files in EXPORT_SET]
        return max(codes)
    if a.gb is None or a.files is None:
        p.error("--gb and --files are required without --sample or --set")
    return _exports(a.dir, a.gb, a.files, history=a.history)


def _exports(work: Path, gb: float, files: int, *, history: bool) -> int:
    """Generate (or reuse) ``gb`` GB of exports in ``files`` files under ``work``, ingest them and print the figures."""
    t = time.monotonic()
    paths, pairs = generate(work / "exports", gb, files)
    size = sum(f.stat().st_size for f in paths)
    print(f"exports: {len(paths)} files, {size / 1e9:.2f} GB, {pairs:,} value pairs (ready in {time.monotonic() - t:.0f} s)", flush=True)
    poolplan = str(Path(sys.executable).with_name("poolplan"))
    out = work / "profile"
    shutil.rmtree(out, ignore_errors=True)
    r = measure([poolplan, "ingest", "--query-range", str(work / "exports" / "kafka_*.json"), "--cluster", "bench", "--out", str(out)])
    print(
        f"raw exports {size / 1e9:5.2f} GB  wall {r['wall']:7.1f} s  exit {r['code']}  {pairs / r['wall'] / 1e6:5.2f} M records/s  "
        f"peak RSS driver {r['driver']:6.0f} MB  JVM {r['jvm']:6.0f} MB (anonymous {r['jvm_anon']:6.0f} MB)  Python workers "
        f"{r['workers']:6.0f} MB  total {r['total']:6.0f} MB  load(1m) before {r['load1']:.2f} after {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    if history and r["code"] == 0:
        again = work / "profile-history"
        shutil.rmtree(again, ignore_errors=True)
        h = measure([poolplan, "ingest", "--history", str(out / "history"), "--cluster", "bench", "--out", str(again)])
        rows = json.loads((out / "quality.json").read_text())["normalized_rows"]
        print(
            f"history only  wall {h['wall']:7.1f} s  exit {h['code']}  {rows / h['wall'] / 1e6:5.2f} M rows/s  peak RSS driver "
            f"{h['driver']:6.0f} MB  JVM {h['jvm']:6.0f} MB  load(1m) before {h['load1']:.2f}",
            flush=True,
        )
    return int(r["code"] != 0)


def _sample(sample: Path, work: Path) -> int:
    """Ingest a generated sample (exposition text, query_range exports, log-dirs captures) and print the figures."""
    m = sample / "metrics"
    pairs = sum(f.stat().st_size for f in m.rglob("*") if f.is_file())
    poolplan = str(Path(sys.executable).with_name("poolplan"))
    out = work / "profile"
    shutil.rmtree(out, ignore_errors=True)
    argv = [
        poolplan, "ingest", "--prom", str(m / "prom" / "*" / "*.prom"), "--query-range", str(m / "query_range" / "*.json"),
        "--log-dirs", str(sample / "kafka" / "log-dirs" / "*.txt"), "--broker-map", str(sample / "broker-map.toml"),
        "--cluster", "sample", "--out", str(out),
    ]
    r = measure(argv)
    read = json.loads((out / "quality.json").read_text())["totals"]["read"] if r["code"] == 0 else 0
    print(
        f"sample {sample} ({pairs / 1e6:.0f} MB of metrics): wall {r['wall']:7.1f} s  exit {r['code']}  {read:,} records  "
        f"{read / r['wall'] / 1e6:5.2f} M records/s  peak RSS driver {r['driver']:6.0f} MB  JVM {r['jvm']:6.0f} MB "
        f"(anonymous {r['jvm_anon']:6.0f} MB)  Python workers {r['workers']:6.0f} MB  load(1m) before {r['load1']:.2f} "
        f"after {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
