"""Re-derive one wave of a waved bundle from a fresh snapshot taken after the earlier waves ran.

`cut_waves` cuts a plan once, from the cluster the plan was made for. Before a later change window,
`rebase_wave` re-derives wave N through the same cut: the plan's waves are cut again on the cluster as planned
(`as_planned`: the fresh snapshot's brokers, each plan partition back on its ``old_replicas`` at the plan's size,
so an unchanged cluster gives the very waves it gave), then the fresh cluster is checked against what they
assume:

- every partition of waves 1..N-1 holds its target replicas; a snapshot where none of them has moved yet is
  stale (`InputError`);
- every partition of wave N still holds the replicas it moves from, is not held (`pools.health`: offline,
  under-replicated, reassigning) and its topic still exists;
- no broker of the plan is gone (checked first: the cut needs them), and no broker wave N adds replicas to is
  closed (unhealthy or cordoned, `pools.health`).

Any drift refuses the wave (`InfeasibleError`) naming each partition or broker and what it found. Otherwise wave
N's bundle is built from the fresh snapshot (`planner.emit.bundle.build_bundle`: its rollback is the cluster as
it is), byte for byte the waved bundle's ``wave-NNN/`` when nothing drifted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from planner.emit.bundle import EmitOptions, build_bundle
from planner.emit.waves import Wave, wave_plan
from pools.errors import InfeasibleError, InputError
from pools.health import cluster_health
from pools.plan_file import PartitionMove, Plan
from pools.snapshot import ClusterSnapshot, PartitionState, TopicState

__all__ = ["as_planned", "rebase_wave"]

_SHOWN = 20  # drifts named in the refusal (the rest counted)


def as_planned(plan: Plan, fresh: ClusterSnapshot) -> ClusterSnapshot:
    """The cluster ``plan`` was made for, rebuilt from ``fresh``: its brokers, and each partition of the plan on its
    ``old_replicas`` at the plan's size (led by its fresh leader where that is one of them, else the first), in
    sync; the partitions the plan does not hold stay as they are, a topic deleted since comes back bare.

    Raises
    ------
    InfeasibleError
        A broker of the plan is gone (its brokers still to buy count as there: ``fresh`` has them joined).
    """
    known = set(fresh.broker_by_id)
    gone = [f"broker {b} (pool {pool}) is gone" for b, pool in sorted(plan.brokers.items()) if b not in known]
    if gone:
        raise InfeasibleError(f"the plan's waves cannot be re-derived on the cluster as it is: {'; '.join(gone)}; "
                              "re-plan from this snapshot")
    fresh_parts = {(p.topic, p.partition): p for p in fresh.partitions}
    parts = []
    for m in plan.partitions:
        now = fresh_parts.pop((m.topic, m.partition), None)
        leader = now.leader if now is not None and now.leader in m.old_replicas else m.old_replicas[0]
        dirs = now.log_dirs if now is not None and len(now.log_dirs) == len(m.old_replicas) else ()
        parts.append(PartitionState(m.topic, m.partition, m.old_replicas, leader=leader, isr=m.old_replicas,
                                    log_dirs=dirs, sizes=(m.size_bytes,) * len(m.old_replicas)))
    topics = {t.topic for t in fresh.topics}
    bare = tuple(TopicState(t) for t in sorted({m.topic for m in plan.partitions} - topics))
    return replace(fresh, topics=fresh.topics + bare, partitions=tuple(parts) + tuple(fresh_parts.values()))


def rebase_wave(plan: Plan, fresh: ClusterSnapshot, waves: Sequence[Wave], number: int,
                options: EmitOptions) -> dict[str, str]:
    """Wave ``number``'s bundle from ``fresh`` (see the module docstring); ``waves`` as `cut_waves` cut ``plan`` on
    `as_planned`.

    Raises
    ------
    InputError
        No such wave, or a stale snapshot (none of the earlier waves' partitions has moved).
    InfeasibleError
        The cluster drifted from what wave ``number`` assumes; the message names every drift.
    """
    if not 1 <= number <= len(waves):
        raise InputError(f"--rebase-wave: expected a wave of the plan, 1 to {len(waves)}, got {number}")
    now = {(p.topic, p.partition): p for p in fresh.partitions}
    earlier = [m for w in waves[: number - 1] for m in w.moves]
    if earlier and all(k in now and now[k].replicas == m.old_replicas
                       for m in earlier for k in [(m.topic, m.partition)]):
        m = earlier[0]
        raise InputError(f"--snapshot: stale: none of the {len(earlier)} partitions of wave(s) 1-{number - 1} has "
                         f"moved ({m.topic}-{m.partition} still {list(m.old_replicas)}, its target "
                         f"{list(m.replicas)}); take the snapshot after those waves ran")
    drift = []
    for m in earlier:
        p = now.get((m.topic, m.partition))
        if p is None:
            drift.append(f"{m.topic}-{m.partition} (wave {_wave_of(waves, m)}) is gone")
        elif p.replicas != m.replicas:
            state = "has not moved yet" if p.replicas == m.old_replicas else "was moved by someone else"
            drift.append(f"{m.topic}-{m.partition} (wave {_wave_of(waves, m)}) {state}: {list(p.replicas)}, the "
                         f"plan's target {list(m.replicas)}")
    health = cluster_health(fresh)
    wave = waves[number - 1]
    for m in wave.moves:
        key = (m.topic, m.partition)
        p = now.get(key)
        if p is None:
            drift.append(f"{m.topic}-{m.partition} is gone (its topic deleted?)")
        elif p.replicas == m.replicas:
            drift.append(f"{m.topic}-{m.partition} is already on its target {list(m.replicas)} (wave {number} ran?)")
        elif p.replicas != m.old_replicas:
            drift.append(f"{m.topic}-{m.partition} was moved by someone else: {list(p.replicas)}, the plan moves it "
                         f"from {list(m.old_replicas)}")
        elif key in health.partitions:
            drift.append(f"{m.topic}-{m.partition} is held: {health.partitions[key]}")
        for b in m.adding:
            if b in health.closed:
                drift.append(f"broker {b}, where {m.topic}-{m.partition} gets a replica, is {health.why_closed(b)}")
    if drift:
        more = f"; and {len(drift) - _SHOWN} more" if len(drift) > _SHOWN else ""
        raise InfeasibleError(f"wave {number} cannot run as planned on the cluster as it is: "
                              f"{'; '.join(drift[:_SHOWN])}{more}; re-plan from this snapshot")
    return build_bundle(wave_plan(plan, wave, len(waves)), fresh, options)


def _wave_of(waves: Sequence[Wave], m: PartitionMove) -> int:
    return next(w.index for w in waves if any(x is m for x in w.moves))
