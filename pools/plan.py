"""The plan (*contract*): which pool every broker and topic belongs to, and every partition's target replicas.

``plan.json``::

    {"version": 1, "cluster": "prod-eu",
     "brokers_before": {"1": "payments", "2": null}, "brokers": {"1": "payments", "2": "shared"},
     "topics": {"orders": "shared"},
     "partitions": [{"topic": "orders", "partition": 0, "old_replicas": [1, 2, 3],
                     "replicas": [4, 2, 3], "size_bytes": 1048576}],
     "moved_bytes": 1048576, "brokers_to_add": {"payments": 0, "shared": 0},
     "solver": {"name": "HiGHS", "status": "Optimal", "solution": "Optimal Solution Found",
                "objective": 1.0, "bound": 1.0, "gap": 0.0, "seconds": 1},
     "utilisation": {"brokers": {"1": {"nw_in": {"capacity": 1.25e8, "now": 1e7, "before": 1.2e7, "after": 1.1e7}}},
                     "pools": {"shared": {"disk": {"capacity": 8e12, "capacity_with_added": 8e12,
                                                   "demand_now": 1e12, "demand_forecast": 1.4e12,
                                                   "headroom": 0.7}}}},
     "warnings": [],
     "placement": {"shared": {"seed_bytes": 1048576, "moved_bytes": 1048576, "extra_bytes": 0,
                              "leader_changes": 0, "status": "seed", "gap": 0.0, "candidates": 0}}}

``partitions`` lists the target of *every* partition (``replicas``, first = preferred leader) with its
current ``old_replicas``; a partition moves when the two differ. Broker loads are at forecast
(``before`` = current placement, ``after`` = target placement; ``now`` = current placement, current load).
``placement`` says per pool what placing it cost (`planner.placement.minimal_move.PoolPlacement`): the bytes
the pool's new replicas had to copy (``seed_bytes``), the bytes copied in all (``moved_bytes``; the difference,
``extra_bytes``, relieved brokers over headroom and gave joining brokers their fair share), preferred-leader
changes, and the engine's status and MIP gap.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pools.atomic import dump_json, write_text
from pools.errors import InputError

__all__ = ["PartitionMove", "SolverReport", "Plan", "load_plan", "save_plan", "plan_to_json", "plan_from_dict"]

PLAN_VERSION = 1


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """A partition's current and target replica lists (first = preferred leader) and its size."""

    topic: str
    partition: int
    old_replicas: tuple[int, ...]
    replicas: tuple[int, ...]
    size_bytes: int = 0

    @property
    def changed(self) -> bool:
        """True when the replica list (set or order) changes."""
        return self.old_replicas != self.replicas

    @property
    def adding(self) -> tuple[int, ...]:
        """Brokers that must copy the partition (in the target, not currently a replica)."""
        old = set(self.old_replicas)
        return tuple(b for b in self.replicas if b not in old)

    @property
    def removing(self) -> tuple[int, ...]:
        """Brokers that drop the partition."""
        new = set(self.replicas)
        return tuple(b for b in self.old_replicas if b not in new)

    @property
    def moved_bytes(self) -> int:
        """Bytes copied to new replicas."""
        return self.size_bytes * len(self.adding)


@dataclass(frozen=True, slots=True)
class SolverReport:
    """What the MILP solver said: status, PuLP's solution status, objective, best bound, relative gap, time.

    ``seconds`` is the wall time rounded up to whole seconds, so re-running a quick solve gives the same plan bytes.
    """

    name: str
    status: str
    solution: str
    objective: float | None
    bound: float | None
    gap: float | None
    seconds: int


@dataclass(frozen=True)
class Plan:
    """A pool plan; see the module docstring for the file format."""

    cluster: str
    brokers_before: Mapping[int, str | None]
    brokers: Mapping[int, str | None]
    topics: Mapping[str, str]
    partitions: tuple[PartitionMove, ...]
    brokers_to_add: Mapping[str, int]
    solver: SolverReport
    utilisation: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    placement: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple(sorted(self.partitions, key=lambda m: (m.topic, m.partition))))

    @property
    def moved_bytes(self) -> int:
        return sum(m.moved_bytes for m in self.partitions)

    @property
    def moves(self) -> tuple[PartitionMove, ...]:
        """Only the partitions whose replica list changes."""
        return tuple(m for m in self.partitions if m.changed)

    def to_dict(self) -> dict[str, Any]:
        s = self.solver
        return {
            "version": PLAN_VERSION,
            "cluster": self.cluster,
            "brokers_before": {str(b): p for b, p in sorted(self.brokers_before.items())},
            "brokers": {str(b): p for b, p in sorted(self.brokers.items())},
            "topics": dict(sorted(self.topics.items())),
            "partitions": [
                {
                    "topic": m.topic,
                    "partition": m.partition,
                    "old_replicas": list(m.old_replicas),
                    "replicas": list(m.replicas),
                    "size_bytes": m.size_bytes,
                }
                for m in self.partitions
            ],
            "moved_bytes": self.moved_bytes,
            "brokers_to_add": dict(sorted(self.brokers_to_add.items())),
            "solver": {
                "name": s.name,
                "status": s.status,
                "solution": s.solution,
                "objective": s.objective,
                "bound": s.bound,
                "gap": s.gap,
                "seconds": s.seconds,
            },
            "utilisation": self.utilisation,
            "warnings": list(self.warnings),
            "placement": dict(sorted(self.placement.items())),
        }


def plan_to_json(plan: Plan) -> str:
    """Deterministic text: sorted keys, one partition per line."""
    doc = plan.to_dict()
    partitions = doc.pop("partitions")
    text = dump_json(doc)
    body = ",\n".join("    " + json.dumps(p, sort_keys=True) for p in partitions)
    inner = f'"partitions": [\n{body}\n  ],\n  ' if partitions else '"partitions": [],\n  '
    # insert partitions in sorted-key position (after "moved_bytes")
    marker = '"solver": {'
    return text.replace(marker, inner + marker, 1)


def save_plan(plan: Plan, path: str | os.PathLike[str]) -> Path:
    """Write ``plan.json`` atomically."""
    return write_text(path, plan_to_json(plan))


def load_plan(path: str | os.PathLike[str]) -> Plan:
    """Read and validate a ``plan.json``; errors name the file and field."""
    source = str(path)
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{source}: no such file") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from None
    return plan_from_dict(doc, source=source)


def plan_from_dict(doc: Any, *, source: str = "plan") -> Plan:
    """Build a `Plan` from its JSON-ready form."""

    def fail(where: str, expected: str) -> InputError:
        return InputError(f"{source}: {where}: {expected}")

    if not isinstance(doc, dict):
        raise fail("document", "expected a JSON object")
    if doc.get("version") != PLAN_VERSION:
        raise fail("version", f"expected {PLAN_VERSION}, got {doc.get('version')!r}")
    try:
        brokers_before = {int(k): v for k, v in doc["brokers_before"].items()}
        brokers = {int(k): v for k, v in doc["brokers"].items()}
    except (KeyError, AttributeError, ValueError) as exc:
        raise fail("brokers", f"expected an object of broker id -> pool name or null ({exc})") from None
    partitions = []
    for i, p in enumerate(doc.get("partitions", [])):
        try:
            partitions.append(
                PartitionMove(
                    topic=str(p["topic"]),
                    partition=int(p["partition"]),
                    old_replicas=tuple(int(b) for b in p["old_replicas"]),
                    replicas=tuple(int(b) for b in p["replicas"]),
                    size_bytes=int(p.get("size_bytes", 0)),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise fail(f"partitions[{i}]", f"expected topic, partition, old_replicas, replicas ({exc!r})") from None
    s = doc.get("solver", {})
    try:
        solver = SolverReport(
            name=s["name"], status=s["status"], solution=s.get("solution", s["status"]),
            objective=s.get("objective"), bound=s.get("bound"), gap=s.get("gap"), seconds=int(math.ceil(float(s.get("seconds", 0)))),
        )
    except (KeyError, TypeError) as exc:
        raise fail("solver", f"expected name and status ({exc!r})") from None
    topics = doc.get("topics", {})
    if not isinstance(topics, Mapping):
        raise fail("topics", "expected an object of topic -> pool")
    return Plan(
        cluster=str(doc.get("cluster", "")),
        brokers_before=brokers_before,
        brokers=brokers,
        topics=dict(topics),
        partitions=tuple(partitions),
        brokers_to_add={str(k): int(v) for k, v in doc.get("brokers_to_add", {}).items()},
        solver=solver,
        utilisation=doc.get("utilisation", {}),
        warnings=tuple(doc.get("warnings", [])),
        placement=doc.get("placement", {}),
    )
