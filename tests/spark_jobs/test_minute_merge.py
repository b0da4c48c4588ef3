"""The minute merge's integer-keyed pivot against the Arrow hash aggregation it replaced, and the steps files' format.

`_arrow_pivot` is the implementation `spark_jobs.minute_merge.pivot_minutes` had before it summed by integer keys
(Arrow's string-keyed ``group_by``), kept here only as the oracle: the same increases must give the same rows to the
byte, in the order their keys first appear.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from spark_jobs.history_contract import (
    ALL_BROKERS,
    DELTA_FIELDS,
    FLAG_GAP,
    FLAG_PARTIAL,
    FLAG_RESET,
    GAP_MS,
    PARTIAL_MS,
    STEPS_DIR,
    REMOTE_METRICS,
    STEPS_SCHEMA,
    THROUGHPUT_ARROW,
    steps_file,
    steps_files,
    throughput_arrow,
)
from spark_jobs.minute_merge import _merge_partition, _pivot, _read_steps, pivot_minutes
from spark_jobs.query_range import _StepsSink

_MINUTE_MS = 60_000
_METRICS = ("bytes_in", "bytes_out", "messages_in")
_ALL = (*_METRICS, "remote_copy_bytes", "remote_fetch_bytes")  # the remote meters' columns only where one is there
_KEYS = ["cluster", "broker_id", "topic", "minute_ms"]


def _old_half_up(x: np.ndarray) -> np.ndarray:
    a = np.abs(x)
    low = np.floor(a)
    return np.copysign(low + (a - low >= 0.5), x)


def _carried(series: list[tuple], minutes: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Whole bytes row by row in plain Python: each series-day's running total rounded half up, less the rounded
    total before it (the oracle of the fractions carried from minute to minute)."""
    out = np.zeros(len(totals), np.int64)
    running: dict[tuple, tuple[float, int]] = {}
    for i in sorted(range(len(totals)), key=lambda i: minutes[i]):
        key = (series[i], minutes[i] // 86_400_000)
        before, rounded_before = running.get(key, (0.0, 0))
        now = before + totals[i]
        rounded = int(_old_half_up(np.array([now]))[0])
        out[i] = rounded - rounded_before
        running[key] = (now, rounded)
    return out


def _arrow_pivot(deltas: pa.Table) -> pa.Table:
    """The replaced `pivot_minutes`: Arrow's hash aggregation on the string keys (the oracle), with today's rules: a
    metric without a window in the row is null, for every metric (a missing meter is not 0), and a series' fractional
    bytes are carried from minute to minute within its day (`_carried`)."""
    deltas = deltas.select(DELTA_FIELDS.names).cast(DELTA_FIELDS)
    deltas = deltas.filter(pc.is_valid(deltas.column("metric")))
    metric = deltas.column("metric")
    sources = sorted(s for s in pc.unique(deltas.column("source")).to_pylist() if s is not None)
    columns = {k: deltas.column(k) for k in _KEYS}
    for m in _ALL:
        mine = pc.equal(metric, m)
        columns[f"{m}_span"] = pc.if_else(mine, deltas.column("span_ms"), None)
        columns[m] = pc.if_else(mine, deltas.column("delta"), None)
    columns["reset"] = pc.cast(deltas.column("reset"), pa.int8())
    columns["rank"] = pc.index_in(deltas.column("source"), value_set=pa.array(sources, pa.string()))
    aggregations = [(f"{m}_span", "sum") for m in _ALL] + [(m, "sum") for m in _ALL]
    aggregations += [("reset", "max"), ("rank", "min")]
    rows = pa.table(columns).group_by(_KEYS, use_threads=False).aggregate(aggregations)

    def values(name: str) -> tuple[np.ndarray, np.ndarray]:
        col = rows.column(name)
        return col.is_null().to_numpy(zero_copy_only=False), col.fill_null(0).to_numpy(zero_copy_only=False)

    spans = {m: values(f"{m}_span_sum") for m in _ALL}
    span = np.max([np.where(null, -1, s) for null, s in spans.values()], axis=0)
    keep = span >= 0
    rows, span = rows.filter(pa.array(keep)), span[keep]
    spans = {m: (null[keep], s[keep]) for m, (null, s) in spans.items()}
    reset = rows.column("reset_max").to_numpy(zero_copy_only=False).astype(np.int32)
    flags = reset * FLAG_RESET + np.where(span > GAP_MS, FLAG_GAP, 0) + np.where(span < PARTIAL_MS, FLAG_PARTIAL, 0)
    seconds = {m: (null, np.maximum(_old_half_up(s / 1000), 1).astype(np.int32)) for m, (null, s) in spans.items()}
    in_null, in_seconds = seconds["bytes_in"]
    interval = np.where(in_null, np.maximum(_old_half_up(span / 1000), 1).astype(np.int32), in_seconds)
    out = {
        "cluster": rows.column("cluster"),
        "ts": pa.array(rows.column("minute_ms").to_numpy(zero_copy_only=False) * 1000, pa.timestamp("us", tz="UTC")),
        "interval_s": pa.array(interval, pa.int32()), "broker_id": rows.column("broker_id"), "topic": rows.column("topic"),
    }
    series = list(zip(rows.column("cluster").to_pylist(), rows.column("topic").to_pylist(),
                      rows.column("broker_id").to_pylist()))
    minutes = rows.column("minute_ms").to_numpy(zero_copy_only=False)
    remote = bool(pc.any(pc.is_in(metric, pa.array(_ALL[3:]))).as_py())
    written = _ALL if remote else _METRICS
    for m in written:
        null, total = values(f"{m}_sum")
        out[m] = pa.array(_carried(series, minutes, np.where(null, 0.0, total)), pa.int64(), mask=null)
    for m in written[1:]:
        null, s = seconds[m]
        out[f"{m}_interval_s"] = pa.array(s, pa.int32(), mask=null | (s == interval))
    out["source"] = pa.array(sources, pa.string()).take(rows.column("rank_min"))
    out["flags"] = pa.array(flags, pa.int32())
    schema = throughput_arrow(remote)
    return pa.table({f.name: out[f.name] for f in schema}, schema=schema)


@st.composite
def _increases(draw) -> tuple[pa.Table, list[int]]:
    """Increases of a few series as the workers and Spark hand them over: duplicates and overlaps (several rows of a
    key, in several parts), resets, gaps, partial and long windows, topic totals beside per-broker rows, several
    sources and clusters, the remote meters (in half the draws), metrics the pivot ignores, rows without a metric; the minutes dense, or sparse enough
    to be grouped by sorting; and where to cut them into parts."""
    n = draw(st.integers(1, 120))
    sparse = draw(st.booleans())
    remote = REMOTE_METRICS if draw(st.booleans()) else ()  # a history with tiered storage, or without
    minute = st.integers(0, 400_000 if sparse else 12).map(lambda k: k * _MINUTE_MS)
    if draw(st.booleans()):  # a caller's own increases need not start on the minute
        minute = st.one_of(minute, st.integers(0, 900_000))
    half = st.integers(-4, 40_000).map(lambda k: k / 2)  # whole and half bytes: rounding half up matters
    rows = draw(st.lists(st.one_of(
        st.tuples(
            st.sampled_from(["c", "eu/prod"]), st.sampled_from([1, 2, 7, ALL_BROKERS]), st.sampled_from(["a", "b", "é", "zz"]),
            st.sampled_from([*_METRICS, *_METRICS, "log_size", *remote]), st.sampled_from(["prom_range", "prometheus", "prom"]),
            st.sampled_from([False, False, True]), st.one_of(half, st.floats(0, 1e12)), minute,
            st.one_of(st.sampled_from([60_000, 30_000, 44_999, 45_000, 90_000, 90_001, 61_500, 180_000, 500, 1_500, 2_500]), st.integers(1, 900_000)),
        ),
        st.just((None,) * len(DELTA_FIELDS)),  # a bucket's marker row (`merge_buckets`)
    ), min_size=n, max_size=n))
    table = pa.table({name: list(col) for name, col in zip(DELTA_FIELDS.names, zip(*rows))}, schema=DELTA_FIELDS)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    return table, cuts


@given(_increases(), st.booleans())
def test_the_integer_keyed_pivot_gives_the_arrow_aggregations_rows(increases, encoded: bool) -> None:
    table, cuts = increases
    bounds = [0, *cuts, table.num_rows]
    parts = [table.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]
    if encoded:  # as the steps files are read: the strings dictionary encoded
        parts = [pa.table({c: pc.dictionary_encode(p.column(c)) if p.schema.field(c).type == pa.string() else p.column(c) for c in p.column_names})
                 for p in parts]
    expected = _arrow_pivot(table)
    got = _pivot(parts)
    assert got.schema == expected.schema
    # in the order their keys first appear (Arrow's hash aggregation gave no such promise: its order is not compared)
    first: dict[tuple, int] = {}
    for i, r in enumerate(table.to_pylist()):
        if r["metric"] is not None:
            first.setdefault((r["cluster"], r["broker_id"], r["topic"], r["minute_ms"] * 1000), i)
    want = sorted(expected.to_pylist(), key=lambda r: first[(r["cluster"], r["broker_id"], r["topic"], _us(r["ts"]))])
    assert got.to_pylist() == want
    assert got.equals(pa.Table.from_pylist(want, schema=expected.schema))


@given(_increases())
def test_by_day_the_rows_come_in_a_history_days_order(increases) -> None:
    table, cuts = increases
    bounds = [0, *cuts, table.num_rows]
    got = _pivot([table.slice(a, b - a) for a, b in zip(bounds, bounds[1:])], by_day=True).to_pylist()
    assert sorted(got, key=str) == sorted(_arrow_pivot(table).to_pylist(), key=str)
    pieces = [(r["cluster"], _us(r["ts"]) // 86_400_000_000) for r in got]
    assert [p for i, p in enumerate(pieces) if i == 0 or p != pieces[i - 1]] == list(dict.fromkeys(pieces)), "each (cluster, day) together"
    order = [((r["topic"] or "").encode(), r["broker_id"], r["ts"]) for r in got]
    assert all(a < b for (p, a), (q, b) in zip(zip(pieces, order), zip(pieces[1:], order[1:])) if p == q)


def _us(ts) -> int:
    return int(ts.timestamp()) * 1_000_000 + ts.microsecond


def test_sums_run_in_input_order_as_arrow_added_them() -> None:
    # 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1 in floating point: the rows' order decides the rounding of a sum's .5
    values = [1e16, 1.0, -1e16, 0.5] * 3
    n = len(values)
    table = pa.table({"cluster": ["c"] * n, "broker_id": pa.array([1] * n, pa.int32()), "topic": ["t"] * n, "metric": ["bytes_out"] * n,
                      "source": ["s"] * n, "reset": [False] * n, "delta": values, "minute_ms": [0] * n, "span_ms": [60_000] * n}, schema=DELTA_FIELDS)
    assert pivot_minutes(table).equals(_arrow_pivot(table))
    assert pivot_minutes(table).column("bytes_out").to_pylist() == _arrow_pivot(table).column("bytes_out").to_pylist()


def test_a_sink_writes_narrow_steps_files_the_merge_reads_back(tmp_path) -> None:
    sink = _StepsSink("f.json", "eu/prod", "prom_range", buckets=4, directory=str(tmp_path), prefix="prom_range-00001")
    series = [(1, "orders", "bytes_in", [0, 60_000, 120_000]), (ALL_BROKERS, "orders", "bytes_out", [0]), (2, "é", "messages_in", [60_000, 180_000])]
    for broker, topic, metric, minutes in series:
        k = len(minutes)
        sink.add(broker, topic, metric, np.array(minutes, np.int64), np.arange(k, dtype=np.float64) + 0.5, np.full(k, 60_000, np.int64))
    sink.close()
    files = steps_files(str(tmp_path))
    assert files and all(f.startswith(str(tmp_path / STEPS_DIR) + "/") for f in files)
    assert not list(tmp_path.glob("*.parquet")), "a records directory holds no steps file: Spark reads it as records"
    assert str(tmp_path / STEPS_DIR / steps_file("prom_range-00001", 0)).rsplit("-b", 1)[0] == files[0].rsplit("-b", 1)[0]
    read = [_read_steps(f) for f in files]
    for f in files:
        assert pq.read_schema(f).remove_metadata() == STEPS_SCHEMA
    rows = pa.concat_tables([t.select(["cluster", "source", "broker_id", "topic", "metric", "minute_ms", "delta", "span_ms"]).cast(
        pa.schema([("cluster", pa.string()), ("source", pa.string()), ("broker_id", pa.int32()), ("topic", pa.string()), ("metric", pa.string()),
                   ("minute_ms", pa.int64()), ("delta", pa.float64()), ("span_ms", pa.int64())])) for t in read])
    got = sorted(tuple(r.values()) for r in rows.to_pylist())
    want = sorted(("eu/prod", "prom_range", b, t, m, minute, i + 0.5, 60_000) for b, t, m, ms in series for i, minute in enumerate(ms))
    assert got == want


def test_a_bucket_of_steps_files_and_spark_increases_merges_as_one_table(tmp_path) -> None:
    sink = _StepsSink("f.json", "c", "prom_range", buckets=1, directory=str(tmp_path), prefix="prom_range-00000")
    sink.add(1, "t", "bytes_in", np.array([0, 60_000]), np.array([10.5, 20.0]), np.array([60_000, 60_000]))
    sink.add(ALL_BROKERS, "u", "bytes_in", np.array([0]), np.array([5.0]), np.array([60_000]))
    sink.close()
    spark_rows = pa.table({"cluster": ["c", "c", None], "broker_id": pa.array([1, 1, None], pa.int32()), "topic": ["t", "t", None],
                           "metric": ["bytes_in", "bytes_out", None], "source": ["prom", "prom", None], "reset": [True, False, None],
                           "delta": [3.0, 4.0, None], "minute_ms": [120_000, 0, None], "span_ms": [200_000, 60_000, None]}, schema=DELTA_FIELDS)
    batches = spark_rows.append_column("bucket", pa.array([0, 0, 0], pa.int32())).to_batches()
    out = tmp_path / "minutes"
    list(_merge_partition(iter(batches), files={0: steps_files(str(tmp_path))}, directory=str(out), only_days={}))
    got = pq.read_table(out / "cluster=c" / "dt=1970-01-01" / "part-b0000.parquet")
    expected = _arrow_pivot(pa.concat_tables([
        pa.table({c: _read_steps(f).column(c).cast(DELTA_FIELDS.field(c).type) for c in DELTA_FIELDS.names}) for f in steps_files(str(tmp_path))
    ] + [spark_rows.sort_by([(c, "ascending") for c in DELTA_FIELDS.names])]))
    assert sorted(got.to_pylist(), key=str) == sorted(expected.drop_columns(["cluster"]).to_pylist(), key=str)


def test_a_missing_meter_is_null_in_every_metric_and_the_profile_drops_it_alike(tmp_path) -> None:
    """Broker 2 lost leadership of ``t`` at minute 1: Kafka closed its BytesIn and MessagesIn meters there, its
    BytesOut meter stays (0 bytes); a bytes-in window of 3 minutes on broker 1 covers minutes 1 and 2 of ``u``.
    Every metric without a window in a row is null, so the day profile takes bytes-in and messages-in over the
    same minutes (before, bytes-in was 0 and messages-in null in such a minute)."""
    from spark_jobs.day_profile import day_partial

    rows = [  # broker, topic, metric, minute, delta, span
        (2, "t", "bytes_in", 0, 600.0, 60_000), (2, "t", "messages_in", 0, 6.0, 60_000),
        (2, "t", "bytes_out", 0, 900.0, 60_000),
        (2, "t", "bytes_out", 1, 0.0, 60_000),
        (1, "u", "bytes_in", 0, 1800.0, 180_000), (1, "u", "messages_in", 0, 30.0, 180_000),
        (1, "u", "bytes_out", 1, 70.0, 60_000), (1, "u", "bytes_out", 2, 80.0, 60_000),
    ]
    n = len(rows)
    deltas = pa.table({"cluster": ["c"] * n, "broker_id": pa.array([r[0] for r in rows], pa.int32()),
                       "topic": [r[1] for r in rows], "metric": [r[2] for r in rows], "source": ["prom_text"] * n,
                       "reset": [False] * n,
                       "delta": [r[4] for r in rows], "minute_ms": [r[3] * _MINUTE_MS for r in rows],
                       "span_ms": [r[5] for r in rows]}, schema=DELTA_FIELDS)
    out = pivot_minutes(deltas)
    assert out.equals(_arrow_pivot(deltas))
    got = {(r["topic"], r["ts"].minute): (r["bytes_in"], r["bytes_out"], r["messages_in"]) for r in out.to_pylist()}
    assert got == {("t", 0): (600, 900, 6), ("t", 1): (None, 0, None),
                   ("u", 0): (1800, None, 30), ("u", 1): (None, 70, None), ("u", 2): (None, 80, None)}
    day = tmp_path / "cluster=c" / "dt=1970-01-01"
    day.mkdir(parents=True)
    pq.write_table(out.drop_columns(["cluster"]), day / "part-0.parquet")
    partial = {r["topic"]: r for r in day_partial(day, 0).to_pylist()}
    for topic, minutes in (("t", 1), ("u", 1)):
        taken = {m: len(partial[topic][m]) // 8 for m in ("bytes_in", "messages_in")}
        assert taken == {"bytes_in": minutes, "messages_in": minutes}, (topic, taken)


def test_an_increase_seen_in_two_minutes_sums_to_prometheus_increase() -> None:
    """A rate gauge's step of 120 s after a lost sample (214,112,605 bytes) read in each of its two minutes as rate ×
    60 s: 107,056,302.5 bytes a minute. Rounded minute by minute that made 214,112,606 (or one under, as other
    fractions fall); carried, the two minutes sum to the step's increase exactly, and the bytes stay whole."""
    increase = 214_112_605
    rate = increase / 120.0
    thirds = 1_000_000_001 / 180.0  # a 180 s step read three times: each minute 333,333,333.67, rounded up 3 times
    rows = [("t", 0, rate * 60), ("t", 1, rate * 60),
            ("u", 0, thirds * 60), ("u", 1, thirds * 60), ("u", 2, thirds * 60)]
    n = len(rows)
    deltas = pa.table({"cluster": ["c"] * n, "broker_id": pa.array([ALL_BROKERS] * n, pa.int32()),
                       "topic": [r[0] for r in rows], "metric": ["bytes_in"] * n, "source": ["prometheus"] * n,
                       "reset": [False] * n,
                       "delta": [r[2] for r in rows], "minute_ms": [r[1] * _MINUTE_MS for r in rows],
                       "span_ms": [60_000] * n}, schema=DELTA_FIELDS)
    out = pivot_minutes(deltas)
    assert out.equals(_arrow_pivot(deltas))
    got: dict[str, list[int]] = {}
    for r in out.to_pylist():
        got.setdefault(r["topic"], []).append(r["bytes_in"])
    assert sum(got["t"]) == increase and sum(got["u"]) == 1_000_000_001
    assert all(abs(b - rate * 60) < 1 for b in got["t"]) and all(abs(b - thirds * 60) < 1 for b in got["u"])
    # the next day starts its own carry: a day's rows do not depend on the day before being in the same ingest
    later = deltas.set_column(7, "minute_ms", pa.array([r[1] * _MINUTE_MS + 86_400_000 for r in rows], pa.int64()))
    both = pivot_minutes(pa.concat_tables([deltas, later]))
    assert both.column("bytes_in").to_pylist() == out.column("bytes_in").to_pylist() * 2


def test_the_remote_meters_are_pivoted_as_counters_and_absent_without_them() -> None:
    """RemoteCopyBytesPerSec and RemoteFetchBytesPerSec increases become the remote columns exactly as bytes-out's
    (summed, own window where it differs from bytes-in's, a reset flagged); increases without them give the three
    meters' schema alone, so a history without tiered storage keeps its bytes."""
    rows = [  # metric, reset, delta, minute, span
        ("bytes_in", False, 600.0, 0, 60_000), ("remote_copy_bytes", False, 1200.0, 0, 60_000),
        ("remote_fetch_bytes", False, 30.0, 0, 60_000), ("remote_fetch_bytes", False, 15.0, 0, 30_000),
        ("bytes_in", False, 60.0, 60_000, 60_000), ("remote_copy_bytes", True, 500.0, 60_000, 120_000),
        ("remote_fetch_bytes", False, 7.0, 180_000, 60_000),
    ]
    deltas = pa.table({"cluster": ["c"] * len(rows), "broker_id": pa.array([1] * len(rows), pa.int32()),
                       "topic": ["t"] * len(rows), "metric": [r[0] for r in rows], "source": ["prom"] * len(rows),
                       "reset": [r[1] for r in rows], "delta": [r[2] for r in rows],
                       "minute_ms": [r[3] for r in rows], "span_ms": [r[4] for r in rows]}, schema=DELTA_FIELDS)
    got = pivot_minutes(deltas)
    assert got.schema == throughput_arrow(True)
    picked = [(r["ts"].minute, r["interval_s"], r["bytes_in"], r["remote_copy_bytes"], r["remote_copy_bytes_interval_s"],
               r["remote_fetch_bytes"], r["remote_fetch_bytes_interval_s"], r["flags"]) for r in got.to_pylist()]
    assert picked == [
        (0, 60, 600, 1200, None, 45, 90, 0),  # fetch: two windows of one minute, 90 s together
        (1, 60, 60, 500, 120, None, None, FLAG_RESET | FLAG_GAP),  # a re-created copy meter over a 2-minute gap
        (3, 60, None, None, None, 7, None, 0),  # a minute of the fetch meter alone
    ]
    local = deltas.filter(pc.invert(pc.starts_with(deltas.column("metric"), "remote_")))
    assert pivot_minutes(local).schema == THROUGHPUT_ARROW
