"""The replication throttle rule: a share of the spare network capacity of the busiest broker a move involves.

One rule for the bundle's batches (`planner.emit`) and the audit's one-partition fixes: the spare capacity of a
broker is its capacity minus its load (forecast peak), the smaller of network in and out; the throttle is
``fraction`` × the smallest spare over the involved brokers, never below 1 KiB/s
(``kafka-reassign-partitions.sh`` asks for at least 1 KB/s).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

__all__ = ["MIN_THROTTLE_BPS", "DEFAULT_THROTTLE_FRACTION", "INTRA_BROKER_THROTTLE_BPS", "throttle_rate"]

#: The smallest inter-broker throttle poolplan sets, bytes/s.
MIN_THROTTLE_BPS = 1024
#: The share of the spare network capacity replication may use unless the operator says otherwise.
DEFAULT_THROTTLE_FRACTION = 0.5
#: ``--replica-alter-log-dirs-throttle`` of a move between log dirs of one broker (B/s): one disk-to-disk copy at a
#: rate that leaves a spinning or network disk room for the broker's own traffic (no network is involved).
INTRA_BROKER_THROTTLE_BPS = 50_000_000


def throttle_rate(
    brokers: Collection[int],
    *,
    capacity: Mapping[int, tuple[float, float]],
    load: Mapping[int, tuple[float, float]],
    fraction: float,
) -> int:
    """Inter-broker throttle for a set of brokers, bytes/s.

    Parameters
    ----------
    brokers : collection of int
        The brokers the move involves.
    capacity, load : mapping
        ``broker -> (nw_in, nw_out)`` capacity and forecast peak load in bytes/s (missing load = 0).
    fraction : float
        Share of the spare capacity replication may use, in (0, 1].

    Returns
    -------
    int
        ``max(MIN_THROTTLE_BPS, floor(fraction * min spare))``.

    Examples
    --------
    >>> throttle_rate({1, 2}, capacity={1: (100e6, 100e6), 2: (100e6, 50e6)}, load={2: (10e6, 30e6)}, fraction=0.5)
    10000000
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction: expected a number in (0, 1], got {fraction!r}")
    spare = math.inf
    for b in brokers:
        cap_in, cap_out = capacity.get(b, (math.inf, math.inf))
        load_in, load_out = load.get(b, (0.0, 0.0))
        spare = min(spare, cap_in - load_in, cap_out - load_out)
    if spare == math.inf:
        raise ValueError("throttle_rate: no capacity known for any involved broker")
    return max(MIN_THROTTLE_BPS, math.floor(fraction * spare))
