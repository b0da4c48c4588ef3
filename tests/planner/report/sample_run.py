"""A run directory for the sample cluster without Spark: the profile is written from the generator's truth.

Stages: ``poolplan sample`` → ``snapshot`` → profile (from ``truth.json``: the realised last-day rates, storage
and growth of each topic, a ±20 % forecast band) → ``plan`` → ``emit`` → ``audit`` → ``report``. The planner
refuses a topic no pool matches (the sample plants one), so the plan uses the policy an operator would fix it to:
the first pool made the default. The audit reads the policy as generated.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from dataclasses import replace

from pools.policy import load_policy, save_policy
from pools.profile import BacktestRow, TopicProfile, save_backtest, save_profile
from pools.snapshot import load_snapshot, save_snapshot

HORIZON_DAYS = 90


def profile_from_truth(truth: dict) -> list[TopicProfile]:
    """One profile row per topic from the sample's truth (what a perfect ingest would measure)."""
    end = datetime.fromisoformat(truth["window"]["end"].replace("Z", "+00:00")) if "end" in truth.get("window", {}) \
        else datetime(2026, 11, 2, tzinfo=timezone.utc)
    rows = []
    for name, t in sorted(truth["topics"].items()):
        p99, mean, g = t["bytes_in_p99_last_day"], t["bytes_in_mean_last_day"], t["growth_per_day"]
        factor = (1 + g) ** HORIZON_DAYS
        out = t["bytes_out_mean_last_day"]
        rows.append(TopicProfile(
            topic=name, partitions=t["partitions"], bytes_in_p50=mean, bytes_in_p95=(mean + p99) / 2,
            bytes_in_p99=p99, bytes_in_max=p99 * 1.1, bytes_out_p95=out * 1.5, bytes_out_p99=out * 1.8,
            bytes_out_max=out * 2, messages_in_p99=t["messages_in_mean_last_day"] * 1.8,
            storage_bytes=t["storage_bytes"], bytes_in_p99_growth_per_day=g, storage_growth_per_day=g,
            forecast_horizon_days=HORIZON_DAYS, forecast_bytes_in_p99=p99 * factor,
            forecast_bytes_in_p99_low=p99 * factor * 0.8, forecast_bytes_in_p99_high=p99 * factor * 1.2,
            forecast_storage_bytes=t["storage_bytes"] * factor, forecast_storage_low=t["storage_bytes"] * factor * 0.8,
            forecast_storage_high=t["storage_bytes"] * factor * 1.2, days_observed=2, samples=2880, gaps=0,
            counter_resets=0, rejected_rows=0, first_ts=end - timedelta(days=2), last_ts=end - timedelta(minutes=1),
        ))
    return rows


def build_sample_run(root: Path, run_cli) -> Path:
    """Run every stage but ingest on a small sample cluster; return the run directory."""
    sample = root / "sample"
    assert run_cli("sample", "--out", sample, "--days", "2", "--step", "900", "--seed", "7")[0] == 0
    code, _, err = run_cli("snapshot", "--describe", sample / "kafka" / "topics-describe.txt", "--log-dirs",
                           sample / "kafka" / "log-dirs", "--inventory", sample / "brokers.toml", "--cluster", "sample",
                           "--out", root / "snapshot.json")
    assert code == 0, err
    save_profile(root / "profile", profile_from_truth(json.loads((sample / "truth.json").read_text())))
    policy = load_policy(sample / "pools.toml")
    save_policy(replace(policy, pools=(replace(policy.pools[0], default=True), *policy.pools[1:])),
                root / "pools-fixed.toml")
    common = ["--snapshot", root / "snapshot.json"]
    code, _, err = run_cli("plan", *common, "--policy", root / "pools-fixed.toml", "--profile", root / "profile",
                           "--consumer-groups", sample / "kafka" / "consumer-groups.txt", "--out", root / "plan")
    assert code == 0, err  # the fixed policy's pools hold the sample: no broker to add
    code, _, err = run_cli("emit", "--plan", root / "plan" / "plan.json", *common, "--out", root / "bundle")
    assert code == 0, err
    code, _, err = run_cli("audit", *common, "--policy", sample / "pools.toml", "--profile", root / "profile",
                           "--out", root / "audit")
    assert code == 1, err  # the findings the sample plants, at error
    assert run_cli("report", root, "--policy", sample / "pools.toml")[0] == 0
    return root


def build_previous_run(root: Path, run: Path, run_cli) -> Path:
    """An earlier quarter of the sample run ``run``: the same cluster, its topics 20 % slower and 10 % smaller a
    quarter ago (one topic, ``ads.replies``, half as busy), planned again by the real planner."""
    root.mkdir(parents=True)
    snapshot = load_snapshot(run / "snapshot.json")
    earlier = datetime.fromisoformat(snapshot.taken_at.replace("Z", "+00:00")) - timedelta(days=91)
    save_snapshot(replace(snapshot, taken_at=earlier.strftime("%Y-%m-%dT%H:%M:%SZ")), root / "snapshot.json")
    rows = []
    for r in profile_from_truth(json.loads((run / "sample" / "truth.json").read_text())):
        k = 0.5 if r.topic == "ads.replies" else 0.8
        rows.append(replace(r, bytes_in_p99=r.bytes_in_p99 * k, forecast_bytes_in_p99=r.forecast_bytes_in_p99 * k,
                            storage_bytes=int(r.storage_bytes * 0.9),
                            forecast_storage_bytes=r.forecast_storage_bytes * 0.9,
                            first_ts=r.first_ts - timedelta(days=91), last_ts=r.last_ts - timedelta(days=91)))
    save_profile(root / "profile", rows)
    code, _, err = run_cli("plan", "--snapshot", root / "snapshot.json", "--policy", run / "pools-fixed.toml",
                           "--profile", root / "profile", "--out", root / "plan")
    assert code == 0, err  # a quieter quarter fits the same pools
    return root


#: The days of metric history `write_backtest` invents: nine weeks, so every horizon to 30 days is tested.
BACKTEST_DAYS = 63


def write_backtest(run: Path) -> Path:
    """``profile/backtest.parquet`` as ingest would write it (`spark_jobs.growth.backtest`) on nine weeks of daily
    series ending at the profile's last day: each topic's truth rate and storage at its growth, a weekly cycle,
    noise its pool's topics share and noise of its own (deterministic)."""
    import numpy as np

    from spark_jobs.growth import backtest

    truth = json.loads((run / "sample" / "truth.json").read_text())
    end = max(r.last_ts for r in profile_from_truth(truth)).date()
    rng = np.random.default_rng(11)
    shared = {pool: rng.normal(0, 0.06, BACKTEST_DAYS) for pool in sorted({t.get("pool") or "" for t in
                                                                           truth["topics"].values()})}
    day0 = end - timedelta(days=BACKTEST_DAYS - 1)
    rows = []
    for name, t in sorted(truth["topics"].items()):
        d = np.arange(BACKTEST_DAYS)
        trend = (1 + t["growth_per_day"]) ** (d - BACKTEST_DAYS + 1)
        week = 1 + 0.12 * np.sin(2 * np.pi * d / 7 + rng.uniform(0, 7))
        common = shared[t.get("pool") or ""]
        rates = t["bytes_in_p99_last_day"] * trend * week * np.exp(common + rng.normal(0, 0.08, BACKTEST_DAYS))
        storage = t["storage_bytes"] * trend * np.exp(0.1 * common + rng.normal(0, 0.01, BACKTEST_DAYS))
        for metric, series in (("bytes_in_p99", rates), ("storage_bytes", storage)):
            for b in backtest(d.tolist(), series.tolist()):
                rows.append(BacktestRow(name, metric, day0 + timedelta(days=b.origin), b.horizon, b.actual,
                                        b.forecast, b.low, b.high))
    return save_backtest(run / "profile", rows)
