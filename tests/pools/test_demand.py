"""The demand model: topic totals per dimension and their per-replica split over brokers."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.demand import at_horizon, broker_load, demand_over_days, demand_warnings, replica_load, topic_demand
from pools.errors import InputError
from pools.profile import PartitionProfile, TopicProfile
from pools.snapshot import DIMENSIONS, Broker, Capacity, ClusterSnapshot, PartitionState, TopicState
from tests.plugin import examples

CAP = Capacity(1e9, 1e9, 1e12, 1000)


def _row(topic: str, *, bytes_in: float, forecast_in: float, bytes_out: float | None, storage: int,
         forecast_storage: float, partitions: int = 2) -> TopicProfile:
    ts = datetime(2026, 10, 1, tzinfo=timezone.utc)
    return TopicProfile(
        topic=topic, partitions=partitions, bytes_in_p50=bytes_in / 2, bytes_in_p95=bytes_in, bytes_in_p99=bytes_in,
        bytes_in_max=bytes_in, bytes_out_p95=bytes_out, bytes_out_p99=bytes_out, bytes_out_max=bytes_out,
        messages_in_p99=None, storage_bytes=storage, bytes_in_p99_growth_per_day=0.0, storage_growth_per_day=0.0,
        forecast_horizon_days=90, forecast_bytes_in_p99=forecast_in, forecast_bytes_in_p99_low=forecast_in,
        forecast_bytes_in_p99_high=forecast_in, forecast_storage_bytes=forecast_storage,
        forecast_storage_low=forecast_storage, forecast_storage_high=forecast_storage, days_observed=14,
        samples=1, gaps=0, counter_resets=0, rejected_rows=0, first_ts=ts, last_ts=ts,
    )


def _snapshot(configs: dict[str, str] | None = None) -> ClusterSnapshot:
    brokers = tuple(Broker(i, f"r{i % 3}", CAP) for i in range(1, 5))
    parts = (
        PartitionState("orders", 0, (1, 2, 3), leader=2, sizes=(300, 300, 300)),
        PartitionState("orders", 1, (2, 3, 4), leader=2, sizes=(100, 100, 90)),
        PartitionState("logs", 0, (4, 1), leader=4, sizes=(50, 50)),
    )
    topics = (TopicState("orders", configs=configs or {}), TopicState("logs"))
    return ClusterSnapshot("c", brokers, topics, parts)


def test_forecast_totals_follow_the_issue_formulas() -> None:
    snap = _snapshot()
    profile = {"orders": _row("orders", bytes_in=100, forecast_in=200, bytes_out=300, storage=400,
                              forecast_storage=800)}
    d = topic_demand(snap, profile)["orders"]
    # RF 3: net in = 200 × 3; net out = consumers (300 × growth 2) + 200 × 2; disk = 800 × 3; replicas = 2 × 3
    assert (d.nw_in, d.nw_out, d.disk, d.replicas) == pytest.approx((600, 1000, 2400, 6))
    now = topic_demand(snap, profile, at="now")["orders"]
    assert (now.nw_in, now.nw_out, now.disk) == pytest.approx((300, 500, 1200))


def test_missing_bytes_out_uses_fanout() -> None:
    snap = _snapshot()
    profile = {"orders": _row("orders", bytes_in=100, forecast_in=100, bytes_out=None, storage=0,
                              forecast_storage=0)}
    assert topic_demand(snap, profile)["orders"].nw_out == pytest.approx(100 + 200)
    assert topic_demand(snap, profile, fanout={"orders": 3})["orders"].nw_out == pytest.approx(300 + 200)
    assert topic_demand(snap, profile, fanout=0.5)["orders"].nw_out == pytest.approx(50 + 200)
    with pytest.raises(InputError, match="fan-out of topic 'logs'"):
        topic_demand(snap, profile, fanout=-1.0)


def test_time_retention_caps_forecast_storage() -> None:
    profile = {"orders": _row("orders", bytes_in=10, forecast_in=10, bytes_out=0, storage=500,
                              forecast_storage=10_000)}
    capped = topic_demand(_snapshot({"retention.ms": "60000"}), profile)["orders"]
    assert capped.storage == pytest.approx(600)  # 10 B/s × 60 s
    by_bytes = topic_demand(_snapshot({"retention.bytes": "1000"}), profile)["orders"]
    assert by_bytes.storage == pytest.approx(2000)  # 1000 per partition × 2
    compacted = topic_demand(_snapshot({"retention.ms": "60000", "cleanup.policy": "compact"}), profile)["orders"]
    assert compacted.storage == pytest.approx(10_000)
    assert topic_demand(_snapshot({"retention.ms": "-1"}), profile)["orders"].storage == pytest.approx(10_000)


def test_a_tiered_topic_forecasts_only_its_local_retention() -> None:
    # 10 B/s kept 100 s in all, of which 10 s (a tenth) on the brokers' disks; the rest lives in remote storage
    profile = {"orders": _row("orders", bytes_in=10, forecast_in=10, bytes_out=0, storage=100,
                              forecast_storage=10_000)}
    tiered = {"remote.storage.enable": "true", "retention.ms": "100000", "local.retention.ms": "10000"}
    assert topic_demand(_snapshot(tiered), profile)["orders"].storage == pytest.approx(100)  # 10 B/s × 10 s
    assert topic_demand(_snapshot(tiered), profile)["orders"].disk == pytest.approx(300)  # × RF 3
    # without tiering the same configs keep the whole retention locally
    assert topic_demand(_snapshot({**tiered, "remote.storage.enable": "false"}), profile)["orders"].storage \
        == pytest.approx(1000)
    # -2 (Kafka's default) means "use retention.*"; local.retention.bytes caps per partition (2 partitions)
    assert topic_demand(_snapshot({**tiered, "local.retention.ms": "-2"}), profile)["orders"].storage \
        == pytest.approx(1000)
    by_bytes = {"remote.storage.enable": "true", "local.retention.bytes": "150"}
    assert topic_demand(_snapshot(by_bytes), profile)["orders"].storage == pytest.approx(300)
    # measured now: the local sizes kafka-log-dirs.sh reports
    assert topic_demand(_snapshot(tiered), profile, at="now")["orders"].storage == pytest.approx(100)


def test_remote_copy_is_leader_network_out_and_remote_fetch_leader_network_in_never_twice_in_bytes_out() -> None:
    """Kafka's BytesOutPerSec already counts the fetch responses served from remote data: the consumers' bytes-out
    stays as measured; the leader's upload to the store (RemoteCopyBytesPerSec) adds network out and its reads from
    the store (RemoteFetchBytesPerSec) add network in. Both grow with bytes-in, as consumer bytes-out does."""
    snap = _snapshot({"remote.storage.enable": "true", "local.retention.ms": "10000"})
    plain = _row("orders", bytes_in=100, forecast_in=200, bytes_out=300, storage=400, forecast_storage=800)
    tiered = replace(plain, remote_fetch_bytes_p99=120.0, remote_copy_bytes_p99=90.0, remote_log_size_bytes=10**9)
    base, d = topic_demand(snap, {"orders": plain})["orders"], topic_demand(snap, {"orders": tiered})["orders"]
    assert (d.remote_fetch, d.remote_copy) == pytest.approx((240, 180))  # × the forecast's growth, 2
    assert (d.nw_in - base.nw_in, d.nw_out - base.nw_out) == pytest.approx((240, 180))
    assert (d.bytes_out, d.disk) == (base.bytes_out, base.disk)  # remote bytes never sit on the brokers' disks
    now = topic_demand(snap, {"orders": tiered}, at="now")["orders"]
    assert (now.nw_in, now.nw_out) == pytest.approx((300 + 120, 300 + 200 + 90))
    # only leaders carry it: broker 2 leads both partitions of orders
    loads, base_loads = broker_load(snap, {"orders": d}), broker_load(snap, {"orders": base})
    for b in (1, 2, 3, 4):
        extra = (loads[b]["nw_in"] - base_loads[b]["nw_in"], loads[b]["nw_out"] - base_loads[b]["nw_out"])
        assert extra == pytest.approx((240, 180) if b == 2 else (0, 0)), b
    assert sum(load["nw_in"] for load in loads.values()) == pytest.approx(d.nw_in)
    share = d.partitions[0]
    assert replica_load(share, 3, leader=True)[:2] == pytest.approx(
        (share.bytes_in + share.remote_fetch, share.bytes_out + share.remote_copy + 2 * share.bytes_in))
    assert replica_load(share, 3, leader=False) == replica_load(replace(share, remote_fetch=0.0, remote_copy=0.0), 3,
                                                                leader=False)


def test_the_other_load_models_put_remote_traffic_on_the_leader_as_broker_load_does() -> None:
    """The placement seed's (`pools.fill.replica_loads`) and the audit's (`pools.audit.loads.audit_loads`) load
    models agree with `broker_load` on a tiered topic."""
    import numpy as np

    from pools.audit.loads import audit_loads
    from pools.demand import partition_loads
    from pools.fill import replica_loads

    snap = _snapshot({"remote.storage.enable": "true"})
    profile = {"orders": replace(_row("orders", bytes_in=100, forecast_in=200, bytes_out=300, storage=400,
                                      forecast_storage=800), remote_fetch_bytes_p99=120.0, remote_copy_bytes_p99=90.0)}
    demands = topic_demand(snap, profile)
    loads = partition_loads(snap, demands)
    parts = np.array([i for i, p in enumerate(snap.partitions) if p.topic == "orders"])
    follower, extra = replica_loads(loads, parts, np.array([3, 3]))
    assert (extra[:, 0].sum(), extra[:, 1].sum() - 2 * loads.bytes_in[parts].sum() - loads.bytes_out[parts].sum()) \
        == pytest.approx((240, 180))
    assert not follower[:, 1].any()
    expected = broker_load(snap, demands)
    audit = audit_loads(snap, profile).forecast
    ids = [b.id for b in snap.brokers]
    for i, b in enumerate(ids):
        assert audit[i, :2].tolist() == pytest.approx([expected[b]["nw_in"], expected[b]["nw_out"]]), b


def test_topics_absent_from_profile_use_partition_sizes_with_a_warning() -> None:
    demands = topic_demand(_snapshot(), {})
    logs = demands["logs"]
    assert (logs.nw_in, logs.nw_out, logs.disk, logs.replicas, logs.source) == (0, 0, 100, 2, "sizes")
    assert demands["orders"].disk == pytest.approx(300 * 3 + 100 * 3)
    (warning,) = demand_warnings(demands)
    assert "2 topic(s) absent from the profile" in warning and "logs, orders" in warning


def test_partition_split_uses_sizes_and_partition_rates() -> None:
    snap = _snapshot()
    profile = {"orders": _row("orders", bytes_in=100, forecast_in=100, bytes_out=0, storage=400,
                              forecast_storage=400)}
    shares = topic_demand(snap, profile)["orders"].partitions
    assert [s.storage for s in shares] == pytest.approx([300, 100])
    assert [s.bytes_in for s in shares] == pytest.approx([50, 50])
    rates = {("orders", 0): PartitionProfile("orders", 0, 300, 3.0), ("orders", 1): PartitionProfile("orders", 1, 1, 1.0)}
    shares = topic_demand(snap, profile, partition_profile=rates)["orders"].partitions
    assert [s.bytes_in for s in shares] == pytest.approx([75, 25])


def test_broker_load_puts_leader_and_follower_shares_on_the_right_brokers() -> None:
    snap = _snapshot()
    profile = {"orders": _row("orders", bytes_in=100, forecast_in=100, bytes_out=40, storage=400,
                              forecast_storage=400)}
    demands = topic_demand(snap, profile)
    loads = broker_load(snap, demands)
    # orders-0 led by 2 (current leader): 50 in, 20 consumer out + 100 replication out; 1 and 3 follow.
    assert loads[2]["nw_out"] == pytest.approx(20 + 100 + 20 + 100)
    assert loads[1]["nw_in"] == pytest.approx(50)
    assert loads[1]["disk"] == pytest.approx(300 + 50)  # orders-0 and logs-0
    assert loads[4]["replicas"] == 2
    moved = broker_load(snap, demands, {("orders", 0): (3, 1, 2)})
    assert moved[3]["nw_out"] == pytest.approx(120)
    assert moved[2]["nw_out"] == pytest.approx(120)
    extra = broker_load(snap, demands, {("orders", 1): (9, 3, 4)})
    assert extra[9]["replicas"] == 1


@settings(max_examples=examples(40))
@given(
    rf=st.lists(st.integers(1, 4), min_size=1, max_size=5),
    bytes_in=st.floats(0, 1e6),
    bytes_out=st.one_of(st.none(), st.floats(0, 1e6)),
    growth=st.floats(0.5, 3),
)
def test_broker_loads_sum_to_topic_totals(rf: list[int], bytes_in: float, bytes_out: float | None,
                                           growth: float) -> None:
    brokers = tuple(Broker(i, None, CAP) for i in range(4))
    parts = tuple(PartitionState("t", i, tuple(range(r)), leader=0, sizes=(10 * (i + 1),) * r) for i, r in enumerate(rf))
    snap = ClusterSnapshot("c", brokers, (TopicState("t"),), parts)
    profile = {"t": _row("t", bytes_in=bytes_in, forecast_in=bytes_in * growth, bytes_out=bytes_out, storage=5,
                         forecast_storage=7.0, partitions=len(rf))}
    demand = topic_demand(snap, profile)["t"]
    loads = broker_load(snap, {"t": demand})
    for dim in DIMENSIONS:
        assert sum(load[dim] for load in loads.values()) == pytest.approx(demand.get(dim), rel=1e-9, abs=1e-6)
    assert demand.replicas == sum(rf)
    assert replica_load(demand.partitions[0], rf[0], leader=False)[1] == 0.0


def test_unknown_horizon_is_rejected() -> None:
    with pytest.raises(InputError, match="at: expected 'forecast' or 'now'"):
        topic_demand(_snapshot(), {}, at="later")  # type: ignore[arg-type]


@given(
    st.lists(st.floats(1e6, 2e6), min_size=2, max_size=30),  # at most doubling per day: clear of the e**700 cap
    st.lists(st.floats(1e11, 2e11), min_size=2, max_size=30),
    st.integers(0, 365),
    st.integers(0, 365),
)
def test_forecast_at_another_horizon_is_the_growth_model_at_that_horizon(rates, sizes, stored, horizon) -> None:
    # ingest fits the growth and writes the forecast at its own horizon (spark_jobs.growth); re-deriving it at
    # the policy's horizon from the stored forecast and growth per day gives what ingest would have written there
    from dataclasses import replace

    from pools.demand import at_horizon
    from spark_jobs.growth import robust_growth

    fit_in, fit_st = robust_growth(range(len(rates)), rates), robust_growth(range(len(sizes)), sizes)

    def written(days: int) -> TopicProfile:
        (f, lo, hi), (s, s_lo, s_hi) = fit_in.forecast(days), fit_st.forecast(days)
        return replace(_row("t", bytes_in=rates[-1], forecast_in=f, bytes_out=None, storage=int(sizes[-1]),
                            forecast_storage=s), bytes_in_p99_growth_per_day=fit_in.per_day,
                       storage_growth_per_day=fit_st.per_day, forecast_horizon_days=days,
                       forecast_bytes_in_p99_low=lo, forecast_bytes_in_p99_high=hi, forecast_storage_low=s_lo,
                       forecast_storage_high=s_hi)

    got, want = at_horizon({"t": written(stored)}, horizon)["t"], written(horizon)
    for name in ("forecast_bytes_in_p99", "forecast_storage_bytes"):
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-9), name
    if stored > 0:  # a band at horizon 0 is a point: its own growth cannot be recovered
        for name in ("forecast_bytes_in_p99_low", "forecast_bytes_in_p99_high", "forecast_storage_low",
                     "forecast_storage_high"):
            assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-9), name
    assert got.forecast_horizon_days == horizon
    assert at_horizon({"t": want}, horizon)["t"] is want  # the same horizon: the row itself, bit for bit


@pytest.mark.parametrize("configs", [{}, {"retention.ms": "600000"}, {"retention.bytes": "5000"}])
@pytest.mark.parametrize("edge", ["low", "forecast", "high"])
def test_demand_over_days_is_topic_demand_at_each_horizon(configs, edge) -> None:
    """Each day of the path is `topic_demand` for the profile re-derived at that horizon, the band's edge in place
    of the forecast: each topic on its own growth, retention capping storage day by day."""
    row = _row("orders", bytes_in=100, forecast_in=180, bytes_out=None, storage=4000, forecast_storage=9000)
    row = replace(row, bytes_in_p99_growth_per_day=(180 / 100) ** (1 / 90) - 1, forecast_bytes_in_p99_low=150.0,
                  forecast_bytes_in_p99_high=260.0, storage_growth_per_day=(9000 / 4000) ** (1 / 90) - 1,
                  forecast_storage_low=5000.0, forecast_storage_high=20000.0)
    logs = replace(_row("logs", bytes_in=50, forecast_in=40, bytes_out=70, storage=100, forecast_storage=90),
                   bytes_in_p99_growth_per_day=(40 / 50) ** (1 / 90) - 1, remote_fetch_bytes_p99=30.0,
                   remote_copy_bytes_p99=55.0)
    profile, snap, days = {"orders": row, "logs": logs}, _snapshot(configs), [0, 1, 30, 90, 400]
    paths = demand_over_days(snap, profile, days, edge=edge, fanout=2.0)
    for i, day in enumerate(days):
        shifted = at_horizon(profile, day)
        if edge != "forecast":
            shifted = {t: replace(r, forecast_bytes_in_p99=getattr(r, f"forecast_bytes_in_p99_{edge}"),
                                  forecast_storage_bytes=getattr(r, f"forecast_storage_{edge}"))
                       for t, r in shifted.items()}
        expected = topic_demand(snap, shifted, 2.0)
        for topic in profile:
            assert paths[topic][i].tolist() == pytest.approx([expected[topic].get(d) for d in DIMENSIONS],
                                                             rel=1e-9), (topic, day)
