"""The fixes the audit proposes: a re-plan, or a throttled reassignment to the brokers a plan would choose.

A partition's target is its pool's seed placement (`pools.fill.seed_pools`) under the current pools, at the
forecast load when the audit has a profile: the code `poolplan plan` starts from, so a plan of the same snapshot,
policy and profile sends the partition to the same brokers unless it changes the pool's brokers or relieves an
overloaded one (`pools.audit.audit` then takes the plan's target when given the plan). The seed changes only what
it must: a replica outside the pool or on a repeated rack is replaced in its own slot, on a rack the partition does
not use yet where the pool has one, and the leader stays. A target is proposed only when it repairs the partition
(`FixTargets.repairs`: every replica in the pool, the racks spanned) and crosses no cordon (a plan's target may);
otherwise the fix is a new plan. A partition `pools.health` holds gets no reassignment: its health comes first.
Every reassignment carries ``--throttle`` (`pools.throttle.throttle_rate` over the brokers it involves: the
bundle's rule at its default fraction).
"""

from __future__ import annotations

import weakref

import numpy as np

from pools.audit.loads import Loads
from pools.cluster_arrays import ClusterArrays, cluster_arrays, pool_arrays
from pools.fill import seed_pools
from pools.health import cluster_health, cordon_crossings
from pools.kafka_formats.reassignment import format_reassignment_json
from pools.policy import PoolPolicy
from pools.pool_rules import PoolRules, racks_required
from pools.snapshot import ClusterSnapshot
from pools.throttle import DEFAULT_THROTTLE_FRACTION, throttle_rate

__all__ = ["PLAN_FIX", "FixTargets", "fix_targets", "reassign_fix", "replica_span"]

#: The fix for problems only a new plan solves (capacity, mixed brokers): plan, then emit the bundle.
PLAN_FIX = (
    "poolplan plan --snapshot $SNAPSHOT --policy $POLICY --profile $PROFILE --out plan"
    " && poolplan emit --plan plan/plan.json --snapshot $SNAPSHOT --out bundle"
)


class FixTargets:
    """Every partition's seed target under the current pools, and the throttle for moving it."""

    def __init__(self, snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> None:
        a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
        self.a, self.snapshot = a, snapshot
        self.health = cluster_health(snapshot)
        brokers = [np.flatnonzero(p.broker_pool[: a.n_brokers] == j) for j in range(len(p.pools))]
        rules = PoolRules.from_policy(policy)
        headroom = [np.array(rules.limits(pool).headroom) for pool in p.pools]
        part_pool = p.topic_pool[a.part_topic] if len(a.part_topic) else np.zeros(0, dtype=np.int64)
        seed = seed_pools(snapshot, loads.partitions, part_pool, brokers, headroom, self.health)
        self.target, self.kept = seed.target, seed.held
        self.part_pool, self.broker_pool = part_pool, p.broker_pool
        self.pool_racks = [set(a.broker_rack[b].tolist()) - {-1} for b in brokers]
        table = loads.forecast if loads.known("forecast", "nw_in") else loads.now
        known = not np.isnan(table[:, :2]).any()
        ids = a.broker_ids.tolist()
        self.capacity = {b.id: (float(b.capacity.nw_in), float(b.capacity.nw_out)) for b in snapshot.brokers}
        self.load = {ids[i]: (float(table[i, 0]), float(table[i, 1])) for i in range(len(ids))} if known else {}

    def replicas(self, part: int) -> tuple[int, ...] | None:
        """The seed's replicas of partition position ``part``; None when they equal the current ones or the seed
        keeps them (held, or stranded on a broker the snapshot lacks: `pools.fill`)."""
        if self.kept[part]:
            return None
        row = self.target[part]
        new = tuple(int(self.a.broker_ids[b]) for b in row[row >= 0])
        return None if new == self.snapshot.partitions[part].replicas else new

    def held(self, part: int) -> str | None:
        """Why `pools.health` holds the partition, None when it does not."""
        p = self.snapshot.partitions[part]
        return self.health.partitions.get((p.topic, p.partition))

    def repairs(self, part: int, target: tuple[int, ...]) -> bool:
        """Whether moving partition ``part`` to ``target`` (broker ids) leaves it with neither finding a
        reassignment fixes: a replica outside its topic's pool (`check_replica_outside_pool`), fewer racks than
        min(RF, racks of the pool) (`check_rack_shared`, which does not judge a replica without a rack).

        Examples
        --------
        >>> from pools.audit.loads import audit_loads
        >>> from pools.policy import parse_policy
        >>> from pools.snapshot import Broker, Capacity, PartitionState
        >>> cap = Capacity(1e8, 1e8, 1e12, 100)
        >>> snap = ClusterSnapshot("c", tuple(Broker(b, f"r{b % 2}", cap, "a") for b in (1, 2, 3)), (),
        ...                        (PartitionState("t", 0, (1, 3)),))
        >>> fixes = FixTargets(snap, parse_policy('[[pool]]\\nname = "a"\\ndefault = true'), audit_loads(snap))
        >>> fixes.repairs(0, (1, 3)), fixes.repairs(0, (1, 2)), fixes.repairs(0, (1, 4))
        (False, True, False)
        """
        pool, a = int(self.part_pool[part]), self.a
        if pool < 0 or not a.n_brokers:
            return False
        pos = np.searchsorted(a.broker_ids, target)
        known = (pos < a.n_brokers) & (a.broker_ids[np.minimum(pos, a.n_brokers - 1)] == np.asarray(target))
        if not known.all() or (self.broker_pool[pos] != pool).any():
            return False
        racks = a.broker_rack[pos]
        need = racks_required(len(target), len(self.pool_racks[pool]))
        return bool((racks < 0).any() or len(set(racks.tolist())) >= need)

    def _allowed(self, part: int, target: tuple[int, ...]) -> bool:
        """Whether ``target`` `repairs` partition ``part`` and crosses no cordon (`pools.health.cordon_crossings`)."""
        p = self.snapshot.partitions[part]
        crossed = cordon_crossings(self.snapshot, [(p.topic, p.partition, target, None)])
        return self.repairs(part, target) and not crossed

    def fix(self, part: int, target: tuple[int, ...] | None = None) -> str:
        """The command that moves partition ``part`` to ``target`` when it `repairs` the partition, else to its
        seed when that does, else what to do instead."""
        held = self.held(part)
        p = self.snapshot.partitions[part]
        if held is not None:
            return (f"# {p.topic}-{p.partition} is {held}: poolplan leaves it alone; repair its health first "
                    "(see its partition or broker finding), then audit again")
        if target is None or not self._allowed(part, target):
            target = self.replicas(part)
        if target is None or not self._allowed(part, target):
            return PLAN_FIX
        rate = throttle_rate(set(p.replicas) | set(target), capacity=self.capacity, load=self.load,
                             fraction=DEFAULT_THROTTLE_FRACTION)
        return reassign_fix(self.a, part, target, rate=rate)


_MEMO: dict[tuple[int, int, int], tuple[weakref.ref, weakref.ref, weakref.ref, FixTargets]] = {}


def fix_targets(snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads) -> FixTargets:
    """`FixTargets` for these inputs, built once per (snapshot, policy, loads) objects."""
    key = (id(snapshot), id(policy), id(loads))
    hit = _MEMO.get(key)
    if hit is not None and hit[0]() is snapshot and hit[1]() is policy and hit[2]() is loads:
        return hit[3]
    for stale in [k for k, v in _MEMO.items() if v[0]() is None or v[1]() is None or v[2]() is None]:
        del _MEMO[stale]
    value = FixTargets(snapshot, policy, loads)
    _MEMO[key] = (weakref.ref(snapshot), weakref.ref(policy), weakref.ref(loads), value)
    return value


def reassign_fix(a: ClusterArrays, part: int, target: tuple[int, ...], *, rate: int) -> str:
    """`kafka-reassign-partitions.sh --execute --throttle` with the one-partition reassignment JSON inline, and
    the ``--verify`` that completes it and clears the throttle.

    Examples
    --------
    >>> from pools.snapshot import Broker, Capacity, PartitionState
    >>> snap = ClusterSnapshot("c", (Broker(1, None, Capacity(1, 1, 1, 1)),), (), (PartitionState("t", 0, (1,)),))
    >>> print(reassign_fix(cluster_arrays(snap), 0, (2,), rate=1024))  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
    kafka-reassign-partitions.sh --bootstrap-server $BOOTSTRAP --execute --throttle 1024
    --reassignment-json-file <(echo '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2],...}]}')
    # then the same with --verify (no --throttle) until it reports completed: that clears the throttle
    """
    text = format_reassignment_json(
        [{"topic": a.topics[int(a.part_topic[part])], "partition": int(a.part_id[part]), "replicas": list(target)}]
    )
    return (f"kafka-reassign-partitions.sh --bootstrap-server $BOOTSTRAP --execute --throttle {rate} "
            f"--reassignment-json-file <(echo '{text}')  # then the same with --verify (no --throttle) until it "
            "reports completed: that clears the throttle")


def replica_span(a: ClusterArrays, part: int) -> slice:
    """The slice of partition ``part``'s replicas in the flat replica arrays."""
    start = int(a.part_start[part])
    return slice(start, start + int(a.part_rf[part]))
