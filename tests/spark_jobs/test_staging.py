"""How the worker-path readers' tasks are laid out (`spark_jobs.staging`)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from spark_jobs.staging import map_tasks, run_tasks


def _echo(i: int, path: str, part: tuple[int, int, int] | None, *, tag: str) -> Iterator[pa.RecordBatch]:
    index, start, end = part if part else (-1, -1, -1)
    yield pa.record_batch([pa.array([i]), pa.array([path]), pa.array([index]), pa.array([start]), pa.array([end]), pa.array([tag])],
                          names=["i", "path", "part", "start", "end", "tag"])


def _rows(i: int, path: str, part: tuple[int, int, int] | None) -> int:
    return 0


def test_each_part_is_one_task_in_order_with_no_shuffle(spark) -> None:
    parts = [("big.json", (0, 0, 100)), ("big.json", (1, 100, 180)), ("small.json", None)]
    df = map_tasks(spark, parts, _echo, "i long, path string, part long, start long, `end` long, tag string", tag="x")
    # one task per part, nothing before it: a range-partitioned table of the parts cost a sampling job and a shuffle
    assert "Exchange" not in df._jdf.queryExecution().executedPlan().toString()
    assert df.rdd.getNumPartitions() == len(parts)
    rows = [tuple(r) for r in df.collect()]
    assert rows == [(0, "big.json", 0, 0, 100, "x"), (1, "big.json", 1, 100, 180, "x"), (2, "small.json", -1, -1, -1, "x")]


def test_no_parts_run_no_worker(spark) -> None:
    assert map_tasks(spark, [], _echo, "i long, path string, part long, start long, `end` long, tag string", tag="x").collect() == []
    run_tasks(spark, [], _rows)
