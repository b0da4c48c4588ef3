"""`poolplan ingest` on hand-made inputs: bad bytes and values, damaged histories, separate runs into one history.

Each case asserts the exit code, that the message names the file or reason, that no traceback is printed
and, for bad input, that nothing was written and the user's history did not change.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

# A test that runs an ingest job is slow (a minute on a busy machine, whatever the input's size); it runs on the
# test session's SparkSession, which the stage reuses, instead of starting a JVM of its own. A refusal before Spark
# starts is fast.
pytestmark = pytest.mark.spark
spark_job = pytest.mark.usefixtures("spark")

T0 = 1_740_960_000_000  # 2025-03-03T00:00:00Z
M = 60_000
NAME = "kafka_server_brokertopicmetrics_bytesin_total"


def _line(broker: int, topic: str, value: float | str, ts: int) -> str:
    return f'{NAME}{{instance="{broker}",job="kafka",topic="{topic}",}} {value} {ts}\n'


def _scrapes(broker: int, topics: dict[str, int], minutes: range, *, skip: set[tuple[str, int]] = frozenset()) -> str:
    """``minutes`` scrapes of ``broker``: each topic's counter grows by its rate (bytes per minute)."""
    return "".join(
        _line(broker, t, 1_000_000 + rate * k, T0 + k * M) for k in minutes for t, rate in sorted(topics.items()) if (t, k) not in skip
    )


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def _quality(out: Path) -> dict:
    return json.loads((out / "quality.json").read_text())


@pytest.mark.slow
@spark_job
def test_a_line_that_is_not_utf8_is_quarantined_and_counted(run_cli, tmp_path: Path) -> None:
    good = _scrapes(1, {"a": 600}, range(5)).encode()
    prom = _write(tmp_path / "a.prom", good + _line(1, "b", 5, T0).encode().replace(b'topic="b"', b'topic="b\xe9"'))
    code, _, err = run_cli("ingest", "--prom", prom, "--out", tmp_path / "p")
    assert code == 0, err
    quality = _quality(tmp_path / "p")
    assert quality["sources"]["prom_text"]["quarantined"] == {"not_utf8": 1}
    assert quality["totals"]["reconciles"] is True


def test_a_broker_map_that_is_not_utf8_is_exit_2(run_cli, tmp_path: Path) -> None:
    prom = _write(tmp_path / "a.prom", _scrapes(1, {"a": 600}, range(3)))
    bad = _write(tmp_path / "map.toml", b'"1" = 1 # caf\xe9\n')
    code, _, err = run_cli("ingest", "--prom", prom, "--broker-map", bad, "--out", tmp_path / "p")
    assert code == 2
    assert "map.toml" in err and "not UTF-8" in err and "Traceback" not in err
    assert not (tmp_path / "p").exists()


@pytest.mark.slow
@spark_job
def test_a_single_scrape_has_no_rate_and_is_exit_2(run_cli, tmp_path: Path) -> None:
    prom = _write(tmp_path / "a.prom", _scrapes(1, {"a": 600, "b": 60}, range(1)))
    code, _, err = run_cli("ingest", "--prom", prom, "--out", tmp_path / "p")
    assert code == 2, err
    assert "two scrapes" in err and "Traceback" not in err
    assert not (tmp_path / "p" / "topic_profile.json").exists() and not (tmp_path / "p" / "history").exists()


@pytest.mark.slow
@spark_job
def test_inputs_without_a_usable_record_are_exit_2(run_cli, tmp_path: Path) -> None:
    prom = _write(tmp_path / "a.prom", "garbage\nkafka_other 1 2\n" + _line(1, "a", "NaN", T0))
    code, _, err = run_cli("ingest", "--prom", prom, "--out", tmp_path / "p")
    assert code == 2
    assert "no usable record" in err and "3 read" in err and "Traceback" not in err
    assert not (tmp_path / "p" / "quality.json").exists()


@pytest.mark.slow
@spark_job
def test_a_counter_beyond_a_java_long_is_quarantined(run_cli, tmp_path: Path) -> None:
    prom = _write(tmp_path / "a.prom", _scrapes(1, {"a": 600}, range(4)) + _line(1, "a", "1.7E308", T0 + 4 * M))
    code, _, err = run_cli("ingest", "--prom", prom, "--out", tmp_path / "p")
    assert code == 0, err
    assert _quality(tmp_path / "p")["sources"]["prom_text"]["quarantined"] == {"value_out_of_range": 1}


@pytest.mark.slow
@spark_job
def test_a_damaged_history_file_is_exit_2_and_the_history_is_unchanged(run_cli, tmp_path: Path) -> None:
    history = tmp_path / "history"
    first = _write(tmp_path / "d1.prom", _scrapes(1, {"a": 600}, range(5)))
    assert run_cli("ingest", "--prom", first, "--history", history, "--out", tmp_path / "p1")[0] == 0
    part = next(history.rglob("part-*.parquet"))  # a data file, not the _profile.parquet cache beside it
    part.write_bytes(part.read_bytes()[:40])  # cut short: no footer
    before = _digest(history)
    later = _write(tmp_path / "d2.prom", _scrapes(1, {"a": 600}, range(1440 + 2, 1440 + 6)))
    code, _, err = run_cli("ingest", "--prom", later, "--history", history, "--out", tmp_path / "p2")
    assert code == 2
    assert part.name in err and "not a readable Parquet file" in err and "Traceback" not in err
    assert _digest(history) == before
    assert not (tmp_path / "p2" / "topic_profile.json").exists()


@pytest.mark.slow
@spark_job
def test_sources_ingested_in_separate_runs_merge_into_one_history(run_cli, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    one = _write(tmp_path / "b1.prom", _scrapes(1, {"a": 600, "b": 120}, range(6)))
    two = _write(tmp_path / "b2.prom", _scrapes(2, {"a": 300}, range(6)))
    history = tmp_path / "history"
    assert run_cli("ingest", "--prom", one, "--history", history, "--out", tmp_path / "p1")[0] == 0
    assert run_cli("ingest", "--prom", two, "--history", history, "--out", tmp_path / "p2")[0] == 0
    assert run_cli("ingest", "--prom", one, "--prom", two, "--out", tmp_path / "together")[0] == 0
    # again with the first source: its rows are replaced, not doubled
    assert run_cli("ingest", "--prom", one, "--history", history, "--out", tmp_path / "p3")[0] == 0

    def rows(path: Path) -> list[tuple]:
        table = pq.read_table(path).to_pylist()
        return sorted((r["broker_id"], r["topic"], r["ts"], r["bytes_in"]) for r in table)

    assert rows(history) == rows(tmp_path / "together" / "history")
    assert len(rows(history)) == 5 * 3
    merged = json.loads((tmp_path / "p3" / "topic_profile.json").read_text())
    together = json.loads((tmp_path / "together" / "topic_profile.json").read_text())
    assert merged == together


@pytest.mark.slow
@spark_job
def test_a_lost_line_is_not_a_new_meter_and_duplicates_are_quarantined(run_cli, tmp_path: Path) -> None:
    text = _scrapes(1, {"a": 600, "b": 60}, range(8), skip={("b", 3)})
    text += _line(1, "a", 1_000_000 + 600 * 5, T0 + 5 * M)  # exported twice: ignored
    text += _line(1, "b", 7, T0 + 6 * M)  # a second value at the same time: neither is trusted
    prom = _write(tmp_path / "a.prom", text)
    code, _, err = run_cli("ingest", "--prom", prom, "--out", tmp_path / "p")
    assert code == 0, err
    profile = {r["topic"]: r for r in json.loads((tmp_path / "p" / "topic_profile.json").read_text())}
    assert profile["b"]["bytes_in_max"] == pytest.approx(1.0)  # 60 bytes a minute, never the running total
    assert profile["a"]["counter_resets"] == 0 and profile["b"]["counter_resets"] == 0
    quality = _quality(tmp_path / "p")["sources"]["prom_text"]
    assert quality["quarantined"] == {"duplicate_timestamp": 2}
    assert quality["ignored"].get("duplicate_sample") == 1
    assert quality["read"] == quality["accepted"] + quality["ignored_total"] + quality["quarantined_total"]
    assert quality["read"] == len(text.splitlines())
