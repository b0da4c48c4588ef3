"""Cruise Control's ``capacity.json`` / ``capacityJBOD.json`` and ``brokerSets.json``.

Units follow Cruise Control's ``BrokerCapacityConfigFileResolver`` and its metric processing, which
divide byte counts by ``BYTES_IN_KB = 1024.0`` and ``BYTES_IN_MB = 1024.0 * 1024.0``: ``DISK`` is in MiB
(a JBOD broker gives a map of log dir to MiB: summed, and kept per dir), ``NW_IN``/``NW_OUT`` in KiB/s, ``CPU`` a
percentage (or ``{"num.cores": n}``). ``brokerId`` ``"-1"`` is the default for brokers not listed.
"""

from __future__ import annotations

from typing import Any

from pools.errors import InputError
from pools.files import parse_json
from pools.kafka_formats.inventory import BrokerCapacity

__all__ = ["DEFAULT_BROKER_ID", "parse_capacity_json", "parse_broker_sets_json", "capacity_for"]

DEFAULT_BROKER_ID = -1
_MIB = 1024 * 1024
_KIB = 1024


def parse_capacity_json(text: str, *, source: str = "capacity.json") -> dict[int, BrokerCapacity]:
    """Read ``{"brokerCapacities": [...]}`` into ``{broker_id: BrokerCapacity}`` (``-1`` = default).

    ``disk`` is in bytes (MiB x 1,048,576, JBOD dirs summed), ``nw_in``/``nw_out`` in bytes/s
    (KiB/s x 1,024), ``cpu`` in cores when ``num.cores`` is given, else None (a bare percentage says
    nothing absolute).

    Raises
    ------
    InputError
        ``source: brokerCapacities[i].capacity.DISK: expected ...``.
    """
    doc = parse_json(text, source)
    entries = doc.get("brokerCapacities") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise InputError(f"{source}: brokerCapacities: expected a JSON array")
    result: dict[int, BrokerCapacity] = {}
    for i, entry in enumerate(entries):
        path = f"brokerCapacities[{i}]"
        if not isinstance(entry, dict):
            raise InputError(f"{source}: {path}: expected a JSON object")
        broker_id = _int(entry.get("brokerId"), source, f"{path}.brokerId")
        if broker_id in result:
            raise InputError(f"{source}: {path}.brokerId: broker {broker_id} is listed twice")
        cap = entry.get("capacity")
        if not isinstance(cap, dict):
            raise InputError(f"{source}: {path}.capacity: expected a JSON object")
        cpath = f"{path}.capacity"
        disk = cap.get("DISK")
        dirs: tuple[tuple[str, int], ...] = ()
        if isinstance(disk, dict):
            if not disk:
                raise InputError(f"{source}: {cpath}.DISK: expected at least one log dir")
            dirs = tuple(sorted((k, round(_number(v, source, f"{cpath}.DISK[{k!r}]") * _MIB)) for k, v in disk.items()))
            disk_mib = sum(_number(v, source, f"{cpath}.DISK[{k!r}]") for k, v in disk.items())
        else:
            disk_mib = _number(disk, source, f"{cpath}.DISK")
        cpu = cap.get("CPU")
        cores = None
        if isinstance(cpu, dict):
            cores = _number(cpu.get("num.cores"), source, f"{cpath}.CPU.num.cores")
        elif cpu is not None:
            _number(cpu, source, f"{cpath}.CPU")
        result[broker_id] = BrokerCapacity(
            broker_id=broker_id,
            disk=round(disk_mib * _MIB),
            nw_in=round(_number(cap.get("NW_IN"), source, f"{cpath}.NW_IN") * _KIB),
            nw_out=round(_number(cap.get("NW_OUT"), source, f"{cpath}.NW_OUT") * _KIB),
            cpu=cores,
            log_dir_capacities=dirs,
        )
    return dict(sorted(result.items()))


def capacity_for(capacities: dict[int, BrokerCapacity], broker_id: int) -> BrokerCapacity:
    """The broker's own entry, else the ``-1`` default re-labelled with its id."""
    if broker_id in capacities:
        return capacities[broker_id]
    if DEFAULT_BROKER_ID not in capacities:
        raise InputError(f"capacity: broker {broker_id} has no entry and there is no brokerId -1 default")
    d = capacities[DEFAULT_BROKER_ID]
    return BrokerCapacity(broker_id, d.disk, d.nw_in, d.nw_out, d.cpu, d.rack, d.pool, d.max_replicas)


def parse_broker_sets_json(text: str, *, source: str = "brokerSets.json") -> dict[str, list[int]]:
    """Read ``{"brokerSets": [{"brokerSetId": .., "brokerIds": [..]}]}`` into ``{set: [ids]}``.

    Raises
    ------
    InputError
        For malformed entries, a set listed twice or a broker in two sets.
    """
    doc = parse_json(text, source)
    sets = doc.get("brokerSets") if isinstance(doc, dict) else None
    if not isinstance(sets, list):
        raise InputError(f"{source}: brokerSets: expected a JSON array")
    result: dict[str, list[int]] = {}
    owner: dict[int, str] = {}
    for i, entry in enumerate(sets):
        path = f"brokerSets[{i}]"
        if not isinstance(entry, dict):
            raise InputError(f"{source}: {path}: expected a JSON object")
        name = entry.get("brokerSetId")
        if not isinstance(name, str) or not name:
            raise InputError(f"{source}: {path}.brokerSetId: expected a non-empty string, got {name!r}")
        if name in result:
            raise InputError(f"{source}: {path}.brokerSetId: broker set {name!r} is listed twice")
        ids = entry.get("brokerIds")
        if not isinstance(ids, list):
            raise InputError(f"{source}: {path}.brokerIds: expected a JSON array of broker ids")
        members = []
        for j, b in enumerate(ids):
            if isinstance(b, bool) or not isinstance(b, int) or b < 0:
                raise InputError(f"{source}: {path}.brokerIds[{j}]: expected a broker id, got {b!r}")
            if b in owner:
                raise InputError(f"{source}: {path}.brokerIds[{j}]: broker {b} is already in broker set {owner[b]!r}")
            owner[b] = name
            members.append(b)
        result[name] = sorted(members)
    return dict(sorted(result.items()))


def _number(value: Any, source: str, path: str) -> float:
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    else:
        number = float("nan")
    if not number >= 0 or number == float("inf"):
        raise InputError(f"{source}: {path}: expected a non-negative number (or numeric string), got {value!r}")
    return number


def _int(value: Any, source: str, path: str) -> int:
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    if text is None or not text.lstrip("-").isdigit():
        raise InputError(f"{source}: {path}: expected a broker id (integer or numeric string), got {value!r}")
    number = int(text)
    if number < DEFAULT_BROKER_ID:
        raise InputError(f"{source}: {path}: expected a broker id >= -1, got {value!r}")
    return number
