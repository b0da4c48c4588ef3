"""`poolplan ingest --prometheus` against a real Prometheus server (Debian's package), backfilled with promtool.

One server per module holds two data sets far apart in time (so in separate TSDB blocks):
- the counter samples of a `poolplan sample` (written as OpenMetrics); the profile pulled from it must equal
  the one made from the sample's files;
- one small day (2025-03-03) of the same counters under each exporter's spelling, told apart by the ``job``
  label (`FAMILIES`): every spelling must give the profile of the same counters read from exposition text.
Every process started here is stopped here.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from pools.errors import InputError
from tests.spark_jobs.test_ingest import RATE_COLUMNS

pytestmark = [
    pytest.mark.slow,  # starts a real Prometheus server
    pytest.mark.xdist_group("prometheus"),  # one Prometheus server per module: one xdist worker
    pytest.mark.skipif(shutil.which("prometheus") is None or shutil.which("promtool") is None, reason="needs Debian's prometheus package (.ci/run installs it)"),
]

SPEC = {"brokers": 6, "topics": 6, "days": 2, "step_s": 60}
#: The small day: 2025-03-03T00:00:00Z, scraped every minute through the next midnight.
DAY0 = 1_740_960_000
TIMES = DAY0 + 60 * np.arange(1441)
BROKERS = {"b1:7071": 1, "b2:7071": 2}
TOPICS = ("clicks", "orders", "payments")
METERS = ("BytesIn", "BytesOut", "MessagesIn")
#: job label → how its series are named: (metric name of a meter, extra labels, OpenMetrics type, values are rates)
FAMILIES = {
    "camel": lambda m: (f"kafka_server_BrokerTopicMetrics_{m}_total", {}, "counter", False),
    "norules": lambda m: ("kafka_server_BrokerTopicMetrics_Count", {"name": f"{m}PerSec"}, "unknown", False),
    "confluent": lambda m: (f"kafka_server_brokertopicmetrics_{m.lower()}persec", {}, "unknown", False),
    "topicrule": lambda m: (f"kafka_topic_{m}PerSec_total", {"metric": f"{m}PerSec"}, "counter", False),
    "rates": lambda m: (f"kafka_server_broker_topic_metrics_{m.lower()}persec_rate", {}, "gauge", True),
}
#: Beside its counters, the no-rules family has Cruise Control's OneMinuteRate gauges: never used over a counter.
NORULES_RATE = "kafka_server_BrokerTopicMetrics_OneMinuteRate"
#: An instance with traffic that the broker map does not name, in the "unmapped" job (CamelCase counters).
UNMAPPED = "b9:7071"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _counters() -> dict[tuple[str, str, str], np.ndarray]:
    """(instance, topic, meter) → the counter at `TIMES`: random whole increments, one meter re-created mid-day."""
    rng = np.random.default_rng(22)
    out = {}
    for instance in (*BROKERS, UNMAPPED):
        for topic in TOPICS:
            for meter in METERS:
                scale = 50 if meter == "MessagesIn" else 40_000
                out[instance, topic, meter] = np.cumsum(rng.integers(0, scale, TIMES.size)).astype(float) + 1000
    values = out["b1:7071", "orders", "BytesIn"]
    values[700:] -= values[699] - 10  # leadership moved away and back: the meter counts again from 0
    return out


def _rates(values: np.ndarray) -> np.ndarray:
    """The rate of the minute that ends at each time (after a fall, the new meter's value), NaN first."""
    delta = np.diff(values)
    delta = np.where(delta < 0, values[1:], delta)
    return np.r_[np.nan, delta / 60]


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))


def _families_openmetrics() -> Iterator[str]:
    counters = _counters()
    blocks: dict[tuple[str, str], list[str]] = {}
    for job, spelling in (*FAMILIES.items(), ("unmapped", FAMILIES["camel"])):
        instances = (*BROKERS, UNMAPPED) if job == "unmapped" else tuple(BROKERS)
        for meter in METERS:
            name, extra, kind, rates = spelling(meter)
            series = [(name, extra, rates)]
            if job == "norules":
                series.append((NORULES_RATE, extra, True))
            for metric_name, extra_labels, as_rate in series:
                family = metric_name.removesuffix("_total") if kind == "counter" and not as_rate else metric_name
                kind_of = "gauge" if as_rate else kind
                lines = blocks.setdefault((family, kind_of), [])
                for instance in instances:
                    for topic in TOPICS:
                        values = counters[instance, topic, meter]
                        values = _rates(values) if as_rate else values
                        text = _labels({"instance": instance, "job": job, "topic": topic, **extra_labels})
                        lines += [f"{metric_name}{{{text}}} {v!r} {t}\n" for t, v in zip(TIMES.tolist(), values.tolist()) if v == v]
    for (family, kind), lines in blocks.items():
        yield f"# TYPE {family} {kind}\n"
        yield from lines


#: The offsets day (2025-03-10): brokers scraped every 60 s at different offsets in the minute, as real targets are.
DAY1 = 1_741_564_800
OFFSETS = {"o1:7071": 0.0, "o2:7071": 17.234, "o3:7071": 59.5}
OFFSET_TOPICS = ("t1", "t2", "t3")
#: Scrapes of each series: the day and three minutes of the next (the last minutes' closing scrapes).
OFFSET_SCRAPES = 1443
#: The counters' spelling in the offsets set (no other set uses it, so each family stays one OpenMetrics block).
OFFSET_NAME = "kafka_server_BrokerTopicMetrics_{}PerSec_total"
#: The per-topic recording rule of the "rules" job: bytes-in summed per (job, topic), a per-second rate per minute.
RULE_NAME = "job_topic:kafka_server_brokertopicmetrics_bytesin:rate1m"


def _offset_series() -> dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]]:
    """(instance, topic, meter) → (scrape times, counter values) of the offsets day, with what the per-topic mode
    cannot see planted in bytes-in: a missed scrape (o2/t1), a reset (o3/t2), a meter created mid-day (o1/t3) and
    one closed mid-day (o2/t3)."""
    rng = np.random.default_rng(23)
    out = {}
    for instance, offset in OFFSETS.items():
        times = DAY1 + offset + 60 * np.arange(OFFSET_SCRAPES)
        for topic in OFFSET_TOPICS:
            for meter in METERS:
                scale = 50 if meter == "MessagesIn" else 40_000
                values = np.cumsum(rng.integers(0, scale, times.size)).astype(float) + 10**9
                out[instance, topic, meter] = (times, values)
    times, values = out["o2:7071", "t1", "BytesIn"]
    out["o2:7071", "t1", "BytesIn"] = np.delete(times, 300), np.delete(values, 300)
    times, values = out["o3:7071", "t2", "BytesIn"]
    values[600:] -= values[599] - 500  # the broker restarted: the meter counts again from 0
    times, values = out["o1:7071", "t3", "BytesIn"]
    out["o1:7071", "t3", "BytesIn"] = times[900:], values[900:] - values[899]  # leadership moved here: a new meter
    times, values = out["o2:7071", "t3", "BytesIn"]
    out["o2:7071", "t3", "BytesIn"] = times[:1000], values[:1000]  # and away from here: the meter is closed
    return out


def _topic_rates(series: dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]], meter: str) -> dict[str, dict[int, float]]:
    """topic → {minute (s) → the sum over brokers of each 60 s scrape step's rate starting in it}: what the
    per-topic mode reads (a step across a missed scrape, and a meter's first value, are not there)."""
    out: dict[str, dict[int, float]] = {}
    for (_, topic, m), (times, values) in sorted(series.items()):
        if m != meter:
            continue
        rates = out.setdefault(topic, {})
        delta = np.where(values[1:] < values[:-1], values[1:], values[1:] - values[:-1])
        for start, step, d in zip(times[:-1].tolist(), np.diff(times).tolist(), delta.tolist()):
            if step < 119.999:
                minute = int(start // 60 * 60)
                rates[minute] = rates.get(minute, 0.0) + d / step
    return out


def _offsets_openmetrics() -> Iterator[str]:
    series = _offset_series()
    for meter in METERS:
        name = OFFSET_NAME.format(meter)
        yield f"# TYPE {name.removesuffix('_total')} counter\n"
        for (instance, topic, m), (times, values) in sorted(series.items()):
            if m == meter:
                text = _labels({"instance": instance, "job": "offsets", "topic": topic})
                yield from (f"{name}{{{text}}} {v!r} {t:.3f}\n" for t, v in zip(times.tolist(), values.tolist()))
    yield f"# TYPE {RULE_NAME} gauge\n"
    for topic, rates in sorted(_topic_rates(series, "BytesIn").items()):
        text = _labels({"job": "rules", "topic": topic})
        yield from (f"{RULE_NAME}{{{text}}} {r!r} {minute + 90}\n" for minute, r in sorted(rates.items()))  # evaluated at :30


def _families_text(directory: Path) -> Path:
    """The same counters (mapped brokers) as exposition text files with ms timestamps, one per broker."""
    counters = _counters()
    for instance in BROKERS:
        lines = []
        for meter in METERS:
            name = f"kafka_server_brokertopicmetrics_{meter.lower()}_total"
            lines.append(f"# TYPE {name} counter\n")
            for topic in TOPICS:
                text = _labels({"instance": instance, "job": "files", "topic": topic})
                lines += [f"{name}{{{text}}} {v!r} {t * 1000}\n" for t, v in zip(TIMES.tolist(), counters[instance, topic, meter].tolist())]
        (directory / f"{instance.split(':')[0]}.prom").write_text("".join(lines))
    return directory


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from planner.cli import main

    out = tmp_path_factory.mktemp("sample") / "s"
    flags = {"step" if k == "step_s" else k: v for k, v in SPEC.items()}  # SampleSpec's step_s is --step
    assert main(["sample", "--out", str(out), *[f"--{k}={v}" for k, v in flags.items()]]) == 0
    return out


def _start(config: Path, data: Path, port: int, log: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            "prometheus", f"--config.file={config}", f"--storage.tsdb.path={data}", "--storage.tsdb.retention.time=10y",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log.open("a"), stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise RuntimeError(f"prometheus did not start: {log.read_text()[-2000:]}")
        time.sleep(0.3)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TSDB directory holding the sample's counters and the small day in every spelling."""
    from planner.sample.sample_dir import counters_openmetrics
    from planner.sample.cluster import SampleSpec

    root = tmp_path_factory.mktemp("prometheus")
    metrics = root / "counters.om"
    with metrics.open("w") as fh:
        fh.writelines(line for line in counters_openmetrics(SampleSpec(**SPEC)) if line != "# EOF\n")
        fh.writelines(_families_openmetrics())
        fh.writelines(_offsets_openmetrics())
        fh.write("# EOF\n")
    data = root / "data"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=72h", str(metrics), str(data)],
        check=True, capture_output=True, timeout=600,
    )
    (root / "prometheus.yml").write_text("global: {}\nscrape_configs: []\n")
    return data


@pytest.fixture(scope="module")
def server(backfilled: Path) -> Iterator[str]:
    port = _free_port()
    proc = _start(backfilled.parent / "prometheus.yml", backfilled, port, backfilled.parent / "prometheus.log")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(proc)


def _window() -> tuple[str, str]:
    from planner.sample.cluster import SampleSpec

    spec = SampleSpec(**SPEC)
    start = datetime.fromtimestamp(spec.end - spec.days * 86_400, tz=timezone.utc)
    end = datetime.fromtimestamp(spec.end + 60, tz=timezone.utc)  # the last scrape ends the last minute
    return start.isoformat(), end.isoformat()


def _profile(path: Path) -> dict[str, dict]:
    return {r["topic"]: r for r in json.loads((path / "topic_profile.json").read_text())}


@pytest.mark.spark
@pytest.mark.slow
def test_pulled_profile_equals_the_profile_from_files(run_cli, spark, sample: Path, server: str, tmp_path: Path) -> None:
    start, end = _window()
    common = ["--broker-map", sample / "broker-map.toml", "--cluster", "sample"]
    code, _, err = run_cli("ingest", "--prometheus", server, "--start", start, "--end", end, *common, "--out", tmp_path / "pulled")
    assert code == 0, err
    code, _, err = run_cli(
        "ingest", "--prom", f"{sample}/metrics/prom/*/*.prom", "--query-range", f"{sample}/metrics/query_range/*.json",
        *common, "--out", tmp_path / "files",
    )
    assert code == 0, err
    pulled, files = _profile(tmp_path / "pulled"), _profile(tmp_path / "files")
    assert sorted(pulled) == sorted(files)
    for topic, row in files.items():
        assert {c: pulled[topic][c] for c in RATE_COLUMNS} == {c: row[c] for c in RATE_COLUMNS}, topic
    quality = json.loads((tmp_path / "pulled" / "quality.json").read_text())
    assert quality["sources"]["prometheus"]["quarantined_total"] == 0
    # a re-run fetches only the day that was not whole (the range ends a minute into it), one request per counter
    code, _, err = run_cli("ingest", "--prometheus", server, "--start", start, "--end", end, *common, "--out", tmp_path / "pulled")
    assert code == 0, err
    again = json.loads((tmp_path / "pulled" / "quality.json").read_text())
    assert again["prometheus"]["days"] == [end[:10]] and again["prometheus"]["requests"] == 3
    assert {c: _profile(tmp_path / "pulled")[t][c] for t in files for c in RATE_COLUMNS} == {c: pulled[t][c] for t in files for c in RATE_COLUMNS}


@pytest.mark.spark
@pytest.mark.slow
def test_server_side_increase_is_read_as_windows(run_cli, spark, sample: Path, server: str, tmp_path: Path) -> None:
    start, end = _window()
    code, _, err = run_cli(
        "ingest", "--prometheus", server, "--prometheus-query", "increase", "--start", start, "--end", end,
        "--broker-map", sample / "broker-map.toml", "--cluster", "sample", "--out", tmp_path / "inc",
    )
    assert code == 0, err
    files = json.loads((sample / "truth.json").read_text())["topics"]
    pulled = _profile(tmp_path / "inc")
    assert sorted(pulled) == sorted(files)
    quality = json.loads((tmp_path / "inc" / "quality.json").read_text())
    assert quality["counter_resets"] == 0  # windows, never counters that reset
    for row in pulled.values():
        assert row["bytes_in_p50"] > 0


def test_a_query_that_matches_nothing_is_exit_2(run_cli, server: str, tmp_path: Path) -> None:
    code, _, err = run_cli("ingest", "--prometheus", server, "--start", "2020-01-01", "--end", "2020-01-02", "--out", tmp_path / "p")
    assert code == 2
    assert "has no series of Kafka's BytesInPerSec meter" in err and "Traceback" not in err
    # the closest names the server has, from any time when the range has none
    assert "kafka_server_brokertopicmetrics_bytesin_total" in err.split("closest names it has:")[1]
    assert len(err.strip().splitlines()) == 1


def test_an_unreachable_server_is_exit_3(run_cli, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    started = time.monotonic()
    code, _, err = run_cli("ingest", "--prometheus", url, "--days", "14", "--out", tmp_path / "p")
    assert code == 3
    assert time.monotonic() - started < 10  # no retries of a refused connection, nothing queued after it
    assert f"Prometheus at {url} cannot be reached" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p" / "topic_profile.json").exists()


SMALL_START, SMALL_END = "2025-03-03T00:00:00Z", "2025-03-04T00:00:01Z"  # the end is exclusive: the midnight sample is in


@pytest.fixture(scope="module")
def small(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small day's directory: its exposition text, broker map, one names file per job, and the profile
    made from the text (``files/``)."""
    from planner.cli import main

    root = tmp_path_factory.mktemp("small")
    (root / "text").mkdir()
    _families_text(root / "text")
    (root / "broker-map.toml").write_text("".join(f'"{k}" = {v}\n' for k, v in BROKERS.items()))
    (root / "all-brokers.toml").write_text("".join(f'"{k}" = {v}\n' for k, v in {**BROKERS, UNMAPPED: 9}.items()))
    for job in (*FAMILIES, "unmapped"):
        (root / f"{job}.toml").write_text(f'# the series of one exporter set-up\n[select]\njob = "{job}"\n')
    code = main(["ingest", "--prom", f"{root}/text/*.prom", "--broker-map", str(root / "broker-map.toml"), "--cluster", "small", "--out", str(root / "files")])
    assert code == 0
    return root


def _pull(run_cli, url: str, small: Path, out: Path, job: str, *extra: str, broker_map: str = "broker-map.toml") -> tuple[int, str]:
    code, _, err = run_cli(
        "ingest", "--prometheus", url, "--start", SMALL_START, "--end", SMALL_END, "--metric-names", small / f"{job}.toml",
        "--broker-map", small / broker_map, "--cluster", "small", "--out", out, *extra,
    )
    return code, err


def _rates_of(path: Path) -> dict[str, dict[str, float]]:
    return {t: {c: row[c] for c in RATE_COLUMNS} for t, row in _profile(path).items()}


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("job", sorted(FAMILIES))
def test_every_spelling_gives_the_profile_of_the_files(run_cli, server: str, small: Path, tmp_path: Path, job: str) -> None:
    code, err = _pull(run_cli, server, small, tmp_path / "p", job)
    assert code == 0, err
    files, pulled = _rates_of(small / "files"), _rates_of(tmp_path / "p")
    assert sorted(pulled) == sorted(files) == sorted(TOPICS)
    series = json.loads((tmp_path / "p" / "quality.json").read_text())["prometheus"]["series"]
    used = {s["metric"]: s for s in series if s["used"]}
    assert sorted(used) == ["bytes_in", "bytes_out", "messages_in"]
    if FAMILIES[job]("BytesIn")[3]:  # rate gauges: the same bytes up to rounding, and said to be less exact
        for topic, row in files.items():
            numbers = {c for c, v in row.items() if isinstance(v, float)}
            assert {c: pulled[topic][c] for c in numbers} == pytest.approx({c: row[c] for c in numbers}, rel=1e-9), topic
            same = set(row) - numbers - {"counter_resets"}  # a rate never shows the meter's re-creation
            assert {c: pulled[topic][c] for c in same} == {c: row[c] for c in same}
        assert all(s["type"] == "rate" and "less exact" in s["why"] for s in used.values())
        assert "less exact" in err
    else:  # counters: exact
        assert pulled == files
        assert all(s["type"] == "counter" and "exactly" in s["why"] for s in used.values())
    if job == "norules":  # Cruise Control's OneMinuteRate gauges are there too: seen, not used
        rates = [s for s in series if s["name"] == NORULES_RATE]
        assert len(rates) == 3 and not any(s["used"] for s in rates)
        assert all(s["why"].startswith(f"another spelling of {s['metric']}") for s in rates)
        assert used["bytes_in"]["match"] == {"__name__": "kafka_server_BrokerTopicMetrics_Count", "name": "BytesInPerSec"}


@pytest.mark.spark
@pytest.mark.slow
def test_an_unmapped_instance_with_traffic_is_exit_2_unless_quarantined(run_cli, server: str, small: Path, tmp_path: Path) -> None:
    out = tmp_path / "p"
    code, err = _pull(run_cli, server, small, out, "unmapped")
    assert code == 2, err
    error = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and UNMAPPED in error[0] and "--broker-map" in error[0]
    # bad input leaves nothing behind: the output directory this run created is gone, spool included
    assert not out.exists()
    # quarantined on request: a warning, the report's record, and the day is not marked fetched
    code, err = _pull(run_cli, server, small, out, "unmapped", "--quarantine-unmapped")
    assert code == 0, err
    assert UNMAPPED in err and "quarantined" in err
    quality = json.loads((out / "quality.json").read_text())
    assert quality["unmapped_instances"] == {UNMAPPED: ["2025-03-03"]}
    assert quality["prometheus"]["days_committed"] == []
    assert _rates_of(out) == _rates_of(small / "files")
    # with the instance mapped, a re-run fetches the day again and counts its traffic
    code, err = _pull(run_cli, server, small, out, "unmapped", broker_map="all-brokers.toml")
    assert code == 0, err
    again = json.loads((out / "quality.json").read_text())
    assert again["prometheus"]["days"] == ["2025-03-03", "2025-03-04"] and "unmapped_instances" not in again
    assert again["prometheus"]["days_committed"] == ["2025-03-03"]
    assert all(_rates_of(out)[t]["bytes_in_p50"] > _rates_of(small / "files")[t]["bytes_in_p50"] for t in TOPICS)


@pytest.mark.spark
@pytest.mark.slow
def test_a_stale_or_foreign_spool_is_never_used(run_cli, server: str, small: Path, tmp_path: Path) -> None:
    out = tmp_path / "p"
    spool = out / "history" / "_prometheus" / "small"
    spool.mkdir(parents=True)
    # what earlier versions kept: an unkeyed response (here a login page) and the list of days it claimed done
    stale = spool / "kafka_server_brokertopicmetrics_bytesin_total-2025-03-03.json"
    stale.write_text("<html><body>Sign in</body></html>")
    (spool / "days.json").write_text('{"days": ["2025-03-03"]}')
    (spool / ".x-2025-03-03-0123.json.part").write_text('{"status":"succ')
    code, err = _pull(run_cli, server, small, out, "camel")
    assert code == 0, err
    assert _rates_of(out) == _rates_of(small / "files")
    assert sorted(p.name for p in spool.iterdir()) == ["days.json"]
    pulls = json.loads((spool / "days.json").read_text())["pulls"]
    assert list(pulls.values()) == [["2025-03-03"]]
    # the same server under another URL is another server: its days are fetched, not taken on trust
    other = server.replace("127.0.0.1", "localhost")
    code, err = _pull(run_cli, other, small, out, "camel")
    assert code == 0, err
    quality = json.loads((out / "quality.json").read_text())
    assert quality["prometheus"]["days"] == ["2025-03-03", "2025-03-04"] and quality["prometheus"]["requests"] == 6
    assert _rates_of(out) == _rates_of(small / "files")


@pytest.mark.spark
@pytest.mark.slow
def test_a_server_that_dies_mid_pull_fails_fast_and_a_rerun_matches(run_cli, backfilled: Path, small: Path, tmp_path: Path) -> None:
    from pools.errors import JobError
    from spark_jobs.ingest_stage import PrometheusOptions, prometheus_source
    from spark_jobs.metric_names import load_metric_names
    from spark_jobs.prometheus import fetch

    data = tmp_path / "data"
    shutil.copytree(backfilled, data, ignore=shutil.ignore_patterns("lock", "wal", "chunks_head"))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    config, log = backfilled.parent / "prometheus.yml", tmp_path / "prometheus.log"
    proc = _start(config, data, port, log)
    try:
        options = PrometheusOptions(url, start=SMALL_START, end=SMALL_END, in_flight=1)
        source = prometheus_source(options, names=load_metric_names(str(small / "camel.toml")))
        history = tmp_path / "p" / "history"

        def progress(step: str, *, done: int | None = None, **_: object) -> None:
            if done == 1:
                proc.send_signal(signal.SIGKILL)
                proc.wait()

        started = time.monotonic()
        with pytest.raises(JobError, match=f"Prometheus at {url} cannot be reached"):
            fetch(source, str(history), "small", progress=progress)
        assert time.monotonic() - started < 30
        kept = [p for p in (history / "_prometheus" / "small").iterdir()]
        assert len(kept) == 1 and not kept[0].name.startswith(".")  # the one whole response, nothing half-written
        assert json.loads(kept[0].read_text())["status"] == "success"
        proc = _start(config, data, port, log)
        code, err = _pull(run_cli, url, small, tmp_path / "p", "camel")
        assert code == 0, err
        assert json.loads((tmp_path / "p" / "quality.json").read_text())["prometheus"]["requests"] == 5  # 6 less the kept one
        assert _rates_of(tmp_path / "p") == _rates_of(small / "files")
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def not_the_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Python's file server: ``/html`` answers an HTML page, ``/text`` plain text, ``/files`` valid label values
    then ``501`` to the POSTed query, and any other path ``404`` (an HTML page)."""
    root = tmp_path_factory.mktemp("www")
    answers = {
        "html/api/v1/label/__name__/values": "<!DOCTYPE html><html><head><title>Grafana</title></head></html>",
        "text/api/v1/label/__name__/values": "hello",
        "files/api/v1/label/__name__/values": '{"status":"success","data":["kafka_server_brokertopicmetrics_bytesin_total"]}',
        "files/api/v1/label/topic/values": '{"status":"success","data":["orders"]}',
    }
    for path, text in answers.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(root), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(proc)


@pytest.mark.parametrize(("path", "code", "said"), [
    ("/html", 2, "answered HTTP 200 with an HTML page, not the Prometheus HTTP API"),
    ("/files", 2, "/api/v1/query answered HTTP 501 with an HTML page, not the Prometheus HTTP API"),
    ("/nothing", 2, "answered HTTP 404 with an HTML page, not the Prometheus HTTP API"),
    ("/text", 3, "with something that is not the Prometheus API: hello"),
])
def test_an_answer_that_is_not_the_api_names_the_server(run_cli, not_the_api: str, tmp_path: Path, path: str, code: int, said: str) -> None:
    started = time.monotonic()
    got, _, err = run_cli("ingest", "--prometheus", not_the_api + path, "--days", "1", "--out", tmp_path / "p")
    assert (got, time.monotonic() - started < 20) == (code, True), err
    assert said in err and not_the_api + path in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p").exists() or not any((tmp_path / "p").rglob("*.json"))


def test_a_wrong_path_on_a_real_server_is_exit_2(run_cli, server: str, tmp_path: Path) -> None:
    code, _, err = run_cli("ingest", "--prometheus", server + "/graph", "--days", "1", "--out", tmp_path / "p")
    assert code == 2, err
    assert "HTTP 404" in err and "base URL" in err


def test_the_end_is_exclusive(tmp_path: Path) -> None:
    from spark_jobs.ingest_stage import PrometheusOptions, prometheus_source
    from spark_jobs.prometheus import Series, _requests

    source = prometheus_source(PrometheusOptions("http://p:9090", start="2025-03-03", end="2025-03-04"))
    assert [d.isoformat() for d in source.days()] == ["2025-03-03"]
    series = [Series("bytes_in", "counter", "x_total", {"__name__": "x_total"}, 1, True)]
    (request,) = _requests(source, source.days(), tmp_path, series)
    assert float(request.params["time"]) == DAY0 + 86_400 - 0.001  # the sample at --end is not read
    assert request.params["query"] == '{__name__="x_total",topic!=""}[87000000ms]'


def test_retries_of_a_failing_server_end_with_the_budget(run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that answers 503 to every query: retried with backoff until the request is `RETRY_BUDGET_S` old,
    then exit 3 naming the server, whatever ``--retries`` allows."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import spark_jobs.prometheus as prometheus

    class Overloaded(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the label values: one meter with one topic
            body = b'{"status":"success","data":["kafka_server_brokertopicmetrics_bytesin_total"]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(503)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "10")
            self.end_headers()
            self.wfile.write(b"overloaded")

        def log_message(self, *args: object) -> None:
            pass

    monkeypatch.setattr(prometheus, "RETRY_BUDGET_S", 3.0)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Overloaded)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        started = time.monotonic()
        code, _, err = run_cli("ingest", "--prometheus", url, "--days", "3", "--retries", "100", "--out", tmp_path / "p")
        assert code == 3 and time.monotonic() - started < 15, err
        assert f"Prometheus at {url} answered /api/v1/query with HTTP 503: overloaded; gave up after" in err
        assert not [p for p in (tmp_path / "p").rglob("*") if p.is_file()]
    finally:
        httpd.shutdown()
        httpd.server_close()


OFFSETS_START, OFFSETS_END = "2025-03-10T00:00:00Z", "2025-03-11T00:03:00Z"


@pytest.fixture(scope="module")
def offsets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offsets day's broker map and names files (``offsets``: the counters, ``rules``: the recording rule)."""
    root = tmp_path_factory.mktemp("offsets")
    (root / "broker-map.toml").write_text("".join(f'"{k}" = {i}\n' for i, k in enumerate(OFFSETS, 1)))
    for job in ("offsets", "rules"):
        (root / f"{job}.toml").write_text(f'[select]\njob = "{job}"\n')
    return root


def _pull_offsets(run_cli, url: str, offsets: Path, out: Path, job: str, *extra: str) -> dict:
    code, _, err = run_cli(
        "ingest", "--prometheus", url, "--start", OFFSETS_START, "--end", OFFSETS_END, "--metric-names", offsets / f"{job}.toml",
        "--broker-map", offsets / "broker-map.toml", "--cluster", "offsets", "--out", out, *extra,
    )
    assert code == 0, err
    return json.loads((out / "quality.json").read_text())


def _minute_rates(out: Path, metric: str) -> dict[str, dict[int, float]]:
    """topic → {minute (s) → the rate summed over the history's rows of the minute}, as the profile sums them."""
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "history").to_pylist()
    rates: dict[str, dict[int, float]] = {}
    for r in rows:
        interval = r["interval_s"] if metric == "bytes_in" else (r[f"{metric}_interval_s"] or r["interval_s"])
        if r[metric] is not None:
            minute = int(r["ts"].replace(tzinfo=timezone.utc).timestamp())
            by_minute = rates.setdefault(r["topic"], {})
            by_minute[minute] = by_minute.get(minute, 0.0) + r[metric] / interval
    return rates


@pytest.mark.spark
@pytest.mark.slow
def test_the_per_topic_pull_is_the_raw_pull_but_for_the_minutes_it_reports_unseen(run_cli, server: str, offsets: Path, tmp_path: Path) -> None:
    """Brokers at scrape offsets 0, 17.234 and 59.5 s: every topic-minute the per-topic mode reads equals the raw
    pull's, except at most one per series-minute ``quality.json`` reports unseen (a missed scrape, a new meter),
    so each percentile lies between the raw percentiles that many ranks either side; resets are counted."""
    import pyarrow.parquet as pq

    raw = _pull_offsets(run_cli, server, offsets, tmp_path / "raw", "offsets")
    per_topic = _pull_offsets(run_cli, server, offsets, tmp_path / "topics", "offsets", "--prometheus-mode", "per-topic")
    assert raw["prometheus"]["mode"] == "raw" and "per_topic" not in raw["prometheus"]
    checks = per_topic["prometheus"]["per_topic"]
    # o2/t1 missed a scrape (two minutes without its step), o1/t3 was created and o2/t3 closed; o3/t2 reset
    assert checks["unseen_by_topic"] == {"t1": 2, "t3": 2} and checks["resets_by_topic"] == {"t2": 1}
    assert per_topic["prometheus"]["requests"] == 2 * (3 + 2)  # two days: three metrics and two checks each
    history = pq.read_table(tmp_path / "topics" / "history").to_pylist()
    assert {r["broker_id"] for r in history} == {-1} and {r["interval_s"] for r in history} == {60}
    expected = _topic_rates(_offset_series(), "BytesIn")
    pulled, counted = _minute_rates(tmp_path / "topics", "bytes_in"), _minute_rates(tmp_path / "raw", "bytes_in")
    for topic in OFFSET_TOPICS:
        assert pulled[topic] == pytest.approx(expected[topic], rel=1e-12, abs=1e-9), topic  # the oracle, minute by minute
        assert sorted(pulled[topic]) == sorted(counted[topic])
        differ = [m for m in counted[topic] if pulled[topic][m] != pytest.approx(counted[topic][m], rel=1e-12)]
        assert len(differ) <= checks["unseen_by_topic"].get(topic, 0), (topic, differ)
    for metric in ("bytes_out", "messages_in"):  # nothing planted: the same minutes exactly
        per_topic_rates, raw_rates = _minute_rates(tmp_path / "topics", metric), _minute_rates(tmp_path / "raw", metric)
        assert sorted(per_topic_rates) == sorted(raw_rates) == list(OFFSET_TOPICS)
        assert all(per_topic_rates[t] == pytest.approx(raw_rates[t], rel=1e-12) for t in OFFSET_TOPICS), metric
    raw_profile, topic_profile = _profile(tmp_path / "raw"), _profile(tmp_path / "topics")
    for topic in OFFSET_TOPICS:
        k = checks["unseen_by_topic"].get(topic, 0)
        values = np.sort(np.array(list(counted[topic].values())))
        for q, column in ((0.5, "bytes_in_p50"), (0.95, "bytes_in_p95"), (0.99, "bytes_in_p99"), (1.0, "bytes_in_max")):
            at = q * (values.size - 1)
            low, high = (np.interp(min(max(at + d, 0), values.size - 1), np.arange(values.size), values) for d in (-k, k))
            assert low - 1e-9 <= topic_profile[topic][column] <= high + 1e-9, (topic, column)
        if not k:  # every percentile the raw pull's; the reset is in quality.json, not in the rows
            percentiles = [c for c in RATE_COLUMNS if c.startswith(("bytes", "messages"))]
            assert {c: topic_profile[topic][c] for c in percentiles} == pytest.approx({c: raw_profile[topic][c] for c in percentiles}, rel=1e-12)
            assert (topic_profile[topic]["samples"], raw_profile[topic]["counter_resets"], topic_profile[topic]["counter_resets"]) == (
                raw_profile[topic]["samples"], 1, 0)


@pytest.mark.spark
@pytest.mark.slow
def test_a_per_topic_recording_rule_is_read_instead_of_counters(run_cli, server: str, offsets: Path, tmp_path: Path) -> None:
    quality = _pull_offsets(run_cli, server, offsets, tmp_path / "rules", "rules", "--prometheus-mode", "per-topic")
    (used,) = [s for s in quality["prometheus"]["series"] if s["used"]]
    assert used["name"] == RULE_NAME and used["recording_rule_window_s"] == 60 and "recording rule" in used["why"]
    assert "per_topic" not in quality["prometheus"] or quality["prometheus"]["per_topic"]["unseen_series_minutes"] == 0
    expected, pulled = _topic_rates(_offset_series(), "BytesIn"), _minute_rates(tmp_path / "rules", "bytes_in")
    assert sorted(pulled) == list(OFFSET_TOPICS) and all(pulled[t] == pytest.approx(expected[t], rel=1e-12) for t in OFFSET_TOPICS)
    # the raw mode never reads a recording rule: no counter of the meter in that job
    code, _, err = run_cli(
        "ingest", "--prometheus", server, "--start", OFFSETS_START, "--end", OFFSETS_END, "--metric-names", offsets / "rules.toml",
        "--broker-map", offsets / "broker-map.toml", "--out", tmp_path / "raw",
    )
    assert code == 2 and "has no series of Kafka's BytesInPerSec meter" in err


@pytest.mark.spark
@pytest.mark.slow
def test_a_longer_per_topic_step_keeps_each_steps_peak(run_cli, server: str, offsets: Path, tmp_path: Path) -> None:
    quality = _pull_offsets(run_cli, server, offsets, tmp_path / "5m", "offsets", "--prometheus-mode", "per-topic", "--step", "5m")
    assert quality["prometheus"]["per_topic"]["unseen_by_topic"] == {"t1": 2, "t3": 2}  # the checks still count minutes
    steps = _minute_rates(tmp_path / "5m", "bytes_in")
    expected = _topic_rates(_offset_series(), "BytesIn")
    for topic in OFFSET_TOPICS:
        # a step's value is the highest one-minute rate of its five minutes (one minute before the step)
        want = {b: max(r for m, r in expected[topic].items() if b - 60 <= m < b + 240) for b in steps[topic]}
        assert steps[topic] == pytest.approx(want, rel=1e-12), topic
        assert max(steps[topic].values()) == pytest.approx(max(expected[topic].values()), rel=1e-12)  # the peak is kept


def test_per_topic_requests_sit_on_the_grid_of_each_minutes_closing_scrape(tmp_path: Path) -> None:
    from spark_jobs.ingest_stage import PrometheusOptions, prometheus_source
    from spark_jobs.prometheus import Series, _requests

    source = prometheus_source(PrometheusOptions("http://p:9090", start="2025-03-03", end="2025-03-05", mode="per-topic"))
    series = [Series("bytes_in", "counter", "x_total", {"__name__": "x_total"}, 1, True), Series("bytes_out", "rate", "y_rate", {"__name__": "y_rate"}, 1, True)]
    requests = _requests(source, source.days(), tmp_path, series)
    assert len(requests) == 2 * (1 + 2 + 1)  # per day: bytes-in, its two checks, bytes-out
    first = requests[0]
    assert first.params == {"query": 'sum by (topic) (irate({__name__="x_total",topic!=""}[119999ms]))', "start": f"{DAY0 + 119.999:.3f}",
                            "end": f"{DAY0 + 86_459.999:.3f}", "step": "60s"}
    assert first.target.name.startswith("topic:kafka_server_brokertopicmetrics_bytesin:rate60s-2025-03-03-")
    assert [r.check for r in requests] == ["", "unseen", "resets"] * 2 + ["", ""]
    assert requests[6].params["query"] == 'sum by (topic) (avg_over_time({__name__="y_rate",topic!=""}[59999ms]))'
    # the last day ends at --end: its last minute's closing scrape is before it
    assert float(requests[5].params["end"]) == DAY0 + 2 * 86_400 - 0.001  # the minute 23:58, closed by the scrapes before --end
    coarse = prometheus_source(PrometheusOptions("http://p:9090", start="2025-03-03", end="2025-03-04", mode="per-topic", step="5m"))
    (data, *checks) = _requests(coarse, coarse.days(), tmp_path, series[:1])
    assert (data.params["start"], data.params["step"]) == (f"{DAY0 + 359.999:.3f}", "300s") and data.params["query"].startswith("max_over_time(")
    assert [c.params["step"] for c in checks] == ["60s", "60s"]
    # R100's bytes-in (2,000 topics on 100 instances): the server's inner irate() kept under its max-samples
    r100 = _requests(coarse, coarse.days(), tmp_path, [Series("bytes_in", "counter", "x_total", {"__name__": "x_total"}, 2000, True, instances=100)])
    data = [r for r in r100 if not r.check]
    assert [(float(r.params["end"]) - float(r.params["start"])) // 300 + 1 for r in data] == [20] * 14 + [7]  # 100 minutes each
    minutes = [r for r in r100 if r.check == "unseen"]
    assert len(minutes) == 15 and float(minutes[1].params["start"]) == DAY0 + 119.999 + 100 * 60
    with pytest.raises(InputError, match="--step '7m': the per-topic mode needs whole minutes that divide a day"):
        prometheus_source(PrometheusOptions("http://p:9090", days=1, mode="per-topic", step="7m"))
    with pytest.raises(InputError, match="--prometheus-query increase: it says how the raw mode reads counters"):
        prometheus_source(PrometheusOptions("http://p:9090", days=1, mode="per-topic", query="increase"))
    assert source.identity() != prometheus_source(PrometheusOptions("http://p:9090", start="2025-03-03", end="2025-03-05")).identity()


class _Index:
    """A server index answering ``/api/v1/labels`` with the label names of fixed series (what `_with_one_per_topic` asks)."""

    def __init__(self, series: list[dict[str, str]]) -> None:
        self.series, self.asked = series, []

    def get_json(self, path: str, params) -> list[str]:
        self.asked.append((path, dict(params)["match[]"]))
        return sorted({k for s in self.series for k in s})


@pytest.mark.parametrize(("labels", "alone"), [
    ([{"topic": "a"}, {"topic": "b"}], True),  # a rule summed per topic: the server's sum would be the series itself
    ([{"topic": "a", "job": "rules"}, {"topic": "b", "job": "rules"}], False),  # the sum drops the job label
    ([{"topic": "a"}, {"topic": "a", "instance": "k1"}, {"topic": "b"}], False),  # two series of one topic: they are summed
])
def test_a_topic_that_is_one_series_is_read_without_the_servers_sum(labels: list[dict[str, str]], alone: bool) -> None:
    from spark_jobs.metric_names import DEFAULT
    from spark_jobs.prometheus import Series, _with_one_per_topic, per_topic_query

    rule = Series("bytes_in", "rate", "topic:x:rate1m", {"__name__": "topic:x:rate1m"}, 2, True, window_s=60)
    index = _Index([{"__name__": "topic:x:rate1m", **s} for s in labels])
    marked = _with_one_per_topic(index, rule, DEFAULT, [("start", "1"), ("end", "2")])
    assert index.asked == [("/api/v1/labels", '{__name__="topic:x:rate1m",topic!=""}')]
    assert marked.one_per_topic is alone
    query = per_topic_query(marked, DEFAULT, 60)
    inner = 'avg_over_time({__name__="topic:x:rate1m",topic!=""}[59999ms])'
    assert query == (inner if alone else f"sum by (topic) ({inner})")
    assert per_topic_query(marked, DEFAULT, 300).startswith("max_over_time(" + ("avg_over_time(" if alone else "sum by (topic) ("))


_RANGE = {"status": "success", "data": {"resultType": "matrix", "result": [
    {"metric": {"topic": "a"}, "values": [[60.0, "1"], [120.0, "2"]]}, {"metric": {"topic": "b"}, "values": [[60.0, "3"]]}]}}
_ANSWERS = {
    "compact": json.dumps(_RANGE, separators=(",", ":")).encode(),  # the server's own layout: checked by its ends
    "pretty": json.dumps(_RANGE, indent=1).encode(),  # any other layout: checked element by element
    "warned": json.dumps({**_RANGE, "warnings": ["w"]}, separators=(",", ":")).encode(),
    "empty": b'{"status":"success","data":{"resultType":"matrix","result":[]}}',
    "cut": json.dumps(_RANGE, separators=(",", ":")).encode()[:-3],  # the connection closed after the last series
    "cut-pretty": json.dumps(_RANGE, indent=1).encode()[:-40],
    "vector": b'{"status":"success","data":{"resultType":"vector","result":[]}}',
}


@pytest.mark.parametrize(("answer", "pairs"), [("compact", 3), ("pretty", 0), ("warned", 3), ("empty", 0), ("cut", None), ("cut-pretty", None),
                                               ("vector", None)])
def test_a_response_gets_its_name_only_when_it_is_a_whole_range_result(tmp_path: Path, answer: str, pairs: int | None) -> None:
    """Whatever its layout, a response is spooled under its name only when it is a whole ``success`` matrix; an answer
    cut off by a closed connection (no length announced: only its structure tells) is a server failure (exit 3). The
    pairs, a figure of the pull's speed, are the ``"]`` that close a compact pair (none in a pretty-printed answer)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from pools.errors import JobError
    from spark_jobs.prometheus import PrometheusSource, _Client

    class Answer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # no Content-Length: the body ends where the connection closes

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            for i in range(0, len(body := _ANSWERS[answer]), 7):  # in pieces: the checks see chunk boundaries
                self.wfile.write(body[i:i + 7])

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    target = tmp_path / "x.json"
    try:
        client = _Client(PrometheusSource(url, datetime(2025, 1, 1, tzinfo=timezone.utc), datetime(2025, 1, 2, tzinfo=timezone.utc)))
        if pairs is None:
            with pytest.raises(JobError, match=f"Prometheus at {url} (sent a broken answer|answered /api/v1/query_range with something that is not a range)"):
                client.fetch("/api/v1/query_range", {"query": "q"}, target)
            assert not list(tmp_path.iterdir())
        else:
            assert client.fetch("/api/v1/query_range", {"query": "q"}, target) == pairs
            assert target.read_bytes() == _ANSWERS[answer] and [p.name for p in tmp_path.iterdir()] == ["x.json"]
    finally:
        httpd.shutdown()
        httpd.server_close()


class _Names:
    """A server index answering the label-values API over fixed series (what `discover` asks)."""

    def __init__(self, series: list[dict[str, str]]) -> None:
        self.series = series

    def get_json(self, path: str, params) -> list[str]:
        import re

        label = path.removeprefix("/api/v1/label/").removesuffix("/values")
        match = dict(params).get("match[]", "")
        equal = dict(re.findall(r'(\w+)="([^"]*)"', match))
        chosen = [s for s in self.series if all(s.get(k) == v for k, v in equal.items())
                  and ('topic!=""' not in match or s.get("topic"))]
        return sorted({s[label] for s in chosen if label in s})


def test_the_pull_discovers_the_remote_meters_beside_the_three_and_reads_back_what_it_asked() -> None:
    """Kafka's RemoteCopyBytesPerSec and RemoteFetchBytesPerSec on the server (by name, or in jmx_exporter's ``name``
    label) are pulled as meters of their own, a counter before a rate gauge; the RemoteLogSizeBytes gauge is not
    a meter; the spool's names and the server's increase() answers read back as the remote metrics."""
    from dataclasses import replace

    from spark_jobs.metric_names import DEFAULT
    from spark_jobs.prometheus import PrometheusSource, _requests, discover
    from spark_jobs.query_range import _metric

    topic = {"instance": "k1:7071", "topic": "orders"}
    server = _Names([
        {"__name__": "kafka_server_brokertopicmetrics_bytesin_total", **topic},
        {"__name__": "kafka_server_brokertopicmetrics_remotecopybytes_total", **topic},
        {"__name__": "kafka_server_BrokerTopicMetrics_Count", "name": "RemoteFetchBytesPerSec", **topic},
        {"__name__": "kafka_server_BrokerTopicMetrics_OneMinuteRate", "name": "RemoteFetchBytesPerSec", **topic},
        {"__name__": "kafka_server_brokertopicmetrics_remotelogsizebytes", **topic},
        {"__name__": "kafka_server_brokertopicmetrics_remotecopybytes_total", "instance": "k1:7071"},  # broker total
    ])
    source = PrometheusSource("http://p:9090", datetime(2025, 3, 3, tzinfo=timezone.utc),
                              datetime(2025, 3, 4, tzinfo=timezone.utc))
    found = discover(server, source)
    used = {s.metric: (s.name, dict(s.match), s.type) for s in found if s.used}
    assert used == {
        "bytes_in": ("kafka_server_brokertopicmetrics_bytesin_total",
                     {"__name__": "kafka_server_brokertopicmetrics_bytesin_total"}, "counter"),
        "remote_copy_bytes": ("kafka_server_brokertopicmetrics_remotecopybytes_total",
                              {"__name__": "kafka_server_brokertopicmetrics_remotecopybytes_total"}, "counter"),
        "remote_fetch_bytes": ("kafka_server_BrokerTopicMetrics_Count",
                               {"__name__": "kafka_server_BrokerTopicMetrics_Count", "name": "RemoteFetchBytesPerSec"},
                               "counter"),
    }
    assert [(s.metric, s.type) for s in found if not s.used] == [("remote_fetch_bytes", "rate")]
    # counters come back with their own names and labels; the server's increase() results by the spool file's name
    assert _metric("kafka_server_BrokerTopicMetrics_Count", {"name": "RemoteFetchBytesPerSec"}, DEFAULT)[0] == (
        "remote_fetch_bytes")
    requests = _requests(replace(source, query="increase"), source.days(), Path("/spool"), found)
    fetch = [r for r in requests if 'name="RemoteFetchBytesPerSec"' in r.params["query"]]
    assert fetch and all(r.params["query"].startswith("sum by (instance, pod, topic) (increase(") for r in fetch)
    assert {_metric(r.target.name.rsplit("-", 4)[0], {}, DEFAULT)[0] for r in fetch} == {"remote_fetch_bytes"}
