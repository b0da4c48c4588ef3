"""The report's content: numbers, units, determinism, self-containment and missing stages."""

from __future__ import annotations

import re

import pytest

from planner.report import CHART_NAMES, build_model, load_run, render_report
from pools.errors import InputError

from .conftest import build_run


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """The complete run, rendered once for the tests that only read it."""
    return render(build_run(tmp_path_factory.mktemp("full") / "run"))


def render(run, policy=True):
    inputs = load_run(run, policy=run / "pools.toml" if policy else None)
    return build_model(inputs), render_report(build_model(inputs), has_policy=policy)


def test_pool_utilisation_now_forecast_and_after(full):
    model, _ = full
    a = next(r for r in model.pools if (r.pool, r.dimension) == ("a", "disk"))
    # brokers 1..3 carry 10/20/30 % now and 12/24/36 % at the forecast; the plan's pool row: 2 / 4 after
    assert (a.capacity, round(a.now, 6), round(a.forecast, 6), a.after, a.headroom) == (3e12, 0.2, 0.24, 0.5, 0.7)
    assert a.failures == pytest.approx(2 / 3)  # the forecast over the plan's usable capacity, one broker down
    assert model.heat.brokers == (1, 2, 3, 4, 5, 6) and model.heat.pools == ("a",) * 3 + ("b",) * 3
    assert [round(v, 6) for v in model.heat.now[0]] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]


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
    assert "| 2 | move | 1 | 3.00 GB | 50.00 MB/s | 1 h 04 min |" in out.markdown
    assert "| a | Disk | 3.00 TB | 20.0 % | 24.0 % | 50.0 % | 66.7 % | 70.0 % |" in out.markdown


@pytest.mark.parametrize(
    ("chart", "texts"),
    [
        ("pools", ["Pool utilisation per dimension", "utilisation (% of capacity)", "pool", "headroom limit"]),
        ("heatmap", ["Broker heatmap", "Broker utilisation now", "Broker utilisation after the plan",
                     "utilisation (% of capacity)", "broker id"]),
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


def test_html_is_self_contained_and_deterministic(full, run_dir):
    _, first = full
    _, second = render(run_dir)
    assert first.html == second.html and first.markdown == second.markdown
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", first.html)
    assert "url(http" not in first.html and "@import" not in first.html and "<script" not in first.html
    ids = re.findall(r'\bid="([^"]+)"', first.html)
    assert len(ids) == len(set(ids)), "inline SVG ids must not collide"


def test_missing_stages_are_named_not_fatal(tmp_path):
    run = build_run(tmp_path / "run", stages=("snapshot",))
    (run / "audit").mkdir()
    (run / "audit" / "findings.json").write_text("{not json")
    inputs = load_run(run)
    assert sorted(inputs.notes) == ["audit", "bundle", "plan", "profile"]
    assert "invalid JSON" in inputs.notes["audit"]
    model = build_model(inputs)
    out = render_report(model, has_policy=False)
    assert set(out.charts) == {"pools", "heatmap"}
    assert "No topic charts: the run has no topic profile." in out.html
    assert "plan/plan.json is missing (the plan stage did not run)" in out.markdown
    assert "No audit: audit/findings.json could not be read" in out.markdown


def test_not_a_run_directory(tmp_path):
    with pytest.raises(InputError, match="not a directory"):
        load_run(tmp_path / "nope")
