"""Shared fixtures: the repository paths, the CLI runner and one SparkSession per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The golden files copied from Kafka's tools and conformance runs."""
    return DATA


@pytest.fixture()
def run_cli(capsys: pytest.CaptureFixture[str]):
    """Run ``poolplan`` in-process; return ``(exit_code, stdout, stderr)``."""
    from planner.cli import main

    def _run(*argv: str) -> tuple[int, str, str]:
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return _run


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession shared by the whole test session (local[2], no UI, 2 shuffle partitions)."""
    from spark_jobs.session import build_session

    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    session = build_session(
        master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
        app_name="poolplan-tests",
    )
    yield session
    session.stop()
