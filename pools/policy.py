"""The pool policy (*contract*): which topics belong to which pool, and the limits each pool must keep.

File format (TOML, commented example in ``conf/pools.toml``)::

    [defaults]                      # every key optional; the defaults are in pools.pool_rules
    headroom = 0.7                  # usable fraction of capacity; or a table per dimension
    tolerated_broker_failures = 1   # each pool must carry its load with this many (largest) brokers down
    forecast_horizon_days = 90      # the horizon the profile's forecast is re-derived at (--horizon-days overrides)
    min_brokers = 3
    rf_above_racks = "refuse"       # a topic whose replication factor exceeds the racks its pool can span:
                                    # "refuse" the plan, or "wrap" (Kafka's rack-aware rule: every rack holds a
                                    # replica; the what-if of a lost rack writes this)

    [new_broker]                    # the broker type added when a pool lacks capacity
    nw_in = 125_000_000             # bytes/s
    nw_out = 125_000_000
    disk = 4_000_000_000_000        # bytes
    replicas = 4000
    racks = ["r1", "r2", "r3"]      # racks new brokers may go to (default: the cluster's racks)
    price = 1200.0                  # optional: what one such broker costs, for the report
    currency = "USD"                # of the price (default USD)
    period = "month"                # optional: the price recurs per hour, day, month, quarter or year
    lead_time_days = 60             # optional: days from ordering such a broker to its joining the cluster

    [[tenant]]
    name = "payments"
    topics = ['payments\\..*']      # full-match regular expressions
    must_not_share_with = ["ads"]   # tenants that may never be in the same pool

    [[pool]]
    name = "payments"
    tenants = ["payments"]          # a tenant listed by several pools may go to any one of them
    topics = ['ledger-.*']          # direct selectors: a topic matched by two pools is an error
    brokers = [1, 2, 3]             # pinned brokers
    min_brokers = 3
    min_racks = 3
    headroom = 0.6
    default = false                 # unmatched topics go to the default pool(s)

A topic's candidate pools are, in order of precedence: the pool whose ``topics`` selector matches it; the
pools listing its tenant; the default pools. A candidate set of more than one pool is a choice the
planner makes (a tenant's topics always stay together).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import tomli_w
from pydantic import Field, field_validator

from pools.atomic import write_text
from pools.errors import InputError
from pools.pool_rules import (
    DEFAULT_FORECAST_HORIZON_DAYS,
    DEFAULT_HEADROOM,
    DEFAULT_MIN_BROKERS,
    DEFAULT_TOLERATED_BROKER_FAILURES,
)
from pools.files import load_toml, parse_toml
from pools.input_limits import MAX_BROKERS, MAX_HORIZON_DAYS
from pools.schema import BrokerId, PositiveFinite, Strict, validate
from pools.snapshot import DIMENSIONS, Capacity, ClusterSnapshot

#: The currency of ``[new_broker] price`` when the policy names none.
DEFAULT_CURRENCY = "USD"

#: What ``[new_broker] period`` may say: the price recurs once per this period.
PRICE_PERIODS = ("hour", "day", "month", "quarter", "year")

#: What ``[defaults] rf_above_racks`` may say: a replication factor above the racks a pool can span refuses the
#: plan, or its replicas wrap around the racks as Kafka's rack-aware assignment does (every rack holds one).
RF_ABOVE_RACKS = ("refuse", "wrap")

__all__ = [
    "DEFAULT_CURRENCY",
    "PRICE_PERIODS",
    "RF_ABOVE_RACKS",
    "Defaults",
    "TenantSpec",
    "PoolSpec",
    "NewBrokerType",
    "TopicPools",
    "PoolPolicy",
    "load_policy",
    "parse_policy",
    "policy_from_dict",
    "dump_policy",
    "save_policy",
]


@dataclass(frozen=True)
class Defaults:
    """Policy-wide defaults."""

    headroom: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(DIMENSIONS, DEFAULT_HEADROOM))
    tolerated_broker_failures: int = DEFAULT_TOLERATED_BROKER_FAILURES
    forecast_horizon_days: int = DEFAULT_FORECAST_HORIZON_DAYS
    min_brokers: int = DEFAULT_MIN_BROKERS
    rf_above_racks: str = RF_ABOVE_RACKS[0]


@dataclass(frozen=True)
class TenantSpec:
    """A tenant: a label for a set of topics, with the tenants it must never share a pool with."""

    name: str
    topics: tuple[str, ...] = ()
    must_not_share_with: tuple[str, ...] = ()


@dataclass(frozen=True)
class PoolSpec:
    """A pool: its topic selectors, pinned brokers and limits (``None`` = the policy default)."""

    name: str
    tenants: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    brokers: tuple[int, ...] = ()
    min_brokers: int | None = None
    min_racks: int | None = None
    headroom: Mapping[str, float] | None = None
    default: bool = False


@dataclass(frozen=True)
class NewBrokerType:
    """The broker type the planner adds when a pool lacks capacity, and what one costs.

    ``price`` is per broker (``None``: not priced), in ``currency``, once or per ``period`` (``None``: a one-off
    purchase). ``lead_time_days`` is the procurement lead time: days from ordering one to its joining the cluster
    (``None``: not known); the report's order-by date is a pool's crossing date less it.
    """

    capacity: Capacity
    racks: tuple[str, ...] = ()
    price: float | None = None
    currency: str = DEFAULT_CURRENCY
    period: str | None = None
    lead_time_days: int | None = None


@dataclass(frozen=True)
class TopicPools:
    """Where a topic may go: its candidate pools, the group that must stay together, and why."""

    topic: str
    candidates: tuple[str, ...]
    group: str
    reason: Literal["selector", "tenant", "default", "unmatched"]
    tenant: str | None = None


@dataclass(frozen=True)
class PoolPolicy:
    """A validated pool policy; see the module docstring for the file format."""

    defaults: Defaults
    pools: tuple[PoolSpec, ...]
    tenants: tuple[TenantSpec, ...] = ()
    new_broker: NewBrokerType | None = None
    source: str = "policy"

    @cached_property
    def pool_by_name(self) -> dict[str, PoolSpec]:
        return {p.name: p for p in self.pools}

    @property
    def pool_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.pools)

    @cached_property
    def pinned_pool(self) -> dict[int, str]:
        """Broker id → the pool that pins it."""
        return {b: p.name for p in self.pools for b in p.brokers}

    @cached_property
    def conflicting_tenants(self) -> frozenset[frozenset[str]]:
        """Pairs of tenants that must not share a pool (symmetric)."""
        return frozenset(frozenset((t.name, o)) for t in self.tenants for o in t.must_not_share_with)

    @cached_property
    def _selectors(self) -> tuple[list[tuple[str, re.Pattern[str]]], list[tuple[str, re.Pattern[str]]]]:
        pools = [(p.name, re.compile(rx)) for p in self.pools for rx in p.topics]
        tenants = [(t.name, re.compile(rx)) for t in self.tenants for rx in t.topics]
        return pools, tenants

    def tenant_of(self, topic: str) -> str | None:
        """The tenant whose selector matches ``topic``; two matching tenants are an `InputError`."""
        hits = sorted({name for name, rx in self._selectors[1] if rx.fullmatch(topic)})
        if len(hits) > 1:
            raise InputError(
                f"{self.source}: topic {topic!r} is matched by tenants {hits[0]!r} and {hits[1]!r}; "
                "a topic must belong to one tenant"
            )
        return hits[0] if hits else None

    def resolve(self, topic: str) -> TopicPools:
        """Candidate pools for ``topic`` (see the module docstring for the precedence)."""
        direct = sorted({name for name, rx in self._selectors[0] if rx.fullmatch(topic)})
        if len(direct) > 1:
            raise InputError(
                f"{self.source}: conflicting selectors: topic {topic!r} is selected by pools "
                f"{direct[0]!r} and {direct[1]!r}"
            )
        tenant = self.tenant_of(topic)
        if direct:
            return TopicPools(topic, (direct[0],), group=f"topic:{topic}", reason="selector", tenant=tenant)
        if tenant is not None:
            pools = tuple(p.name for p in self.pools if tenant in p.tenants)
            if pools:
                return TopicPools(topic, pools, group=f"tenant:{tenant}", reason="tenant", tenant=tenant)
        defaults = tuple(p.name for p in self.pools if p.default)
        if defaults:
            return TopicPools(topic, defaults, group=f"topic:{topic}", reason="default", tenant=tenant)
        return TopicPools(topic, (), group=f"topic:{topic}", reason="unmatched", tenant=tenant)

    def resolve_all(self, topics: Iterable[str]) -> dict[str, TopicPools]:
        """`resolve` for every topic, sorted by topic name."""
        return {t: self.resolve(t) for t in sorted(set(topics))}

    def check_against(self, snapshot: ClusterSnapshot) -> None:
        """Reject a policy that contradicts the cluster: pins on missing brokers."""
        known = set(snapshot.broker_ids)
        for i, pool in enumerate(self.pools):
            missing = [b for b in pool.brokers if b not in known]
            if missing:
                raise InputError(
                    f"{self.source}: pool[{i}].brokers: pool {pool.name!r} pins broker(s) "
                    f"{', '.join(map(str, missing))} that cluster {snapshot.cluster!r} does not have"
                )


# --- file format -------------------------------------------------------------------------------------


_Strict = Strict


def _headroom_field(value: Any) -> Any:
    if isinstance(value, dict):
        unknown = set(value) - set(DIMENSIONS)
        if unknown:
            raise ValueError(f"unknown dimension(s) {sorted(unknown)}; expected {list(DIMENSIONS)}")
        missing = set(DIMENSIONS) - set(value)
        if missing:
            raise ValueError(f"missing dimension(s) {sorted(missing)}")
        values = value.values()
    else:
        values = [value]
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise ValueError(f"expected a fraction in (0, 1], got {v!r}")
    return value


class _DefaultsModel(_Strict):
    headroom: float | dict[str, float] = DEFAULT_HEADROOM
    tolerated_broker_failures: int = Field(DEFAULT_TOLERATED_BROKER_FAILURES, ge=0, le=MAX_BROKERS)
    forecast_horizon_days: int = Field(DEFAULT_FORECAST_HORIZON_DAYS, ge=0, le=MAX_HORIZON_DAYS)
    min_brokers: int = Field(DEFAULT_MIN_BROKERS, ge=1, le=MAX_BROKERS)
    rf_above_racks: Literal[RF_ABOVE_RACKS] = RF_ABOVE_RACKS[0]  # type: ignore[valid-type]

    _check_headroom = field_validator("headroom", mode="before")(_headroom_field)


class _TenantModel(_Strict):
    name: str = Field(min_length=1)
    topics: list[str] = []
    must_not_share_with: list[str] = []

    _check_regex = field_validator("topics")(lambda v: _regexes(v))


class _PoolModel(_Strict):
    name: str = Field(min_length=1)
    tenants: list[str] = []
    topics: list[str] = []
    brokers: list[BrokerId] = []
    min_brokers: int | None = Field(None, ge=1, le=MAX_BROKERS)
    min_racks: int | None = Field(None, ge=1, le=MAX_BROKERS)
    headroom: float | dict[str, float] | None = None
    default: bool = False

    _check_regex = field_validator("topics")(lambda v: _regexes(v))
    _check_headroom = field_validator("headroom", mode="before")(lambda v: v if v is None else _headroom_field(v))


class _NewBrokerModel(_Strict):
    nw_in: PositiveFinite
    nw_out: PositiveFinite
    disk: PositiveFinite
    replicas: PositiveFinite
    racks: list[str] = []
    price: float | None = Field(None, ge=0)
    currency: str | None = None
    period: Literal[PRICE_PERIODS] | None = None  # type: ignore[valid-type]
    lead_time_days: int | None = Field(None, ge=0, le=MAX_HORIZON_DAYS, strict=True)

    @field_validator("price", mode="before")
    @classmethod
    def _price_is_a_number(cls, v: Any) -> Any:
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
            raise ValueError(f"expected a finite number (the price of one broker), got {v!r}")
        return v

    @field_validator("currency", mode="before")
    @classmethod
    def _currency_is_a_word(cls, v: Any) -> Any:
        if v is not None and (not isinstance(v, str) or not re.fullmatch(r"\S{1,16}", v)):
            raise ValueError(
                f"expected a currency code or symbol such as 'USD' (1-16 characters, no spaces), got {v!r}")
        return v


class _PolicyModel(_Strict):
    defaults: _DefaultsModel = _DefaultsModel()
    new_broker: _NewBrokerModel | None = None
    tenant: list[_TenantModel] = []
    pool: list[_PoolModel] = Field(min_length=1)


def _regexes(values: list[str]) -> list[str]:
    for rx in values:
        try:
            re.compile(rx)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {rx!r}: {exc}") from None
    return values


def _headroom_map(value: float | dict[str, float] | None) -> dict[str, float] | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return {dim: float(value[dim]) for dim in DIMENSIONS}
    return dict.fromkeys(DIMENSIONS, float(value))


def parse_policy(text: str, *, source: str = "policy") -> PoolPolicy:
    """Parse and validate policy TOML text; every error names ``source`` and the key."""
    return policy_from_dict(parse_toml(text, source), source=source)


def policy_from_dict(raw: Any, *, source: str = "policy") -> PoolPolicy:
    """Validate a policy document already read (types, then the rules that contradict each other)."""
    return _from_model(validate(_PolicyModel, raw, source), source)


def _no_repeats(values: Iterable[Any], where: str, noun: str) -> None:
    seen: set[Any] = set()
    for value in values:
        if value in seen:
            raise InputError(f"{where}: {noun} {value!r} is listed twice")
        seen.add(value)


def _from_model(model: _PolicyModel, source: str) -> PoolPolicy:
    names: dict[str, int] = {}
    for i, p in enumerate(model.pool):
        if p.name in names:
            raise InputError(f"{source}: pool[{i}].name: pool {p.name!r} is defined twice")
        names[p.name] = i
    tenants: dict[str, int] = {}
    for i, t in enumerate(model.tenant):
        if t.name in tenants:
            raise InputError(f"{source}: tenant[{i}].name: tenant {t.name!r} is defined twice")
        tenants[t.name] = i
    for i, t in enumerate(model.tenant):
        for other in t.must_not_share_with:
            if other not in tenants:
                raise InputError(f"{source}: tenant[{i}].must_not_share_with: unknown tenant {other!r}")
            if other == t.name:
                raise InputError(f"{source}: tenant[{i}].must_not_share_with: tenant {other!r} names itself")
        _no_repeats(t.must_not_share_with, f"{source}: tenant[{i}].must_not_share_with", "tenant")
        _no_repeats(t.topics, f"{source}: tenant[{i}].topics", "selector")
    pinned: dict[int, str] = {}
    for i, p in enumerate(model.pool):
        _no_repeats(p.tenants, f"{source}: pool[{i}].tenants", "tenant")
        _no_repeats(p.topics, f"{source}: pool[{i}].topics", "selector")
        _no_repeats(p.brokers, f"{source}: pool[{i}].brokers", "broker")
        for t in p.tenants:
            if t not in tenants:
                raise InputError(f"{source}: pool[{i}].tenants: unknown tenant {t!r}")
        for b in p.brokers:
            if b in pinned:
                raise InputError(
                    f"{source}: pool[{i}].brokers: broker {b} is pinned by pools {pinned[b]!r} and {p.name!r}"
                )
            pinned[b] = p.name
        if p.min_racks is not None and p.min_brokers is not None and p.min_racks > p.min_brokers:
            raise InputError(
                f"{source}: pool[{i}].min_racks: {p.min_racks} racks cannot be spanned by min_brokers={p.min_brokers}"
            )
    d = model.defaults
    new_broker = None
    if model.new_broker is not None:
        nb = model.new_broker
        for key in ("currency", "period"):
            if getattr(nb, key) is not None and nb.price is None:
                raise InputError(f"{source}: new_broker.{key}: set new_broker.price too (a {key} prices nothing alone)")
        new_broker = NewBrokerType(Capacity(nb.nw_in, nb.nw_out, nb.disk, nb.replicas), tuple(nb.racks),
                                   price=nb.price, currency=nb.currency or DEFAULT_CURRENCY, period=nb.period,
                                   lead_time_days=nb.lead_time_days)
    return PoolPolicy(
        defaults=Defaults(
            headroom=_headroom_map(d.headroom) or {},
            tolerated_broker_failures=d.tolerated_broker_failures,
            forecast_horizon_days=d.forecast_horizon_days,
            min_brokers=d.min_brokers,
            rf_above_racks=d.rf_above_racks,
        ),
        pools=tuple(
            PoolSpec(
                name=p.name,
                tenants=tuple(p.tenants),
                topics=tuple(p.topics),
                brokers=tuple(p.brokers),
                min_brokers=p.min_brokers,
                min_racks=p.min_racks,
                headroom=_headroom_map(p.headroom),
                default=p.default,
            )
            for p in model.pool
        ),
        tenants=tuple(TenantSpec(t.name, tuple(t.topics), tuple(t.must_not_share_with)) for t in model.tenant),
        new_broker=new_broker,
        source=source,
    )


def load_policy(path: str | os.PathLike[str]) -> PoolPolicy:
    """Read and validate a policy TOML file."""
    return policy_from_dict(load_toml(path), source=str(path))


def _headroom_out(value: Mapping[str, float]) -> float | dict[str, float]:
    values = {value[d] for d in DIMENSIONS}
    return values.pop() if len(values) == 1 else {d: value[d] for d in DIMENSIONS}


def dump_policy(policy: PoolPolicy) -> str:
    """The policy as TOML text; `parse_policy` of it gives an equal policy."""
    d = policy.defaults
    doc: dict[str, Any] = {
        "defaults": {
            "headroom": _headroom_out(d.headroom),
            "tolerated_broker_failures": d.tolerated_broker_failures,
            "forecast_horizon_days": d.forecast_horizon_days,
            "min_brokers": d.min_brokers,
        }
    }
    if d.rf_above_racks != RF_ABOVE_RACKS[0]:  # the default is left unsaid, as the policy files say it
        doc["defaults"]["rf_above_racks"] = d.rf_above_racks
    if policy.new_broker is not None:
        nb = policy.new_broker
        doc["new_broker"] = {**nb.capacity.to_dict(), "racks": list(nb.racks)}
        if nb.price is not None:
            doc["new_broker"] |= {"price": nb.price, "currency": nb.currency}
            if nb.period is not None:
                doc["new_broker"]["period"] = nb.period
        if nb.lead_time_days is not None:
            doc["new_broker"]["lead_time_days"] = nb.lead_time_days
    if policy.tenants:
        doc["tenant"] = [
            {"name": t.name, "topics": list(t.topics), "must_not_share_with": list(t.must_not_share_with)}
            for t in policy.tenants
        ]
    pools = []
    for p in policy.pools:
        entry: dict[str, Any] = {"name": p.name, "tenants": list(p.tenants), "topics": list(p.topics)}
        entry["brokers"] = list(p.brokers)
        for key in ("min_brokers", "min_racks"):
            if getattr(p, key) is not None:
                entry[key] = getattr(p, key)
        if p.headroom is not None:
            entry["headroom"] = _headroom_out(p.headroom)
        entry["default"] = p.default
        pools.append(entry)
    doc["pool"] = pools
    return tomli_w.dumps(doc)


def save_policy(policy: PoolPolicy, path: str | os.PathLike[str]) -> Path:
    """Write the policy as TOML atomically."""
    return write_text(path, dump_policy(policy))
