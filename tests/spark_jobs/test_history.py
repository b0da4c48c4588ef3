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
