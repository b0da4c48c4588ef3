"""pytest plugin for the tests and the doctests alike (``-p tests.plugin`` in pyproject.toml).

It holds the one SparkSession of a test session (`spark`, local[2], started on first use) so that the docstring
examples of ``spark_jobs`` can use it too: a doctest whose examples mention ``spark`` finds it in its namespace.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


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


@pytest.fixture(autouse=True)
def _spark_for_doctests(request: pytest.FixtureRequest) -> None:
    test = getattr(request.node, "dtest", None)  # a doctest item
    if test is not None and any("spark" in example.source for example in test.examples):
        request.getfixturevalue("doctest_namespace")["spark"] = request.getfixturevalue("spark")
