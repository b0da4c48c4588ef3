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


def _markdown(data_dir, policy=POLICY, without=(), profile=None):
    d = data_dir / "kafka-formats"
    snap = build_snapshot((d / "kafka-topics-describe-4.3.txt").read_text(),
                          (d / "kafka-log-dirs-describe-4.3.txt").read_text(),
                          parse_inventory_toml(KAFKA4_INVENTORY.replace('rack = "r', 'pool = "core"\nrack = "r')),
                          cluster="k4")
    snap = dataclasses.replace(snap, topics=tuple(t for t in snap.topics if t.topic not in without),
                               partitions=tuple(p for p in snap.partitions if p.topic not in without))
    run = RunInputs("run", snapshot=snap, policy=parse_policy(policy, source="pools.toml") if policy else None,
                    profile=profile)
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


def test_the_remote_side_of_tiered_topics_and_equal_jbod_dirs_are_said_to_be_unmeasured(data_dir):
    text = _markdown(data_dir)
    section = text[text.index("## Pool capacity and utilisation"):text.index("## Losing the largest broker")]
    assert "1 tiered topic(s) (`clicks`): disk counts their local bytes only" in section
    assert "The remote side of 1 tiered topic(s) (`clicks`) is unmeasured" in section
    assert "| topic | local bytes" not in section
    assert "2 JBOD broker(s) (1, 4): the inventory gives no capacity per log dir" in section
    assert "tiered topic(s)" not in _markdown(data_dir, without={"clicks"})


def test_an_at_min_isr_partition_is_in_the_n_minus_1_read_only_list(data_dir):
    d = data_dir / "kafka-formats"
    describe = (d / "kafka-topics-describe-4.3.txt").read_text().replace(
        "Partition: 0\tLeader: 1\tReplicas: 1,2,5\tIsr: 1,2,5", "Partition: 0\tLeader: 1\tReplicas: 1,2,5\tIsr: 1,2")
    snap = build_snapshot(describe, (d / "kafka-log-dirs-describe-4.3.txt").read_text(),
                          parse_inventory_toml(KAFKA4_INVENTORY.replace('rack = "r', 'pool = "core"\nrack = "r')),
                          cluster="k4")
    run = RunInputs("run", snapshot=snap, policy=parse_policy(POLICY, source="pools.toml"))
    text = render_markdown(report_document(build_model(run), set(), has_policy=True))
    section = text[text.index("## Losing the largest broker"):]
    # orders (min ISR 2 of RF 3) survives one loss with every replica in sync, not with orders-0 at its min ISR
    assert "2 topic(s) go read-only" in section and "| orders " in section


def test_measured_remote_bytes_and_the_remote_served_share_of_network_out_are_shown_apart(data_dir):
    """With the history's remote-storage metrics, the report gives local and remote bytes apart and the share of the
    consumers' bytes-out that remote fetch served; a tiered topic without them stays unmeasured by name."""
    from tests.pools.test_contracts import _profile_row

    clicks = dataclasses.replace(_profile_row("clicks"), storage_bytes=3 * 10**9, bytes_out_p99=4e6,
                                 remote_log_size_bytes=7 * 10**12, remote_copy_bytes_p99=2.5e6,
                                 remote_fetch_bytes_p99=1e6)
    text = _markdown(data_dir, profile={"clicks": clicks, "orders": _profile_row("orders")})
    section = text[text.index("## Pool capacity and utilisation"):text.index("## Losing the largest broker")]
    row = next(line for line in section.splitlines() if line.startswith("| clicks "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "clicks" and cells[6] == "25.0 %", cells  # 1 MB/s of 4 MB/s bytes-out came from remote
    assert cells[1] != cells[2] and "7" in cells[2], cells
    assert "counts in its network out" in section and "unmeasured" not in section
    # a non-tiered topic with remote metrics (remote.storage.enable turned off, its remote log still there) is listed
    orders = dataclasses.replace(_profile_row("orders"), remote_log_size_bytes=10**9)
    text = _markdown(data_dir, profile={"clicks": _profile_row("clicks"), "orders": orders})
    assert "2 tiered topic(s) (`clicks`, `orders`)" in text
    assert "The remote side of 1 tiered topic(s) (`clicks`) is unmeasured" in text
    # its remote bytes measured, its copy and fetch rates not: each named unmeasured in its row
    assert next(line for line in text.splitlines() if line.startswith("| orders ")).split("|")[3:6] == [
        " 1.00 GB ", " unmeasured ", " unmeasured "]
