"""`spark_jobs.telegraf`: the reader's records of the pinned random + adversarial corpus, and what any input may not do."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from spark_jobs.staging import ReaderOptions
from tests.spark_jobs.telegraf_corpus import BROKERS, corpus, records

pytestmark = pytest.mark.spark


def _key(row: dict, directory: str) -> str:
    row = {**row, "file": row["file"].replace(directory, "{dir}") if row["file"] else None}
    if row["value"] is not None and (math.isnan(row["value"]) or math.isinf(row["value"])):
        row["value"] = repr(row["value"])
    return json.dumps(row, sort_keys=True, ensure_ascii=False)


def test_every_corpus_line_gives_the_pinned_records(spark, tmp_path: Path) -> None:
    from spark_jobs.telegraf import read_telegraf

    data, expected = records()
    path = tmp_path / "corpus.json"
    path.write_bytes(data)
    rows = [r.asDict() for r in read_telegraf(spark, [str(path)], ReaderOptions("c", BROKERS)).collect()]
    got = Counter(_key(r, rows[0]["file"].rsplit("/", 1)[0]) for r in rows)
    want = Counter(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in expected)
    assert got - want == Counter() and want - got == Counter()


@pytest.mark.parametrize("split", [None, 50_000])
def test_the_worker_path_gives_the_pinned_records_in_any_split(spark, tmp_path: Path, split: int | None) -> None:
    """Telegraf's own lines by the Python workers, every other line by Spark's JSON reader: the JVM reader's records."""
    from spark_jobs.prom_text import split_points
    from spark_jobs.records import RECORD_SCHEMA, STAGED_SCHEMA
    from spark_jobs.telegraf import stage_telegraf

    data, expected = records()
    path = tmp_path / "in dir" / "corpus.json"
    path.parent.mkdir()
    path.write_bytes(data)
    if split:
        assert len(split_points(str(path), split)) > 10
    rest = stage_telegraf(spark, [str(path)], str(tmp_path / "staged"), ReaderOptions("c", BROKERS, split_bytes=split))
    worker = spark.read.schema(STAGED_SCHEMA).parquet(str(tmp_path / "staged")).select(*RECORD_SCHEMA.fieldNames())
    rows = [r.asDict() for r in worker.unionByName(rest).collect()]
    assert sum(1 for r in worker.collect()) > 400  # the canonical lines were the workers'
    got = Counter(_key(r, f"file:{tmp_path}/in%20dir") for r in rows)
    want = Counter(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in expected)
    assert got - want == Counter() and want - got == Counter()


def test_the_corpus_is_the_generators_and_holds_every_kind_and_reason() -> None:
    data, expected = records()
    assert data == corpus()
    reasons = {(r["kind"], r["reason"]) for r in expected}
    for reason in ("malformed_json", "no_fields", "bad_value", "nan_value", "infinite_value", "negative_value", "value_out_of_range",
                   "bad_timestamp", "unknown_broker", "bad_partition"):
        assert ("rejected", reason) in reasons
    for reason in ("other_measurement", "other_field", "broker_total"):
        assert ("ignored", reason) in reasons
    assert {("counter", None), ("size", None)} <= reasons


def test_a_timestamp_beyond_a_long_is_a_bad_timestamp_not_a_failed_read(spark, tmp_path: Path) -> None:
    from spark_jobs.telegraf import read_telegraf

    path = tmp_path / "t.json"
    line = '{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":%s}\n'
    path.write_text(line % "1e30" + line % "1740960000")
    rows = read_telegraf(spark, [str(path)], ReaderOptions("c")).select("kind", "reason", "ts_ms").collect()
    assert sorted(tuple(r) for r in rows) == [("counter", None, 1740960000000), ("rejected", "bad_timestamp", None)]


def test_the_remote_copy_and_fetch_meters_are_counters_on_both_paths(spark, tmp_path: Path) -> None:
    """jolokia2's ``field_prefix = "$1."`` spellings of Kafka's tiered-storage meters (``RemoteCopyBytesPerSec.Count``,
    ``RemoteFetchBytesPerSec.Count``) are counters by the workers and by Spark's JSON reader alike; their rate
    gauges are other fields."""
    from spark_jobs.records import RECORD_SCHEMA, STAGED_SCHEMA
    from spark_jobs.telegraf import read_telegraf, stage_telegraf

    fields = '{"RemoteCopyBytesPerSec.Count":7,"RemoteFetchBytesPerSec.Count":9,"RemoteFetchBytesPerSec.OneMinuteRate":1}'
    line = '{"fields":%s,"name":"kafka_topic","tags":{"jolokia_agent_url":"7","topic":"a"},"timestamp":1740960000}\n'
    path = tmp_path / "t.json"
    path.write_text(line % fields)
    want = [("counter", None, "remote_copy_bytes", 7.0), ("counter", None, "remote_fetch_bytes", 9.0),
            ("ignored", "other_field", None, None)]
    by_spark = read_telegraf(spark, [str(path)], ReaderOptions("c")).select("kind", "reason", "metric", "value")
    assert sorted(tuple(r) for r in by_spark.collect()) == want
    rest = stage_telegraf(spark, [str(path)], str(tmp_path / "staged"), ReaderOptions("c"))
    worker = spark.read.schema(STAGED_SCHEMA).parquet(str(tmp_path / "staged")).select(*RECORD_SCHEMA.fieldNames())
    assert rest is None  # Telegraf's own line: read by the workers, nothing left to Spark
    assert sorted(tuple(r) for r in worker.select("kind", "reason", "metric", "value").collect()) == want


def test_the_remote_log_size_gauge_is_a_size_without_a_partition_on_both_paths(spark, tmp_path: Path) -> None:
    """jolokia2's spelling of Kafka's ``kafka.server:type=BrokerTopicMetrics,name=RemoteLogSizeBytes,topic=<t>`` gauge
    (``field_prefix = "$1."`` + its attribute ``Value``) on a ``kafka_topic`` line is a size record of
    ``remote_log_size`` without a partition, as prom text reads the gauge, by the workers and by Spark's JSON reader
    alike; on a ``kafka_partition`` line, or another remote gauge, it is another field; bad values are rejected."""
    from spark_jobs.records import RECORD_SCHEMA, STAGED_SCHEMA
    from spark_jobs.telegraf import read_telegraf, stage_telegraf

    def line(name: str, fields: str, **tags: str) -> str:
        tags_text = ",".join(f'"{k}":"{v}"' for k, v in sorted(tags.items()))
        return '{"fields":%s,"name":"%s","tags":{%s},"timestamp":1740960000}\n' % (fields, name, tags_text)

    path = tmp_path / "t.json"
    path.write_text("".join([
        line("kafka_topic", '{"RemoteLogSizeBytes.Value":750000000000}', jolokia_agent_url="7", topic="orders"),
        line("kafka_topic", '{"RemoteLogSizeBytes.Value":5,"BytesInPerSec.Count":3}', jolokia_agent_url="8",
             topic="logs"),
        line("kafka_topic", '{"RemoteLogSizeBytes.Value":-1}', jolokia_agent_url="7", topic="bad"),
        line("kafka_topic", '{"RemoteLogSizeBytes.Value":9}', jolokia_agent_url="7"),
        line("kafka_topic", '{"RemoteCopyLagBytes.Value":4,"RemoteLogSizeBytes.Count":4}', jolokia_agent_url="7",
             topic="x"),
        line("kafka_partition", '{"RemoteLogSizeBytes.Value":6}', jolokia_agent_url="7", partition="0", topic="y"),
    ]))
    want = sorted([
        ("size", None, "remote_log_size", 7, "orders", None, 7.5e11),
        ("size", None, "remote_log_size", 8, "logs", None, 5.0),
        ("counter", None, "bytes_in", 8, "logs", None, 3.0),
        ("rejected", "negative_value", None, 7, "bad", None, None),
        ("ignored", "broker_total", None, 7, None, None, None),
        ("ignored", "other_field", None, 7, "x", None, None),
        ("ignored", "other_field", None, 7, "x", None, None),
        ("ignored", "other_field", None, 7, "y", None, None),
    ], key=repr)
    columns = ("kind", "reason", "metric", "broker_id", "topic", "partition", "value")
    by_spark = read_telegraf(spark, [str(path)], ReaderOptions("c")).select(*columns)
    assert sorted((tuple(r) for r in by_spark.collect()), key=repr) == want
    rest = stage_telegraf(spark, [str(path)], str(tmp_path / "staged"), ReaderOptions("c"))
    worker = spark.read.schema(STAGED_SCHEMA).parquet(str(tmp_path / "staged")).select(*RECORD_SCHEMA.fieldNames())
    assert rest is None  # Telegraf's own lines: read by the workers, nothing left to Spark
    assert sorted((tuple(r) for r in worker.select(*columns).collect()), key=repr) == want


@pytest.mark.slow
def test_an_ingest_sums_remote_log_size_from_telegraf_and_query_range_as_plain_python_does(spark, tmp_path) -> None:
    """The profile's ``remote_log_size_bytes`` from Telegraf's ``RemoteLogSizeBytes.Value`` fields and a query_range
    export of the gauge, together: per topic, each broker's latest value within an hour of the topic's last one,
    summed (Kafka's gauge is per broker, over the partitions it leads), as a plain-Python sum over the same samples;
    a topic without the gauge stays unmeasured."""
    import random

    from pools.profile import load_profile
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    rng = random.Random(11)
    start, agents = 1740960000, sorted(BROKERS)
    lines, gauges = [], []  # gauges: (topic, broker, ts_ms, value), every sample either reader gives
    for minute in range(0, 150, 5):
        for agent in agents:
            broker = BROKERS[agent]
            for topic in ("orders", "logs", "plain"):
                fields: dict[str, int] = {"BytesInPerSec.Count": 1000 * minute * broker}
                if topic != "plain" and not (topic == "logs" and broker == 1 and minute > 60):  # broker 1 stops early
                    fields["RemoteLogSizeBytes.Value"] = value = rng.randrange(10**12)
                    gauges.append((topic, broker, (start + 60 * minute) * 1000, value))
                lines.append(json.dumps({"fields": fields, "name": "kafka_topic",
                                         "tags": {"jolokia_agent_url": agent, "topic": topic},
                                         "timestamp": start + 60 * minute}, separators=(",", ":")))
    telegraf = tmp_path / "telegraf.json"
    telegraf.write_text("\n".join(lines) + "\n")
    values = [[start + 60 * m, str(v)] for m, v in ((m, rng.randrange(10**12)) for m in range(0, 160, 10))]
    gauges += [("orders", 4, int(t) * 1000, int(v)) for t, v in values]
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "kafka_server_BrokerTopicMetrics_Value", "name": "RemoteLogSizeBytes",
                    "instance": "kafka-4:7071", "topic": "orders"}, "values": values}]}}))
    inputs = IngestInputs(telegraf=(str(telegraf),), query_range=(str(export),))
    run(spark, inputs, tmp_path / "out", IngestParams(cluster="c", broker_map={**BROKERS, "kafka-4:7071": 4}))

    latest: dict[tuple[str, int], tuple[int, int]] = {}
    for topic, broker, ts, value in gauges:
        latest[(topic, broker)] = max(latest.get((topic, broker), (ts, value)), (ts, value))
    want: dict[str, int] = {}
    for topic in {t for t, _ in latest}:
        last = max(ts for (t, _), (ts, _) in latest.items() if t == topic)
        want[topic] = sum(v for (t, _), (ts, v) in latest.items() if t == topic and ts > last - 3_600_000)
    profile = load_profile(tmp_path / "out")
    assert {t: row.remote_log_size_bytes for t, row in profile.items()} == {**want, "plain": None}
    assert len([k for k in latest if k[0] == "logs"]) == 3 and want["logs"] < sum(
        v for (t, _), (_, v) in latest.items() if t == "logs")  # broker 1's stale value is left out


def _telegraf_lines(seed: int) -> bytes:
    """A few brokers' Telegraf lines over an hour (counters rising, partition sizes, one topic's remote log size), as
    Telegraf writes them, with a few lines of other spellings among them."""
    import random

    rng = random.Random(seed)
    out = []
    for minute in range(60):
        for broker, agent in enumerate(BROKERS, start=1):
            for topic in ("orders", "payments.v2", "é-topic"):
                count = 1000 * minute * broker + rng.randint(0, 999)
                fields = {"BytesInPerSec.Count": count * 100, "BytesOutPerSec.Count": count * 250, "MessagesInPerSec.Count": count,
                          "BytesInPerSec.OneMinuteRate": round(rng.random() * 1e4, 3)}
                if topic == "orders":  # a tiered topic: its remote bytes on each broker
                    fields["RemoteLogSizeBytes.Value"] = count * 3
                line = {"fields": fields, "name": "kafka_topic", "tags": {"jolokia_agent_url": agent, "topic": topic},
                        "timestamp": 1740960000 + 60 * minute}
                out.append(json.dumps(line, separators=(",", ":"), ensure_ascii=False) if rng.random() < 0.9 else json.dumps(line))
                size = {"fields": {"Size": count * 7}, "name": "kafka_partition",
                        "tags": {"jolokia_agent_url": agent, "partition": str(broker % 3), "topic": topic}, "timestamp": 1740960000 + 60 * minute}
                out.append(json.dumps(size, separators=(",", ":"), ensure_ascii=False))
    bad = {"fields": {"BytesInPerSec.Count": "NaN", "Size": 5}, "name": "kafka_topic",
           "tags": {"jolokia_agent_url": "http://kafka-9:8778/jolokia", "topic": "orders"}, "timestamp": 1740960000}
    out[5:5] = [json.dumps(bad, separators=(",", ":")), '{"broken', json.dumps({**bad, "timestamp": 0}, separators=(",", ":"))]
    return ("\n".join(out) + "\n").encode()


@pytest.mark.slow
def test_an_ingest_of_telegraf_lines_writes_the_jvm_readers_files(spark, tmp_path: Path, monkeypatch) -> None:
    """The same ingest with every line read by Spark's JSON reader (the reader before the worker path) writes the same files."""
    import spark_jobs.telegraf as telegraf
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    path = tmp_path / "telegraf.json"
    path.write_bytes(_telegraf_lines(3))
    inputs, params = IngestInputs(telegraf=(str(path),)), IngestParams(cluster="c", broker_map=BROKERS)
    run(spark, inputs, tmp_path / "workers", params)

    def jvm_only(spark, paths, directory, options):  # the reader before the worker path
        Path(directory).mkdir(parents=True)
        return telegraf.read_telegraf(spark, paths, options)

    monkeypatch.setattr("spark_jobs.ingest.stage_telegraf", jvm_only)
    run(spark, inputs, tmp_path / "jvm", params)
    from spark_jobs.spark_log import LOG_FILE

    import pyarrow.parquet as pq

    def files(out: Path) -> dict[str, object]:  # every output but Spark's own log (times, ids); a table's rows in order
        found: dict[str, object] = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != LOG_FILE}
        for d in (p for p in out.iterdir() if p.is_dir()):  # written by Spark: part files of random names
            found[d.name] = sorted(map(repr, pq.read_table(d).to_pylist()))
        return found

    workers, jvm = files(tmp_path / "workers"), files(tmp_path / "jvm")
    assert {"quality.json", "topic_profile.parquet", "quarantine"} <= set(jvm)
    assert json.loads(workers["quality.json"])["totals"]["accepted"] > 0
    from pools.profile import load_profile

    remote = {t: row.remote_log_size_bytes for t, row in load_profile(tmp_path / "workers").items()}
    assert remote["orders"] > 0 and remote["payments.v2"] is None
    assert sorted(workers) == sorted(jvm)
    assert [n for n in jvm if workers[n] != jvm[n]] == []


def test_a_file_of_other_spellings_only_is_read_by_spark_alone(spark, tmp_path: Path) -> None:
    """No line is Telegraf's own (spaces after the colons): the workers write no Parquet, Spark reads every line."""
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    path = tmp_path / "telegraf.json"
    lines = [json.loads(x) for x in _telegraf_lines(4).decode().splitlines()[10:40] if x.startswith('{"fields"')]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = run(spark, IngestInputs(telegraf=(str(path),)), tmp_path / "out", IngestParams(cluster="c", broker_map=BROKERS))
    totals = result.quality["totals"]
    assert totals["read"] == sum(len(x["fields"]) for x in lines) and totals["accepted"] > 0
