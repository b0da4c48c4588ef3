"""Synthetic Kafka clusters in the real tool and exporter formats, with the truth of what was planted."""

from planner.sample.sample_dir import sample_files
from planner.sample.cluster import Problem, SampleSpec

__all__ = ["Problem", "SampleSpec", "sample_files"]
