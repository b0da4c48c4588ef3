"""The MILP solvers the pool model can use, by the names ``poolplan plan --solver`` and the run config take.

Kept apart from `planner.pool_milp` so the CLI can list them without importing PuLP.

>>> [s.value for s in Solver]
['highs', 'cbc']
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Solver"]


class Solver(StrEnum):
    """``highs`` (HiGHS through highspy, the default) or ``cbc`` (COIN-OR CBC, the binary of ``pulp[cbc]``)."""

    HIGHS = "highs"
    CBC = "cbc"
