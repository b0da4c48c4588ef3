"""``poolplan emit --log-dir-placement balance``: new replicas on JBOD brokers go to their emptiest open dir, and each
broker's dirs are evened out with moves inside it, in their own files with their own throttle."""

from __future__ import annotations

import dataclasses
import json

from planner.emit import EmitOptions, build_bundle
from planner.emit.log_dirs import LOG_DIR_BAND, balance_log_dirs
from planner.emit.log_dirs import _even_out
from planner.operations import operation_inputs, rebalance
from pools.health import cluster_health
from pools.kafka_formats import parse_reassignment_json
from pools.kafka_formats.inventory import parse_inventory_toml
from pools.snapshot_build import build_snapshot
from pools.throttle import INTRA_BROKER_THROTTLE_BPS
from tests.planner.operations.shapes import skewed_pool
from tests.pools.test_snapshot_build import KAFKA4_INVENTORY


def _jbod_pool():
    """`skewed_pool` with brokers 1 and 4 on two log dirs: 1 holds everything in /d1 (/d2 empty), 4 is empty."""
    s = skewed_pool()
    brokers = tuple(dataclasses.replace(b, log_dirs=("/d1", "/d2")) if b.id in (1, 4) else
                    dataclasses.replace(b, log_dirs=("/data",)) for b in s.snapshot.brokers)
    parts = tuple(dataclasses.replace(p, log_dirs=tuple("/d1" if b == 1 else "/data" for b in p.replicas))
                  for p in s.snapshot.partitions)
    return dataclasses.replace(s, snapshot=dataclasses.replace(s.snapshot, brokers=brokers, partitions=parts))


def _bundle(s, mode):
    plan = rebalance(operation_inputs(s.snapshot, s.policy, s.profile)).plan
    return plan, build_bundle(plan, s.snapshot, EmitOptions(log_dir_placement=mode))


def test_new_replicas_on_a_jbod_broker_fill_its_dirs_evenly():
    s = _jbod_pool()
    plan, files = _bundle(s, "balance")
    entries = parse_reassignment_json(files["reassignment.json"])
    on_4 = [(e, e.log_dirs[e.replicas.index(4)]) for e in entries if 4 in e.replicas]
    assert on_4 and {d for _, d in on_4} == {"/d1", "/d2"}
    sizes = {(p.topic, p.partition): p.size_bytes for p in s.snapshot.partitions}
    fill = {d: sum(sizes[e.topic, e.partition] for e, x in on_4 if x == d) for d in ("/d1", "/d2")}
    assert abs(fill["/d1"] - fill["/d2"]) <= max(sizes.values())
    # replicas elsewhere keep "any"; the batches name the same dirs
    assert all(d == "any" for e in entries for b, d in zip(e.replicas, e.log_dirs) if b != 4)
    batched = {(e.topic, e.partition): e for f, t in files.items() if f.startswith("batches/0")
               for e in parse_reassignment_json(t) if 4 in e.replicas}
    assert {(e.topic, e.partition): d for e, d in on_4} == \
        {k: e.log_dirs[e.replicas.index(4)] for k, e in batched.items()}


def test_a_full_dir_is_evened_out_inside_its_broker_with_its_own_throttle():
    s = _jbod_pool()
    plan, files = _bundle(s, "balance")
    moved = {(m.topic, m.partition) for m in plan.moves}
    inside = parse_reassignment_json(files["log-dirs/broker-1.json"])
    current = {(p.topic, p.partition): p.replicas for p in s.snapshot.partitions}
    assert inside and all(e.replicas == current[e.topic, e.partition] for e in inside)  # replicas unchanged
    assert all((e.topic, e.partition) not in moved for e in inside)  # the plan's moves are left to the batches
    assert all(d == ("/d2" if b == 1 else "any") for e in inside for b, d in zip(e.replicas, e.log_dirs))
    summary = json.loads(files["summary.json"])["log_dirs"]["brokers"]["1"]
    before = [v["after_plan"] for v in summary["fill"].values()]
    after = [v["after_moves"] for v in summary["fill"].values()]
    assert summary["moves"] == len(inside) and max(after) - min(after) < max(before) - min(before)
    assert sum(after) == sum(before)
    runbook = files["runbook.md"]
    assert (f"--reassignment-json-file log-dirs/broker-1.json --execute --replica-alter-log-dirs-throttle "
            f"{INTRA_BROKER_THROTTLE_BPS}") in runbook
    assert runbook.index("## 2b. Moves between log dirs") < runbook.index("## 3. Rolling back")


def test_without_balance_the_broker_chooses():
    plan, files = _bundle(_jbod_pool(), "any")
    assert not [f for f in files if f.startswith("log-dirs/")] and "log_dirs" not in json.loads(files["summary.json"])
    assert all(d == "any" for e in parse_reassignment_json(files["reassignment.json"]) for d in e.log_dirs)


def test_a_cordoned_dir_is_never_a_target_and_a_lone_giant_replica_stays(data_dir):
    d = data_dir / "kafka-formats"
    snap = build_snapshot((d / "kafka-topics-describe-4.3.txt").read_text(),
                          (d / "kafka-log-dirs-describe-4.3.txt").read_text(), parse_inventory_toml(KAFKA4_INVENTORY),
                          cluster="k4", broker_configs_text=(d / "kafka-configs-describe-brokers-4.3.txt").read_text())
    # audit-0 joins broker 1, whose /data/d2 is cordoned: it goes to the emptiest open dir, /data/d3
    out = balance_log_dirs(snap, {("audit", 0): (1, 5, 6)}, cluster_health(snap))
    assert dict(out.targets) == {("audit", 0, 1): "/data/d3"}
    assert out.fill[1]["/data/d3"] == (45 * 10**9, 45 * 10**9)
    # /data/d1 holds one 900 GB replica: moving it would only move the imbalance, so nothing moves
    assert out.moves == {}
    assert out.fill[1]["/data/d1"] == (900 * 10**9, 900 * 10**9)  # (before, after): the giant stays where it is
    assert set(out.fill[1]) == {"/data/d1", "/data/d3", "/data/d4"}  # the cordoned /data/d2 is no target


def test_moves_stop_within_the_band_when_the_replicas_allow_it():
    used = {"/a": 100, "/b": 0}
    movable = {"/a": [(10, "t", i) for i in range(10)], "/b": []}
    moves = _even_out(1, ["/a", "/b"], used, movable, LOG_DIR_BAND, {"/a": 100, "/b": 100})
    assert len(moves) == 5 and used == {"/a": 50, "/b": 50}
    assert {m.to_dir for m in moves} == {"/b"} and sum(m.size_bytes for m in moves) == 50


def test_dirs_of_unequal_size_are_evened_by_fill_not_bytes():
    from pools.snapshot import Broker, Capacity, ClusterSnapshot, PartitionState

    def balanced(sized):
        # a 3 TB broker: /big 2 TB and /small 1 TB when the inventory says so, else 1.5 TB each; 1.2 TB in /big
        jbod = Broker(1, None, Capacity(1, 1, 3e12, 100), log_dirs=("/big", "/small"),
                      log_dir_capacities=(("/big", 2 * 10**12), ("/small", 10**12)) if sized else ())
        parts = tuple(PartitionState("t", i, (1,), 1, (1,), log_dirs=("/big",), sizes=(10**11,)) for i in range(12))
        snap = ClusterSnapshot("c", (jbod,), (), parts)
        return balance_log_dirs(snap, {}, cluster_health(snap)).fill[1]

    # by fill: 1.2 TB over 3 TB is 40 %: /big keeps 0.8 TB (40 %), /small takes 0.4 TB (40 %)
    assert balanced(True) == {"/big": (12 * 10**11, 8 * 10**11), "/small": (0, 4 * 10**11)}
    # equal shares: 0.6 TB each
    assert balanced(False) == {"/big": (12 * 10**11, 6 * 10**11), "/small": (0, 6 * 10**11)}


def test_the_runbook_says_when_dirs_are_taken_as_equal():
    s = _jbod_pool()
    plan, files = _bundle(s, "balance")
    summary = json.loads(files["summary.json"])["log_dirs"]["brokers"]
    assert {b["capacities_from"] for b in summary.values()} == {"equal shares of the broker's disk"}
    assert "the inventory gives no capacity per log dir" in files["runbook.md"]
    sized = dataclasses.replace(s, snapshot=dataclasses.replace(s.snapshot, brokers=tuple(
        dataclasses.replace(b, log_dir_capacities=(("/d1", int(b.capacity.disk) // 2),
                                                   ("/d2", int(b.capacity.disk) - int(b.capacity.disk) // 2)))
        if b.id in (1, 4) else b for b in s.snapshot.brokers)))
    plan, files = _bundle(sized, "balance")
    summary = json.loads(files["summary.json"])["log_dirs"]["brokers"]
    assert {b["capacities_from"] for b in summary.values()} == {"inventory"}
    assert "the inventory gives no capacity per log dir" not in files["runbook.md"]
