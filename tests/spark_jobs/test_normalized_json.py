"""Normalized JSON lines: every line classified, bad lines quarantined, and the profile checked in plain Python."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

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
    "   ": ("ignored", "blank"),
}


def test_every_line_is_classified(spark, tmp_path: Path) -> None:
    from spark_jobs.normalized_json import read_normalized_json

    good = [json.dumps(_row(0, 1, "t", 60)), json.dumps(_row(0, 2, "t", 120, ts="2025-03-03 00:00:00", bytes_out=None))]
    path = tmp_path / "rows.json"
    path.write_text("\n".join(good + list(BAD_LINES)) + "\n")
    rows = read_normalized_json(spark, [str(path)], cluster="c").collect()
    assert len(rows) == len(good) + len(BAD_LINES)
    kinds = Counter((r["kind"], r["reason"]) for r in rows)
    assert kinds == Counter({("minute", None): 2, **Counter(BAD_LINES.values())})
    assert {r["raw"] for r in rows if r["kind"] == "rejected"} == {k for k, v in BAD_LINES.items() if v[0] == "rejected"}
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
    lines = [json.dumps(r) for r in rows] + list(BAD_LINES)
    rng.shuffle(lines)
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        (src / f"part-{i}.json").write_text("\n".join(lines[i::3]) + "\n")
    files = tuple(sorted(str(p) for p in src.iterdir()))
    result = run(spark, IngestInputs(normalized_json=files), tmp_path / "out", IngestParams(cluster="c"))

    quality = result.quality["sources"]["normalized_json"]
    assert quality["read"] == len(lines)
    assert quality["accepted"] == len(rows)
    assert sum(quality["quarantined"].values()) == sum(1 for v in BAD_LINES.values() if v[0] == "rejected")
    assert quality["ignored"] == {"blank": 1, "other_cluster": 1}
    assert result.quality["totals"]["reconciles"] is True
    quarantined = spark.read.parquet(str(tmp_path / "out" / "quarantine")).collect()
    assert sorted(r["raw"] for r in quarantined) == sorted(k for k, v in BAD_LINES.items() if v[0] == "rejected")
    assert {r["file"].removeprefix("file:") for r in quarantined} <= set(files)

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
