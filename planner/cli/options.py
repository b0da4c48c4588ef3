"""Options the subcommands share: finite numbers (click's FLOAT reads ``nan`` and ``inf``) and the plan inputs.

The plan inputs (`planner.stages.plan_inputs`) are declared here once, for ``plan``, ``audit`` and every day-2
operation; each command says only whether the policy and the profile are required and what its profile is for.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["FINITE", "FiniteRange", "BrokerIds", "plan_input_options", "horizon_days_option"]

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
    policy = (click.option("--policy", "policy_path", required=True, type=click.Path(dir_okay=False),
                           help=policy_help) if policy_required else
              click.option("--policy", "policy_path", default="conf/pools.toml", show_default=True,
                           type=click.Path(dir_okay=False), help=policy_help))
    options = (
        click.option("--snapshot", "snapshot_path", required=True, type=click.Path(dir_okay=False),
                     help=snapshot_help),
        policy,
        click.option("--profile", "profile_dir", required=profile_required, type=click.Path(), help=profile_help),
        click.option("--consumer-groups", "groups_path", type=click.Path(dir_okay=False),
                     help="`kafka-consumer-groups.sh --describe --all-groups` output; its fan-out replaces missing "
                          "bytes-out."),
    )

    def decorate(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


#: ``--horizon-days``: the forecast horizon of the plan inputs (None: the policy's).
horizon_days_option = click.option("--horizon-days", type=click.IntRange(min=0),
                                   help="Forecast horizon in days [default: the policy's forecast_horizon_days].")
