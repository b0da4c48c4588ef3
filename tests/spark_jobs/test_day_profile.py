"""The profile from per-day partials equals the Spark path's value for value, and a partial is never trusted blindly."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from spark_jobs.history_contract import ALL_BROKERS, FLAG_GAP, FLAG_RESET, THROUGHPUT_SCHEMA

pytestmark = pytest.mark.spark

DAY0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
#: 128 s: its quotients can end in exactly half a millionth (the half-up rule decides)
WINDOWS = [60, 60, 60, 30, 45, 61, 90, 120, 128, 3600]


def _random_rows(seed: int, days: int, topics: int, *, big: bool = False) -> list[tuple]:
    """Per-broker rows and topic totals on ``days`` days: odd windows per metric, nulls, big values, gap and reset flags."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(days):
        for t in range(topics):
            topic = f"topic-{t:03d}-{'é' if t % 5 == 0 else 'x'}"
            minutes = np.sort(rng.choice(1440, size=int(rng.integers(1, 40)), replace=False))
            for minute in minutes.tolist():
                ts = DAY0 + timedelta(days=d, minutes=minute, seconds=30 * int(rng.integers(0, 2)))
                brokers = [ALL_BROKERS] if rng.random() < 0.3 else sorted(rng.choice(6, size=int(rng.integers(1, 5)), replace=False).tolist())
                for b in brokers:
                    interval = int(rng.choice(WINDOWS))
                    own = [int(rng.choice(WINDOWS)) if rng.random() < 0.3 else None for _ in range(2)]
                    scale = 10 ** int(rng.integers(0, 13 if big else 10))
                    values = [None if rng.random() < 0.15 else int(rng.integers(0, scale + 1)) for _ in range(3)]
                    flags = int(rng.choice([0, 0, 0, FLAG_GAP, FLAG_RESET, FLAG_GAP | FLAG_RESET]))
                    rows.append(("c", ts, interval, b, topic, *values, *own, "prometheus", flags))
    return rows


def _history(spark, rows: list[tuple], path: Path) -> str:
    from spark_jobs.history import commit_days, stage_merged_days

    work = str(path.parent / f"{path.name}-work")
    days = stage_merged_days(spark, spark.createDataFrame(rows, THROUGHPUT_SCHEMA), str(path), work)
    commit_days(spark, work, str(path), days)
    return str(path)


def _reference(spark, history: str) -> list[dict]:
    from spark_jobs.history import read_history
    from spark_jobs.ingest import _spark_stats

    return sorted(_spark_stats(read_history(spark, history, cluster="c")), key=lambda s: s["topic"])


def _stats(spark, history: str, tmp_path: Path, staged: str | None = None, touched: tuple[str, ...] = ()):
    from spark_jobs.day_profile import topic_stats

    return topic_stats(spark, history, staged or str(tmp_path / "none"), "c", touched, tmp_path / "work")


def _same(got: list[dict], want: list[dict]) -> None:
    assert [s["topic"] for s in got] == [s["topic"] for s in want]
    for g, w in zip(got, want):
        assert set(g) == set(w)
        for key in w:
            assert g[key] == w[key], (w["topic"], key)  # exact: the same doubles, not approximately


def test_partials_give_the_spark_profile_value_for_value(spark, tmp_path: Path) -> None:
    history = _history(spark, _random_rows(1, days=3, topics=25), tmp_path / "h")
    got = _stats(spark, history, tmp_path)
    assert got is not None
    stats, pending = got
    _same(stats, _reference(spark, history))
    # the partials are computed once: installed into the days, the next profile reads them as they are
    assert len(pending) == 3
    from spark_jobs.day_profile import PARTIAL_FILE, install_partials

    install_partials(pending)
    files = sorted(Path(history).glob(f"cluster=c/dt=*/{PARTIAL_FILE}"))
    assert len(files) == 3
    stamps = [f.stat().st_mtime_ns for f in files]
    again, pending = _stats(spark, history, tmp_path / "2")
    assert pending == [] and [f.stat().st_mtime_ns for f in files] == stamps
    _same(again, _reference(spark, history))


def test_values_near_a_longs_range_fall_back_to_spark(spark, tmp_path: Path) -> None:
    rows = _random_rows(2, days=1, topics=3)
    big = 9_000_000_000_000_000_000 // 7
    rows += [("c", DAY0 + timedelta(minutes=3), 180, 1, "huge", big, big, big, None, None, "prometheus", 0)]
    history = _history(spark, rows, tmp_path / "h")
    assert _stats(spark, history, tmp_path) is None


def test_a_stale_or_damaged_partial_is_computed_again(spark, tmp_path: Path) -> None:
    from spark_jobs.day_profile import PARTIAL_FILE, install_partials

    rows = _random_rows(3, days=2, topics=8)
    history = _history(spark, rows, tmp_path / "h")
    install_partials(_stats(spark, history, tmp_path / "1")[1])
    day1, day2 = sorted(Path(history).glob("cluster=c/dt=*"))
    (day1 / PARTIAL_FILE).write_bytes(b"not parquet")  # damaged
    # stale: the day rewritten by another run (its data files changed), its old partial left behind
    other = _history(spark, _random_rows(4, days=2, topics=8), tmp_path / "other")
    old = (day2 / PARTIAL_FILE).read_bytes()
    for f in day2.iterdir():
        f.unlink()
    for f in sorted(Path(other).glob(f"cluster=c/{day2.name}/*")):
        (day2 / f.name).write_bytes(f.read_bytes())
    (day2 / PARTIAL_FILE).write_bytes(old)
    stats, pending = _stats(spark, history, tmp_path / "2")
    assert sorted(p.day_dir for p in pending) == [day1, day2]
    _same(stats, _reference(spark, history))


def test_an_increment_profiles_like_a_first_run_over_all_days(spark, tmp_path: Path) -> None:
    from spark_jobs.day_profile import install_partials
    from spark_jobs.history import _data_files, commit_days, stage_merged_days

    rows = _random_rows(5, days=4, topics=12)
    last = (DAY0 + timedelta(days=3)).date()
    history = _history(spark, [r for r in rows if r[1].date() < last], tmp_path / "h")
    install_partials(_stats(spark, history, tmp_path / "1")[1])
    before = {f: f.read_bytes() for f in _data_files(Path(history))}
    new = spark.createDataFrame([r for r in rows if r[1].date() >= last], THROUGHPUT_SCHEMA)
    staged = str(tmp_path / "staged")
    days = stage_merged_days(spark, new, history, staged)
    stats, pending = _stats(spark, history, tmp_path / "2", staged, tuple(d for _, d in days))
    assert pending == []  # the history's days had their partials; the new day's is staged with it
    commit_days(spark, staged, history, days)
    after = {f: f.read_bytes() for f in _data_files(Path(history))}
    assert {f: b for f, b in after.items() if f in before} == before  # the untouched days are unchanged
    assert all(os.path.exists(Path(history) / "cluster=c" / f"dt={d}" / "_profile.parquet") for _, d in days)
    first = _history(spark, rows, tmp_path / "first")
    _same(stats, _reference(spark, first))
    _same(stats, _stats(spark, first, tmp_path / "3")[0])


def test_an_ingest_reads_past_a_damaged_partial_and_writes_the_spark_paths_files(spark, tmp_path: Path, monkeypatch) -> None:
    from spark_jobs.day_profile import PARTIAL_FILE, _stored_fingerprint
    from spark_jobs.ingest import IngestInputs, IngestParams, run

    # every topic-day with a bytes-in minute (its daily p99 feeds the growth fit)
    rows = [r[:5] + (0 if r[5] is None else r[5],) + r[6:] for r in _random_rows(6, days=2, topics=6)]
    history = _history(spark, rows, tmp_path / "h")
    inputs, params = IngestInputs(history=history), IngestParams(cluster="c")
    run(spark, inputs, tmp_path / "first", params)
    partials = sorted(Path(history).glob(f"cluster=c/dt=*/{PARTIAL_FILE}"))
    assert len(partials) == 2  # a history of an older version gets its partials at the commit
    partials[0].write_bytes(b"damaged")
    run(spark, inputs, tmp_path / "again", params)
    assert _stored_fingerprint(partials[0]) is not None  # computed again and stored
    monkeypatch.setattr("spark_jobs.ingest.topic_stats", lambda *args: None)
    run(spark, inputs, tmp_path / "spark", params)
    for name in ("topic_profile.parquet", "topic_profile.json", "backtest.parquet", "quality.json"):
        want = (tmp_path / "spark" / name).read_bytes()
        assert (tmp_path / "first" / name).read_bytes() == want, name
        assert (tmp_path / "again" / name).read_bytes() == want, name


def _regular_rows(seed: int, day: datetime, topics: int) -> list[tuple]:
    """Whole minutes of ``day`` with 60-second windows (own windows null or 60): nulls, topic totals, flags, and values
    whose sums pass 2^53 (the exact split sums)."""
    rng = np.random.default_rng(seed)
    names = ["Z", "a", "é", "😀", "topic.x", "topic-x", *[f"t{i:02d}" for i in range(topics)]]
    rows = []
    for topic in names:
        for minute in np.sort(rng.choice(1440, size=int(rng.integers(1, 60)), replace=False)).tolist():
            brokers = [ALL_BROKERS] if rng.random() < 0.2 else sorted(rng.choice(6, size=int(rng.integers(1, 5)), replace=False).tolist())
            for b in brokers:
                scale = 2**56 if rng.random() < 0.05 else 10 ** int(rng.integers(0, 10))
                values = [None if rng.random() < 0.15 else int(rng.integers(0, scale)) for _ in range(3)]
                own = [60 if rng.random() < 0.3 else None for _ in range(2)]
                flags = int(rng.choice([0, 0, FLAG_GAP, FLAG_RESET, FLAG_GAP | FLAG_RESET]))
                rows.append(("c", day + timedelta(minutes=minute), 60, b, topic, *values, *own, "prometheus", flags))
    return rows


def _day_dir(rows: list[tuple], path: Path, files: int = 2) -> Path:
    """``rows`` as Parquet files of a day directory (schema of the history, rows in no particular order)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = [f.name for f in THROUGHPUT_SCHEMA.fields if f.name != "cluster"]
    path.mkdir(parents=True)
    for i in range(files):
        part = rows[i::files]
        table = pa.table({c: [r[j + 1] for r in part] for j, c in enumerate(columns)})
        table = table.set_column(0, "ts", table["ts"].cast(pa.timestamp("us")))
        pq.write_table(table, path / f"part-{i:05d}.parquet")
    return path


def test_a_regular_day_is_summed_densely_to_the_general_paths_figures(tmp_path: Path, monkeypatch) -> None:
    from spark_jobs import day_profile
    from spark_jobs.history import _data_files

    monkeypatch.setattr(day_profile, "_BATCH_ROWS", 97)  # topics and minutes across batches and files
    day = DAY0.replace(tzinfo=None)
    number = (DAY0.date() - datetime(1970, 1, 1).date()).days
    directory = _day_dir(_regular_rows(7, day, 20), tmp_path / "d")
    assert day_profile._regular_day(_data_files(directory), number) is not None
    dense = day_profile.day_partial(directory, number)
    monkeypatch.setattr(day_profile, "_regular_day", lambda files, day: None)
    assert dense.equals(day_profile.day_partial(directory, number))


@pytest.mark.parametrize("change", ["odd window", "own odd window", "half minute", "other day", "long's range"])
def test_a_day_that_is_not_regular_goes_the_general_way(tmp_path: Path, change: str) -> None:
    from spark_jobs import day_profile
    from spark_jobs.history import _data_files

    day = DAY0.replace(tzinfo=None)
    number = (DAY0.date() - datetime(1970, 1, 1).date()).days
    rows = _regular_rows(8, day, 3)
    r = list(rows[5])
    if change == "odd window":
        r[2] = 61
    elif change == "own odd window":
        r[8] = 30
    elif change == "half minute":
        r[1] += timedelta(seconds=30)
    elif change == "other day":
        r[1] += timedelta(days=1)
    else:
        r[5] = 2**62
    rows[5] = tuple(r)
    assert day_profile._regular_day(_data_files(_day_dir(rows, tmp_path / "d")), number) is None


def test_a_regular_history_gives_the_spark_profile_value_for_value(spark, tmp_path: Path) -> None:
    rows = [r for d in range(2) for r in _regular_rows(9 + d, (DAY0 + timedelta(days=d)).replace(tzinfo=None), 15)]
    history = _history(spark, rows, tmp_path / "h")
    got = _stats(spark, history, tmp_path)
    assert got is not None
    _same(got[0], _reference(spark, history))
