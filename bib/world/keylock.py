"""Exact costs-to-go and optimal moves in a layout's key/lock state space ``(cell, has_key, unlocked)``.

The dynamics are those of :func:`bib.world.dynamics.step`: stepping on the key picks it up, and
arriving on a cell that shares an edge with the lock while holding the key opens it (barriers and
lock disappear); costs are 1 per orthogonal move and sqrt 2 per diagonal (the layout's own move
set, 4 or 8). Costs are computed backwards from the last mode, one multi-source Dijkstra of
:mod:`bib.world.planning` per mode (no search over the product space), and cached on the layout's
static content (size, moves, walls, barriers, lock, key) and the goal, so agents, objects and homes
do not matter. This is the one key/lock planner of the suite: the stimulus agents
(:mod:`bib.tasks.agents`), the agency suite's pi* (:mod:`bib.agency.env`) and the inverse planner's
Q-values (:mod:`bib.observers.goal_values`) all read it.

The inverse planner once computed the same fields by a batched numpy min-plus relaxation; these
cached Dijkstra fields are at least as fast (its goal values for the 720 episodes of
``benchmarks/observers.py``, cold caches: about 1400 episodes per CPU-second here against 1230-1360
for the batched relaxation), since each field is one Dijkstra over at most a few hundred cells.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from bib.world import planning
from bib.world.dynamics import STAY, AgentState, action_between, action_cost
from bib.world.grid import Cell, Layout
from bib.world.planning import INF, TOL, distance_list, grid_graph

State = tuple[Cell, bool, bool]
"""A key/lock planning state ``(cell, has_key, unlocked)``."""

NO_KEY, HAS_KEY, UNLOCKED, DIRECT = 0, 1, 2, 3
"""Layers of :attr:`KeyLockValues.stack`: no key (lock closed), holding the key (lock closed), lock
opened, and the cost without ever using the key (barriers and lock stay)."""

Static = tuple[int, int, int, frozenset[Cell], frozenset[Cell], "Cell | None", "Cell | None"]
"""What planning reads of a layout: ``(width, height, moves, walls, barriers, lock, key)``."""

EDGE = ((0, 1), (0, -1), (1, 0), (-1, 0))
"""The offsets of the cells sharing an edge with a cell (where the lock opens)."""


class KeyLockValues:
    """Cost-to-go of one layout's static content and goal, by mode, over flat cells (``y * width + x``).

    Reaching means standing on the goal, whatever the key/lock mode. A state the dynamics cannot
    produce (holding the key next to the closed lock) gets the value of the state arriving there
    creates (the lock open). Without a key, the modes holding it are impossible (``inf``).

    Attributes:
        locked: the :class:`bib.world.planning.GridGraph` with the lock closed; ``unlocked``: with only walls.
        free: cost-to-go without the key; ``holding``: with the key, lock closed; ``opened``: lock open;
            ``direct``: lock closed, never using the key (the plain shortest-path field).
        key: flat index of the key (None without one); ``lock_side``: flat cells sharing an edge with the lock.
        has_key: whether the layout has a key.
    """

    __slots__ = ("locked", "unlocked", "free", "holding", "opened", "direct", "key", "lock_side", "has_key",
                 "_stack")

    def __init__(self, static: Static, goal: Cell) -> None:
        width, height, moves, walls, barriers, lock, key = static
        locked_blocked = _locked_blocked(walls, barriers, lock)
        self.locked = grid_graph(width, height, moves, locked_blocked)
        self.unlocked = grid_graph(width, height, moves, walls)
        self.has_key = key is not None
        self.direct = self.free = distance_list(width, height, moves, locked_blocked, goal)
        self.holding = self.opened = [INF] * (width * height)
        self.key = self.locked.index(key) if key is not None else None
        self.lock_side = _lock_side(self.locked, lock)
        self._stack: np.ndarray | None = None
        if key is None:
            return
        # from the last mode back: unlocked, holding the key (independent of where the key lies), without it
        self.opened = distance_list(width, height, moves, walls, goal)
        self.holding = _holding(width, height, moves, walls, barriers, lock, goal)
        k = self.key
        if k is not None and key not in locked_blocked:
            at_key = (self.opened if k in self.lock_side else self.holding)[k]
            if at_key < INF:
                # two sources, the goal (0) and the key (its value): the better of the two fields
                from_key = distance_list(width, height, moves, locked_blocked, key)
                self.free = [min(d, at_key + e) for d, e in zip(self.free, from_key)]

    def value(self, index: int | None, has_key: bool, unlocked: bool) -> float:
        """Cost-to-go of the state ``(flat cell, has_key, unlocked)`` (``inf`` when cut off or impossible)."""
        if index is None:
            return INF
        if not has_key:
            return INF if unlocked else self.free[index]
        if not self.has_key:
            return INF
        return self.opened[index] if unlocked else self.holding[index]

    def after(self, index: int, has_key: bool, unlocked: bool) -> tuple[bool, bool]:
        """The key/lock mode after arriving on flat cell ``index`` (as :func:`bib.world.dynamics.step`)."""
        if not has_key and index == self.key:
            has_key = True
        if has_key and not unlocked and index in self.lock_side:
            unlocked = True
        return has_key, unlocked

    @property
    def stack(self) -> np.ndarray:
        """Read-only ``[4, height, width]`` array of the layers :data:`NO_KEY`, :data:`HAS_KEY`, :data:`UNLOCKED`, :data:`DIRECT`."""
        if self._stack is None:
            g = self.locked
            stack = np.array([self.free, self.holding, self.opened, self.direct]).reshape(4, g.height, g.width)
            stack.flags.writeable = False
            self._stack = stack
        return self._stack


def _locked_blocked(walls: frozenset[Cell], barriers: frozenset[Cell], lock: Cell | None) -> frozenset[Cell]:
    if not barriers and lock is None:
        return walls  # the same set: no copy, and the caches keyed on it find its hash already computed
    return walls | barriers | (frozenset({lock}) if lock is not None else frozenset())


def _lock_side(graph: planning.GridGraph, lock: Cell | None) -> frozenset[int]:
    sides = [] if lock is None else [graph.index((lock[0] + dx, lock[1] + dy)) for dx, dy in EDGE]
    return frozenset(i for i in sides if i is not None)


@lru_cache(maxsize=512)
def _holding(width: int, height: int, moves: int, walls: frozenset[Cell], barriers: frozenset[Cell],
             lock: Cell | None, goal: Cell) -> list[float]:
    """Cost-to-go holding the key with the lock closed: arriving next to the lock opens it, so those
    cells are sources worth their unlocked cost, and the goal itself is a source worth 0."""
    locked_blocked = _locked_blocked(walls, barriers, lock)
    locked = grid_graph(width, height, moves, locked_blocked)
    opened = distance_list(width, height, moves, walls, goal)
    src = [(c, opened[c]) for c in _lock_side(locked, lock)
           if locked.cell(c) not in locked_blocked and opened[c] < INF]
    g = locked.index(goal)
    if g is not None and goal not in locked_blocked:
        src.append((g, 0.0))
    return locked.costs(src)


def static_of(layout: Layout) -> Static:
    """The part of a layout planning reads (the cache key of :func:`key_lock_values`)."""
    return (layout.width, layout.height, layout.moves, layout.walls, layout.barriers, layout.lock, layout.key)


@lru_cache(maxsize=1024)
def _key_lock_values(static: Static, goal: Cell) -> KeyLockValues:
    return KeyLockValues(static, goal)


def key_lock_values(layout: Layout, goal: Cell) -> KeyLockValues:
    """The cached :class:`KeyLockValues` of ``layout`` towards ``goal``."""
    return _key_lock_values(static_of(layout), goal)


def cost_to_go(layout: Layout, goal: Cell) -> dict[State, float]:
    """Exact cost of an optimal path from every reachable key/lock state to ``goal``.

    States are ``(cell, has_key, unlocked)`` (see :class:`KeyLockValues` for the conventions); a
    state absent from the result cannot reach ``goal``.
    """
    return _cost_to_go(static_of(layout), goal)


@lru_cache(maxsize=256)
def _cost_to_go(static: Static, goal: Cell) -> dict[State, float]:
    v = _key_lock_values(static, goal)
    cell = v.locked.cell
    out: dict[State, float] = {}
    if v.has_key:
        out.update({(cell(i), True, True): d for i, d in enumerate(v.opened) if d < INF})
        out.update({(cell(i), True, False): d for i, d in enumerate(v.holding) if d < INF})
    out.update({(cell(i), False, False): d for i, d in enumerate(v.free) if d < INF})
    return out


def optimal_cost(layout: Layout, goal: Cell, state: AgentState | None = None) -> float:
    """Cost of an optimal key/lock-space path from ``state`` (default: the agent at home) to ``goal``."""
    s = state or AgentState(layout.agent.home)
    v = key_lock_values(layout, goal)
    return v.value(v.locked.index(s.cell), s.has_key, s.unlocked)


def move_costs(layout: Layout, state: AgentState, goal: Cell) -> tuple[float, list[tuple[int, float]]]:
    """The cost-to-go of ``state`` and, for every legal move from it that keeps ``goal`` reachable,
    ``(action, move cost + cost-to-go after it)`` (minus the Q value), in action order.

    ``(inf, [])`` when ``goal`` cannot be reached from ``state``.
    """
    v = key_lock_values(layout, goal)
    i = v.locked.index(state.cell)
    here = v.value(i, state.has_key, state.unlocked)
    if here == INF:
        return INF, []
    graph = v.unlocked if state.unlocked else v.locked
    out = []
    for a, off, w in graph.steps[i]:  # type: ignore[index]
        n = i + off  # type: ignore[operator]
        there = v.value(n, *v.after(n, state.has_key, state.unlocked))
        if there < INF:
            out.append((a, w + there))
    return here, out


def boltzmann_path(layout: Layout, goal: Cell, beta: float, rng: np.random.Generator, max_steps: int = 200,
                   start: AgentState | None = None) -> list[Cell]:
    """A path from the agent's home (or from ``start``, a cell holding the key or not) drawn from the Boltzmann
    policy towards ``goal`` (until it arrives or ``max_steps`` moves).

    Each move is drawn with probability proportional to ``exp(-beta * (move cost + cost-to-go after
    it - cost-to-go here))`` over the legal moves that keep ``goal`` reachable (one
    ``rng.random()`` per move), in the key/lock state space: the walk of
    :class:`bib.tasks.agents.BoltzmannAgent` without the per-step agent protocol.
    """
    v = key_lock_values(layout, goal)
    home = layout.agent.home if start is None else start.cell
    i = v.locked.index(home)
    has_key, unlocked = (False, False) if start is None else (start.has_key, start.unlocked)
    target = v.locked.index(goal)
    if i is None or target is None or v.value(i, has_key, unlocked) == INF:
        return [home]
    cell = v.locked.cell
    path = [home]
    exp = math.exp
    if not (v.has_key or has_key or unlocked):  # no key: one mode, the loop below with its value() and after() inlined
        free, steps = v.free, v.locked.steps
        for _ in range(max_steps):
            if i == target:
                break
            here = free[i]
            cells, weights = [], []
            for _a, off, w in steps[i]:  # type: ignore[index]
                n = i + off  # type: ignore[operator]
                there = free[n]
                if there < INF:
                    cells.append(n)
                    weights.append(exp(-beta * (w + there - here)))
            i = cells[boltzmann_choice(weights, rng)]
            path.append(cell(i))
        return path
    for _ in range(max_steps):  # the loop of bib.tasks.agents.BoltzmannAgent.act, on flat cells
        if i == target:
            break
        here = v.value(i, has_key, unlocked)
        graph = v.unlocked if unlocked else v.locked
        options, weights = [], []
        for _a, off, w in graph.steps[i]:  # type: ignore[index]
            n = i + off  # type: ignore[operator]
            nk, nu = v.after(n, has_key, unlocked)
            there = v.value(n, nk, nu)
            if there < INF:
                options.append((n, nk, nu))
                weights.append(exp(-beta * (w + there - here)))
        i, has_key, unlocked = options[boltzmann_choice(weights, rng)]
        path.append(cell(i))
    return path


def boltzmann_choice(weights: Sequence[float], rng: np.random.Generator) -> int:
    """Index drawn with probability proportional to ``weights`` (one ``rng.random()``)."""
    u = float(rng.random()) * sum(weights)
    acc = 0.0
    for k, weight in enumerate(weights):
        acc += weight
        if u < acc:
            return k
    return len(weights) - 1


def optimal_moves(layout: Layout, state: AgentState, goal: Cell) -> list[int]:
    """The actions from ``state`` that lie on some optimal path to ``goal`` (``[STAY]`` on it, ``[]`` if cut off)."""
    if state.cell == goal:
        return [STAY]
    here, moves = move_costs(layout, state, goal)
    return [a for a, c in moves if abs(c - here) < TOL]


def is_optimal_path(layout: Layout, path: Sequence[Cell]) -> bool:
    """True when ``path`` (from its first cell, without the key) is an optimal key/lock-space path to its last cell."""
    total = sum(action_cost(action_between(tuple(a), tuple(b))) for a, b in zip(path, path[1:]))  # type: ignore[arg-type]
    return abs(total - optimal_cost(layout, tuple(path[-1]), AgentState(tuple(path[0])))) < TOL


def clear_caches() -> None:
    """Forget every cached graph, distance field and key/lock value (benchmarks start cold with it)."""
    for f in (_key_lock_values, _cost_to_go, _holding):
        f.cache_clear()
    planning.clear_caches()
