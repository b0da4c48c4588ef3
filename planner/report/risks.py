"""Where the plan meets the audit: which planned moves are at risk, and through what.

A move is at risk only through what can go wrong for that move, each named by an audit finding:

- **its partition below min ISR during the copy** (``under_min_isr``): the new replicas are not in sync until
  they catch up, so the copy runs with the ISR reported now, below the topic's ``min.insync.replicas``;
- **its own partition unhealthy** (``offline_partition``, ``under_replicated``, ``at_min_isr``,
  ``reassignment_in_progress``):
  no leader to copy from, a reassignment Kafka completes only once the out-of-sync replicas catch up, or one
  already running;
- **a source or target broker with an error on the dirs involved** (``log_dir_error``): the broker the copy reads
  from (the partition's current leader, as ``planner.emit`` throttles it) when the failed dir holds its replica
  (or the dir is not known), or a broker that receives a copy (the plan names no dir for it);
- **a target over headroom** (a broker-scoped ``utilisation_over_headroom``): a broker that receives a copy.

Any other finding (a topic's, a broker's that the move only reads from, a pool's) puts no move at risk; a move's
own repairs (`fixes`) and the misplacements the plan resolves as a whole (`plan_fixes`: a replica outside its pool,
a broker holding two pools' replicas, a broker or topic of no pool) are listed apart (``Risks.fixed``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pools.audit.findings import Finding, Severity
from pools.plan_file import PartitionMove, Plan, copy_source
from pools.snapshot import DIMENSIONS, ClusterSnapshot

#: How a cause names a capacity dimension.
DIMENSION_NAMES = {"nw_in": "network in", "nw_out": "network out", "disk": "disk", "replicas": "replicas"}

__all__ = ["TouchedMove", "Risk", "PoolRisk", "Risks", "plan_risks", "fixes", "plan_fixes", "finding_dimensions",
           "MOVES_PER_RISK"]

#: How many of the moves touching one finding a `Risk` names (the ones copying most); all are counted.
MOVES_PER_RISK = 10


@dataclass(frozen=True, slots=True)
class TouchedMove:
    """A planned move put at risk by a finding, and the cause (``"copies onto broker 4, over its headroom in
    disk"``, ...)."""

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
    >>> risk = plan_risks(plan, [Finding("log_dir_error", Severity.CRITICAL, pool="a", broker=1,
    ...                                  evidence={"log_dir": "/d1"})]).risks[0]
    >>> [(m.topic, m.partition, m.how, m.moved_bytes) for m in risk.moves], risk.count
    ([('t', 0, 'copies from broker 1, whose log dir /d1 holding it is in error', 100)], 1)
    """
    findings = tuple(findings)
    leaders = {(p.topic, p.partition): p.leader for p in snapshot.partitions} if snapshot else {}
    dirs = {(p.topic, p.partition): dict(zip(p.replicas, p.log_dirs)) for p in snapshot.partitions} if snapshot else {}
    racks = {b.id: b.rack for b in snapshot.brokers} if snapshot else {}
    moves = plan.moves
    roles = [_roles(m, leaders.get((m.topic, m.partition))) for m in moves]
    by_partition = {(m.topic, m.partition): i for i, m in enumerate(moves)}
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

    def source_dir(i: int, broker: int) -> str | None:
        return dirs.get((moves[i].topic, moves[i].partition), {}).get(broker)

    for f in findings:
        touched = _touched(f, moves, roles, by_partition, by_broker, source_dir)
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


#: Partition findings that put a move of that very partition at risk, and how the report says so.
_OWN_PARTITION = {
    "under_min_isr": "its partition is below min.insync.replicas during the copy (ISR {isr}, min ISR {min_isr}): "
                     "acks=all producers fail until the new replicas catch up",
    "offline_partition": "its own partition is unhealthy: offline, no leader to copy from",
    "under_replicated": "its own partition is unhealthy: under-replicated (ISR {isr} of {replicas}), and Kafka "
                        "completes the reassignment only once every target replica is in sync",
    "at_min_isr": "its own partition is unhealthy: at its min ISR (ISR {isr}, min ISR {min_isr}), so the copy's "
                  "extra load on its leader and followers risks the one more loss that makes it read-only",
    "reassignment_in_progress": "its own partition is unhealthy: a reassignment of it is still in progress",
}


def _touched(f: Finding, moves: tuple[PartitionMove, ...], roles: list[dict[int, str]],
             by_partition: Mapping[tuple[str, int], int], by_broker: Mapping[int, list[int]],
             source_dir: Callable[[int, int], str | None]) -> dict[int, str]:
    """Move index → the cause through which ``f`` puts the move at risk (see the module docstring)."""
    out: dict[int, str] = {}
    if f.kind in _OWN_PARTITION and f.topic is not None and f.partition is not None:
        own = by_partition.get((f.topic, f.partition))
        if own is not None:
            e = f.evidence
            out[own] = _OWN_PARTITION[f.kind].format(isr=e.get("isr"), replicas=e.get("replicas"),
                                                     min_isr=e.get("min_insync_replicas"))
    elif f.kind == "log_dir_error" and f.broker is not None:
        failed = f.evidence.get("log_dir")
        named = f" {failed}" if failed else ""
        for i in by_broker.get(f.broker, ()):
            role = roles[i].get(f.broker)
            if role == "to":
                out[i] = f"copies onto broker {f.broker}, whose log dir{named} is in error"
            elif role == "from" and (failed is None or source_dir(i, f.broker) in (None, failed)):
                out[i] = f"copies from broker {f.broker}, whose log dir{named} holding it is in error"
    elif f.kind == "utilisation_over_headroom" and f.topic is None and f.broker is not None:
        dimension = DIMENSION_NAMES.get(str(f.evidence.get("dimension")), "a dimension")
        for i in by_broker.get(f.broker, ()):
            if roles[i].get(f.broker) == "to":
                out[i] = f"copies onto broker {f.broker}, over its headroom in {dimension}"
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
