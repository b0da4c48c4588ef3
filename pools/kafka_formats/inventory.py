"""The broker inventory: our TOML file (``conf/brokers.toml``) read into `BrokerCapacity` values.

Format (validated with pydantic; every error names the file and key, e.g.
``conf/brokers.toml: broker[3].rack: expected a string``)::

    [defaults]              # optional; applies to every [[broker]] that leaves a key out
    rack = "r1"             # optional
    disk_bytes = 4_000_000_000_000
    nw_in_Bps = 125_000_000
    nw_out_Bps = 125_000_000
    max_replicas = 4000     # optional
    cpu_cores = 16          # optional

    [[broker]]
    id = 1
    rack = "r1"             # optional when [defaults] has one; may be omitted for rack-less clusters
    pool = "shared"         # optional: the pool the broker belongs to today
    disk_bytes = ...        # each capacity key optional when [defaults] has it
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pools.errors import InputError

__all__ = ["BrokerCapacity", "parse_inventory_toml", "pydantic_error_text"]


@dataclass(frozen=True, slots=True)
class BrokerCapacity:
    """What one broker can carry: ``disk`` in bytes, ``nw_in``/``nw_out`` in bytes/s, ``cpu`` in cores."""

    broker_id: int
    disk: int
    nw_in: int
    nw_out: int
    cpu: float | None = None
    rack: str | None = None
    pool: str | None = None
    max_replicas: int | None = None


class _Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    rack: str | None = None
    disk_bytes: int | None = Field(default=None, gt=0)
    nw_in_Bps: int | None = Field(default=None, gt=0)
    nw_out_Bps: int | None = Field(default=None, gt=0)
    max_replicas: int | None = Field(default=None, gt=0)
    cpu_cores: float | None = Field(default=None, gt=0)


class _Broker(_Defaults):
    id: int = Field(ge=0)
    pool: str | None = None


class _Inventory(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    defaults: _Defaults = _Defaults()
    broker: list[_Broker] = Field(min_length=1)


def parse_inventory_toml(text: str, *, source: str = "conf/brokers.toml") -> dict[int, BrokerCapacity]:
    """Read the inventory TOML into ``{broker_id: BrokerCapacity}`` sorted by id.

    Raises
    ------
    InputError
        ``source: key.path: what was expected`` for TOML syntax, types, missing capacities and
        duplicate broker ids.
    """
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source}: invalid TOML: {exc}") from None
    try:
        inv = _Inventory.model_validate(raw)
    except ValidationError as exc:
        raise InputError(pydantic_error_text(exc, source)) from None
    result: dict[int, BrokerCapacity] = {}
    for i, b in enumerate(inv.broker):
        if b.id in result:
            raise InputError(f"{source}: broker[{i}].id: broker id {b.id} is listed twice")
        values = {}
        for key in ("disk_bytes", "nw_in_Bps", "nw_out_Bps"):
            value = getattr(b, key) if getattr(b, key) is not None else getattr(inv.defaults, key)
            if value is None:
                raise InputError(f"{source}: broker[{i}].{key}: missing (set it here or in [defaults])")
            values[key] = value
        result[b.id] = BrokerCapacity(
            broker_id=b.id,
            disk=values["disk_bytes"],
            nw_in=values["nw_in_Bps"],
            nw_out=values["nw_out_Bps"],
            cpu=b.cpu_cores if b.cpu_cores is not None else inv.defaults.cpu_cores,
            rack=b.rack if b.rack is not None else inv.defaults.rack,
            pool=b.pool,
            max_replicas=b.max_replicas if b.max_replicas is not None else inv.defaults.max_replicas,
        )
    return dict(sorted(result.items()))


_EXPECTED = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "float_type": "expected a number",
    "bool_type": "expected true or false",
    "list_type": "expected an array",
    "model_type": "expected a table",
    "dict_type": "expected a table",
    "missing": "missing (required)",
    "extra_forbidden": "unknown key",
    "too_short": "expected at least one entry",
}


def pydantic_error_text(exc: ValidationError, source: str) -> str:
    """Render the first pydantic error as ``source: a.b[3].c: expected ...`` (value shown when known)."""
    err = exc.errors()[0]
    path = ""
    for part in err["loc"]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    message = _EXPECTED.get(err["type"], err["msg"])
    value: Any = err.get("input")
    if err["type"] not in ("missing", "too_short", "model_type") and not isinstance(value, dict):
        message += f", got {value!r}"
    return f"{source}: {path or '<root>'}: {message}"
