"""Day-2 operations inside pools: rebalance, add, decommission and replace brokers, change replication factors.

Each is a seed plus a goal for the one placement engine (`planner.placement.engine`), run pool by pool through
`planner.placement.minimal_move.place_in_pools` (replace and replication-factor changes are direct edits of replica
lists and need no solver), and each ends in a `pools.plan_file.Plan`, so ``poolplan emit``, ``audit`` and ``report``
take its ``plan.json`` unchanged. A replica never leaves its topic's pool. Vocabulary: Cruise Control's
``rebalance``/``add_broker``/``remove_broker``, kafka-kit's ``rebuild`` substitution and Yelp's
``decommission``/``replace-broker``.
"""

from __future__ import annotations

from planner.operations.brokers import add_brokers, decommission_brokers, demote_brokers, replace_broker
from planner.operations.outcome import Operation
from planner.operations.rebalance import REBALANCE_BAND, rebalance
from planner.operations.replication import set_replication_factor
from planner.operations.scope import OperationInputs, operation_inputs

__all__ = [
    "REBALANCE_BAND",
    "Operation",
    "OperationInputs",
    "operation_inputs",
    "rebalance",
    "add_brokers",
    "decommission_brokers",
    "demote_brokers",
    "replace_broker",
    "set_replication_factor",
]
