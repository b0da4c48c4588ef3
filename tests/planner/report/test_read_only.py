"""N−1 in the report names the topics whose own min.insync.replicas a broker loss breaks (Kafka 4.x capture)."""

from __future__ import annotations

import dataclasses

from planner.report.inputs import RunInputs
from planner.report.model import build_model
from planner.report.render import render_markdown, report_document
from pools.kafka_formats.inventory import parse_inventory_toml
from pools.policy import parse_policy
from pools.snapshot_build import build_snapshot
from tests.pools.audit.test_kafka4 import POLICY
from tests.pools.test_snapshot_build import KAFKA4_INVENTORY


def _markdown(data_dir, policy=POLICY, without=()):
    d = data_dir / "kafka-formats"
    snap = build_snapshot((d / "kafka-topics-describe-4.3.txt").read_text(),
                          (d / "kafka-log-dirs-describe-4.3.txt").read_text(),
                          parse_inventory_toml(KAFKA4_INVENTORY.replace('rack = "r', 'pool = "core"\nrack = "r')),
                          cluster="k4")
    snap = dataclasses.replace(snap, topics=tuple(t for t in snap.topics if t.topic not in without),
                               partitions=tuple(p for p in snap.partitions if p.topic not in without))
    run = RunInputs("run", snapshot=snap, policy=parse_policy(policy, source="pools.toml") if policy else None)
    return render_markdown(report_document(build_model(run), set(), has_policy=policy is not None))


def test_n_minus_1_names_the_topics_that_go_read_only(data_dir):
    text = _markdown(data_dir)
    section = text[text.index("## Losing the largest broker"):]
    assert "1 topic(s) go read-only for `acks=all` producers" in section
    row = next(line for line in section.splitlines() if line.startswith("| audit "))
    assert [c.strip() for c in row.strip("|").split("|")] == ["audit", "core", "3", "3", "4", "1", "1"]
    assert "| orders " not in section and "| clicks " not in section  # min ISR 2 of RF 3 survives one loss


def test_n_minus_1_loses_a_broker_even_where_the_policy_tolerates_none(data_dir):
    tolerant = POLICY.replace("tolerated_broker_failures = 1", "tolerated_broker_failures = 0")
    assert "1 topic(s) go read-only" in _markdown(data_dir, tolerant)


def test_a_cluster_that_survives_says_so_and_no_policy_says_nothing(data_dir):
    assert "No topic drops below its own `min.insync.replicas`" in _markdown(data_dir, without={"audit"})
    assert "read-only" not in _markdown(data_dir, None)
