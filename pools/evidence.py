"""How far the forecast's evidence reaches: the one rule the plan, the runway, the order-by and the recommendation use.

Each topic's growth is fitted on its metric history (`spark_jobs.growth.robust_growth`) and its band tested out of
time on that same history (`pools.forecast_band`). The evidence reaches ``history_days`` after the end of the
history: the span it was fitted on (the most days any topic was observed). A day within that reach is a
*forecast*: a crossing or a purchase on it rests on growth measured over at least as long and a band tested on
it. A day past it is a *trend*: the same arithmetic, extended further than the history it was measured on, and
worded as such, never as a fact. Nothing is extended past the later of the reach and the plan's horizon.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pools.profile import TopicProfile

__all__ = ["Evidence", "evidence", "horizon_warning"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """The span of history the forecast was fitted on, in days (at least 1)."""

    history_days: int

    def supports(self, days: int) -> bool:
        """Whether a day ``days`` after the end of the history is within the evidence (a forecast, not a trend)."""
        return days <= self.history_days

    def reach(self, horizon_days: int) -> int:
        """The last day anything is computed for: the later of the evidence's reach and the plan's horizon."""
        return max(self.history_days, horizon_days)


def evidence(profile: Mapping[str, TopicProfile]) -> Evidence:
    """The `Evidence` of a topic profile: the most days any topic was observed (at least 1).

    >>> from dataclasses import fields
    >>> row = TopicProfile(**{f.name: 0 for f in fields(TopicProfile)} | {"topic": "t", "days_observed": 14})
    >>> evidence({"t": row}).supports(14), evidence({"t": row}).supports(15), evidence({}).history_days
    (True, False, 1)
    """
    return Evidence(max([1, *(r.days_observed for r in profile.values())]))


def horizon_warning(found: Evidence, horizon_days: int) -> str | None:
    """The plan's warning when its horizon reaches past the evidence (``None`` within it)."""
    if found.supports(horizon_days):
        return None
    return (f"the {horizon_days}-day forecast horizon reaches past the {found.history_days} days of history the "
            f"growth was fitted on: what the plan buys for it rests on the measured trend, not on tested evidence "
            f"(the report dates such crossings as a trend)")
