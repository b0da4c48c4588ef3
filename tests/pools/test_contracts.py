"""Snapshot, policy, profile and plan files round-trip exactly and reject bad input by name."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pools.errors import InputError
from pools.plan_file import PartitionMove, Plan, SolverReport, load_plan, plan_to_json, save_plan
from pools.policy import dump_policy, load_policy, parse_policy
from pools.pool_rules import PoolRules
from pools.profile import (
    PARTITION_COLUMNS,
    REMOTE_COLUMNS,
    TOPIC_COLUMNS,
    PartitionProfile,
    TopicProfile,
    load_partition_profile,
    load_profile,
    save_profile,
)
from pools.snapshot import load_snapshot, save_snapshot, snapshot_from_dict, snapshot_to_json

SNAPSHOT = {
    "version": 1,
    "cluster": "c1",
    "taken_at": "2026-11-01T00:00:00Z",
    "brokers": [
        {"id": 2, "rack": "r2", "pool": None, "capacity": {"nw_in": 1e8, "nw_out": 1e8, "disk": 1e12, "replicas": 4000}},
        {"id": 1, "rack": "r1", "pool": "a", "capacity": {"nw_in": 1e8, "nw_out": 1e8, "disk": 1e12, "replicas": 4000}},
    ],
    "topics": [{"topic": "t", "topic_id": "x", "configs": {"retention.ms": "-1"}, "marked_for_deletion": False}],
    "partitions": [
        {"topic": "t", "partition": 1, "replicas": [2, 1], "leader": None, "isr": [], "elr": [2]},
        {"topic": "t", "partition": 0, "replicas": [1, 2], "leader": 1, "isr": [1, 2], "sizes": [10, None],
         "log_dirs": ["/d", None], "adding_replicas": [2]},
    ],
    "log_dir_errors": [{"broker": 2, "log_dir": "/d2", "error": "KafkaStorageException"}],
}


def test_snapshot_round_trips_byte_for_byte(tmp_path: Path) -> None:
    snap = snapshot_from_dict(SNAPSHOT)
    assert [b.id for b in snap.brokers] == [1, 2]
    assert snap.partitions[0].size_bytes == 10 and snap.partitions[0].reassigning
    assert snap.topic_by_name["t"].retention_ms is None
    save_snapshot(snap, tmp_path / "s.json")
    again = load_snapshot(tmp_path / "s.json")
    assert again == snap
    assert snapshot_to_json(again) == (tmp_path / "s.json").read_text()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["brokers"][0].update(id="x"), r"brokers\[0\]\.id: expected an integer"),
        (lambda d: d["brokers"][1]["capacity"].pop("disk"), r"brokers\[1\]\.capacity\.disk"),
        (lambda d: d["partitions"][1].update(sizes=[1]), r"partitions\[1\]\.sizes: expected 2 entries"),
        (lambda d: d["partitions"][0].update(replicas="1,2"), r"partitions\[0\]\.replicas: expected a JSON array"),
        (lambda d: d["partitions"][1].update(sizes=True), r"partitions\[1\]\.sizes: expected a JSON array"),
        (lambda d: d["partitions"][1].update(sizes=None), r"partitions\[1\]\.sizes: expected a JSON array"),
        (lambda d: d["partitions"][1].update(log_dirs=-1), r"partitions\[1\]\.log_dirs: expected a JSON array"),
        (lambda d: d["partitions"][1].update(log_dirs="/d1"), r"partitions\[1\]\.log_dirs: expected 2 entries|expected a JSON array"),
        (lambda d: d.update(version=2), r"version: expected 1"),
        (lambda d: d["partitions"].append(dict(d["partitions"][0])), r"t-1 is listed twice"),
    ],
)
def test_snapshot_rejects_bad_fields(mutate, message: str) -> None:
    doc = json.loads(json.dumps(SNAPSHOT))
    mutate(doc)
    with pytest.raises(InputError, match=message):
        snapshot_from_dict(doc, source="s.json")


def test_snapshot_invalid_json_names_line(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{\n "cluster": \n}')
    with pytest.raises(InputError, match=r"bad\.json: invalid JSON at line 3 column 1"):
        load_snapshot(tmp_path / "bad.json")


POLICY = """
[defaults]
headroom = {nw_in = 0.8, nw_out = 0.8, disk = 0.7, replicas = 0.9}
[[tenant]]
name = "payments"
topics = ['payments\\..*']
must_not_share_with = ["ads"]
[[tenant]]
name = "ads"
topics = ['ads\\..*']
[[pool]]
name = "payments"
tenants = ["payments"]
brokers = [1, 2, 3]
headroom = 0.6
[[pool]]
name = "shared-a"
tenants = ["ads"]
default = true
[[pool]]
name = "shared-b"
tenants = ["ads"]
topics = ['legacy-.*']
default = true
"""


def test_policy_resolves_topics_and_round_trips(tmp_path: Path) -> None:
    policy = parse_policy(POLICY, source="pools.toml")
    assert policy.resolve("payments.ledger").candidates == ("payments",)
    assert policy.resolve("ads.clicks").candidates == ("shared-a", "shared-b")
    assert policy.resolve("ads.clicks").group == policy.resolve("ads.views").group == "tenant:ads"
    assert policy.resolve("legacy-x").candidates == ("shared-b",)
    assert policy.resolve("misc").reason == "default"
    rules = PoolRules.from_policy(policy)
    assert rules.pools["payments"].headroom_of("disk") == 0.6 and rules.pools["shared-a"].headroom_of("disk") == 0.7
    assert policy.conflicting_tenants == {frozenset({"payments", "ads"})}
    (tmp_path / "p.toml").write_text(dump_policy(policy))
    again = load_policy(tmp_path / "p.toml")
    assert dump_policy(again) == dump_policy(policy)
    assert again.pools == policy.pools and again.tenants == policy.tenants


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[pool]]\nname = 'a'\nheadroom = 1.5", r"p\.toml: pool\[0\]\.headroom: expected a fraction"),
        ("[[pool]]\nname = 'a'\ntopics = ['(']", r"pool\[0\]\.topics: invalid regular expression"),
        ("[[pool]]\nname = 'a'\nbrokers = ['x']", r"pool\[0\]\.brokers\[0\]"),
        ("[[pool]]\nname = 'a'\nmystery = 1", r"pool\[0\]\.mystery"),
        ("[[pool]]\nname = 'a'\n[[pool]]\nname = 'a'", r"pool\[1\]\.name: pool 'a' is defined twice"),
        ("[[pool]]\nname = 'a'\nbrokers = [1]\n[[pool]]\nname = 'b'\nbrokers = [1]", r"broker 1 is pinned by pools 'a' and 'b'"),
        ("[[pool]]\nname = 'a'\ntenants = ['nobody']", r"pool\[0\]\.tenants: unknown tenant 'nobody'"),
        ("[defaults]\nheadroom = {disk = 0.5}\n[[pool]]\nname = 'a'", r"defaults\.headroom: missing dimension"),
        ("pool = [", r"p\.toml: invalid TOML"),
        ("[defaults]\n", r"p\.toml: pool"),
    ],
)
def test_policy_errors_name_file_and_key(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_policy(text, source="p.toml")


_NEW_BROKER = "[new_broker]\nnw_in = 1e8\nnw_out = 1e8\ndisk = 4e12\nreplicas = 4000\n"


@pytest.mark.parametrize(
    ("extra", "price", "currency", "period"),
    [("", None, "USD", None), ("price = 1200\n", 1200.0, "USD", None),
     ("price = 950.5\ncurrency = 'EUR'\nperiod = 'month'\n", 950.5, "EUR", "month")],
)
def test_new_broker_price_is_optional_and_round_trips_byte_for_byte(extra, price, currency, period) -> None:
    policy = parse_policy(_NEW_BROKER + extra + "[[pool]]\nname = 'a'\n", source="p.toml")
    assert (policy.new_broker.price, policy.new_broker.currency, policy.new_broker.period) == (price, currency, period)
    text = dump_policy(policy)
    assert dump_policy(parse_policy(text)) == text
    assert ("price" in text) == (price is not None)


def test_conf_policy_round_trips_byte_for_byte() -> None:
    text = dump_policy(load_policy(Path(__file__).resolve().parents[2] / "conf" / "pools.toml"))
    again = parse_policy(text)
    assert dump_policy(again) == text and again.new_broker.price == 1200.0 and again.new_broker.period == "month"
    assert again.new_broker.lead_time_days == 60


@pytest.mark.parametrize("value", ["refuse", "wrap"])
def test_rf_above_racks_round_trips_and_is_said_only_when_not_the_default(value) -> None:
    policy = parse_policy(f"[defaults]\nrf_above_racks = '{value}'\n[[pool]]\nname = 'a'\n", source="p.toml")
    text = dump_policy(policy)
    assert policy.defaults.rf_above_racks == value and parse_policy(text, source="p.toml") == policy
    assert ("rf_above_racks" in text) == (value == "wrap")


def test_bad_rf_above_racks_names_the_key() -> None:
    with pytest.raises(InputError, match=r"p.toml: defaults\.rf_above_racks: .*'refuse'.*'wrap'"):
        parse_policy("[defaults]\nrf_above_racks = 'spread'\n[[pool]]\nname = 'a'\n", source="p.toml")


@pytest.mark.parametrize(("extra", "message"), [("lead_time_days = -1\n", r"expected an integer >= 0, got -1"),
                                                ("lead_time_days = 1.5\n", r"lead_time_days: .*integer")])
def test_bad_lead_time_names_the_key(extra, message) -> None:
    with pytest.raises(InputError, match=r"new_broker\.lead_time_days: " + message.split(": ", 1)[-1]):
        parse_policy(_NEW_BROKER + extra + "[[pool]]\nname = 'a'\n", source="p.toml")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("price = -1\n", r"new_broker\.price: expected an integer >= 0, got -1"),
        ("price = '12'\n", r"new_broker\.price: expected a finite number .* got '12'"),
        ("price = inf\n", r"new_broker\.price: expected a finite number .* got inf"),
        ("price = true\n", r"new_broker\.price: expected a finite number"),
        ("price = 1\ncurrency = ''\n", r"new_broker\.currency: expected a currency code"),
        ("price = 1\nperiod = 'week'\n", r"new_broker\.period: Input should be 'hour', 'day', 'month'"),
        ("currency = 'EUR'\n", r"new_broker\.currency: set new_broker\.price too"),
        ("period = 'year'\n", r"new_broker\.period: set new_broker\.price too"),
    ],
)
def test_bad_new_broker_price_names_the_key(extra, message) -> None:
    with pytest.raises(InputError, match=message):
        parse_policy(_NEW_BROKER + extra + "[[pool]]\nname = 'a'\n", source="p.toml")


def test_conflicting_selectors_name_both_pools_and_topic() -> None:
    policy = parse_policy("[[pool]]\nname='a'\ntopics=['x.*']\n[[pool]]\nname='b'\ntopics=['xy']", source="p.toml")
    with pytest.raises(InputError, match=r"topic 'xy' is selected by pools 'a' and 'b'"):
        policy.resolve("xy")


def test_pins_on_missing_brokers_are_rejected() -> None:
    policy = parse_policy(POLICY, source="pools.toml")
    with pytest.raises(InputError, match=r"pins broker\(s\) 3 that cluster 'c1' does not have"):
        policy.check_against(snapshot_from_dict(SNAPSHOT))


def _profile_row(topic: str) -> TopicProfile:
    ts = datetime(2026, 10, 1, tzinfo=timezone.utc)
    values = dict(
        topic=topic, partitions=3, bytes_in_p50=1.0, bytes_in_p95=2.0, bytes_in_p99=3.0, bytes_in_max=4.0,
        bytes_out_p95=None, bytes_out_p99=6.0, bytes_out_max=7.0, messages_in_p99=None, storage_bytes=100,
        bytes_in_p99_growth_per_day=0.01, storage_growth_per_day=0.02, forecast_horizon_days=90,
        forecast_bytes_in_p99=7.3, forecast_bytes_in_p99_low=6.0, forecast_bytes_in_p99_high=9.0,
        forecast_storage_bytes=600.0, forecast_storage_low=500.0, forecast_storage_high=700.0,
        days_observed=14, samples=20160, gaps=2, counter_resets=1, rejected_rows=0, first_ts=ts, last_ts=ts,
    )
    assert list(values) == [c[0] for c in TOPIC_COLUMNS]
    return TopicProfile(**values)


def test_profile_round_trips_byte_for_byte(tmp_path: Path) -> None:
    rows = [_profile_row("b"), _profile_row("a")]
    parts = [PartitionProfile("a", 1, 5, None), PartitionProfile("a", 0, 7, 1.5)]
    assert [c[0] for c in PARTITION_COLUMNS] == ["topic", "partition", "size_bytes", "bytes_in_rate"]
    save_profile(tmp_path / "p", rows, parts)
    first = {f.name: f.read_bytes() for f in (tmp_path / "p").iterdir()}
    loaded = load_profile(tmp_path / "p")
    assert list(loaded) == ["a", "b"] and loaded["a"] == rows[1]
    assert load_partition_profile(tmp_path / "p")[("a", 0)].bytes_in_rate == 1.5
    save_profile(tmp_path / "p", loaded, list(load_partition_profile(tmp_path / "p").values()))
    assert {f.name: f.read_bytes() for f in (tmp_path / "p").iterdir()} == first
    assert json.loads((tmp_path / "p" / "topic_profile.json").read_text())[0]["first_ts"] == "2026-10-01T00:00:00Z"


def test_remote_columns_are_written_only_when_some_topic_has_one(tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    from dataclasses import replace

    plain = [_profile_row("a"), _profile_row("b")]
    save_profile(tmp_path / "plain", plain)
    names = pq.read_schema(tmp_path / "plain" / "topic_profile.parquet").names
    assert names == [c[0] for c in TOPIC_COLUMNS]  # the file without remote metrics is the one it always was
    assert "remote_log_size_bytes" not in (tmp_path / "plain" / "topic_profile.json").read_text()
    assert all(not r.remote_measured for r in load_profile(tmp_path / "plain").values())
    tiered = [replace(plain[0], remote_log_size_bytes=5 * 10**12, remote_copy_bytes_p99=2e6), plain[1]]
    save_profile(tmp_path / "tiered", tiered)
    names = pq.read_schema(tmp_path / "tiered" / "topic_profile.parquet").names
    assert names == [c[0] for c in TOPIC_COLUMNS + REMOTE_COLUMNS]
    loaded = load_profile(tmp_path / "tiered")
    assert loaded["a"] == tiered[0] and loaded["a"].remote_measured and loaded["a"].remote_fetch_bytes_p99 is None
    assert loaded["b"] == plain[1] and not loaded["b"].remote_measured
    doc = json.loads((tmp_path / "tiered" / "topic_profile.json").read_text())
    assert doc[0]["remote_log_size_bytes"] == 5 * 10**12 and doc[1]["remote_copy_bytes_p99"] is None


def test_a_negative_remote_figure_or_a_partial_set_of_remote_columns_is_input_error(tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    from dataclasses import replace

    save_profile(tmp_path / "p", [replace(_profile_row("a"), remote_fetch_bytes_p99=-1.0)])
    with pytest.raises(InputError, match=r"row 0: remote_fetch_bytes_p99: expected a finite number >= 0, got -1.0"):
        load_profile(tmp_path / "p")
    save_profile(tmp_path / "q", [replace(_profile_row("a"), remote_fetch_bytes_p99=1.0)])
    path = tmp_path / "q" / "topic_profile.parquet"
    pq.write_table(pq.read_table(path).drop_columns(["remote_copy_bytes_p99"]), path)
    with pytest.raises(InputError, match=r"topic_profile.parquet: missing column\(s\) remote_copy_bytes_p99"):
        load_profile(tmp_path / "q")


def test_profile_missing_file_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="topic_profile.parquet: no such file"):
        load_profile(tmp_path)


def test_plan_round_trips_and_counts_moved_bytes(tmp_path: Path) -> None:
    plan = Plan(
        cluster="c1",
        brokers_before={1: None, 2: "a"},
        brokers={1: "a", 2: "a"},
        topics={"t": "a"},
        partitions=(PartitionMove("t", 1, (1, 2), (2, 1), 10), PartitionMove("t", 0, (1,), (2,), 5)),
        brokers_to_add={"a": 0},
        solver=SolverReport("HiGHS", "Optimal", "Optimal Solution Found", 1.0, 1.0, 0.0),
        utilisation={"pools": {}},
        warnings=("w",),
    )
    assert plan.moved_bytes == 5 and [m.partition for m in plan.moves] == [0, 1]
    save_plan(plan, tmp_path / "plan.json")
    again = load_plan(tmp_path / "plan.json")
    assert again == plan
    assert plan_to_json(again) == (tmp_path / "plan.json").read_text()
    assert json.loads((tmp_path / "plan.json").read_text())["moved_bytes"] == 5
