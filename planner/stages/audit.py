"""The audit stage: a cluster snapshot checked against the pool policy, written to findings.json and findings.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pools.audit.findings import Severity
from pools.progress import Progress, no_progress

if TYPE_CHECKING:
    from pools.audit.findings import Finding

__all__ = ["AuditOptions", "AuditResult", "audit"]


@dataclass(frozen=True)
class AuditOptions:
    """The options of ``poolplan audit`` (``fail_on`` parsed)."""

    snapshot_path: str
    policy_path: str
    out_dir: str
    fail_on: Severity
    profile_dir: str | None = None
    groups_path: str | None = None
    plan_path: str | None = None
    horizon_days: int | None = None


@dataclass(frozen=True)
class AuditResult:
    """The findings, where they were written, the cluster and what the audit could not check."""

    out_dir: Path
    cluster: str
    findings: tuple[Finding, ...]
    fail_on: Severity
    notes: tuple[str, ...] = ()

    @property
    def failing(self) -> bool:
        """Whether a finding is at least as severe as ``fail_on``."""
        from pools.audit import fails

        return fails(self.findings, self.fail_on)

    @property
    def by_severity(self) -> dict[Severity, int]:
        """Findings per severity, most severe first (every severity listed)."""
        order = sorted(Severity, key=lambda s: -s.rank)
        return {s: sum(f.severity is s for f in self.findings) for s in order}


def audit(options: AuditOptions, *, progress: Progress = no_progress) -> AuditResult:
    """Audit the cluster against its pools: isolation, partition health, capacity and leadership.

    Writes ``OUT/findings.json`` (stable, sorted) and ``OUT/findings.md``, each finding with its severity, where it
    is, the evidence and a fix to run. Without a profile at ``profile_dir`` the traffic and forecast checks are
    skipped (a note says so).

    Raises
    ------
    InputError
        For an unreadable input or an output that cannot be written.
    """
    from pools.atomic import check_output, write_text
    from pools.audit import audit as audit_cluster
    from pools.audit import findings_to_json, render_findings_md
    from pools.plan import load_plan
    from pools.policy import load_policy
    from pools.profile import load_profile_dir
    from pools.snapshot import load_snapshot
    from planner.stages.inputs import read_topic_fanout

    check_output(options.out_dir)
    progress("reading the snapshot, the policy and the profile")
    snapshot = load_snapshot(options.snapshot_path)
    policy = load_policy(options.policy_path)
    profile = partitions = None
    notes: list[str] = []
    if options.profile_dir is not None:
        profile, partitions = load_profile_dir(options.profile_dir, required=False)
        if profile is None:
            notes.append(f"no profile at {options.profile_dir}: traffic and forecast checks skipped")
    plan = load_plan(options.plan_path) if options.plan_path is not None else None
    progress("checking the cluster against the policy")
    findings = audit_cluster(snapshot, policy, profile, fanout=read_topic_fanout(options.groups_path),
                             partition_profile=partitions, horizon_days=options.horizon_days, plan=plan)
    out = Path(options.out_dir)
    write_text(out / "findings.json", findings_to_json(findings, cluster=snapshot.cluster, taken_at=snapshot.taken_at))
    write_text(out / "findings.md", render_findings_md(findings, cluster=snapshot.cluster,
                                                         taken_at=snapshot.taken_at, fail_on=options.fail_on))
    return AuditResult(out, snapshot.cluster, tuple(findings), options.fail_on, tuple(notes))
