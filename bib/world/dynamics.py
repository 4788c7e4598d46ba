"""Move rules: 8 king moves (or 4) plus stay, no corner cutting, key pickup and unlocking."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bib.world.grid import Cell, Layout

ACTIONS: tuple[tuple[int, int], ...] = (
    (0, -1),  # N
    (1, -1),  # NE
    (1, 0),  # E
    (1, 1),  # SE
    (0, 1),  # S
    (-1, 1),  # SW
    (-1, 0),  # W
    (-1, -1),  # NW
    (0, 0),  # stay
)
"""Action index -> (dx, dy); y grows downwards, so N is (0, -1). Index 8 is stay."""

ACTION_NAMES: tuple[str, ...] = ("N", "NE", "E", "SE", "S", "SW", "W", "NW", "stay")
STAY = 8
ORTHOGONAL: tuple[int, ...] = (0, 2, 4, 6)
DIAGONAL: tuple[int, ...] = (1, 3, 5, 7)
SQRT2 = math.sqrt(2.0)
_ACTION_OF = {d: i for i, d in enumerate(ACTIONS)}


def action_cost(action: int) -> float:
    """Length of a move: 1 orthogonal, sqrt(2) diagonal, 0 for stay."""
    dx, dy = ACTIONS[action]
    return SQRT2 if dx and dy else float(abs(dx) + abs(dy))


def action_between(a: Cell, b: Cell) -> int | None:
    """The action that moves from ``a`` to ``b`` (stay if equal), or None if not one step apart."""
    return _ACTION_OF.get((b[0] - a[0], b[1] - a[1]))


def move_legal(layout: Layout, cell: Cell, action: int, unlocked: bool = False) -> bool:
    """True when ``action`` from ``cell`` is allowed.

    The target must be free; a diagonal move also needs both orthogonal neighbours it passes
    free (no cutting the corner of a wall or barrier): the cells of :func:`cells_needed`. With
    ``layout.moves == 4`` diagonals are illegal. Stay is always legal.
    """
    needed = cells_needed(cell, action)
    if not needed:
        return True
    if not layout.in_bounds(needed[0]) or (len(needed) > 1 and layout.moves == 4):
        return False
    blocked = layout.blocked(unlocked)
    for c in needed:
        if c in blocked:
            return False
    return True


def cells_needed(cell: Cell, action: int) -> tuple[Cell, ...]:
    """The cells that must be free for ``action`` from ``cell`` (:func:`move_legal`): its target first and, for a
    diagonal, both orthogonal neighbours it passes; none for stay. A path stays legal with more walls exactly when
    they avoid these cells of its every move."""
    dx, dy = ACTIONS[action]
    x, y = cell
    if dx and dy:
        return ((x + dx, y + dy), (x + dx, y), (x, y + dy))
    return ((x + dx, y + dy),) if dx or dy else ()


def legal_actions(layout: Layout, cell: Cell, unlocked: bool = False, include_stay: bool = True) -> list[int]:
    """Indices of the legal actions from ``cell``."""
    n = len(ACTIONS) if include_stay else STAY
    return [a for a in range(n) if move_legal(layout, cell, a, unlocked)]


def adjacent_to_lock(layout: Layout, cell: Cell) -> bool:
    """True when ``cell`` shares an edge with the lock (where a key holder opens it)."""
    if layout.lock is None:
        return False
    lx, ly = layout.lock
    return abs(cell[0] - lx) + abs(cell[1] - ly) == 1


@dataclass(frozen=True)
class AgentState:
    """What changes during a trial: the agent's cell, whether it holds the key, whether the lock is open."""

    cell: Cell
    has_key: bool = False
    unlocked: bool = False


def step(layout: Layout, state: AgentState, action: int) -> tuple[AgentState, list[str]]:
    """Apply ``action``; return the new state and the events it caused.

    Stepping onto the key picks it up (``pickup-key``); standing on a cell that shares an edge
    with the lock while holding the key opens it (``unlock``): barriers and lock vanish.

    Raises:
        ValueError: if the move is illegal.
    """
    if not move_legal(layout, state.cell, action, state.unlocked):
        raise ValueError(f"illegal move {ACTION_NAMES[action]} from {list(state.cell)}")
    dx, dy = ACTIONS[action]
    cell = (state.cell[0] + dx, state.cell[1] + dy)
    has_key, unlocked = state.has_key, state.unlocked
    events: list[str] = []
    if not has_key and layout.key is not None and cell == layout.key:
        has_key = True
        events.append("pickup-key")
    if has_key and not unlocked and adjacent_to_lock(layout, cell):
        unlocked = True
        events.append("unlock")
    return AgentState(cell, has_key, unlocked), events
