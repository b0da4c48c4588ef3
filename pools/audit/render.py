"""``findings.md``: the audit findings as a Markdown page for people (``findings.json`` is for machines)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pools.audit.findings import Finding, Severity, sort_findings

if TYPE_CHECKING:
    from pools.audit.drift import Drift

__all__ = ["render_findings_md"]


def render_findings_md(findings: Iterable[Finding], *, cluster: str, taken_at: str | None, fail_on: Severity,
                       drift: Drift | None = None) -> str:
    """The findings as Markdown: a summary by severity and kind, the drift since an earlier audit (when given),
    then one table per severity, most severe first."""
    ordered = sort_findings(findings)
    lines = [f"# Audit of cluster `{cluster}`", ""]
    lines.append(f"Snapshot taken at: {taken_at or 'unknown'}. Failing severity: `{fail_on.value}` and above.")
    lines.append("")
    if drift is not None:
        lines += _drift(drift)
    if not ordered:
        lines += ["**Clean: no findings.**", ""]
        return "\n".join(lines)
    failing = sum(f.severity.rank >= fail_on.rank for f in ordered)
    lines += [f"**{len(ordered)} finding(s), {failing} at or above `{fail_on.value}`.**", ""]
    lines += ["| severity | kind | findings |", "|---|---|---|"]
    counts: dict[tuple[Severity, str], int] = {}
    for f in ordered:
        counts[(f.severity, f.kind)] = counts.get((f.severity, f.kind), 0) + 1
    lines += [f"| {s.value} | `{k}` | {n} |" for (s, k), n in counts.items()]
    lines += [
        "",
        "Fixes use shell variables: `BOOTSTRAP` (the cluster's bootstrap servers), `SNAPSHOT`, `POLICY` and "
        "`PROFILE` (the files this audit read).",
        "",
    ]
    for severity in sorted({f.severity for f in ordered}, key=lambda s: -s.rank):
        lines += [f"## {severity.value}", "", "| kind | pool | broker | partition | evidence | fix |",
                  "|---|---|---|---|---|---|"]
        for f in ordered:
            if f.severity is severity:
                lines.append(_row(f))
        lines.append("")
    return "\n".join(lines)


def _drift(drift: Drift) -> list[str]:
    """The findings that appeared and cleared since the earlier audit, and how many persisted."""
    lines = [f"## Since `{drift.since}`", "",
             f"{len(drift.appeared)} appeared, {len(drift.cleared)} cleared, {len(drift.persisted)} persisted.", ""]
    for name, items in (("Appeared", drift.appeared), ("Cleared", drift.cleared)):
        if items:
            lines += [f"### {name}", "", "| kind | pool | broker | partition | evidence | fix |",
                      "|---|---|---|---|---|---|", *(_row(f) for f in items), ""]
    return lines


def _row(f: Finding) -> str:
    where = "" if f.topic is None else f.topic + ("" if f.partition is None else f"-{f.partition}")
    cells = [
        f"`{f.kind}`",
        f.pool or "",
        "" if f.broker is None else str(f.broker),
        where,
        json.dumps(f.evidence, sort_keys=True, separators=(", ", ": ")),
        f"`{f.fix}`" if f.fix else "",
    ]
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
