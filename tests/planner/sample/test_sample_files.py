"""The sample's files: deterministic, parseable by the real parsers, in the formats' exact shapes."""

from __future__ import annotations

import json
import re
import tomllib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.errors import InputError
from pools.kafka_formats.consumer_groups import parse_consumer_group_members, parse_consumer_groups_describe
from pools.kafka_formats.inventory import parse_inventory_toml
from pools.kafka_formats.log_dirs import parse_log_dirs
from pools.kafka_formats.topics_describe import parse_topics_describe
from pools.policy import parse_policy
from planner.sample import SampleSpec, sample_files
from planner.sample.writers import java_double, prom_float


_SAMPLE_LINE = re.compile(
    r'^(?P<name>[a-z_]+)\{(?P<labels>(?:[a-z_]+="[^"]*",)+)\} (?P<value>-?\d\.\d+E\d+|-?\d+\.\d+) (?P<ts>\d{13})$'
)


def test_same_spec_gives_identical_files(tiny, tiny_spec):
    again = dict(sample_files(tiny_spec))
    assert list(again) == list(tiny)
    assert all(again[k] == tiny[k] for k in tiny)


def test_another_seed_gives_another_cluster(tiny):
    other = dict(sample_files(SampleSpec(seed=8, brokers=6, topics=6, days=2, step_s=60)))
    assert other["kafka/topics-describe.txt"] != tiny["kafka/topics-describe.txt"]


def test_layout(tiny):
    paths = set(tiny)
    for fixed in ("kafka/topics-describe.txt", "kafka/consumer-groups.txt", "kafka/consumer-members.txt",
                  "brokers.toml", "pools.toml", "broker-map.toml", "truth.json"):
        assert fixed in paths
    assert sorted(p for p in paths if p.startswith("kafka/log-dirs/")) == [
        "kafka/log-dirs/log-dirs-20261101T000000Z.txt", "kafka/log-dirs/log-dirs-20261102T000000Z.txt"]
    assert {p.split("/")[2] for p in paths if p.startswith("metrics/prom/")} == {f"kafka-{i}:7071" for i in range(1, 7)}
    assert sorted(p for p in paths if p.startswith("metrics/query_range/")) == [
        f"metrics/query_range/kafka_server_BrokerTopicMetrics_{m}_total-2026-W44.json"
        for m in ("BytesIn", "BytesOut", "MessagesIn")]


def test_describe_parses_and_matches_truth(tiny, tiny_truth):
    topics = parse_topics_describe(tiny["kafka/topics-describe.txt"])
    assert [t.topic for t in topics] == sorted(tiny_truth["topics"])
    for t in topics:
        truth = tiny_truth["topics"][t.topic]
        assert t.partition_count == truth["partitions"] == len(t.partitions)
        assert t.replication_factor == truth["replication_factor"]
        assert t.topic_id == truth["topic_id"]
        assert int(t.configs.get("min.insync.replicas", "1")) == truth["min_insync_replicas"]
    first = tiny["kafka/topics-describe.txt"].splitlines()[1]
    assert first.startswith("\tTopic: ") and first.endswith("\tElr: N/A\tLastKnownElr: N/A")


def test_log_dirs_parse_with_two_status_lines(tiny, tiny_truth):
    for path in (p for p in tiny if p.startswith("kafka/log-dirs/")):
        text = tiny[path]
        lines = text.splitlines()
        assert lines[0] == "Querying brokers for log directories information"
        assert lines[1] == "Received log directory information from brokers 1,2,3,4,5,6"
        assert len(lines) == 3 and " " not in lines[2]
        report = parse_log_dirs(text, source=path)
        assert [b.broker for b in report.brokers] == [1, 2, 3, 4, 5, 6]
    final = parse_log_dirs(tiny["kafka/log-dirs/log-dirs-20261102T000000Z.txt"])
    planted = [p for p in tiny_truth["planted"] if p["kind"] == "log_dir_error"]
    assert [(b, d) for b, d, _ in final.log_dir_errors] == [(p["broker"], p["log_dir"]) for p in planted]
    earlier = parse_log_dirs(tiny["kafka/log-dirs/log-dirs-20261101T000000Z.txt"])
    assert earlier.log_dir_errors == ()


def test_storage_truth_is_the_largest_replica_summed(tiny, tiny_truth):
    from pools.kafka_formats.log_dirs import replica_sizes

    sizes = replica_sizes(parse_log_dirs(tiny["kafka/log-dirs/log-dirs-20261102T000000Z.txt"]))
    storage: dict[str, int] = {}
    for (topic, _), by_broker in sizes.items():
        storage[topic] = storage.get(topic, 0) + max(by_broker.values())
    assert storage == {t: v["storage_bytes"] for t, v in tiny_truth["topics"].items()}


def test_inventory_policy_and_broker_map_parse(tiny, tiny_truth):
    inventory = parse_inventory_toml(tiny["brokers.toml"])
    assert sorted(inventory) == [b["id"] for b in tiny_truth["brokers"]]
    assert {b: c.pool for b, c in inventory.items()} == {b["id"]: b["pool"] for b in tiny_truth["brokers"]}
    policy = parse_policy(tiny["pools.toml"], source="pools.toml")
    assert policy.pool_names == tuple(p["name"] for p in tiny_truth["pools"])
    for topic, t in tiny_truth["topics"].items():
        assert policy.resolve(topic).candidates == ((t["pool"],) if t["pool"] else ())
    assert policy.pinned_pool == {b: p["name"] for p in tiny_truth["pools"] for b in p["pinned"]}
    mapping = tomllib.loads(tiny["broker-map.toml"])
    assert mapping == {"brokers": {b["instance"]: b["id"] for b in tiny_truth["brokers"]}}


def test_consumer_groups_parse(tiny, tiny_truth):
    groups = parse_consumer_groups_describe(tiny["kafka/consumer-groups.txt"])
    fanout = {t: v["fanout"] for t, v in tiny_truth["topics"].items()}
    per_topic: dict[str, int] = {}
    for g in groups:
        for topic in g.topics:
            per_topic[topic] = per_topic.get(topic, 0) + 1
        for p in g.partitions:
            assert p.lag == p.log_end_offset - p.current_offset >= 0
    assert per_topic == {t: n for t, n in fanout.items() if n}
    assert sum(not g.active for g in groups) == 1
    members = parse_consumer_group_members(tiny["kafka/consumer-members.txt"])
    assert {m.group for m in members} == {g.group for g in groups if g.active}
    assert tiny["kafka/consumer-groups.txt"].startswith("\nConsumer group '") or \
        tiny["kafka/consumer-groups.txt"].startswith("\nGROUP ")


def test_prom_text_is_jmx_exporter_exposition(tiny):
    text = tiny["metrics/prom/kafka-1:7071/2026-11-01.prom"]
    families = []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            families.append(tuple(line.split()[2:4]))
            continue
        if line.startswith("# HELP "):
            assert "Attribute exposed for management" in line
            continue
        m = _SAMPLE_LINE.match(line)
        assert m, line
        assert 'instance="kafka-1:7071",job="kafka",' in m["labels"]
    assert families == [
        ("kafka_server_brokertopicmetrics_bytesin_total", "counter"),
        ("kafka_server_brokertopicmetrics_bytesout_total", "counter"),
        ("kafka_server_brokertopicmetrics_messagesin_total", "counter"),
        ("kafka_log_log_size", "gauge"),
    ]
    # the broker-wide series (no topic label) is there for readers to ignore
    assert re.search(r'^kafka_server_brokertopicmetrics_bytesin_total\{instance="kafka-1:7071",job="kafka",\} ',
                     text, re.M)


def test_query_range_documents(tiny):
    prom_start = min(int(m) for m in re.findall(r" (\d{13})$", tiny["metrics/prom/kafka-1:7071/2026-11-01.prom"], re.M))
    for path in (p for p in tiny if p.startswith("metrics/query_range/")):
        doc = json.loads(tiny[path])
        assert doc["status"] == "success" and doc["data"]["resultType"] == "matrix"
        name = path.split("/")[-1].rsplit("-", 2)[0]
        for series in doc["data"]["result"]:
            assert series["metric"]["__name__"] == name and series["metric"]["job"] == "kafka"
            stamps = [v[0] for v in series["values"]]
            assert stamps == sorted(stamps) and all(isinstance(v[1], str) for v in series["values"])
            assert max(stamps) * 1000 < prom_start  # no overlap with the exposition text
        assert tiny[path].count("\n") == 1


def test_counters_integrate_to_the_true_rates(tiny, tiny_truth):
    """Reset-aware deltas of bytesin over the exposition-text day match the truth's last-day mean."""
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for path, text in tiny.items():
        if not path.startswith("metrics/prom/"):
            continue
        for m in re.finditer(r'^kafka_server_brokertopicmetrics_bytesin_total\{instance="([^"]+)",job="kafka",'
                             r'topic="([^"]+)",\} (\S+) (\d+)$', text, re.M):
            series.setdefault((m[1], m[2]), []).append((int(m[4]), float(m[3])))
    total: dict[str, float] = {}
    for (_, topic), points in series.items():
        points.sort()
        inc = 0.0
        for (t0, v0), (t1, v1) in zip(points, points[1:]):
            gap = t1 - t0 > 60_000
            inc += v1 if (v1 < v0 or gap) else v1 - v0
        total[topic] = total.get(topic, 0.0) + inc
    for topic, truth in tiny_truth["topics"].items():
        observed = total.get(topic, 0.0) / 86_400
        assert observed == pytest.approx(truth["bytes_in_mean_last_day"], rel=0.01), topic


def test_truth_rates_follow_the_model(tiny_truth):
    """The last day (a Sunday) averages the weekday level times the weekend factor, half a day of growth back."""
    offline = {p["topic"] for p in tiny_truth["planted"] if p["kind"] == "offline_partition"}
    for topic, t in tiny_truth["topics"].items():
        expected = t["bytes_in_rate_end"] * t["pattern"]["weekend_factor"] / (1 + t["growth_per_day"]) ** 0.5
        observed = t["bytes_in_mean_last_day"]
        if topic in offline:  # a partition stopped taking writes before the end
            assert observed < expected * 1.01
        else:
            assert observed == pytest.approx(expected, rel=0.01), topic
        assert t["bytes_in_p99_last_day"] > observed * (1 + t["pattern"]["amplitude"] / 2)


def _bytes_in_series(files: dict[str, str]) -> dict[tuple[str, str | None], dict[int, float]]:
    """``(instance, topic or None) -> {epoch s: value}`` from both the query_range JSON and the exposition text."""
    out: dict[tuple[str, str | None], dict[int, float]] = {}
    for path, text in files.items():
        if path.startswith("metrics/query_range/kafka_server_BrokerTopicMetrics_BytesIn_total"):
            for s in json.loads(text)["data"]["result"]:
                key = (s["metric"]["instance"], s["metric"].get("topic"))
                out.setdefault(key, {}).update({int(t): float(v) for t, v in s["values"]})
        elif path.startswith("metrics/prom/"):
            for m in re.finditer(r'^kafka_server_brokertopicmetrics_bytesin_total\{instance="([^"]+)",job="kafka",'
                                 r'(?:topic="([^"]+)",)?\} (\S+) (\d+)$', text, re.M):
                out.setdefault((m[1], m[2]), {})[int(m[4]) // 1000] = float(m[3])
    return out


def test_counter_resets_show_in_the_series(tiny, tiny_truth):
    """A re-created meter appears after an absence and starts small; a restart resets the broker-wide total."""
    series = _bytes_in_series(tiny)
    instance = {b["id"]: b["instance"] for b in tiny_truth["brokers"]}
    resets = tiny_truth["counter_resets"]
    assert resets, "a rolling restart moves leaders, so meters are closed and re-created"
    for r in resets:
        at = int(np.datetime64(r["at"].rstrip("Z"), "s").astype(np.int64))
        points = series[(instance[r["broker"]], r["topic"])]
        assert at in points and at - 60 not in points
        assert points[at] <= tiny_truth["topics"][r["topic"]]["bytes_in_p99_last_day"] * 60 * 3
    for restart in tiny_truth["restarts"]:
        down = int(np.datetime64(restart["down"].rstrip("Z"), "s").astype(np.int64))
        up = int(np.datetime64(restart["up"].rstrip("Z"), "s").astype(np.int64))
        total = series[(instance[restart["broker"]], None)]
        assert not [t for t in total if down < t <= up]
        assert total[up + 60] < total[down]


def test_java_double_and_prom_float():
    assert java_double(1.0004966371e10) == "1.0004966371E10"
    assert java_double(8.60786391633e11) == "8.60786391633E11"
    assert java_double(9999999.0) == "9999999.0"
    assert java_double(1e7) == "1.0E7"
    assert java_double(0.5) == "0.5"
    assert java_double(1.5e-5) == "1.5E-5"
    assert prom_float(1527015228365.0) == "1527015228365"
    assert np.isnan(float("nan"))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("brokers", 5, "--brokers: expected 6"), ("topics", 2, "--topics: expected 6"),
     ("days", 1, "--days: expected 2 to 92"), ("step_s", 7, "--step: expected a divisor of 900 seconds"),
     ("end", 1_793_577_601, "--end: expected midnight UTC")],
)
def test_bad_spec(field, value, message):
    with pytest.raises(InputError, match=message):
        SampleSpec(**{field: value})


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300))
def test_java_double_round_trips_in_java_shape(x):
    text = java_double(x)
    assert float(text.replace("E", "e")) == x
    if x != 0 and not 1e-3 <= abs(x) < 1e7:
        assert re.fullmatch(r"-?[1-9]\.\d+E-?\d+", text)
        assert not re.search(r"\d0E", text) or re.search(r"\.0E", text)  # no trailing zeros but one
    else:
        assert "E" not in text and "." in text
