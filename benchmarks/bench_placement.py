"""Time Kafka-exact placement: AdminUtils (rack-aware) and the striped placer on large clusters.

Usage: ``python benchmarks/bench_placement.py [--repeat N]``. Prints one line per case: the best
wall time and the best process CPU time (steadier on a shared machine; the code is single-threaded)
of the array core and of the public function (which also builds the Python lists).
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


def _best(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best wall and best CPU seconds over ``repeat`` runs after one warm-up run."""
    fn()
    wall, cpu = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'algorithm':<22}{'partitions':>11}{'brokers':>9}{'core wall/cpu s':>17}{'public wall/cpu s':>19}")
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
            core_s, public_s = _best(core, args.repeat), _best(public, args.repeat)
            print(
                f"{name:<22}{partitions:>11,}{n_brokers:>9,}"
                f"{core_s[0]:>11.3f}/{core_s[1]:.3f}{public_s[0]:>13.3f}/{public_s[1]:.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
