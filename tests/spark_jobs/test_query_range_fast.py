"""The query_range reader's fast paths (compact values read by Arrow's CSV parser, series already in time order,
chunks without a backslash) against its exact paths, on random and adversarial input, without Spark."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_jobs.history_contract import ALL_BROKERS
from spark_jobs.json_stream import SERIES, split_result
from spark_jobs.query_range import _compact_values, _series_steps, parse_file
from spark_jobs.metric_names import RangeValues
from spark_jobs.staging import ReaderOptions, repeated_strings

NAME = "kafka_server_brokertopicmetrics_bytesin_total"
#: Value texts Prometheus writes, and texts it never writes that must still be classified alike.
VALUES = ["0", "1", "2.5", "1e+06", "1E308", "1.7E309", "-1", "-0", "NaN", "+Inf", "-Inf", "inf", "Infinity", "nan", "0x10", "1_000",
          " 1", "1 ", "", "x", "9007199254740993", "1" * 40, "1.0e-320", ".5", "5.", "+5"]
#: Times: whole and fractional seconds, exponents, the epoch's edge, beyond year 9999.
TIMES = st.one_of(
    st.integers(1_700_000_000, 1_700_000_600).map(lambda s: s - s % 60),
    st.sampled_from([1_700_000_000.5, 1.7e9, 1.70000006e9, 0, -60, 253_402_300_800, 1e300]),
)
LABEL = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)


def _write(tmp_path: Path, name: str, series: list[dict], *, indent: int | None = None) -> str:
    path = tmp_path / name
    document = {"status": "success", "data": {"resultType": "matrix", "result": series}}
    path.write_text(json.dumps(document, indent=indent, separators=(",", ":") if indent is None else None), encoding="utf-8")
    return str(path)


def _records(path: str, **kw) -> list[dict]:
    rows = [r for batch in parse_file(path, ReaderOptions("c", {"kafka-1:7071": 1}, **kw)) for r in batch.to_pylist()]
    nan = lambda v: "NaN" if isinstance(v, float) and v != v else v  # noqa: E731 (NaN is not equal to itself)
    return [{k: nan(v) for k, v in r.items() if k not in ("file", "raw")} for r in rows]


@settings(max_examples=60, deadline=None)
@given(
    series=st.lists(
        st.fixed_dictionaries(
            {
                "metric": st.fixed_dictionaries(
                    {"__name__": st.just(NAME), "instance": st.sampled_from(["kafka-1:7071", "2", "nowhere:1"]), "topic": LABEL}
                ),
                "values": st.lists(st.tuples(TIMES, st.sampled_from(VALUES)).map(list), min_size=1, max_size=12),
            }
        ),
        min_size=1,
        max_size=5,
    ),
    steps=st.booleans(),
)
def test_compact_series_give_the_records_of_the_exact_path(tmp_path_factory, series: list[dict], steps: bool) -> None:
    """Compact text (Arrow's CSV parse) and pretty-printed text (each pair parsed on its own) of the same series give
    the same records: values with exponents, NaN, infinities, huge and bad values, duplicate and bad times, resets."""
    tmp_path = tmp_path_factory.mktemp("fast")
    path = _write(tmp_path, "a-x.json", series)
    elements = [p for k, p in split_result(iter([Path(path).read_bytes()])) if k == SERIES]
    spaced = any(" " in v for s in series for _, v in s["values"])
    assert spaced or all(_compact_values(e) for e in elements)  # the compact document takes the CSV path
    compact = _records(path, steps=steps)
    pretty = _records(_write(tmp_path, "b-x.json", series, indent=1), steps=steps)
    assert compact == pretty


def test_line_breaks_in_compact_looking_values_are_read_as_json(tmp_path: Path) -> None:
    """A line break between pairs is JSON whitespace (the series is read pair by pair, not as CSV: that crashed),
    and one inside a value is not JSON (the series is malformed; its CSV line no longer shifts the next series' pairs)."""

    def doc(*bodies: bytes) -> bytes:
        series = [b'{"metric":{"__name__":"%s","instance":"kafka-1:7071","topic":"t%d"},"values":[%s]}' % (NAME.encode(), i, body)
                  for i, body in enumerate(bodies)]
        return b'{"status":"success","data":{"resultType":"matrix","result":[' + b",".join(series) + b"]}}"

    (tmp_path / "a.json").write_bytes(doc(b'[1700000000,"2"],\n[1700000060,"4"]', b'[1700000000,"2"],\r\n[1700000060,"4"]'))
    rows = _records(str(tmp_path / "a.json"))
    assert [(r["topic"], r["ts_ms"], r["value"]) for r in rows] == [("t0", 1_700_000_000_000, 2.0), ("t0", 1_700_000_060_000, 4.0)] + [
        ("t1", 1_700_000_000_000, 2.0), ("t1", 1_700_000_060_000, 4.0)]
    (tmp_path / "b.json").write_bytes(doc(b'[1700000000,"2\n"]', b'[1700000000,"5"],[1700000060,"6"]'))
    rows = _records(str(tmp_path / "b.json"))
    assert [(r["reason"], r["topic"], r["value"]) for r in rows] == [("malformed_series", None, None), (None, "t1", 5.0), (None, "t1", 6.0)]


@pytest.mark.parametrize(
    "body",
    [b'[1,"2"],[3,"4"]', b'[1,2],[3,"4"]', b'[1, "2"]', b'[1,"2"],[3,"4"],', b'[1,"2",3]', b'["1","2"]', b'[1,"2"]\t,[3,"4"]',
     b'[1,"2"],[3,"4"]\r', b'[1e3,"-Inf"]', b'[1,"a]"]', b'[1,""]', b'[[1,"2"]]'],
)
def test_the_compact_shape_is_checked_as_before(body: bytes) -> None:
    """The numpy check of the compact shape accepts what the byte counts accepted (but line breaks)."""
    element = b'{"metric":{},"values":[' + body + b"]}"
    start = element.index(b"[") + 1
    end = element.find(b"]]", start)
    part = element[start : end + 1]
    n = part.count(b"[")
    old = end >= 0 and n > 0 and part.count(b"]") == n and part.count(b'"') == 2 * n and part.count(b',"') == n and (
        part.count(b'"]') == n and part.count(b",") == 2 * n - 1 and b" " not in part and b"\n" not in part and b"\r" not in part)
    got = _compact_values(element)
    assert (got is not None) == old
    if got is not None:
        assert got == (element[:start] + element[end + 1 :], b"," + part.translate(bytes.maketrans(b"]", b"\n"), b'["'), n)


@given(
    ts=st.lists(st.integers(0, 20).map(lambda k: 600_000 + 30_000 * k), max_size=30),
    values=st.lists(st.sampled_from([0.0, 1.0, 5.0, 7.0, 1e18, float("nan")]), max_size=30),
)
def test_a_series_in_time_order_is_converted_as_when_sorted(ts: list[int], values: list[float]) -> None:
    """Without sorting (times strictly increasing) the steps are those the sorting path finds; with a repeated
    time, conflicts and duplicates still are."""
    n = min(len(ts), len(values))
    t, v = np.array(sorted(set(ts)), np.int64)[:n], np.array(values[:n])[: len(set(ts))]
    t = t[: v.size]
    fast = _series_steps(t, v)
    # the same samples in reverse order take the sorting path (their order is not increasing)
    slow = _series_steps(t[::-1].copy(), v[::-1].copy()) if t.size > 1 else fast
    for field in ("ts", "value", "sent", "counted", "fast_ok", "times", "minutes", "deltas", "spans"):
        np.testing.assert_array_equal(getattr(fast, field), getattr(slow, field), err_msg=field)
    doubled = _series_steps(np.r_[t, t], np.r_[v, v])
    assert doubled.sent.size >= min(t.size, 2 * t.size)


def test_repeated_strings_equal_take() -> None:
    texts = ["kafka_server_brokertopicmetrics_bytesin_total", None, "ü·t", ""]
    counts = np.array([3, 2, 0, 4])
    expected = pa.array(texts, pa.string()).take(pa.array(np.repeat(np.arange(4), counts)))
    got = repeated_strings(texts, counts)
    assert got.equals(expected) and got.null_count == 2 and got.type == pa.string()


@given(labels=st.lists(st.text(alphabet='ab"\\[]{},:\u00e9 ', max_size=6), min_size=1, max_size=4), cut=st.integers(1, 400))
def test_brackets_and_quotes_in_labels_around_chunk_cuts(labels: list[str], cut: int) -> None:
    """Strings holding brackets and escaped quotes, cut anywhere: chunks with and without a backslash agree."""
    series = [{"metric": {"topic": label}, "values": [[1, "2"], [3, "]"]]} for label in labels]
    text = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}, ensure_ascii=False).encode()
    cut = cut % len(text) or 1
    out = [json.loads(p) for k, p in split_result(iter([text[:cut], text[cut:]])) if k == SERIES]
    assert out == series


@pytest.mark.parametrize(("name", "labels", "metric", "kind"), [
    ("kafka_server_brokertopicmetrics_remotecopybytes_total", {}, "remote_copy_bytes", "counter"),
    ("kafka_server_BrokerTopicMetrics_Count", {"name": "RemoteFetchBytesPerSec"}, "remote_fetch_bytes", "counter"),
    ("kafka_server_brokertopicmetrics_remotefetchbytespersec_count", {}, "remote_fetch_bytes", "counter"),
    ("kafka_server_BrokerTopicMetrics_OneMinuteRate", {"name": "RemoteCopyBytesPerSec"}, "remote_copy_bytes",
     "increase"),  # a rate gauge: the rate of each step
    ("instance_topic:kafka_server_brokertopicmetrics_remotecopybytes:increase60s", {}, "remote_copy_bytes", "increase"),
    ("kafka_server_brokertopicmetrics_remotelogsizebytes", {}, "remote_log_size", "size"),
])
def test_the_remote_meters_are_read_in_the_spellings_the_pull_writes(tmp_path: Path, name: str, labels: dict[str, str],
                                                                     metric: str | None, kind: str) -> None:
    """A query_range document of a tiered-storage meter (as exported, or as the pull's spool names it): counter or
    pre-aggregated records of ``remote_copy_bytes`` / ``remote_fetch_bytes``; the size gauge gives size records."""
    series = {"metric": {"__name__": name, "instance": "7", "topic": "orders", **labels},
              "values": [[1_700_000_000, "100"], [1_700_000_060, "250"]]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [series]}}))
    rows = [r for b in parse_file(str(path), ReaderOptions("c")) for r in pa.Table.from_batches([b]).to_pylist()]
    assert {(r["kind"], r["metric"]) for r in rows} == {(kind, metric)}


#: Kafka's ``kafka.server:type=BrokerTopicMetrics,name=RemoteLogSizeBytes,topic=<t>`` gauge in every spelling
#: `MetricNames.remote` knows: jmx_exporter's kafka-2_0_0 ``Value`` rule, lower-cased or not, with the attribute
#: or without, its default export (the gauge in a ``name`` label), a ``kafka_topic_*{metric=}`` rule.
REMOTE_SIZE_SPELLINGS = [
    ("kafka_server_brokertopicmetrics_remotelogsizebytes", {}),
    ("kafka_server_BrokerTopicMetrics_RemoteLogSizeBytes", {}),
    ("kafka_server_brokertopicmetrics_remotelogsizebytes_value", {}),
    ("kafka_server_BrokerTopicMetrics_Value", {"name": "RemoteLogSizeBytes"}),
    ("kafka_topic_Value", {"metric": "RemoteLogSizeBytes"}),
    ("kafka_topic_RemoteLogSizeBytes", {}),
]


@pytest.mark.parametrize(("name", "labels"), REMOTE_SIZE_SPELLINGS)
@pytest.mark.parametrize("steps", [False, True])
def test_remote_log_size_bytes_gives_size_records_without_a_partition(tmp_path: Path, name: str,
                                                                      labels: dict[str, str], steps: bool) -> None:
    """A RemoteLogSizeBytes series gives one size record of ``remote_log_size`` per sample, as prom text does: its
    value as read (a gauge: never a difference, never a rate), its broker and topic, no partition; a series without
    a topic is the broker's total (ignored), one from an unmapped instance is rejected, one without an instance label
    is the topic's total over its brokers, and bad values are rejected as for any size. ``--range-values`` (pre-aggregated exports) never applies to a gauge."""
    def series(metric: dict[str, str], values: list) -> dict:
        return {"metric": {"__name__": name, **labels, **metric}, "values": values}

    path = _write(tmp_path, "export.json", [
        series({"instance": "kafka-1:7071", "topic": "orders"}, [[1_700_000_000, "7.5e+11"], [1_700_000_060, "7e+11"]]),
        series({"instance": "2", "topic": "logs"}, [[1_700_000_000, "5"], [1_700_000_060, "NaN"], [1_700_000_120, "-1"]]),
        series({"instance": "kafka-1:7071"}, [[1_700_000_000, "9"]]),
        series({"instance": "nowhere:1", "topic": "orders"}, [[1_700_000_000, "3"]]),
        series({"topic": "sums"}, [[1_700_000_000, "12"]]),  # ``sum by (topic)``: the topic's total
    ])
    for declared in (None, RangeValues("increase", 60)):
        rows = _records(path, steps=steps, declared=declared)
        got = [(r["kind"], r["reason"], r["metric"], r["broker_id"], r["topic"], r["partition"], r["ts_ms"], r["value"])
               for r in rows]
        assert got == [
            ("size", None, "remote_log_size", 1, "orders", None, 1_700_000_000_000, 7.5e11),
            ("size", None, "remote_log_size", 1, "orders", None, 1_700_000_060_000, 7e11),
            ("size", None, "remote_log_size", 2, "logs", None, 1_700_000_000_000, 5.0),
            ("rejected", "nan_value", None, 2, "logs", None, None, None),
            ("rejected", "negative_value", None, 2, "logs", None, None, None),
            ("ignored", "broker_total", None, 1, None, None, None, None),
            ("rejected", "unknown_broker", None, None, "orders", None, None, None),
            ("size", None, "remote_log_size", ALL_BROKERS, "sums", None, 1_700_000_000_000, 12.0),
        ]
