"""The former name of `pools.plan_file` (the plan.json contract), kept because docs/formats.md named it.

>>> from pools.plan import Plan
>>> from pools.plan_file import Plan as Same
>>> Plan is Same
True
"""

from pools.plan_file import *  # noqa: F403
from pools.plan_file import __all__  # noqa: F401
