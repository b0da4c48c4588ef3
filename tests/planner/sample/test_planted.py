"""Every planted problem is in the files, and nothing else of those kinds: checked on the snapshot the
files give, directly and through the audit."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pools.kafka_formats.inventory import parse_inventory_toml
from pools.policy import parse_policy
from planner.sample import SampleSpec, sample_files
from pools.snapshot_build import build_snapshot
from tests.plugin import examples

PLANTED_KINDS = {
    "replica_outside_pool", "broker_mixed_pools", "broker_without_pool", "topic_without_pool", "rack_shared",
    "under_replicated", "at_min_isr", "under_min_isr", "offline_partition", "reassignment_in_progress", "log_dir_error",
    "replica_count_over_limit", "leader_not_preferred",
}


def _load(files: dict[str, str]):
    final = sorted(p for p in files if p.startswith("kafka/log-dirs/"))[-1]
    snapshot = build_snapshot(files["kafka/topics-describe.txt"], files[final],
                              parse_inventory_toml(files["brokers.toml"]), cluster="sample")
    return snapshot, parse_policy(files["pools.toml"]), json.loads(files["truth.json"])


def _kinds(truth) -> set[str]:
    """The planted kinds, the dropped follower's as ``under_replicated`` whether or not it left the partition at its
    min ISR (``at_min_isr``): the sample plants one of the two."""
    kinds = [k[0] for k in _planted(truth)]
    assert kinds.count("under_replicated") + kinds.count("at_min_isr") == 1
    return {"under_replicated" if k == "at_min_isr" else k for k in kinds} | {"at_min_isr"}


def _key(kind, topic=None, partition=None, broker=None, log_dir=None):
    return (kind, topic, partition, broker, log_dir)


def _independent_findings(snapshot, policy) -> set[tuple]:
    """The planted kinds, recomputed from the snapshot with the audit's precedence but none of its code."""
    rack = {b.id: b.rack for b in snapshot.brokers}
    pool_of = {b.id: b.pool for b in snapshot.brokers}
    found = set()
    for p in snapshot.partitions:
        tp = policy.resolve(p.topic).candidates
        rf = len(p.replicas) - len(p.adding_replicas)  # as kafka-topics.sh counts it
        if p.leader is None:
            found.add(_key("offline_partition", p.topic, p.partition))
        elif len(p.isr) < snapshot.topic_by_name[p.topic].min_insync_replicas:
            found.add(_key("under_min_isr", p.topic, p.partition))
        elif len(p.isr) == snapshot.topic_by_name[p.topic].min_insync_replicas < rf:
            found.add(_key("at_min_isr", p.topic, p.partition))
        elif len(p.isr) < rf:
            found.add(_key("under_replicated", p.topic, p.partition))
        if p.reassigning:
            found.add(_key("reassignment_in_progress", p.topic, p.partition))
        elif p.leader is not None and p.leader != p.replicas[0]:
            found.add(_key("leader_not_preferred", p.topic, p.partition))
        target = [b for b in p.replicas if b not in p.removing_replicas]
        if len({rack[b] for b in target}) < len(target):
            found.add(_key("rack_shared", p.topic, p.partition))
        for b in p.replicas:
            if tp and pool_of.get(b) != tp[0]:
                found.add(_key("replica_outside_pool", p.topic, p.partition, b))
    for e in snapshot.log_dir_errors:
        found.add(_key("log_dir_error", broker=e.broker, log_dir=e.log_dir))
    for b in snapshot.brokers:
        pools = {policy.resolve(p.topic).candidates for p in snapshot.partitions if b.id in p.replicas}
        if len(pools - {()}) > 1:
            found.add(_key("broker_mixed_pools", broker=b.id))
        if b.pool is None:
            found.add(_key("broker_without_pool", broker=b.id))
            assert not any(b.id in p.replicas for p in snapshot.partitions)
        if sum(b.id in p.replicas for p in snapshot.partitions) > b.capacity.replicas:
            found.add(_key("replica_count_over_limit", broker=b.id))
    found |= {_key("topic_without_pool", t.topic) for t in snapshot.topics if not policy.resolve(t.topic).candidates}
    return found


def _planted(truth) -> set[tuple]:
    return {_key(**{k: v for k, v in p.items() if k != "pool"}) for p in truth["planted"]}


def test_planted_states_in_the_snapshot(tiny):
    snapshot, policy, truth = _load(tiny)
    assert _kinds(truth) == PLANTED_KINDS - {"replica_count_over_limit"}
    assert _independent_findings(snapshot, policy) == _planted(truth)


@pytest.mark.slow
@settings(max_examples=examples(8), suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), brokers=st.integers(6, 15), topics=st.integers(6, 24))
@example(seed=65, brokers=8, topics=6)  # the first pool's RF-3 replicas covered both racks of the second pool
def test_every_size_plants_exactly_its_problems(seed, brokers, topics):
    files = dict(sample_files(SampleSpec(seed=seed, brokers=brokers, topics=topics, days=2, step_s=60)))
    snapshot, policy, truth = _load(files)
    assert _kinds(truth) == PLANTED_KINDS - {"replica_count_over_limit"}
    assert _independent_findings(snapshot, policy) == _planted(truth)


@pytest.mark.parametrize("seed", [0, 3])
def test_audit_finds_exactly_the_planted_problems(seed):
    from pools.audit import audit

    files = dict(sample_files(SampleSpec(seed=seed, brokers=7, topics=8, days=2, step_s=60)))
    snapshot, policy, truth = _load(files)
    found = sorted(
        (f.kind, f.topic or "", -1 if f.partition is None else f.partition, -1 if f.broker is None else f.broker)
        for f in audit(snapshot, policy, None) if f.kind in PLANTED_KINDS
    )
    expected = sorted(
        (p["kind"], p.get("topic", ""), p.get("partition", -1), p.get("broker", -1)) for p in truth["planted"]
    )
    assert found == expected


def test_misplaced_replicas_can_move_back(tiny):
    """The policy's pins and the inventory tags are satisfiable: each misplaced replica's pool has a broker
    with a rack the partition's other replicas do not use."""
    snapshot, policy, truth = _load(tiny)
    rack = {b.id: b.rack for b in snapshot.brokers}
    parts = {(p.topic, p.partition): p for p in snapshot.partitions}
    for p in (p for p in truth["planted"] if p["kind"] == "replica_outside_pool"):
        part = parts[(p["topic"], p["partition"])]
        others = {rack[b] for b in part.replicas if b != p["broker"]}
        home = [b.id for b in snapshot.brokers if b.pool == p["pool"] and b.id not in part.replicas]
        assert any(rack[b] not in others for b in home)
        assert policy.pinned_pool.get(p["broker"]) != p["pool"]
