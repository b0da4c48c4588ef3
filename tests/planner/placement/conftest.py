"""Conformance vectors computed by Kafka's own Java code (tests/data/conformance)."""

from __future__ import annotations

import json
from pathlib import Path

from planner.placement import PlacementError

CONFORMANCE = Path(__file__).resolve().parents[2] / "data" / "conformance"


def load_vectors(name: str) -> list[dict]:
    """Every line of a conformance file, in file order."""
    with (CONFORMANCE / name).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def kafka_error(exc: PlacementError) -> dict[str, str]:
    """The vector's ``error`` form of one of our placement errors: simple Java class name and message."""
    return {"exception": type(exc).__name__.removesuffix("Error") + "Exception", "message": str(exc)}


def expected_error(vector: dict) -> dict[str, str]:
    """The vector's error with the Java package stripped from the class name."""
    error = vector["error"]
    return {"exception": error["exception"].rsplit(".", 1)[-1], "message": error["message"]}

