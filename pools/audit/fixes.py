"""The fixes the audit proposes: a re-plan, or a reassignment with replacement brokers chosen in the pool."""

from __future__ import annotations

import numpy as np

from pools.audit.index import ClusterArrays, PoolArrays
from pools.kafka_formats.reassignment import format_reassignment_json

__all__ = ["PLAN_FIX", "reassign_fix", "replica_span", "ReplicaChooser"]

#: The fix for problems only a new plan solves (capacity, mixed brokers): plan, then emit the bundle.
PLAN_FIX = (
    "poolplan plan --snapshot $SNAPSHOT --policy $POLICY --profile $PROFILE --out plan"
    " && poolplan emit --plan plan/plan.json --snapshot $SNAPSHOT --out bundle"
)


def reassign_fix(a: ClusterArrays, part: int, target: tuple[int, ...] | None) -> str:
    """`kafka-reassign-partitions.sh --execute` with the one-partition reassignment JSON inline; the re-plan
    when there is no ``target``."""
    if target is None:
        return PLAN_FIX
    text = format_reassignment_json(
        [{"topic": a.topics[int(a.part_topic[part])], "partition": int(a.part_id[part]), "replicas": list(target)}]
    )
    return f"kafka-reassign-partitions.sh --bootstrap-server $BOOTSTRAP --execute --reassignment-json-file <(echo '{text}')"


def replica_span(a: ClusterArrays, part: int) -> slice:
    """The slice of partition ``part``'s replicas in the flat replica arrays."""
    start = int(a.part_start[part])
    return slice(start, start + int(a.part_rf[part]))


class ReplicaChooser:
    """Picks replacement brokers inside a pool: an unused rack first, then the fewest replicas, then the lowest id.

    Counts the replicas it hands out so successive repairs spread over the pool.
    """

    def __init__(self, a: ClusterArrays, p: PoolArrays) -> None:
        self.a, self.p = a, p
        self.count = np.bincount(a.rep_broker, minlength=a.n_brokers + 1)[: a.n_brokers].astype(np.int64)

    def repair(self, part: int, pool: int) -> tuple[int, ...] | None:
        """The partition's replicas with every replica outside ``pool`` replaced; ``None`` when impossible."""
        span = self.a.rep_broker[replica_span(self.a, part)].tolist()
        keep = [b for b in span if b < self.a.n_brokers and self.p.broker_pool[b] == pool]
        target = []
        for b in span:
            if b in keep:
                target.append(b)
                continue
            new = self._pick(pool, used=set(keep) | set(target))
            if new is None:
                return None
            target.append(new)
        return tuple(int(self.a.broker_ids[b]) for b in target)

    def spread(self, part: int, pool: int) -> tuple[int, ...] | None:
        """The replicas with each replica sharing a rack with an earlier one moved to an unused rack, if any."""
        span = self.a.rep_broker[replica_span(self.a, part)].tolist()
        target: list[int] = []
        for b in span:
            racks = {int(self.a.broker_rack[t]) for t in target}
            if int(self.a.broker_rack[b]) in racks:
                new = self._pick(pool, used=set(span) | set(target), avoid_racks=racks, need_new_rack=True)
                if new is not None:
                    target.append(new)
                    continue
            target.append(b)
        return None if target == span else tuple(int(self.a.broker_ids[b]) for b in target)

    def _pick(self, pool: int, *, used: set[int], avoid_racks: set[int] | None = None,
              need_new_rack: bool = False) -> int | None:
        avoid = avoid_racks if avoid_racks is not None else {int(self.a.broker_rack[b]) for b in used}
        members = np.flatnonzero(self.p.broker_pool[: self.a.n_brokers] == pool).tolist() if pool >= 0 else \
            list(range(self.a.n_brokers))
        choices = [b for b in members if b not in used]
        if need_new_rack:
            choices = [b for b in choices if int(self.a.broker_rack[b]) not in avoid]
        if not choices:
            return None
        best = min(choices, key=lambda b: (int(self.a.broker_rack[b]) in avoid, int(self.count[b]), b))
        self.count[best] += 1
        return best
