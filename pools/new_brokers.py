"""Brokers still to buy: placeholder brokers of the policy's ``[new_broker]`` type, the one home of their ids,
racks and capacity.

A plan that needs brokers the cluster lacks places replicas on placeholders (``plan.json``'s
``planned_brokers``), so its after-plan figures, N−1 and bundle hold once those brokers join. The what-if's
``add_brokers`` uses the same rule.

- **ids**: the next free ids above every id the cluster knows (its brokers and any broker a replica still names),
  one after another; or the ids the operator will provision (``--new-broker-ids 101,102`` or ``101-103``), used in
  the order given. An id the cluster knows, a repeated id or too few ids is an `InputError`.
- **racks**: per pool, the racks the pool model chose (its count per rack), alternated as Kafka's rack-aware
  placement alternates brokers (one rack after another, racks sorted), so consecutive ids sit on different racks.
- **capacity**: the ``[new_broker]`` type's.

Examples
--------
>>> from pools.snapshot import Capacity
>>> rack_alternated({"r2": 1, "r1": 2})
('r1', 'r2', 'r1')
>>> planned = placeholder_brokers({"stream": {"r1": 2, "r2": 1}}, Capacity(1, 1, 1, 1), taken=[1, 2, 9])
>>> [(b.id, b.rack, b.pool) for b in planned]
[(10, 'r1', 'stream'), (11, 'r2', 'stream'), (12, 'r1', 'stream')]
>>> parse_broker_ids("101,102, 110-111")
(101, 102, 110, 111)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pools.errors import InputError
from pools.input_limits import MAX_BROKER_ID, MAX_BROKERS
from pools.snapshot import Broker, Capacity, ClusterSnapshot

__all__ = ["PlannedBroker", "rack_alternated", "spread_over_racks", "new_broker_ids", "placeholder_brokers",
           "parse_broker_ids", "with_planned_brokers", "taken_ids"]

#: How ``--new-broker-ids`` is named in messages.
OPTION = "--new-broker-ids"


@dataclass(frozen=True, slots=True)
class PlannedBroker:
    """A broker the plan places replicas on that the cluster does not have yet: its id, rack, pool and capacity
    (the ``[new_broker]`` type's)."""

    id: int
    rack: str | None
    pool: str
    capacity: Capacity

    def to_dict(self) -> dict[str, Any]:
        """The entry of ``plan.json``'s ``planned_brokers``."""
        return {"id": self.id, "rack": self.rack, "pool": self.pool, "capacity": self.capacity.to_dict()}

    def broker(self) -> Broker:
        """The broker as a snapshot would hold it once it joins: empty, in no pool before the plan."""
        return Broker(self.id, self.rack, self.capacity)


def rack_alternated(counts: Mapping[str | None, int]) -> tuple[str | None, ...]:
    """The racks of ``counts[rack]`` brokers per rack, one rack after another (racks sorted, ``None`` last), as
    Kafka's rack-aware placement alternates brokers.

    >>> rack_alternated({"b": 2, "a": 1, None: 1})
    ('a', 'b', None, 'b')
    """
    left = {r: n for r, n in counts.items() if n > 0}
    order = sorted(left, key=lambda r: (r is None, r or ""))
    out: list[str | None] = []
    while left:
        for rack in order:
            if left.get(rack):
                out.append(rack)
                left[rack] -= 1
                if not left[rack]:
                    del left[rack]
    return tuple(out)


def spread_over_racks(count: int, racks: Sequence[str]) -> dict[str | None, int]:
    """``count`` brokers over ``racks`` in turn, from the first (no racks: unracked brokers).

    >>> spread_over_racks(4, ["r1", "r2", "r3"]), spread_over_racks(2, [])
    ({'r1': 2, 'r2': 1, 'r3': 1}, {None: 2})
    """
    if not racks:
        return {None: count} if count else {}
    return {r: count // len(racks) + (i < count % len(racks)) for i, r in enumerate(racks)
            if count // len(racks) + (i < count % len(racks))}


def taken_ids(snapshot: ClusterSnapshot) -> frozenset[int]:
    """Every broker id the cluster knows: its brokers and brokers a replica still names (a gone broker's id would
    inherit its replicas)."""
    return frozenset(snapshot.broker_ids) | {b for p in snapshot.partitions for b in p.replicas}


def new_broker_ids(count: int, taken: Iterable[int], given: Sequence[int] | None = None) -> tuple[int, ...]:
    """``count`` ids for new brokers: ``given`` (its first ``count``, in order), else the next ids above ``taken``.

    Raises
    ------
    InputError
        ``given`` repeats an id, names one in ``taken`` or has fewer than ``count`` ids; or the next ids pass
        Kafka's largest broker id.

    >>> new_broker_ids(2, [1, 5]), new_broker_ids(2, [1, 5], [101, 102, 103])
    ((6, 7), (101, 102))
    >>> new_broker_ids(3, [1, 5], [101, 102])
    Traceback (most recent call last):
    ...
    pools.errors.InputError: --new-broker-ids: the plan needs 3 new broker(s), got 2 id(s) (101, 102)
    """
    taken = frozenset(taken)
    if given is None:
        first = max(taken, default=0) + 1
        if first + count - 1 > MAX_BROKER_ID:
            raise InputError(f"{OPTION}: the next free broker ids pass {MAX_BROKER_ID}; give the ids to use")
        return tuple(range(first, first + count))
    repeated = sorted({b for b in given if list(given).count(b) > 1})
    if repeated:
        raise InputError(f"{OPTION}: broker {repeated[0]} is given twice")
    known = sorted(taken.intersection(given))
    if known:
        raise InputError(f"{OPTION}: broker {known[0]} is already in the cluster (the snapshot names it); give ids "
                         "of brokers still to provision")
    if len(given) < count:
        raise InputError(f"{OPTION}: the plan needs {count} new broker(s), got {len(given)} id(s) "
                         f"({', '.join(map(str, given))})")
    return tuple(given[:count])


def placeholder_brokers(added: Mapping[str, Mapping[str | None, int]], capacity: Capacity, *, taken: Iterable[int],
                        ids: Sequence[int] | None = None) -> tuple[PlannedBroker, ...]:
    """The brokers ``added`` asks for (pool → rack → count; rack ``""`` or ``None``: unracked): pools in name
    order, each pool's racks alternated (`rack_alternated`), ids from `new_broker_ids`.

    Raises
    ------
    InputError
        From `new_broker_ids`.
    """
    wanted = [(pool, rack or None) for pool in sorted(added)
              for rack in rack_alternated({(r or None): n for r, n in added[pool].items()})]
    chosen = new_broker_ids(len(wanted), taken, ids)
    return tuple(PlannedBroker(b, rack, pool, capacity) for b, (pool, rack) in zip(chosen, wanted))


def parse_broker_ids(text: str) -> tuple[int, ...]:
    """Broker ids from ``101,102`` or ranges ``101-103`` (commas, optional spaces), in the order given.

    Raises
    ------
    InputError
        For anything but ids and ranges of ids (0..2147483647), or a reversed range.

    >>> parse_broker_ids("7-5")
    Traceback (most recent call last):
    ...
    pools.errors.InputError: --new-broker-ids: expected ids such as 101,102 or 101-103, got '7-5'
    """
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()) or (_ and not high) or \
                int(high or low) < int(low) or int(high or low) > MAX_BROKER_ID or \
                len(out) + int(high or low) - int(low) >= MAX_BROKERS:
            raise InputError(f"{OPTION}: expected ids such as 101,102 or 101-103, got {part!r}")
        out.extend(range(int(low), int(high or low) + 1))
    return tuple(out)


def with_planned_brokers(snapshot: ClusterSnapshot, planned: Iterable[PlannedBroker]) -> ClusterSnapshot:
    """``snapshot`` with the planned brokers it lacks added (empty, in no pool): the cluster the plan applies to.
    A planned broker that has joined (its id in the snapshot) is the snapshot's."""
    extra = tuple(b.broker() for b in planned if b.id not in snapshot.broker_by_id)
    return replace(snapshot, brokers=snapshot.brokers + extra) if extra else snapshot
