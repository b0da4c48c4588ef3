"""pytest plugin for the tests and the doctests alike (``-p tests.plugin`` in pyproject.toml).

It holds the one SparkSession of a test session (`spark`, local[2], started on first use) so that the docstring
examples of ``spark_jobs`` can use it too: a doctest whose examples mention ``spark`` finds it in its namespace.
Under pytest-xdist (``make check``, ``make test``) every worker is a test session of its own, with its own
SparkSession: each gets a 1 GiB heap, so two workers stay well inside a small machine's memory.

It also registers the Hypothesis profiles, chosen with ``--hypothesis-profile`` (``ci`` when none is named):

- ``ci`` (``make test`` and CI): every property runs `CI_EXAMPLES` examples, or the count its test asks for;
- ``check`` (``make check``): a tenth of that, at least two, so the inner loop stays fast.

A property whose examples are expensive asks for fewer with `examples`, which scales with the profile:

>>> examples(40) == (40 if settings.default.max_examples == CI_EXAMPLES else 4)
True
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

__all__ = ["CI_EXAMPLES", "CHECK_EXAMPLES", "examples", "spark"]

#: Examples per property in the ``ci`` profile (Hypothesis's own default is 100).
CI_EXAMPLES = 200
#: Examples per property in the ``check`` profile.
CHECK_EXAMPLES = 20

settings.register_profile("ci", max_examples=CI_EXAMPLES, deadline=None, print_blob=True)
settings.register_profile("check", max_examples=CHECK_EXAMPLES, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def examples(ci: int) -> int:
    """``ci`` examples under the ``ci`` profile, scaled like the loaded profile's count (at least 2).

    For properties whose every example runs a planner, an ingest or a whole stage: they name their count
    under ``ci`` and get a tenth of it under ``check``.
    """
    return max(2, ci * settings.default.max_examples // CI_EXAMPLES)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession per test session (local[2], 1 GiB heap, no UI, 2 shuffle partitions)."""
    from spark_jobs.session import build_session

    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    session = build_session(
        master="local[2]",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"},
        app_name="poolplan-tests",
    )
    yield session
    session.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the SparkSession carries the ``spark`` mark, whether it asks for the `spark` fixture or
    is a doctest whose examples mention it: ``make check`` leaves them to ``make check-spark`` and ``make test``."""
    for item in items:
        test = getattr(item, "dtest", None)
        uses = "spark" in getattr(item, "fixturenames", ()) or (
            test is not None and any("spark" in example.source for example in test.examples))
        if uses and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(autouse=True)
def _spark_for_doctests(request: pytest.FixtureRequest) -> None:
    test = getattr(request.node, "dtest", None)  # a doctest item
    if test is not None and any("spark" in example.source for example in test.examples):
        request.getfixturevalue("doctest_namespace")["spark"] = request.getfixturevalue("spark")
