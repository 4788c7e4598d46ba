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

import heapq
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Protocol, runtime_checkable

import numpy as np

from bib.episode import Event
from bib.world.dynamics import ACTION_NAMES, ACTIONS, STAY, AgentState, action_between, action_cost, move_legal, step
from bib.world.grid import Cell, Layout
from bib.world.planning import TOL

State = tuple[Cell, bool, bool]
"""A key/lock planning state ``(cell, has_key, unlocked)``."""


@runtime_checkable
class GridAgent(Protocol):
    """Anything that acts in a gridworld trial."""

    def act(self, layout: Layout, state: AgentState) -> int:
        """The action (index into ``ACTIONS``; ``STAY`` ends the trial) taken in ``state``."""
        ...


# ---------------------------------------------------------------- planning in (cell, has_key, unlocked)


def _key(state: AgentState) -> State:
    return (state.cell, state.has_key, state.unlocked)


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
    static = (layout.width, layout.height, layout.moves, layout.walls, layout.barriers, layout.lock, layout.key)
    return _cost_to_go(static, goal)


@lru_cache(maxsize=256)
def _moves_from(width: int, height: int, moves: int, blocked: frozenset[Cell]) -> dict[Cell, tuple[tuple[Cell, float], ...]]:
    """Legal moves (target, cost) from every free cell of a grid with ``blocked`` cells.

    The same rule as :func:`bib.world.dynamics.move_legal` (checked against it in the tests),
    written with set look-ups because it runs for every new layout.
    """

    def free(c: Cell) -> bool:
        return 0 <= c[0] < width and 0 <= c[1] < height and c not in blocked

    out = {}
    for y in range(height):
        for x in range(width):
            if not free((x, y)):
                continue
            targets = []
            for a in range(STAY):
                dx, dy = ACTIONS[a]
                if not free((x + dx, y + dy)):
                    continue
                if dx and dy and (moves == 4 or not free((x + dx, y)) or not free((x, y + dy))):
                    continue
                targets.append(((x + dx, y + dy), action_cost(a)))
            out[(x, y)] = tuple(targets)
    return out


Static = tuple[int, int, int, frozenset[Cell], frozenset[Cell], "Cell | None", "Cell | None"]
INF = float("inf")


def _dijkstra(graph: dict[Cell, tuple[tuple[Cell, float], ...]], sources: dict[Cell, float]) -> dict[Cell, float]:
    """Multi-source Dijkstra: the least ``source value + path cost`` to every cell that reaches a source.

    Moves are symmetric (legality and cost), so the forward move lists serve as reverse edges.
    """
    dist: dict[Cell, float] = {}
    heap = [(d, c) for c, d in sources.items()]
    heapq.heapify(heap)
    while heap:
        d, c = heapq.heappop(heap)
        if c in dist:
            continue
        dist[c] = d
        for n, w in graph[c]:
            if n not in dist:
                heapq.heappush(heap, (d + w, n))
    return dist


@lru_cache(maxsize=2048)
def _field(width: int, height: int, moves: int, blocked: frozenset[Cell], goal: Cell) -> dict[Cell, float]:
    """Shortest-path cost to ``goal`` from every cell that reaches it on a grid with ``blocked`` cells."""
    graph = _moves_from(width, height, moves, blocked)
    return _dijkstra(graph, {goal: 0.0} if goal in graph else {})


@lru_cache(maxsize=2048)
def _cost_to_go(static: Static, goal: Cell) -> dict[State, float]:
    """Cost-to-go by mode, from the last mode back: unlocked, holding the key, without the key.

    With the key and the lock closed, arriving next to the lock opens it, so those cells are
    sources worth their unlocked cost; without the key, arriving on the key is a source worth the
    cost-to-go of the state it creates. Having the key (or the lock open) only adds moves, so a
    source's value never exceeds what moving on from it in the current mode would cost.
    """
    width, height, moves, walls, barriers, lock, key = static
    locked_blocked = walls | barriers | (frozenset({lock}) if lock is not None else frozenset())
    v_n = _field(width, height, moves, locked_blocked, goal)
    if key is None:
        return {(c, False, False): d for c, d in v_n.items()}
    locked = _moves_from(width, height, moves, locked_blocked)
    v_u = _field(width, height, moves, walls, goal)
    lock_side = set() if lock is None else {(lock[0] + dx, lock[1] + dy) for dx, dy in ((0, 1), (0, -1), (1, 0), (-1, 0))}
    src = {c: v_u[c] for c in lock_side if c in locked and c in v_u}
    if goal in locked:
        src[goal] = 0.0
    v_k = _dijkstra(locked, src)
    src = {goal: 0.0} if goal in locked else {}
    at_key = (v_u if key in lock_side else v_k).get(key)
    if at_key is not None and key in locked:
        src[key] = min(src.get(key, INF), at_key)
    v_n = _dijkstra(locked, src)
    out = {(c, True, True): d for c, d in v_u.items()}
    out.update({(c, True, False): d for c, d in v_k.items()})
    out.update({(c, False, False): d for c, d in v_n.items()})
    return out


def optimal_cost(layout: Layout, goal: Cell, state: AgentState | None = None) -> float:
    """Cost of an optimal key/lock-space path from ``state`` (default: the agent at home) to ``goal``."""
    s = state or AgentState(layout.agent.home)
    return cost_to_go(layout, goal).get(_key(s), float("inf"))


def optimal_moves(layout: Layout, state: AgentState, goal: Cell) -> list[int]:
    """The actions from ``state`` that lie on some optimal path to ``goal`` (``[STAY]`` on it, ``[]`` if cut off)."""
    if state.cell == goal:
        return [STAY]
    cost = cost_to_go(layout, goal)
    here = cost.get(_key(state))
    if here is None:
        return []
    best = []
    for a in range(STAY):
        if move_legal(layout, state.cell, a, state.unlocked):
            nxt, _ = step(layout, state, a)
            there = cost.get(_key(nxt))
            if there is not None and abs(action_cost(a) + there - here) < TOL:
                best.append(a)
    return best


def reachable_locked(layout: Layout, start: Cell) -> frozenset[Cell]:
    """Cells reachable from ``start`` while the lock stays closed (what
    :func:`bib.world.planning.reachable` gives), from the cached planner (moves are symmetric)."""
    return frozenset(s[0] for s in cost_to_go(replace(layout, key=None), start))


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
