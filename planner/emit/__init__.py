"""Plan emission: batches, throttles, runbook and the reassignment bundle ``poolplan emit`` writes."""

from planner.emit.batches import DEFAULT_MOVES_PER_BROKER, Batch, BatchLimits, BatchMove, apply_batches, plan_batches
from planner.emit.bundle import EmitOptions, build_bundle, write_bundle
from planner.emit.runbook import BOOTSTRAP_PLACEHOLDER, render_runbook
from planner.emit.batch_throttle import MIN_THROTTLE_BPS, BatchThrottle, batch_throttle, throttle_rate

__all__ = [
    "BOOTSTRAP_PLACEHOLDER",
    "DEFAULT_MOVES_PER_BROKER",
    "MIN_THROTTLE_BPS",
    "Batch",
    "BatchLimits",
    "BatchMove",
    "BatchThrottle",
    "EmitOptions",
    "apply_batches",
    "batch_throttle",
    "build_bundle",
    "plan_batches",
    "render_runbook",
    "throttle_rate",
    "write_bundle",
]
