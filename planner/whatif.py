"""What-if: a run's inputs changed by a scenario, planned and reported again, compared with the run.

A scenario changes the inputs, never the method: the run's snapshot, profile and policy are copied with the changes
into ``OUT`` (``snapshot.json``, ``profile/``, ``pools.toml``, ``scenario.toml``, and ``lost_racks.json`` for a lost
rack), planned by the plan stage
(``OUT/plan``) and reported by the report stage compared with the run (``OUT/report``). Its figures are therefore
those of a full run made with the changed inputs.

Scenario file (TOML; each table optional and repeatable)::

    [[demand]]              # a tenant's or a pool's topics at k times their measured and forecast traffic and size
                            # (the size now no more than the topic's retention keeps)
    tenant = "ads"          # or pool = "stream" (the topics the run's plan puts there)
    factor = 2.0
    [[add_brokers]]         # N brokers of the policy's [new_broker] type join a pool
    pool = "stream"
    count = 2
    [[move_tenant]]         # a tenant's topics go to another pool (the pools listing it stop listing it)
    tenant = "ads"
    pool = "core"
    [[lose_rack]]           # the rack's brokers are gone (see `lose_rack`)
    rack = "r2"
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tomli_w

from pools.atomic import dump_json, write_bytes, write_text
from pools.demand import retention_capped
from pools.errors import InputError
from pools.files import read_bytes, read_text
from pools.plan_file import load_plan
from pools.policy import PoolPolicy, load_policy, save_policy
from pools.new_brokers import placeholder_brokers, spread_over_racks, taken_ids
from pools.profile import BACKTEST_FILE, TopicProfile, load_partition_profile, load_profile, save_profile
from pools.snapshot import Broker, ClusterSnapshot, load_snapshot, save_snapshot  # noqa: F401 (the doctests use Broker)

__all__ = ["Scenario", "load_scenario", "apply_scenario", "scale_row", "lose_rack", "relax_rack_rules",
           "lost_partitions",
           "LOST_RACKS_FILE", "SCALED_FIELDS"]

#: What a ``[[lose_rack]]`` scenario does to the partitions (`lost_partitions`), written into the what-if's OUT.
LOST_RACKS_FILE = "lost_racks.json"

#: The profile columns a demand factor multiplies: rates, sizes and forecasts, the tiered ones included (growth per
#: day is unchanged).
SCALED_FIELDS = ("bytes_in_p50", "bytes_in_p95", "bytes_in_p99", "bytes_in_max", "bytes_out_p95", "bytes_out_p99",
                 "bytes_out_max", "messages_in_p99", "storage_bytes", "forecast_bytes_in_p99",
                 "forecast_bytes_in_p99_low", "forecast_bytes_in_p99_high", "forecast_storage_bytes",
                 "forecast_storage_low", "forecast_storage_high", "remote_log_size_bytes", "remote_copy_bytes_p99",
                 "remote_fetch_bytes_p99")
#: The scaled columns that hold whole bytes.
_WHOLE = ("storage_bytes", "remote_log_size_bytes")


@dataclass(frozen=True)
class Scenario:
    """The changes: ``demand`` (``("tenant" | "pool", name, factor)``), ``add_brokers`` (``(pool, count)``),
    ``move_tenant`` (``(tenant, pool)``) and ``lose_rack`` (rack names)."""

    demand: tuple[tuple[str, str, float], ...] = ()
    add_brokers: tuple[tuple[str, int], ...] = ()
    move_tenant: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    lose_rack: tuple[str, ...] = ()

    def to_toml(self) -> str:
        doc: dict[str, Any] = {}
        if self.demand:
            doc["demand"] = [{kind: name, "factor": k} for kind, name, k in self.demand]
        if self.add_brokers:
            doc["add_brokers"] = [{"pool": p, "count": n} for p, n in self.add_brokers]
        if self.move_tenant:
            doc["move_tenant"] = [{"tenant": t, "pool": p} for t, p in self.move_tenant]
        if self.lose_rack:
            doc["lose_rack"] = [{"rack": r} for r in self.lose_rack]
        return tomli_w.dumps(doc)

    def __bool__(self) -> bool:
        return bool(self.demand or self.add_brokers or self.move_tenant or self.lose_rack)


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read a scenario file (see the module docstring).

    Raises
    ------
    InputError
        Naming the file and the field: not TOML, an unknown table or key, a factor that is not a positive finite
        number, a count that is not a positive integer, a name that is not a non-empty string.
    """
    try:
        doc = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from None
    unknown = sorted(set(doc) - {"demand", "add_brokers", "move_tenant", "lose_rack"})
    if unknown:
        raise InputError(f"{path}: {unknown[0]}: unknown table (expected demand, add_brokers, move_tenant or "
                         "lose_rack)")
    out: dict[str, list] = {"demand": [], "add_brokers": [], "move_tenant": [], "lose_rack": []}
    for table, entries in doc.items():
        if not isinstance(entries, list):
            raise InputError(f"{path}: {table}: expected an array of tables ([[{table}]])")
        for i, entry in enumerate(entries):
            where = f"{path}: {table}[{i}]"
            if table == "demand":
                kinds = [k for k in ("tenant", "pool") if k in entry]
                _keys(where, entry, {"tenant", "pool", "factor"})
                if len(kinds) != 1:
                    raise InputError(f"{where}: expected exactly one of tenant or pool")
                out["demand"].append((kinds[0], _name(where, entry, kinds[0]), _factor(where, entry.get("factor"))))
            elif table == "lose_rack":
                _keys(where, entry, {"rack"})
                out["lose_rack"].append(_name(where, entry, "rack"))
            elif table == "add_brokers":
                _keys(where, entry, {"pool", "count"})
                out["add_brokers"].append((_name(where, entry, "pool"), _count(where, entry.get("count"))))
            else:
                _keys(where, entry, {"tenant", "pool"})
                out["move_tenant"].append((_name(where, entry, "tenant"), _name(where, entry, "pool")))
    return Scenario(tuple(out["demand"]), tuple(out["add_brokers"]), tuple(out["move_tenant"]), tuple(out["lose_rack"]))


def scale_row(row: TopicProfile, factor: float) -> TopicProfile:
    """A profile row with its rates, sizes and forecasts (`SCALED_FIELDS`) ``factor`` times as large.

    Examples
    --------
    >>> from dataclasses import fields
    >>> row = TopicProfile(**{f.name: 1 for f in fields(TopicProfile)} | {"topic": "t", "bytes_out_p99": None})
    >>> scaled = scale_row(row, 2.5)
    >>> scaled.bytes_in_p99, scaled.storage_bytes, scaled.bytes_out_p99, scaled.bytes_in_p99_growth_per_day
    (2.5, 2, None, 1)
    >>> scaled.remote_log_size_bytes, scaled.remote_copy_bytes_p99, scale_row(row, 3).remote_fetch_bytes_p99
    (2, 2.5, 3.0)
    """
    changes: dict[str, Any] = {}
    for name in SCALED_FIELDS:
        value = getattr(row, name)
        if value is not None:
            changes[name] = round(value * factor) if name in _WHOLE else float(value) * factor
    return replace(row, **changes)


def apply_scenario(run_dir: str | os.PathLike[str], policy_path: str | os.PathLike[str], scenario: Scenario,
                   out_dir: str | os.PathLike[str]) -> tuple[Path, Path, Path]:
    """Write the run's snapshot, profile and policy with ``scenario`` applied into ``out_dir``; return the paths of
    the snapshot, the profile directory and the policy.

    Raises
    ------
    InputError
        For a run without snapshot.json or profile/, an unknown tenant, pool or rack, or brokers to add without a
        ``[new_broker]`` type in the policy.
    """
    run, out = Path(run_dir), Path(out_dir)
    for name in ("snapshot.json", "profile"):
        if not (run / name).exists():
            raise InputError(f"{run / name}: missing (a what-if needs the run's snapshot and profile)")
    snapshot = load_snapshot(run / "snapshot.json")
    profile = load_profile(run / "profile")
    partitions = load_partition_profile(run / "profile") if (run / "profile" / "partition_profile.parquet").exists() \
        else None
    policy = load_policy(policy_path)
    plan = load_plan(run / "plan" / "plan.json") if (run / "plan" / "plan.json").exists() else None
    pools = set(policy.pool_names)
    tenants = {t.name for t in policy.tenants}
    for kind, name, k in scenario.demand:
        known = tenants if kind == "tenant" else pools
        if name not in known:
            raise InputError(f"scenario: demand: unknown {kind} {name!r} (the policy has {', '.join(sorted(known))})")
        for topic, row in sorted(profile.items()):
            if _member(topic, kind, name, policy, plan):
                profile[topic] = _kept(scale_row(row, k), snapshot)
    gone: frozenset[int] = frozenset()
    for rack in scenario.lose_rack:
        if rack not in snapshot.racks:
            raise InputError(f"scenario: lose_rack: unknown rack {rack!r} (the snapshot has "
                             f"{', '.join(snapshot.racks) or 'no racks'})")
        snapshot, lost = lose_rack(snapshot, rack)
        gone |= lost
        policy = replace(policy, pools=tuple(replace(p, brokers=tuple(b for b in p.brokers if b not in lost))
                                             for p in policy.pools))
        if policy.new_broker is not None and rack in policy.new_broker.racks:  # no new broker goes there either
            policy = replace(policy, new_broker=replace(
                policy.new_broker, racks=tuple(r for r in policy.new_broker.racks if r != rack)))
    for pool, count in scenario.add_brokers:
        if pool not in pools:
            raise InputError(f"scenario: add_brokers: unknown pool {pool!r}")
        snapshot = _add_brokers(snapshot, policy, pool, count)  # after a lost rack: on the racks left
    for tenant, pool in scenario.move_tenant:
        if tenant not in tenants or pool not in pools:
            raise InputError(f"scenario: move_tenant: unknown tenant {tenant!r} or pool {pool!r}")
        policy = replace(policy, pools=tuple(
            replace(p, tenants=tuple(t for t in p.tenants if t != tenant) + ((tenant,) if p.name == pool else ()))
            for p in policy.pools))
    if scenario.lose_rack:
        left = set(snapshot.racks) | set(policy.new_broker.racks if policy.new_broker else ())
        policy, relaxed = relax_rack_rules(policy, snapshot, len(left), scenario.lose_rack)
        write_text(out / LOST_RACKS_FILE, dump_json({"racks": list(scenario.lose_rack), "brokers": sorted(gone),
                                                     "racks_left": sorted(left), "relaxed": relaxed,
                                                     **lost_partitions(snapshot, gone, len(left))}))
    save_snapshot(snapshot, out / "snapshot.json")
    save_profile(out / "profile", profile, list((partitions or {}).values()))
    if (run / "profile" / BACKTEST_FILE).exists():  # the forecast's calibration is the run's
        write_bytes(out / "profile" / BACKTEST_FILE, read_bytes(run / "profile" / BACKTEST_FILE))
    save_policy(policy, out / "pools.toml")
    write_text(out / "scenario.toml", scenario.to_toml())
    return out / "snapshot.json", out / "profile", out / "pools.toml"


def lose_rack(snapshot: ClusterSnapshot, rack: str) -> tuple[ClusterSnapshot, frozenset[int]]:
    """The snapshot as Kafka shows it once every broker of ``rack`` is gone, and the ids of those brokers.

    The brokers leave the snapshot (the inventory has them no more). Each partition keeps its replica assignment
    (the controller keeps the dead ids until a reassignment removes them); its ISR loses the dead brokers (an ISR
    that would be empty keeps its last members, as Kafka's does when the last in-sync replica dies), and a dead
    leader is replaced by the first replica in assignment order that is alive and in the ISR, or by none (offline:
    unclean election is off) — Kafka's offline-partition leader election. A partition already without a leader
    stays so (its live replicas could not lead before the loss either). ELR is left as it is.

    Examples
    --------
    >>> from pools.snapshot import Capacity, PartitionState
    >>> snap = ClusterSnapshot("c", tuple(Broker(i, r, Capacity(1, 1, 1, 1)) for i, r in ((1, "a"), (2, "b"),
    ...                        (3, "b"))), (), (PartitionState("t", 0, (2, 1, 3), leader=2, isr=(2, 1, 3)),
    ...                                     PartitionState("t", 1, (2, 3), leader=3, isr=(3, 2)),
    ...                                     PartitionState("t", 2, (1, 3), leader=None, isr=(1,))))
    >>> after, lost = lose_rack(snap, "b")
    >>> sorted(lost), [b.id for b in after.brokers], [(p.replicas, p.leader, p.isr) for p in after.partitions]
    ([2, 3], [1], [((2, 1, 3), 1, (1,)), ((2, 3), None, (3, 2)), ((1, 3), None, (1,))])
    """
    lost = frozenset(b.id for b in snapshot.brokers if b.rack == rack)
    partitions = []
    for p in snapshot.partitions:
        if not lost & set(p.replicas):
            partitions.append(p)
            continue
        isr = tuple(b for b in p.isr if b not in lost) or p.isr
        leader = p.leader if p.leader not in lost else \
            next((b for b in p.replicas if b not in lost and b in isr), None)  # offline before stays offline
        partitions.append(replace(p, leader=leader, isr=isr))
    return replace(snapshot, brokers=tuple(b for b in snapshot.brokers if b.id not in lost),
                   partitions=tuple(partitions)), lost


def relax_rack_rules(policy: PoolPolicy, snapshot: ClusterSnapshot, racks_left: int,
                     lost: tuple[str, ...]) -> tuple[PoolPolicy, list[str]]:
    """The policy's rack rules as far as the ``racks_left`` racks allow, and each rule relaxed, in words.

    A pool's ``min_racks`` above the racks left becomes the racks left; a replication factor above them makes
    ``[defaults] rf_above_racks = "wrap"``: the replicas wrap around the racks left as Kafka's rack-aware
    assignment does (every rack holds one, as `pools.pool_rules.racks_required` counts). The plan stage then
    plans the brokers left instead of refusing; ``plan`` and ``run`` on the run's own policy still refuse.

    >>> from pools.policy import parse_policy
    >>> from pools.snapshot import PartitionState
    >>> policy = parse_policy('[[pool]]\\nname = "core"\\nmin_racks = 3\\n[[pool]]\\nname = "b"\\nmin_racks = 2')
    >>> snap = ClusterSnapshot("c", (), (), (PartitionState("t", 0, (1, 2, 3)),))
    >>> relaxed, notes = relax_rack_rules(policy, snap, 2, ("r3",))
    >>> [p.min_racks for p in relaxed.pools], relaxed.defaults.rf_above_racks
    ([2, 2], 'wrap')
    >>> print(*notes, sep="\\n")
    pool 'core': min_racks 3 → 2: rack r3 lost
    replication factor 3 above 2 racks: replicas wrap around the racks left (rf_above_racks refuse → wrap): rack r3 lost
    """
    why = f"{'rack' if len(lost) == 1 else 'racks'} {', '.join(lost)} lost"
    notes = []
    pools = []
    for pool in policy.pools:
        if pool.min_racks is not None and pool.min_racks > racks_left:
            notes.append(f"pool {pool.name!r}: min_racks {pool.min_racks} → {max(racks_left, 1)}: {why}")
            pool = replace(pool, min_racks=max(racks_left, 1))
        pools.append(pool)
    policy = replace(policy, pools=tuple(pools))
    rf = max((len(p.replicas) for p in snapshot.partitions), default=0)
    if rf > racks_left and policy.defaults.rf_above_racks == "refuse":
        notes.append(f"replication factor {rf} above {racks_left} racks: replicas wrap around the racks left "
                     f"(rf_above_racks refuse → wrap): {why}")
        policy = replace(policy, defaults=replace(policy.defaults, rf_above_racks="wrap"))
    return policy, notes


def lost_partitions(snapshot: ClusterSnapshot, lost: frozenset[int], racks_left: int) -> dict[str, Any]:
    """What losing the brokers ``lost`` does to the partitions of ``snapshot`` (as `lose_rack` left it):
    ``under_replicated`` (a replica on a lost broker, a leader left), ``offline`` (no leader left) and
    ``rf_unmet`` (a replication factor above the ``racks_left`` racks any broker can still be on, so no
    reassignment restores rack-aware placement), each a sorted list of ``topic-partition``.

    >>> from pools.snapshot import Capacity, PartitionState
    >>> snap = ClusterSnapshot("c", (Broker(1, "a", Capacity(1, 1, 1, 1)),), (),
    ...     (PartitionState("t", 0, (2, 1, 3), leader=1, isr=(1,)), PartitionState("t", 1, (2, 3), isr=(2, 3))))
    >>> lost_partitions(snap, frozenset({2, 3}), 1)
    {'under_replicated': ['t-0'], 'offline': ['t-1'], 'rf_unmet': ['t-0', 't-1']}
    """
    hit = [p for p in snapshot.partitions if lost & set(p.replicas)]
    name = lambda p: f"{p.topic}-{p.partition}"  # noqa: E731
    return {"under_replicated": [name(p) for p in hit if p.leader is not None],
            "offline": [name(p) for p in hit if p.leader is None],
            "rf_unmet": [name(p) for p in hit if len(p.replicas) > racks_left]}


def _kept(row: TopicProfile, snapshot: ClusterSnapshot) -> TopicProfile:
    """A scaled row whose storage now is no more than the topic's retention keeps at its scaled bytes-in
    (`pools.demand.retention_capped`: a topic already at its ``retention.bytes`` grows no larger)."""
    state = snapshot.topic_by_name.get(row.topic)
    if state is None:
        return row
    partitions = len(snapshot.partitions_by_topic.get(row.topic, ())) or row.partitions
    kept = retention_capped(float(row.storage_bytes), row.bytes_in_p99, state, partitions)
    return replace(row, storage_bytes=min(row.storage_bytes, math.floor(kept)))


def _member(topic: str, kind: str, name: str, policy: PoolPolicy, plan) -> bool:
    if kind == "tenant":
        return policy.tenant_of(topic) == name
    if plan is not None and topic in plan.topics:
        return plan.topics[topic] == name
    return (policy.resolve(topic).candidates or (None,))[0] == name


def _add_brokers(snapshot: ClusterSnapshot, policy: PoolPolicy, pool: str, count: int) -> ClusterSnapshot:
    """``count`` brokers of the policy's new type joining ``pool`` (tagged with it), as a plan's brokers still to
    buy are made (`pools.new_brokers.placeholder_brokers`): the next free ids, racks in turn from
    ``[new_broker] racks``, else the cluster's."""
    if policy.new_broker is None:
        raise InputError("scenario: add_brokers: the policy has no [new_broker] type to add")
    racks = spread_over_racks(count, list(policy.new_broker.racks) or list(snapshot.racks))
    added = placeholder_brokers({pool: racks}, policy.new_broker.capacity, taken=taken_ids(snapshot))
    return replace(snapshot, brokers=snapshot.brokers + tuple(replace(b.broker(), pool=pool) for b in added))


def _keys(where: str, entry: Any, allowed: set[str]) -> None:
    if not isinstance(entry, Mapping):
        raise InputError(f"{where}: expected a table")
    extra = sorted(set(entry) - allowed)
    if extra:
        raise InputError(f"{where}.{extra[0]}: unknown key (expected {', '.join(sorted(allowed))})")


def _name(where: str, entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}.{key}: expected a name, got {value!r}")
    return value


def _factor(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}.factor: expected a positive number, got {value!r}")
    return float(value)


def _count(where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{where}.count: expected a whole number >= 1, got {value!r}")
    return value


