"""`poolplan audit`: check a cluster snapshot against the pool policy; findings.json, findings.md, exit code."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from planner.cli.inputs import read_topic_fanout

from pools.audit.findings import Severity

__all__ = ["command"]

_console = Console(highlight=False, soft_wrap=True)


@click.command(name="audit")
@click.option("--snapshot", "snapshot_path", required=True, type=click.Path(dir_okay=False),
              help="Cluster snapshot (snapshot.json from `poolplan snapshot`).")
@click.option("--policy", "policy_path", required=True, type=click.Path(dir_okay=False), help="Pool policy (TOML).")
@click.option("--profile", "profile_dir", type=click.Path(),
              help="Topic profile directory; enables traffic and forecast checks (absent or missing: counts and disk only).")
@click.option("--consumer-groups", "groups_path", type=click.Path(dir_okay=False),
              help="`kafka-consumer-groups.sh --describe --all-groups` output; its fan-out replaces missing bytes-out.")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False),
              help="plan.json of this snapshot: partitions it moves get its target as their reassignment fix.")
@click.option("--fail-on", default="error", show_default=True,
              type=click.Choice([s.value for s in Severity], case_sensitive=False),
              help="Exit 1 when a finding is at least this severe.")
@click.option("--horizon-days", type=click.IntRange(min=0),
              help="Forecast horizon in days [default: the policy's forecast_horizon_days].")
@click.option("--out", "out_dir", default="audit", show_default=True, type=click.Path(file_okay=False),
              help="Directory for findings.json and findings.md (created if missing; the two files are replaced).")
def command(snapshot_path: str, policy_path: str, profile_dir: str | None, groups_path: str | None,
            plan_path: str | None, fail_on: str, horizon_days: int | None, out_dir: str) -> int:
    """Audit a cluster against its pools: isolation, partition health, capacity and leadership.

    Writes OUT/findings.json (stable, sorted) and OUT/findings.md, each finding with its severity, where it is,
    the evidence and a fix to run. Exit 0 when no finding reaches --fail-on, 1 when one does, 2 on bad input.
    """
    from pools.atomic import check_output, write_text
    from pools.audit import audit, fails, findings_to_json, render_findings_md
    from pools.plan import load_plan
    from pools.policy import load_policy
    from pools.profile import load_profile_dir
    from pools.snapshot import load_snapshot

    threshold = Severity.parse(fail_on, where="--fail-on")
    check_output(out_dir)
    snapshot = load_snapshot(snapshot_path)
    policy = load_policy(policy_path)
    profile = partitions = None
    if profile_dir is not None:
        profile, partitions = load_profile_dir(profile_dir, required=False)
        if profile is None:
            _console.print(f"[yellow]no profile at {profile_dir}: traffic and forecast checks skipped[/]")
    plan = load_plan(plan_path) if plan_path is not None else None
    findings = audit(snapshot, policy, profile, fanout=read_topic_fanout(groups_path), partition_profile=partitions,
                     horizon_days=horizon_days, plan=plan)
    out = Path(out_dir)
    write_text(out / "findings.json", findings_to_json(findings, cluster=snapshot.cluster, taken_at=snapshot.taken_at))
    write_text(out / "findings.md", render_findings_md(findings, cluster=snapshot.cluster,
                                                         taken_at=snapshot.taken_at, fail_on=threshold))
    failing = fails(findings, threshold)
    by_severity = {s.value: sum(f.severity is s for f in findings) for s in Severity}
    summary = ", ".join(f"{n} {s}" for s, n in by_severity.items() if n) or "clean"
    _console.print(f"audit of {snapshot.cluster}: {len(findings)} finding(s) ({summary}); wrote {out}/findings.json")
    return 1 if failing else 0
