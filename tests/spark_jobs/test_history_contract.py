"""The history's contract: one definition of the normalized row for Arrow and Spark, and the layout's names."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from pyspark.sql import types as T

from spark_jobs.history_contract import (
    THROUGHPUT_ARROW,
    THROUGHPUT_SCHEMA,
    day_dirs,
    partition_dir,
    partition_key,
    partition_value,
    steps_bucket,
    steps_file,
    steps_files,
)

#: The ``throughput_minute`` table as the Kafka format notes define it: name, Spark type, nullable.
_DOCUMENTED = [
    ("cluster", T.StringType(), False), ("ts", T.TimestampType(), False), ("interval_s", T.IntegerType(), False),
    ("broker_id", T.IntegerType(), False), ("topic", T.StringType(), False), ("bytes_in", T.LongType(), True),
    ("bytes_out", T.LongType(), True), ("messages_in", T.LongType(), True),
    ("bytes_out_interval_s", T.IntegerType(), True), ("messages_in_interval_s", T.IntegerType(), True),
    ("source", T.StringType(), False), ("flags", T.IntegerType(), False),
]


def test_spark_and_arrow_schemas_are_one_definition() -> None:
    assert [(f.name, f.dataType, f.nullable) for f in THROUGHPUT_SCHEMA.fields] == _DOCUMENTED
    assert [(f.name, f.nullable) for f in THROUGHPUT_ARROW] == [(n, null) for n, _, null in _DOCUMENTED]
    # whole bytes stay whole: every count is a long on both sides
    assert {f.name for f in THROUGHPUT_ARROW if f.type == pa.int64()} == {"bytes_in", "bytes_out", "messages_in"}


def test_partition_directories_round_trip_through_spark_escaping(tmp_path: Path) -> None:
    for cluster in ("prod", "eu/prod:1", "a=b%c", "tab\there", "ü#?"):
        path = tmp_path / partition_dir(cluster, "2026-11-02")
        path.mkdir(parents=True)
        assert partition_value(path.parent.name) == cluster and partition_key(path.parent.name) == "cluster"
        assert day_dirs(tmp_path, cluster) == {"2026-11-02": path}
    (tmp_path / "_steps").mkdir()
    assert partition_key("_steps") is None and day_dirs(tmp_path / "absent", "prod") == {}


def test_steps_files_are_found_and_bucketed_by_their_names(tmp_path: Path) -> None:
    names = [steps_file("prom_range-00001", b) for b in (3, 12)] + [steps_file("prom_range-00000", 3)]
    (tmp_path / "_steps").mkdir()
    for name in names + ["prom_range-00001.parquet", "x-steps-b0001.parquet.tmp"]:
        (tmp_path / "_steps" / name).touch()
    found = steps_files(str(tmp_path))
    assert [Path(p).name for p in found] == sorted(names)
    assert [steps_bucket(p) for p in found] == [3, 3, 12]
