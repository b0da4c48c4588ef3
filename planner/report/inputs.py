"""Read a run directory for the report, stage by stage, noting what is missing or unreadable instead of failing."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.emit.progress import Progress, progress_from_dict
from pools.audit.findings import Finding, findings_from_dict
from pools.errors import InputError
from pools.files import load_json
from pools.plan_file import Plan, load_plan
from pools.policy import PoolPolicy, load_policy
from pools.profile import BACKTEST_FILE, TOPIC_PROFILE_FILE, BacktestRow, TopicProfile, load_backtest, load_profile_dir
from pools.snapshot import ClusterSnapshot, load_snapshot

__all__ = ["RunInputs", "load_run", "load_previous_run", "RUN_FILES"]

#: Where each stage's output lives inside a run directory.
RUN_FILES = {
    "snapshot": "snapshot.json",
    "profile": "profile",
    "plan": "plan/plan.json",
    "bundle": "bundle/summary.json",
    "audit": "audit/findings.json",
    "progress": "progress/progress.json",
}


@dataclass(frozen=True)
class RunInputs:
    """What a run directory holds; ``None`` for a stage whose output is absent, with the reason in ``notes``."""

    run_dir: str
    snapshot: ClusterSnapshot | None = None
    profile: dict[str, TopicProfile] | None = None
    plan: Plan | None = None
    bundle: dict[str, Any] | None = None
    findings: tuple[Finding, ...] | None = None
    policy: PoolPolicy | None = None
    notes: dict[str, str] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    backtest: list[BacktestRow] | None = None
    progress: Progress | None = None


def load_run(run_dir: str | os.PathLike[str], *, policy: str | os.PathLike[str] | None = None) -> RunInputs:
    """Read every stage output of ``run_dir``; a missing or malformed file becomes a note naming it.

    Raises
    ------
    InputError
        When ``run_dir`` is not a directory or ``policy`` cannot be read (the one input the user names).
    """
    root = Path(run_dir)
    if not root.is_dir():
        raise InputError(f"{root}: not a directory (expected a run directory from `poolplan run`)")
    notes: dict[str, str] = {}
    unreadable: dict[str, str] = {}
    values: dict[str, Any] = {}
    readers = {
        "snapshot": load_snapshot,
        "profile": _profile,
        "plan": load_plan,
        "bundle": _bundle,
        "audit": lambda p: findings_from_dict(_json(p), source=str(p)),
    }
    for stage, reader in readers.items():
        path = root / RUN_FILES[stage]
        if not path.exists():
            notes[stage] = f"{RUN_FILES[stage]} is missing (the {stage} stage did not run)"
            continue
        try:
            values[stage] = reader(path)
        except InputError as exc:
            notes[stage] = f"{RUN_FILES[stage]} could not be read: {str(exc).replace(str(root) + '/', '')}"
            unreadable[stage] = str(exc)
    progress = None
    path = root / RUN_FILES["progress"]
    if path.exists():  # optional: only a run whose reassignment is being watched has one
        try:
            progress = progress_from_dict(_json(path), source=str(path))
        except InputError as exc:
            notes["progress"] = f"{RUN_FILES['progress']} could not be read: {str(exc).replace(str(root) + '/', '')}"
            unreadable["progress"] = str(exc)
    backtest = None
    if "profile" in values:
        try:
            backtest = load_backtest(root / RUN_FILES["profile"])
        except InputError as exc:
            notes["backtest"] = f"{RUN_FILES['profile']}/{BACKTEST_FILE} could not be read: " \
                                f"{str(exc).replace(str(root) + '/', '')}"
    return RunInputs(
        run_dir=str(root),
        snapshot=values.get("snapshot"),
        profile=values.get("profile"),
        plan=values.get("plan"),
        bundle=values.get("bundle"),
        findings=values.get("audit"),
        policy=load_policy(policy) if policy is not None else None,
        notes=notes,
        unreadable=unreadable,
        backtest=backtest,
        progress=progress,
    )


def load_previous_run(run_dir: str | os.PathLike[str], *, current: str | os.PathLike[str]) -> RunInputs:
    """Read the earlier run a report compares with; unlike `load_run`, an unreadable stage output is an error.

    Raises
    ------
    InputError
        When ``run_dir`` is not a run directory, is ``current`` itself, holds an unreadable stage output (the
        message is the reader's, naming the file and field), or has neither a snapshot, a plan nor a profile.
    """
    root = Path(run_dir)
    if not root.is_dir():
        raise InputError(f"--compare: {root}: not a directory (expected an earlier run directory)")
    if root.resolve() == Path(current).resolve():
        raise InputError(f"--compare: {root}: is the run being reported; name an earlier run directory")
    run = load_run(root)
    if run.unreadable:
        stage = sorted(run.unreadable)[0]
        raise InputError(f"--compare: {run.unreadable[stage]}")
    if run.snapshot is None and run.plan is None and run.profile is None:
        raise InputError(f"--compare: {root}: holds no {RUN_FILES['snapshot']}, {RUN_FILES['plan']} or "
                         f"{RUN_FILES['profile']}/ to compare with")
    return run


def _profile(path: Path) -> dict[str, TopicProfile]:
    if not (path / TOPIC_PROFILE_FILE).exists():
        raise InputError(f"{path}: no {TOPIC_PROFILE_FILE}")
    return load_profile_dir(path)[0] or {}


def _json(path: Path) -> Any:
    return load_json(path)


def _bundle(path: Path) -> dict[str, Any]:
    doc = _json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("batches", []), list):
        raise InputError(f"{path}: expected an object with a 'batches' array")
    return doc
