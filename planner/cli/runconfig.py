"""The quarterly run's configuration: which stages run, and each stage's options, checked before any stage runs.

``conf/quarterly.toml`` has a ``[run]`` table and one table per stage whose keys are that subcommand's long
options (``[plan] time-limit = 60`` is ``poolplan plan --time-limit 60``; a stage of a command group joins its
words with hyphens: ``[brokers-decommission] broker = [5]`` is ``poolplan brokers decommission --broker 5``); a
day-2 run has one operation (`PLAN_STAGES`) in place of ``plan``. The subcommand's click options are the
one definition of a stage's options, so the run accepts every option the command has and checks each value with
the command's own type. String values may use ``{run}`` (the run directory being built), ``{sample}``
(``{run}/sample``) and ``{config_dir}`` (the directory of the config file); other relative paths are relative to
the working directory, as on the command line.

`stage_call` turns a table into the stage's typed options (`planner.cli.stage.Stage.options`), so the run calls
each stage's library function exactly as its command does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from planner.cli import audit, brokers, emit, ingest, plan, rebalance, replication, report, sample, snapshot
from planner.cli.stage import Stage
from pools.errors import InputError
from pools.files import load_toml

__all__ = ["STAGES", "PLAN_STAGES", "STAGE_PATHS", "RUN_STAGES", "RunConfig", "StageCall", "load_run_config",
           "stage_call"]

#: The day-2 operations a run can make its plan with (`planner.stages.operations`), by their run names.
_OPERATIONS: Mapping[str, Stage] = {s.run_name: s for s in (rebalance.STAGE, brokers.ADD, brokers.DECOMMISSION,
                                                            brokers.DEMOTE, brokers.REPLACE, replication.STAGE)}
#: Every stage, by its run name (`Stage.run_name`), in the order a run executes them.
RUN_STAGES: Mapping[str, Stage] = {
    **{s.run_name: s for s in (sample.STAGE, snapshot.STAGE, ingest.STAGE, plan.STAGE)},
    **_OPERATIONS,
    **{s.run_name: s for s in (emit.STAGE, audit.STAGE, report.STAGE)},
}
#: The stages' names, in run order.
STAGES: tuple[str, ...] = tuple(RUN_STAGES)
#: The stages that write the run's plan (``plan/plan.json``, read by emit, audit and report): a run has one at most.
#: A day-2 run has an operation in place of ``plan``.
PLAN_STAGES: tuple[str, ...] = ("plan", *_OPERATIONS)

#: The plan inputs the run makes (`planner.stages.plan_inputs`): plan, audit and the operations read them.
_PLAN_INPUT_PATHS = {"snapshot_path": "{run}/snapshot.json", "profile_dir": "{run}/profile"}
_OPERATION_PATHS = {**_PLAN_INPUT_PATHS, "out_dir": "{run}/plan"}
#: Parameters the run supplies itself (by parameter name), so stages find each other's outputs in the run directory.
#: An operation's profile is the run's only when the run has ``ingest`` (see `stage_call`).
STAGE_PATHS: Mapping[str, Mapping[str, str]] = {
    "sample": {"out_dir": "{run}/sample"},
    "snapshot": {"out_path": "{run}/snapshot.json"},
    "ingest": {"snapshot": "{run}/snapshot.json", "out": "{run}/profile"},
    "plan": _OPERATION_PATHS,
    **{name: _OPERATION_PATHS for name in _OPERATIONS},
    "emit": {"plan_path": "{run}/plan/plan.json", "snapshot_path": "{run}/snapshot.json", "out_dir": "{run}/bundle"},
    "audit": {**_PLAN_INPUT_PATHS, "out_dir": "{run}/audit"},
    "report": {"run_dir": "{run}"},
}

#: Parameters that name something a stage writes (never checked for existence).
_OUTPUTS = frozenset(("out", "out_dir", "out_path", "history", "metrics_path"))


@dataclass(frozen=True)
class RunConfig:
    """A run configuration whose ``[run]`` table is valid; stage tables are checked by `stage_call`."""

    source: Path
    out: Path
    stages: tuple[str, ...]
    options: Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class StageCall:
    """One stage ready to run: the stage, every parameter typed by its command's own option types, and the
    library function's options built from them.

    ``shown`` is the options as the config gave them (after placeholders), for ``run.json``.
    """

    stage: Stage
    params: Mapping[str, Any]
    options: Any
    shown: Mapping[str, Any]


def load_run_config(path: str | os.PathLike[str], *, out: str | None = None) -> RunConfig:
    """Read ``conf/quarterly.toml`` and check its ``[run]`` table; every error names the file and the key."""
    source = Path(path)
    doc = load_toml(source)
    run = doc.get("run", {})
    if not isinstance(run, dict):
        raise InputError(f"{source}: run: expected a table")
    unknown = sorted(set(doc) - {"run", *STAGES})
    if unknown:
        raise InputError(f"{source}: {unknown[0]}: unknown table; expected run or one of {', '.join(STAGES)}")
    unknown = sorted(set(run) - {"out", "stages"})
    if unknown:
        raise InputError(f"{source}: run.{unknown[0]}: unknown key; expected out or stages")
    day2 = "plan" not in doc and any(s in doc for s in _OPERATIONS)
    optional = {"sample", *_OPERATIONS} | ({"plan"} if day2 else set())
    stages = run.get("stages", [s for s in STAGES if s in doc or s not in optional])
    if not isinstance(stages, list) or not all(isinstance(s, str) for s in stages):
        raise InputError(f"{source}: run.stages: expected a list of stage names")
    for s in stages:
        if s not in STAGES:
            raise InputError(f"{source}: run.stages: unknown stage {s!r}; expected one of {', '.join(STAGES)}")
    ordered = tuple(s for s in STAGES if s in stages)
    if list(ordered) != stages:
        raise InputError(f"{source}: run.stages: stages must be in the order {', '.join(STAGES)}")
    writers = [s for s in ordered if s in PLAN_STAGES]
    if len(writers) > 1:
        raise InputError(f"{source}: run.stages: {', '.join(writers[:-1])} and {writers[-1]} each write the run's "
                         "plan; keep one")
    target = out if out is not None else run.get("out", "runs/quarterly")
    if not isinstance(target, str) or not target:
        raise InputError(f"{source}: run.out: expected a directory path")
    options: dict[str, dict[str, Any]] = {}
    for stage in STAGES:
        table = doc.get(stage, {})
        if not isinstance(table, dict):
            raise InputError(f"{source}: {stage}: expected a table of {stage} options")
        options[stage] = table
    return RunConfig(source=source, out=Path(target).resolve(), stages=ordered, options=options)


def stage_call(config: RunConfig, stage: str, run_dir: Path) -> StageCall:
    """Check ``stage``'s table against its command's options and build its typed options for ``run_dir``.

    Raises
    ------
    InputError
        ``file: stage.key: ...`` for an unknown key, a key the run supplies, a value of the wrong type or out of
        range, a required option left out, options that contradict each other, or an input file that neither
        exists nor is made by an earlier stage.
    """
    command = RUN_STAGES[stage].command
    where = f"{config.source}: {stage}"
    names = {"run": str(run_dir), "sample": str(run_dir / "sample"),
             "config_dir": str(config.source.parent.resolve())}
    table = dict(config.options.get(stage, {}))
    supplied = dict(STAGE_PATHS[stage])
    if stage == "audit" and set(PLAN_STAGES) & set(config.stages):  # the audit's fixes follow the run's plan
        supplied["plan_path"] = "{run}/plan/plan.json"
    if stage in _OPERATIONS and "ingest" not in config.stages:  # its profile is optional: the table's, or none
        del supplied["profile_dir"]
    by_key = {_key(p): p for p in command.params if p.name not in supplied}
    for key in table:
        if key not in by_key:
            if any(_key(p) == key for p in command.params):
                raise InputError(f"{where}.{key}: supplied by the run (the stages find each other's files)")
            known = ", ".join(sorted(by_key))
            raise InputError(f"{where}.{key}: unknown option of poolplan {RUN_STAGES[stage].name}; "
                             f"expected one of {known}")
    given: dict[str, Any] = {name: _expand(value, names, "run") for name, value in supplied.items()}
    shown: dict[str, Any] = {}
    for key, value in table.items():
        param = by_key[key]
        shown[key] = _expand(value, names, f"{where}.{key}")
        given[str(param.name)] = _shape(param, shown[key], f"{where}.{key}")
    try:  # click's own config mechanism: the values are defaults of a command line with no arguments
        ctx = command.make_context(stage, [], default_map=given)
    except click.BadParameter as exc:
        key = _key(exc.param) if exc.param is not None else "?"
        if isinstance(exc, click.MissingParameter):
            raise InputError(f"{where}.{key}: missing (poolplan {RUN_STAGES[stage].name} requires it)") from None
        raise InputError(f"{where}.{key}: {exc.message}") from None
    except click.ClickException as exc:
        raise InputError(f"{where}: {exc.format_message()}") from None
    params = dict(ctx.params)
    for key, value in shown.items():
        if by_key[key].name not in _OUTPUTS and isinstance(by_key[key].type, click.Path):
            for item in value if isinstance(value, list) else [value]:
                _check_input(item, run_dir, f"{where}.{key}")
    try:
        options = RUN_STAGES[stage].options(params)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    return StageCall(RUN_STAGES[stage], params, options, shown)


def _key(param: click.Parameter) -> str:
    """A parameter's key in the config: its first long option without dashes (``time-limit``)."""
    longs = [o for o in param.opts if o.startswith("--")]
    return longs[0][2:] if longs else str(param.name)


def _shape(param: click.Parameter, value: Any, where: str) -> Any:
    """TOML value → what the option's type accepts: lists only for repeatable options, no silent float→int."""
    multiple = getattr(param, "multiple", False)
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not multiple:
        raise InputError(f"{where}: expected a single value, got a list")
    if isinstance(value, dict):
        raise InputError(f"{where}: expected a string, number or boolean, got a table")
    for item in items:
        kind = param.type
        flag = getattr(param, "is_flag", False)
        if flag and not isinstance(item, bool):
            raise InputError(f"{where}: expected true or false, got {item!r}")
        if isinstance(kind, click.types.IntParamType) and (isinstance(item, bool) or not isinstance(item, int)):
            raise InputError(f"{where}: expected an integer, got {item!r}")
        if isinstance(kind, click.types.FloatParamType) and (
            isinstance(item, bool) or not isinstance(item, (int, float))
        ):
            raise InputError(f"{where}: expected a number, got {item!r}")
        if isinstance(kind, (click.types.StringParamType, click.Path, click.Choice)) and not isinstance(item, str):
            raise InputError(f"{where}: expected a string, got {item!r}")
    return tuple(items) if multiple else value


def _check_input(value: Any, run_dir: Path, where: str) -> None:
    path = Path(str(value))
    inside = path.resolve().is_relative_to(run_dir.resolve())
    if not inside and not path.exists():
        raise InputError(f"{where}: {path}: no such file or directory")


def _expand(value: Any, names: Mapping[str, str], where: str) -> Any:
    if isinstance(value, list):
        return [_expand(v, names, where) for v in value]
    if not isinstance(value, str):
        return value
    try:
        return value.format(**names)
    except (KeyError, IndexError, ValueError) as exc:
        raise InputError(
            f"{where}: bad placeholder in {value!r} ({exc}); expected {{run}}, {{sample}} or {{config_dir}}"
        ) from None
