"""Running real commands against broken documents and checking the one-line, nothing-written contract."""

from __future__ import annotations

from pathlib import Path

#: The document each command reads, by its place in a run directory.
DOCUMENTS = ("snapshot.json", "plan/plan.json", "audit/findings.json", "pools.toml")


def command_lines(run: Path, out: Path) -> dict[str, list[str]]:
    """Every command that reads the run's documents, writing below ``out`` (which must not exist)."""
    s, p, prof = run / "snapshot.json", run / "pools.toml", run / "profile"
    lines = {
        "plan": ["plan", "--snapshot", s, "--policy", p, "--profile", prof, "--out", out / "plan", "--time-limit", "2"],
        "emit": ["emit", "--plan", run / "plan" / "plan.json", "--snapshot", s, "--out", out / "bundle"],
        "audit": ["audit", "--snapshot", s, "--policy", p, "--profile", prof, "--out", out / "audit"],
        "report": ["report", run, "--policy", p, "--out", out / "report"],
        "place": ["place", "--snapshot", s, "--topic", "new.topic", "--partitions", "6", "--replication-factor", "2",
                  "--out", out / "place.json"],
    }
    return {name: [str(a) for a in argv] for name, argv in lines.items()}


#: Which commands read which document.
READERS = {
    "snapshot.json": ("plan", "emit", "audit", "place", "report"),
    "plan/plan.json": ("emit", "report"),
    "audit/findings.json": ("report",),
    "pools.toml": ("plan", "audit", "report"),
}


def tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` with its bytes (to show nothing of the user's changed)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_clean_failure(code: int, out: str, err: str, *, names: str, field: str | None = None) -> None:
    """Exit 2, no traceback, one error line that names ``names`` (a file) and ``field``."""
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert names in lines[0], lines[0]
    if field is not None:
        assert field in lines[0], lines[0]
