"""Each reader classifies every input unit: accepted, ignored with a reason, or rejected with a reason."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from spark_jobs.staging import ReaderOptions

pytestmark = pytest.mark.spark

BROKERS = {"kafka-1:7071": 1, "http://kafka-1:8778/jolokia": 1}


def _kinds(df) -> Counter:
    return Counter((r["kind"], r["reason"]) for r in df.select("kind", "reason").collect())


def test_prom_text_reader_accepts_jmx_exporter_output_and_classifies_the_rest(spark, tmp_path: Path) -> None:
    from spark_jobs.prom_text import read_prom_text

    path = tmp_path / "a.prom"
    path.write_text(
        "# HELP kafka_server_brokertopicmetrics_bytesin_total Attribute exposed for management\n"
        "# TYPE kafka_server_brokertopicmetrics_bytesin_total counter\n"
        'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",job="kafka",} 8.60786391633E11 1740960000000\n'
        'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",job="kafka",topic="ads.changelog.v3",} 1.0004966371E10 1740960000000\n'
        'kafka_server_BrokerTopicMetrics_MessagesIn_total{instance="kafka-1:7071",topic="a"} 12 1740960000000\r\n'
        'kafka_server_brokertopicmetrics_bytesout_total{pod="7",topic="a"} 5 1740960000000\n'
        'kafka_server_brokertopicmetrics_bytesout_total{instance="kafka-1:7071",topic="a"} NaN 1740960000000\n'
        'kafka_server_brokertopicmetrics_bytesout_total{instance="kafka-1:7071",topic="a"} +Inf 1740960000000\n'
        'kafka_server_brokertopicmetrics_bytesout_total{instance="kafka-1:7071",topic="a"} -3 1740960000000\n'
        'kafka_server_brokertopicmetrics_bytesout_total{instance="kafka-1:7071",topic="a"} 1,5 1740960000000\n'
        'kafka_server_brokertopicmetrics_bytesout_total{instance="kafka-9:7071",topic="a"} 5 1740960000000\n'
        'kafka_server_brokertopicmetrics_bytesout_total{instance="kafka-1:7071",topic="a"} 5\n'
        'kafka_server_brokertopicmetrics_bytesout_total{instance="kafka-1:7071",topic="a"} 5 17409600000.5\n'
        'kafka_server_brokertopicmetrics_bytesout_total{instance="kafka-1:7071" topic="a"} 5 1740960000000\n'
        'kafka_log_log_size{instance="kafka-1:7071",topic="a",partition="3",} 123.0 1740960000000\n'
        'kafka_log_log_size{instance="kafka-1:7071",topic="a",partition="x",} 123.0 1740960000000\n'
        'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a } 5 17\n'
        "garbage\n"
        "jvm_memory_bytes_used 5 17\n"
        "\n"
    )
    df = read_prom_text(spark, [str(path)], ReaderOptions("c", BROKERS))
    assert _kinds(df) == Counter(
        {
            ("ignored", "comment"): 2,
            ("ignored", "broker_total"): 1,
            ("counter", None): 3,
            ("rejected", "nan_value"): 1,
            ("rejected", "infinite_value"): 1,
            ("rejected", "negative_value"): 1,
            ("rejected", "bad_value"): 1,
            ("rejected", "malformed_line"): 2,
            ("rejected", "unknown_broker"): 1,
            ("rejected", "missing_timestamp"): 1,
            ("rejected", "bad_timestamp"): 1,
            ("rejected", "malformed_labels"): 1,
            ("size", None): 1,
            ("rejected", "bad_partition"): 1,
            ("ignored", "other_metric"): 1,
            ("ignored", "blank"): 1,
        }
    )
    rows = {(r["topic"], r["metric"]): r for r in df.where("kind in ('counter', 'size')").collect()}
    assert rows[("ads.changelog.v3", "bytes_in")]["value"] == 10004966371.0
    assert rows[("ads.changelog.v3", "bytes_in")]["ts_ms"] == 1740960000000
    assert rows[("a", "messages_in")]["broker_id"] == 1
    assert rows[("a", "bytes_out")]["broker_id"] == 7  # a numeric pod label is the broker id
    assert rows[("a", "log_size")]["partition"] == 3
    raw = [r["raw"] for r in df.where("reason = 'nan_value'").collect()]
    assert raw == ['kafka_server_brokertopicmetrics_bytesout_total{instance="kafka-1:7071",topic="a"} NaN 1740960000000']


def test_the_text_and_range_readers_read_every_spelling_and_the_names_file(spark, tmp_path: Path) -> None:
    from spark_jobs.metric_names import MetricNames
    from spark_jobs.prom_text import read_prom_text
    from spark_jobs.query_range import stage_query_range

    lines = [
        'kafka_server_BrokerTopicMetrics_Count{instance="kafka-1:7071",name="BytesInPerSec",topic="a"} 10 1740960000000',
        'kafka_server_BrokerTopicMetrics_Count{instance="kafka-1:7071",name="TotalFetchRequestsPerSec",topic="a"} 3 1740960000000',
        'kafka_server_brokertopicmetrics_bytesoutpersec{instance="kafka-1:7071",topic="a"} 11 1740960000000',
        'kafka_topic_MessagesInPerSec_total{instance="kafka-1:7071",metric="MessagesInPerSec",topic="a"} 12 1740960000000',
        'kafka_log_Log_Value{instance="kafka-1:7071",name="Size",topic="a",partition="0"} 13 1740960000000',
        'my_bytes_in_total{host="kafka-1:7071",t="b"} 14 1740960000000',
    ]
    path = tmp_path / "a.prom"
    path.write_text("\n".join(lines) + "\n")
    df = read_prom_text(spark, [str(path)], ReaderOptions("c", BROKERS))
    got = {(r["metric"], r["value"]) for r in df.where("kind in ('counter', 'size')").collect()}
    assert got == {("bytes_in", 10.0), ("bytes_out", 11.0), ("messages_in", 12.0), ("log_size", 13.0)}
    names = MetricNames({"bytes_in": ("my_bytes_in_total", "counter")}, topic_label="t", instance_labels=("host",))
    df = read_prom_text(spark, [str(path)], ReaderOptions("c", BROKERS, names))
    assert {(r["metric"], r["topic"], r["broker_id"]) for r in df.where("kind = 'counter'").collect()} == {("bytes_in", "b", 1)}
    # a rate gauge in a query_range export: each value is the rate of the step before it
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [{
        "metric": {"__name__": "kafka_server_BrokerTopicMetrics_OneMinuteRate", "name": "BytesInPerSec", "instance": "kafka-1:7071", "topic": "a"},
        "values": [[1740960060, "2"], [1740960120, "3"], [1740960180, "4"]],
    }]}}
    export = tmp_path / "rates.json"
    export.write_text(json.dumps(doc))
    df = stage_query_range(spark, [str(export)], str(tmp_path / "staged"), ReaderOptions("c", BROKERS))
    assert sorted((r["value"], r["window_s"]) for r in df.where("kind = 'increase'").collect()) == [(120.0, 60.0), (180.0, 60.0), (240.0, 60.0)]


def test_query_range_reader_parses_documents_and_rejects_bad_ones(spark, tmp_path: Path) -> None:
    from spark_jobs.query_range import stage_query_range

    good = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": {"instance": "kafka-1:7071", "topic": "t"},
                    "values": [[1740960000, "4966371.0"], [1740960060.5, "6596575"], [1740960120, "NaN"], [1740960180]],
                },
                {"metric": {"__name__": "Kafka_Server_BrokerTopicMetrics_BytesOut_total", "instance": "kafka-1:7071"}, "values": [[1, "2"]]},
                {"metric": {"__name__": "up", "instance": "kafka-1:7071"}, "values": [[1, "1"]]},
            ],
        },
    }
    (tmp_path / "kafka_server_brokertopicmetrics_bytesin_total-2025-W10.json").write_text(json.dumps(good, indent=2))
    (tmp_path / "kafka_server_brokertopicmetrics_bytesout_total-2025-W10.json").write_text(
        '{"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries"}'
    )
    (tmp_path / "kafka_server_brokertopicmetrics_messagesin_total-2025-W10.json").write_text('{"status":"success","data":{"resu')
    (tmp_path / "kafka_log_log_size-2025-W10.json").write_text('{"status":"success","data":{"resultType":"vector","result":[]}}')
    (tmp_path / "kafka_log_log_size-2025-W11.json").write_text('{"status":"success","data":{"resultType":"matrix","result":[]}}')
    paths = sorted(str(p) for p in tmp_path.glob("*.json"))
    df = stage_query_range(spark, paths, str(tmp_path / "staged"), ReaderOptions("c", BROKERS))
    assert _kinds(df) == Counter(
        {
            ("counter", None): 2,
            ("rejected", "nan_value"): 1,
            ("rejected", "malformed_pair"): 1,
            ("ignored", "broker_total"): 1,
            ("ignored", "other_metric"): 1,
            ("rejected", "query_failed"): 1,
            ("rejected", "malformed_json"): 1,
            ("rejected", "not_a_matrix"): 1,
            ("ignored", "empty_result"): 1,
        }
    )
    ts = sorted(r["ts_ms"] for r in df.where("kind = 'counter'").collect())
    assert ts == [1740960000000, 1740960060500]


def test_query_range_files_are_read_in_parallel_one_task_per_file(spark, tmp_path: Path) -> None:
    from spark_jobs.query_range import stage_query_range

    for i in range(4):
        doc = {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {"instance": "1", "topic": "t"}, "values": [[i, "1"]]}]}}
        (tmp_path / f"kafka_server_brokertopicmetrics_bytesin_total-w{i}.json").write_text(json.dumps(doc))
    staged = tmp_path / "staged"
    df = stage_query_range(spark, sorted(str(p) for p in tmp_path.iterdir()), str(staged), ReaderOptions("c"))
    assert sorted(p.name for p in staged.iterdir()) == [f"prom_range-{i:05d}.parquet" for i in range(4)]  # one task, one file each
    assert df.count() == 4


def test_telegraf_reader(spark, tmp_path: Path) -> None:
    from spark_jobs.telegraf import read_telegraf

    agent = "http://kafka-1:8778/jolokia"
    lines = [
        {"fields": {"BytesInPerSec.Count": 1000, "BytesInPerSec.OneMinuteRate": 3.5, "MessagesInPerSec.Count": 10}, "name": "kafka_topic", "tags": {"topic": "orders", "jolokia_agent_url": agent}, "timestamp": 1740960000},
        {"fields": {"BytesOutPerSec.Count": 7}, "name": "kafka_topic", "tags": {"topic": "orders", "jolokia_agent_url": agent}, "timestamp": 1740960000123},
        {"fields": {"Size": 12345}, "name": "kafka_partition", "tags": {"topic": "orders", "partition": "2", "jolokia_agent_url": agent}, "timestamp": 1740960000},
        {"fields": {"Size": 12345}, "name": "kafka_partition", "tags": {"topic": "orders", "partition": "x", "jolokia_agent_url": agent}, "timestamp": 1740960000},
        {"fields": {"usage": 1}, "name": "cpu", "tags": {}, "timestamp": 1740960000},
        {"fields": {"BytesInPerSec.Count": "NaN"}, "name": "kafka_topic", "tags": {"topic": "orders", "jolokia_agent_url": agent}, "timestamp": 1740960000},
        {"fields": {"BytesInPerSec.Count": 5}, "name": "kafka_topic", "tags": {"topic": "orders", "jolokia_agent_url": "http://x:8778/jolokia"}, "timestamp": 1740960000},
        {"fields": {}, "name": "kafka_topic", "tags": {"topic": "orders"}, "timestamp": 1740960000},
    ]
    path = tmp_path / "telegraf.json"
    path.write_text("\n".join(json.dumps(x) for x in lines) + '\n{"broken\n')
    df = read_telegraf(spark, [str(path)], ReaderOptions("c", BROKERS))
    assert _kinds(df) == Counter(
        {
            ("counter", None): 3,
            ("ignored", "other_field"): 1,
            ("size", None): 1,
            ("rejected", "bad_partition"): 1,
            ("ignored", "other_measurement"): 1,
            ("rejected", "nan_value"): 1,
            ("rejected", "unknown_broker"): 1,
            ("rejected", "no_fields"): 1,
            ("rejected", "malformed_json"): 1,
        }
    )
    ts = {r["metric"]: r["ts_ms"] for r in df.where("kind = 'counter'").collect()}
    assert ts == {"bytes_in": 1740960000000, "messages_in": 1740960000000, "bytes_out": 1740960000123}


def test_log_dirs_reader_reads_the_kafka_sample_and_rejects_bad_replicas(spark, data_dir: Path, tmp_path: Path) -> None:
    from spark_jobs.log_dirs import read_log_dirs

    good = tmp_path / "log-dirs-20250301T000000Z.txt"
    good.write_text((data_dir / "kafka-formats" / "kafka-log-dirs-describe.txt").read_text())
    bad = tmp_path / "log-dirs-20250301T010000Z.txt"
    bad.write_text(
        "Querying brokers for log directories information\nbogus\n"
        '{"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/d","error":null,"partitions":['
        '{"partition":"nodash","size":1,"offsetLag":0,"isFuture":false},'
        '{"partition":"t-1","size":-5,"offsetLag":0,"isFuture":false}]}]}]}\n'
        '{"version":2,"brokers":[]}\n{"version":1,"brok\n'
    )
    unstamped = tmp_path / "log-dirs-latest.txt"
    unstamped.write_text('{"version":1,"brokers":[]}\n')
    df = read_log_dirs(spark, [str(good), str(bad), str(unstamped)], cluster="c")
    kinds = _kinds(df)
    assert kinds[("rejected", "bad_partition")] == 1
    assert kinds[("rejected", "bad_size")] == 1
    assert kinds[("rejected", "malformed_line")] == 1
    assert kinds[("rejected", "malformed_json")] == 1
    assert kinds[("rejected", "unsupported_version")] == 1
    assert kinds[("rejected", "no_snapshot_time")] == 1
    sizes = {(r["broker_id"], r["topic"], r["partition"], r["is_future"]): r["value"] for r in df.where("kind = 'size'").collect()}
    assert sizes[(101, "my-topic-with-dashes", 12, False)] == 394
    assert sizes[(101, "orders", 1, True)] == 1.2e9
    assert all(r["ts_ms"] == 1740787200000 for r in df.where("kind = 'size'").collect())
