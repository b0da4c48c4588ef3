"""The limits poolplan enforces on what it reads, in one place, each with the reason it is what it is.

A value past a limit is an `InputError` that states the limit, so a typo such as ``--partitions 2000000000`` or a
consumer-groups line with partition ``999999999`` ends in one line instead of a multi-GiB allocation.

Examples
--------
>>> check_count(12, MAX_PARTITIONS_PER_TOPIC, "--partitions")
12
>>> check_count(2_000_000_000, MAX_PARTITIONS_PER_TOPIC, "--partitions")
Traceback (most recent call last):
...
pools.errors.InputError: --partitions: 2000000000 is past the limit of 100000 partitions per topic
"""

from __future__ import annotations

from pools.errors import InputError

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "MAX_BROKER_ID",
    "MAX_BROKERS",
    "MAX_PARTITIONS_PER_TOPIC",
    "MAX_REPLICATION_FACTOR",
    "MAX_HORIZON_DAYS",
    "check_count",
]

#: Java's ``Integer.MAX_VALUE``: broker ids, partition ids and counts are Java ints in Kafka.
INT32_MAX = 2**31 - 1
#: Java's ``Long.MAX_VALUE``: log sizes, offsets and lags are Java longs in Kafka.
INT64_MAX = 2**63 - 1

#: ``node.id``/``broker.id`` is a non-negative Java int.
MAX_BROKER_ID = INT32_MAX

#: Brokers in one cluster or pool. The largest clusters run a few thousand; ten times that bounds the pool model's
#: size (``min_brokers``, tolerated failures, brokers to add) well before memory does.
MAX_BROKERS = 50_000

#: Partitions of one topic. Kafka's KRaft controller creates at most 10,000 partitions per request
#: (``QuorumController.MAX_RECORDS_PER_USER_OP``) and the largest real topics have a few thousand; ten requests'
#: worth bounds every per-topic allocation (placement previews, consumer sizing, rebalance scripts).
MAX_PARTITIONS_PER_TOPIC = 100_000

#: Replicas per partition: Kafka's replication factor is a Java short.
MAX_REPLICATION_FACTOR = 32_767

#: Forecast horizon: ten years is far past any capacity plan and keeps compound growth finite.
MAX_HORIZON_DAYS = 3_650

_UNITS = {
    MAX_PARTITIONS_PER_TOPIC: "partitions per topic",
    MAX_BROKERS: "brokers",
    MAX_REPLICATION_FACTOR: "replicas per partition",
    MAX_HORIZON_DAYS: "days",
    INT32_MAX: "(a Java int)",
    INT64_MAX: "(a Java long)",
}


def check_count(value: int, limit: int, where: str, *, minimum: int = 0) -> int:
    """``value`` when ``minimum <= value <= limit``, else an `InputError` naming ``where`` and the limit."""
    if value < minimum:
        raise InputError(f"{where}: expected at least {minimum}, got {value}")
    if value > limit:
        raise InputError(f"{where}: {value} is past the limit of {limit} {_UNITS.get(limit, '')}".rstrip())
    return value
