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
    cordoned = true         # optional (KIP-1066): the broker takes no new replica (as cordoned.log.dirs=*)
    cordoned_log_dirs = ["/data/d2"]   # optional: log dirs that take no new replica
    log_dir_capacities = { "/data/d1" = 2_000_000_000_000, "/data/d2" = 1_000_000_000_000 }
                            # optional (JBOD dirs of unequal size): bytes per log dir; without it a broker's dirs
                            # share its disk equally. Given for every dir, their sum is the broker's disk
                            # (a disk_bytes of its own must equal it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from pools.errors import InputError
from pools.files import parse_toml
from pools.input_limits import INT64_MAX
from pools.schema import BrokerId, PositiveFinite, Strict, validate

__all__ = ["BrokerCapacity", "parse_inventory_toml", "inventory_from_dict"]


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
    cordoned: bool = False
    cordoned_log_dirs: tuple[str, ...] = ()
    log_dir_capacities: tuple[tuple[str, int], ...] = ()


_Positive = Annotated[int, Field(gt=0, le=INT64_MAX)]


class _Defaults(Strict):
    rack: str | None = None
    disk_bytes: _Positive | None = None
    nw_in_Bps: _Positive | None = None
    nw_out_Bps: _Positive | None = None
    max_replicas: _Positive | None = None
    cpu_cores: PositiveFinite | None = None


class _Broker(_Defaults):
    id: BrokerId
    pool: str | None = None
    cordoned: bool = False
    cordoned_log_dirs: list[Annotated[str, Field(min_length=1)]] = []
    log_dir_capacities: dict[Annotated[str, Field(min_length=1)], _Positive] = {}


class _Inventory(Strict):
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
    return inventory_from_dict(parse_toml(text, source), source=source)


def inventory_from_dict(raw: Any, *, source: str = "conf/brokers.toml") -> dict[int, BrokerCapacity]:
    """`parse_inventory_toml` for a document already read (`pools.files.load_toml`)."""
    inv = validate(_Inventory, raw, source)
    result: dict[int, BrokerCapacity] = {}
    for i, b in enumerate(inv.broker):
        if b.id in result:
            raise InputError(f"{source}: broker[{i}].id: broker id {b.id} is listed twice")
        values = {}
        dirs = b.log_dir_capacities
        if dirs and b.disk_bytes is not None and sum(dirs.values()) != b.disk_bytes:
            raise InputError(f"{source}: broker[{i}].log_dir_capacities: the dirs sum to {sum(dirs.values())} bytes, "
                             f"not its disk_bytes {b.disk_bytes}")
        if dirs and b.disk_bytes is None:  # its dirs are its disk, whatever [defaults] says
            b = b.model_copy(update={"disk_bytes": sum(dirs.values())})
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
            cordoned=b.cordoned,
            cordoned_log_dirs=tuple(sorted(set(b.cordoned_log_dirs))),
            log_dir_capacities=tuple(sorted(dirs.items())),
        )
    return dict(sorted(result.items()))
