"""`poolplan plan`: plan.json written deterministically; exit 1 with reasons when short; exit 2 on contradictions."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.random_clusters import profile_row, random_cluster
from planner.validator import validate_plan
from pools.demand import topic_demand
from pools.plan_file import load_plan
from pools.policy import PoolSpec, save_policy
from pools.profile import save_profile
from pools.snapshot import DIMENSIONS, Capacity, PartitionState, TopicState, save_snapshot


def _write(tmp: Path, snapshot, policy, profile) -> list[str]:
    save_snapshot(snapshot, tmp / "snapshot.json")
    save_policy(policy, tmp / "pools.toml")
    save_profile(tmp / "profile", profile)
    return ["--snapshot", str(tmp / "snapshot.json"), "--policy", str(tmp / "pools.toml"),
            "--profile", str(tmp / "profile")]


@pytest.mark.slow
def test_plan_writes_a_valid_reproducible_plan(tmp_path: Path, run_cli) -> None:
    snapshot, policy, profile = random_cluster(15, 40, 3, misplaced=0.2, seed=11)
    args = _write(tmp_path, snapshot, policy, profile)
    (tmp_path / "out").mkdir()  # an existing directory is fine
    code, out, err = run_cli("plan", *args, "--out", tmp_path / "out", "--time-limit", "30")
    assert code == 0, err
    assert "partitions move" in out and "solver HiGHS Optimal" in out
    text = (tmp_path / "out" / "plan.json").read_text()
    plan = load_plan(tmp_path / "out" / "plan.json")
    assert validate_plan(snapshot, policy, plan, topic_demand(snapshot, profile)) == []
    doc = json.loads(text)
    assert {"brokers", "topics", "partitions", "moved_bytes", "brokers_to_add", "solver", "utilisation",
            "warnings"} <= set(doc)
    assert set(doc["solver"]) == {"name", "status", "solution", "objective", "bound", "gap"}  # no wall time
    assert len(doc["partitions"]) == len(snapshot.partitions)
    code, _, _ = run_cli("plan", *args, "--out", tmp_path / "again", "--solver", "highs")
    assert code == 0 and (tmp_path / "again" / "plan.json").read_text() == text


@pytest.mark.slow  # the placement onto the brokers to buy runs to its work limits: about 30 s
def test_short_capacity_exits_1_with_reasons_and_still_writes_the_plan(tmp_path: Path, run_cli) -> None:
    snapshot, policy, profile = random_cluster(12, 30, 2, seed=1)
    small = Capacity(**{d: snapshot.brokers[0].capacity.get(d) / 4 for d in DIMENSIONS})
    snapshot = replace(snapshot, brokers=tuple(replace(b, capacity=small) for b in snapshot.brokers))
    args = _write(tmp_path, snapshot, policy, profile)
    # the placement ends at its work limits, not at the wall-clock net (a net that fires may leave a seed that is
    # not yet within headroom, which the validator below would rightly reject)
    code, _, err = run_cli("plan", *args, "--out", tmp_path / "out", "--time-limit", "600")
    assert code == 1
    assert "brokers to buy:" in err and "infeasible" not in err and "more broker(s) for" in err and "at 80% headroom" in err
    plan = load_plan(tmp_path / "out" / "plan.json")
    assert sum(plan.brokers_to_add.values()) == len(plan.planned_brokers) > 0
    first = max(b.id for b in snapshot.brokers) + 1  # the brokers still to buy: the next free ids, placed onto
    assert [b.id for b in plan.planned_brokers] == list(range(first, first + len(plan.planned_brokers)))
    assert {b.id for b in plan.planned_brokers} <= {b for m in plan.moves for b in m.adding}
    assert validate_plan(snapshot, policy, plan, topic_demand(snapshot, profile)) == []
    code, out, err = run_cli("emit", "--plan", tmp_path / "out" / "plan.json", "--snapshot", tmp_path / "snapshot.json",
                             "--out", tmp_path / "bundle")
    assert code == 0, err
    check = (tmp_path / "bundle" / "check-brokers.sh").read_text()
    assert f"expected='{first} " in check and "sh check-brokers.sh" in (tmp_path / "bundle" / "runbook.md").read_text()


@pytest.mark.parametrize(("ids", "message"), [
    ("500-520", None),
    ("500", "--new-broker-ids: the plan needs {n} new broker(s), got 1 id(s) (500)"),
    ("3,500-520", "--new-broker-ids: broker 3 is already in the cluster"),
    ("9-7", "Invalid value for '--new-broker-ids': expected ids such as 101,102 or 101-103, got '9-7'"),
])
def test_new_broker_ids_name_the_brokers_to_buy_or_exit_2(tmp_path: Path, run_cli, ids: str, message) -> None:
    snapshot, policy, profile = random_cluster(12, 30, 2, seed=1)
    small = Capacity(**{d: snapshot.brokers[0].capacity.get(d) / 4 for d in DIMENSIONS})
    snapshot = replace(snapshot, brokers=tuple(replace(b, capacity=small) for b in snapshot.brokers))
    args = _write(tmp_path, snapshot, policy, profile)
    code, _, err = run_cli("plan", *args, "--out", tmp_path / "out", "--new-broker-ids", ids, "--time-limit", "10")
    if message is None:
        plan = load_plan(tmp_path / "out" / "plan.json")
        assert code == 1 and [b.id for b in plan.planned_brokers] == list(range(500, 500 + len(plan.planned_brokers)))
        return
    n = 7  # what this cluster lacks (p0 4, p1 3)
    assert code == 2 and "Traceback" not in err and message.format(n=n) in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out" / "plan.json").exists()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: replace(p, pools=(replace(p.pools[0], brokers=(99,)),) + p.pools[1:]),
         "pool 'p0' pins broker(s) 99 that cluster 'synthetic-1' does not have"),
        (lambda p: replace(p, pools=p.pools + (PoolSpec("x", topics=(r"misc\..*",)), PoolSpec("y", topics=(r".*t0",)))),
         "conflicting selectors: topic 'misc.t0' is selected by pools 'x' and 'y'"),
    ],
)
def test_contradictory_policy_exits_2_naming_the_conflict(tmp_path: Path, run_cli, edit, message: str) -> None:
    snapshot, policy, profile = random_cluster(12, 30, 2, seed=1)
    args = _write(tmp_path, snapshot, edit(policy), profile)
    code, _, err = run_cli("plan", *args, "--out", tmp_path / "out")
    assert code == 2
    assert message in err.replace("\n", " ")
    assert "Traceback" not in err
    assert not (tmp_path / "out" / "plan.json").exists()


def test_consumer_groups_give_fan_out_where_bytes_out_is_missing(tmp_path: Path, run_cli, data_dir: Path) -> None:
    snapshot, policy, profile = random_cluster(12, 30, 2, seed=1)
    parts = tuple(PartitionState("orders", i, r.replicas, leader=r.replicas[0], sizes=r.sizes)
                  for i, r in enumerate(snapshot.partitions[:3]))
    snapshot = replace(snapshot, topics=snapshot.topics + (TopicState("orders"),),
                       partitions=snapshot.partitions + parts)
    profile = {**profile, "orders": profile_row("orders", 3, 1000.0, None, 1e6)}
    args = _write(tmp_path, snapshot, policy, profile)
    sample = (data_dir / "kafka-formats" / "kafka-consumer-groups-describe.txt").read_text()
    # the sample's "billing" group reads orders; a copy named "analytics" makes a fan-out of 2
    billing = "\n".join(line for line in sample.splitlines()[:5])
    groups = tmp_path / "groups.txt"
    groups.write_text(billing + "\n\n" + billing.replace("billing ", "analytics ") + "\n")
    assert run_cli("plan", *args, "--out", tmp_path / "one")[0] == 0
    assert run_cli("plan", *args, "--out", tmp_path / "many", "--consumer-groups", groups)[0] == 0
    one, many = (json.loads((tmp_path / d / "plan.json").read_text()) for d in ("one", "many"))
    pool = one["topics"]["orders"]
    # two groups read "orders" (no bytes-out in its profile): consumer traffic doubles
    extra = many["utilisation"]["pools"][pool]["nw_out"]["demand_forecast"] - \
        one["utilisation"]["pools"][pool]["nw_out"]["demand_forecast"]
    assert extra == pytest.approx(1000.0, abs=0.01)  # one more group × 1000 B/s bytes-in


def test_missing_consumer_groups_file_is_exit_2(tmp_path: Path, run_cli) -> None:
    snapshot, policy, profile = random_cluster(9, 10, 2, seed=1)
    args = _write(tmp_path, snapshot, policy, profile)
    code, _, err = run_cli("plan", *args, "--out", tmp_path / "out", "--consumer-groups", tmp_path / "nope.txt")
    assert code == 2 and "nope.txt: no such file" in err


@pytest.mark.slow
def test_sample_cluster_plan_isolates_tenants_and_beats_placing_from_scratch(tmp_path: Path, run_cli) -> None:
    from planner.placement import assign_replicas_to_brokers
    from pools.policy import load_policy
    from pools.snapshot import load_snapshot

    sample = tmp_path / "sample"
    assert run_cli("sample", "--out", sample, "--days", "14", "--step", "60")[0] == 0  # two weeks suffice here
    assert run_cli("snapshot", "--describe", sample / "kafka" / "topics-describe.txt", "--log-dirs",
                   sample / "kafka" / "log-dirs", "--inventory", sample / "brokers.toml",
                   "--out", tmp_path / "snapshot.json")[0] == 0
    snapshot = load_snapshot(tmp_path / "snapshot.json")
    truth = json.loads((sample / "truth.json").read_text())
    profile = {}
    for name, t in truth["topics"].items():  # the profile `poolplan ingest` would write, from the truth numbers
        storage = sum(p.size_bytes for p in snapshot.partitions_by_topic.get(name, ()))
        profile[name] = profile_row(name, t["partitions"], t["bytes_in_p99_last_day"], t["bytes_out_mean_last_day"],
                                    storage, (1 + t["growth_per_day"]) ** 90)
    save_profile(tmp_path / "profile", profile)
    code, _, err = run_cli("plan", "--snapshot", tmp_path / "snapshot.json", "--policy", sample / "pools.toml",
                           "--profile", tmp_path / "profile", "--out", tmp_path / "plan")
    assert code == 0, err
    plan = load_plan(tmp_path / "plan" / "plan.json")
    policy = load_policy(sample / "pools.toml")
    assert validate_plan(snapshot, policy, plan, topic_demand(snapshot, profile)) == []
    for name, t in truth["topics"].items():  # every tenant's topics in one pool, on that pool's brokers only
        if t["tenant"] is not None:
            assert plan.topics[name] in {p["name"] for p in truth["pools"] if t["tenant"] in p["tenants"]}
    scratch = 0
    for topic, pool in plan.topics.items():
        brokers = sorted((b.id, b.rack) for b in snapshot.brokers if plan.brokers[b.id] == pool)
        parts = snapshot.partitions_by_topic[topic]
        target = assign_replicas_to_brokers(brokers, len(parts), len(parts[0].replicas), fixed_start_index=0)
        scratch += sum(p.size_bytes * sum(b not in p.replicas for b in target[p.partition]) for p in parts)
    assert 0 < plan.moved_bytes < scratch


def test_the_policys_horizon_counts_and_the_option_overrides_it(tmp_path: Path, run_cli) -> None:
    from pools.demand import grow

    # a lightly loaded cluster: the placement has little to relieve, the test is about the horizon
    snapshot, policy, profile = random_cluster(9, 12, 2, load=0.2, seed=4)
    # the profile's forecasts are at 90 days, growing 0.3 %/day; the policy plans for 30
    profile = {t: replace(r, bytes_in_p99_growth_per_day=0.003, forecast_bytes_in_p99=grow(r.bytes_in_p99, 0.003, 90))
               for t, r in profile.items()}
    policy = replace(policy, defaults=replace(policy.defaults, forecast_horizon_days=30))
    args = _write(tmp_path, snapshot, policy, profile)
    at = {}
    for days in (None, 90):
        out = tmp_path / f"plan-{days}"
        extra = [] if days is None else ["--horizon-days", str(days)]
        code, _, err = run_cli("plan", *args, *extra, "--out", out)
        assert code == 0, err
        plan = load_plan(out / "plan.json")
        at[plan.horizon_days] = sum(plan.utilisation.pool(p, "nw_in").demand_forecast
                                    for p in plan.utilisation.pool_names)
    expected = sum(grow(r.bytes_in_p99, 0.003, 30) * 3 for r in profile.values())  # nw_in = bytes-in x RF 3
    assert set(at) == {30, 90}
    assert at[30] == pytest.approx(expected, rel=1e-6)
    assert at[90] == pytest.approx(at[30] * 1.003 ** 60, rel=1e-6)


@pytest.mark.parametrize("rack", ["r0", "r1"])
def test_a_lost_rack_is_planned_without_shrinking_a_replication_factor(tmp_path: Path, run_cli, rack: str) -> None:
    """Rack ``rack``'s brokers are gone from the inventory (and their pins from the policy) while partitions still
    list them: the plan, a rebalance and a drain re-replicate where the pools have brokers and leave the rest
    as they are, with a warning; no traceback, no replication factor changed, no reassignment to a gone broker.
    The plan buys what the pools lack (on the racks the policy allows) and re-replicates everything, onto the
    brokers still to buy where needed."""
    snapshot, policy, profile = random_cluster(7, 12, 2, seed=1)
    gone = {b.id for b in snapshot.brokers if b.rack == rack}
    snapshot = replace(snapshot, brokers=tuple(b for b in snapshot.brokers if b.id not in gone))
    policy = replace(policy, pools=tuple(replace(p, brokers=tuple(set(p.brokers) - gone)) for p in policy.pools))
    args = _write(tmp_path, snapshot, policy, profile)
    demands = topic_demand(snapshot, profile)
    drained = max(b.id for b in snapshot.brokers)
    for command, extra in (("plan", ()), ("rebalance", ()), ("brokers", ("decommission", "--broker", drained))):
        out = tmp_path / command
        code, _, err = run_cli(command, *extra, *args, "--out", out)
        assert code in (0, 1) and "Traceback" not in err, err
        if not (out / "plan.json").exists():  # a refused drain: one line saying why
            assert command == "brokers" and err.startswith("infeasible:")
            continue
        plan = load_plan(out / "plan.json")
        assert not [v.message for v in validate_plan(snapshot, policy, plan, demands) if v.rule == "partitions"]
        assert all(len(m.replicas) == len(m.old_replicas) and not gone & set(m.adding) for m in plan.moves)
    plan = load_plan(tmp_path / "plan" / "plan.json")
    moved = {(m.topic, m.partition): m for m in plan.moves}
    stranded = [p for p in snapshot.partitions if gone & set(p.replicas)
                and ((p.topic, p.partition) not in moved or gone & set(moved[p.topic, p.partition].replicas))]
    assert plan.planned_brokers and not stranded
    assert {b.id for b in plan.planned_brokers} <= {b for m in plan.moves for b in m.adding}
    assert "that the snapshot lacks" in (tmp_path / "rebalance" / "plan.json").read_text()  # buys nothing
    # the bundle applies: its rollback restores every replica but those on the gone brokers, which keep their
    # replacement (Kafka rejects a reassignment naming an unregistered broker)
    code, _, err = run_cli("emit", "--plan", tmp_path / "plan" / "plan.json", "--snapshot", tmp_path / "snapshot.json",
                           "--out", tmp_path / "bundle")
    assert code == 0, err
    rollback = json.loads((tmp_path / "bundle" / "rollback.json").read_text())["partitions"]
    assert rollback and not gone & {b for e in rollback for b in e["replicas"]}


def test_remote_copy_and_fetch_load_the_leaders_network_in_plan_json(tmp_path: Path, run_cli) -> None:
    """A tiered topic's remote copy (network out) and remote fetch (network in) reach plan.json's broker loads
    through the profile, on the brokers that lead its partitions, and nowhere else; disk does not change."""
    snapshot, policy, profile = random_cluster(6, 6, 1, misplaced=0.0, load=0.2, seed=5)
    topic = sorted(profile)[0]
    tiered = dict(profile)
    copy, fetch = profile[topic].bytes_in_p99 * 0.6, profile[topic].bytes_in_p99 * 0.2
    tiered[topic] = replace(profile[topic], remote_copy_bytes_p99=copy, remote_fetch_bytes_p99=fetch,
                            remote_log_size_bytes=10**12)
    loads = {}
    for name, rows in (("plain", profile), ("tiered", tiered)):
        args = _write(tmp_path / name, snapshot, policy, list(rows.values()))
        code, _, err = run_cli("plan", *args, "--out", tmp_path / name / "out")
        assert code == 0, err
        loads[name] = json.loads((tmp_path / name / "out" / "plan.json").read_text())["utilisation"]["brokers"]
    parts = [p for p in snapshot.partitions if p.topic == topic]
    leads = {b: sum(1 for p in parts if p.leader == b) for b in {p.leader for p in parts}}
    growth = profile[topic].forecast_growth_factor
    for b, row in loads["tiered"].items():
        plain = loads["plain"][b]
        share = leads.get(int(b), 0) / len(parts)
        assert row["nw_in"]["now"] - plain["nw_in"]["now"] == pytest.approx(fetch * share, abs=1), b
        assert row["nw_out"]["now"] - plain["nw_out"]["now"] == pytest.approx(copy * share, abs=1), b
        assert row["nw_out"]["before"] - plain["nw_out"]["before"] == pytest.approx(copy * growth * share, abs=1), b
        assert row["disk"]["now"] == plain["disk"]["now"] and row["disk"]["before"] == plain["disk"]["before"]
    assert any(leads.values())
