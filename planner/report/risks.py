"""Where the plan meets the audit: which planned moves touch a broker or partition with a finding.

A move touches the broker that serves its copies (the partition's current leader, as ``planner.emit`` throttles
it), the brokers that receive a copy, and the broker that becomes its preferred leader. A finding is linked to a
move when it is about the same partition or its topic, about one of those brokers, or about a partition whose
replication is unhealthy (its evidence carries an ISR; severity error or worse) with a replica on one of them: copying from or
onto a broker that already fails to keep its replicas in sync adds load where it hurts.

A move is at risk only through findings the plan does not itself fix: a move that takes a misplaced replica off
its broker, spreads a partition over more racks, or takes replicas off an overloaded or mixed broker is the repair
(`fixes`), and a misplacement the plan's moves and pools resolve as a whole (`plan_fixes`: a replica outside its
pool, a broker holding two pools' replicas, a broker or topic of no pool) is no risk to the moves that touch it.
Those findings are listed apart (``Risks.fixed``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pools.audit.findings import Finding, Severity
from pools.plan_file import PartitionMove, Plan, copy_source
from pools.snapshot import DIMENSIONS, ClusterSnapshot

__all__ = ["TouchedMove", "Risk", "PoolRisk", "Risks", "plan_risks", "fixes", "plan_fixes", "finding_dimensions", "MOVES_PER_RISK"]

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
    fixed_by: int = 0

    @property
    def dimensions(self) -> tuple[str, ...]:
        """The capacity dimensions the finding is about (`DIMENSIONS` order; empty for a placement or health one)."""
        return finding_dimensions(self.finding)


@dataclass(frozen=True, slots=True)
class PoolRisk:
    """One pool (``""``: findings and topics of no pool): the moves the plan makes into it, the bytes they copy
    and, per severity, the findings that put one of the plan's moves at risk."""

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
    fixed: tuple[Risk, ...] = ()

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
    >>> from pools.plan_file import Plan, PartitionMove, SolverReport
    >>> plan = Plan("c", {1: "a", 2: "a", 3: "a"}, {1: "a", 2: "a", 3: "a"}, {"t": "a"},
    ...             (PartitionMove("t", 0, (1, 2), (1, 3), 100),), {}, SolverReport("HiGHS", "Optimal", "", 0, 0, 0))
    >>> risk = plan_risks(plan, [Finding("log_dir_error", Severity.CRITICAL, pool="a", broker=1)]).risks[0]
    >>> [(m.topic, m.partition, m.how, m.moved_bytes) for m in risk.moves], risk.count
    ([('t', 0, 'copies from broker 1', 100)], 1)
    """
    findings = tuple(findings)
    leaders = {(p.topic, p.partition): p.leader for p in snapshot.partitions} if snapshot else {}
    racks = {b.id: b.rack for b in snapshot.brokers} if snapshot else {}
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
    dropped: dict[int, list[int]] = {}
    for i, m in enumerate(moves):
        for b in m.removing:
            dropped.setdefault(b, []).append(i)
    risks, fixed = [], []
    linked: dict[Severity, dict[tuple[str, int], int]] = {}
    resolved = plan_fixes(plan, snapshot)
    for f in findings:
        touched = _touched(f, roles, by_partition, by_topic, by_broker)
        own = by_partition.get((f.topic, f.partition)) if f.topic is not None else None
        candidates = set(touched) | set(dropped.get(f.broker, ()) if f.broker is not None else ()) | (
            {own} if own is not None else set())
        repairs = sorted(i for i in candidates if fixes(f, moves[i], racks))
        if resolved(f):
            touched = {}
        touched = {i: how for i, how in touched.items() if i not in set(repairs)}
        if not touched:
            if repairs or resolved(f):
                fixed.append(_risk(f, dict.fromkeys(repairs, "fixes it"), moves, len(repairs)))
            continue
        bucket = linked.setdefault(f.severity, {})
        for i in touched:
            bucket[(moves[i].topic, moves[i].partition)] = moves[i].moved_bytes
        risks.append(_risk(f, touched, moves, len(repairs)))
    risks.sort(key=lambda r: r.finding.sort_key)
    fixed.sort(key=lambda r: r.finding.sort_key)
    return Risks(tuple(risks), _pools(plan, risks), len(moves), sum(m.moved_bytes for m in moves), linked,
                 tuple(fixed))


def _risk(f: Finding, touched: Mapping[int, str], moves: tuple[PartitionMove, ...], fixed_by: int) -> Risk:
    named = heapq.nsmallest(MOVES_PER_RISK, touched, key=lambda i: (-moves[i].moved_bytes, moves[i].topic,
                                                                    moves[i].partition))
    return Risk(f, tuple(TouchedMove(moves[i].topic, moves[i].partition, moves[i].old_replicas, moves[i].replicas,
                                     moves[i].moved_bytes, touched[i]) for i in named),
                len(touched), sum(moves[i].moved_bytes for i in touched), fixed_by)


#: Finding kinds about a broker's load or placement that a move taking replicas off that broker repairs.
_RELIEVED_BY_REMOVAL = frozenset({"broker_mixed_pools", "replica_count_over_limit", "utilisation_over_headroom"})


def fixes(f: Finding, m: PartitionMove, racks: Mapping[int, str | None]) -> bool:
    """Whether move ``m`` itself repairs what ``f`` reports: it takes the misplaced replica of a
    ``replica_outside_pool`` off its broker, spreads a ``rack_shared`` partition over more racks (``racks``:
    broker → rack), or takes a replica off the broker of a ``broker_mixed_pools``, ``replica_count_over_limit`` or
    broker-scoped ``utilisation_over_headroom`` finding.

    Examples
    --------
    >>> m = PartitionMove("t", 0, (1, 2, 8), (1, 2, 3), 100)
    >>> fixes(Finding("replica_outside_pool", Severity.ERROR, broker=8, topic="t", partition=0), m, {})
    True
    >>> fixes(Finding("under_replicated", Severity.ERROR, topic="t", partition=0), m, {})
    False
    """
    if f.kind == "replica_outside_pool":
        return (f.topic, f.partition) == (m.topic, m.partition) and f.broker is not None and f.broker in m.removing
    if f.kind == "rack_shared":
        if (f.topic, f.partition) != (m.topic, m.partition) or any(racks.get(b) is None for b in m.replicas):
            return False
        before = f.evidence.get("distinct_racks")
        return isinstance(before, int) and len({racks[b] for b in m.replicas}) > before
    if f.kind in _RELIEVED_BY_REMOVAL and f.topic is None and f.broker is not None:
        return f.broker in m.removing
    return False


def plan_fixes(plan: Plan, snapshot: ClusterSnapshot | None) -> Callable[[Finding], bool]:
    """Whether the plan as a whole resolves a misplacement finding: after its moves and pools, the replica of a
    ``replica_outside_pool`` is gone or its broker is in the topic's pool, a ``broker_mixed_pools`` broker holds
    replicas of one pool only (needs the snapshot for the partitions the plan leaves alone), a
    ``broker_without_pool`` broker and a ``topic_without_pool`` topic have a pool."""
    target = {(m.topic, m.partition): m.replicas for m in plan.moves}
    holds: dict[int, set[str]] | None = None
    if snapshot is not None:
        holds = {}
        for p in snapshot.partitions:
            pool = plan.topics.get(p.topic)
            for b in target.get((p.topic, p.partition), p.replicas):
                if pool:
                    holds.setdefault(b, set()).add(pool)

    def resolved(f: Finding) -> bool:
        if f.kind == "replica_outside_pool" and f.broker is not None and f.topic is not None:
            replicas = target.get((f.topic, f.partition))
            pool = plan.topics.get(f.topic)
            return (replicas is not None and f.broker not in replicas) or (pool is not None and
                                                                           plan.brokers.get(f.broker) == pool)
        if f.kind == "broker_mixed_pools" and f.broker is not None:
            return holds is not None and len(holds.get(f.broker, ())) <= 1
        if f.kind == "broker_without_pool" and f.broker is not None:
            return plan.brokers.get(f.broker) is not None
        if f.kind == "topic_without_pool" and f.topic is not None:
            return plan.topics.get(f.topic) is not None
        return False

    return resolved


def finding_dimensions(f: Finding) -> tuple[str, ...]:
    """The capacity dimensions a finding's evidence names (``dimension`` or the keys of ``dimensions``).

    >>> finding_dimensions(Finding("pool_cannot_lose_broker", Severity.ERROR, evidence={"dimensions": {"disk": {},
    ...                                                                                   "nw_in": {}}}))
    ('nw_in', 'disk')
    """
    named = {f.evidence.get("dimension")} | set(f.evidence.get("dimensions") or ())
    return tuple(d for d in DIMENSIONS if d in named)


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
        source = copy_source(m.old_replicas, leader)
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


def _pools(plan: Plan, risks: Iterable[Risk]) -> tuple[PoolRisk, ...]:
    """Per pool (``""`` for no pool): the moves into it and the findings that put a move at risk, per severity."""
    moves: dict[str, list[int]] = {}
    for m in plan.moves:
        moves.setdefault(plan.topics.get(m.topic) or "", []).append(m.moved_bytes)
    counts: dict[str, dict[str, int]] = {}
    for r in risks:
        counts.setdefault(r.finding.pool or "", {s.value: 0 for s in Severity})[r.finding.severity.value] += 1
    names = sorted(set(moves) | set(counts), key=lambda p: (p == "", p))
    ordered = sorted(Severity, key=lambda s: -s.rank)
    return tuple(PoolRisk(p, len(moves.get(p, [])), sum(moves.get(p, [])),
                          {s.value: counts.get(p, {}).get(s.value, 0) for s in ordered}) for p in names)


def _ints(value: object) -> tuple[int, ...]:
    return tuple(v for v in value if isinstance(v, int)) if isinstance(value, list | tuple) else ()
