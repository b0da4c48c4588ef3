"""Input files more than one subcommand reads."""

from __future__ import annotations

__all__ = ["read_topic_fanout"]


def read_topic_fanout(path: str | None) -> dict[str, int] | None:
    """Consumer groups per topic from `kafka-consumer-groups.sh --describe --all-groups` output.

    ``None`` when no file is given; a missing file is an `InputError` naming it.
    """
    if path is None:
        return None
    from planner.assignors.sizing import topic_fanout
    from pools.files import read_text
    from pools.kafka_formats.consumer_groups import parse_consumer_groups_describe

    return topic_fanout(parse_consumer_groups_describe(read_text(path), source=path))
