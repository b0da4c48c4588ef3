"""The what-if stage: a run's inputs changed by a scenario (`planner.whatif`), planned and reported again."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pools.progress import ProgressReporter, no_progress

__all__ = ["WhatifOptions", "WhatifResult", "whatif", "parse_changes"]


@dataclass(frozen=True)
class WhatifOptions:
    """The options of ``poolplan whatif``: a scenario file and/or its changes as flags (``tenant:ads=2``,
    ``pool:stream=1.5``; ``stream=2`` brokers; ``ads=core`` for a tenant's new pool)."""

    run_dir: str
    policy_path: str
    scenario_path: str | None = None
    demand: tuple[str, ...] = ()
    add_brokers: tuple[str, ...] = ()
    move_tenant: tuple[str, ...] = ()
    lose_rack: tuple[str, ...] = ()
    out_dir: str | None = None
    groups_path: str | None = None
    time_limit: float = 60.0


@dataclass(frozen=True)
class WhatifResult:
    """Where the scenario's report went, what its plan says the pools lack (empty: it fits), and for a lost rack
    what it does to the partitions (``lost_racks.json``, `planner.whatif.lost_partitions`; ``None`` otherwise)."""

    out_dir: Path
    html: Path
    shortfall: tuple[str, ...]
    lost: dict | None = None


def parse_changes(demand: tuple[str, ...], add_brokers: tuple[str, ...], move_tenant: tuple[str, ...],
                  lose_rack: tuple[str, ...] = ()):
    """The `planner.whatif.Scenario` of the command-line flags.

    Examples
    --------
    >>> parse_changes(("tenant:ads=2",), ("stream=1",), ("ads=core",), ("r2",))
    Scenario(demand=(('tenant', 'ads', 2.0),), add_brokers=(('stream', 1),), move_tenant=(('ads', 'core'),), \
lose_rack=('r2',))
    """
    from planner.whatif import Scenario
    from pools.errors import InputError

    def split(flag: str, text: str) -> tuple[str, str]:
        name, sep, value = text.partition("=")
        if not sep or not name or not value:
            raise InputError(f"{flag} {text!r}: expected NAME=VALUE")
        return name, value

    out = []
    for text in demand:
        name, value = split("--demand", text)
        kind, sep, who = name.partition(":")
        if not sep or kind not in ("tenant", "pool") or not who:
            raise InputError(f"--demand {text!r}: expected tenant:NAME=FACTOR or pool:NAME=FACTOR")
        try:
            factor = float(value)
        except ValueError:
            factor = float("nan")
        if not factor > 0 or factor == float("inf"):
            raise InputError(f"--demand {text!r}: the factor must be a positive number")
        out.append((kind, who, factor))
    brokers = []
    for text in add_brokers:
        pool, value = split("--add-brokers", text)
        if not value.isdigit() or int(value) < 1:
            raise InputError(f"--add-brokers {text!r}: the count must be a whole number >= 1")
        brokers.append((pool, int(value)))
    moves = [split("--move-tenant", text) for text in move_tenant]
    for rack in lose_rack:
        if not rack:
            raise InputError("--lose-rack '': expected a rack name")
    return Scenario(tuple(out), tuple(brokers), tuple(moves), tuple(lose_rack))


def whatif(options: WhatifOptions, *, progress: ProgressReporter = no_progress) -> WhatifResult:
    """Apply the scenario to the run's inputs into ``out_dir`` (default RUN_DIR/whatif), plan them (``plan/``) and
    report the result compared with the run (``report/``).

    Raises
    ------
    InputError
        For an unreadable input, an empty scenario, or a tenant, pool or count the scenario names wrongly.
    InfeasibleError
        When the changed policy cannot keep its tenants apart. With a lost rack the rack rules are first relaxed
        to the racks left (`planner.whatif.relax_rack_rules`, listed in ``lost_racks.json``'s ``relaxed``); a plan
        the brokers left still cannot make is no error: the report is made without a plan and ``plan_refused``
        says why.
    """
    from planner.stages.plan import PlanOptions, plan
    from planner.stages.report import ReportOptions, report
    from planner.whatif import LOST_RACKS_FILE, Scenario, apply_scenario, load_scenario
    from pools.atomic import dump_json, write_text
    from pools.errors import InfeasibleError, InputError
    from pools.files import load_json

    scenario = load_scenario(options.scenario_path) if options.scenario_path else Scenario()
    flags = parse_changes(options.demand, options.add_brokers, options.move_tenant, options.lose_rack)
    scenario = Scenario(scenario.demand + flags.demand, scenario.add_brokers + flags.add_brokers,
                        scenario.move_tenant + flags.move_tenant, scenario.lose_rack + flags.lose_rack)
    if not scenario:
        raise InputError("whatif: no scenario: give --scenario FILE or --demand, --add-brokers, --move-tenant, "
                         "--lose-rack")
    out = Path(options.out_dir) if options.out_dir else Path(options.run_dir) / "whatif"
    progress("applying the scenario to the run's inputs")
    snapshot, profile, policy = apply_scenario(options.run_dir, options.policy_path, scenario, out)
    progress("planning the changed inputs")
    shortfall: tuple[str, ...] = ()
    refused = None
    try:
        shortfall = plan(PlanOptions(snapshot_path=str(snapshot), policy_path=str(policy), profile_dir=str(profile),
                                     groups_path=options.groups_path, out_dir=str(out / "plan"),
                                     time_limit=options.time_limit), progress=progress).shortfall
    except (InputError, InfeasibleError) as exc:
        # a lost rack can leave a pool or a replication factor more racks than there are: that is the answer
        if not scenario.lose_rack or not (isinstance(exc, InfeasibleError) or str(exc).startswith(str(policy))):
            raise
        refused = str(exc)
    progress("reporting, compared with the run")
    written = report(ReportOptions(str(out), str(policy), str(out / "report"), options.run_dir), progress=progress)
    lost = None
    if scenario.lose_rack:
        lost = load_json(out / LOST_RACKS_FILE) | {"plan_refused": refused}
        write_text(out / LOST_RACKS_FILE, dump_json(lost))
    return WhatifResult(out, written.html, shortfall, lost)
