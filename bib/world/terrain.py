"""Costly terrain (mud): its dynamics, the time cost of a path and a weighted (Dijkstra) planner over it.

What mud is (AGENT's "cost-reward trade-offs", Shu et al. 2021, translated to the gridworld):

- a mud cell (:attr:`bib.world.grid.Layout.terrain`) is walkable, drawn brown
  (:data:`bib.vocabulary.TERRAIN_COLOR`);
- an agent that steps onto a mud cell is stuck there for :data:`MUD_STAYS` more steps: the path
  repeats the cell ``MUD_STAYS`` times (stay moves) before it may leave. The episode therefore
  carries the cost as time: every frame and every step an observer reads shows the agent waiting;
- the cost of a path is the time it takes (:func:`time_cost`): 1 per orthogonal move, sqrt 2 per
  diagonal, :data:`STAY_COST` per stay (the renderer also gives a stay the time of an orthogonal
  move). Entering a mud cell thus costs the move plus ``MUD_STAYS * STAY_COST``;
- :func:`cost_field` is the cheapest time from every cell to a goal (Dijkstra with the entry cost
  of the cell moved into; BFS would count moves, not time), :func:`terrain_path` an optimal path
  (stays included) and :func:`stay_problems` the rule the episode schema checks.

Terrain planning reads the closed-lock blocked cells; the task that uses mud (``cost-reward``) has
no key or lock, and the schema refuses terrain beside a key or lock.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from bib.world.dynamics import STAY, action_between, action_cost
from bib.world.grid import Cell, Layout
from bib.world.planning import INF, TOL, grid_graph

MUD_STAYS = 2
"""Steps an agent stays on a mud cell after stepping onto it (the path repeats the cell this many times)."""
STAY_COST = 1.0
"""Time cost of one stay (the duration of an orthogonal move)."""
MUD_COST = MUD_STAYS * STAY_COST
"""Extra cost of entering a mud cell, over the move itself."""


def time_cost(path: Sequence[Cell]) -> float:
    """The time a path takes: 1 per orthogonal move, sqrt 2 per diagonal, :data:`STAY_COST` per stay.

    Raises:
        ValueError: two consecutive cells are not adjacent.
    """
    total = 0.0
    for a, b in zip(path, path[1:]):
        action = action_between(tuple(a), tuple(b))
        if action is None:
            raise ValueError(f"cells {list(a)} and {list(b)} are not adjacent")
        total += STAY_COST if action == STAY else action_cost(action)
    return total


@lru_cache(maxsize=2048)
def _field(width: int, height: int, moves: int, blocked: frozenset[Cell], terrain: frozenset[Cell],
           goal: Cell) -> tuple[float, ...]:
    """Cheapest time from every flat cell to ``goal`` (``inf`` where none), entering mud at :data:`MUD_COST` more."""
    graph = grid_graph(width, height, moves, blocked)
    g = graph.index(goal)
    n = width * height
    if g is None or goal in blocked:
        return (INF,) * n
    extra = [0.0] * n
    for c in terrain:
        i = graph.index(c)
        if i is not None:
            extra[i] = MUD_COST
    dist = [INF] * n
    dist[g] = 0.0
    heap = [(0.0, g)]
    done = [False] * n
    steps = graph.steps
    while heap:
        d, i = heapq.heappop(heap)
        if done[i]:
            continue
        done[i] = True
        enter = extra[i]  # moving from a neighbour into cell i costs the move plus i's entry cost
        for _, off, w in steps[i]:  # moves are symmetric: i's neighbours are the cells that move into i
            j = i + off
            nd = d + w + enter
            if nd < dist[j]:
                dist[j] = nd
                heapq.heappush(heap, (nd, j))
    return tuple(dist)


def _distances(layout: Layout, goal: Cell) -> tuple[float, ...]:
    return _field(layout.width, layout.height, layout.moves, layout.blocked(), frozenset(layout.terrain), tuple(goal))


def cost_field(layout: Layout, goal: Cell) -> np.ndarray:
    """Cheapest time from every cell to ``goal`` with the layout's mud, as a ``[height, width]`` array (``inf``
    where blocked or cut off)."""
    return np.array(_distances(layout, goal), dtype=float).reshape(layout.height, layout.width)


def terrain_cost(layout: Layout, start: Cell, goal: Cell) -> float:
    """Cheapest time from ``start`` to ``goal`` (``inf`` when unreachable); the plain shortest path without mud."""
    i = grid_graph(layout.width, layout.height, layout.moves, layout.blocked()).index(start)
    return INF if i is None else _distances(layout, goal)[i]


def terrain_cost_between(width: int, height: int, moves: int, blocked: frozenset[Cell], terrain: frozenset[Cell],
                         start: Cell, goal: Cell) -> float:
    """Cheapest time from ``start`` to ``goal`` on a grid with ``blocked`` cells and mud ``terrain`` (``inf`` when
    unreachable or ``start`` is off the grid), read from the cached field: the value :func:`terrain_cost` gives a
    layout whose blocked cells and terrain these are, for callers that vary the mud in a hot loop and need no
    :class:`Layout` for it."""
    x, y = start
    if not (0 <= x < width and 0 <= y < height):
        return INF
    return _field(width, height, moves, blocked, terrain, goal)[y * width + x]


def with_stays(layout: Layout, cells: Sequence[Cell]) -> list[Cell]:
    """``cells`` (a path of moves) with :data:`MUD_STAYS` stays added after every step onto a mud cell."""
    out = [tuple(cells[0])]
    for c in cells[1:]:
        c = tuple(c)
        out.append(c)
        if c in layout.terrain and c != out[-2]:
            out += [c] * MUD_STAYS
    return out  # type: ignore[return-value]


def terrain_path(layout: Layout, start: Cell, goal: Cell, rng: np.random.Generator | None = None) -> list[Cell] | None:
    """A cheapest path (in time, stays included) from ``start`` to ``goal``; None when unreachable.

    Among the optimal moves ``rng`` picks uniformly at each step (without it, the first in action order).
    """
    graph = grid_graph(layout.width, layout.height, layout.moves, layout.blocked())
    dist = _distances(layout, goal)
    i = graph.index(start)
    if i is None or dist[i] == INF:
        return None
    extra = {graph.index(c): MUD_COST for c in layout.terrain}
    cells = [tuple(start)]
    while dist[i] != 0.0:
        d = dist[i]
        options = [off for _, off, w in graph.steps[i] if abs(w + extra.get(i + off, 0.0) + dist[i + off] - d) < TOL]
        i += options[int(rng.integers(len(options)))] if rng is not None and len(options) > 1 else options[0]
        cells.append(graph.cell(i))
    return with_stays(layout, cells)


def excess_time(layout: Layout, path: Sequence[Cell]) -> float:
    """How much longer (in time) ``path`` takes than a cheapest path between its ends (>= 0)."""
    return max(0.0, time_cost(path) - terrain_cost(layout, tuple(path[0]), tuple(path[-1])))


def stay_problems(layout: Layout, path: Sequence[Cell]) -> list[tuple[str, int, Cell]]:
    """The mud rule: after a step onto a mud cell the path stays there :data:`MUD_STAYS` steps.

    Returns ``(message, step, cell)`` for the first step that leaves a mud cell too early (empty when none).
    """
    for i in range(1, len(path)):
        c = tuple(path[i])
        if c in layout.terrain and tuple(path[i - 1]) != c:
            stays = path[i + 1: i + 1 + MUD_STAYS]
            if len(stays) < MUD_STAYS or any(tuple(s) != c for s in stays):
                return [(f"leaves the mud at {list(c)} before staying {MUD_STAYS} steps there", i, c)]
    return []


def forced_stays(layout: Layout, path: Sequence[Cell]) -> np.ndarray:
    """``[T]`` bool: which steps of ``path`` are stays the mud forces (the first :data:`MUD_STAYS` stays after a
    step onto a mud cell)."""
    out = np.zeros(max(len(path) - 1, 0), dtype=bool)
    left = 0
    for t in range(1, len(path)):
        a, b = tuple(path[t - 1]), tuple(path[t])
        if a == b and left > 0:
            out[t - 1] = True
            left -= 1
        else:
            left = MUD_STAYS if (b != a and b in layout.terrain) else 0
    return out


def crosses_mud(layout: Layout, path: Sequence[Cell]) -> int:
    """How many times ``path`` steps onto a mud cell."""
    return sum(1 for a, b in zip(path, path[1:]) if tuple(b) in layout.terrain and tuple(a) != tuple(b))


def clear_caches() -> None:
    """Forget the cached cost fields."""
    _field.cache_clear()
