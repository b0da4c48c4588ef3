"""Shared fixtures: the repository paths and the CLI runner (the SparkSession is `tests.plugin`'s)."""

from __future__ import annotations

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
