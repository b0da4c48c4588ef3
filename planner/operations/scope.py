"""What a day-2 operation starts from: the pools as they are now and the load every partition carries.

A broker is in a pool by its inventory tag when the policy knows that pool, else by the policy's pin
(`pools.cluster_arrays.pool_arrays`, the audit's reading); a topic is in the pool the policy resolves for it. Loads
are at the forecast horizon, as in a plan (`pools.demand.topic_demand`); without a profile a partition carries
its size as disk and one replica, and no traffic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pools.cluster_arrays import cluster_arrays, pool_arrays
from pools.demand import Demand, at_horizon, demand_warnings, partition_loads, topic_demand
from pools.health import ClusterHealth, cluster_health
from pools.errors import InputError
from pools.policy import PoolPolicy
from pools.pool_rules import PoolRules
from pools.profile import PartitionProfile, TopicProfile
from pools.snapshot import ClusterSnapshot

__all__ = ["OperationInputs", "operation_inputs", "bytes_per_storage", "select_topics"]


@dataclass(frozen=True, eq=False)
class OperationInputs:
    """The cluster, the policy's rules, today's pools and the demands an operation plans with.

    ``brokers`` maps every broker of the snapshot to its pool now (None: in no pool); ``topics`` maps every topic
    in a pool to it; ``forecast`` and ``now`` are per-topic demands; ``warnings`` say what the demand lacks.
    """

    snapshot: ClusterSnapshot
    policy: PoolPolicy
    rules: PoolRules
    brokers: Mapping[int, str | None]
    topics: Mapping[str, str]
    forecast: Mapping[str, Demand]
    now: Mapping[str, Demand]
    health: ClusterHealth
    warnings: tuple[str, ...] = field(default=())

    def members(self, pool: str) -> list[int]:
        """The brokers of ``pool`` now, by id."""
        return sorted(b for b, p in self.brokers.items() if p == pool)

    def pool_topics(self, pools: set[str]) -> dict[str, str]:
        """Topic → pool for the topics of ``pools``."""
        return {t: p for t, p in self.topics.items() if p in pools}


def operation_inputs(
    snapshot: ClusterSnapshot,
    policy: PoolPolicy,
    profile: Mapping[str, TopicProfile] | None = None,
    *,
    fanout: Mapping[str, float] | None = None,
    partition_profile: Mapping[tuple[str, int], PartitionProfile] | None = None,
    horizon_days: int | None = None,
) -> OperationInputs:
    """Read today's pools and the demands at the forecast horizon (see the module docstring).

    Raises
    ------
    InputError
        When the policy contradicts the snapshot (`PoolPolicy.check_against`).
    """
    policy.check_against(snapshot)
    rules = PoolRules.from_policy(policy, horizon_days=horizon_days)
    a, p = cluster_arrays(snapshot), pool_arrays(snapshot, policy)
    brokers = {int(b): (p.pools[j] if j >= 0 else None)
               for b, j in zip(a.broker_ids.tolist(), p.broker_pool[: a.n_brokers].tolist(), strict=True)}
    topics = {t: p.pools[j] for t, j in zip(a.topics, p.topic_pool.tolist(), strict=True) if j >= 0}
    rows = at_horizon(profile, rules.horizon_days) if profile is not None else {}
    forecast = topic_demand(snapshot, rows, fanout, "forecast", partition_profile=partition_profile)
    now = topic_demand(snapshot, rows, fanout, "now", partition_profile=partition_profile)
    warnings = demand_warnings(forecast) if profile is not None else [
        "no profile: partitions carry their size as disk and one replica each, and no traffic"]
    unpooled = sorted(set(snapshot.partitions_by_topic) - set(topics))
    if unpooled:
        warnings.append(f"{len(unpooled)} topic(s) are in no pool and stay where they are: "
                        f"{', '.join(unpooled[:10])}{' and more' if len(unpooled) > 10 else ''}")
    return OperationInputs(snapshot, policy, rules, brokers, topics, forecast, now, cluster_health(snapshot),
                           tuple(warnings))



def bytes_per_storage(inputs: OperationInputs, pool: str) -> float:
    """The smallest ratio of a partition's size to its forecast storage in ``pool``: bytes copied per byte of disk
    load moved, at least (1.0 without a profile). Turns a disk excess into a lower bound on copied bytes."""
    storage = partition_loads(inputs.snapshot, inputs.forecast).storage.tolist()
    ratios = [p.size_bytes / s for p, s in zip(inputs.snapshot.partitions, storage, strict=True)
              if s > 0 and inputs.topics.get(p.topic) == pool]
    return min(ratios) if ratios else 0.0


def select_topics(topics: Iterable[str], patterns: Sequence[str], option: str) -> list[str]:
    """The ``topics`` that one of ``patterns`` (names or full-match regular expressions) matches, sorted.

    >>> select_topics(["a.x", "a.y", "b.z"], ["a[.].*"], "--topic")
    ['a.x', 'a.y']

    Raises
    ------
    InputError
        No pattern, a bad one, or one that matches no topic (named with ``option``).
    """
    if not patterns:
        raise InputError(f"{option}: expected at least one topic name or regular expression")
    names = sorted(set(topics))
    out: set[str] = set()
    for pattern in patterns:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise InputError(f"{option}: {pattern!r} is not a regular expression ({exc})") from None
        found = {t for t in names if regex.fullmatch(t)}
        if not found:
            raise InputError(f"{option}: {pattern!r} matches no topic of the snapshot")
        out |= found
    return sorted(out)
