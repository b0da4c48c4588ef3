"""The quarterly run's configuration: which stages run, and each stage's options.

``conf/quarterly.toml`` has a ``[run]`` table and one table per stage whose keys are that subcommand's
long options (``[plan] time-limit = 60`` becomes ``poolplan plan --time-limit 60``). String values may use
``{run}`` (the run directory being built), ``{sample}`` (``{run}/sample``) and ``{config_dir}`` (the
directory of the config file); other relative paths are relative to the working directory, as on the
command line.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pools.errors import InputError

__all__ = ["STAGES", "STAGE_PATHS", "RunConfig", "load_run_config", "stage_argv"]

#: Every stage, in the order a run executes them.
STAGES: tuple[str, ...] = ("sample", "snapshot", "ingest", "plan", "emit", "audit", "report")

#: Options the run supplies itself, so stages find each other's outputs inside the run directory.
STAGE_PATHS: Mapping[str, tuple[str, ...]] = {
    "sample": ("--out", "{run}/sample"),
    "snapshot": ("--out", "{run}/snapshot.json"),
    "ingest": ("--snapshot", "{run}/snapshot.json", "--out", "{run}/profile"),
    "plan": ("--snapshot", "{run}/snapshot.json", "--profile", "{run}/profile", "--out", "{run}/plan"),
    "emit": ("--plan", "{run}/plan/plan.json", "--snapshot", "{run}/snapshot.json", "--out", "{run}/bundle"),
    "audit": ("--snapshot", "{run}/snapshot.json", "--profile", "{run}/profile", "--out", "{run}/audit"),
    "report": ("{run}",),
}


@dataclass(frozen=True)
class RunConfig:
    """A validated run configuration."""

    source: Path
    out: Path
    stages: tuple[str, ...]
    options: Mapping[str, Mapping[str, Any]]


def load_run_config(path: str | os.PathLike[str], *, out: str | None = None) -> RunConfig:
    """Read ``conf/quarterly.toml``; every error names the file and the key."""
    source = Path(path)
    try:
        doc = tomllib.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{source}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source}: invalid TOML: {exc}") from None
    run = doc.get("run", {})
    if not isinstance(run, dict):
        raise InputError(f"{source}: run: expected a table")
    unknown = sorted(set(doc) - {"run", *STAGES})
    if unknown:
        raise InputError(f"{source}: {unknown[0]}: unknown table; expected run or one of {', '.join(STAGES)}")
    unknown = sorted(set(run) - {"out", "stages"})
    if unknown:
        raise InputError(f"{source}: run.{unknown[0]}: unknown key; expected out or stages")
    stages = run.get("stages", [s for s in STAGES if s in doc or s != "sample"])
    if not isinstance(stages, list) or not all(isinstance(s, str) for s in stages):
        raise InputError(f"{source}: run.stages: expected a list of stage names")
    for s in stages:
        if s not in STAGES:
            raise InputError(f"{source}: run.stages: unknown stage {s!r}; expected one of {', '.join(STAGES)}")
    ordered = tuple(s for s in STAGES if s in stages)
    if list(ordered) != stages:
        raise InputError(f"{source}: run.stages: stages must be in the order {', '.join(STAGES)}")
    target = out if out is not None else run.get("out", "runs/quarterly")
    if not isinstance(target, str) or not target:
        raise InputError(f"{source}: run.out: expected a directory path")
    options: dict[str, dict[str, Any]] = {}
    for stage in STAGES:
        table = doc.get(stage, {})
        if not isinstance(table, dict):
            raise InputError(f"{source}: {stage}: expected a table of {stage} options")
        for key, value in table.items():
            if not isinstance(value, (str, int, float, bool, list)) or (
                isinstance(value, list) and not all(isinstance(v, (str, int, float)) for v in value)
            ):
                raise InputError(f"{source}: {stage}.{key}: expected a string, number, boolean or list of them")
        options[stage] = table
    return RunConfig(source=source, out=Path(target).resolve(), stages=ordered, options=options)


def stage_argv(config: RunConfig, stage: str, run_dir: Path) -> list[str]:
    """The argument list that runs ``stage`` of ``config`` inside ``run_dir``."""
    names = {"run": str(run_dir), "sample": str(run_dir / "sample"), "config_dir": str(config.source.parent.resolve())}
    argv = [stage]
    for key, value in config.options.get(stage, {}).items():
        flag = f"--{key}"
        if isinstance(value, bool):
            if value:
                argv.append(flag)
            continue
        for item in value if isinstance(value, list) else [value]:
            argv += [flag, _expand(item, names, f"{config.source}: {stage}.{key}")]
    argv += [_expand(a, names, "run") for a in STAGE_PATHS[stage]]
    if stage == "audit" and "plan" in config.stages:  # the audit's reassignment fixes follow the run's plan
        argv += ["--plan", str(run_dir / "plan" / "plan.json")]
    return argv


def _expand(value: Any, names: Mapping[str, str], where: str) -> str:
    if not isinstance(value, str):
        return str(value)
    try:
        return value.format(**names)
    except (KeyError, IndexError, ValueError) as exc:
        raise InputError(
            f"{where}: bad placeholder in {value!r} ({exc}); expected {{run}}, {{sample}} or {{config_dir}}"
        ) from None
