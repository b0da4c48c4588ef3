"""`poolplan audit`: check a cluster snapshot against the pool policy; findings.json, findings.md, exit code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from planner.cli.options import horizon_days_option, plan_input_options
from planner.cli.stage import Outcome, Stage, run_command
from planner.stages.audit import AuditOptions, AuditResult, audit
from pools.audit.findings import Severity
from pools.units import format_plural

__all__ = ["command", "STAGE"]


@click.command(name="audit")
@plan_input_options(snapshot_help="Cluster snapshot (snapshot.json from `poolplan snapshot`).", policy_required=True,
                    profile_help="Topic profile directory; enables traffic and forecast checks (absent or missing: "
                                 "counts and disk only).")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False),
              help="plan.json of this snapshot: partitions it moves get its target as their reassignment fix.")
@click.option("--fail-on", default="error", show_default=True,
              type=click.Choice([s.value for s in Severity], case_sensitive=False),
              help="Exit 1 when a finding is at least this severe.")
@horizon_days_option
@click.option("--since", "since_dir", type=click.Path(file_okay=False),
              help="An earlier audit's --out directory (or a run directory): OUT/drift.json lists the findings that "
                   "appeared, cleared and persisted since (it may be OUT itself: it is read before OUT is written).")
@click.option("--metrics", "metrics_path", type=click.Path(dir_okay=False),
              help="Also write the audit's metrics to this file in the node exporter's textfile format (replaced "
                   "atomically; name it *.prom in the collector's directory).")
@click.option("--out", "out_dir", default="audit", show_default=True, type=click.Path(file_okay=False),
              help="Directory for findings.json and findings.md (created if missing; the two files are replaced).")
def command(**params: Any) -> int:
    """Audit a cluster against its pools: isolation, partition health, capacity and leadership.

    Writes OUT/findings.json (stable, sorted) and OUT/findings.md, each finding with its severity, where it is,
    the evidence and a fix to run; --since compares with an earlier audit, --metrics writes metrics for
    Prometheus. Exit 0 when no finding reaches --fail-on, 1 when one does, 2 on bad input.
    """
    return run_command(STAGE, params)


def _options(params: Mapping[str, Any]) -> AuditOptions:
    return AuditOptions(**{**params, "fail_on": Severity.parse(params["fail_on"], where="--fail-on")})


def _outcome(result: AuditResult) -> Outcome:
    counts = ", ".join(f"{n} {s.value}" for s, n in result.by_severity.items() if n) or "clean"
    d = result.drift
    since = "" if d is None else f"; since the earlier audit {len(d.appeared)} appeared, {len(d.cleared)} " \
                                 f"cleared, {len(d.persisted)} persisted"
    return Outcome(
        subject=f"audit of {result.cluster}",
        summary=f"{format_plural(len(result.findings), 'finding')} ({counts}){since}",
        written=result.out_dir / "findings.json",
        code=1 if result.failing else 0,
        warnings=result.notes,
        headline=f"findings: {counts}" + (f" (exit 1: at least {result.fail_on.value})" if result.failing else ""),
    )


STAGE = Stage("audit", command, _options, audit, _outcome)
