"""Time `poolplan sample` generation (in memory, no disk) at the test size and the default size.

Run: ``.venv/bin/python benchmarks/bench_sample.py``. Figures are recorded in ``docs/sample.md``.
"""

from __future__ import annotations

import time

from planner.sample import SampleSpec, sample_files


def main() -> None:
    for label, spec in (("tiny (6 brokers, 6 topics, 2 days)", SampleSpec(brokers=6, topics=6, days=2)),
                        ("default (9 brokers, 30 topics, 91 days every 15 min)", SampleSpec()),
                        ("large (25 brokers, 120 topics, 14 days every minute)",
                         SampleSpec(brokers=25, topics=120, days=14, step_s=60))):
        start = time.process_time()
        wall = time.perf_counter()
        files = size = 0
        for _, text in sample_files(spec):
            files += 1
            size += len(text)
        print(f"{label}: {files} files, {size / 1e6:.1f} MB, {time.process_time() - start:.1f} s CPU, "
              f"{time.perf_counter() - wall:.1f} s wall")


if __name__ == "__main__":
    main()
