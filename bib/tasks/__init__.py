"""Task families and their registry; importing this package registers every task.

Listings follow each task's ``order`` (see :mod:`bib.tasks.registry`), not the import order.
"""

from __future__ import annotations

from bib.tasks import (
    agent_grids,  # noqa: F401
    background,  # noqa: F401  (registers its tasks)
    cost_reward,  # noqa: F401
    efficiency,  # noqa: F401
    inaccessible_goal,  # noqa: F401
    instrumental,  # noqa: F401
    multi_agent,  # noqa: F401
    preference,  # noqa: F401
    unobserved,  # noqa: F401
)
from bib.tasks.registry import (
    REGISTRY,
    LayoutRejected,
    TaskSpec,
    UnitInfo,
    bib_folders,
    conditions,
    families,
    get_task,
    make_unit,
    register,
    table_order,
    task_ids,
    unit_id,
    unit_seed,
    validate_episode,
    validate_pair,
)

__all__ = [
    "REGISTRY",
    "LayoutRejected",
    "TaskSpec",
    "UnitInfo",
    "bib_folders",
    "conditions",
    "families",
    "get_task",
    "make_unit",
    "register",
    "table_order",
    "task_ids",
    "unit_id",
    "unit_seed",
    "validate_episode",
    "validate_pair",
]
