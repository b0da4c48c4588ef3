"""Run the audit rules over a snapshot and decide the exit status."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from pools.audit.findings import Finding, Severity, sort_findings
from pools.audit.fixes import fix_targets
from pools.audit.loads import Loads, audit_loads
from pools.audit.rules import RULES, Rule
from pools.demand import at_horizon
from pools.plan_file import Plan
from pools.policy import PoolPolicy
from pools.pool_rules import PoolRules
from pools.profile import PartitionProfile, TopicProfile
from pools.snapshot import ClusterSnapshot

__all__ = ["audit", "fails"]


def audit(
    snapshot: ClusterSnapshot,
    policy: PoolPolicy,
    profile: Mapping[str, TopicProfile] | None = None,
    *,
    loads: Loads | None = None,
    rules: Iterable[Rule] = RULES,
    fanout: Mapping[str, float] | None = None,
    partition_profile: Mapping[tuple[str, int], PartitionProfile] | None = None,
    horizon_days: int | None = None,
    plan: Plan | None = None,
) -> tuple[Finding, ...]:
    """Every finding of ``rules`` on ``snapshot`` under ``policy``, in canonical order.

    Parameters
    ----------
    snapshot : ClusterSnapshot
    policy : PoolPolicy
        Checked against the snapshot first (`PoolPolicy.check_against`).
    profile : mapping of str to TopicProfile, optional
        Enables the traffic and forecast checks; without it only counts and current disk are judged.
    loads : Loads, optional
        Precomputed `audit_loads` (computed from ``profile`` when omitted).
    rules : iterable of Rule
        The rules to run (default: all of `pools.audit.rules.RULES`).
    fanout, partition_profile : optional
        As for `pools.demand.topic_demand` (consumer groups per topic where the profile lacks bytes-out,
        per-partition rates).
    horizon_days : int, optional
        The forecast horizon in days; default the policy's ``forecast_horizon_days`` (`pools.pool_rules`). The
        profile's forecasts are re-derived at it (`pools.demand.at_horizon`).
    plan : Plan, optional
        A plan of this snapshot: a partition it moves gets the plan's target as its reassignment fix (the
        bundle's move), so the audit and the plan agree even where the plan changes pools or relieves brokers;
        a target on a broker still to buy (``planned_brokers``) is not, as the fix must run on today's cluster.

    Raises
    ------
    InputError
        When the policy contradicts the snapshot or names conflicting selectors.
    """
    policy.check_against(snapshot)
    if loads is None:
        if profile is not None:
            profile = at_horizon(profile, PoolRules.from_policy(policy, horizon_days=horizon_days).horizon_days)
        loads = audit_loads(snapshot, profile, fanout=fanout, partition_profile=partition_profile)
    found: list[Finding] = []
    for rule in rules:
        found.extend(rule.check(snapshot, policy, loads))
    if plan is not None:
        found = _plan_fixes(found, snapshot, policy, loads, plan)
    return sort_findings(found)


#: Finding kinds whose fix is a reassignment of their partition.
_REASSIGNED = frozenset({"replica_outside_pool", "rack_shared"})


def _plan_fixes(found: list[Finding], snapshot: ClusterSnapshot, policy: PoolPolicy, loads: Loads,
                plan: Plan) -> list[Finding]:
    """Reassignment fixes of partitions the plan moves, rewritten to the plan's target (where the plan was made
    from these replicas and its target names no broker still to buy: a fix runs on the cluster as it is)."""
    to_buy = {b.id for b in plan.planned_brokers}
    moves = {(m.topic, m.partition): m for m in plan.moves if not to_buy.intersection(m.replicas)}
    wanted = {(f.topic, f.partition) for f in found if f.kind in _REASSIGNED and (f.topic, f.partition) in moves}
    if not wanted:
        return found
    position = {
        (p.topic, p.partition): i for i, p in enumerate(snapshot.partitions) if (p.topic, p.partition) in wanted
    }
    fixes = fix_targets(snapshot, policy, loads)
    out = []
    for f in found:
        key = (f.topic, f.partition)
        move = moves.get(key) if f.kind in _REASSIGNED else None
        if move is not None and key in position and move.old_replicas == snapshot.partitions[position[key]].replicas:
            f = replace(f, fix=fixes.fix(position[key], tuple(move.replicas)))
        out.append(f)
    return out


def fails(findings: Iterable[Finding], fail_on: Severity | str) -> bool:
    """True when some finding is at least as severe as ``fail_on``."""
    threshold = Severity.parse(fail_on, where="--fail-on") if isinstance(fail_on, str) else fail_on
    return any(f.severity.rank >= threshold.rank for f in findings)
