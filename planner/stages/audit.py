"""The audit stage: a cluster snapshot checked against the pool policy, written to findings.json and findings.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner.stages.plan_inputs import PlanInputOptions
from pools.audit.findings import Severity
from pools.progress import ProgressReporter, no_progress

if TYPE_CHECKING:
    from pools.audit.findings import Finding

__all__ = ["AuditOptions", "AuditResult", "audit"]


@dataclass(frozen=True, kw_only=True)
class AuditOptions(PlanInputOptions):
    """The options of ``poolplan audit``: the plan inputs (the profile optional), the plan to check against,
    ``fail_on`` (parsed) and the output."""

    out_dir: str = "audit"
    fail_on: Severity = Severity.ERROR
    plan_path: str | None = None


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


def audit(options: AuditOptions, *, progress: ProgressReporter = no_progress) -> AuditResult:
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
    from planner.stages.plan_inputs import load_plan_inputs
    from pools.plan_file import load_plan

    check_output(options.out_dir)
    inputs = load_plan_inputs(options, profile_required=False, progress=progress)
    snapshot, notes = inputs.snapshot, inputs.notes
    plan = load_plan(options.plan_path) if options.plan_path is not None else None
    progress("checking the cluster against the policy")
    findings = audit_cluster(snapshot, inputs.policy, inputs.profile, fanout=inputs.fanout,
                             partition_profile=inputs.partitions, horizon_days=inputs.horizon_days, plan=plan)
    out = Path(options.out_dir)
    write_text(out / "findings.json", findings_to_json(findings, cluster=snapshot.cluster, taken_at=snapshot.taken_at))
    write_text(out / "findings.md", render_findings_md(findings, cluster=snapshot.cluster,
                                                         taken_at=snapshot.taken_at, fail_on=options.fail_on))
    return AuditResult(out, snapshot.cluster, tuple(findings), options.fail_on, notes)
