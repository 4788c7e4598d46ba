"""The gridworld every part of bib shares: layouts, move rules and exact planning."""

from __future__ import annotations

from bib.world.dynamics import ACTION_NAMES, ACTIONS, STAY, AgentState, legal_actions, move_legal, step
from bib.world.grid import Agent, Cell, GridObject, Layout, border_walls
from bib.world.planning import (
    distance_field,
    optimal_actions,
    path_cost,
    reachable,
    shortest_cost,
    shortest_path,
)

__all__ = [
    "ACTIONS",
    "ACTION_NAMES",
    "STAY",
    "Agent",
    "AgentState",
    "Cell",
    "GridObject",
    "Layout",
    "border_walls",
    "distance_field",
    "legal_actions",
    "move_legal",
    "optimal_actions",
    "path_cost",
    "reachable",
    "shortest_cost",
    "shortest_path",
    "step",
]
