"""Cut a plan into waves under a change budget: each wave a complete bundle, each leaving the cluster no worse.

Change-managed shops run a big reassignment over several windows. `cut_waves` splits a plan's moves into waves of
at most ``wave_bytes`` copied bytes (a move larger than that gets a wave of its own) such that after every wave

- every broker is within capacity × headroom (its pool's, `pools.plan_file.Plan.pool_headroom`) in every dimension of
  `DIMENSIONS`, or no worse than before the plan (loads at the plan's forecast, `pools.demand`), or, where the
  plan itself leaves a broker over its limit and worse (a shortfall its warnings name), no worse than its end;
- the replicas outside their topic's pool (the audit's isolation findings, against the plan's pools) never
  increase.

Every partition moves once, from its current to its final replicas, so the waves copy exactly the one-shot plan's
bytes (margin 0) and each wave's rollback (its partitions' current replicas) returns the cluster to the wave's
start. Moves are taken greedily, largest first, each kept only when the state after it still meets both rules;
when no single move fits, a move is taken together with the moves that take load off the brokers it would push
over (a swap or a rotation must run in one wave, whatever the budget). A plan no such group can start raises
`InfeasibleError` naming the move and the broker that block it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from pools.demand import Demand, partition_loads
from pools.errors import InfeasibleError
from pools.fill import replica_loads
from pools.new_brokers import with_planned_brokers
from pools.plan_file import PartitionMove, Plan
from pools.pool_rules import headroom_limit, over_limit
from pools.snapshot import DIMENSIONS, ClusterSnapshot
from pools.units import format_bytes

__all__ = ["Wave", "cut_waves", "wave_plan", "wave_bundles"]

_TOL = 1e-9  # on sums of excess (how far over, not whether: that is `pools.pool_rules.over_limit`)


@dataclass(frozen=True)
class Wave:
    """One wave: its moves (sorted by topic and partition), the bytes they copy, and the state it leaves: the
    highest broker load over its limit (1.0 = at capacity × headroom) and the replicas outside their pool."""

    index: int
    moves: tuple[PartitionMove, ...]
    copied_bytes: int
    max_utilisation: float | None
    outside_pool: int


def cut_waves(plan: Plan, snapshot: ClusterSnapshot, demands: Mapping[str, Demand],
              wave_bytes: int) -> tuple[Wave, ...]:
    """The waves of ``plan`` (see the module docstring), in the order they run.

    Raises
    ------
    InfeasibleError
        No move or group of moves can run next without leaving a broker over its limit and worse than before,
        or adding replicas outside their pool; the message names the move and the broker.
    """
    cut = _Cut(plan, with_planned_brokers(snapshot, plan.planned_brokers), demands)  # bought brokers joined
    remaining = sorted(plan.moves, key=lambda m: (-m.moved_bytes, m.topic, m.partition))
    waves: list[Wave] = []
    while remaining:
        start_outside = cut.outside
        taken: list[PartitionMove] = []
        spent = 0
        for m in remaining:
            if taken and spent + m.moved_bytes > wave_bytes:
                continue
            if cut.fits(m, start_outside):
                cut.apply(m)
                taken.append(m)
                spent += m.moved_bytes
        if not taken:
            taken = cut.group(remaining, start_outside)
        chosen = {(m.topic, m.partition) for m in taken}
        remaining = [m for m in remaining if (m.topic, m.partition) not in chosen]
        waves.append(Wave(len(waves) + 1, tuple(sorted(taken, key=lambda m: (m.topic, m.partition))),
                          sum(m.moved_bytes for m in taken), cut.utilisation(), cut.outside))
    return tuple(waves)


class _Cut:
    """The cluster's load per broker (`DIMENSIONS`) as moves are applied, and the rules a wave's end must meet."""

    def __init__(self, plan: Plan, snapshot: ClusterSnapshot, demands: Mapping[str, Demand]) -> None:
        self.plan = plan
        self.index = {(p.topic, p.partition): i for i, p in enumerate(snapshot.partitions)}
        self.loads = partition_loads(snapshot, demands)
        self.position = {b.id: k for k, b in enumerate(snapshot.brokers)}
        capacity = np.array([[b.capacity.get(d) for d in DIMENSIONS] for b in snapshot.brokers], dtype=float)
        headroom = np.array([[plan.pool_headroom(plan.brokers.get(b.id), d) or np.nan for d in DIMENSIONS]
                             for b in snapshot.brokers], dtype=float)
        stated = ~np.isnan(headroom)
        self.limit = np.where(stated, headroom_limit(capacity, np.where(stated, headroom, 0.0)), np.inf)
        self.load = np.zeros_like(capacity)
        for p in snapshot.partitions:
            self._add(self.load, (p.topic, p.partition), p.replicas, 1.0)
        final = self.load.copy()
        for m in plan.moves:
            self._add(final, (m.topic, m.partition), m.old_replicas, -1.0)
            self._add(final, (m.topic, m.partition), m.replicas, 1.0)
        # within headroom, or no worse than before the plan (or than its end, where the plan itself leaves a
        # broker over: the shortfall its warnings name)
        self.allowed = np.maximum(self.limit, np.maximum(self.load, final))
        self.outside = sum(self._outside(m.topic, m.old_replicas) for m in plan.moves)

    def _add(self, load: np.ndarray, key: tuple[str, int], replicas: tuple[int, ...], sign: float) -> None:
        i = self.index[key]
        follower, extra = replica_loads(self.loads, np.array([i]), np.array([len(replicas)]))
        for s, b in enumerate(replicas):
            if b in self.position:
                load[self.position[b]] += sign * (follower[0] + (extra[0] if s == 0 else 0.0))

    def _outside(self, topic: str, replicas: tuple[int, ...]) -> int:
        pool = self.plan.topics.get(topic)
        return sum(self.plan.brokers.get(b) != pool for b in replicas) if pool is not None else 0

    def _after(self, m: PartitionMove) -> np.ndarray:
        load = self.load.copy()
        self._add(load, (m.topic, m.partition), m.old_replicas, -1.0)
        self._add(load, (m.topic, m.partition), m.replicas, 1.0)
        return load

    def _over(self, load: np.ndarray) -> np.ndarray:
        return np.maximum(load - self.allowed, 0.0) / np.where(np.isfinite(self.allowed), self.allowed + 1.0, 1.0)

    def _delta_outside(self, m: PartitionMove) -> int:
        return self._outside(m.topic, m.replicas) - self._outside(m.topic, m.old_replicas)

    def _within(self, load: np.ndarray) -> bool:
        """Every broker within what it is allowed (`pools.pool_rules.over_limit`, with its tolerance)."""
        return not over_limit(load, self.allowed).any()

    def fits(self, m: PartitionMove, start_outside: int) -> bool:
        """Whether the state after ``m`` still meets both rules."""
        if self.outside + self._delta_outside(m) > start_outside:
            return False
        return self._within(self._after(m))

    def _meets(self, start_outside: int) -> bool:
        return self._within(self.load) and self.outside <= start_outside

    def apply(self, m: PartitionMove) -> None:
        self.load = self._after(m)
        self.outside += self._delta_outside(m)

    def group(self, remaining: list[PartitionMove], start_outside: int) -> list[PartitionMove]:
        """The first move of ``remaining`` that, with the moves relieving the brokers it pushes over, meets the
        rules; raises `InfeasibleError` naming the first move's blocking broker when none does."""
        for m in remaining:
            saved, outside = self.load.copy(), self.outside
            self.apply(m)
            taken = [m]
            progress = True
            while progress and not self._meets(start_outside):
                progress = False
                for other in remaining:
                    if any(other is t for t in taken) or self._meets(start_outside):
                        continue
                    over = self._over(self.load)
                    hot = over_limit(self.load, self.allowed)
                    after = self._over(self._after(other))
                    # it takes load off a broker over its level, and adds no excess overall (a rotation passes
                    # the excess on to the move that clears it)
                    if after[hot].sum() < over[hot].sum() - _TOL and after.sum() <= over.sum() + _TOL and \
                            self.outside + self._delta_outside(other) <= max(self.outside, start_outside):
                        self.apply(other)
                        taken.append(other)
                        progress = True
            if self._meets(start_outside):
                return taken
            self.load, self.outside = saved, outside
        m = remaining[0]
        over = self._over(self._after(m))
        if self._within(self._after(m)):
            pool = self.plan.topics.get(m.topic)
            outside = [b for b in m.replicas if self.plan.brokers.get(b) != pool]
            raise InfeasibleError(
                f"the plan cannot be cut into waves that never add replicas outside their pool: moving "
                f"{m.topic}-{m.partition} {list(m.old_replicas)} -> {list(m.replicas)} puts a replica on broker(s) "
                f"{', '.join(map(str, outside))}, outside pool {pool!r}, and no other move takes one out")
        k, d = np.unravel_index(int(np.argmax(over)), over.shape)
        broker = list(self.position)[k]
        raise InfeasibleError(
            f"the plan cannot be cut into waves that each leave every broker within headroom or no worse than "
            f"before: moving {m.topic}-{m.partition} {list(m.old_replicas)} -> {list(m.replicas)} "
            f"({format_bytes(m.moved_bytes)}) would leave broker {broker} at {self._after(m)[k, d]:.6g} "
            f"{DIMENSIONS[d]}, over its limit {self.limit[k, d]:.6g} and its load before the plan, and no group of "
            "the remaining moves relieves it")

    def utilisation(self) -> float | None:
        """The highest broker load over its limit (None when the plan states no headroom)."""
        known = np.isfinite(self.limit) & (self.limit > 0)
        if not known.any():
            return None
        return round(float((self.load[known] / self.limit[known]).max()), 6)


def wave_plan(plan: Plan, wave: Wave, count: int) -> Plan:
    """``plan`` with only ``wave``'s moves (the other partitions stay on their ``old_replicas``), named as wave
    ``wave.index`` of ``count``: what `planner.emit.build_bundle` turns into that wave's bundle."""
    keys = {(m.topic, m.partition) for m in wave.moves}
    part = tuple(m if (m.topic, m.partition) in keys else replace(m, replicas=m.old_replicas, reason=None)
                 for m in plan.partitions)
    label = f"{plan.cluster or 'cluster'}, wave {wave.index} of {count}"
    return replace(plan, cluster=label + (f" (run after wave {wave.index - 1})" if wave.index > 1 else ""),
                   partitions=part)


def wave_bundles(plan: Plan, snapshot: ClusterSnapshot, waves: tuple[Wave, ...], options) -> dict[str, str]:
    """Every file of a waved bundle: ``wave-NNN/`` a complete bundle per wave (`planner.emit.build_bundle` of
    the plan with only that wave's moves; its rollback restores the wave's start), and ``waves.json``, the index
    (per wave: directory, partitions, copied bytes, the highest broker load over its limit and the replicas
    outside their pool after it; the one-shot plan's bytes and the margin, 0). A wave starts from the cordons the
    waves before it leave (their pre-flights' ``*``), so its rollback restores those, not the plan's start."""
    from planner.emit.bundle import build_bundle, preflight_cordons
    from pools.atomic import dump_json

    files: dict[str, str] = {}
    rows = []
    held: dict[int, str] = {}
    for w in waves:
        name = f"wave-{w.index:03d}"
        for rel, text in build_bundle(wave_plan(plan, w, len(waves)), snapshot, options, held_cordons=held).items():
            files[f"{name}/{rel}"] = text
        held |= dict.fromkeys(preflight_cordons(snapshot, plan.drained, held), "*")
        rows.append({"wave": w.index, "dir": name, "partitions": len(w.moves), "copied_bytes": w.copied_bytes,
                     "max_utilisation": w.max_utilisation, "outside_pool": w.outside_pool})
    files["waves.json"] = dump_json({"one_shot_bytes": plan.moved_bytes,
                                     "waves_bytes": sum(w.copied_bytes for w in waves), "margin": 0.0,
                                     "waves": rows})
    return files
