"""The recommendation at the top of the report: what to buy and when, what to fix first, whether to apply the plan.

Every sentence is derived from the model's numbers (and quotes only numbers the report's tables show); a
sentence whose inputs the run lacks is left out rather than guessed.
"""

from __future__ import annotations

import math

from planner.report.capacity import Costing
from planner.report.model import DIMENSION_LABELS, ReportModel
from pools.audit.findings import Finding, Severity
from pools.throttle import MIN_THROTTLE_BPS
from pools.units import format_bytes, format_count, format_duration, format_percent, format_plural, format_rate

__all__ = ["recommendation", "money", "duration_problem", "moves_text", "format_days", "MAX_NAMED",
           "MAX_CREDIBLE_SECONDS"]

#: How many pools, findings or moves a sentence names before it says "and N more".
MAX_NAMED = 3

#: A reassignment estimated to take longer than this (30 days) is a problem to fix, not a schedule.
MAX_CREDIBLE_SECONDS = 30 * 86_400


def duration_problem(model: ReportModel) -> str | None:
    """Why the bundle's duration estimate is no schedule, with its cause (``None`` within `MAX_CREDIBLE_SECONDS`).

    The cause is the batches whose throttle sits at its floor (``throttle.floor_Bps`` of the bundle, else
    `pools.throttle.MIN_THROTTLE_BPS`: a broker they involve has no spare network capacity at the forecast), else
    the slowest batch's bytes and throttle.
    """
    total = model.headline.get("estimated_seconds")
    if total is None or total <= MAX_CREDIBLE_SECONDS:
        return None
    floor = model.headline.get("throttle_floor_Bps") or MIN_THROTTLE_BPS
    crawling = [b.batch for b in model.batches if b.throttle_bps is not None and b.throttle_bps <= floor]
    if crawling:
        named = ", ".join(map(str, crawling[:MAX_NAMED])) + (f" and {len(crawling) - MAX_NAMED} more"
                                                             if len(crawling) > MAX_NAMED else "")
        cause = (f"the throttle of {_plural(len(crawling), 'batch', 'batches')} {named} is at its floor of "
                 f"{format_rate(floor)}, as a broker {_plural(len(crawling), 'it involves', 'they involve')} has no "
                 f"spare network capacity at the forecast")
    elif model.batches:
        slow = max(model.batches, key=lambda b: (b.estimated_seconds, -b.batch))
        cause = (f"batch {slow.batch} copies {format_bytes(slow.moved_bytes)} at {format_rate(slow.throttle_bps)} "
                 f"({format_days(slow.estimated_seconds)})")
    else:
        cause = "the bundle's throttles are too low for the bytes it copies"
    return (f"the estimate of {format_days(total)} is more than {format_days(MAX_CREDIBLE_SECONDS)} and no "
            f"schedule: {cause}; free network capacity or raise the throttle (`poolplan emit --throttle-fraction`) "
            f"and emit again")


def moves_text(headline) -> str:
    """``"45 partitions copy 988 GB, 4 leader-only reorderings"``: moves that copy bytes and moves that only
    reorder a partition's replicas (a new preferred leader, nothing copied), counted apart."""
    copied, reordered = headline["partitions_copied"], headline["leader_only"]
    text = (f"{format_plural(copied, 'partition')} {_plural(copied, 'copies', 'copy')} "
            f"{format_bytes(headline['moved_bytes'])}")
    if reordered:
        text += f", {format_plural(reordered, 'leader-only reordering')}"
    rest = headline["partitions_moved"] - copied - reordered
    if rest:
        text += f", {format_plural(rest, 'partition')} only {_plural(rest, 'drops', 'drop')} replicas"
    return text


def format_days(seconds: float) -> str:
    """Whole days, rounded up: ``"2 days"``."""
    return format_plural(math.ceil(seconds / 86_400), "day")


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
    """Overdue orders first, then the brokers the plan needs and their order-by dates, else the first crossing."""
    cost, runway = model.cost, model.runway
    sentences = []
    if runway is not None:
        overdue = [o for o in runway.orders if runway.overdue(o)]
        if overdue:
            sentences.append("Order now: " + "; ".join(_order(runway, o) for o in overdue[:MAX_NAMED])
                             + (f", and {len(overdue) - MAX_NAMED} more" if len(overdue) > MAX_NAMED else "") + ".")
        unsure = [o.pool if o.brokers else f"{o.pool}'s next broker" for o in runway.orders if runway.may_be_due(o)]
        if unsure:
            sentences.append(f"The order for {', '.join(unsure)} may be due now: "
                             f"{_plural(len(unsure), 'its', 'their')} "
                             f"crossing is past {runway.until.isoformat()}, the last day computed, but less than "
                             f"the {format_plural(runway.lead_time_days or 0, 'day')} of lead time after "
                             f"{runway.as_of.isoformat()}.")
    if cost is not None and cost.brokers:
        pools = ", ".join(f"{r.pool}: {r.brokers}" for r in cost.rows)
        price = f" for {money(cost.total, cost)}" if cost.total is not None else \
            " (the policy's [new_broker] has no price)"
        at = f"the {model.horizon_days}-day forecast" if model.horizon_days else "the forecast"
        trend = runway is not None and model.horizon_days is not None and \
            not runway.evidence.supports(model.horizon_days)
        verb = "the measured trend says the plan needs" if trend else "the plan needs"
        text = (f"Buy {format_plural(cost.brokers, 'broker')} ({pools}){price}: {verb} "
                f"{_plural(cost.brokers, 'it', 'them')} to keep {_plural(len(cost.rows), 'that pool', 'those pools')} "
                f"within the policy's limits at {at}")
        text += (f", past the {format_plural(runway.history_days, 'day')} of history the growth was measured on, "
                 f"so a trend, not a tested forecast." if trend else ".")
        to_buy = {p.pool: p.to_buy for p in model.pools if p.to_buy}
        if to_buy:
            text += (" It places replicas on them as broker ids " + "; ".join(
                f"{', '.join(map(str, ids))} ({pool})" for pool, ids in sorted(to_buy.items()))
                + " (`planned_brokers`): provision them with those ids and racks; its bundle refuses to run before "
                  "they join.")
        if runway is not None:
            dated = [o for o in runway.orders if o.brokers and not runway.overdue(o) and runway.order_by(o)]
            if dated:
                text += " Order by: " + "; ".join(_order_by(runway, o) for o in dated) + "."
        return " ".join([*sentences, text])
    if runway is None or sentences:
        return " ".join(sentences)
    dated = sorted((o for o in runway.orders if o.crossing.kind == "day" and o.basis == "crossing"),
                   key=lambda o: (o.crossing.day, o.pool))
    if not dated:
        if any(o.crossing.kind == "after" for o in runway.orders):
            return (f"No pool crosses a limit by {runway.until.isoformat()}, the last day computed (the "
                    f"{format_plural(runway.history_days, 'day')} of history support a forecast to "
                    f"{runway.supported_until.isoformat()}): nothing to buy yet.")
        return "No pool reaches its limit at the measured growth: nothing to buy."
    first = dated[0]
    what = f"{first.pool}'s {DIMENSION_LABELS[first.dimension].lower()}"
    one = f" (one broker: {money(cost.price, cost)})" if cost is not None and cost.price is not None else ""
    trend = (f" on the measured trend, past the {format_plural(runway.history_days, 'day')} of history"
             if runway.trend(first.crossing) else "")
    return (f"{what} likely crosses its limit{trend} on {runway.date(first.crossing).isoformat()}: order "
            f"{first.pool}'s next broker{one} by {runway.order_by(first).isoformat()}.")


def _order_by(runway, o) -> str:
    """``pool 2026-10-01 (...)``: an order-by date with what it rests on (`pools.evidence`)."""
    day = runway.order_by(o).isoformat()
    if o.basis == "horizon":
        return f"{o.pool} {day} (the plan needs them at its {runway.horizon_days}-day horizon)"
    crossing = runway.date(o.crossing).isoformat()
    band = " … ".join(runway.date(c).isoformat() if c.kind == "day" else "later" for c in (o.earliest, o.latest))
    if runway.trend(o.crossing):
        return (f"{o.pool} {day} (on the trend: its {DIMENSION_LABELS[o.dimension].lower()} crosses the limit "
                f"without them on {crossing}, past the {format_plural(runway.history_days, 'day')} of history; "
                f"band {band})")
    return f"{o.pool} {day} (crossing {crossing}, band {band})"


def _order(runway, o) -> str:
    """``pool's <dimension> ...`` for an overdue order."""
    lead = f"{format_plural(runway.lead_time_days or 0, 'day')} of lead time"
    if o.basis == "horizon":
        return (f"{o.pool} needs its {format_plural(o.brokers, 'broker')} still to buy at the "
                f"{runway.horizon_days}-day horizon, {lead} before that was {runway.order_by(o).isoformat()}")
    what = f"{o.pool}'s {DIMENSION_LABELS[o.dimension].lower()}"
    without = f" without the {format_plural(o.brokers, 'broker')} still to buy" if o.brokers else ""
    if o.crossing.kind == "past":
        return f"{what} is already past its limit{without}"
    trend = " on the trend past the history" if runway.trend(o.crossing) else ""
    return (f"{what} crosses its limit{without}{trend} on {runway.date(o.crossing).isoformat()}, {lead} before that "
            f"was {runway.order_by(o).isoformat()}")


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
    text = f"Fix first the {format_plural(len(first), worst.value + ' finding')}: {named}{more}."
    risks = model.risks
    if risks is not None:
        moves = risks.at_least(Severity.ERROR)
        if moves:
            text += (f" {format_count(len(moves))} of the plan's {format_plural(risks.moves, 'move')} "
                     f"({format_bytes(sum(moves.values()))} to copy) {_plural(len(moves), 'is', 'are')} at risk "
                     f"through such a finding: each named in Risks with its cause.")
    return text


def _apply(model: ReportModel) -> str:
    h = model.headline
    if not model.planned:
        return ""
    if not h["partitions_moved"]:
        return "The plan moves nothing: there is nothing to apply."
    size = moves_text(h)
    problem = duration_problem(model)
    if problem is not None:
        return f"Do not apply the plan ({size}) as emitted: {problem}."
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



def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many
