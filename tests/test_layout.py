"""Dependency direction (DESIGN section 3): pools imports neither planner nor spark_jobs; only
spark_jobs imports pyspark; only the pool model and the exact placement reference import pulp."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imports(package: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = names
    return found


def test_pools_imports_neither_planner_nor_spark_jobs() -> None:
    offenders = {f: n & {"planner", "spark_jobs", "pyspark", "pulp"} for f, n in _imports("pools").items()}
    assert {f: n for f, n in offenders.items() if n} == {}


def test_only_spark_jobs_imports_pyspark() -> None:
    offenders = {f for pkg in ("pools", "planner") for f, n in _imports(pkg).items() if "pyspark" in n}
    assert offenders == set()


def test_planner_does_not_import_spark_jobs_at_module_level() -> None:
    offenders = set()
    for path in sorted((ROOT / "planner").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spark_jobs"):
                offenders.add(str(path))
            if isinstance(node, ast.Import) and any(a.name.startswith("spark_jobs") for a in node.names):
                offenders.add(str(path))
    assert offenders == set()


def test_pulp_is_confined_to_the_milp_modules() -> None:
    users = {f for f, n in _imports("planner").items() if "pulp" in n}
    assert users <= {"planner/pool_milp.py", "planner/placement/exact.py"}


def test_user_files_are_read_through_pools_files() -> None:
    """One way to read a user's file (pools.files: OS, decoding and syntax errors name the file); the profile's
    Parquet is read by pools.profile, which checks every row."""
    readers = (".read_text(", ".read_bytes(", "json.load(", "tomllib.load(", "pq.read_table(")
    offenders = set()
    for pkg in ("pools", "planner"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if rel in ("pools/files.py", "pools/profile.py"):
                continue
            text = path.read_text(encoding="utf-8")
            if any(r in text for r in readers):
                offenders.add(rel)
    assert offenders == set()


def test_click_and_rich_stay_in_the_cli() -> None:
    users = {f for pkg in ("pools", "planner") for f, n in _imports(pkg).items() if n & {"click", "rich"}}
    assert {f for f in users if not f.startswith("planner/cli/")} == set()
