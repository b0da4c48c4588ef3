"""A small valid run directory built once: the documents the bad-input tests break."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def valid_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """snapshot.json, pools.toml, profile/, plan/plan.json, bundle/, audit/findings.json of a 6-broker cluster."""
    from planner.cli import main
    from benchmarks.random_clusters import random_cluster
    from pools.policy import save_policy
    from pools.profile import save_profile
    from pools.snapshot import save_snapshot

    root = tmp_path_factory.mktemp("valid-run")
    snapshot, policy, profile = random_cluster(6, 10, 2, misplaced=0.3, seed=3)
    save_snapshot(snapshot, root / "snapshot.json")
    save_policy(policy, root / "pools.toml")
    save_profile(root / "profile", profile)
    s, p, prof = str(root / "snapshot.json"), str(root / "pools.toml"), str(root / "profile")
    # exit 1: pool p0 needs a broker more (the plan is written all the same); the audit finds the misplaced replicas
    assert main(["plan", "--snapshot", s, "--policy", p, "--profile", prof, "--out", str(root / "plan"),
                 "--time-limit", "5"]) == 1
    assert main(["emit", "--plan", str(root / "plan" / "plan.json"), "--snapshot", s, "--out",
                 str(root / "bundle")]) == 0
    assert main(["audit", "--snapshot", s, "--policy", p, "--profile", prof, "--out", str(root / "audit")]) == 1
    return root


@pytest.fixture()
def run_copy(valid_run: Path, tmp_path: Path) -> Path:
    """A private copy of `valid_run` a test may break."""
    target = tmp_path / "run"
    shutil.copytree(valid_run, target)
    return target
