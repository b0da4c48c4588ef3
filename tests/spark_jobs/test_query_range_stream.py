"""The streamed query_range reader without Spark: any JSON layout, any chunking, the same records as a whole parse."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_jobs.json_stream import BROKEN, END, SERIES, split_result

LABEL = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


def _doc(series: list[dict]) -> dict:
    return {"status": "success", "warnings": ["]}\"["], "data": {"resultType": "matrix", "result": series, "stats": {"a": [[1]]}}}


@given(
    series=st.lists(
        st.fixed_dictionaries(
            {
                "metric": st.dictionaries(st.sampled_from(["__name__", "instance", "topic", "values", "x"]), LABEL, max_size=4),
                "values": st.lists(st.tuples(st.integers(1, 2**40), st.sampled_from(["1", "2.5", "NaN", "+Inf", "1e+06"])).map(list), max_size=5),
            }
        ),
        max_size=6,
    ),
    indent=st.sampled_from([None, 1, 2]),
    cuts=st.lists(st.integers(1, 10_000), max_size=8),
)
def test_every_layout_and_chunking_yields_the_result_elements(series: list[dict], indent: int | None, cuts: list[int]) -> None:
    text = json.dumps(_doc(series), indent=indent, ensure_ascii=indent is None).encode()
    points = sorted({c % len(text) for c in cuts} - {0})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]
    out = list(split_result(iter(chunks)))
    assert [json.loads(p) for k, p in out if k == SERIES] == series
    assert out[-1][0] == END and out[-1][1]["data"]["result"] == []


def test_a_truncated_document_keeps_its_whole_series() -> None:
    text = json.dumps(_doc([{"metric": {}, "values": [[1, "2"]]}, {"metric": {}, "values": [[3, "4"]]}])).encode()
    cut = text.index(b'{"metric"', text.index(b'{"metric"') + 1) + 5
    out = list(split_result(iter([text[:cut]])))
    assert [k for k, _ in out] == [SERIES, BROKEN]
    assert out[1][1].startswith("truncated document")


def _write(tmp_path: Path, name: str, series: list[dict], *, indent: int | None = None) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}, indent=indent))
    return str(path)


def _records(path: str, **kw) -> list[dict]:
    from spark_jobs.query_range import parse_file
    from spark_jobs.staging import ReaderOptions

    rows = []
    for batch in parse_file(path, ReaderOptions("c", {"kafka-1:7071": 1}, **kw)):
        rows += batch.to_pylist()
    return rows


def test_compact_and_pretty_printed_documents_give_the_same_records(tmp_path: Path) -> None:
    rng = random.Random(3)
    series = [
        {
            "metric": {"__name__": "kafka_server_brokertopicmetrics_bytesin_total", "instance": "kafka-1:7071", "topic": f"t{i}"},
            "values": [[1_740_960_000 + 60 * k + rng.choice([0, 0.5]), str(rng.randint(0, 10**12))] for k in range(50)]
            + [[1_740_963_000, "NaN"], [1_740_963_060, "x"], [1_740_963_120, "1.7E308"], [1_740_963_180]],
        }
        for i in range(3)
    ]
    compact = _records(_write(tmp_path, "a.json", series))
    pretty = _records(_write(tmp_path, "b.json", series, indent=2))
    strip = lambda rows: [{k: v for k, v in r.items() if k != "file"} for r in rows]  # noqa: E731
    assert strip(compact) == strip(pretty)
    reasons = sorted({(r["kind"], r["reason"]) for r in compact})
    assert reasons == [
        ("counter", None), ("rejected", "bad_value"), ("rejected", "malformed_pair"), ("rejected", "nan_value"),
        ("rejected", "value_out_of_range"),
    ]
    assert sum(r["kind"] == "counter" for r in compact) == 150


def test_a_series_that_is_not_utf8_is_one_rejected_unit(tmp_path: Path) -> None:
    path = tmp_path / "kafka_server_brokertopicmetrics_bytesin_total-w1.json"
    good = b'{"metric":{"instance":"kafka-1:7071","topic":"a"},"values":[[1740960000,"1"],[1740960060,"2"]]}'
    bad = b'{"metric":{"instance":"kafka-1:7071","topic":"caf\xe9"},"values":[[1740960000,"1"]]}'
    path.write_bytes(b'{"status":"success","data":{"resultType":"matrix","result":[' + good + b"," + bad + b"]}}")
    rows = _records(str(path))
    assert sorted((r["kind"], r["reason"]) for r in rows) == [("counter", None), ("counter", None), ("rejected", "not_utf8")]
    assert "\ufffd" in next(r["raw"] for r in rows if r["reason"] == "not_utf8")


@pytest.mark.parametrize(
    ("name", "declared", "value", "window"),
    [
        ("instance_topic:kafka_server_brokertopicmetrics_bytesin:increase1m", None, 600.0, 60.0),
        ("kafka_server_brokertopicmetrics_bytesin_total", "rate:5m", 3000.0, 300.0),
        ("kafka_server_brokertopicmetrics_bytesin_total", None, 10.0, None),
    ],
)
def test_pre_aggregated_series_are_windows_by_name_or_declaration(tmp_path: Path, name: str, declared, value: float, window) -> None:
    from spark_jobs.metric_names import parse_range_values

    rate_or_increase = 600.0 if "increase" in name else 10.0
    path = _write(tmp_path, f"{name}-w1.json", [{"metric": {"instance": "kafka-1:7071", "topic": "a"}, "values": [[1_740_960_060, str(rate_or_increase)]]}])
    (row,) = _records(path, declared=parse_range_values(declared))
    assert row["kind"] == ("counter" if window is None else "increase")
    assert row["value"] == value and row["window_s"] == window


def test_rejected_pairs_of_series_in_prometheus_own_layout_are_quarantined(tmp_path: Path) -> None:
    # Prometheus writes pairs without spaces ([1,"2"]): they go through Arrow's CSV parser, whose numbers are numpy's
    series = [
        {"metric": {"__name__": "kafka_server_brokertopicmetrics_bytesin_total", "instance": i, "topic": "t"}, "values": [[1_740_960_000, v]]}
        for i, v in (("kafka-1:7071", "NaN"), ("kafka-9:7071", "5"))
    ]
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}, separators=(",", ":")))
    rows = _records(str(path))
    assert [(r["reason"], json.loads(r["raw"])["value"]) for r in rows] == [("nan_value", [1740960000.0, "NaN"]), ("unknown_broker", [1740960000.0, "5.0"])]


def test_a_series_without_instance_label_is_the_topics_total(tmp_path: Path) -> None:
    # `sum by (topic) (...)` drops the instance: the series is the topic's total over its brokers (ALL_BROKERS),
    # while a series whose instance the map does not name stays quarantined
    from spark_jobs.history_contract import ALL_BROKERS

    name = "kafka_server_brokertopicmetrics_bytesin_total"
    path = _write(tmp_path, "p.json", [
        {"metric": {"__name__": name, "topic": "t"}, "values": [[1_740_960_000, "5"]]},
        {"metric": {"__name__": name, "instance": "kafka-9:7071", "topic": "t"}, "values": [[1_740_960_000, "5"]]},
    ])
    rows = _records(path)
    assert [(r["kind"], r["reason"], r["broker_id"]) for r in rows] == [("counter", None, ALL_BROKERS), ("rejected", "unknown_broker", None)]


def test_a_pulled_topic_total_is_summed_per_minute_in_its_file(tmp_path: Path) -> None:
    # a per-topic pull's answer (no other file holds its windows): each window's bytes in the minute it starts in
    # and one count of its samples, as Spark would credit the increase records; a bad value is still quarantined
    from spark_jobs.history_contract import ALL_BROKERS

    t = 1_740_960_119.999  # the value of minute 00:00 (the step closed by its scrape before 00:01:59.999)
    series = [{"metric": {"topic": "t"}, "values": [[t, "10"], [t + 60, "NaN"], [t + 120, "2.5"]]}]
    path = _write(tmp_path, "topic:kafka_server_brokertopicmetrics_bytesin:rate60s-d.json", series)
    rows = _records(path, steps=True, own_windows=True)
    steps = [(r["ts_ms"], r["value"], r["span_ms"], r["n"]) for r in rows if r["kind"] == "steps"]
    assert steps == [(1_740_960_000_000, 600.0, 60_000, 0), (1_740_960_120_000, 150.0, 60_000, 0)]
    assert sorted((r["kind"], r["reason"], r["ts_ms"], r["n"]) for r in rows if r["kind"] != "steps") == [
        ("increase", None, None, 2), ("rejected", "nan_value", None, 1)]
    assert {r["broker_id"] for r in rows if r["kind"] != "rejected"} == {ALL_BROKERS}
    # a user's export may overlap another file's windows: its records go to Spark, which finds duplicates
    assert [r["kind"] for r in _records(path, steps=True)] == ["increase", "rejected", "increase"]


def test_a_large_compact_document_read_in_parts_gives_the_same_records(tmp_path: Path) -> None:
    # both cores read one large file: each part starts at a series, and the parts' records are the whole's
    from spark_jobs.query_range import parse_file, split_points
    from spark_jobs.staging import ReaderOptions

    rng = random.Random(5)
    series = [
        {"metric": {"__name__": "kafka_server_brokertopicmetrics_bytesin_total", "instance": "kafka-1:7071", "topic": f"t{i}"},
         "values": [[1_740_960_000 + 60 * k, str(v)] for k, v in enumerate(sorted(rng.randrange(10**9) for _ in range(40)))]}
        for i in range(30)
    ]
    series[7]["values"][5][1] = "NaN"  # a rejected pair keeps its place
    path = tmp_path / "kafka_server_brokertopicmetrics_bytesin_total-w1.json"
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}, separators=(",", ":")) + "\n")
    parts = split_points(str(path), split_bytes=5_000)
    assert len(parts) > 3 and parts[0][1] == 0 and parts[-1][2] == path.stat().st_size

    def rows(part) -> list[tuple]:
        out = []
        for batch in parse_file(str(path), ReaderOptions("c", {"kafka-1:7071": 1}, steps=True), part=part):
            out += [repr(tuple(v for k, v in r.items() if k != "segment")) for r in batch.to_pylist()]
        return out

    whole = rows(None)
    split = [r for p in parts for r in rows(p)]
    # each part lists its broker's scrape times (the rounds take them once): the same set
    assert sorted(r for r in split if "'scrape'" not in r) == sorted(r for r in whole if "'scrape'" not in r)
    assert set(split) == set(whole) and len(whole) > 30
    assert split_points(str(path)) == [None]  # small: one part
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}))
    assert split_points(str(pretty), split_bytes=5_000) == [None]  # not Prometheus' compact layout: read whole
