"""The inputs a plan is made from, read once for every stage that plans or checks a cluster.

`poolplan plan`, ``audit`` and every day-2 operation (``rebalance``, ``brokers ...``, ``set-replication-factor``)
read the same five inputs: the snapshot, the pool policy, the topic profile, the consumer groups' fan-out and the
forecast horizon. Their options derive from `PlanInputOptions` and they read them with `load_plan_inputs`; the
command-line options are declared once in `planner.cli.options`.

>>> PlanInputOptions(snapshot_path="snapshot.json").policy_path
'conf/pools.toml'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pools.progress import ProgressReporter, no_progress

if TYPE_CHECKING:
    from pools.policy import PoolPolicy
    from pools.profile import PartitionProfile, TopicProfile
    from pools.snapshot import Snapshot

__all__ = ["PlanInputOptions", "PlanInputs", "load_plan_inputs", "read_topic_fanout"]


@dataclass(frozen=True, kw_only=True)
class PlanInputOptions:
    """Where the plan inputs are: the snapshot, the policy, the profile directory (None: no profile), the
    consumer groups' output (None: no fan-out) and the forecast horizon (None: the policy's)."""

    snapshot_path: str
    policy_path: str = "conf/pools.toml"
    profile_dir: str | None = None
    groups_path: str | None = None
    horizon_days: int | None = None


@dataclass(frozen=True)
class PlanInputs:
    """The plan inputs as read: ``profile`` and ``partitions`` are None without a profile; ``notes`` say what
    was skipped (an optional profile directory without a profile)."""

    snapshot: Snapshot
    policy: PoolPolicy
    profile: dict[str, TopicProfile] | None
    partitions: dict[tuple[str, int], PartitionProfile] | None
    fanout: dict[str, int] | None
    horizon_days: int | None
    notes: tuple[str, ...] = ()


def load_plan_inputs(options: PlanInputOptions, *, profile_required: bool = True,
                     progress: ProgressReporter = no_progress) -> PlanInputs:
    """Read the snapshot, the policy, the profile and the fan-out ``options`` name.

    ``profile_required=False`` reads a profile directory without a profile as no profile (with a note saying the
    traffic and forecast checks are skipped) instead of an input error.

    Raises
    ------
    InputError
        For an unreadable input (a missing required profile included).
    """
    from pools.policy import load_policy
    from pools.profile import load_profile_dir
    from pools.snapshot import load_snapshot

    progress("reading the snapshot, the policy and the profile")
    snapshot = load_snapshot(options.snapshot_path)
    policy = load_policy(options.policy_path)
    profile = partitions = None
    notes: list[str] = []
    if options.profile_dir is not None:
        profile, partitions = load_profile_dir(options.profile_dir, required=profile_required)
        if profile is None:
            notes.append(f"no profile at {options.profile_dir}: traffic and forecast checks skipped")
    return PlanInputs(snapshot, policy, profile, partitions, read_topic_fanout(options.groups_path),
                      options.horizon_days, tuple(notes))


def read_topic_fanout(path: str | None) -> dict[str, int] | None:
    """Consumer groups per topic from `kafka-consumer-groups.sh --describe --all-groups` output.

    ``None`` when no file is given; a missing file is an `InputError` naming it.

    >>> read_topic_fanout(None) is None
    True
    """
    if path is None:
        return None
    from planner.assignors.sizing import topic_fanout
    from pools.files import read_text
    from pools.kafka_formats.consumer_groups import parse_consumer_groups_describe

    return topic_fanout(parse_consumer_groups_describe(read_text(path), source=path))
