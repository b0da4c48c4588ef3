"""Options the subcommands share, each declared here once: finite numbers (click's FLOAT reads ``nan`` and ``inf``),
the plan inputs, ``--policy``, ``--consumer-groups``, ``--time-limit``, and the former spellings of renamed options.

The plan inputs (`planner.stages.plan_inputs`) are declared here once, for ``plan``, ``audit`` and every day-2
operation; each command says only whether the policy and the profile are required and what its profile is for.
A renamed option keeps its old spelling for one release (`renamed_option`, `take_renamed`): hidden from
``--help``, still accepted on the command line and in a run config's table, with a warning naming the new one.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, MutableMapping
from typing import Any, TypeVar

import click

__all__ = ["FINITE", "FiniteRange", "BrokerIds", "plan_input_options", "horizon_days_option", "policy_option",
           "consumer_groups_option", "time_limit_option", "renamed_option", "take_renamed"]

_log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


class FiniteRange(click.FloatRange):
    """A `click.FloatRange` that also rejects ``nan`` and ``inf`` (which compare false against any bound)."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)

    def _describe_range(self) -> str:
        """No bound, no range in ``--help`` (click would print ``x<=None``)."""
        return "" if self.min is None and self.max is None else super()._describe_range()


#: Any finite float.
FINITE = FiniteRange()


class BrokerIds(click.ParamType):
    """Broker ids as ``101,102`` or ranges ``101-103`` (`pools.new_brokers.parse_broker_ids`), as a tuple."""

    name = "ids"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from pools.errors import InputError
        from pools.new_brokers import parse_broker_ids

        if isinstance(value, tuple):
            return value
        try:
            return parse_broker_ids(str(value))
        except InputError as exc:
            self.fail(str(exc).split(": ", 1)[-1], param, ctx)


def plan_input_options(*, snapshot_help: str = "Cluster snapshot (snapshot.json).",
                       policy_required: bool = False, policy_help: str = "Pool policy (TOML).",
                       profile_required: bool = False, profile_help: str) -> Callable[[F], F]:
    """``--snapshot``, ``--policy``, ``--profile`` and ``--consumer-groups``, the fields of
    `planner.stages.plan_inputs.PlanInputOptions` (``--horizon-days`` is `horizon_days_option`).

    A policy that is not required defaults to ``conf/pools.toml``.
    """
    options = (
        click.option("--snapshot", "snapshot_path", required=True, type=click.Path(dir_okay=False),
                     help=snapshot_help),
        policy_option(required=policy_required, default=None if policy_required else "conf/pools.toml",
                      help=policy_help),
        click.option("--profile", "profile_dir", required=profile_required, type=click.Path(), help=profile_help),
        consumer_groups_option(),
    )

    def decorate(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


#: ``--horizon-days``: the forecast horizon of the plan inputs (None: the policy's).
horizon_days_option = click.option("--horizon-days", type=click.IntRange(min=0),
                                   help="Forecast horizon in days [default: the policy's forecast_horizon_days].")


def policy_option(*, required: bool = False, default: str | None = None,
                  help: str = "Pool policy (TOML).") -> Callable[[F], F]:
    """``--policy`` (parameter ``policy_path``): the pool policy's TOML file; each command says what it is for."""
    return click.option("--policy", "policy_path", required=required, default=default, show_default=default is not None,
                        type=click.Path(dir_okay=False), help=help)


_GROUPS_HELP = "`kafka-consumer-groups.sh --describe --all-groups` output; its fan-out replaces missing bytes-out."


def consumer_groups_option(help: str = _GROUPS_HELP) -> Callable[[F], F]:
    """``--consumer-groups`` (parameter ``groups_path``): the consumer groups' describe output."""
    return click.option("--consumer-groups", "groups_path", type=click.Path(dir_okay=False), help=help)


#: ``--time-limit``: the wall-clock seconds of a plan's solving (``plan``, and the plan a what-if makes).
time_limit_option = click.option(
    "--time-limit", default=60.0, show_default=True, type=FiniteRange(min=1),
    help="A wall-clock safety net over all the solving (the pool model's stages, then the placement inside the "
         "pools with what is left). Work limits (nodes, rounds) end every search, so the plan is the same on any "
         "machine under any load unless this net fires; plan.json's warnings say so.")


def _renamed(old: str) -> str:
    return "renamed_" + old.lstrip("-").replace("-", "_")


def renamed_option(old: str, new: str, **declaration: Any) -> Callable[[F], F]:
    """``old``, the former spelling of the option ``new``, accepted for one more release: hidden from ``--help``;
    the command's options builder calls `take_renamed` (``declaration``: its type, as ``new`` has it)."""
    return click.option(old, _renamed(old), hidden=True, default=None,
                        help=f"Renamed {new}; accepted until the next release.", **declaration)


def take_renamed(params: MutableMapping[str, Any], old: str, new: str, name: str, *, run_key: bool = True) -> None:
    """Move the value given to `renamed_option` ``old``, if any, into ``params[name]`` (``new``'s parameter) and warn
    once that ``old`` is renamed (and, with ``run_key``, for a command that is a run stage, ``new``'s key in a run
    config). A repeatable option's values are added to those given under ``new``.

    >>> params = {"renamed_horizon_days": 7, "horizon_days": 90}
    >>> take_renamed(params, "--horizon-days", "--profile-horizon-days", "horizon_days"); params
    {'horizon_days': 7}
    >>> params = {"renamed_log_dirs": ("b.txt",), "captures": ("a.txt",)}
    >>> take_renamed(params, "--log-dirs", "--log-dirs-capture", "captures", run_key=False); params
    {'captures': ('a.txt', 'b.txt')}
    """
    value = params.pop(_renamed(old), None)
    if value is not None and value != ():
        key = f" (in a run config: {new.lstrip('-')})" if run_key else ""
        _log.warning("%s is renamed %s%s; the old spelling is accepted until the next release", old, new, key)
        params[name] = (*params.get(name, ()), *value) if isinstance(value, tuple) else value
