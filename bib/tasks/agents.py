"""Stimulus agents behind the gridworld agent protocol ``act(layout, state) -> action``, and rollouts.

The protocol (DESIGN.md "Protocols"): an agent is any object with
``act(layout: Layout, state: AgentState) -> int`` returning an index into
:data:`bib.world.dynamics.ACTIONS` (one of the 8 king moves, or ``STAY`` = 8). Returning ``STAY``
means "done": :func:`rollout` ends the trial there. Agents here are pure functions of
``(layout, state)`` apart from the random tie-breaks they draw from their own seeded generator,
so meg and agency can query them at any state.

- :class:`RationalAgent`: goes to its most preferred reachable goal (an object id, or ``"key"``)
  along an optimal path of the key/lock state space ``(cell, has_key, unlocked)`` (planned by
  :mod:`bib.world.keylock`); ties between optimal moves are broken by its ``numpy.random.Generator``. Where keys and locks play no role
  this is an ordinary shortest path.
- :class:`InstrumentalAgent`: a rational agent with one goal object; when the object is locked
  in, its optimal plan is key -> a cell next to the lock (unlock) -> object.
- :class:`BoltzmannAgent`: a rational agent with graded rationality ``beta``: each move is drawn
  with probability proportional to ``exp(-beta * (move cost + cost-to-go after it))`` over the
  key/lock planner's values, so a move costing one cell more is ``e^beta`` times less likely
  (the controlled set's noisy stimulus agents).
- :class:`IrrationalAgent`: replays a given path (e.g. a curved path) whatever the layout.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from bib.episode import Event
from bib.world.dynamics import ACTION_NAMES, STAY, AgentState, action_between, move_legal, step
from bib.world.grid import Cell, Layout
from bib.world.keylock import boltzmann_choice, move_costs, optimal_cost, optimal_moves


@runtime_checkable
class GridAgent(Protocol):
    """Anything that acts in a gridworld trial."""

    def act(self, layout: Layout, state: AgentState) -> int:
        """The action (index into ``ACTIONS``; ``STAY`` ends the trial) taken in ``state``."""
        ...


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
        if not options:  # a state no path of its own reaches (e.g. a counterfactual view's): no optimal move
            return STAY
        if len(options) > 1 and self.rng is not None:
            return options[int(self.rng.integers(len(options)))]
        return options[0]


class BoltzmannAgent(RationalAgent):
    """Pursues its most preferred reachable goal with a Boltzmann policy over the key/lock Q values.

    Args:
        preference: goals from most to least preferred (as :class:`RationalAgent`).
        beta: rationality (per cell of cost; large = nearly optimal).
        rng: generator for the draws.
    """

    def __init__(self, preference: Sequence[str], beta: float, rng: np.random.Generator) -> None:
        super().__init__(preference, rng)
        if not beta > 0:
            raise ValueError(f"beta must be > 0, got {beta}")
        self.beta = float(beta)

    def act(self, layout: Layout, state: AgentState) -> int:
        """A move drawn from the Boltzmann policy; ``STAY`` on the goal or when nothing is reachable."""
        g = self.goal(layout, state)
        if g is None:
            return STAY
        cell = layout.goal_cell(g)
        if state.cell == cell:
            return STAY
        here, moves = move_costs(layout, state, cell)
        weights = [math.exp(-self.beta * (c - here)) for _, c in moves]
        return moves[boltzmann_choice(weights, self.rng)][0]  # type: ignore[arg-type]


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

    An illegal move (into a wall, barrier or the closed lock, or cutting a corner) is a *bump*:
    the agent stays where it is, the move counts as one of the ``max_steps`` and the path repeats
    the cell (the rule of the Gymnasium environments and the agency suite; the stimulus agents
    never bump).

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
        if move_legal(layout, state.cell, action, state.unlocked):
            state, evs = step(layout, state, action)
            events += [Event(i, e) for e in evs]
        path.append(state.cell)
    return path, tuple(events)
