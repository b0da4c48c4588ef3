"""The sample stage: a deterministic synthetic cluster in Kafka's own formats, with its truth, written atomically."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from pools.progress import ProgressReporter, no_progress

__all__ = ["SampleOptions", "SampleResult", "sample"]


@dataclass(frozen=True)
class SampleOptions:
    """The options of ``poolplan sample`` (``end_date`` as given, ``YYYY-MM-DD``)."""

    out_dir: str
    seed: int
    brokers: int
    topics: int
    days: int
    step_s: int
    end_date: str
    cluster: str
    force: bool = False
    kafka_4: bool = False
    inflight: str | None = None


@dataclass(frozen=True)
class SampleResult:
    """The sample directory, how many files it holds and their bytes."""

    out_dir: Path
    files: int
    size_bytes: int
    options: SampleOptions


def sample(options: SampleOptions, *, progress: ProgressReporter = no_progress) -> SampleResult:
    """Write the sample cluster of ``options`` (same options, byte-identical files).

    Raises
    ------
    InputError
        For an option out of range, a date that is not ``YYYY-MM-DD`` or an output that exists (without ``force``).
    """
    from planner.sample import SampleSpec, sample_files
    from pools.atomic import atomic_dir, check_output, write_bytes
    from pools.errors import InputError

    try:
        end = dt.datetime.strptime(options.end_date, "%Y-%m-%d").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        raise InputError(f"--end: expected a date YYYY-MM-DD, got {options.end_date!r}") from None
    spec = SampleSpec(seed=options.seed, brokers=options.brokers, topics=options.topics, days=options.days,
                      step_s=options.step_s, end=int(end.timestamp()), cluster=options.cluster,
                      kafka_4=options.kafka_4)
    check_output(options.out_dir, overwrite=options.force)
    count = size = 0
    progress("generating the cluster and its metric logs")
    with atomic_dir(options.out_dir, overwrite=options.force) as tmp:
        for rel, text in sample_files(spec):
            data = text.encode("utf-8")
            write_bytes(Path(tmp) / rel, data)
            count, size = count + 1, size + len(data)
            progress("generating the cluster and its metric logs", note=f"{count} files written")
        if options.inflight is not None:
            from planner.sample.inflight import sample_inflight

            progress("writing a reassignment in flight")
            for rel, text in sample_inflight(Path(tmp), options.cluster, options.inflight):
                data = text.encode("utf-8")
                write_bytes(Path(tmp) / rel, data)
                count, size = count + 1, size + len(data)
    return SampleResult(Path(options.out_dir), count, size, options)
