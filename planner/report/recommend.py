"""The recommendation at the top of the report: what to buy and when, what to fix first, whether to apply the plan.

Every sentence is derived from the model's numbers (and quotes only numbers the report's tables show); a
sentence whose inputs the run lacks is left out rather than guessed.
"""

from __future__ import annotations

from planner.report.capacity import Costing
from planner.report.model import DIMENSION_LABELS, ReportModel
from pools.audit.findings import Finding, Severity
from pools.snapshot import DIMENSIONS
from pools.units import format_bytes, format_count, format_duration, format_percent

__all__ = ["recommendation", "money", "MAX_NAMED"]

#: How many pools, findings or moves a sentence names before it says "and N more".
MAX_NAMED = 3


def recommendation(model: ReportModel) -> str:
    """One paragraph: buy, survive a broker loss, fix first, apply the plan."""
    sentences = [_buy(model), _loss(model), _fix(model), _apply(model)]
    return " ".join(s for s in sentences if s)


def money(amount: float | None, costing: Costing | None) -> str:
    """``amount`` in the policy's currency and period (``—`` without a price).

    Examples
    --------
    >>> from pools.policy import NewBrokerType
    >>> from pools.snapshot import Capacity
    >>> broker = NewBrokerType(Capacity(1, 1, 1, 1), price=1200.0, currency="EUR", period="month")
    >>> money(2400.0, Costing((), broker)), money(None, None)
    ('EUR 2,400 per month', '—')
    """
    if amount is None or costing is None or costing.broker is None or costing.broker.price is None:
        return "—"
    whole = f"{amount:,.0f}" if float(amount).is_integer() else f"{amount:,.2f}"
    period = f" per {costing.broker.period}" if costing.broker.period else ""
    return f"{costing.broker.currency} {whole}{period}"


def _buy(model: ReportModel) -> str:
    cost = model.cost
    horizon = model.horizon_days
    if cost is not None and cost.brokers:
        pools = ", ".join(f"{r.pool}: {r.brokers}" for r in cost.rows)
        price = f" for {money(cost.total, cost)}" if cost.total is not None else \
            " (the policy's [new_broker] has no price)"
        at = f"the {horizon}-day forecast" if horizon else "the forecast"
        return (f"Buy {_n(cost.brokers, 'broker')} ({pools}){price}: the plan needs "
                f"{_plural(cost.brokers, 'it', 'them')} to keep {_plural(len(cost.rows), 'that pool', 'those pools')} "
                f"within the policy's limits at {at}.")
    if model.history_end is None:
        return ""  # no growth measured: nothing to say about when to buy
    known = [p for p in model.pools if p.limit is not None and p.demand_now is not None]
    runways = [p for p in known if p.runway_days is not None]
    if not runways:
        return "No pool reaches its limit at the measured growth: nothing to buy." if known else ""
    first = min(runways, key=lambda p: (p.runway_days, p.pool, DIMENSIONS.index(p.dimension)))
    what = f"{first.pool}'s {DIMENSION_LABELS[first.dimension].lower()}"
    if first.runway_days == 0:
        return f"{what} is already past its limit: add brokers to {first.pool} before anything else."
    if first.runway_date is None:
        if first.runway_whole_days is None:
            return "No pool reaches its limit within 10 years at the measured growth: nothing to buy."
        return f"The first limit ahead is {what}, in {format_count(first.runway_whole_days)} days."
    one = f" (one broker: {money(cost.price, cost)})" if cost is not None and cost.price is not None else ""
    when = f"on {first.runway_date.isoformat()}, {format_count(first.runway_whole_days)} days after " \
           f"{first.as_of.isoformat()}"
    if horizon is not None and first.runway_days <= horizon:
        return (f"{what} crosses its limit {when} and within the {horizon}-day forecast horizon: add a broker to "
                f"{first.pool}{one} before then.")
    within = f"within the {horizon}-day forecast horizon" if horizon else "at the forecast"
    return (f"No pool needs more brokers {within}; the first limit ahead is {what} {when}: order "
            f"{first.pool}'s next broker{one} before then.")


def _loss(model: ReportModel) -> str:
    over = [p for p in model.pools if _over(p.after_loss_forecast, p.max_utilisation)]
    if not over:
        known = [p for p in model.pools if p.after_loss_forecast is not None and p.max_utilisation is not None]
        return "Every pool stays within its limits at the forecast if it loses its largest broker." if known else ""
    parts = [f"{p.pool}'s {DIMENSION_LABELS[p.dimension].lower()} would run at "
             f"{format_percent(p.after_loss_forecast)} (limit {format_percent(p.max_utilisation)})"
             for p in sorted(over, key=lambda p: -(p.after_loss_forecast or 0))[:MAX_NAMED]]
    more = f", and {len(over) - MAX_NAMED} more" if len(over) > MAX_NAMED else ""
    return f"After losing its largest broker at the forecast, {'; '.join(parts)}{more}."


def _fix(model: ReportModel) -> str:
    if model.findings is None:
        return ""
    serious = [f for f in model.findings if f.severity.rank >= Severity.ERROR.rank]
    if not serious:
        return "The audit found nothing of severity error or worse."
    worst = serious[0].severity
    first = [f for f in serious if f.severity is worst]
    named = ", ".join(_where(f) for f in first[:MAX_NAMED])
    more = f" and {len(first) - MAX_NAMED} more" if len(first) > MAX_NAMED else ""
    text = f"Fix first the {_n(len(first), worst.value + ' finding')}: {named}{more}."
    risks = model.risks
    if risks is not None:
        moves = risks.at_least(Severity.ERROR)
        if moves:
            text += (f" {format_count(len(moves))} of the plan's {_n(risks.moves, 'move')} "
                     f"({format_bytes(sum(moves.values()))} to copy) {_plural(len(moves), 'touches', 'touch')} brokers "
                     f"or partitions with findings of severity error or worse (see Risks).")
    return text


def _apply(model: ReportModel) -> str:
    h = model.headline
    if not model.planned:
        return ""
    if not h["partitions_moved"]:
        return "The plan moves nothing: there is nothing to apply."
    size = f"{_n(h['partitions_moved'], 'partition')}, {format_bytes(h['moved_bytes'])} to copy"
    if "batches" in h:
        size += f", about {format_duration(h['estimated_seconds'])} at the planned throttles"
    if model.cost is not None and model.cost.brokers:
        return (f"Add the new brokers to the inventory and plan again before applying: this plan ({size}) only "
                f"moves replicas between today's brokers.")
    risks = model.risks
    if risks is not None and any(r.finding.severity.rank >= Severity.ERROR.rank for r in risks.risks):
        return f"Apply the plan ({size}) only after those fixes."
    return f"Apply the plan: {size}."


def _where(f: Finding) -> str:
    if f.topic is not None:
        where = f.topic if f.partition is None else f"{f.topic}-{f.partition}"
    elif f.broker is not None:
        where = f"broker {f.broker}"
    else:
        where = f"pool {f.pool}" if f.pool else "the cluster"
    return f"{f.kind} on {where}"


def _over(value: float | None, limit: float | None) -> bool:
    return value is not None and limit is not None and value > limit


def _n(count: int, noun: str) -> str:
    return f"{format_count(count)} {noun}{'' if count == 1 else 's'}"


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many
