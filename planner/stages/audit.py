"""The audit stage: a cluster snapshot checked against the pool policy, written to findings.json and findings.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner.stages.plan_inputs import PlanInputOptions
from pools.audit.findings import Severity
from pools.progress import ProgressReporter, no_progress

if TYPE_CHECKING:
    from pools.audit.drift import Drift
    from pools.audit.findings import Finding
    from pools.plan_file import Plan
    from planner.stages.plan_inputs import PlanInputs

__all__ = ["AuditOptions", "AuditResult", "audit"]


@dataclass(frozen=True, kw_only=True)
class AuditOptions(PlanInputOptions):
    """The options of ``poolplan audit``: the plan inputs (the profile optional), the plan to check against,
    ``fail_on`` (parsed), the output, the metrics textfile to write and the earlier audit to compare with."""

    out_dir: str = "audit"
    fail_on: Severity = Severity.ERROR
    plan_path: str | None = None
    metrics_path: str | None = None
    since_dir: str | None = None


@dataclass(frozen=True)
class AuditResult:
    """The findings, where they were written, the cluster and what the audit could not check."""

    out_dir: Path
    cluster: str
    findings: tuple[Finding, ...]
    fail_on: Severity
    notes: tuple[str, ...] = ()
    drift: Drift | None = None
    metrics_path: Path | None = None

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
    skipped (a note says so). With ``since_dir`` (an earlier audit's directory, or a run directory) it also
    writes ``OUT/drift.json``: the findings that appeared, cleared and persisted. With ``metrics_path`` it writes
    the audit's metrics in the node exporter's textfile format (`planner.audit_metrics`).

    Raises
    ------
    InputError
        For an unreadable input or an output that cannot be written.
    """
    from planner.stages.plan_inputs import load_plan_inputs
    from pools.atomic import check_output, remove_file, write_text
    from pools.audit import audit as audit_cluster
    from pools.audit import findings_to_json, render_findings_md
    from pools.audit.drift import drift, drift_to_json, load_earlier_findings
    from pools.plan_file import load_plan

    check_output(options.out_dir)
    if options.metrics_path is not None:
        check_output(options.metrics_path, directory=False)
    inputs = load_plan_inputs(options, profile_required=False, progress=progress)
    snapshot, notes = inputs.snapshot, inputs.notes
    plan = load_plan(options.plan_path) if options.plan_path is not None else None
    earlier = None if options.since_dir is None else load_earlier_findings(options.since_dir, cluster=snapshot.cluster)
    progress("checking the cluster against the policy")
    findings = audit_cluster(snapshot, inputs.policy, inputs.profile, fanout=inputs.fanout,
                             partition_profile=inputs.partitions, horizon_days=inputs.horizon_days, plan=plan)
    changes = None if earlier is None else drift(earlier[1], findings, since=str(earlier[0]))
    metrics = _metrics_text(inputs, plan, findings, options, changes) if options.metrics_path is not None else None
    out = Path(options.out_dir)
    write_text(out / "findings.json", findings_to_json(findings, cluster=snapshot.cluster, taken_at=snapshot.taken_at))
    write_text(out / "findings.md", render_findings_md(findings, cluster=snapshot.cluster, taken_at=snapshot.taken_at,
                                                         fail_on=options.fail_on, drift=changes))
    if changes is not None:
        write_text(out / "drift.json", drift_to_json(changes))
    else:
        remove_file(out / "drift.json")  # an earlier audit's drift into this directory is not this one's
    if metrics is not None:
        write_text(options.metrics_path, metrics, mode=0o644)  # the node exporter runs as another user
    return AuditResult(out, snapshot.cluster, tuple(findings), options.fail_on, notes, changes,
                       None if options.metrics_path is None else Path(options.metrics_path))


def _metrics_text(inputs: PlanInputs, plan: Plan | None, findings: tuple[Finding, ...], options: AuditOptions,
                  changes: Drift | None) -> str:
    """The audit's metrics: pool utilisation, limits and runway from the report's own model of these inputs."""
    from planner.audit_metrics import audit_metrics, render_textfile
    from planner.report.inputs import RunInputs
    from planner.report.model import build_model
    from pools.profile import load_backtest

    backtest = load_backtest(options.profile_dir) if inputs.profile and options.profile_dir else None
    run = RunInputs(run_dir=options.out_dir, snapshot=inputs.snapshot, profile=inputs.profile, plan=plan,
                    findings=findings, policy=inputs.policy, backtest=backtest)
    model = build_model(run)
    snapshot, policy = inputs.snapshot, inputs.policy
    names = sorted({p.pool for p in model.pools} | set(policy.pool_names))
    lead = policy.new_broker.lead_time_days if policy.new_broker else None
    return render_textfile(audit_metrics(snapshot.cluster, findings, taken_at=snapshot.taken_at,
                                         fail_on=options.fail_on, pools=model.pools, pool_names=names,
                                         runway=model.runway, lead_time_days=lead, drift=changes))
