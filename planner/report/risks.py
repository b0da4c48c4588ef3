"""Where the plan meets the audit: which planned moves touch a broker or partition with a finding.

A move touches the broker that serves its copies (the partition's current leader, as ``planner.emit`` throttles
it), the brokers that receive a copy, and the broker that becomes its preferred leader. A finding is linked to a
move when it is about the same partition, about one of those brokers, or about a partition whose replication is
unhealthy (its evidence carries an ISR; severity error or worse) with a replica on one of them: copying from or
onto a broker that already fails to keep its replicas in sync adds load where it hurts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pools.audit.findings import Finding, Severity
from pools.plan import PartitionMove, Plan
from pools.snapshot import ClusterSnapshot

__all__ = ["TouchedMove", "Risk", "PoolRisk", "Risks", "plan_risks"]


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
    """A finding and the planned moves that touch it (most bytes first)."""

    finding: Finding
    moves: tuple[TouchedMove, ...]

    @property
    def moved_bytes(self) -> int:
        return sum(m.moved_bytes for m in self.moves)


@dataclass(frozen=True, slots=True)
class PoolRisk:
    """One pool: the moves the plan makes into it, the bytes they copy and the pool's findings per severity."""

    pool: str
    moves: int
    moved_bytes: int
    findings: Mapping[str, int]


@dataclass(frozen=True)
class Risks:
    """Findings linked to planned moves (most severe first) and the per-pool view."""

    risks: tuple[Risk, ...]
    pools: tuple[PoolRisk, ...]
    moves: int
    moved_bytes: int

    @property
    def touched(self) -> tuple[tuple[str, int], ...]:
        """The distinct planned moves some finding touches."""
        return tuple(sorted({(m.topic, m.partition) for r in self.risks for m in r.moves}))

    @property
    def touched_bytes(self) -> int:
        return sum(self.at_least(Severity.INFO).values())

    def at_least(self, severity: Severity) -> dict[tuple[str, int], int]:
        """The distinct planned moves touching a finding of ``severity`` or worse, with their bytes to copy."""
        return {(m.topic, m.partition): m.moved_bytes for r in self.risks if r.finding.severity.rank >= severity.rank
                for m in r.moves}


def plan_risks(plan: Plan, findings: Iterable[Finding], snapshot: ClusterSnapshot | None = None) -> Risks:
    """Link ``findings`` to the moves of ``plan`` (see the module docstring).

    Examples
    --------
    >>> from pools.plan import Plan, PartitionMove, SolverReport
    >>> plan = Plan("c", {1: "a", 2: "a", 3: "a"}, {1: "a", 2: "a", 3: "a"}, {"t": "a"},
    ...             (PartitionMove("t", 0, (1, 2), (1, 3), 100),), {}, SolverReport("HiGHS", "Optimal", "", 0, 0, 0, 1))
    >>> risk = plan_risks(plan, [Finding("log_dir_error", Severity.CRITICAL, pool="a", broker=1)]).risks[0]
    >>> [(m.topic, m.partition, m.how, m.moved_bytes) for m in risk.moves]
    [('t', 0, 'copies from broker 1', 100)]
    """
    leaders = {(p.topic, p.partition): p.leader for p in snapshot.partitions} if snapshot else {}
    moves = plan.moves
    roles = {(m.topic, m.partition): _roles(m, leaders.get((m.topic, m.partition))) for m in moves}
    risks = []
    for f in findings:
        touched = []
        for m in moves:
            how = _link(f, m, roles[(m.topic, m.partition)])
            if how:
                touched.append(TouchedMove(m.topic, m.partition, m.old_replicas, m.replicas, m.moved_bytes, how))
        if touched:
            risks.append(Risk(f, tuple(sorted(touched, key=lambda t: (-t.moved_bytes, t.topic, t.partition)))))
    risks.sort(key=lambda r: r.finding.sort_key)
    return Risks(tuple(risks), _pools(plan, findings), len(moves), sum(m.moved_bytes for m in moves))


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


def _link(f: Finding, m: PartitionMove, roles: Mapping[int, str]) -> str | None:
    if f.topic is not None and f.partition is not None:
        if (f.topic, f.partition) == (m.topic, m.partition):
            return "this partition"
        if "isr" in f.evidence and f.severity.rank >= Severity.ERROR.rank:
            shared = [b for b in roles if b in _ints(f.evidence.get("replicas"))]
            if shared:
                return f"{_describe(roles, shared)} ({'a replica' if len(shared) == 1 else 'replicas'} of it)"
        return None
    if f.topic is None and f.broker is not None and f.broker in roles:
        return _describe(roles, [f.broker])
    return None


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
