"""`poolplan consumers`: sizing from the example consumer-group files and a profile, and --simulate."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pools.profile import PartitionProfile, TopicProfile, save_profile

FORMATS = Path(__file__).resolve().parents[1] / "data" / "kafka-formats"
DESCRIBE = FORMATS / "kafka-consumer-groups-describe.txt"
MEMBERS = FORMATS / "kafka-consumer-groups-members-verbose.txt"
ROOT = Path(__file__).resolve().parents[2]


def _topic(name: str, partitions: int, bytes_in: float, messages: float | None) -> TopicProfile:
    ts = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return TopicProfile(
        topic=name, partitions=partitions, bytes_in_p50=bytes_in / 2, bytes_in_p95=bytes_in, bytes_in_p99=bytes_in,
        bytes_in_max=bytes_in, bytes_out_p95=None, bytes_out_p99=None, bytes_out_max=None, messages_in_p99=messages,
        storage_bytes=0, bytes_in_p99_growth_per_day=0.0, storage_growth_per_day=0.0, forecast_horizon_days=90,
        forecast_bytes_in_p99=bytes_in, forecast_bytes_in_p99_low=bytes_in, forecast_bytes_in_p99_high=bytes_in,
        forecast_storage_bytes=0.0, forecast_storage_low=0.0, forecast_storage_high=0.0, days_observed=7,
        samples=100, gaps=0, counter_resets=0, rejected_rows=0, first_ts=ts, last_ts=ts,
    )


@pytest.fixture()
def profile(tmp_path: Path) -> Path:
    topics = [_topic("orders", 3, 3_000_000.0, 3_000.0), _topic("payments.ledger", 2, 1_000_000.0, 500.0)]
    parts = [PartitionProfile("orders", p, size) for p, size in enumerate((1, 1, 4))]
    return save_profile(tmp_path / "profile", topics, parts)


def test_sizing_table(run_cli, profile: Path) -> None:
    code, out, err = run_cli(
        "consumers", "--describe", DESCRIBE, "--members", MEMBERS, "--profile", profile, "--capacity-bytes", 2_500_000,
        "--headroom", 0.8,
    )
    assert code == 0, err
    assert "billing" in out and "audit" in out and "uniform" in out
    assert "topic fan-out (groups per topic): orders=1, payments.ledger=1" in out


def test_sizing_json_and_out_file(run_cli, profile: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "sizing.json"
    args = ["consumers", "--describe", DESCRIBE, "--members", MEMBERS, "--profile", profile,
            "--config", ROOT / "conf" / "consumers.toml", "--strategy", "range", "--strategy", "uniform",
            "--format", "json", "--out", out_file]
    code, out, err = run_cli(*args)
    assert code == 0, err
    report = json.loads(out)
    assert json.loads(out_file.read_text()) == report
    billing = next(g for g in report["groups"] if g["group"] == "billing")
    # orders: 3 MB/s and 3,000 msg/s spread by size 1:1:4; billing members take 5,000 msg/s at 70 %
    assert billing["current_members"] == 2 and billing["lag"] == 50
    assert set(billing["strategies"]) == {"range", "uniform"}
    rng = billing["strategies"]["range"]
    # one member fits: 3,000 msg/s against 5,000 msg/s at 70 % headroom
    assert rng["required_members"] == 1 and billing["strategies"]["uniform"]["required_members"] == 1
    assert sorted(rng["member_messages"].values()) == [1_000.0, 2_000.0]
    assert rng["max_utilization"] == pytest.approx(0.4)
    assert rng["catch_up_seconds"] == pytest.approx(50 / 4_000)  # partition 0's lag at the spare 4,000 msg/s
    current = billing["current"]["member_partitions"]
    assert sorted(current.values()) == [1, 2] and len(current) == 2  # the live assignment from CONSUMER-ID
    assert next(g for g in report["groups"] if g["group"] == "audit")["current"] is None
    assert report["consumer_bytes_out"] == {"orders": 3_000_000.0, "payments.ledger": 1_000_000.0}
    code, _, err = run_cli(*args)
    assert code == 2 and "already exists (pass --force" in err


def test_simulate(run_cli, tmp_path: Path) -> None:
    script = tmp_path / "events.json"
    script.write_text(json.dumps({
        "topics": {"orders": 6},
        "members": [{"member_id": "a", "topics": ["orders"]}, {"member_id": "b", "topics": ["orders"]}],
        "events": [{"event": "join", "member": "c", "topics": ["orders"]}, {"event": "crash", "member": "a"}],
    }))
    code, out, err = run_cli("consumers", "--simulate", script, "--strategy", "cooperative-sticky", "--strategy", "uniform", "--format", "json")
    assert code == 0, err
    runs = json.loads(out)["simulation"]
    assert [s["event"] for s in runs["uniform"]] == ["initial", "join:c", "crash:a"]
    assert [(s["step"], s["round"]) for s in runs["cooperative-sticky"]][:3] == [(0, 1), (1, 1), (1, 2)]
    code, out, err = run_cli("consumers", "--simulate", script)
    assert code == 0 and "rebalance simulation: cooperative-sticky" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give --describe"),
        (("--describe", DESCRIBE), "--profile: sizing needs the topic profile"),
        (("--simulate", DESCRIBE, "--describe", DESCRIBE), "--simulate takes the group from its script"),
        (("--simulate", DESCRIBE), "describe.txt: invalid JSON at line 2 column 1"),
    ],
)
def test_bad_options(run_cli, args: tuple, message: str) -> None:
    code, _, err = run_cli("consumers", *args)
    assert code == 2
    assert message in err


def test_capacity_missing_names_the_group(run_cli, profile: Path) -> None:
    code, _, err = run_cli("consumers", "--describe", DESCRIBE, "--profile", profile)
    assert code == 2 and "group 'billing': member capacity: give bytes_per_s" in err


def test_bad_config_key(run_cli, profile: Path, tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text("[capacity]\nbytes = 5\n")
    code, _, err = run_cli("consumers", "--describe", DESCRIBE, "--profile", profile, "--config", conf)
    assert code == 2 and f"{conf}: capacity.bytes: unknown key" in err


def test_group_past_headroom_exits_one(run_cli, profile: Path) -> None:
    code, out, err = run_cli(
        "consumers", "--describe", DESCRIBE, "--members", MEMBERS, "--profile", profile, "--capacity-messages", 2_000,
        "--headroom", 0.5, "--format", "json",
    )
    assert code == 1
    assert "1 group(s) have a member past the headroom: billing" in err
    report = json.loads(out)
    assert [g["over_capacity"] for g in report["groups"]] == [True, False]


def test_simulate_with_profile_reports_bytes(run_cli, profile: Path, tmp_path: Path) -> None:
    script = tmp_path / "events.json"
    script.write_text(json.dumps({
        "topics": {"orders": 3},
        "members": [{"member_id": "a", "topics": ["orders"]}],
        "events": [{"event": "join", "member": "b", "topics": ["orders"]}],
    }))
    code, out, err = run_cli("consumers", "--simulate", script, "--profile", profile, "--strategy", "range", "--format", "json")
    assert code == 0, err
    steps = json.loads(out)["simulation"]["range"]
    # orders is 3 MB/s spread by partition size 1:1:4
    assert steps[0]["member_bytes"] == {"a": 3_000_000.0}
    assert steps[1]["member_bytes"] == {"a": 1_000_000.0, "b": 2_000_000.0}


def test_unknown_strategy_is_bad_input(run_cli, profile: Path) -> None:
    code, _, err = run_cli("consumers", "--describe", DESCRIBE, "--profile", profile, "--capacity-bytes", 1e6, "--strategy", "fair")
    assert code == 2 and "--strategy: unknown assignor 'fair'; expected one of range, roundrobin, sticky" in err


def test_topics_missing_from_the_profile_are_named(run_cli, tmp_path: Path, caplog) -> None:
    only_orders = save_profile(tmp_path / "p", [_topic("orders", 3, 3_000_000.0, 3_000.0)], [])
    with caplog.at_level("WARNING"):
        code, _, err = run_cli("consumers", "--describe", DESCRIBE, "--profile", only_orders, "--capacity-bytes", 5e6)
    assert code == 0, err
    assert "no profile rates for 1 topic(s), counted as idle: payments.ledger" in caplog.text
