"""The ingest job end to end on synthetic logs, checked against a plain-Python computation of the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.spark_jobs import synth

# the synthetic cluster is ingested once per module: one xdist worker runs the module
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark-ingest")]

RATE_COLUMNS = (
    "bytes_in_p50",
    "bytes_in_p95",
    "bytes_in_p99",
    "bytes_in_max",
    "bytes_out_p95",
    "bytes_out_p99",
    "bytes_out_max",
    "messages_in_p99",
    "samples",
    "first_ts",
    "last_ts",
    "counter_resets",
    "gaps",
)

SNAPSHOTS = {
    "20250303T000000Z": {1: [("orders-0", 500, False), ("orders-1", 700, False)], 2: [("orders-0", 480, False)]},
    "20250303T020000Z": {
        1: [("orders-0", 900, False), ("orders-1", 1000, False), ("clicks-v2-0", 50, False)],
        2: [("orders-0", 950, False), ("orders-1", 5000, True)],
        3: [("orders-1", 990, False), ("payments.ledger-0", 10, False)],
    },
}


#: Kafka's RemoteLogSizeBytes gauge (per broker: the partitions it leads) in jmx_exporter's spellings, and when:
#: orders' two leaders' latest values add up (3e11 + 1e11: the earlier 2e11 is superseded); payments.ledger's
#: broker 1 stopped reporting over an hour before broker 3's last value (its leadership gone), so only 70 counts.
REMOTE_LOG_SIZE = (
    ('kafka_server_brokertopicmetrics_remotelogsizebytes{instance="kafka-1:7071",topic="orders"} 2E11', 60),
    ('kafka_server_brokertopicmetrics_remotelogsizebytes{instance="kafka-1:7071",topic="orders"} 3E11', 7200),
    ('kafka_server_BrokerTopicMetrics_RemoteLogSizeBytes{instance="kafka-2:7071",topic="orders"} 1E11', 7140),
    ('kafka_server_BrokerTopicMetrics_Value{instance="kafka-1:7071",name="RemoteLogSizeBytes",topic="payments.ledger"}'
     ' 50', 0),
    ('kafka_server_BrokerTopicMetrics_Value{instance="kafka-3:7071",name="RemoteLogSizeBytes",topic="payments.ledger"}'
     ' 70', 7200),
)

#: Kafka's tiered-storage meters (RemoteCopyBytesPerSec, RemoteFetchBytesPerSec: counters per broker and topic) in
#: jmx_exporter's spellings, each series (name, topic, broker, last scrape): orders copies on two brokers and
#: fetches on one for the first 90 minutes only; payments.ledger only fetches; clicks-v2 has neither (unmeasured).
REMOTE_RATES = (
    ("kafka_server_brokertopicmetrics_remotecopybytes_total", "orders", 1, 180),
    ('kafka_server_BrokerTopicMetrics_Count{name="RemoteCopyBytesPerSec",', "orders", 2, 180),
    ("kafka_server_brokertopicmetrics_remotefetchbytespersec", "orders", 1, 90),
    ("kafka_server_BrokerTopicMetrics_RemoteFetchBytes_total", "payments.ledger", 3, 180),
)


def _remote_counters(cluster: synth.Cluster) -> dict[tuple[str, str, int], list[int]]:
    """Each `REMOTE_RATES` series' counter values at its broker's scrapes 0, 1, …: uneven increases, no reset."""
    out = {}
    for i, (name, topic, broker, last) in enumerate(REMOTE_RATES):
        values, total = [], 0
        for k in range(last + 1):
            total += 0 if k == 0 else 1_000 * ((k * (i + 3)) % 17) + 37 * broker * k
            values.append(total)
        out[(name, topic, broker)] = values
    return out


def _remote_lines(cluster: synth.Cluster) -> str:
    lines = []
    for (name, topic, broker), values in _remote_counters(cluster).items():
        head = f'{name}instance="kafka-{broker}:7071",topic="{topic}"}}' if name.endswith(",") else (
            f'{name}{{instance="kafka-{broker}:7071",topic="{topic}"}}')
        lines += [f"{head} {float(v)!r} {cluster.scrape_ms(broker, k)}\n" for k, v in enumerate(values)]
    return "".join(lines)


def expected_remote_p99(cluster: synth.Cluster) -> dict[str, dict[str, float | None]]:
    """Per topic, the p99 of its per-minute remote copy and fetch rates in plain Python: each broker's increase
    over its 60 s scrape step, credited to the minute the step starts in, summed over brokers, over 60 s."""
    metric = {"remotecopy": "remote_copy_bytes", "remotefetch": "remote_fetch_bytes"}
    minutes: dict[tuple[str, str], dict[int, int]] = {}
    for (name, topic, _), values in _remote_counters(cluster).items():
        m = next(v for k, v in metric.items() if k in name.lower().replace("_", "").replace('"', ""))
        per = minutes.setdefault((topic, m), {})
        for k in range(1, len(values)):
            per[k - 1] = per.get(k - 1, 0) + values[k] - values[k - 1]
    return {t: {f"{m}_p99": synth.percentile([b / 60 for b in minutes[(t, m)].values()], 0.99)
                if (t, m) in minutes else None for m in metric.values()} for t in cluster.topics}


@pytest.fixture(scope="module")
def cluster() -> synth.Cluster:
    return synth.build(minutes=180)


@pytest.fixture(scope="module")
def prom_run(spark, cluster: synth.Cluster, tmp_path_factory: pytest.TempPathFactory):
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    root = tmp_path_factory.mktemp("prom")
    broker_map = synth.write_prom(cluster, root)
    bad = root / "prom" / "kafka-1" / "2025-03-03.prom"
    bad.write_text(
        bad.read_text()
        + 'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="orders"} NaN 1740960000000\n'
        + "this is not a sample\n"
        + "".join(f"{line} {(synth.T0 + s) * 1000}\n" for line, s in REMOTE_LOG_SIZE)
        + _remote_lines(cluster)
    )
    synth.write_log_dirs(root, SNAPSHOTS)
    inputs = IngestInputs(
        prom_text=tuple(sorted(str(p) for p in (root / "prom").rglob("*.prom"))),
        log_dirs=tuple(sorted(str(p) for p in (root / "log-dirs").iterdir())),
    )
    params = IngestParams(cluster="c", broker_map=broker_map, horizon_days=30, partition_counts={"orders": 4})
    out = root / "profile"
    result = run(spark, inputs, out, params)
    return root, out, result, inputs, params


@pytest.mark.slow
def test_profile_matches_plain_python(prom_run, cluster: synth.Cluster) -> None:
    from pools.profile import load_profile

    _, out, _, _, _ = prom_run
    profile = load_profile(out)
    assert sorted(profile) == sorted(cluster.topics)
    for metric, cols in (
        ("bytes_in", {"bytes_in_p50": 0.5, "bytes_in_p95": 0.95, "bytes_in_p99": 0.99, "bytes_in_max": 1.0}),
        ("bytes_out", {"bytes_out_p95": 0.95, "bytes_out_p99": 0.99, "bytes_out_max": 1.0}),
        ("messages_in", {"messages_in_p99": 0.99}),
    ):
        expected = synth.expected_rates(cluster, metric)
        for topic, row in profile.items():
            for col, q in cols.items():
                assert getattr(row, col) == pytest.approx(synth.percentile(expected[topic], q), rel=1e-12), (topic, col)
    for topic, row in profile.items():
        assert row.samples == cluster.minutes
        assert row.first_ts.timestamp() == synth.T0
        assert row.last_ts.timestamp() == synth.T0 + 60 * (cluster.minutes - 1)
        assert row.days_observed == 1
        assert row.gaps == 0
    # the closed-and-recreated meter of broker 2 and the in-place reset of broker 3
    assert profile["orders"].counter_resets == 1  # one broker-minute: bytes_in and messages_in meters re-created
    assert profile["clicks-v2"].counter_resets == 1
    assert profile["payments.ledger"].counter_resets == 0


@pytest.mark.slow
def test_storage_partitions_and_forecast(prom_run) -> None:
    from pools.profile import load_partition_profile, load_profile

    _, out, _, _, _ = prom_run
    profile = load_profile(out)
    # latest snapshot only; largest replica per partition; the isFuture copy is excluded
    assert profile["orders"].storage_bytes == 950 + 1000
    assert profile["clicks-v2"].storage_bytes == 50
    assert profile["orders"].partitions == 4  # from the snapshot's metadata
    assert profile["clicks-v2"].partitions == 1  # from the size snapshot
    parts = load_partition_profile(out)
    assert parts[("orders", 1)].size_bytes == 1000
    for row in profile.values():
        assert row.forecast_horizon_days == 30
        assert row.forecast_bytes_in_p99_low <= row.forecast_bytes_in_p99 <= row.forecast_bytes_in_p99_high
        assert row.forecast_storage_low <= row.forecast_storage_bytes <= row.forecast_storage_high


@pytest.mark.slow
def test_remote_log_size_bytes_gives_the_remote_bytes_apart_from_the_local_ones(prom_run) -> None:
    """A tiered topic's bytes in the remote store: each broker's latest RemoteLogSizeBytes within an hour of the
    topic's last one, summed; the local storage is the log-dirs sizes alone; a topic without the gauge is unmeasured."""
    import pyarrow.parquet as pq

    from pools.profile import REMOTE_COLUMNS, TOPIC_COLUMNS, load_profile

    _, out, _, _, _ = prom_run
    profile = load_profile(out)
    assert profile["orders"].remote_log_size_bytes == 3 * 10**11 + 10**11
    assert profile["payments.ledger"].remote_log_size_bytes == 70
    assert profile["clicks-v2"].remote_log_size_bytes is None and not profile["clicks-v2"].remote_measured
    assert profile["orders"].storage_bytes == 950 + 1000  # local: the latest log-dirs snapshot, as before
    names = pq.read_schema(out / "topic_profile.parquet").names
    assert names == [c[0] for c in TOPIC_COLUMNS + REMOTE_COLUMNS]


@pytest.mark.slow
def test_remote_copy_and_fetch_rates_are_the_p99_of_their_per_minute_sums(prom_run, spark, cluster: synth.Cluster,
                                                                          tmp_path: Path) -> None:
    """RemoteCopyBytesPerSec and RemoteFetchBytesPerSec counters (in three exporters' spellings) become the
    profile's remote p99s exactly as a plain-Python computation gives them, null for a meter a topic never had; the
    history keeps them, so a later run from the history alone gives the same figures; bytes-in/out are unchanged
    (`test_profile_matches_plain_python`)."""
    from pools.profile import load_profile
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    _, out, _, _, _ = prom_run
    expected = expected_remote_p99(cluster)
    assert expected["orders"]["remote_fetch_bytes_p99"] and expected["clicks-v2"]["remote_copy_bytes_p99"] is None
    run(spark, IngestInputs(history=str(out / "history")), tmp_path / "hist", IngestParams(cluster="c"))
    for profile in (load_profile(out), load_profile(tmp_path / "hist")):
        for topic, want in expected.items():
            got = {c: getattr(profile[topic], c) for c in want}
            assert got == {c: pytest.approx(v, rel=1e-12) if v is not None else None for c, v in want.items()}, topic
    history = pq.read_table(out / "history")
    copied = [r for r in history.to_pylist() if r["topic"] == "orders" and r["remote_copy_bytes"] is not None]
    assert len(copied) == 2 * 180 and all(r["remote_copy_bytes_interval_s"] is None for r in copied)  # 60 s windows


@pytest.mark.slow
def test_bad_rows_are_quarantined_counted_and_reconciled(prom_run, spark) -> None:
    from pools.profile import load_profile

    _, out, result, _, _ = prom_run
    quality = json.loads((out / "quality.json").read_text())
    assert quality == result.quality
    prom = quality["sources"]["prom_text"]
    assert prom["quarantined"] == {"malformed_line": 1, "nan_value": 1}
    assert prom["read"] == prom["accepted"] + prom["ignored_total"] + prom["quarantined_total"]
    assert quality["totals"]["reconciles"] is True
    lines = sum(len(p.read_text().splitlines()) for p in Path(out.parent / "prom").rglob("*.prom"))
    assert prom["read"] == lines
    assert quality["sources"]["log_dirs"]["accepted"] == 3 + 7
    quarantine = spark.read.parquet(str(out / "quarantine")).collect()
    assert sorted(r["reason"] for r in quarantine) == ["malformed_line", "nan_value"]
    assert load_profile(out)["orders"].rejected_rows == 1
    assert quality["rejected_without_topic"] == 1
    # one day of history: nothing to backtest yet, said so by an empty file and summary
    from pools.profile import load_backtest
    assert load_backtest(out) == [] and quality["backtest"] == {"bytes_in_p99": {}, "storage_bytes": {},
                                                                "calibration": {}}


@pytest.mark.slow
def test_output_is_byte_identical_whatever_the_partitioning(prom_run, spark, tmp_path: Path) -> None:
    from spark_jobs.ingest import run

    _, out, _, inputs, params = prom_run
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    try:
        run(spark, inputs, tmp_path / "again", params)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", old)
    for name in ("topic_profile.parquet", "topic_profile.json", "partition_profile.parquet", "backtest.parquet"):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes(), name


@pytest.mark.slow
def test_query_range_and_history_give_the_same_rates(prom_run, spark, cluster: synth.Cluster, tmp_path: Path) -> None:
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    _, out, _, _, params = prom_run
    synth.write_query_range(cluster, tmp_path, name_in_labels=False)
    qr = tuple(sorted(str(p) for p in (tmp_path / "query_range").iterdir()))
    run(spark, IngestInputs(query_range=qr), tmp_path / "qr", IngestParams(cluster="c", broker_map=params.broker_map))
    # a later run reads only the Parquet history the first run wrote
    run(spark, IngestInputs(history=str(out / "history")), tmp_path / "hist", IngestParams(cluster="c"))
    base = {r["topic"]: r for r in json.loads((out / "topic_profile.json").read_text())}
    for name in ("qr", "hist"):
        rows = {r["topic"]: r for r in json.loads((tmp_path / name / "topic_profile.json").read_text())}
        assert sorted(rows) == sorted(base)
        for topic, row in rows.items():
            assert {c: row[c] for c in RATE_COLUMNS} == {c: base[topic][c] for c in RATE_COLUMNS}, (name, topic)
    history = pq.read_table(out / "history")
    assert set(history.column_names) >= {"cluster", "dt", "ts", "interval_s", "broker_id", "topic", "bytes_in", "flags"}
    # one row per broker, topic and minute: broker 2's BytesOut meter is kept while its BytesIn meter is
    # closed, so those 20 minutes have rows with no bytes_in and no messages_in (a missing meter is null in every
    # metric, never 0: docs/formats.md)
    assert history.num_rows == 3 * 3 * cluster.minutes
    rows = [r for r in history.to_pylist() if r["broker_id"] == 2 and r["topic"] == "orders" and r["messages_in"] is None]
    assert len(rows) == 20 and all(r["bytes_in"] is None for r in rows)


def test_no_input_is_an_input_error(spark, tmp_path: Path) -> None:
    from pools.errors import InputError
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    with pytest.raises(InputError, match="no input"):
        run(spark, IngestInputs(), tmp_path / "p", IngestParams(cluster="c"))
