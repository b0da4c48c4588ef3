"""A tiny sample generated once per test session, as text in memory."""

from __future__ import annotations

import json

import pytest

from planner.sample import SampleSpec, sample_files

TINY = SampleSpec(seed=7, brokers=6, topics=6, days=2, step_s=60)


@pytest.fixture(scope="session")
def tiny_spec() -> SampleSpec:
    return TINY


@pytest.fixture(scope="session")
def tiny() -> dict[str, str]:
    """``{relative path: text}`` of the tiny sample."""
    return dict(sample_files(TINY))


@pytest.fixture(scope="session")
def tiny_truth(tiny: dict[str, str]) -> dict:
    return json.loads(tiny["truth.json"])
