"""Stimulus agents behind the gridworld agent protocol ``act(layout, state) -> action``, and rollouts.

The protocol (DESIGN.md "Protocols"): an agent is any object with
``act(layout: Layout, state: AgentState) -> int`` returning an index into
:data:`bib.world.dynamics.ACTIONS` (one of the 8 king moves, or ``STAY`` = 8). Returning ``STAY``
means "done": :func:`rollout` ends the trial there. Agents here are pure functions of
``(layout, state)`` apart from the random tie-breaks they draw from their own seeded generator,
so meg and agency can query them at any state.

- :class:`RationalAgent`: goes to its most preferred reachable goal (an object id, or ``"key"``)
  along an optimal path of the key/lock state space ``(cell, has_key, unlocked)``; ties between
  optimal moves are broken by its ``numpy.random.Generator``. Where keys and locks play no role
  this is an ordinary shortest path.
- :class:`InstrumentalAgent`: a rational agent with one goal object; when the object is locked
  in, its optimal plan is key -> a cell next to the lock (unlock) -> object.
- :class:`IrrationalAgent`: replays a given path (e.g. a curved path) whatever the layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol, runtime_checkable

import numpy as np

from bib.episode import Event
from bib.world.dynamics import ACTION_NAMES, STAY, AgentState, action_between, action_cost, move_legal, step
from bib.world.grid import Cell, Layout
from bib.world.planning import INF, TOL, distance_list, grid_graph, reachable

State = tuple[Cell, bool, bool]
"""A key/lock planning state ``(cell, has_key, unlocked)``."""


@runtime_checkable
class GridAgent(Protocol):
    """Anything that acts in a gridworld trial."""

    def act(self, layout: Layout, state: AgentState) -> int:
        """The action (index into ``ACTIONS``; ``STAY`` ends the trial) taken in ``state``."""
        ...


# ---------------------------------------------------------------- planning in (cell, has_key, unlocked)


Static = tuple[int, int, int, frozenset[Cell], frozenset[Cell], "Cell | None", "Cell | None"]
EDGE = ((0, 1), (0, -1), (1, 0), (-1, 0))


class KeyLockValues:
    """Cost-to-go of one layout's static content and goal, by mode, over flat cells (``y * width + x``).

    Attributes:
        locked: the :class:`bib.world.planning.GridGraph` with the lock closed; ``unlocked``: with only walls.
        free: cost-to-go without the key; ``holding``: with the key, lock closed; ``opened``: lock open.
        key: flat index of the key (None without one); ``lock_side``: flat cells sharing an edge with the lock.
    """

    __slots__ = ("locked", "unlocked", "free", "holding", "opened", "key", "lock_side", "has_key")

    def __init__(self, static: Static, goal: Cell) -> None:
        width, height, moves, walls, barriers, lock, key = static
        locked_blocked = walls | barriers | (frozenset({lock}) if lock is not None else frozenset())
        self.locked = grid_graph(width, height, moves, locked_blocked)
        self.unlocked = grid_graph(width, height, moves, walls)
        self.has_key = key is not None
        self.free = distance_list(width, height, moves, locked_blocked, goal)
        self.holding = self.opened = [INF] * (width * height)
        self.key = self.locked.index(key) if key is not None else None
        sides = [] if lock is None else [self.locked.index((lock[0] + dx, lock[1] + dy)) for dx, dy in EDGE]
        self.lock_side = frozenset(i for i in sides if i is not None)
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


@lru_cache(maxsize=512)
def _holding(width: int, height: int, moves: int, walls: frozenset[Cell], barriers: frozenset[Cell],
             lock: Cell | None, goal: Cell) -> list[float]:
    """Cost-to-go holding the key with the lock closed: arriving next to the lock opens it, so those
    cells are sources worth their unlocked cost, and the goal itself is a source worth 0."""
    locked_blocked = walls | barriers | (frozenset({lock}) if lock is not None else frozenset())
    locked = grid_graph(width, height, moves, locked_blocked)
    opened = distance_list(width, height, moves, walls, goal)
    sides = [] if lock is None else [locked.index((lock[0] + dx, lock[1] + dy)) for dx, dy in EDGE]
    src = [(c, opened[c]) for c in sides if c is not None and locked.cell(c) not in locked_blocked and opened[c] < INF]
    g = locked.index(goal)
    if g is not None and goal not in locked_blocked:
        src.append((g, 0.0))
    return locked.costs(src)


def _static(layout: Layout) -> Static:
    return (layout.width, layout.height, layout.moves, layout.walls, layout.barriers, layout.lock, layout.key)


@lru_cache(maxsize=512)
def key_lock_values(static: Static, goal: Cell) -> KeyLockValues:
    """The cached :class:`KeyLockValues` of a layout's static content and a goal cell."""
    return KeyLockValues(static, goal)


def cost_to_go(layout: Layout, goal: Cell) -> dict[State, float]:
    """Exact cost of an optimal path from every reachable key/lock state to ``goal``.

    States are ``(cell, has_key, unlocked)``; transitions are those of
    :func:`bib.world.dynamics.step` (stepping on the key picks it up; entering a cell that shares
    an edge with the lock while holding the key opens it), costs 1 / sqrt 2. A state absent from
    the result cannot reach ``goal``. Reaching means standing on ``goal``, whatever the key/lock
    state. A state the dynamics cannot produce (holding the key next to the closed lock) gets the
    value of the state arriving there creates (the lock open). Cached on the layout's static
    content, so agents' homes and objects do not matter.
    """
    return _cost_to_go(_static(layout), goal)


@lru_cache(maxsize=256)
def _cost_to_go(static: Static, goal: Cell) -> dict[State, float]:
    """The dict view of :func:`key_lock_values` (modes as in :class:`KeyLockValues`)."""
    v = key_lock_values(static, goal)
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
    v = key_lock_values(_static(layout), goal)
    return v.value(v.locked.index(s.cell), s.has_key, s.unlocked)


def optimal_moves(layout: Layout, state: AgentState, goal: Cell) -> list[int]:
    """The actions from ``state`` that lie on some optimal path to ``goal`` (``[STAY]`` on it, ``[]`` if cut off)."""
    if state.cell == goal:
        return [STAY]
    v = key_lock_values(_static(layout), goal)
    i = v.locked.index(state.cell)
    here = v.value(i, state.has_key, state.unlocked)
    if here == INF:
        return []
    graph = v.unlocked if state.unlocked else v.locked
    best = []
    for a, off, w in graph.steps[i]:
        n = i + off
        there = v.value(n, *v.after(n, state.has_key, state.unlocked))
        if there < INF and abs(w + there - here) < TOL:
            best.append(a)
    return best


def reachable_locked(layout: Layout, start: Cell) -> frozenset[Cell]:
    """Cells reachable from ``start`` while the lock stays closed (:func:`bib.world.planning.reachable`)."""
    return reachable(layout, start)


def is_optimal_path(layout: Layout, path: Sequence[Cell]) -> bool:
    """True when ``path`` (from the agent's home) is an optimal key/lock-space path to its last cell."""
    total = sum(action_cost(action_between(tuple(a), tuple(b))) for a, b in zip(path, path[1:]))  # type: ignore[arg-type]
    return abs(total - optimal_cost(layout, tuple(path[-1]), AgentState(tuple(path[0])))) < TOL


# ---------------------------------------------------------------- agents


class RationalAgent:
    """Goes to its most preferred reachable goal along an optimal path, breaking ties at random.

    Args:
        preference: goals from most to least preferred: object ids, or ``"key"`` for the key.
            Goals absent from the layout or unreachable from the current state are skipped.
        rng: generator for tie-breaks between equally good moves (None: first in action order).
    """

    def __init__(self, preference: Sequence[str], rng: np.random.Generator | None = None) -> None:
        if not preference:
            raise ValueError("RationalAgent needs at least one goal in its preference")
        self.preference = tuple(preference)
        self.rng = rng

    def goal(self, layout: Layout, state: AgentState) -> str | None:
        """The goal pursued from ``state``: the first preferred goal that can still be reached."""
        for g in self.preference:
            try:
                cell = layout.goal_cell(g)
            except KeyError:
                continue
            if np.isfinite(optimal_cost(layout, cell, state)):
                return g
        return None

    def act(self, layout: Layout, state: AgentState) -> int:
        """An optimal move towards the pursued goal; ``STAY`` on it or when nothing is reachable."""
        g = self.goal(layout, state)
        if g is None:
            return STAY
        options = optimal_moves(layout, state, layout.goal_cell(g))
        if len(options) > 1 and self.rng is not None:
            return options[int(self.rng.integers(len(options)))]
        return options[0]


class InstrumentalAgent(RationalAgent):
    """A rational agent after one object: key -> next to the lock (unlock) -> object when locked in.

    Planning is in the ``(cell, has_key, unlocked)`` space, so the whole detour through the key
    and the lock is optimal, and the agent goes straight to the object when nothing blocks it.
    """

    def __init__(self, goal: str, rng: np.random.Generator | None = None) -> None:
        super().__init__((goal,), rng)


class IrrationalAgent:
    """Replays a fixed path (e.g. the curved path around an obstacle that is no longer there).

    ``act`` looks up the agent's cell on the path and moves to the next cell; at the end of the
    path it stays. The path must not revisit a cell (so the lookup is unambiguous).

    Raises:
        ValueError: at construction when the path jumps or revisits a cell; from ``act`` when the
            agent is off the path or the next move is illegal in the layout.
    """

    def __init__(self, path: Sequence[Cell]) -> None:
        cells = [tuple(c) for c in path]
        if not cells:
            raise ValueError("IrrationalAgent needs a non-empty path")
        if len(set(cells)) != len(cells):
            raise ValueError("IrrationalAgent path revisits a cell")
        for a, b in zip(cells, cells[1:]):
            if action_between(a, b) in (None, STAY):  # type: ignore[arg-type]
                raise ValueError(f"IrrationalAgent path jumps from {list(a)} to {list(b)}")
        self.path: tuple[Cell, ...] = tuple(cells)  # type: ignore[assignment]
        self._index = {c: i for i, c in enumerate(self.path)}

    def act(self, layout: Layout, state: AgentState) -> int:
        """The move to the cell after ``state.cell`` on the path (``STAY`` at its end)."""
        i = self._index.get(state.cell)
        if i is None:
            raise ValueError(f"IrrationalAgent is at {list(state.cell)}, which is not on its path")
        if i == len(self.path) - 1:
            return STAY
        a = action_between(state.cell, self.path[i + 1])
        assert a is not None
        if not move_legal(layout, state.cell, a, state.unlocked):
            raise ValueError(f"IrrationalAgent move {ACTION_NAMES[a]} from {list(state.cell)} is illegal here")
        return a


def rollout(agent: GridAgent, layout: Layout, max_steps: int = 200) -> tuple[list[Cell], tuple[Event, ...]]:
    """Run ``agent`` from its home in ``layout`` until it stays (or ``max_steps`` moves).

    Returns:
        ``(path, events)``: the agent's cell at every step (home first) and the key/lock events
        with the step at which each happened, as :class:`bib.episode.Trial` stores them.
    """
    state = AgentState(layout.agent.home)
    path = [state.cell]
    events: list[Event] = []
    for i in range(1, max_steps + 1):
        action = agent.act(layout, state)
        if action == STAY:
            break
        state, evs = step(layout, state, action)
        path.append(state.cell)
        events += [Event(i, e) for e in evs]
    return path, tuple(events)
