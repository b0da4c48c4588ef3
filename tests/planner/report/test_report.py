"""The report's content: capacity, runway, N−1, cost, risks, comparison, recommendation, units and determinism."""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from dataclasses import replace
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from planner.report import CHART_NAMES, build_model, load_previous_run, load_run, render_report
from planner.report.risks import plan_risks
from planner.report.runway import Crossing, OrderBy, first_crossing
from pools.audit.findings import Finding, Severity
from pools.errors import InputError
from pools.atomic import write_json
from pools.plan_file import PartitionMove, Plan, SolverReport, load_plan, save_plan
from pools.forecast_band import calibrate, out_of_time

from .conftest import build_run


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """The complete run, rendered once for the tests that only read it."""
    return render(build_run(tmp_path_factory.mktemp("full") / "run"))


def render(run, policy=True, previous=None):
    inputs = load_run(run, policy=run / "pools.toml" if policy else None)
    model = build_model(inputs, load_run(previous) if previous else None)
    return model, render_report(model, has_policy=policy)


def pool(model, name, dim):
    return next(r for r in model.pools if (r.pool, r.dimension) == (name, dim))


def test_capacity_before_and_after_the_plan_are_both_shown(full):
    model, out = full
    a = pool(model, "a", "disk")
    # brokers 1..3 carry 10/20/30 % now and 12/24/36 % at the forecast on 3 TB; after the plan the 3 brokers it
    # places on carry 0.11 × (6 + 5 + 4) = 1.65 TB of 3 TB (a load on brokers, as now and at forecast: not the pool's
    # topics' 2 TB of demand; the new one carries nothing until it joins), the busiest, broker 1, at 0.11 × 6 = 66 %
    assert (a.brokers_before, a.brokers_after, a.added, a.capacity_before, a.capacity_after) == (3, 3, 1, 3e12, 4e12)
    assert (round(a.now, 6), round(a.forecast, 6), round(a.after, 6), a.max_utilisation) == (0.2, 0.24, 0.55, 0.7)
    assert a.demand_forecast == 2e12
    assert round(a.busiest_after, 6) == 0.66
    assert "| a | Disk | 3 → 3 + 1 new | 3.00 TB | 4.00 TB | 20.0 % | 24.0 % | 55.0 % | 66.0 % | 70.0 % |" \
        in out.markdown
    assert "max utilisation (policy)" in out.markdown and "headroom 70" not in out.markdown
    assert model.heat.brokers == (1, 2, 3, 4, 5, 6) and model.heat.pools == ("a",) * 3 + ("b",) * 3
    assert [round(v, 6) for v in model.heat.now[0]] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]


def test_after_the_plan_counts_the_brokers_still_to_buy_that_it_places_on(tmp_path):
    # issue 24: pool a's broker to add is planned onto (broker 7, 50 % after the plan): the after-plan share is the
    # load on the 4 brokers that carry it, (0.66 + 0.55 + 0.44 + 0.5) TB of 4 TB, the busiest of them broker 1
    # (66 %), and broker 7 is named
    model, out = render(build_run(tmp_path / "run", buy=True))
    a = pool(model, "a", "disk")
    assert (a.brokers_before, a.brokers_after, a.added, a.to_buy, a.capacity_after) == (3, 4, 1, (7,), 4e12)
    assert (a.capacity_placed, round(a.after, 6), round(a.busiest_after, 6)) == (4e12, 0.5375, 0.66)
    assert "| a | Disk | 3 → 4 (1 to buy: 7) | 3.00 TB | 4.00 TB | 20.0 % | 24.0 % | 53.8 % | 66.0 % | 70.0 % |" \
        in out.markdown
    # without it (the order-by date's limit) the pool has its three brokers, less the largest
    assert (a.limits.usable, a.unbought.usable) == (3e12, 2e12)
    assert "| a | Disk | 4 | broker 1 | 3.00 TB |" in out.markdown  # N−1: the four brokers after the plan
    assert model.heat.brokers == (1, 2, 3, 4, 5, 6) and 7 not in model.heat.brokers  # not there now
    assert model.heat.after_brokers[:4] == (1, 2, 3, 7) and model.heat.to_buy == (7,)
    assert "* marks the brokers still to buy (7)" in out.markdown
    assert not [r for r in model.pool_rows if r.brokers_now != 3]  # today's count leaves broker 7 out
    assert "It places replicas on them as broker ids 7 (a) (`planned_brokers`): provision them with those ids" \
        in out.markdown


def test_n_minus_1_loses_the_largest_broker_the_pool_has_after_the_plan(full):
    model, out = full
    a, b = pool(model, "a", "nw_in"), pool(model, "b", "nw_in")
    # equal brokers: the lowest id is named; pool a keeps the broker the plan adds
    assert (a.loss.lost, a.loss.usable, round(a.after_loss_forecast, 6)) == (("1",), 3e8, round(2 / 3, 6))
    assert (b.loss.lost, b.loss.usable, b.after_loss_now, b.after_loss_forecast) == (("4",), 2e8, 0.5, 1.0)
    assert "| b | Network in | 3 | broker 4 | 200 MB/s | 50.0 % | 100.0 % | 70.0 % | no, 30.0 pp over |" in out.markdown
    assert "| a | Network in | 4 | broker 1 | 300 MB/s | 33.3 % | 66.7 % | 70.0 % | yes |" in out.markdown


@pytest.mark.parametrize(("tolerated", "lost", "usable", "loss"), [(0, (), 4e12, ("1",)), (2, ("1", "2"), 2e12, ("1", "2"))])
def test_the_policy_decides_how_many_brokers_a_failure_takes(tmp_path, tolerated, lost, usable, loss):
    run = build_run(tmp_path / "run")
    text = (run / "pools.toml").read_text().replace("tolerated_broker_failures = 1",
                                                     f"tolerated_broker_failures = {tolerated}")
    (run / "pools.toml").write_text(text)
    a = pool(build_model(load_run(run, policy=run / "pools.toml")), "a", "disk")
    assert (a.limits.lost, a.limits.usable, a.loss.lost) == (lost, usable, loss)  # the N−1 view loses one at least


def _first_day(path, limit, days=90):
    """The first whole day 1 … ``days`` on which ``path(t)`` exceeds ``limit`` (``None``: none)."""
    return next((t for t in range(1, days + 1) if path(t) > limit), None)


@pytest.mark.slow
def test_runway_sums_each_topics_own_forecast_with_its_band(tmp_path):
    # pool a holds a-x (3 partitions × RF 3): nw_out = consumers (2 × bytes-in) + replication (2 × bytes-in),
    # compounding at 0.4 %/day from 33 MB/s; the band's edges (0.8 × and 1.25 × the forecast at 90 days) grow at
    # their own implied rates
    model, out = render(build_run(tmp_path / "run", rates=(33e6, 30e6)))
    runway = model.runway
    assert (runway.as_of, runway.horizon_days, runway.history_days, runway.lead_time_days) == (
        date(2026, 10, 31), 90, 90, 30)
    row = next(r for r in runway.rows if (r.pool, r.dimension) == ("a", "nw_out"))
    assert row.demand_now == pytest.approx(4 * 33e6)
    assert row.demand_forecast == pytest.approx(4 * 33e6 * 1.004 ** 90)
    limit, unbought = 0.7 * 3e8, 0.7 * 2e8  # 4 brokers (one to buy) or 3, less the largest
    assert (row.limit, row.unbought_limit) == (pytest.approx(limit), pytest.approx(unbought))
    likely = lambda t: 4 * 33e6 * 1.004 ** t  # noqa: E731
    high = lambda t: 4 * 33e6 * (1.25 * 1.004 ** 90) ** (t / 90)  # noqa: E731
    low = lambda t: 4 * 33e6 * (0.8 * 1.004 ** 90) ** (t / 90)  # noqa: E731
    assert row.unbought.day == _first_day(likely, unbought) == 15
    assert row.earliest.day == _first_day(high, limit) == 72
    assert row.likely.kind == row.latest.kind == "after"  # the forecast crosses on day 117, past 90 days of history
    assert _first_day(likely, limit, 200) == 117 and _first_day(low, limit) is None
    assert "| a | Network out | 132 MB/s | 189 MB/s | 300 MB/s | 210 MB/s | 2027-01-11 | after 2027-01-29 | after " \
           "2027-01-29 | — | 2026-11-15 |" in out.markdown
    # the order for a's broker was due 30 days before day 15: overdue, and said first
    order = next(o for o in runway.orders if o.pool == "a")
    assert (order.brokers, order.dimension, runway.order_by(order), runway.overdue(order)) == (
        1, "nw_out", date(2026, 10, 16), True)
    # with the band's crossings of that limit (high edge day 10, low edge day 39) and the evidence it rests on
    assert "| a | 1 | Network out | 2026-11-15 | 2026-11-10 … 2026-12-09 | 30 days | overdue since 2026-10-16 | 90 " \
           "days of history, the crossing within it; no backtest: the band is the growth rate's |" in out.markdown
    assert (order.earliest.day, order.latest.day) == (_first_day(high, unbought), _first_day(low, unbought)) == (10, 39)
    recommendation = out.markdown.split("## Recommendation\n\n")[1]
    assert recommendation.startswith("Order now: a's network out crosses its limit without the 1 broker still to "
                                     "buy on 2026-11-15, 30 days of lead time before that was 2026-10-16.")


@pytest.mark.slow
def test_runway_without_growth_or_past_the_limit(full, tmp_path):
    model, out = full
    replicas = next(r for r in model.runway.rows if (r.pool, r.dimension) == ("a", "replicas"))
    assert replicas.likely.kind == "flat" and "| not at this growth |" in out.markdown
    # pool a's growing dimensions cross after the 90 days of history: shown as "after", never as a date
    assert {r.likely.kind for r in model.runway.rows if r.pool == "a"} == {"after", "flat"}
    assert "after 2027-01-29" in out.markdown
    model, out = render(build_run(tmp_path / "run", rates=(80e6, 35e6)))  # a-x: 240 MB/s > 210 MB/s now
    row = next(r for r in model.runway.rows if (r.pool, r.dimension) == ("a", "nw_in"))
    assert (row.earliest, row.likely, row.latest) == ((Crossing("past", 0),) * 3)
    assert "| a | 1 | Network in | already past it | already past it … already past it | 30 days | overdue: " \
           "already past the limit | — |" in out.markdown


def _write_backtest(run, days=28):
    """A backtest of a-x and b-y on a noisy weekly history of ``days`` days, as ingest writes it."""
    from datetime import timedelta

    from pools.profile import BacktestRow, save_backtest
    from spark_jobs.growth import backtest

    week = (1.0, 1.05, 1.1, 1.08, 1.02, 0.7, 0.6)
    rows = []
    for topic, rate, growth in (("a-x", 20e6, 0.004), ("b-y", 35e6, 0.001)):
        series = [rate * (1 + growth) ** d * week[d % 7] * (1 + 0.05 * ((d * 7919) % 11 - 5) / 5) for d in range(days)]
        for p in backtest(list(range(20000, 20000 + days)), series):
            rows.append(BacktestRow(topic, "bytes_in_p99", date(1970, 1, 1) + timedelta(days=p.origin), p.horizon,
                                    p.actual, p.forecast, p.low, p.high))
    save_backtest(run / "profile", rows)
    return rows


@pytest.mark.slow
def test_forecast_quality_scores_the_backtest_per_pool_and_topic(tmp_path):
    run = build_run(tmp_path / "run")
    rows = _write_backtest(run)
    model, out = render(run)
    band = {(x[0].topic, x[0].origin, x[0].horizon_days): x[1:] for x in out_of_time(rows) if x is not None}
    # one topic per pool: the pool's rows are the topic's, judged by the pool's own band (calibrated on its rows,
    # every pool's pooled while it has too few), the topic's by the band of every topic's rows
    pooled = [replace(r, topic={"a-x": "a", "b-y": "b"}[r.topic]) for r in rows]
    pool_band = {(x[0].topic, x[0].origin, x[0].horizon_days): x[1:]
                 for x in out_of_time(pooled, grouped=True) if x is not None}
    for pool, topic in (("a", "a-x"), ("b", "b-y")):
        for h in (1, 7, 14):  # scored out of time: only the origins a band calibrated on the past judged
            for name, edges_of, score_of in ((topic, band, model.backtest_topics),
                                             (pool, pool_band, model.backtest_pools)):
                mine = [r for r in rows if r.topic == topic and r.horizon_days == h and (name, r.origin, h) in edges_of]
                assert 0 < len(mine) < sum(r.topic == topic and r.horizon_days == h for r in rows)
                error = sum(abs(r.forecast - r.actual) / r.actual for r in mine) / len(mine)
                edges = [edges_of[name, r.origin, h] for r in mine]
                held = sum(lo <= r.actual <= hi for r, (lo, hi) in zip(mine, edges)) / len(mine)
                s = next(s for s in score_of if (s.name, s.horizon_days) == (name, h))
                assert (s.forecasts, s.mape, s.band_held) == (len(mine), pytest.approx(error), pytest.approx(held))
    s = next(s for s in model.backtest_pools if (s.name, s.horizon_days) == ("a", 7))
    assert f"| a | bytes in, p99 | 7 | {s.forecasts} | {100 * s.mape:.1f} % | {100 * s.band_held:.1f} % |" in out.markdown
    for h in model.backtest_horizons:  # per horizon: the origins and forecasts the out-of-time score rests on
        scored = [r for r in rows if r.horizon_days == h.horizon_days and (r.topic, r.origin, r.horizon_days) in band]
        assert (h.rows, h.origins) == (len(scored), len({r.origin for r in scored}))
        if scored:  # judged on 5 origins or more (pools.forecast_band.MIN_ORIGINS), else said to be too few
            held = f"{100 * h.band_held:.1f} %" + ("" if h.origins >= 5 else ": too few origins to judge")
            assert f"| bytes in, p99 | {h.horizon_days} | {h.origins} | {h.rows} | {held} |" in out.markdown
            assert h.judged == (h.origins >= 5)
    assert "30 |" not in out.markdown.split("## How good the forecast has been")[1].split("\n## ")[0]  # no day 30+


@pytest.mark.slow
def test_the_runway_and_topic_table_take_the_band_calibrated_on_the_backtest(tmp_path):
    run = build_run(tmp_path / "run")
    plain, _ = render(run)
    rows = _write_backtest(run)
    model, _ = render(run)
    c = calibrate(rows)
    assert c.horizons["bytes_in_p99"] and model.calibration == c
    for old, new in zip(plain.runway.rows, model.runway.rows, strict=True):
        assert new.path == old.path  # the forecast itself is unchanged
        if new.dimension == "nw_in" and new.demand_now > 0:  # bytes in's edges, widened to the measured spread
            assert new.high[1] >= old.high[1] and new.low[1] <= old.low[1]  # here the day's noise is wider
            assert (new.high[1], new.low[1]) != (old.high[1], old.low[1])
    for r in model.runway.rows:  # each pool's edges: its summed forecast × e^q of the pool's own band
        if r.dimension == "nw_in" and r.demand_now > 0:
            q_low, q_high = model.pool_calibration.band(r.pool).log_widths("bytes_in_p99", [1, 7])
            assert model.pool_calibration.rests_on(r.pool, "bytes_in_p99") == "own"
            assert [r.high[1] / r.path[1], r.high[7] / r.path[7]] == pytest.approx(np.exp(q_high).tolist())
            assert [r.low[1] / r.path[1], r.low[7] / r.path[7]] == pytest.approx(np.exp(q_low).tolist())
    a_plain = next(t for t in plain.topics if t.topic == "a-x")
    a_cal = next(t for t in model.topics if t.topic == "a-x")
    assert a_cal.forecast == a_plain.forecast and (a_cal.low, a_cal.high) != (a_plain.low, a_plain.high)


@pytest.mark.slow
def test_forecast_quality_says_when_the_history_is_too_short(tmp_path):
    run = build_run(tmp_path / "run")
    _write_backtest(run, days=7)  # no origin has a later day
    _, out = render(run)
    assert "The history is too short to test the forecast on: a backtest origin needs 7 days" in out.markdown


@pytest.mark.slow
def test_a_plan_that_buys_brokers_always_has_an_order_by_date(tmp_path):
    """a's network out crosses 140 MB/s without its broker to buy only on day 95, past the 90-day horizon, yet the
    plan buys it for that horizon: the order is dated by the horizon, never left "after" (issue 39); b, buying
    nothing, crosses past the last day computed, but its next broker's lead time reaches back before today."""
    run = build_run(tmp_path / "run", rates=(24e6, 20e6))
    (run / "pools.toml").write_text((run / "pools.toml").read_text().replace("lead_time_days = 30",
                                                                             "lead_time_days = 120"))
    model, out = render(run)
    runway = model.runway
    a, b = (next(o for o in runway.orders if o.pool == p) for p in "ab")
    assert (a.basis, a.crossing, runway.order_by(a), runway.overdue(a)) == (
        "horizon", Crossing("day", 90), date(2026, 10, 1), True)
    assert "| a | 1 | — | 2027-01-29 | — | 120 days | overdue since 2026-10-01 | 90 days of history, the horizon " \
           "within it; the plan needs the brokers by its horizon, though no pool-wide limit is crossed without them |" \
           in out.markdown
    assert "Order now: a needs its 1 broker still to buy at the 90-day horizon, 120 days of lead time before that " \
           "was 2026-10-01." in out.markdown
    assert (b.brokers, b.crossing.kind, runway.may_be_due(b), runway.overdue(b)) == (0, "after", True, False)
    assert "| b | 0 | — | after 2027-01-29 | — | 120 days | may be due now: the lead time reaches back past the " \
           "last day computed | — |" in out.markdown
    assert "The order for b's next broker may be due now: its crossing is past 2027-01-29, the last day computed, " \
           "but less than the 120 days of lead time after 2026-10-31." in out.markdown


@pytest.mark.slow
def test_crossings_past_the_history_are_dated_as_a_trend_up_to_the_horizon(tmp_path):
    """pools.evidence: with 14 days of history and a 90-day plan, a crossing on day 72 is dated, marked as a trend,
    and the recommendation words the purchase as one; the plan itself warns."""
    from pools.evidence import Evidence, horizon_warning

    run = build_run(tmp_path / "run", rates=(33e6, 30e6), history_days=14)
    model, out = render(run)
    runway = model.runway
    row = next(r for r in runway.rows if (r.pool, r.dimension) == ("a", "nw_out"))
    assert runway.history_days == 14 and runway.until == date(2027, 1, 29)
    assert row.earliest == Crossing("day", 72) and runway.trend(row.earliest) and runway.trend(row.unbought)
    assert not runway.trend(Crossing("day", 14)) and runway.trend(Crossing("day", 15))
    assert "| 2027-01-11 (trend) |" in out.markdown
    text = out.markdown.split("## Recommendation\n\n")[1].split("\n")[0]
    assert "the measured trend says the plan needs it to keep that pool within the policy's limits at the 90-day " \
           "forecast, past the 14 days of history the growth was measured on, so a trend, not a tested " \
           "forecast." in text
    assert horizon_warning(Evidence(14), 90).startswith("the 90-day forecast horizon reaches past the 14 days")
    assert horizon_warning(Evidence(90), 90) is None


def test_first_crossing_edges():
    assert first_crossing([1.0, 2.0, 3.0], None, 1.0) == Crossing("unknown")
    assert first_crossing([1.0, 2.0, 3.0], 2.5, 1.0) == Crossing("day", 2)
    assert first_crossing([1.0, 0.5, 0.4], 2.5, 1.0) == Crossing("flat")


def test_cost_prices_the_brokers_to_add_in_the_policy_currency(full):
    model, out = full
    assert [(r.pool, r.brokers, r.cost) for r in model.cost.rows] == [("a", 1, 1500.0)]
    assert "| a | 1 | EUR 1,500 per month | EUR 1,500 per month |" in out.markdown
    assert "| cost of the brokers to add | EUR 1,500 per month |" in out.markdown


@pytest.mark.slow
def test_cost_without_a_price_or_a_policy_says_what_is_missing(tmp_path):
    run = build_run(tmp_path / "run")
    text = (run / "pools.toml").read_text()
    (run / "pools.toml").write_text(re.sub(r'price = .*\ncurrency = .*\nperiod = .*\n', "", text))
    _, out = render(run)
    assert "The policy's `[new_broker]` table has no `price`" in out.markdown
    assert "| a | 1 | — | — |" in out.markdown
    _, out = render(run, policy=False)
    assert "No policy was given (`--policy`), so the new broker type and its price are not known." in out.markdown


def test_risks_name_the_cause_through_which_a_move_is_at_risk():
    moves = (PartitionMove("t", 0, (1, 2, 3), (1, 2, 4), 100),  # copies from 1 (its leader) to 4, drops 3
             PartitionMove("t", 1, (2, 3, 1), (3, 2, 1), 50),  # reorders only: 3 becomes the preferred leader
             PartitionMove("t", 2, (3, 1, 2), (3, 1, 5), 70))  # copies from 3 to 5
    plan = Plan("c", {}, {}, {"t": "p"}, moves, {}, SolverReport("HiGHS", "Optimal", "", 0, 0, 0))
    findings = [
        Finding("log_dir_error", Severity.CRITICAL, pool="p", broker=1, evidence={"log_dir": "/d1"}),
        Finding("broker_mixed_pools", Severity.ERROR, pool="p", broker=3),  # no cause: 3 only serves t-2's copy
        Finding("offline_partition", Severity.CRITICAL, pool="p", topic="u", partition=0,
                evidence={"replicas": [4, 5], "isr": [5], "leader": None}),  # not moved: a replica on 4 is no risk
        Finding("under_replicated", Severity.ERROR, pool="p", topic="t", partition=2,
                evidence={"replicas": [3, 1, 2], "isr": [3, 1], "leader": 3, "min_insync_replicas": 2}),
        Finding("under_min_isr", Severity.ERROR, pool="p", topic="t", partition=0,
                evidence={"replicas": [1, 2, 3], "isr": [1], "leader": 1, "min_insync_replicas": 2}),
        Finding("utilisation_over_headroom", Severity.ERROR, pool="p", broker=5, evidence={"dimension": "disk"}),
        Finding("utilisation_over_headroom", Severity.ERROR, pool="p", broker=2, evidence={"dimension": "disk"}),
        Finding("leader_not_preferred", Severity.INFO, pool="p", topic="t", partition=1),
        Finding("rack_shared", Severity.WARNING, pool="p", topic="t", partition=0),
        Finding("topic_without_pool", Severity.WARNING, topic="t"),
    ]
    risks = plan_risks(plan, findings)
    links = {(r.finding.kind, m.partition): m.how for r in risks.risks for m in r.moves}
    assert links == {
        ("log_dir_error", 0): "copies from broker 1, whose log dir /d1 holding it is in error",
        ("under_min_isr", 0): "its partition is below min.insync.replicas during the copy (ISR [1], min ISR 2): "
                              "acks=all producers fail until the new replicas catch up",
        ("under_replicated", 2): "its own partition is unhealthy: under-replicated (ISR [3, 1] of [3, 1, 2]), and "
                                 "Kafka completes the reassignment only once every target replica is in sync",
        ("utilisation_over_headroom", 2): "copies onto broker 5, over its headroom in disk",
    }
    assert [r.finding.kind for r in risks.risks] == ["log_dir_error", "under_min_isr", "under_replicated",
                                                     "utilisation_over_headroom"]
    # the reordering t-1 has no cause at all, whatever findings its brokers or topic carry
    assert (risks.touched, risks.touched_bytes, risks.moves, risks.moved_bytes) == ((("t", 0), ("t", 2)), 170, 3, 170)
    assert risks.pools[0].findings == {"critical": 1, "error": 3, "warning": 0, "info": 0}
    # what the moves repair is listed apart, not a risk: dropping broker 3's replica (t-0) repairs broker_mixed_pools
    # there, dropping broker 2's (t-2) its headroom; the plan gives t a pool
    assert sorted((r.finding.kind, r.fixed_by) for r in risks.fixed) == [
        ("broker_mixed_pools", 1), ("topic_without_pool", 0), ("utilisation_over_headroom", 1)]


def test_one_unhealthy_partition_flags_only_its_own_move():
    """Through the audit itself: a-x-0 is at its min ISR (ISR 2 of 3, min.insync.replicas 2); every move touches a
    broker holding one of its replicas, but only a-x-0's own move is at risk, and says why."""
    from pools.audit import audit
    from tests.pools.audit.helpers import healthy, policy, snapshot, with_partition

    parts = with_partition(healthy("a-x", (1, 2, 3), partitions=6), "a-x", 0, isr=(1, 2))
    snap = snapshot(parts + healthy("b-y", (4, 5, 6)))
    findings = audit(snap, policy())
    assert {f.kind for f in findings if f.severity.rank >= Severity.ERROR.rank} == {"at_min_isr"}
    moves = tuple(PartitionMove("a-x", p.partition, p.replicas, (*p.replicas[:2], 4 + p.partition % 3), 10)
                  for p in parts)
    plan = Plan("test", {}, {}, {"a-x": "a", "b-y": "b"}, moves, {}, SolverReport("HiGHS", "Optimal", "", 0, 0, 0))
    risks = plan_risks(plan, findings, snap)
    assert risks.touched == (("a-x", 0),) and list(risks.at_least(Severity.ERROR)) == [("a-x", 0)]
    (risk,) = risks.risks
    assert risk.moves[0].how.startswith("its own partition is unhealthy: at its min ISR (ISR [1, 2], min ISR 2)")


@pytest.mark.slow
def test_a_move_is_not_at_risk_through_what_the_plan_fixes(tmp_path):
    from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState
    cap = Capacity(1, 1, 1, 1)
    snap = ClusterSnapshot("c", tuple(Broker(b, f"r{b % 2}", cap) for b in range(1, 6)), (), (
        PartitionState("t", 0, (1, 2, 5), leader=1, isr=(1, 2, 5)), PartitionState("u", 0, (5, 4), leader=5)))
    moves = (PartitionMove("t", 0, (1, 2, 5), (1, 2, 3), 100),)  # takes t-0 off broker 5 (pool q) onto 3
    plan = Plan("c", {b: "p" for b in (1, 2, 3)} | {4: "q", 5: "q"}, {b: "p" for b in (1, 2, 3)} | {4: "q", 5: "q"},
                {"t": "p", "u": "q", "v": None}, moves, {}, SolverReport("HiGHS", "Optimal", "", 0, 0, 0))
    findings = [
        Finding("replica_outside_pool", Severity.ERROR, pool="p", broker=5, topic="t", partition=0),
        Finding("broker_mixed_pools", Severity.ERROR, pool="q", broker=5),  # only q's replicas left on 5
        Finding("rack_shared", Severity.WARNING, pool="p", topic="t", partition=0, evidence={"distinct_racks": 1}),
        Finding("utilisation_over_headroom", Severity.ERROR, pool="p", broker=3,
                evidence={"scope": "broker", "dimension": "nw_out"}),  # t-0's target
        Finding("log_dir_error", Severity.CRITICAL, broker=1),  # no pool: still gets a row
    ]
    risks = plan_risks(plan, findings, snap)
    assert [r.finding.kind for r in risks.risks] == ["log_dir_error", "utilisation_over_headroom"]
    assert [(r.finding.kind, r.fixed_by) for r in risks.fixed] == [
        ("broker_mixed_pools", 1), ("replica_outside_pool", 1), ("rack_shared", 1)]
    assert risks.risks[1].dimensions == ("nw_out",)
    assert [(p.pool, p.findings["critical"], p.findings["error"]) for p in risks.pools] == [("p", 0, 1), ("", 1, 0)]
    model = build_model(load_run(build_run(tmp_path / "run")))
    text = render_report(replace(model, risks=risks), has_policy=False).markdown
    assert "| error | utilisation_over_headroom | Network out | broker 3 | t-0 (100 B): copies onto broker 3, over " \
           "its headroom in network out | 100 B | 0 |" in text
    assert "- replica_outside_pool on t-0 (1 move fixes it)" in text
    assert "| (no pool) | 0 | 0 B | 1 | 0 | 0 | 0 |" in text


def test_risks_name_the_largest_moves_and_count_the_rest():
    moves = tuple(PartitionMove("t", i, (1, 2), (1, 3 + i), 10 * (i + 1)) for i in range(25))
    plan = Plan("c", {}, {}, {"t": None}, moves, {}, SolverReport("HiGHS", "Optimal", "", 0, 0, 0))
    risks = plan_risks(plan, [Finding("log_dir_error", Severity.CRITICAL, broker=1),
                              Finding("topic_without_pool", Severity.WARNING, topic="t")])
    (disk,) = risks.risks  # a topic without a pool puts no move at risk
    assert (disk.count, disk.moved_bytes, len(disk.moves)) == (25, sum(10 * (i + 1) for i in range(25)), 10)
    assert [m.partition for m in disk.moves] == list(range(24, 14, -1))
    model = build_model(load_run(build_run(Path(tempfile.mkdtemp()) / "run")))
    text = render_report(replace(model, risks=risks), has_policy=False).markdown
    assert "t-15 (160 B): copies from broker 1, whose log dir holding it is in error; and 15 more moves (1.20 kB) | " \
           "3.25 kB |" in text


def test_risk_copy_source_is_the_current_leader():
    from pools.snapshot import ClusterSnapshot, PartitionState
    move = PartitionMove("t", 0, (1, 2), (1, 3), 10)
    plan = Plan("c", {}, {}, {"t": "p"}, (move,), {}, SolverReport("HiGHS", "Optimal", "", 0, 0, 0))
    snap = ClusterSnapshot(cluster="c", brokers=(), topics=(),
                           partitions=(PartitionState("t", 0, (1, 2), leader=2, isr=(1, 2)),))
    risk = plan_risks(plan, [Finding("log_dir_error", Severity.CRITICAL, broker=2)], snap).risks[0]
    assert risk.moves[0].how == "copies from broker 2, whose log dir holding it is in error"  # the leader serves it


@pytest.mark.slow
def test_recommendation_follows_the_numbers(full, tmp_path):
    model, out = full
    text = out.markdown.split("## Recommendation\n\n")[1].split("\n")[0]
    # b's network out is at its limit now and crosses it on day 1: the order is overdue, and said first
    assert text.startswith("Order now: b's network out crosses its limit on 2026-11-01, 30 days of lead time before "
                           "that was 2026-10-02. Buy 1 broker (a: 1) for EUR 1,500 per month: the plan needs it to "
                           "keep that pool")
    assert "b's network in would run at 100.0 % (limit 70.0 %)" in text
    assert "Fix first the 2 error findings: broker_mixed_pools on broker 6, replica_outside_pool on a-x-0." in text
    assert "plan again before applying" in text
    # without brokers to add and pool b: nothing crosses a limit by the last day computed (a's order, without a
    # broker to buy, is the "after" crossing pool_runway gives then)
    (a,) = (o for o in model.runway.orders if o.pool == "a")
    assert (a.basis, a.crossing) == ("horizon", Crossing("day", 90))  # while the plan buys its broker
    calm = replace(model, cost=replace(model.cost, rows=()), headline={**model.headline, "brokers_to_add": {}},
                   runway=replace(model.runway, orders=(OrderBy("a", 0, None, Crossing("after")),)))
    text = render_report(calm, has_policy=True).markdown.split("## Recommendation\n\n")[1].split("\n")[0]
    assert text.startswith("No pool crosses a limit by 2027-01-29, the last day computed (the 90 days of history "
                           "support a forecast to 2027-01-29): nothing to buy yet.")
    assert "Apply the plan: 1 partition copies 1.00 kB" in text  # its move fixes the findings it touches
    # a pool without brokers to buy that crosses within the history: the next broker's order-by date
    busy, _ = render(build_run(tmp_path / "busy", rates=(20e6, 33e6)))
    busy = replace(busy, cost=replace(busy.cost, rows=()))
    text = render_report(busy, has_policy=True).markdown.split("## Recommendation\n\n")[1].split("\n")[0]
    assert text.startswith("b's network out likely crosses its limit on 2026-12-29: order b's next broker (one broker: "
                           "EUR 1,500 per month) by 2026-11-29.")


@pytest.mark.slow
def test_a_duration_beyond_30_days_is_a_problem_to_fix_with_its_cause(tmp_path):
    run = build_run(tmp_path / "run")
    write_json(run / "bundle" / "summary.json", {
        "cluster": "test", "moved_bytes": 8e9, "estimated_seconds": 7_812_500 + 60,
        "throttle": {"floor_Bps": 1024, "fraction_of_spare": 0.5},
        "batches": [{"batch": 1, "phase": "move", "partitions": 1, "moved_bytes": 8e9, "throttle_Bps": 1024,
                     "estimated_seconds": 7_812_500}, {"batch": 2, "phase": "move", "partitions": 1,
                                                       "moved_bytes": 3e6, "throttle_Bps": 5e7, "estimated_seconds": 60}]})
    _, out = render(run)
    text = out.markdown
    assert "| reassignment | 2 batches, 91 days: no schedule, fix the throttle (see Reassignment batches) |" in text
    cause = ("the estimate of 91 days is more than 30 days and no schedule: the throttle of batch 1 is at its floor "
             "of 1.02 kB/s, as a broker it involves has no spare network capacity at the forecast")
    assert f"A problem to fix before applying: {cause}" in text
    assert f"Do not apply the plan (1 partition copies 1.00 kB) as emitted: {cause}" in text
    assert "2 h 10 min" not in text and "2170 h" not in text  # never shown as a schedule
    assert "2 batches, 8.00 GB in all, 91 days at the planned throttles: no schedule (the problem above)." in text
    assert "| 1 | move | 1 | 8.00 GB | 1.02 kB/s | 91 days: no schedule |" in text
    assert "| 2 | move | 1 | 3.00 MB | 50.0 MB/s | 1 min |" in text


@pytest.mark.slow
def test_copies_and_leader_only_reorderings_are_counted_apart(tmp_path):
    run = build_run(tmp_path / "run")
    plan = load_plan(run / "plan" / "plan.json")
    reorder = PartitionMove("b-y", 0, (4, 5, 6), (5, 4, 6), 0)
    partitions = tuple(reorder if (m.topic, m.partition) == ("b-y", 0) else m for m in plan.partitions)
    save_plan(replace(plan, partitions=partitions), run / "plan" / "plan.json")
    model, out = render(run)
    assert (model.headline["partitions_copied"], model.headline["leader_only"]) == (1, 1)
    assert "| to move | 1 partition copies 1.00 kB, 1 leader-only reordering |" in out.markdown


@pytest.mark.slow
def test_summary_lists_severities_most_severe_first(full):
    model, out = full
    counts = replace(model, headline={**model.headline, "findings": {"critical": 1, "error": 2, "warning": 3,
                                                                      "info": 4}})
    assert list(model.headline["findings"]) == ["critical", "error", "warning", "info"]
    assert "| audit findings | 1 critical, 2 error, 3 warning, 4 info |" in render_report(counts, has_policy=True).markdown


def test_topics_tenants_batches_and_findings(full):
    model, out = full
    assert [r.topic for r in model.top_throughput] == ["b-y", "a-x"]
    assert [r.topic for r in model.top_growth] == ["a-x", "b-y"]
    assert [(t.tenant, t.pool, t.topics) for t in model.tenants] == [(None, "b", 1), ("ads", "a", 1)]
    assert [(r.pool, r.brokers_now, r.brokers_after, r.brokers_to_add, r.tenants) for r in model.pool_rows] == [
        ("a", 3, 3, 1, ("ads",)), ("b", 3, 3, 0, ())]
    assert "| a | 3 | 3 | 1 | ads |" in out.markdown
    assert [(b.batch, b.moved_bytes) for b in model.batches] == [(1, 8e9), (2, 3e9)]
    assert [f.kind for f in model.findings] == ["broker_mixed_pools", "replica_outside_pool"]
    assert set(out.charts) == set(CHART_NAMES)
    assert "| 2 | move | 1 | 3.00 GB | 50.0 MB/s | 1 h 04 min |" in out.markdown


@pytest.mark.slow
def test_a_one_batch_plan_has_no_batch_chart(full):
    model, _ = full
    out = render_report(replace(model, batches=model.batches[:1]), has_policy=True)
    assert "batches" not in out.charts and 'id="chart-batches"' not in out.html
    assert "1 batch, 8.00 GB in all, about 3 min at the planned throttles." in out.markdown


def test_sizes_use_decimal_units_everywhere(full):
    _, out = full
    assert not re.search(r"\d (KiB|MiB|GiB|TiB)\b", out.html + out.markdown)
    assert re.search(r"\d (kB|MB|GB|TB)\b", out.markdown)


@pytest.mark.slow
def test_comparison_with_a_previous_run(tmp_path):
    previous = build_run(tmp_path / "q3", load=0.5, rates=(10e6, 35e6))
    model, out = render(build_run(tmp_path / "q4"), previous=previous)
    c = model.comparison
    a = next(p for p in c.pools if (p.pool, p.dimension) == ("a", "disk"))
    assert (a.previous.load_now, a.current.load_now) == (pytest.approx(0.3e12), pytest.approx(0.6e12))
    assert c.new_topics == c.gone_topics == c.repooled == ()
    assert [(t.topic, t.bytes_in_delta) for t in c.topics] == [("a-x", 10e6)]  # b-y did not change
    text = out.markdown.split("## Since the previous run")[1].split("\n## ")[0]
    assert "| a | Disk | load now, on today's brokers | 300 GB | 600 GB | +300 GB |" in text
    assert "| a | Disk | utilisation now | 10.0 % | 20.0 % | +10.0 pp |" in text
    assert "| a | Disk | capacity |" not in text  # unchanged: not listed
    assert "| a | Network in | runway (likely crossing) | after 2027-01-29 | after 2027-01-29 |" not in text
    assert "| a-x | a | bytes in, p99 | 10.0 MB/s | 20.0 MB/s | +10.0 MB/s |" in text
    assert "| a-x | a | storage |" not in text and "| b-y |" not in text
    assert "no count changed." in text and 'id="compare"' in out.html


@pytest.mark.slow
def test_comparison_lists_only_what_changed(tmp_path):
    previous = build_run(tmp_path / "q3", rates=(20e6, 30e6))
    current = build_run(tmp_path / "q4", rates=(20e6, 34e6))
    plan = load_plan(current / "plan" / "plan.json")
    save_plan(replace(plan, brokers_to_add={"a": 2, "b": 0}), current / "plan" / "plan.json")
    model, out = render(current, previous=previous)
    text = out.markdown.split("## Since the previous run")[1].split("\n## ")[0]
    assert "Compared with run `q3` (snapshot taken 2026-11-01T00:00:00Z): brokers to add 1 → 2; cost of the brokers to add EUR 1,500 per month → " \
           "EUR 3,000 per month." in text
    # b's network out: 4 × 30 MB/s crosses 140 MB/s on day 155 (after the 90 days of history); 4 × 34 MB/s on day 30
    assert "| b | Network out | runway (likely crossing) | after 2027-01-29 | 2026-11-30 | — |" in text
    assert "| b-y | b | bytes in, p99 | 30.0 MB/s | 34.0 MB/s | +4.00 MB/s |" in text
    _, out = render(build_run(tmp_path / "again", rates=(20e6, 30e6)), previous=previous)  # nothing changed
    text = out.markdown.split("## Since the previous run")[1].split("\n## ")[0]
    assert "no count changed." in text and "No pool's capacity, load, utilisation, N−1 share or runway changed." in text
    assert "No topic in both runs changed its bytes in or storage." in text and "|" not in text


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda root, cur: root / "missing", r"--compare: .*missing: not a directory"),
        (lambda root, cur: cur, r"is the run being reported"),
        (lambda root, cur: (root / "empty").mkdir() or root / "empty", r"holds no snapshot.json, plan/plan.json"),
        (lambda root, cur: _broken(build_run(root / "old"), "plan/plan.json"), r"--compare: .*plan\.json"),
        (lambda root, cur: _broken(build_run(root / "old"), "profile/topic_profile.parquet"),
         r"--compare: .*topic_profile\.parquet"),
    ],
)
def test_a_previous_run_that_cannot_be_read_is_an_input_error(tmp_path, setup, message):
    current = build_run(tmp_path / "cur")
    with pytest.raises(InputError, match=message):
        load_previous_run(setup(tmp_path, current), current=current)


def _broken(run, name):
    (run / name).write_text("{ not what it should be")
    return run


def test_markdown_twin_carries_the_same_numbers_as_the_html(full):
    _, out = full
    html = re.sub(r"<svg.*?</svg>|<style>.*?</style>", "", out.html, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", html).replace("&#39;", "'").replace("&#34;", '"').replace("&amp;", "&")
    numbers = re.compile(r"\d[\d,.]*")
    assert Counter(numbers.findall(text)) == Counter(numbers.findall(out.markdown))
    assert numbers.findall(text)  # the test can fail


@pytest.mark.parametrize(
    ("chart", "texts"),
    [
        ("pools", ["Pool utilisation per dimension", "utilisation (% of capacity)", "pool",
                   "max utilisation (policy)"]),
        ("runway", ["Runway", "demand (% of the limit)", "days from the end of the metric history", "pool a"]),
        ("heatmap", ["Broker heatmap", "Broker utilisation now", "Broker utilisation after the plan",
                     "utilisation (% of capacity; grey: no data)", "broker id", "a", "b"]),
        ("throughput", ["Top topics by throughput", "bytes in, p99 (MB/s)", "topic"]),
        ("growth", ["Top topics by growth", "bytes in, p99 (MB/s)", "a-x (+0.40 %/day)"]),
        ("batches", ["Data moved per reassignment batch", "moved (GB)", "estimated duration (min)", "batch"]),
        ("findings", ["Audit findings by kind and severity", "findings (count)", "replica_outside_pool"]),
    ],
)
def test_charts_have_titles_and_axis_labels_with_units(full, chart, texts):
    _, out = full
    svg = out.charts[chart]
    assert svg.startswith("<svg")
    shown = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    for text in texts:
        assert any(text in s for s in shown), (chart, text, shown)


@pytest.mark.slow
def test_html_is_self_contained_and_deterministic(full, run_dir):
    _, first = full
    _, second = render(run_dir)
    assert first.html == second.html and first.markdown == second.markdown
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", first.html)
    assert "url(http" not in first.html and "@import" not in first.html and "<script" not in first.html
    ids = re.findall(r'\bid="([^"]+)"', first.html)
    assert len(ids) == len(set(ids)), "inline SVG ids must not collide"


def test_fix_commands_can_only_break_at_spaces(full):
    _, out = full
    fixes = re.findall(r'<code class="fix">(.*?)</code>', out.html, flags=re.S)
    assert len(fixes) == 2
    for fix in fixes:
        outside = re.sub(r'<span class="w">[^<]*</span>', "", fix)
        assert outside.strip(" ") == "", fix  # every non-space run is in an unbreakable span


def test_missing_stages_are_named_not_fatal(tmp_path):
    run = build_run(tmp_path / "run", stages=("snapshot",))
    (run / "audit").mkdir()
    (run / "audit" / "findings.json").write_text("{not json")
    inputs = load_run(run)
    assert sorted(inputs.notes) == ["audit", "bundle", "plan", "profile"]
    assert "invalid JSON" in inputs.notes["audit"] and sorted(inputs.unreadable) == ["audit"]
    model = build_model(inputs)
    out = render_report(model, has_policy=False)
    assert set(out.charts) == {"pools", "heatmap"}
    assert "No topic charts: the run has no topic profile." in out.html
    assert "plan/plan.json is missing (the plan stage did not run)" in out.markdown
    assert "No audit: audit/findings.json could not be read" in out.markdown
    assert "No plan: the brokers each pool lacks are not known." in out.markdown


def test_not_a_run_directory(tmp_path):
    with pytest.raises(InputError, match="not a directory"):
        load_run(tmp_path / "nope")
