"""`spark_jobs.telegraf`: the reader's records of the pinned random + adversarial corpus, and what any input may not do."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from tests.spark_jobs.telegraf_corpus import BROKERS, corpus, records

pytestmark = pytest.mark.spark


def _key(row: dict, directory: str) -> str:
    row = {**row, "file": row["file"].replace(directory, "{dir}") if row["file"] else None}
    if row["value"] is not None and (math.isnan(row["value"]) or math.isinf(row["value"])):
        row["value"] = repr(row["value"])
    return json.dumps(row, sort_keys=True, ensure_ascii=False)


def test_every_corpus_line_gives_the_pinned_records(spark, tmp_path: Path) -> None:
    from spark_jobs.telegraf import read_telegraf

    data, expected = records()
    path = tmp_path / "corpus.json"
    path.write_bytes(data)
    rows = [r.asDict() for r in read_telegraf(spark, [str(path)], cluster="c", broker_map=BROKERS).collect()]
    got = Counter(_key(r, rows[0]["file"].rsplit("/", 1)[0]) for r in rows)
    want = Counter(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in expected)
    assert got - want == Counter() and want - got == Counter()


def test_the_corpus_is_the_generators_and_holds_every_kind_and_reason() -> None:
    data, expected = records()
    assert data == corpus()
    reasons = {(r["kind"], r["reason"]) for r in expected}
    for reason in ("malformed_json", "no_fields", "bad_value", "nan_value", "infinite_value", "negative_value", "value_out_of_range",
                   "bad_timestamp", "unknown_broker", "bad_partition"):
        assert ("rejected", reason) in reasons
    for reason in ("other_measurement", "other_field", "broker_total"):
        assert ("ignored", reason) in reasons
    assert {("counter", None), ("size", None)} <= reasons


def test_a_timestamp_beyond_a_long_is_a_bad_timestamp_not_a_failed_read(spark, tmp_path: Path) -> None:
    from spark_jobs.telegraf import read_telegraf

    path = tmp_path / "t.json"
    line = '{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":%s}\n'
    path.write_text(line % "1e30" + line % "1740960000")
    rows = read_telegraf(spark, [str(path)], cluster="c", broker_map={}).select("kind", "reason", "ts_ms").collect()
    assert sorted(tuple(r) for r in rows) == [("counter", None, 1740960000000), ("rejected", "bad_timestamp", None)]
