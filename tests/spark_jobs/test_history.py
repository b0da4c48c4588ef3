"""The history's merge: a topic's minute is held per broker or as the topic's total (`ALL_BROKERS`), never both."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from spark_jobs.history_contract import ALL_BROKERS, THROUGHPUT_SCHEMA

T0 = datetime(2026, 11, 2, 0, 1)
T1 = datetime(2026, 11, 2, 0, 2)


def _rows(spark, rows: list[tuple]):
    """``(broker_id, topic, ts, bytes_in)`` rows of cluster ``c`` as a history table."""
    return spark.createDataFrame(
        [("c", ts, 60, b, topic, v, None, None, None, None, "test", 0) for b, topic, ts, v in rows], THROUGHPUT_SCHEMA
    )


def _merged(spark, tmp_path: Path, old: list[tuple], new: list[tuple]) -> list[tuple]:
    from spark_jobs.history import commit_days, read_history, stage_merged_days

    history, work = str(tmp_path / "history"), str(tmp_path / "work")
    if old:
        days = stage_merged_days(spark, _rows(spark, old), history, work)
        commit_days(spark, work, history, days)
    days = stage_merged_days(spark, _rows(spark, new), history, str(tmp_path / "work2"))
    commit_days(spark, str(tmp_path / "work2"), history, days)
    return sorted((r["broker_id"], r["topic"], r["ts"], r["bytes_in"]) for r in read_history(spark, history).collect())


@pytest.mark.slow
def test_a_topic_total_and_per_broker_rows_replace_each_other_per_minute(spark, tmp_path: Path) -> None:
    # a total replaces the minute's per-broker rows; other minutes and topics keep theirs
    old = [(1, "a", T0, 10), (2, "a", T0, 20), (1, "a", T1, 11), (1, "b", T0, 5)]
    assert _merged(spark, tmp_path / "1", old, [(ALL_BROKERS, "a", T0, 33)]) == [
        (ALL_BROKERS, "a", T0, 33), (1, "a", T1, 11), (1, "b", T0, 5)
    ]
    # per-broker rows replace the minute's total
    old = [(ALL_BROKERS, "a", T0, 33), (ALL_BROKERS, "a", T1, 34)]
    assert _merged(spark, tmp_path / "2", old, [(1, "a", T0, 10)]) == [(ALL_BROKERS, "a", T1, 34), (1, "a", T0, 10)]
    # one run with both shapes of a minute keeps the per-broker rows (exact counters)
    new = [(ALL_BROKERS, "a", T0, 33), (ALL_BROKERS, "a", T1, 34), (1, "a", T0, 10), (2, "a", T0, 20)]
    assert _merged(spark, tmp_path / "3", [], new) == [(ALL_BROKERS, "a", T1, 34), (1, "a", T0, 10), (2, "a", T0, 20)]


def test_the_remote_meters_columns_are_in_a_day_only_where_measured_and_survive_a_merge(spark, tmp_path: Path) -> None:
    """A day written from pieces with and without the remote columns has them (null for the rows without); a day of
    pieces without them is written as before (no remote column, `holds_remote` false); merging rows without them
    into a day with them keeps them, and every reader sees them as null (unmeasured) where absent."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spark_jobs.history import commit_days, holds_remote, read_history, stage_merged_days, write_day
    from spark_jobs.history_contract import DAY_FILE, REMOTE_COLUMNS, THROUGHPUT_ARROW, partition_dir, throughput_arrow

    def piece(topic: str, remote: bool) -> pa.Table:
        schema = pa.schema([f for f in throughput_arrow(remote) if f.name != "cluster"])
        row = {"ts": T0, "interval_s": 60, "broker_id": 1, "topic": topic, "bytes_in": 10, "source": "prom", "flags": 0}
        if remote:
            row |= {"remote_copy_bytes": 600, "remote_copy_bytes_interval_s": 120}
        return pa.Table.from_pylist([row], schema=schema)

    history = tmp_path / "history"
    for day, pieces in (("2026-11-02", [piece("a", True), piece("b", False)]), ("2026-11-03", [piece("c", False)])):
        paths = []
        for i, p in enumerate(pieces):
            paths.append(str(tmp_path / f"{day}-{i}.parquet"))
            pq.write_table(p, paths[-1])
        assert write_day(paths, str(history / partition_dir("c", day))) == len(pieces)
    plain = pq.read_schema(history / partition_dir("c", "2026-11-03") / DAY_FILE)
    assert plain.names == [f.name for f in THROUGHPUT_ARROW if f.name != "cluster"]
    assert not holds_remote(str(history / partition_dir("c", "2026-11-03")))
    assert holds_remote(str(history))
    table = pq.read_table(history / partition_dir("c", "2026-11-02") / DAY_FILE)
    assert [(r["topic"], r["remote_copy_bytes"], r["remote_copy_bytes_interval_s"], r["remote_fetch_bytes"])
            for r in table.to_pylist()] == [("a", 600, 120, None), ("b", None, None, None)]
    # a later run brings topic b's minute again, without tiered storage: the day keeps a's remote bytes
    new = _rows(spark, [(1, "b", T0, 11)])
    days = stage_merged_days(spark, new, str(history), str(tmp_path / "work"))
    commit_days(spark, str(tmp_path / "work"), str(history), days)
    rows = read_history(spark, str(history))
    assert set(REMOTE_COLUMNS) <= set(rows.columns)
    assert sorted((r["topic"], r["bytes_in"], r["remote_copy_bytes"]) for r in rows.collect()) == [
        ("a", 10, 600), ("b", 11, None), ("c", 10, None)]
