"""Audit findings: the `Finding` value, severities and the stable ``findings.json`` schema."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pools.errors import InputError
from pools.schema import BrokerId, Name, PartitionId, Strict, validate

__all__ = [
    "FINDINGS_VERSION",
    "Severity",
    "Finding",
    "sort_findings",
    "findings_to_dict",
    "findings_from_dict",
    "findings_to_json",
    "worst_severity",
]

FINDINGS_VERSION = 1


class Severity(StrEnum):
    """How bad a finding is, from least to most severe (`rank` orders them)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _RANK[self]

    @classmethod
    def parse(cls, value: str, *, where: str = "severity") -> Severity:
        """Convert ``value`` (case-insensitive) or raise `InputError` naming ``where``.

        Examples
        --------
        >>> Severity.parse("ERROR").rank > Severity.parse("warning").rank
        True
        >>> Severity.parse("loud", where="--fail-on")
        Traceback (most recent call last):
        ...
        pools.errors.InputError: --fail-on: expected one of info, warning, error, critical, got 'loud'
        """
        try:
            return cls(str(value).lower())
        except ValueError:
            choices = ", ".join(s.value for s in cls)
            raise InputError(f"{where}: expected one of {choices}, got {value!r}") from None


_RANK = {s: i for i, s in enumerate(Severity)}


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem the audit found.

    ``kind`` names the rule (see ``docs/formats.md``); ``pool``, ``broker``, ``topic``, ``partition`` locate it
    (``None`` where they do not apply); ``evidence`` holds the numbers that prove it (JSON scalars or lists);
    ``fix`` is a command an operator can run.
    """

    kind: str
    severity: Severity
    pool: str | None = None
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    fix: str = ""

    def __post_init__(self) -> None:
        if not self.kind:
            raise ValueError("Finding.kind must not be empty")
        object.__setattr__(self, "severity", Severity(self.severity))

    @property
    def sort_key(self) -> tuple[Any, ...]:
        """Most severe first, then kind, pool, broker, topic, partition, evidence text."""
        return (
            -self.severity.rank,
            self.kind,
            self.pool or "",
            -1 if self.broker is None else self.broker,
            self.topic or "",
            -1 if self.partition is None else self.partition,
            json.dumps(self.evidence, sort_keys=True),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity.value,
            "pool": self.pool,
            "broker": self.broker,
            "topic": self.topic,
            "partition": self.partition,
            "evidence": dict(self.evidence),
            "fix": self.fix,
        }


def sort_findings(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Findings in canonical order (see `Finding.sort_key`)."""
    return tuple(sorted(findings, key=lambda f: f.sort_key))


def worst_severity(findings: Iterable[Finding]) -> Severity | None:
    """The most severe severity among ``findings``, ``None`` when there are none."""
    return max((f.severity for f in findings), key=lambda s: s.rank, default=None)


def findings_to_dict(findings: Iterable[Finding], *, cluster: str, taken_at: str | None) -> dict[str, Any]:
    """The ``findings.json`` document: header, per-kind and per-severity counts, sorted findings."""
    ordered = sort_findings(findings)
    by_kind: dict[str, int] = {}
    by_severity = {s.value: 0 for s in Severity}
    for f in ordered:
        by_kind[f.kind] = by_kind.get(f.kind, 0) + 1
        by_severity[f.severity.value] += 1
    return {
        "version": FINDINGS_VERSION,
        "cluster": cluster,
        "taken_at": taken_at,
        "counts": {"total": len(ordered), "by_kind": dict(sorted(by_kind.items())), "by_severity": by_severity},
        "findings": [f.to_dict() for f in ordered],
    }


def findings_to_json(findings: Iterable[Finding], *, cluster: str, taken_at: str | None) -> str:
    """Deterministic ``findings.json`` text: sorted keys, one finding per line, trailing newline.

    Examples
    --------
    >>> print(findings_to_json([Finding("broker_without_pool", Severity.WARNING, broker=9)], cluster="c",
    ...                        taken_at=None), end="")  # doctest: +NORMALIZE_WHITESPACE
    {
      "cluster": "c",
      "counts": {"by_kind": {"broker_without_pool": 1},
                 "by_severity": {"critical": 0, "error": 0, "info": 0, "warning": 1}, "total": 1},
      "findings": [
        {"broker": 9, "evidence": {}, "fix": "", "kind": "broker_without_pool", "partition": null, "pool": null,
         "severity": "warning", "topic": null}
      ],
      "taken_at": null,
      "version": 1
    }
    """
    doc = findings_to_dict(findings, cluster=cluster, taken_at=taken_at)
    items = doc.pop("findings")

    def dumps(obj: Any) -> str:
        return json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False)

    lines = [f"  {json.dumps(k)}: {dumps(v)}" for k, v in doc.items()]
    body = ",\n".join(f"    {dumps(f)}" for f in items)
    lines.append(f'  "findings": [\n{body}\n  ]' if items else '  "findings": []')
    lines.sort(key=lambda line: line.split(":", 1)[0])
    return "{\n" + ",\n".join(lines) + "\n}\n"


class _FindingModel(Strict):
    kind: Name
    severity: str
    pool: str | None = None
    broker: BrokerId | None = None
    topic: str | None = None
    partition: PartitionId | None = None
    evidence: dict[str, Any] = {}
    fix: str = ""


class _FindingsModel(Strict):
    version: Literal[1]
    cluster: str | None = None
    taken_at: str | None = None
    counts: dict[str, Any] = {}
    findings: list[_FindingModel]


def findings_from_dict(doc: Any, *, source: str = "findings.json") -> tuple[Finding, ...]:
    """Parse a ``findings.json`` document back into findings; errors name ``source`` and the field path."""
    model = validate(_FindingsModel, doc, source)
    out = []
    for i, item in enumerate(model.findings):
        out.append(
            Finding(
                kind=item.kind,
                severity=Severity.parse(item.severity, where=f"{source}: findings[{i}].severity"),
                pool=item.pool,
                broker=item.broker,
                topic=item.topic,
                partition=item.partition,
                evidence=item.evidence,
                fix=item.fix,
            )
        )
    return sort_findings(out)
