"""The Parquet outputs Spark writes (the history's days, the quarantine) hold their rows in one order whatever the
input's split into tasks: the row order is part of the bytes a cluster run must share with a local run
(tests/spark_jobs/test_clusters.py checks the whole outputs on a real standalone cluster)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.spark_jobs import synth

pytestmark = pytest.mark.spark


@contextmanager
def _one_task_per_file(spark) -> Iterator[None]:
    """Every input file its own task: opening a file costs as much as a whole task's bytes (Spark packs small files
    into one task otherwise)."""
    keys = {"spark.sql.files.maxPartitionBytes": str(64 << 20), "spark.sql.files.openCostInBytes": str(64 << 20)}
    saved = {k: spark.conf.get(k, None) for k in keys}
    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)


def test_each_history_day_is_written_in_topic_broker_time_order(spark, tmp_path: Path) -> None:
    from spark_jobs.history import stage_merged_days
    from spark_jobs.history_contract import THROUGHPUT_SCHEMA

    start = datetime(2025, 3, 3, tzinfo=timezone.utc)
    keys = [(start + timedelta(days=d, minutes=m), b, t) for d in range(4) for m in range(0, 1440, 360) for b in (1, 2, 3) for t in "zam"]
    random.Random(5).shuffle(keys)
    columns = THROUGHPUT_SCHEMA.fieldNames()
    rows = [{**dict.fromkeys(columns), "cluster": "c", "ts": ts, "interval_s": 60, "broker_id": b, "topic": t, "bytes_in": 1,
             "source": "prom_text", "flags": 0} for ts, b, t in keys]
    new = spark.createDataFrame([tuple(r[c] for c in columns) for r in rows], THROUGHPUT_SCHEMA).repartition(3)
    days = stage_merged_days(spark, new, str(tmp_path / "history"), str(tmp_path / "work"))
    assert len(days) == 4
    for _, day in days:
        (data,) = (tmp_path / "work" / "cluster=c" / f"dt={day}").glob("*.parquet")
        t = pq.read_table(data).to_pydict()
        order = list(zip(t["topic"], t["broker_id"], t["ts"]))
        assert order == sorted(order), day


@pytest.mark.slow  # a whole ingest run
def test_the_quarantine_is_one_file_in_one_order_whatever_the_tasks(spark, tmp_path: Path) -> None:
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    broker_map = synth.write_prom(synth.build(minutes=90), tmp_path)
    files = sorted((tmp_path / "prom").rglob("*.prom"))
    for n, path in enumerate(files):
        path.write_text(path.read_text() + f"not a sample {n}\n" + 'kafka_server_brokertopicmetrics_bytesin_total{topic="t"} 1\n')
    inputs = IngestInputs(prom_text=tuple(str(p) for p in reversed(files)))
    with _one_task_per_file(spark):
        run(spark, inputs, tmp_path / "out", IngestParams(cluster="c", broker_map=broker_map, horizon_days=30))
    (data,) = (tmp_path / "out" / "quarantine").glob("*.parquet")
    t = pq.read_table(data)
    rows = list(zip(*(t[c].to_pylist() for c in t.column_names)))
    assert len(rows) == 2 * len(files) > 2
    assert rows == sorted(rows, key=lambda r: tuple((v is not None, v) for v in r))
