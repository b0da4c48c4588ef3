"""Drift between two audits: the findings that appeared, cleared and persisted since an earlier ``findings.json``.

A finding is the same in both audits when its identity is: its kind, where it is (pool, broker, topic, partition)
and its evidence's text values (a dimension, a basis, a log dir, a broker's pool...). Numbers and lists in the
evidence (sizes, loads, replica lists) change between audits without the finding being a new one. The rule is
generic: a kind added to the audit needs nothing here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pools.audit.findings import Finding, findings_from_dict, sort_findings
from pools.errors import InputError
from pools.files import load_json

__all__ = ["Drift", "drift", "identity", "load_earlier_findings", "drift_to_json"]

FINDINGS_FILE = "findings.json"


@dataclass(frozen=True)
class Drift:
    """The findings of this audit new since the earlier one (``appeared``), the earlier ones gone (``cleared``)
    and those in both (``persisted``, as this audit found them); ``since`` names the earlier findings file."""

    since: str
    appeared: tuple[Finding, ...]
    cleared: tuple[Finding, ...]
    persisted: tuple[Finding, ...]


def identity(f: Finding) -> tuple[Any, ...]:
    """What makes two audits' findings the same one: kind, location and the evidence's text values.

    >>> from pools.audit.findings import Severity
    >>> a = Finding("utilisation_over_headroom", Severity.ERROR, broker=1, evidence={"dimension": "disk", "load": 9})
    >>> identity(a) == identity(Finding("utilisation_over_headroom", Severity.ERROR, broker=1,
    ...                                 evidence={"dimension": "disk", "load": 12}))
    True
    """
    text = tuple(sorted((k, v) for k, v in f.evidence.items() if isinstance(v, str)))
    return f.kind, f.pool, f.broker, f.topic, f.partition, text


def drift(earlier: Iterable[Finding], current: Iterable[Finding], *, since: str) -> Drift:
    """Compare ``current`` findings with ``earlier`` ones by `identity` (each side in canonical order)."""
    before = {identity(f): f for f in earlier}
    now = {identity(f): f for f in current}
    return Drift(
        since=since,
        appeared=sort_findings(f for k, f in now.items() if k not in before),
        cleared=sort_findings(f for k, f in before.items() if k not in now),
        persisted=sort_findings(f for k, f in now.items() if k in before),
    )


def load_earlier_findings(path: str | Path, *, cluster: str) -> tuple[Path, tuple[Finding, ...]]:
    """The findings of an earlier audit: ``path/findings.json`` (an audit directory) or ``path/audit/findings.json``
    (a run directory).

    Raises
    ------
    InputError
        ``--since: ...`` when neither file exists, it is malformed (naming the field) or audits another cluster.
    """
    root = Path(path)
    if not root.is_dir():
        raise InputError(f"--since: {root}: not a directory (expected an earlier audit or run directory)")
    found = next((p for p in (root / FINDINGS_FILE, root / "audit" / FINDINGS_FILE) if p.is_file()), None)
    if found is None:
        raise InputError(f"--since: {root}: holds no {FINDINGS_FILE} or audit/{FINDINGS_FILE} "
                         "(expected the --out directory of an earlier audit, or a run directory)")
    try:
        doc = load_json(found)
        findings = findings_from_dict(doc, source=str(found))
    except InputError as exc:
        raise InputError(f"--since: {exc}") from None
    earlier = doc.get("cluster")
    if earlier is not None and earlier != cluster:
        raise InputError(f"--since: {found}: cluster: expected {cluster!r} (the cluster audited now), got {earlier!r}")
    return found, findings


def drift_to_json(d: Drift) -> str:
    """``drift.json``: the earlier file, counts, then the three lists, one finding per line; deterministic."""
    def dumps(obj: Any) -> str:
        return json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False)

    groups = {"appeared": d.appeared, "cleared": d.cleared, "persisted": d.persisted}
    counts = {name: len(items) for name, items in groups.items()}
    lines = [f'  "counts": {dumps(counts)}']
    for name, items in groups.items():
        body = ",\n".join(f"    {dumps(f.to_dict())}" for f in items)
        lines.append(f'  "{name}": [\n{body}\n  ]' if items else f'  "{name}": []')
    lines.append(f'  "since": {dumps(d.since)}')
    return "{\n" + ",\n".join(sorted(lines, key=lambda line: line.split(":", 1)[0])) + "\n}\n"
