"""Agent-evaluation grids (4-connected): ``navigation``, ``key-door``, ``key-no-door``, ``two-path-key``.

These are the environments of the agent goal-directedness evaluation (reference:
agent_goal_directedness.md §2 and §7), regenerated from seeds (unlike the published code):

- ``navigation``: an odd ``size x size`` grid; a perfect maze is carved by randomised DFS on odd
  cells, then ``int((1 - density) * n)`` of the ``n`` remaining interior walls are deleted at
  random (density 0 is an open room, 1 a perfect maze); the goal, then the agent, are placed
  uniformly on empty cells. Unit ``index`` of the registered task uses the design cell
  :func:`navigation_design` (5 sizes x 6 densities, 10 replicates in 300 units).
- ``key-door``: a 9 x 9 grid of four 3 x 3 rooms joined by a random (Kruskal) spanning tree with
  one doorway per edge; agent and goal are resampled until a doorway cuts the goal off; a locked
  door (the layout's ``lock``) goes on that doorway and the key on a cell reachable without it.
- ``key-no-door``: the same generator with the door removed (the key is useless).
- ``two-path-key``: an 11 x 11 grid carved as ``H``, ``parallel_vertical`` or ``diamond``: two
  corridors of equal length between agent and goal; a useless key lies on a cell of one of them.

Every episode has one ``test`` trial (outcome ``none``, ``grid.moves = 4``); the path is a
planner's optimal path to the goal object ``G`` (key/lock aware), so the episode renders.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bib.episode import Episode, Problem
from bib.tasks.agents import InstrumentalAgent, rollout
from bib.tasks.common import make_episode, make_trial, place, sample_agent, sample_looks
from bib.tasks.registry import LayoutRejected, TaskSpec, UnitInfo, register
from bib.world.grid import Cell, Layout, border_walls
from bib.world.keylock import is_optimal_path
from bib.world.planning import move_counts, reachable

NAV_SIZES: tuple[int, ...] = (7, 9, 11, 13, 15)
NAV_DENSITIES: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
ROOMS_SIZE = 9
TWO_PATH_SIZE = 11
TWO_PATH_SHAPES: tuple[str, ...] = ("H", "parallel_vertical", "diamond")
GOAL = "G"
_STEPS4: tuple[Cell, ...] = ((0, -1), (1, 0), (0, 1), (-1, 0))


def navigation_design(index: int) -> tuple[int, float, int]:
    """``(size, density, replicate)`` of navigation unit ``index``: 30 design cells, size-major."""
    cell = index % (len(NAV_SIZES) * len(NAV_DENSITIES))
    return NAV_SIZES[cell // len(NAV_DENSITIES)], NAV_DENSITIES[cell % len(NAV_DENSITIES)], index // 30


def maze_walls(rng: np.random.Generator, size: int, density: float) -> frozenset[Cell]:
    """Walls of a ``size x size`` grid: randomised-DFS perfect maze, then random interior wall deletion.

    Args:
        rng: the random stream.
        size: odd grid side, at least 5.
        density: in [0, 1]; ``int((1 - density) * n)`` of the ``n`` interior maze walls are removed.
    """
    if size < 5 or size % 2 == 0:
        raise ValueError(f"navigation grid size must be odd and >= 5, got {size}")
    if not 0.0 <= density <= 1.0:
        raise ValueError(f"density must lie in [0, 1], got {density}")
    walls = {(x, y) for x in range(size) for y in range(size)}
    nodes = [(x, y) for y in range(1, size - 1, 2) for x in range(1, size - 1, 2)]
    start = nodes[int(rng.integers(len(nodes)))]
    walls.discard(start)
    stack = [start]
    while stack:
        x, y = stack[-1]
        options = [(x + 2 * dx, y + 2 * dy, dx, dy) for dx, dy in _STEPS4
                   if 0 < x + 2 * dx < size - 1 and 0 < y + 2 * dy < size - 1 and (x + 2 * dx, y + 2 * dy) in walls]
        if not options:
            stack.pop()
            continue
        nx, ny, dx, dy = options[int(rng.integers(len(options)))]
        walls.discard((x + dx, y + dy))
        walls.discard((nx, ny))
        stack.append((nx, ny))
    border = border_walls(size, size)
    inner = sorted(walls - border)
    n_remove = int((1.0 - density) * len(inner))
    removed = rng.choice(len(inner), size=n_remove, replace=False) if n_remove else []
    return frozenset(walls - {inner[int(i)] for i in removed})


def _free(size: int, walls: frozenset[Cell]) -> list[Cell]:
    return [(x, y) for y in range(size) for x in range(size) if (x, y) not in walls]


def _agent_layout(rng: np.random.Generator, size: int, walls: frozenset[Cell], home: Cell, goal: Cell, **kw) -> Layout:
    """A 4-connected layout with goal object ``G`` at ``goal`` and a freshly drawn agent at ``home``."""
    look = sample_looks(rng, 1)[0]
    agent = sample_agent(rng, "agent-0", home)
    return Layout(width=size, height=size, walls=walls, objects=(place(look, GOAL, goal),), agents=(agent,),
                  moves=4, **kw)


def _episode(rng: np.random.Generator, unit: UnitInfo, layout: Layout) -> list[Episode]:
    """One test trial: the planner's optimal (key/lock aware) path to ``G``."""
    path, _ = rollout(InstrumentalAgent(GOAL, rng), layout, max_steps=4 * layout.width * layout.height)
    if path[-1] != layout.goal_cell(GOAL):
        raise LayoutRejected("the planner does not reach the goal")
    return [make_episode(unit, [make_trial(layout, path, GOAL, phase="test")], outcome="none")]


def navigation_layout(rng: np.random.Generator, size: int, density: float) -> Layout:
    """A navigation layout: maze walls (:func:`maze_walls`), then the goal, then the agent on empty cells."""
    walls = maze_walls(rng, size, density)
    free = _free(size, walls)
    goal = free[int(rng.integers(len(free)))]
    rest = [c for c in free if c != goal]
    home = rest[int(rng.integers(len(rest)))]
    return _agent_layout(rng, size, walls, home, goal)


def _navigation(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    size, density, _ = navigation_design(unit.index)
    return _episode(rng, unit, navigation_layout(rng, size, density))


# ---------------------------------------------------------------- key rooms


def _room_cells(i: int, j: int) -> list[Cell]:
    return [(x, y) for y in range(1 + 4 * j, 4 + 4 * j) for x in range(1 + 4 * i, 4 + 4 * i)]


def rooms_layout(rng: np.random.Generator, door: bool = True) -> Layout:
    """A 9 x 9 four-room layout with a locked door cutting the goal off from the agent, and a key.

    Rooms are joined by a random spanning tree (Kruskal over the 4 room adjacencies, random
    order) with one random doorway cell per tree edge. Agent and goal are drawn from room cells
    up to 200 times until they lie in different rooms (then a doorway on the tree path between
    them cuts the goal off); the door goes on one such doorway, the key on a cell the agent
    reaches without passing it. With ``door=False`` the door is removed (KeyNoDoor).
    """
    size = ROOMS_SIZE
    edges = [((0, j), (1, j)) for j in (0, 1)] + [((i, 0), (i, 1)) for i in (0, 1)]
    parent = {(i, j): (i, j) for i in (0, 1) for j in (0, 1)}

    def root(r):
        while parent[r] != r:
            r = parent[r]
        return r

    walls = {(x, y) for x in range(size) for y in range(size) if x % 4 == 0 or y % 4 == 0}
    doorways: list[Cell] = []
    for k in rng.permutation(len(edges)):
        a, b = edges[int(k)]
        if root(a) == root(b):
            continue
        parent[root(a)] = root(b)
        off = int(rng.integers(3))
        cell = (4, 1 + 4 * a[1] + off) if a[1] == b[1] else (1 + 4 * a[0] + off, 4)
        walls.discard(cell)
        doorways.append(cell)
    walls_f = frozenset(walls)
    rooms = [c for i in (0, 1) for j in (0, 1) for c in _room_cells(i, j)]
    probe = Layout(width=size, height=size, walls=walls_f, moves=4)
    for _ in range(200):
        goal, home = (rooms[int(i)] for i in rng.choice(len(rooms), size=2, replace=False))
        cuts = [d for d in doorways if goal not in reachable(replace(probe, lock=d), home)]
        if cuts:
            break
    else:
        raise LayoutRejected("no doorway separates agent and goal")
    lock = cuts[int(rng.integers(len(cuts)))]
    near = sorted(reachable(replace(probe, lock=lock), home) - {home})
    key = near[int(rng.integers(len(near)))]
    return _agent_layout(rng, size, walls_f, home, goal, lock=lock if door else None, key=key)


def _key_door(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    return _episode(rng, unit, rooms_layout(rng, door=True))


def _key_no_door(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    return _episode(rng, unit, rooms_layout(rng, door=False))


# ---------------------------------------------------------------- two paths


def _two_path_template(shape: str, k: int) -> tuple[set[Cell], Cell, Cell]:
    """Carved cells, start and goal of an 11 x 11 two-corridor template (``k`` varies its proportions)."""
    n = TWO_PATH_SIZE
    cells: set[Cell] = set()
    if shape == "parallel_vertical":  # a ring: start mid-top, goal mid-bottom, vertical arms at x=k, n-1-k
        a, b = k, n - 1 - k
        cells |= {(x, y) for x in range(a, b + 1) for y in (1, n - 2)}
        cells |= {(x, y) for x in (a, b) for y in range(1, n - 1)}
        return cells, (n // 2, 1), (n // 2, n - 2)
    if shape == "H":  # two bars (x=2, x=8) joined by two crossbars at y = 5 -+ k; start/goal mid-bars
        mid = n // 2
        cells |= {(x, y) for x in (2, n - 3) for y in range(1, n - 1)}
        cells |= {(x, y) for x in range(2, n - 2) for y in (mid - k, mid + k)}
        return cells, (2, mid), (n - 3, mid)
    if shape == "diamond":  # two mirrored staircases from mid-top to mid-bottom
        mid = n // 2
        left: list[Cell] = []
        x, y = mid, 1
        while x > 1:  # down-left staircase to (1, mid - 1)
            left += [(x, y), (x - 1, y)]
            x, y = x - 1, y + 1
        left.append((x, y))
        y += 1
        while x < mid:  # down-right staircase to the goal
            left += [(x, y), (x + 1, y)]
            x, y = x + 1, y + 1
        for c in left:
            cells |= {c, (n - 1 - c[0], c[1])}
        return cells, (mid, 1), (mid, n - 2)
    raise ValueError(f"unknown two-path shape {shape!r}")


def _symmetry(cell: Cell, which: int, n: int) -> Cell:
    """One of the 8 symmetries of an ``n x n`` square (``which`` in 0..7)."""
    x, y = cell
    if which & 4:
        x, y = y, x
    if which & 2:
        x = n - 1 - x
    if which & 1:
        y = n - 1 - y
    return (x, y)


def two_path_layout(rng: np.random.Generator, shape: str | None = None) -> Layout:
    """An 11 x 11 two-corridor layout (shape drawn uniformly unless given) with a useless key on one corridor.

    A random square symmetry and start/goal order vary the template; the corridor that holds the
    key is chosen with probability 1/2, and the key sits on a random cell exclusive to it.
    """
    n = TWO_PATH_SIZE
    shape = shape or TWO_PATH_SHAPES[int(rng.integers(len(TWO_PATH_SHAPES)))]
    k = int(rng.integers(1, 4))
    cells, start, goal = _two_path_template(shape, k)
    which = int(rng.integers(8))
    cells = {_symmetry(c, which, n) for c in cells}
    start, goal = _symmetry(start, which, n), _symmetry(goal, which, n)
    if rng.random() < 0.5:
        start, goal = goal, start
    walls = frozenset((x, y) for x in range(n) for y in range(n)) - cells
    probe = Layout(width=n, height=n, walls=walls, moves=4)
    corridors = shortest_path_cells(probe, start, goal)
    if len(corridors) != 2:
        raise LayoutRejected(f"{shape}: expected two shortest corridors, found {len(corridors)}")
    arm = corridors[int(rng.integers(2))] - {start, goal}
    exclusive = sorted(arm - (corridors[0] & corridors[1]))
    key = exclusive[int(rng.integers(len(exclusive)))]
    return _agent_layout(rng, n, walls, start, goal, key=key)


def _two_path_key(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    return _episode(rng, unit, two_path_layout(rng))


# ---------------------------------------------------------------- geometry used by the rules


def bfs(layout: Layout, source: Cell) -> dict[Cell, int]:
    """The number of 4-connected moves from every free cell to ``source`` (lock closed)."""
    return move_counts(layout.width, layout.height, layout.blocked(), source)


def shortest_path_cells(layout: Layout, start: Cell, goal: Cell, limit: int = 3) -> list[set[Cell]]:
    """The cell sets of the shortest 4-connected paths from ``start`` to ``goal`` (at most ``limit``)."""
    to_goal = bfs(layout, goal)
    if start not in to_goal:
        return []
    out: list[set[Cell]] = []

    def walk(cell: Cell, seen: list[Cell]) -> None:
        if len(out) >= limit:
            return
        if cell == goal:
            out.append(set(seen))
            return
        for dx, dy in _STEPS4:
            c = (cell[0] + dx, cell[1] + dy)
            if to_goal.get(c) == to_goal[cell] - 1:
                walk(c, seen + [c])

    walk(start, [start])
    return out


# ---------------------------------------------------------------- condition rules


def _common_rule(ep: Episode, size: int | None = None) -> tuple[list[Problem], Layout | None]:
    """Rules every agent grid obeys: one test trial, 4-connected, a square odd grid, goal ``G`` reached optimally."""
    out: list[Problem] = []
    if ep.moves != 4:
        out.append(Problem(ep.id, f"agent grids are 4-connected (grid.moves 4), got {ep.moves}"))
    if len(ep.trials) != 1:
        out.append(Problem(ep.id, f"expected exactly one (test) trial, got {len(ep.trials)}"))
    if ep.width != ep.height or ep.width % 2 == 0 or (size is not None and ep.width != size):
        want = f"{size} x {size}" if size is not None else "an odd square grid"
        out.append(Problem(ep.id, f"grid is {ep.width} x {ep.height}, expected {want}"))
    if out:
        return out, None
    trial = ep.test
    lay = trial.layout
    if not border_walls(ep.width, ep.height) <= lay.walls:
        out.append(Problem(ep.id, "the border ring must be walls", 0))
    if [o.id for o in lay.objects] != [GOAL]:
        out.append(Problem(ep.id, f"expected one goal object {GOAL!r}, got {[o.id for o in lay.objects]}", 0))
    elif trial.goal != GOAL:
        out.append(Problem(ep.id, f"goal is {trial.goal!r}, expected {GOAL!r}", 0))
    elif lay.agent.home == lay.object(GOAL).cell:
        out.append(Problem(ep.id, "the agent starts on the goal", 0, 0, lay.agent.home))
    elif not is_optimal_path(lay, trial.path):
        out.append(Problem(ep.id, "path is not an optimal (key/lock aware) path to the goal", 0))
    return out, lay


def _navigation_rule(ep: Episode) -> list[Problem]:
    """Common rules; a size of 5..15 with no key, lock or barriers."""
    out, lay = _common_rule(ep)
    if lay is not None and (lay.key is not None or lay.lock is not None or lay.barriers):
        out.append(Problem(ep.id, "navigation grids have no key, lock or barriers", 0))
    if lay is not None and not 5 <= ep.width <= 15:
        out.append(Problem(ep.id, f"navigation grid size {ep.width} outside 5..15"))
    return out


def _rooms_rule(ep: Episode, door: bool) -> list[Problem]:
    """Common rules on a 9 x 9 room grid; with a door it cuts the goal off and the key is reachable without it."""
    out, lay = _common_rule(ep, ROOMS_SIZE)
    if lay is None or out:
        return out
    home, goal = lay.agent.home, lay.object(GOAL).cell
    if lay.key is None or lay.barriers:
        return [Problem(ep.id, "room grids have a key and no barriers", 0)]
    if (lay.lock is not None) != door:
        return [Problem(ep.id, "key-door has a door (lock); key-no-door has none", 0)]
    if lay.lock is not None and lay.lock not in {(x, y) for x in range(ROOMS_SIZE) for y in range(ROOMS_SIZE)
                                                if x % 4 == 0 or y % 4 == 0}:
        out.append(Problem(ep.id, "the door is not on a doorway between rooms", 0, cell=lay.lock))
    inside = reachable(lay, home)
    if lay.key not in inside or lay.key == home:
        out.append(Problem(ep.id, "the key must be reachable from the start without the door", 0, cell=lay.key))
    if door and goal in inside:
        out.append(Problem(ep.id, "the door does not cut the goal off from the agent", 0, cell=goal))
    if door and [e.type for e in ep.test.events] != ["pickup-key", "unlock"]:
        out.append(Problem(ep.id, "the optimal path must fetch the key and open the door", 0))
    return out


def _two_path_rule(ep: Episode) -> list[Problem]:
    """Common rules on 11 x 11; exactly two shortest corridors and the key on exactly one of them."""
    out, lay = _common_rule(ep, TWO_PATH_SIZE)
    if lay is None or out:
        return out
    if lay.key is None or lay.lock is not None or lay.barriers:
        return [Problem(ep.id, "two-path-key grids have a key and no lock or barriers", 0)]
    paths = shortest_path_cells(lay, lay.agent.home, lay.object(GOAL).cell)
    if len(paths) != 2:
        return [Problem(ep.id, f"expected exactly two shortest paths to the goal, found {len(paths)}", 0)]
    on = sum(lay.key in p for p in paths)
    if on != 1 or lay.key in (lay.agent.home, lay.object(GOAL).cell):
        out.append(Problem(ep.id, f"the key lies on {on} of the two corridors, expected exactly one", 0, cell=lay.key))
    return out


register(TaskSpec("navigation", "navigation", "agent", _navigation, rule=_navigation_rule,
                  expected="a maze of graded density; the agent walks to the goal", order=10))
register(TaskSpec("key-door", "keys", "agent", _key_door, rule=lambda ep: _rooms_rule(ep, True),
                  expected="four rooms; a locked door cuts the goal off, the key lies on the agent's side", order=20))
register(TaskSpec("key-no-door", "keys", "agent", _key_no_door, rule=lambda ep: _rooms_rule(ep, False),
                  expected="the key-door rooms with the door removed (the key is useless)", order=30))
register(TaskSpec("two-path-key", "keys", "agent", _two_path_key, rule=_two_path_rule,
                  expected="two corridors of equal length to the goal; a useless key on one of them", order=40))
