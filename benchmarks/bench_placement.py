"""Time Kafka-exact placement: AdminUtils (rack-aware) and the striped placer on large clusters.

Usage: ``python benchmarks/bench_placement.py [--repeat N]``. Prints one line per case with the best
wall time of the array core and of the public function (which also builds Python lists).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from planner.placement import assign_replicas_to_brokers, striped_place
from planner.placement.adminutils import assign_replicas_array
from planner.placement.striped import striped_place_array

RACKS, RF = 10, 3
CASES = [(200_000, 200), (200_000, 1_000), (1_000_000, 200), (1_000_000, 1_000)]


def _best(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'algorithm':<22}{'partitions':>11}{'brokers':>9}{'core s':>9}{'public s':>10}")
    for partitions, n_brokers in CASES:
        racked = [(b, f"rack{b % RACKS}") for b in range(n_brokers)]
        unfenced = [(b, rack, False) for b, rack in racked]
        runs = {
            "adminutils-rack-aware": (
                lambda: assign_replicas_array(racked, partitions, RF, seed=42),
                lambda: assign_replicas_to_brokers(racked, partitions, RF, seed=42),
            ),
            "adminutils-no-rack": (
                lambda: assign_replicas_array([(b, None) for b, _ in racked], partitions, RF, seed=42),
                lambda: assign_replicas_to_brokers([(b, None) for b, _ in racked], partitions, RF, seed=42),
            ),
            "striped": (
                lambda: striped_place_array(unfenced, partitions, RF, 42),
                lambda: striped_place(unfenced, partitions, RF, 42),
            ),
        }
        for name, (core, public) in runs.items():
            print(
                f"{name:<22}{partitions:>11,}{n_brokers:>9,}"
                f"{_best(core, args.repeat):>9.3f}{_best(public, args.repeat):>10.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
