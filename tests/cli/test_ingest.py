"""`poolplan ingest` on `poolplan sample` output: exit codes, files, and the numbers against two independent checks."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.spark_jobs import oracle, synth

# the sample and its ingest are built once per module: one xdist worker runs the module
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("cli-ingest")]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from planner.cli import main

    out = tmp_path_factory.mktemp("sample") / "s"
    assert main(["sample", "--out", str(out), "--brokers", "6", "--topics", "6", "--days", "2", "--step", "60"]) == 0
    return out


@pytest.fixture(scope="module")
def ingested(spark, sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from planner.cli import main

    out = tmp_path_factory.mktemp("run") / "profile"
    out.mkdir()  # `poolplan run` hands over a directory that may already exist
    code = main(
        [
            "ingest",
            "--prom", f"{sample}/metrics/prom/*/*.prom",
            "--query-range", f"{sample}/metrics/query_range/*.json",
            "--log-dirs", f"{sample}/kafka/log-dirs/*.txt",
            "--broker-map", f"{sample}/broker-map.toml",
            "--cluster", "sample",
            "--profile-horizon-days", "30",
            "--out", str(out),
        ]
    )
    assert code == 0
    return out


@pytest.mark.slow
def test_profile_matches_a_plain_python_reading_of_the_raw_files(sample: Path, ingested: Path) -> None:
    from pools.profile import load_profile

    broker_map = {k: v for table in tomllib.loads((sample / "broker-map.toml").read_text()).values() for k, v in table.items()}
    series = oracle.samples(sample, broker_map)
    profile = load_profile(ingested)
    for metric, cols in (
        ("bytes_in", {"bytes_in_p50": 0.5, "bytes_in_p95": 0.95, "bytes_in_p99": 0.99, "bytes_in_max": 1.0}),
        ("bytes_out", {"bytes_out_p99": 0.99, "bytes_out_max": 1.0}),
        ("messages_in", {"messages_in_p99": 0.99}),
    ):
        rates = oracle.topic_minute_rates(series, metric)
        if metric == "bytes_in":
            assert sorted(rates) == sorted(profile)
        for topic in set(profile) - set(rates):  # no consumer ever fetched: no BytesOut meter
            assert all(getattr(profile[topic], col) in (None, 0.0) for col in cols), (topic, metric)
        for topic, minutes in rates.items():
            for col, q in cols.items():
                assert getattr(profile[topic], col) == pytest.approx(synth.percentile(list(minutes.values()), q), rel=1e-9), (topic, col)
            if metric == "bytes_in":
                assert profile[topic].samples == len(minutes)


@pytest.mark.slow
def test_profile_agrees_with_the_generator_truth(sample: Path, ingested: Path) -> None:
    from pools.profile import load_profile

    truth = json.loads((sample / "truth.json").read_text())
    profile = load_profile(ingested)
    assert sorted(profile) == sorted(truth["topics"])
    for topic, t in truth["topics"].items():
        row = profile[topic]
        assert row.partitions == t["partitions"]
        assert row.storage_bytes == t["storage_bytes"]
        assert row.days_observed == truth["spec"]["days"]
        assert row.bytes_in_max >= row.bytes_in_p99 >= t["bytes_in_p99_last_day"] * 0.5
    resets = {(r["broker"], r["topic"]) for r in truth["counter_resets"]}
    assert sum(row.counter_resets for row in profile.values()) >= len(resets)
    quality = json.loads((ingested / "quality.json").read_text())
    assert quality["totals"]["reconciles"] is True
    assert quality["totals"]["quarantined"] == 0
    assert (ingested / "history").is_dir() and (ingested / "quarantine").is_dir()


def test_a_glob_matching_nothing_is_exit_2(run_cli, tmp_path: Path) -> None:
    code, _, err = run_cli("ingest", "--prom", str(tmp_path / "none" / "*.prom"), "--out", str(tmp_path / "p"))
    assert code == 2
    assert "--prom" in err and "matches no file" in err


def test_a_bad_broker_map_is_exit_2(run_cli, tmp_path: Path) -> None:
    prom = tmp_path / "a.prom"
    prom.write_text("")
    bad = tmp_path / "map.toml"
    bad.write_text('[brokers]\n"kafka-1:7071" = "one"\n')
    code, _, err = run_cli("ingest", "--prom", str(prom), "--broker-map", str(bad), "--out", str(tmp_path / "p"))
    assert code == 2
    assert "brokers.kafka-1:7071: expected a broker id" in err


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"" for p in sorted(root.rglob("*"))}


def test_a_damaged_history_is_exit_2_before_spark_with_nothing_written(run_cli, tmp_path: Path) -> None:
    history = tmp_path / "history"
    history.mkdir()
    (history / "part-0.parquet").write_text("not parquet")
    out = tmp_path / "new" / "profile"
    code, _, err = run_cli("ingest", "--history", str(history), "--out", str(out))
    assert code == 2 and "part-0.parquet: not a readable Parquet file of the history" in err
    assert not (tmp_path / "new").exists()  # neither OUT nor the parent this run would have created


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux's sysfs")
@pytest.mark.parametrize("where", ["--out", "--history"])
def test_an_out_or_history_the_file_system_refuses_is_exit_2_before_spark(run_cli, tmp_path: Path, where) -> None:
    """/sys takes no new entry though its mode bits let root write: one line naming it, no traceback, and none of
    the run's work (checked before Spark, not at the history's commit minutes later)."""
    prom = tmp_path / "a.prom"
    prom.write_text("")
    out = tmp_path / "new" / "profile"
    args = {"--out": str(out), "--history": None, where: "/sys/kernel/poolplan-test"}
    code, stdout, err = run_cli("ingest", "--prom", str(prom), *[x for k, v in args.items() if v for x in (k, v)])
    assert code == 2
    assert err.strip().splitlines() == ["error: /sys/kernel/poolplan-test: cannot write: /sys/kernel refuses a new entry "
                                        "(Operation not permitted)"]
    assert not (tmp_path / "new").exists()


def test_no_usable_record_is_exit_2_and_leaves_out_as_it_was(spark, run_cli, tmp_path: Path) -> None:
    prom = tmp_path / "garbage.prom"
    prom.write_text("this is not the exposition format\n{{{\n")
    out = tmp_path / "profile"
    code, _, err = run_cli("ingest", "--prom", str(prom), "--out", str(out))
    assert code == 2 and "no usable record in the inputs" in err
    assert not out.exists()  # the run created OUT: it is gone, spark.log with it
    # a directory the user had keeps exactly what it held, an earlier run's Spark log included
    out.mkdir()
    (out / "spark.log").write_text("an earlier run's log\n")
    (out / "notes.txt").write_text("mine\n")
    before = _tree(out)
    code, _, err = run_cli("ingest", "--prom", str(prom), "--out", str(out))
    assert code == 2 and "no usable record in the inputs" in err
    assert _tree(out) == before
