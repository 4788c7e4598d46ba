"""Exact shortest paths (step cost 1 orthogonal, sqrt 2 diagonal), optimal action sets, reachability.

Every function here reads a :class:`GridGraph`: the legal moves of one grid (size, move set and
blocked cells) as a numpy table plus per-cell move lists, built once per distinct set of blocked
cells and cached, so planning never re-checks :func:`bib.world.dynamics.move_legal` move by move.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

from bib.world.dynamics import ACTIONS, STAY, action_between, action_cost
from bib.world.grid import Cell, Layout

TOL = 1e-9
"""Tolerance when comparing path costs (sums of 1 and sqrt 2 on small grids)."""

INF = float("inf")
_COSTS: tuple[float, ...] = tuple(action_cost(a) for a in range(STAY))

Step = tuple[int, int, float]
"""One legal move out of a cell: ``(action, flat offset of the target, cost)``."""


class GridGraph:
    """The legal moves of a ``width x height`` grid with ``blocked`` cells (same rule as ``move_legal``).

    Cells are numbered ``y * width + x`` ("flat" indices).

    Attributes:
        width: number of columns.
        height: number of rows.
        masks: read-only int ``[height, width]``: bit ``a`` set when king move ``a`` is legal from the
            cell (blocked cells have none).
        steps: per flat cell, the legal moves as ``(action, target offset, cost)``, in action order.
        cells: per flat index, its cell ``(x, y)``.
    """

    __slots__ = ("width", "height", "masks", "steps", "cells", "_legal")

    def __init__(self, width: int, height: int, moves: int, blocked: frozenset[Cell]) -> None:
        self.width, self.height = width, height
        free = np.zeros((height + 2, width + 2), dtype=np.int64)  # one ring of padding: off-grid is not free
        free[1:-1, 1:-1] = 1
        inside = [c for c in blocked if 0 <= c[0] < width and 0 <= c[1] < height]
        if inside:
            xy = np.array(inside)
            free[xy[:, 1] + 1, xy[:, 0] + 1] = 0
        around = np.zeros((height, width), dtype=np.int64)  # bit a: the cell action a leads to is free
        for a, (dx, dy) in enumerate(ACTIONS[:STAY]):
            around |= free[1 + dy : 1 + dy + height, 1 + dx : 1 + dx + width] << a
        masks = _LEGAL_BY_NEIGHBOURS[moves][around] * free[1:-1, 1:-1]
        masks.flags.writeable = False
        self.masks = masks
        table = _steps_by_mask(width)
        self.steps: tuple[tuple[Step, ...], ...] = tuple([table[m] for m in masks.ravel().tolist()])
        self.cells = _cells(width, height)
        self._legal: np.ndarray | None = None

    @property
    def legal(self) -> np.ndarray:
        """Read-only bool ``[height, width, 8]``: action ``a`` (a king move) is legal from the cell."""
        if self._legal is None:
            legal = (self.masks[:, :, None] >> np.arange(STAY) & 1).astype(bool)
            legal.flags.writeable = False
            self._legal = legal
        return self._legal

    def index(self, cell: Cell) -> int | None:
        """Flat index of ``cell`` (None when it lies off the grid)."""
        x, y = cell
        return y * self.width + x if 0 <= x < self.width and 0 <= y < self.height else None

    def cell(self, index: int) -> Cell:
        """The cell of a flat index."""
        return self.cells[index]

    def costs(self, sources: Iterable[tuple[int, float]]) -> list[float]:
        """Multi-source Dijkstra: for every flat cell, the least ``source value + path cost`` to a source.

        Moves are symmetric (legality and cost), so this is also the cost from each cell to the
        best source. Cells that reach no source hold ``inf``.
        """
        return dijkstra(self.steps, sources)


def _legal_by_neighbours(moves: int) -> np.ndarray:
    """For each 8-bit mask of free neighbours (bit ``a``: the target of action ``a``), the legal actions.

    A move needs its target free; a diagonal also needs both orthogonal cells it passes free (no
    corner cutting) and ``moves == 8``.
    """
    out = np.zeros(1 << STAY, dtype=np.int64)
    for around in range(1 << STAY):
        for a, (dx, dy) in enumerate(ACTIONS[:STAY]):
            passes = [ACTIONS.index((dx, 0)), ACTIONS.index((0, dy))] if dx and dy else []
            if around >> a & 1 and all(around >> p & 1 for p in passes) and not (passes and moves == 4):
                out[around] |= 1 << a
    return out


_LEGAL_BY_NEIGHBOURS = {m: _legal_by_neighbours(m) for m in (4, 8)}


@lru_cache(maxsize=64)
def _cells(width: int, height: int) -> tuple[Cell, ...]:
    """Every cell of a grid in flat order (shared by all graphs of that size)."""
    return tuple((x, y) for y in range(height) for x in range(width))


@lru_cache(maxsize=64)
def _steps_by_mask(width: int) -> list[tuple[Step, ...]]:
    """For each 8-bit mask of legal actions, the moves ``(action, flat offset, cost)`` it allows."""
    offsets = [dy * width + dx for dx, dy in ACTIONS[:STAY]]
    return [tuple((a, offsets[a], _COSTS[a]) for a in range(STAY) if m >> a & 1) for m in range(1 << STAY)]


@lru_cache(maxsize=1024)
def grid_graph(width: int, height: int, moves: int, blocked: frozenset[Cell]) -> GridGraph:
    """The cached :class:`GridGraph` of a grid (one per distinct blocked set)."""
    return GridGraph(width, height, moves, blocked)


def layout_graph(layout: Layout, unlocked: bool = False) -> GridGraph:
    """The :class:`GridGraph` of ``layout`` with the lock closed (or open when ``unlocked``)."""
    return grid_graph(layout.width, layout.height, layout.moves, layout.blocked(unlocked))


def dijkstra(steps: Sequence[Sequence[Step]], sources: Iterable[tuple[int, float]]) -> list[float]:
    """Multi-source Dijkstra over flat cells with move lists ``steps`` (see :class:`GridGraph`).

    Args:
        steps: per flat cell, its legal moves ``(action, target offset, cost)``.
        sources: ``(flat cell, starting value)`` pairs (values >= 0).

    Returns:
        The least ``value + path cost`` from a source to every cell (``inf`` where none reaches).
    """
    dist = [INF] * len(steps)
    heap = []
    for i, d in sources:
        if d < dist[i]:
            dist[i] = d
            heap.append((d, i))
    heapq.heapify(heap)
    done = [False] * len(steps)
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        d, i = pop(heap)
        if done[i]:
            continue
        done[i] = True
        for _, off, w in steps[i]:
            n = i + off
            nd = d + w
            if nd < dist[n]:
                dist[n] = nd
                push(heap, (nd, n))
    return dist


_VALUES: dict[float, float] = {}
"""One float object per distinct cost the cached fields hold (sums of 1 and sqrt 2: a few thousand on small grids),
so that a cached field costs its list and not its floats."""


@lru_cache(maxsize=8192)
def distance_list(width: int, height: int, moves: int, blocked: frozenset[Cell], goal: Cell) -> list[float]:
    """Shortest-path cost from every flat cell to ``goal`` (``inf`` if blocked, off-grid or cut off); cached.

    Treat the result as read-only. The cache holds 8,192 fields (a 10 x 10 field is about 1 kB: its floats are
    shared), enough that a generator drawing hundreds of thousands of routes over a few thousand (walls, goal)
    pairs, as ``unobserved-constraints`` does, computes each field once.
    """
    graph = grid_graph(width, height, moves, blocked)
    g = graph.index(goal)
    if g is None or goal in blocked:
        return [INF] * (width * height)
    values = _VALUES
    return [values.setdefault(d, d) for d in graph.costs([(g, 0.0)])]


def distance_field(layout: Layout, goal: Cell, unlocked: bool = False) -> np.ndarray:
    """Exact shortest-path cost from every cell to ``goal``, as a read-only ``[height, width]`` array.

    Blocked and unreachable cells hold ``inf``. Moves are symmetric, so this is also the cost
    from ``goal`` to every cell. Results are cached by (grid, blocked cells, goal).
    """
    return _distance_field(layout.width, layout.height, layout.moves, layout.blocked(unlocked), goal)


@lru_cache(maxsize=8192)
def _distance_field(width: int, height: int, moves: int, blocked: frozenset[Cell], goal: Cell) -> np.ndarray:
    dist = np.array(distance_list(width, height, moves, blocked, goal), dtype=float).reshape(height, width)
    dist.flags.writeable = False
    return dist


def _distances(layout: Layout, goal: Cell, unlocked: bool) -> list[float]:
    return distance_list(layout.width, layout.height, layout.moves, layout.blocked(unlocked), goal)


def shortest_cost(layout: Layout, start: Cell, goal: Cell, unlocked: bool = False) -> float:
    """Cost of a shortest path from ``start`` to ``goal`` (``inf`` when unreachable)."""
    i = layout_graph(layout, unlocked).index(start)
    return INF if i is None else _distances(layout, goal, unlocked)[i]


def cost_between(width: int, height: int, moves: int, blocked: frozenset[Cell], start: Cell, goal: Cell) -> float:
    """Cost of a shortest path from ``start`` to ``goal`` on a grid with ``blocked`` cells (``inf`` when unreachable
    or ``start`` is off the grid), read from the cached field of (grid, blocked cells, goal): the value
    :func:`shortest_cost` and :func:`bib.world.keylock.optimal_cost` give a layout without key whose blocked cells
    are ``blocked``, for callers that vary the walls in a hot loop and need no :class:`Layout` for it."""
    x, y = start
    if not (0 <= x < width and 0 <= y < height):
        return INF
    return distance_list(width, height, moves, blocked, goal)[y * width + x]


def optimal_actions(layout: Layout, goal: Cell, unlocked: bool = False) -> np.ndarray:
    """Boolean ``[height, width, 9]``: which actions lie on some shortest path to ``goal``.

    At the goal only stay is optimal; cells that cannot reach the goal have no optimal action.
    """
    dist = distance_field(layout, goal, unlocked)
    legal = layout_graph(layout, unlocked).legal
    h, w = dist.shape
    padded = np.full((h + 2, w + 2), np.inf)
    padded[1:-1, 1:-1] = dist
    finite = np.isfinite(dist)
    out = np.zeros((h, w, len(ACTIONS)), dtype=bool)
    moving = finite & (dist != 0.0)
    with np.errstate(invalid="ignore"):
        for a, (dx, dy) in enumerate(ACTIONS[:STAY]):
            there = padded[1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w]
            out[:, :, a] = moving & legal[:, :, a] & (np.abs(_COSTS[a] + there - dist) < TOL)
    out[:, :, STAY] = finite & (dist == 0.0)
    return out


def optimal_actions_at(layout: Layout, cell: Cell, goal: Cell, unlocked: bool = False) -> list[int]:
    """The optimal actions from one ``cell`` towards ``goal`` (``[STAY]`` at the goal, ``[]`` if unreachable)."""
    graph = layout_graph(layout, unlocked)
    i = graph.index(cell)
    if i is None:
        return []
    dist = _distances(layout, goal, unlocked)
    d = dist[i]
    if d == INF:
        return []
    if d == 0.0:
        return [STAY]
    return [a for a, off, w in graph.steps[i] if abs(w + dist[i + off] - d) < TOL]


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
    graph = layout_graph(layout, unlocked)
    i = graph.index(start)
    dist = _distances(layout, goal, unlocked)
    if i is None or dist[i] == INF:
        return None
    path = [start]
    while dist[i] != 0.0:
        d, here = dist[i], graph.steps[i]
        options = [off for _, off, w in here if abs(w + dist[i + off] - d) < TOL]
        i += options[int(rng.integers(len(options)))] if rng is not None and len(options) > 1 else options[0]
        path.append(graph.cell(i))
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
    return _reachable(layout.width, layout.height, layout.moves, layout.blocked(unlocked), start)


@lru_cache(maxsize=1024)
def _reachable(width: int, height: int, moves: int, blocked: frozenset[Cell], start: Cell) -> frozenset[Cell]:
    graph = grid_graph(width, height, moves, blocked)
    i = graph.index(start)
    if i is None or start in blocked:
        return frozenset()
    seen = {i}
    frontier = [i]
    steps = graph.steps
    while frontier:
        nxt = []
        for c in frontier:
            for _, off, _ in steps[c]:
                n = c + off
                if n not in seen:
                    seen.add(n)
                    nxt.append(n)
        frontier = nxt
    cells = graph.cells
    return frozenset(cells[c] for c in seen)


def move_counts(width: int, height: int, blocked: Iterable[Cell], source: Cell) -> dict[Cell, int]:
    """The least number of orthogonal (4-connected) moves from every cell that can reach ``source`` to it.

    Empty when ``source`` is blocked or off the grid. Cells are keyed as ``(x, y)``; ``blocked`` may be
    any set of cells (e.g. a map decoded by a probe), so the graph is built afresh, not cached.
    """
    blocked = frozenset(blocked)
    graph = GridGraph(width, height, 4, blocked)
    i = graph.index(source)
    if i is None or source in blocked:
        return {}
    cells = graph.cells
    return {cells[j]: int(d) for j, d in enumerate(graph.costs([(i, 0.0)])) if d < INF}


def clear_caches() -> None:
    """Forget every cached graph, distance field and reachable set (benchmarks start cold with it)."""
    for f in (_cells, _steps_by_mask, grid_graph, distance_list, _distance_field, _reachable):
        f.cache_clear()


def is_shortest(layout: Layout, path: Sequence[Cell], unlocked: bool = False) -> bool:
    """True when ``path`` is as short as an exact shortest path between its ends."""
    best = shortest_cost(layout, tuple(path[0]), tuple(path[-1]), unlocked)
    return abs(path_cost(path) - best) < TOL
