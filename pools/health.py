"""Cluster health as a plan sees it: brokers nothing may be copied from or to, partitions a plan leaves alone.

One rule for the planner, the validator, the runbook and the audit:

- A broker is **unhealthy** when ``kafka-log-dirs.sh`` reported one of its log dirs in error, or when it is
  **offline**: it holds replicas of partitions whose ISR is reported, and is in none of those ISRs.
  No replica is added to an unhealthy broker, and no partition with a replica there is moved: a new replica
  copies from the partition's leader, and a broker with a failing disk or none is no source to lean on.
- A partition is **held** (keeps its replicas and their order; the plan names it) when it is offline (no
  leader), under-replicated (its reported ISR lacks a replica that is not being added; under min ISR
  included), mid-reassignment (adding or removing replicas reported), or has a replica on an unhealthy broker.

- A broker is **closed** (`ClusterHealth.closed`, the one rule for where a new replica may land) when it is
  unhealthy or **cordoned** (KIP-1066: ``cordoned.log.dirs=*`` or every log dir cordoned, `pools.snapshot.Broker`).
  A cordoned broker still serves and gives up its replicas (a drain copies from it); only a broker with an open
  log dir takes a new one, which Kafka places in an open dir (a reassignment's ``"any"``). A log dir may be named
  for a replica only when it is open (`open_log_dirs`): on a cordoned broker none is. `cordon_crossings` is the
  one check of both, naming each crossing's partition, broker or dir and the cordon's source; the validator,
  every command and every file ``emit`` writes ask it.

An empty ISR with a leader is "not reported" (Kafka always lists the leader in the ISR), not under-replicated.
`partition_states` is that reading of each partition's leader and ISR; the audit's partition-health rules
(`pools.audit.rules`) read it too, so the audit and the planner agree on every partition.

**Evacuation** (the one exception, for an operation that drains brokers: ``brokers decommission`` or
``replace``, the usual answer to a dead broker, and for brokers **gone**: named by a partition's replicas but no
longer listed by the snapshot, as after a lost rack, which `cluster_health` drains by itself): a held partition whose
only trouble lies on the drained brokers is **evacuated**, not held. That is a partition that is not offline and
not mid-reassignment, whose leader is on a healthy broker that is not drained (and in the ISR when one is
reported), and whose every out-of-sync replica or replica on an unhealthy broker is on a drained broker. Its
replicas on the drained brokers are replaced by new ones, which copy from that leader; every other replica in its
pool keeps its place (`evacuation_keeps`), so a partition already short of a replica is not disturbed any further.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from functools import cached_property
from operator import attrgetter

import numpy as np

from pools.cluster_arrays import cluster_arrays, per_snapshot
from pools.snapshot import Broker, ClusterSnapshot

__all__ = ["HOLD_REASONS", "ClusterHealth", "PartitionStates", "cluster_health", "cordon_crossings", "evacuation_keeps",
           "kafka_cordoned", "open_log_dirs", "partition_states"]

#: Why a partition is held, worst first (a partition is named once, for the first that applies).
HOLD_REASONS: tuple[str, ...] = (
    "offline",
    "under-replicated",
    "reassignment in progress",
    "replica on an unhealthy broker",
)


@dataclass(frozen=True)
class ClusterHealth:
    """Unhealthy brokers (id → why), held partitions ((topic, partition) → one of `HOLD_REASONS`) and, for an
    operation that drains brokers, the partitions it evacuates (same reasons; see `evacuating`)."""

    brokers: Mapping[int, str]
    partitions: Mapping[tuple[str, int], str]
    evacuated: Mapping[tuple[str, int], str] = field(default_factory=dict)
    drained: tuple[int, ...] = ()
    cordoned: Mapping[int, str] = field(default_factory=dict)

    @cached_property
    def closed(self) -> frozenset[int]:
        """Brokers no new replica may land on: the unhealthy and the cordoned ones (see the module docstring)."""
        return frozenset(self.brokers) | frozenset(self.cordoned)

    def why_closed(self, broker: int) -> str:
        """Why ``broker`` is `closed`, as a plan's warnings say it.

        >>> ClusterHealth({}, {}, cordoned={5: "cordoned: all log dirs"}).why_closed(5)
        'cordoned: all log dirs'
        """
        if broker in self.brokers:
            return f"unhealthy ({self.brokers[broker]})"
        return self.cordoned[broker]

    def open_racks(self, brokers: Iterable[tuple[int, str | None]]) -> set[str]:
        """The racks of ``brokers`` (``(id, rack)`` pairs) with open capacity: those holding a broker that is not
        `closed`. A closed broker counts only for what it holds, so a rack of closed brokers alone takes no new
        replica and spreads nothing further.

        >>> sorted(ClusterHealth({3: "offline"}, {}, cordoned={5: "all"}).open_racks([(3, "r1"), (4, "r2"), (5, "r3")]))
        ['r2']
        """
        return {rack for b, rack in brokers if rack is not None and b not in self.closed}

    def closed_mask(self, broker_ids: np.ndarray) -> np.ndarray:
        """Per broker id of ``broker_ids``: True when it is `closed`.

        >>> ClusterHealth({3: "offline"}, {}, cordoned={5: "cordoned.log.dirs=*"}).closed_mask(np.array([3, 4, 5]))
        array([ True, False,  True])
        """
        return np.isin(broker_ids, np.fromiter(self.closed, np.int64, len(self.closed)))

    def evacuable(self, snapshot: ClusterSnapshot, drained: Collection[int]) -> list[tuple[str, int]]:
        """Held partitions that draining ``drained`` may evacuate (see the module docstring), sorted.

        Examples
        --------
        >>> from pools.snapshot import Broker, Capacity, PartitionState
        >>> cap = Capacity(1, 1, 1, 1)
        >>> parts = (PartitionState("t", 0, (3, 1, 2), leader=1, isr=(1, 2)),
        ...          PartitionState("t", 1, (1, 2, 3), leader=1, isr=(1,)))
        >>> snap = ClusterSnapshot("c", tuple(Broker(b, None, cap) for b in (1, 2, 3, 4)), (), parts)
        >>> cluster_health(snap).evacuable(snap, [3])
        [('t', 0)]
        """
        drained = set(drained)
        if not drained:
            return []
        out = []
        for p in snapshot.partitions:
            key = (p.topic, p.partition)
            reason = self.partitions.get(key)
            if reason not in ("under-replicated", "replica on an unhealthy broker") or not drained & set(p.replicas):
                continue
            if p.adding_replicas or p.removing_replicas or p.leader is None or p.leader not in p.replicas:
                continue
            if p.leader in drained or p.leader in self.brokers or (p.isr and p.leader not in p.isr):
                continue
            troubled = {b for b in p.replicas if b in self.brokers or (p.isr and b not in p.isr)}
            if troubled <= drained:
                out.append(key)
        return sorted(out)

    def evacuating(self, keys: Collection[tuple[str, int]], drained: Collection[int]) -> "ClusterHealth":
        """This health with ``keys`` (from `evacuable`) evacuated from ``drained`` instead of held, besides those
        it evacuates already (from brokers gone from the snapshot)."""
        keys = set(keys)
        return replace(self, partitions={k: r for k, r in self.partitions.items() if k not in keys},
                       evacuated=dict(sorted({**self.evacuated,
                                              **{k: r for k, r in self.partitions.items() if k in keys}}.items())),
                       drained=tuple(sorted(set(drained) | set(self.drained))))

    @cached_property
    def held_by_reason(self) -> dict[str, list[tuple[str, int]]]:
        """Held partitions per reason, in `HOLD_REASONS` order, each list sorted."""
        out: dict[str, list[tuple[str, int]]] = {}
        for key, reason in sorted(self.partitions.items()):
            out.setdefault(reason, []).append(key)
        return {r: out[r] for r in HOLD_REASONS if r in out}

    def summary(self, shown: int = 5) -> list[str]:
        """One sentence per unhealthy broker group and per hold reason, naming up to ``shown`` partitions each.

        Examples
        --------
        >>> ClusterHealth({3: "log dir /d2 in error (KafkaStorageException)"}, {("t", 0): "offline"}).summary()
        ['broker 3 is unhealthy (log dir /d2 in error (KafkaStorageException)): nothing is copied to or from it', \
'1 offline partition(s) keep their replicas: t-0']
        """
        lines = [f"broker {b} is unhealthy ({why}): nothing is copied to or from it"
                 for b, why in sorted(self.brokers.items())]
        for reason, keys in self.held_by_reason.items():
            names = ", ".join(f"{t}-{p}" for t, p in keys[:shown])
            more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
            lines.append(f"{len(keys)} {reason} partition(s) keep their replicas: {names}{more}")
        if self.evacuated:
            keys = sorted(self.evacuated)
            names = ", ".join(f"{t}-{p}" for t, p in keys[:shown])
            more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
            lines.append(f"{len(keys)} partition(s) with their only unhealthy replica on drained broker(s) "
                         f"{', '.join(map(str, self.drained))} are re-replicated from their in-sync leader: "
                         f"{names}{more}")
        return lines


@dataclass(frozen=True, slots=True)
class PartitionStates:
    """Each partition's leader and ISR as one rule reads them (arrays in snapshot order).

    ``offline``: no leader. ``isr_reported``: the ISR is known (an empty ISR with a leader is not reported).
    ``in_sync``: the ISR's size. ``under_replicated``: the reported ISR is smaller than the replication factor,
    which leaves a reassignment's adding replicas out (`kafka-topics.sh --under-replicated-partitions`); offline
    partitions are not counted here. ``rep_out_of_sync``: per flat replica (`ClusterArrays` order), out of a
    reported ISR and not being added.
    """

    offline: np.ndarray
    isr_reported: np.ndarray
    in_sync: np.ndarray
    under_replicated: np.ndarray
    rep_out_of_sync: np.ndarray


def partition_states(snapshot: ClusterSnapshot) -> PartitionStates:
    """The `PartitionStates` of ``snapshot``, vectorised over its flat arrays: O(P + R).

    Examples
    --------
    >>> from pools.snapshot import Broker, Capacity, PartitionState
    >>> parts = (PartitionState("t", 0, (1, 2), leader=1, isr=(1,)), PartitionState("t", 1, (1, 2), leader=1, isr=()),
    ...          PartitionState("t", 2, (1, 2), leader=None, isr=()))
    >>> s = partition_states(ClusterSnapshot("c", (Broker(1, None, Capacity(1, 1, 1, 1)),), (), parts))
    >>> s.under_replicated.tolist(), s.isr_reported.tolist(), s.offline.tolist()
    ([True, False, False], [True, False, False], [False, False, True])
    """
    a = cluster_arrays(snapshot)
    reported = a.part_isr > 0
    out_of_sync = reported[a.rep_part] & ~a.rep_in_isr & ~_adding(snapshot, a)
    # TopicCommand's rule: the ISR is smaller than the replication factor, which leaves adding replicas out
    under = reported & (a.part_isr < a.part_rf - a.part_adding)
    return PartitionStates(a.part_offline, reported, a.part_isr, under & ~a.part_offline, out_of_sync)


def cluster_health(snapshot: ClusterSnapshot) -> ClusterHealth:
    """The unhealthy brokers and held partitions of ``snapshot`` (see the module docstring).

    Notes
    -----
    Vectorised over the snapshot's flat arrays (`pools.cluster_arrays.cluster_arrays`): O(P + R).

    Examples
    --------
    >>> from pools.snapshot import Broker, Capacity, PartitionState
    >>> cap = Capacity(1, 1, 1, 1)
    >>> parts = (PartitionState("t", 0, (1, 2), leader=1, isr=(1,)),
    ...          PartitionState("t", 1, (1, 2), leader=1, isr=(1, 2)))
    >>> h = cluster_health(ClusterSnapshot("c", (Broker(1, None, cap), Broker(2, None, cap)), (), parts))
    >>> dict(h.partitions), dict(h.brokers)
    ({('t', 0): 'under-replicated'}, {})
    """
    return per_snapshot("health", snapshot, lambda: _cluster_health(snapshot))


def _cluster_health(snapshot: ClusterSnapshot) -> ClusterHealth:
    a = cluster_arrays(snapshot)
    states = partition_states(snapshot)
    n_parts = len(a.part_rf)
    rep_reported = states.isr_reported[a.rep_part]
    rep_ids = a.rep_id
    unhealthy: dict[int, str] = {}
    for e in snapshot.log_dir_errors:
        unhealthy.setdefault(e.broker, f"log dir {e.log_dir} in error ({e.error})")
    # offline: holds replicas of ISR-reporting partitions and is in none of those ISRs
    hosts = np.unique(rep_ids[rep_reported])
    in_sync = np.unique(rep_ids[rep_reported & a.rep_in_isr])
    for b in np.setdiff1d(hosts, in_sync).tolist():
        unhealthy.setdefault(int(b), "offline: in no ISR of the partitions it holds")
    on_unhealthy = np.zeros(n_parts, dtype=bool)
    on_unhealthy[a.rep_part[np.isin(rep_ids, np.fromiter(unhealthy, np.int64, len(unhealthy)))]] = True

    masks = (states.offline, states.under_replicated, (a.part_adding > 0) | (a.part_removing > 0), on_unhealthy)
    held: dict[tuple[str, int], str] = {}
    for reason, mask in zip(HOLD_REASONS, masks, strict=True):
        for i in np.flatnonzero(mask).tolist():
            p = snapshot.partitions[i]
            held.setdefault((p.topic, p.partition), reason)
    cordoned = {b.id: f"cordoned: {', '.join(b.cordoned_log_dirs) or 'all log dirs'}"
                      + _by(b.cordon_source()) for b in snapshot.brokers if b.cordoned}
    health = ClusterHealth(dict(sorted(unhealthy.items())), dict(sorted(held.items())), cordoned=cordoned)
    gone = np.unique(a.rep_id[a.rep_broker >= a.n_brokers]).tolist()  # replicas on brokers the snapshot lacks
    return health.evacuating(health.evacuable(snapshot, gone), gone) if gone else health


def kafka_cordoned(broker: Broker, held: str | None = None) -> bool:
    """True when Kafka itself takes no new replica on ``broker``: the ``cordoned.log.dirs`` it holds
    (`pools.snapshot.Broker.kafka_cordon`, or ``held`` where the bundle's start differs from the captures, as after
    an earlier wave's pre-flight) is ``*`` or names every log dir; such a broker rejects a reassignment that adds a
    replica to it (``INVALID_REPLICA_ASSIGNMENT``), a rollback's included. An inventory cordon alone is not.

    >>> from pools.snapshot import Capacity, config_cordon_source
    >>> def b(value, dirs=("/a", "/b")):
    ...     return Broker(1, None, Capacity(1, 1, 1, 1), log_dirs=dirs, cordon_sources=(("/a", config_cordon_source(
    ...         "c.txt", value)),))
    >>> kafka_cordoned(b("*")), kafka_cordoned(b("/a")), kafka_cordoned(b("/a", ("/a",))), kafka_cordoned(b(""))
    (True, False, True, False)
    >>> kafka_cordoned(b(""), held="*"), kafka_cordoned(b("*"), held="")
    (True, False)
    """
    value = broker.kafka_cordon() if held is None else held
    return value == "*" or bool(value and broker.log_dirs and set(broker.log_dirs) <= set(value.split(",")))


def open_log_dirs(broker: Broker) -> tuple[str, ...]:
    """The log dirs of ``broker`` a replica may be placed in: none on a cordoned broker, else those not cordoned.

    >>> from pools.snapshot import Capacity
    >>> cap = Capacity(1, 1, 1, 1)
    >>> open_log_dirs(Broker(1, None, cap, log_dirs=("/a", "/b"), cordoned_log_dirs=("/b",)))
    ('/a',)
    >>> open_log_dirs(Broker(1, None, cap, cordoned=True, log_dirs=("/a", "/b")))
    ()
    """
    return () if broker.cordoned else tuple(d for d in broker.log_dirs if d not in broker.cordoned_log_dirs)


#: A reassignment target as `cordon_crossings` reads it: topic, partition, replicas, and each replica's log dir
#: (``"any"``: the broker chooses) or None for none named.
Target = tuple[str, int, Sequence[int], Sequence[str] | None]


def cordon_crossings(snapshot: ClusterSnapshot, targets: Iterable[Target]) -> list[str]:
    """Every way ``targets`` cross a cordon (KIP-1066), one line each naming the partition, the broker or dir and
    the cordon's source: a replica new to a cordoned broker, or a log dir named for a replica that is cordoned
    (or not the broker's: Kafka rejects both) unless the replica is in that dir already. Kafka 4.3 rejects such
    a reassignment (``INVALID_REPLICA_ASSIGNMENT``); a replica a cordoned broker or dir holds may stay.

    >>> from pools.snapshot import Capacity, PartitionState
    >>> b5 = Broker(5, None, Capacity(1, 1, 1, 1), cordoned=True, cordon_sources=(("*", "brokers.toml"),))
    >>> snap = ClusterSnapshot("c", (Broker(4, None, Capacity(1, 1, 1, 1)), b5), (),
    ...                        (PartitionState("t", 0, (4,), leader=4),))
    >>> cordon_crossings(snap, [("t", 0, (5,), None)])
    ['partition t-0: a new replica on broker 5, which is cordoned (all log dirs, by brokers.toml)']
    """
    brokers = snapshot.broker_by_id
    if not any(b.cordoned or b.cordoned_log_dirs for b in snapshot.brokers):
        return []
    out = []
    for topic, partition, replicas, dirs in targets:
        parts = snapshot.partitions_by_topic.get(topic, ())
        i = bisect_left(parts, partition, key=attrgetter("partition"))
        state = parts[i] if i < len(parts) and parts[i].partition == partition else None
        held = dict(zip(state.replicas, state.log_dirs or (None,) * len(state.replicas))) if state else {}
        for j, b in enumerate(replicas):
            broker = brokers.get(b)
            if broker is None:
                continue
            named = dirs[j] if dirs is not None and dirs[j] != "any" else None
            if broker.cordoned and b not in held:
                out.append(f"partition {topic}-{partition}: a new replica on broker {b}, which is cordoned "
                           f"(all log dirs{_by(broker.cordon_source())})")
            elif named is not None and named != held.get(b) and (broker.cordoned or broker.log_dirs) \
                    and named not in open_log_dirs(broker):
                why = (f"cordoned{_by(broker.cordon_source(named), ' (by {})')}" if named in broker.log_dirs
                       else f"not one of its log dirs {list(broker.log_dirs)}")
                out.append(f"partition {topic}-{partition}: log dir {named} of broker {b} is {why}")
    return out


def _by(source: str, form: str = ", by {}") -> str:
    """``form`` naming a cordon's ``source``; empty when the snapshot does not say where it came from."""
    return form.format(source) if source else ""


def evacuation_keeps(old: Sequence[int], new: Sequence[int], drained: Collection[int],
                     outside: Collection[int] = ()) -> bool:
    """Whether ``new`` evacuates ``old`` from ``drained``: no replica left on a drained broker, every other one
    kept but those on brokers ``outside`` the partition's pool (which go back into it, as in any plan).

    >>> evacuation_keeps((3, 1, 2), (1, 4, 2), {3}), evacuation_keeps((3, 1, 2), (4, 5, 2), {3})
    (True, False)
    >>> evacuation_keeps((3, 1, 8), (1, 4, 2), {3}, outside={8})
    True
    """
    return not set(new) & set(drained) and set(old) - set(drained) - set(outside) <= set(new)


def _adding(snapshot: ClusterSnapshot, a) -> np.ndarray:
    """Per flat replica: True for a replica a reassignment is adding (not expected in the ISR yet)."""
    out = np.zeros(len(a.rep_part), dtype=bool)
    for i in np.flatnonzero(a.part_adding > 0).tolist():
        p = snapshot.partitions[i]
        start = int(a.part_start[i])
        for k, b in enumerate(p.replicas):
            out[start + k] = b in p.adding_replicas
    return out
