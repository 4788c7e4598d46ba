"""Exact shortest paths (step cost 1 orthogonal, sqrt 2 diagonal), optimal action sets, reachability."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from bib.world.dynamics import ACTIONS, STAY, action_between, action_cost, move_legal
from bib.world.grid import Cell, Layout

TOL = 1e-9
"""Tolerance when comparing path costs (sums of 1 and sqrt 2 on small grids)."""


def distance_field(layout: Layout, goal: Cell, unlocked: bool = False) -> np.ndarray:
    """Exact shortest-path cost from every cell to ``goal``, as a read-only ``[height, width]`` array.

    Blocked and unreachable cells hold ``inf``. Moves are symmetric, so this is also the cost
    from ``goal`` to every cell. Results are cached by (grid, blocked cells, goal).
    """
    return _distance_field(layout.width, layout.height, layout.moves, layout.blocked(unlocked), goal)


@lru_cache(maxsize=8192)
def _distance_field(width: int, height: int, moves: int, blocked: frozenset[Cell], goal: Cell) -> np.ndarray:
    probe = Layout(width=width, height=height, walls=blocked, moves=moves)
    dist = np.full((height, width), np.inf)
    if not probe.is_free(goal):
        dist.flags.writeable = False
        return dist
    dist[goal[1], goal[0]] = 0.0
    heap: list[tuple[float, Cell]] = [(0.0, goal)]
    while heap:
        d, cell = heapq.heappop(heap)
        if d > dist[cell[1], cell[0]] + TOL:
            continue
        for a in range(STAY):
            if not move_legal(probe, cell, a):
                continue
            dx, dy = ACTIONS[a]
            nxt = (cell[0] + dx, cell[1] + dy)
            nd = d + action_cost(a)
            if nd < dist[nxt[1], nxt[0]] - TOL:
                dist[nxt[1], nxt[0]] = nd
                heapq.heappush(heap, (nd, nxt))
    dist.flags.writeable = False
    return dist


def shortest_cost(layout: Layout, start: Cell, goal: Cell, unlocked: bool = False) -> float:
    """Cost of a shortest path from ``start`` to ``goal`` (``inf`` when unreachable)."""
    return float(distance_field(layout, goal, unlocked)[start[1], start[0]])


def optimal_actions(layout: Layout, goal: Cell, unlocked: bool = False) -> np.ndarray:
    """Boolean ``[height, width, 9]``: which actions lie on some shortest path to ``goal``.

    At the goal only stay is optimal; cells that cannot reach the goal have no optimal action.
    """
    dist = distance_field(layout, goal, unlocked)
    out = np.zeros((layout.height, layout.width, len(ACTIONS)), dtype=bool)
    for y in range(layout.height):
        for x in range(layout.width):
            d = dist[y, x]
            if not np.isfinite(d):
                continue
            if d == 0.0:
                out[y, x, STAY] = True
                continue
            for a in range(STAY):
                if move_legal(layout, (x, y), a, unlocked):
                    dx, dy = ACTIONS[a]
                    if abs(action_cost(a) + dist[y + dy, x + dx] - d) < TOL:
                        out[y, x, a] = True
    return out


def optimal_actions_at(layout: Layout, cell: Cell, goal: Cell, unlocked: bool = False) -> list[int]:
    """The optimal actions from one ``cell`` towards ``goal`` (``[STAY]`` at the goal, ``[]`` if unreachable)."""
    dist = distance_field(layout, goal, unlocked)
    d = dist[cell[1], cell[0]]
    if not np.isfinite(d):
        return []
    if d == 0.0:
        return [STAY]
    best = []
    for a in range(STAY):
        if move_legal(layout, cell, a, unlocked):
            dx, dy = ACTIONS[a]
            if abs(action_cost(a) + dist[cell[1] + dy, cell[0] + dx] - d) < TOL:
                best.append(a)
    return best


def shortest_path(
    layout: Layout,
    start: Cell,
    goal: Cell,
    unlocked: bool = False,
    rng: np.random.Generator | None = None,
) -> list[Cell] | None:
    """A shortest path from ``start`` to ``goal`` as a list of cells (both ends included).

    Among optimal moves, ``rng`` picks uniformly at each step; without it the first in action
    order is taken. Returns None when ``goal`` is unreachable.
    """
    if not np.isfinite(shortest_cost(layout, start, goal, unlocked)):
        return None
    path = [start]
    cell = start
    while cell != goal:
        options = optimal_actions_at(layout, cell, goal, unlocked)
        a = options[int(rng.integers(len(options)))] if rng is not None and len(options) > 1 else options[0]
        dx, dy = ACTIONS[a]
        cell = (cell[0] + dx, cell[1] + dy)
        path.append(cell)
    return path


def path_cost(path: Sequence[Cell]) -> float:
    """Length of a path of adjacent cells (1 per orthogonal step, sqrt 2 per diagonal, 0 per stay)."""
    total = 0.0
    for a, b in zip(path, path[1:]):
        action = action_between(tuple(a), tuple(b))
        if action is None:
            raise ValueError(f"cells {list(a)} and {list(b)} are not adjacent")
        total += action_cost(action)
    return total


def reachable(layout: Layout, start: Cell, unlocked: bool = False) -> frozenset[Cell]:
    """Every cell an agent at ``start`` can reach by legal moves (``start`` included if free)."""
    if not layout.is_free(start, unlocked):
        return frozenset()
    seen = {start}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        for a in range(STAY):
            if move_legal(layout, cell, a, unlocked):
                dx, dy = ACTIONS[a]
                nxt = (cell[0] + dx, cell[1] + dy)
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
    return frozenset(seen)


def is_shortest(layout: Layout, path: Sequence[Cell], unlocked: bool = False) -> bool:
    """True when ``path`` is as short as an exact shortest path between its ends."""
    best = shortest_cost(layout, tuple(path[0]), tuple(path[-1]), unlocked)
    return abs(path_cost(path) - best) < TOL
