"""Normalized JSON lines: every line classified, bad lines quarantined, and the profile checked in plain Python."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.spark_jobs import synth

pytestmark = pytest.mark.spark

T0 = "2025-03-03T00:{:02d}:00Z"


def _row(minute: int, broker: int, topic: str, bytes_in: int, **extra: object) -> dict[str, object]:
    row = {
        "cluster": "c",
        "ts": T0.format(minute),
        "interval_s": 60,
        "broker_id": broker,
        "topic": topic,
        "bytes_in": bytes_in,
        "bytes_out": 2 * bytes_in,
        "messages_in": bytes_in // 100,
        "source": "prom_range",
        "flags": 0,
    }
    return {**row, **extra}


BAD_LINES = {
    "{not json": ("rejected", "malformed_json"),
    json.dumps({**_row(1, 1, "t", 5), "bytes_in": "lots"}): ("rejected", "malformed_json"),
    json.dumps({k: v for k, v in _row(1, 1, "t", 5).items() if k != "topic"}): ("rejected", "missing_topic"),
    json.dumps(_row(1, 1, "t", 5, ts="2025")): ("rejected", "bad_timestamp"),
    json.dumps(_row(1, 1, "t", 5, ts="2025-03-03T00:01:30Z")): ("rejected", "bad_timestamp"),
    json.dumps(_row(1, 1, "t", 5, interval_s=0)): ("rejected", "bad_interval"),
    json.dumps(_row(1, -1, "t", 5)): ("rejected", "bad_broker_id"),
    json.dumps(_row(1, 1, "t", -5)): ("rejected", "negative_value"),
    json.dumps(_row(1, 1, "t", 5, messages_in=-1)): ("rejected", "negative_value"),
    json.dumps(_row(1, 1, "t", 5, flags=8)): ("rejected", "bad_flags"),
    json.dumps(_row(1, 1, "t", 5, cluster="other")): ("ignored", "other_cluster"),
}
#: Blank lines are not JSON Lines records: neither counted nor classified.
BLANK = "   "


def _assert_raw_is_the_line(rejected: list) -> None:
    """A malformed line is kept verbatim; a well-formed line that broke a rule is kept as its parsed row."""
    expected = sorted(k for k, v in BAD_LINES.items() if v[0] == "rejected")
    assert len(rejected) == len(expected)
    verbatim = {k for k, v in BAD_LINES.items() if v[1] == "malformed_json"}
    got = sorted(r["raw"] if r["raw"] in verbatim else json.dumps(json.loads(r["raw"]), sort_keys=True) for r in rejected)
    assert got == sorted(k if k in verbatim else json.dumps(json.loads(k), sort_keys=True) for k in expected)


def test_every_line_is_classified(spark, tmp_path: Path) -> None:
    from spark_jobs.normalized_json import read_normalized_json

    good = [json.dumps(_row(0, 1, "t", 60)), json.dumps(_row(0, 2, "t", 120, ts="2025-03-03 00:00:00", bytes_out=None))]
    path = tmp_path / "rows.json"
    path.write_text("\n".join(good + list(BAD_LINES) + [BLANK]) + "\n")
    rows = read_normalized_json(spark, [str(path)], cluster="c").collect()
    assert len(rows) == len(good) + len(BAD_LINES)
    kinds = Counter((r["kind"], r["reason"]) for r in rows)
    assert kinds == Counter({("minute", None): 2, **Counter(BAD_LINES.values())})
    _assert_raw_is_the_line([r for r in rows if r["kind"] == "rejected"])
    minutes = sorted((r["broker_id"], r["ts"].timestamp(), r["bytes_out"]) for r in rows if r["kind"] == "minute")
    assert minutes == [(1, 1740960000.0, 120), (2, 1740960000.0, None)]


def test_profile_from_json_lines_matches_plain_python(spark, tmp_path: Path) -> None:
    from pools.profile import load_profile
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    rng = random.Random(3)
    rows = []
    for minute in range(50):
        for broker in (1, 2, 3):
            for topic in ("orders", "clicks"):
                interval = 90 if (minute, broker) == (7, 2) else 60  # one odd window, counted at its own length
                rows.append(_row(minute, broker, topic, rng.randrange(10**9), interval_s=interval))
    lines = [json.dumps(r) for r in rows] + list(BAD_LINES) + [BLANK]
    rng.shuffle(lines)
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        (src / f"part-{i}.json").write_text("\n".join(lines[i::3]) + "\n")
    files = tuple(sorted(str(p) for p in src.iterdir()))
    result = run(spark, IngestInputs(normalized_json=files), tmp_path / "out", IngestParams(cluster="c"))

    quality = result.quality["sources"]["normalized_json"]
    assert quality["read"] == len(lines) - 1  # the blank line
    assert quality["accepted"] == len(rows)
    assert sum(quality["quarantined"].values()) == sum(1 for v in BAD_LINES.values() if v[0] == "rejected")
    assert quality["ignored"] == {"other_cluster": 1}
    assert result.quality["totals"]["reconciles"] is True
    quarantined = spark.read.parquet(str(tmp_path / "out" / "quarantine")).collect()
    _assert_raw_is_the_line(quarantined)
    assert {urlparse(r["file"]).path for r in quarantined} <= set(files)

    profile = load_profile(tmp_path / "out")
    for topic in ("orders", "clicks"):
        per_minute: dict[str, float] = {}
        for r in rows:
            if r["topic"] == topic:
                per_minute[r["ts"]] = per_minute.get(r["ts"], 0.0) + r["bytes_in"] / r["interval_s"]
        values = list(per_minute.values())
        for col, q in (("bytes_in_p50", 0.5), ("bytes_in_p95", 0.95), ("bytes_in_p99", 0.99), ("bytes_in_max", 1.0)):
            assert getattr(profile[topic], col) == pytest.approx(synth.percentile(values, q), rel=1e-12), (topic, col)
        assert profile[topic].samples == 50
        assert profile[topic].rejected_rows == 0  # the bad lines name topic "t"


@pytest.mark.parametrize(
    ("text", "epoch"),
    [
        ("2025-03-03T00:01:00Z", 1740960060),
        ("2025-03-03T00:01:00", 1740960060),  # no offset: UTC
        ("2025-03-03 00:01:00", 1740960060),
        ("2025-03-03T01:01:00+01:00", 1740960060),
        ("2025-03-03T00:01:00.000Z", 1740960060),
        ("2025-02-29T00:00:00Z", None),
        ("2025-03-03", None),  # a date alone is not a minute
        ("2025", None),
        ("1740960060", None),
        ("", None),
    ],
)
def test_timestamps_must_be_date_times(spark, text: str, epoch: int | None) -> None:
    from pyspark.sql import functions as F

    from spark_jobs.normalized_json import _timestamp

    row = spark.createDataFrame([(text,)], "t string").select(F.unix_seconds(_timestamp(F.col("t"))).alias("s")).first()
    assert row["s"] == epoch
