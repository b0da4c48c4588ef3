"""`spark_jobs.metric_names`: every exporter's spelling of Kafka's per-topic meters, and the user's names file."""

from __future__ import annotations

from pathlib import Path

import pytest

from pools.errors import InputError
from spark_jobs.metric_names import COUNTER, DEFAULT, RATE, Meter, load_metric_names


@pytest.mark.parametrize(
    ("name", "labels", "meter"),
    [
        ("kafka_server_brokertopicmetrics_bytesin_total", {}, Meter("bytes_in", COUNTER)),  # Strimzi, kafka-2_0_0 lower-cased
        ("kafka_server_BrokerTopicMetrics_BytesIn_total", {}, Meter("bytes_in", COUNTER)),  # the same rules, CamelCase
        ("kafka_server_BrokerTopicMetrics_Count", {"name": "BytesOutPerSec"}, Meter("bytes_out", COUNTER)),  # no rules
        ("kafka_server_brokertopicmetrics_count", {"name": "MessagesInPerSec"}, Meter("messages_in", COUNTER)),
        ("kafka_server_BrokerTopicMetrics_OneMinuteRate", {"name": "BytesInPerSec"}, Meter("bytes_in", RATE)),  # Cruise Control's
        ("kafka_server_brokertopicmetrics_bytesinpersec", {}, Meter("bytes_in", COUNTER)),  # Confluent's Count
        ("kafka_server_brokertopicmetrics_bytesoutpersec_oneminuterate", {}, Meter("bytes_out", RATE)),  # Confluent's rate
        ("kafka_server_broker_topic_metrics_bytesinpersec_rate", {}, Meter("bytes_in", RATE)),
        ("kafka_topic_BytesInPerSec_total", {"metric": "BytesInPerSec"}, Meter("bytes_in", COUNTER)),
        ("kafka_log_log_size", {}, Meter("log_size", COUNTER)),
        ("kafka_log_Log_Value", {"name": "Size"}, Meter("log_size", COUNTER)),
    ],
)
def test_every_spelling_of_a_meter_is_recognised(name: str, labels: dict[str, str], meter: Meter) -> None:
    assert DEFAULT.meter(name, labels) == meter


@pytest.mark.parametrize(
    ("name", "labels"),
    [
        ("kafka_server_brokertopicmetrics_replicationbytesin_total", {}),  # broker-wide only, never per topic
        ("kafka_server_brokertopicmetrics_totalproducerequests_total", {}),
        ("kafka_server_BrokerTopicMetrics_Count", {"name": "TotalFetchRequestsPerSec"}),
        ("kafka_server_BrokerTopicMetrics_FiveMinuteRate", {"name": "BytesInPerSec"}),  # flattens even more: not used
        ("kafka_server_BrokerTopicMetrics_Count", {}),
        ("up", {}),
        ("", {}),
    ],
)
def test_other_series_are_not_meters(name: str, labels: dict[str, str]) -> None:
    assert DEFAULT.meter(name, labels) is None


def test_the_candidates_are_the_names_that_can_be_a_meter() -> None:
    assert DEFAULT.candidate("kafka_server_BrokerTopicMetrics_Count")  # with a name label
    assert DEFAULT.meter_label_values("kafka_server_BrokerTopicMetrics_Count") == ("name", "metric")
    assert DEFAULT.meter_label_values("kafka_server_BrokerTopicMetrics_BytesIn_total") == ()
    assert not DEFAULT.candidate("kafka_server_brokertopicmetrics")
    assert not DEFAULT.candidate("jvm_memory_bytes_used")


def test_a_names_file_names_series_labels_and_a_selector(tmp_path: Path) -> None:
    path = tmp_path / "names.toml"
    path.write_text(
        '[metrics]\nbytes_in = "my_in_total"\nbytes_out = { name = "my_out_rate", type = "rate" }\n'
        '[labels]\ntopic = "topic_name"\ninstance = ["kubernetes_pod_name", "instance"]\n[select]\njob = "kafka-prod"\n'
    )
    names = load_metric_names(str(path))
    assert names.meter("my_in_total", {}) == Meter("bytes_in", COUNTER)
    assert names.meter("my_out_rate", {}) == Meter("bytes_out", RATE)
    # a metric the user named is read only from the series named
    assert names.meter("kafka_server_brokertopicmetrics_bytesin_total", {}) is None
    assert names.meter("kafka_server_brokertopicmetrics_messagesin_total", {}) == Meter("messages_in", COUNTER)
    assert names.broker({"kubernetes_pod_name": "kafka-0", "instance": "10.0.0.1:9404"}, {"kafka-0": 0}) == 0
    assert names.broker({"instance": "10.0.0.1:9404"}, {"10.0.0.1:9404": 3}) == 3
    assert names.matchers({"__name__": "my_in_total"}) == '__name__="my_in_total",topic_name!="",job="kafka-prod"'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[metric]\n", "[metric]: unknown table"),
        ('[metrics]\nbytes = "x"\n', "metrics.bytes: unknown metric"),
        ('[metrics]\nbytes_in = { name = "x", type = "gauge" }\n', "metrics.bytes_in.type: expected counter or rate"),
        ('[metrics]\nbytes_in = 3\n', "metrics.bytes_in: expected a series name"),
        ('[labels]\ntopic = "a-b"\n', "labels.topic: expected a label name"),
        ('[labels]\nbroker = "x"\n', "labels.broker: unknown key"),
        ('[select]\njob = 1\n', 'select.job: expected label = "value"'),
    ],
)
def test_a_bad_names_file_is_exit_2_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "names.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=r"names\.toml: " + message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        load_metric_names(str(path))


def test_the_records_names_are_recognised() -> None:
    from spark_jobs.records import PROM_METRICS

    assert {name: DEFAULT.meter(name, {}).metric for name in PROM_METRICS} == dict(PROM_METRICS)


def test_a_broker_label_is_an_id_only_in_ascii_digits() -> None:
    """Spark's lookup of the JVM readers took ``[0-9]{1,9}`` only; Python's ``isdigit`` also took ``١٢`` and ``²``."""
    assert DEFAULT.broker({"instance": "12"}, {}) == 12
    assert DEFAULT.broker({"instance": "\u0661\u0662"}, {}) is None
    assert DEFAULT.broker({"instance": "\u00b2", "pod": "3"}, {}) == 3
    assert DEFAULT.broker({"instance": "1234567890"}, {}) is None


#: Kafka's tiered-storage metrics (KIP-405) as each exporter spells them: name, labels, what they are.
REMOTE_SPELLINGS = [
    ("kafka_server_BrokerTopicMetrics_RemoteFetchBytes_total", {}, ("remote_fetch_bytes", "counter")),  # kafka-2_0_0
    ("kafka_server_brokertopicmetrics_remotecopybytes_total", {}, ("remote_copy_bytes", "counter")),  # Strimzi
    ("kafka_server_brokertopicmetrics_remotefetchbytespersec", {}, ("remote_fetch_bytes", "counter")),  # Confluent
    ("kafka_server_BrokerTopicMetrics_Count", {"name": "RemoteCopyBytesPerSec"}, ("remote_copy_bytes", "counter")),
    ("kafka_server_BrokerTopicMetrics_OneMinuteRate", {"name": "RemoteFetchBytesPerSec"},
     ("remote_fetch_bytes", "rate")),
    ("kafka_server_brokertopicmetrics_remotecopybytespersec_oneminuterate", {}, ("remote_copy_bytes", "rate")),
    ("kafka_topic_RemoteFetchBytesPerSec_total", {"metric": "RemoteFetchBytesPerSec"},
     ("remote_fetch_bytes", "counter")),
    ("kafka_server_BrokerTopicMetrics_RemoteLogSizeBytes", {}, ("remote_log_size", "gauge")),  # kafka-2_0_0 Value rule
    ("kafka_server_BrokerTopicMetrics_Value", {"name": "RemoteLogSizeBytes"}, ("remote_log_size", "gauge")),  # no rules
    ("kafka_server_brokertopicmetrics_remotelogsizebytes_value", {}, ("remote_log_size", "gauge")),
]


@pytest.mark.parametrize(("name", "labels", "expected"), REMOTE_SPELLINGS)
def test_remote_storage_metrics_are_read_in_every_spelling_and_never_as_a_per_topic_meter(name, labels, expected):
    from spark_jobs.metric_names import DEFAULT

    found = DEFAULT.remote(name, labels)
    assert (found.metric, found.type) == expected
    assert DEFAULT.meter(name, labels) is None  # BytesOut/BytesIn/MessagesIn readers keep ignoring them


@pytest.mark.parametrize(("name", "labels"), [
    ("kafka_server_BrokerTopicMetrics_BytesOut_total", {}),
    ("kafka_server_BrokerTopicMetrics_Count", {"name": "BytesInPerSec"}),
    ("kafka_server_BrokerTopicMetrics_Value", {"name": "RemoteCopyLagBytes"}),
    ("kafka_server_BrokerTopicMetrics_Count", {"name": "RemoteFetchRequestsPerSec"}),
    ("kafka_server_BrokerTopicMetrics_RemoteLogSizeComputationTime", {}),
    ("kafka_server_BrokerTopicMetrics_Count", {}),
    ("", {}),
])
def test_other_series_are_no_remote_storage_metric(name, labels):
    from spark_jobs.metric_names import DEFAULT

    assert DEFAULT.remote(name, labels) is None


@pytest.mark.parametrize(("name", "labels", "expected"), REMOTE_SPELLINGS)
def test_the_remote_meters_are_minute_meters_and_their_size_gauge_is_not(name, labels, expected):
    """What the readers keep per minute: the copy and fetch meters in every spelling (counter or rate gauge); the
    RemoteLogSizeBytes gauge is a size, never a meter."""
    from spark_jobs.metric_names import DEFAULT, Meter

    found = DEFAULT.minute_meter(name, labels)
    assert found == (None if expected[1] == "gauge" else Meter(*expected))
    assert DEFAULT.minute_meter("kafka_server_BrokerTopicMetrics_BytesOut_total", {}) == Meter("bytes_out", "counter")


def test_the_pull_finds_the_remote_meters_by_name_or_label_and_their_recording_rules() -> None:
    """The Prometheus pull asks the server for a name `candidate` accepts, and for the meter label's values where the
    name spells only the attribute (jmx_exporter without rules); the level:metric:operation convention names the
    remote meters' recording rules too."""
    from spark_jobs.metric_names import DEFAULT, Recorded

    for name in ("kafka_server_brokertopicmetrics_remotecopybytes_total", "kafka_server_BrokerTopicMetrics_RemoteFetchBytes_total",
                 "kafka_server_brokertopicmetrics_remotefetchbytespersec_oneminuterate"):
        assert DEFAULT.candidate(name) and DEFAULT.meter_label_values(name) == ()
    assert DEFAULT.meter_label_values("kafka_server_BrokerTopicMetrics_OneMinuteRate") == ("name", "metric")
    assert not DEFAULT.candidate("kafka_server_brokertopicmetrics_remotelogsizebytes")  # a size: not pulled as a meter
    assert DEFAULT.recorded("topic:kafka_server_brokertopicmetrics_remotecopybytes:rate1m") == Recorded(
        "remote_copy_bytes", "rate", 60, True)
    assert DEFAULT.recorded("instance_topic:kafka_server_brokertopicmetrics_remotefetchbytes:increase60s") == Recorded(
        "remote_fetch_bytes", "increase", 60, False)
    assert DEFAULT.recorded("topic:kafka_server_brokertopicmetrics_remotelogsizebytes:rate1m") is None
