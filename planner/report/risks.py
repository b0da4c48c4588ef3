"""Where the plan meets the audit: which planned moves touch a broker or partition with a finding.

A move touches the broker that serves its copies (the partition's current leader, as ``planner.emit`` throttles
it), the brokers that receive a copy, and the broker that becomes its preferred leader. A finding is linked to a
move when it is about the same partition or its topic, about one of those brokers, or about a partition whose
replication is unhealthy (its evidence carries an ISR; severity error or worse) with a replica on one of them: copying from or
onto a broker that already fails to keep its replicas in sync adds load where it hurts.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pools.audit.findings import Finding, Severity
from pools.plan import PartitionMove, Plan
from pools.snapshot import ClusterSnapshot

__all__ = ["TouchedMove", "Risk", "PoolRisk", "Risks", "plan_risks", "MOVES_PER_RISK"]

#: How many of the moves touching one finding a `Risk` names (the ones copying most); all are counted.
MOVES_PER_RISK = 10


@dataclass(frozen=True, slots=True)
class TouchedMove:
    """A planned move linked to a finding, and how (``"this partition"``, ``"copies from broker 4"``, ...)."""

    topic: str
    partition: int
    old_replicas: tuple[int, ...]
    replicas: tuple[int, ...]
    moved_bytes: int
    how: str


@dataclass(frozen=True, slots=True)
class Risk:
    """A finding and the planned moves that touch it: ``count`` of them copying ``moved_bytes``, the
    `MOVES_PER_RISK` copying most named in ``moves``."""

    finding: Finding
    moves: tuple[TouchedMove, ...]
    count: int
    moved_bytes: int


@dataclass(frozen=True, slots=True)
class PoolRisk:
    """One pool: the moves the plan makes into it, the bytes they copy and the pool's findings per severity."""

    pool: str
    moves: int
    moved_bytes: int
    findings: Mapping[str, int]


@dataclass(frozen=True)
class Risks:
    """Findings linked to planned moves (most severe first), the per-pool view, and per severity the distinct
    moves touching a finding of it (``(topic, partition)`` → bytes to copy)."""

    risks: tuple[Risk, ...]
    pools: tuple[PoolRisk, ...]
    moves: int
    moved_bytes: int
    linked: Mapping[Severity, Mapping[tuple[str, int], int]]

    @property
    def touched(self) -> tuple[tuple[str, int], ...]:
        """The distinct planned moves some finding touches."""
        return tuple(sorted(self.at_least(Severity.INFO)))

    @property
    def touched_bytes(self) -> int:
        return sum(self.at_least(Severity.INFO).values())

    def at_least(self, severity: Severity) -> dict[tuple[str, int], int]:
        """The distinct planned moves touching a finding of ``severity`` or worse, with their bytes to copy."""
        out: dict[tuple[str, int], int] = {}
        for s, moves in self.linked.items():
            if s.rank >= severity.rank:
                out.update(moves)
        return out


def plan_risks(plan: Plan, findings: Iterable[Finding], snapshot: ClusterSnapshot | None = None) -> Risks:
    """Link ``findings`` to the moves of ``plan`` (see the module docstring).

    Notes
    -----
    Moves are indexed by partition and by the brokers they touch, so the join costs O(moves + findings + links).

    Examples
    --------
    >>> from pools.plan import Plan, PartitionMove, SolverReport
    >>> plan = Plan("c", {1: "a", 2: "a", 3: "a"}, {1: "a", 2: "a", 3: "a"}, {"t": "a"},
    ...             (PartitionMove("t", 0, (1, 2), (1, 3), 100),), {}, SolverReport("HiGHS", "Optimal", "", 0, 0, 0))
    >>> risk = plan_risks(plan, [Finding("log_dir_error", Severity.CRITICAL, pool="a", broker=1)]).risks[0]
    >>> [(m.topic, m.partition, m.how, m.moved_bytes) for m in risk.moves], risk.count
    ([('t', 0, 'copies from broker 1', 100)], 1)
    """
    findings = tuple(findings)
    leaders = {(p.topic, p.partition): p.leader for p in snapshot.partitions} if snapshot else {}
    moves = plan.moves
    roles = [_roles(m, leaders.get((m.topic, m.partition))) for m in moves]
    by_partition = {(m.topic, m.partition): i for i, m in enumerate(moves)}
    by_topic: dict[str, list[int]] = {}
    for i, m in enumerate(moves):
        by_topic.setdefault(m.topic, []).append(i)
    by_broker: dict[int, list[int]] = {}
    for i, r in enumerate(roles):
        for b in r:
            by_broker.setdefault(b, []).append(i)
    risks = []
    linked: dict[Severity, dict[tuple[str, int], int]] = {}
    for f in findings:
        touched = _touched(f, roles, by_partition, by_topic, by_broker)
        if not touched:
            continue
        bucket = linked.setdefault(f.severity, {})
        for i in touched:
            bucket[(moves[i].topic, moves[i].partition)] = moves[i].moved_bytes
        named = heapq.nsmallest(MOVES_PER_RISK, touched, key=lambda i: (-moves[i].moved_bytes, moves[i].topic,
                                                                         moves[i].partition))
        risks.append(Risk(f, tuple(TouchedMove(moves[i].topic, moves[i].partition, moves[i].old_replicas,
                                               moves[i].replicas, moves[i].moved_bytes, touched[i]) for i in named),
                          len(touched), sum(moves[i].moved_bytes for i in touched)))
    risks.sort(key=lambda r: r.finding.sort_key)
    return Risks(tuple(risks), _pools(plan, findings), len(moves), sum(m.moved_bytes for m in moves), linked)


def _touched(f: Finding, roles: list[dict[int, str]], by_partition: Mapping[tuple[str, int], int],
             by_topic: Mapping[str, list[int]], by_broker: Mapping[int, list[int]]) -> dict[int, str]:
    """Move index → how the move touches what ``f`` is about."""
    out: dict[int, str] = {}
    if f.topic is not None and f.partition is None:
        out = dict.fromkeys(by_topic.get(f.topic, ()), "a partition of this topic")
    elif f.topic is not None and f.partition is not None:
        own = by_partition.get((f.topic, f.partition))
        if own is not None:
            out[own] = "this partition"
        if "isr" in f.evidence and f.severity.rank >= Severity.ERROR.rank:
            replicas = set(_ints(f.evidence.get("replicas")))
            for b in sorted(replicas):
                for i in by_broker.get(b, ()):
                    if i not in out:
                        shared = [x for x in roles[i] if x in replicas]
                        out[i] = f"{_describe(roles[i], shared)} ({'a replica' if len(shared) == 1 else 'replicas'} of it)"
    elif f.topic is None and f.broker is not None:
        for i in by_broker.get(f.broker, ()):
            out[i] = _describe(roles[i], [f.broker])
    return out


def _roles(m: PartitionMove, leader: int | None) -> dict[int, str]:
    """Broker → what the move does on it: ``from`` (serves the copies), ``to`` (receives one), ``leader``."""
    out: dict[int, str] = {}
    if m.adding:
        source = leader if leader in m.old_replicas else m.old_replicas[0] if m.old_replicas else None
        if source is not None:
            out[source] = "from"
    for b in m.adding:
        out[b] = "to"
    if m.replicas and (not m.old_replicas or m.replicas[0] != m.old_replicas[0]):
        out.setdefault(m.replicas[0], "leader")
    return out


def _describe(roles: Mapping[int, str], brokers: Iterable[int]) -> str:
    """What the move does on ``brokers``: ``copies from broker 3 to broker 2``, ``makes broker 8 ... leader``."""
    picked = set(brokers)
    source = [b for b, r in roles.items() if r == "from" and b in picked]
    targets = sorted(b for b, r in roles.items() if r == "to" and b in picked)
    leader = [b for b, r in roles.items() if r == "leader" and b in picked]
    parts = []
    if source or targets:
        text = "copies" + (f" from broker {source[0]}" if source else "")
        if targets:
            text += f" to broker{'s' if len(targets) > 1 else ''} {', '.join(map(str, targets))}"
        parts.append(text)
    if leader:
        parts.append(f"makes broker {leader[0]} its preferred leader")
    return " and ".join(parts)


def _pools(plan: Plan, findings: Iterable[Finding]) -> tuple[PoolRisk, ...]:
    moves: dict[str, list[int]] = {}
    for m in plan.moves:
        moves.setdefault(plan.topics.get(m.topic) or "", []).append(m.moved_bytes)
    counts: dict[str, dict[str, int]] = {}
    for f in findings:
        counts.setdefault(f.pool or "", {s.value: 0 for s in Severity})[f.severity.value] += 1
    names = sorted(p for p in set(moves) | set(counts) if p)
    ordered = sorted(Severity, key=lambda s: -s.rank)
    return tuple(PoolRisk(p, len(moves.get(p, [])), sum(moves.get(p, [])),
                          {s.value: counts.get(p, {}).get(s.value, 0) for s in ordered}) for p in names)


def _ints(value: object) -> tuple[int, ...]:
    return tuple(v for v in value if isinstance(v, int)) if isinstance(value, list | tuple) else ()
