"""`spark_jobs.log_dirs`: the reader's records of the pinned random + adversarial corpus, and what any file name may not do."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from tests.spark_jobs.log_dirs_corpus import corpus, records

pytestmark = pytest.mark.spark


def _key(row: dict, prefix: str) -> str:
    row = {**row, "file": row["file"].replace(prefix, "{dir}") if row["file"] else None}
    if row["value"] is not None and (math.isnan(row["value"]) or math.isinf(row["value"])):
        row["value"] = repr(row["value"])
    return json.dumps(row, sort_keys=True, ensure_ascii=False)


def test_every_corpus_file_gives_the_pinned_records(spark, tmp_path: Path) -> None:
    from spark_jobs.log_dirs import read_log_dirs

    files, expected = records()
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    rows = [r.asDict() for r in read_log_dirs(spark, sorted(str(tmp_path / n) for n in files), cluster="c").collect()]
    got = Counter(_key(r, f"file:{tmp_path}") for r in rows)
    want = Counter(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in expected)
    assert got - want == Counter() and want - got == Counter()


def test_the_corpus_is_the_generators_and_holds_every_kind_and_reason() -> None:
    files, expected = records()
    assert files == corpus()
    reasons = {(r["kind"], r["reason"]) for r in expected}
    for reason in ("not_utf8", "malformed_line", "malformed_json", "unsupported_version", "no_snapshot_time", "bad_broker",
                   "bad_partition", "bad_size"):
        assert ("rejected", reason) in reasons
    for reason in ("blank", "status_line", "empty_log_dir"):
        assert ("ignored", reason) in reasons
    assert ("size", None) in reasons


def test_an_impossible_stamp_is_no_snapshot_time_not_a_failed_read(spark, tmp_path: Path) -> None:
    from spark_jobs.log_dirs import read_log_dirs

    doc = '{"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/d","error":null,"partitions":[{"partition":"t-0","size":5,"offsetLag":0,"isFuture":false}]}]}]}\n'
    (tmp_path / "log-dirs-20250230T000000Z.txt").write_text(doc)
    (tmp_path / "log-dirs-20250301T000000Z.txt").write_text(doc)
    rows = read_log_dirs(spark, sorted(str(p) for p in tmp_path.iterdir()), cluster="c").select("kind", "reason", "ts_ms").collect()
    assert sorted(tuple(r) for r in rows) == [("rejected", "no_snapshot_time", None), ("size", None, 1740787200000)]
