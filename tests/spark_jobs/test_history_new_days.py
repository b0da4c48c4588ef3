"""Days the history holds no row of are written straight from the minute merge's files (`stage_new_days`): the same
table as the Spark merge gives for the same rows, in the same Parquet types, the same bytes whatever the task split."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from spark_jobs.history_contract import ALL_BROKERS, THROUGHPUT_SCHEMA

pytestmark = pytest.mark.spark

#: An hour before midnight: the inputs span two days.
START = datetime(2025, 3, 3, 23, 0, tzinfo=timezone.utc)
MINUTES = 120
NAMES = {"bytes_in": "bytesin", "bytes_out": "bytesout", "messages_in": "messagesin"}
BROKER_MAP = {"kafka-1:7071": 1, "kafka-2:7071": 2}


def _rows(history: Path) -> list[tuple]:
    t = pq.read_table(history)
    columns = [f.name for f in THROUGHPUT_SCHEMA.fields]
    return sorted(zip(*(t[c].to_pylist() for c in columns)), key=repr)


def _data(history: Path) -> dict[str, str]:
    """Each day directory's data files as ``name: SHA-256`` (Spark's hidden files skipped)."""
    return {str(p.relative_to(history)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(history.rglob("*.parquet")) if not p.name.startswith((".", "_"))}


def _write_exports(root: Path, minutes: range) -> list[str]:
    """query_range exports of the ``minutes`` (from `START`): per-broker counters of topics ``a`` and ``b`` and the
    per-topic totals (``sum by (topic)``, no instance) of ``a`` (where per-broker rows exist) and ``z`` (where none do)."""
    paths = []
    for metric, family in NAMES.items():
        result = []
        for labels, slope in (({"instance": "kafka-1:7071", "topic": "a"}, 700), ({"instance": "kafka-2:7071", "topic": "a"}, 300),
                              ({"instance": "kafka-1:7071", "topic": "b"}, 50), ({"topic": "a"}, 1_000), ({"topic": "z"}, 90)):
            values = [[(START + timedelta(minutes=m, seconds=1)).timestamp(), str(1_000_000 + slope * m * (m % 7 + 1))] for m in minutes]
            result.append({"metric": {"__name__": f"kafka_server_brokertopicmetrics_{family}_total", **labels}, "values": values})
        path = root / f"{metric}-{minutes.start}-{minutes.stop}.json"
        path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
        paths.append(str(path))
    return paths


def _ingest(spark, files: list[str], out: Path, history: Path | None = None, cluster: str = "c") -> None:
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    inputs = IngestInputs(query_range=tuple(files), history=None if history is None else str(history))
    run(spark, inputs, out, IngestParams(cluster=cluster, broker_map=BROKER_MAP, horizon_days=30))


@pytest.mark.slow  # five ingest runs
def test_new_days_give_the_merged_table_whatever_the_history_held(spark, tmp_path: Path) -> None:
    both = _write_exports(tmp_path, range(MINUTES))
    first = _write_exports(tmp_path, range(MINUTES // 2 + 1))  # the first day's rows (its last minute needs 00:00's sample)
    _ingest(spark, both, tmp_path / "fresh")
    fresh = tmp_path / "fresh" / "history"
    rows = _rows(fresh)
    days = sorted(p.name for p in (fresh / "cluster=c").iterdir())
    assert days == ["dt=2025-03-03", "dt=2025-03-04"]
    # one ingest with a topic's total and its per-broker rows: the per-broker rows are kept, the total only for "z"
    assert {(r[4], r[3]) for r in rows} == {("a", 1), ("a", 2), ("b", 1), ("z", ALL_BROKERS)}
    # the same rows onto a history that holds both days (the Spark merge), and onto one that holds the first
    for name, earlier in (("again", both), ("partly", first)):
        _ingest(spark, earlier, tmp_path / name)
        _ingest(spark, both, tmp_path / f"{name}-then", history=tmp_path / name / "history")
        assert _rows(tmp_path / name / "history") == rows, name
    # the fast path's files in the Parquet types Spark's own writer gives a day
    spark_file = next((tmp_path / "again" / "history" / "cluster=c" / "dt=2025-03-04").glob("part-*-*.parquet"))
    fast_file = next((fresh / "cluster=c" / "dt=2025-03-04").glob("part-*.parquet"))
    assert pq.read_schema(fast_file).remove_metadata() == pq.read_schema(spark_file).remove_metadata()
    assert pq.read_schema(fast_file).metadata == pq.read_schema(spark_file).metadata
    columns = [[(c.name, c.physical_type, str(c.logical_type), c.max_definition_level) for c in pq.read_metadata(f).schema]
               for f in (fast_file, spark_file)]
    assert columns[0] == columns[1]


@pytest.mark.slow  # two ingest runs
def test_a_new_day_is_the_same_bytes_whatever_the_buckets(spark, tmp_path: Path) -> None:
    files = _write_exports(tmp_path, range(MINUTES))
    _ingest(spark, files, tmp_path / "two")
    saved = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "5")
    try:
        _ingest(spark, files, tmp_path / "five")
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", saved)
    one = _data(tmp_path / "two" / "history")
    assert len(one) == 2 and one == _data(tmp_path / "five" / "history")
    for path in (tmp_path / "two" / "history").rglob("part-*.parquet"):
        t = pq.read_table(path)
        order = list(zip(t["topic"].to_pylist(), t["broker_id"].to_pylist(), t["ts"].to_pylist()))
        assert order == sorted(order)


@pytest.mark.slow  # two ingest runs
def test_a_cluster_name_spark_escapes_reaches_the_history(spark, tmp_path: Path) -> None:
    from spark_jobs.history import read_history

    files = _write_exports(tmp_path, range(MINUTES))
    _ingest(spark, files, tmp_path / "out", cluster="eu/prod:1")
    history = tmp_path / "out" / "history"
    assert sorted(p.name for p in history.iterdir()) == ["cluster=eu%2Fprod%3A1"]
    assert {r["cluster"] for r in read_history(spark, str(history)).select("cluster").distinct().collect()} == {"eu/prod:1"}
    _ingest(spark, files, tmp_path / "again", history=history, cluster="eu/prod:1")  # the days held: the Spark merge
    assert sorted(p.name for p in (history / "cluster=eu%2Fprod%3A1").iterdir()) == ["dt=2025-03-03", "dt=2025-03-04"]


@pytest.mark.slow  # two ingest runs
def test_an_ingest_that_fails_late_leaves_the_history_as_it_was(spark, tmp_path: Path, monkeypatch) -> None:
    from spark_jobs import ingest

    _ingest(spark, _write_exports(tmp_path, range(MINUTES // 2)), tmp_path / "out")
    history = tmp_path / "out" / "history"
    before = _data(history)

    def failing(*_args, **_kwargs):
        raise RuntimeError("the profile step failed")

    monkeypatch.setattr(ingest, "_profile", failing)
    with pytest.raises(RuntimeError, match="profile step failed"):
        _ingest(spark, _write_exports(tmp_path, range(MINUTES)), tmp_path / "later", history=history)
    assert _data(history) == before
    assert sorted(p.name for p in (history / "cluster=c").iterdir()) == ["dt=2025-03-03"]


def test_without_covered_totals_keeps_a_total_only_where_no_broker_has_the_minute() -> None:
    import pyarrow as pa

    from spark_jobs.minute_merge import without_covered_totals

    ts = [1, 1, 1, 2, 2, 1]
    rows = pa.table({"cluster": ["c"] * 5 + ["d"], "topic": ["a", "a", "b", "a", "a", "a"], "ts": ts,
                     "broker_id": [ALL_BROKERS, 3, ALL_BROKERS, ALL_BROKERS, ALL_BROKERS, 4], "bytes_in": [9, 1, 2, 3, 4, 5]})
    kept = without_covered_totals(rows)
    assert sorted(zip(*(kept[c].to_pylist() for c in rows.column_names))) == [
        ("c", "a", 1, 3, 1), ("c", "a", 2, -1, 3), ("c", "a", 2, -1, 4), ("c", "b", 1, -1, 2), ("d", "a", 1, 4, 5)]


def test_a_day_file_is_the_same_bytes_however_its_rows_are_split(tmp_path: Path) -> None:
    import numpy as np
    import pyarrow as pa

    from spark_jobs.history import write_day
    from spark_jobs.history_contract import DAY_FILE, THROUGHPUT_ARROW

    rng = np.random.default_rng(3)
    keys = sorted({(str(t), int(b), int(m)) for t, b, m in zip(rng.choice(["é", "z", "a", "zz"], 3000), rng.integers(-1, 5, 3000),
                                                                  rng.integers(0, 1440, 3000))})
    topic, broker, minute = zip(*keys)
    n = len(keys)
    rows = pa.table({"cluster": ["c"] * n, "ts": pa.array(np.array(minute) * 60_000_000, pa.timestamp("us", tz="UTC")),
                     "interval_s": pa.array([60] * n, pa.int32()), "broker_id": pa.array(broker, pa.int32()), "topic": list(topic),
                     "bytes_in": rng.integers(0, 10**9, n), "bytes_out": pa.nulls(n, pa.int64()), "messages_in": rng.integers(0, 10**6, n),
                     "bytes_out_interval_s": pa.nulls(n, pa.int32()), "messages_in_interval_s": pa.nulls(n, pa.int32()),
                     "source": ["prom_range"] * n, "flags": pa.array([0] * n, pa.int32())}, schema=THROUGHPUT_ARROW).drop_columns(["cluster"])
    by_topic = [rows.filter(pa.array([t == name for t in topic])) for name in ("z", "a", "é", "zz")]  # ordered pieces, one topic each
    shuffled = rows.take(pa.array(rng.permutation(n)))
    written = {}
    for name, pieces in (("by topic", by_topic), ("shuffled", [shuffled.slice(0, n // 3), shuffled.slice(n // 3)])):
        paths = []
        for i, piece in enumerate(pieces):
            paths.append(str(tmp_path / f"{name}-{i}.parquet"))
            pq.write_table(piece, paths[-1])
        assert write_day(paths, str(tmp_path / name)) == n
        written[name] = (tmp_path / name / DAY_FILE).read_bytes()
        t = pq.read_table(tmp_path / name / DAY_FILE)
        got = list(zip(t["topic"].to_pylist(), t["broker_id"].to_pylist(), t["ts"].to_pylist()))
        assert got == sorted(got, key=lambda r: (r[0].encode(), r[1], r[2]))
    assert written["by topic"] == written["shuffled"]


def test_a_bucket_whose_rows_are_all_of_days_not_pulled_writes_nothing(tmp_path: Path) -> None:
    import pyarrow as pa

    from spark_jobs.history_contract import DELTA_FIELDS
    from spark_jobs.minute_merge import _merge_partition

    n = 3
    deltas = pa.table({"cluster": ["c"] * n, "broker_id": pa.array([1, 2, 1], pa.int32()), "topic": ["a", "a", "b"],
                       "metric": ["bytes_in"] * n, "source": ["prometheus"] * n, "reset": [False] * n, "delta": [1.0] * n,
                       "minute_ms": [0, 0, 60_000], "span_ms": [60_000] * n}, schema=DELTA_FIELDS)
    batches = deltas.append_column("bucket", pa.array([0] * n, pa.int32())).to_batches()
    written = pa.Table.from_batches(list(_merge_partition(iter(batches), files={}, directory=str(tmp_path),
                                                          only_days={"prometheus": ["1970-01-02"]})))
    assert written.num_rows == 0 and not list(tmp_path.rglob("*.parquet"))


@pytest.mark.parametrize("row_group", [1_000, 65_536, 1 << 20])
def test_a_day_is_written_a_row_group_at_a_time_with_the_bytes_of_the_whole_day_written_at_once(tmp_path: Path, row_group) -> None:
    """Pieces of 200,000 rows over 300 topics (each piece's topics in runs longer and shorter than a read batch) give,
    streamed, the bytes the whole day sorted in memory and written in one call gives."""
    import numpy as np
    import pyarrow as pa

    from spark_jobs.history import _file_schema, write_day
    from spark_jobs.history_contract import DAY_FILE, THROUGHPUT_ARROW, day_order

    rng = np.random.default_rng(11)
    n = 200_000
    topic = np.array([f"t{i:03d}" for i in range(300)])[np.sort(rng.integers(0, 300, n))]
    rows = pa.table({"ts": pa.array(np.arange(n) * 60_000_000, pa.timestamp("us", tz="UTC")),
                     "interval_s": pa.array(np.full(n, 60), pa.int32()), "broker_id": pa.array(rng.integers(-1, 9, n), pa.int32()),
                     "topic": topic, "bytes_in": rng.integers(0, 10**12, n), "bytes_out": rng.integers(0, 10**9, n),
                     "messages_in": pa.nulls(n, pa.int64()), "bytes_out_interval_s": pa.array(np.full(n, 60), pa.int32()),
                     "messages_in_interval_s": pa.nulls(n, pa.int32()), "source": np.where(rng.random(n) < .5, "a", "b"),
                     "flags": pa.array(rng.integers(0, 8, n), pa.int32())},
                    schema=pa.schema([f for f in THROUGHPUT_ARROW if f.name != "cluster"]))
    rows = rows.take(pa.array(day_order(rows)))
    bucket = np.array([int(t[1:]) % 3 for t in rows["topic"].to_pylist()])  # a topic in one piece, as the buckets do
    paths = []
    for b in range(3):
        paths.append(str(tmp_path / f"piece-{b}.parquet"))
        pq.write_table(rows.filter(pa.array(bucket == b)), paths[-1])
    assert write_day(paths, str(tmp_path / "streamed"), row_group) == n
    schema = _file_schema()
    whole = rows.select(schema.names).cast(schema).combine_chunks()
    dictionary = [c for c in schema.names if c not in ("bytes_in", "bytes_out", "messages_in")]
    pq.write_table(whole, tmp_path / "whole.parquet", row_group_size=row_group, compression="zstd",
                   use_dictionary=dictionary, use_deprecated_int96_timestamps=True)
    assert (tmp_path / "streamed" / DAY_FILE).read_bytes() == (tmp_path / "whole.parquet").read_bytes()
