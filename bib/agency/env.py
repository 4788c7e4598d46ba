"""The agent loop of the agency suite: 4 moves, optimal sets pi*, the step cap, grids from seeds and rollouts.

Actions follow the paper's order LEFT, RIGHT, UP, DOWN (:data:`MOVES`, as indices into
:data:`bib.world.dynamics.ACTIONS`). An agent answers with an action index (the gridworld agent
protocol); in a rollout a move into a wall or the closed door is a *bump* (the agent stays, the
step counts, it is an error), and anything that is not one of the 4 moves (stay, a diagonal, or
:data:`INVALID` for an answer that could not be parsed) is an *invalid* step (the agent stays,
error). A rollout ends on the goal or after ``ceil(1.5 * L*)`` steps, ``L*`` the optimal length.

pi*(s) is the set of moves to a neighbour state exactly one step closer to the goal, from the
key/lock planner of :mod:`bib.world.keylock` over ``(cell, has_key, unlocked)`` states (4 moves, so
unit costs); a useless key changes nothing, a locked door routes through it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from bib.tasks import make_unit
from bib.tasks.agent_grids import GOAL, navigation_design
from bib.world.dynamics import AgentState, move_legal, step
from bib.world.grid import Cell, Layout
from bib.world.keylock import optimal_cost, optimal_moves

MOVES: tuple[int, ...] = (6, 2, 0, 4)
"""LEFT, RIGHT, UP, DOWN as indices into ACTIONS (W, E, N, S)."""
MOVE_NAMES: tuple[str, ...] = ("LEFT", "RIGHT", "UP", "DOWN")
MOVE_INDEX = {a: i for i, a in enumerate(MOVES)}
INVALID = -1
"""The action of an answer that names no move (unparsable, timed out, stay or diagonal)."""


@dataclass(frozen=True)
class Grid:
    """One evaluation grid, regenerated from ``(task, index, seed)``.

    Attributes:
        id: ``<task>-<index:06d>`` plus ``/<variant>`` for a transformed or key-less copy.
        task: the registered task id (``navigation``, ``key-door`` ...).
        index: the unit index.
        seed: the base seed given to :func:`bib.tasks.make_unit`.
        layout: the (possibly transformed) layout; the agent starts at ``layout.agent.home``.
        variant: ``base``, a transform name, or ``no-key``.
        size: grid side; density: obstacle density (navigation only, else NaN).
    """

    id: str
    task: str
    index: int
    seed: int
    layout: Layout
    variant: str = "base"
    size: int = 0
    density: float = float("nan")

    @property
    def goal(self) -> Cell:
        """The goal cell."""
        return self.layout.goal_cell(GOAL)

    @property
    def start(self) -> AgentState:
        """The initial state."""
        return AgentState(self.layout.agent.home)

    @property
    def optimal_length(self) -> int:
        """L*: the optimal number of moves from the start (key/lock aware)."""
        return int(round(optimal_cost(self.layout, self.goal)))

    @property
    def max_steps(self) -> int:
        """The step cap ``ceil(1.5 * L*)``."""
        return math.ceil(1.5 * self.optimal_length)


def load_grid(task: str, index: int, seed: int) -> Grid:
    """Grid ``index`` of ``task`` under ``seed`` (the layout of ``bib generate --task T --seed S``)."""
    (ep,) = make_unit(task, index, seed)
    size, density = ep.width, float("nan")
    if task == "navigation":
        size, density, _ = navigation_design(index)
    return Grid(id=ep.id, task=task, index=index, seed=seed, layout=ep.test.layout, size=size, density=density)


def with_layout(grid: Grid, layout: Layout, variant: str) -> Grid:
    """A copy of ``grid`` with another layout, named ``<id>/<variant>``."""
    base = grid.id.split("/")[0]
    return replace(grid, id=f"{base}/{variant}", layout=layout, variant=variant)


@lru_cache(maxsize=65536)
def _optimal(layout: Layout, state: AgentState, goal: Cell) -> frozenset[int]:
    return frozenset(optimal_moves(layout, state, goal))


def optimal_set(layout: Layout, state: AgentState, goal: Cell) -> frozenset[int]:
    """pi*(s): the moves (ACTIONS indices) one step closer to ``goal``; empty on the goal or when cut off."""
    if state.cell == goal:
        return frozenset()
    return _optimal(layout, state, goal)


def optimal_mask(layout: Layout, state: AgentState, goal: Cell) -> np.ndarray:
    """pi*(s) as a boolean vector over :data:`MOVES`."""
    best = optimal_set(layout, state, goal)
    return np.array([a in best for a in MOVES])


@dataclass
class Rollout:
    """One trajectory: the state before every step, the action, and what became of it.

    Attributes:
        states: ``s_0 .. s_T`` (T + 1 states).
        actions: the agent's answer at each step (ACTIONS index or :data:`INVALID`).
        kinds: ``move``, ``bump`` or ``invalid`` per step.
        optimal: whether each action was in pi*(s_t).
        success: the goal was reached within the cap.
        reasons: why a step was invalid (``""`` when not), e.g. ``timeout`` or ``garbage``.
    """

    states: list[AgentState]
    actions: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    optimal: list[bool] = field(default_factory=list)
    success: bool = False
    reasons: list[str] = field(default_factory=list)

    @property
    def n_steps(self) -> int:
        """T, the number of steps taken."""
        return len(self.actions)

    @property
    def cells(self) -> list[Cell]:
        """The cell at every step."""
        return [s.cell for s in self.states]


def apply(layout: Layout, state: AgentState, action: int) -> tuple[AgentState, str]:
    """One step of the suite's dynamics: ``(next state, kind)`` with kind ``move``, ``bump`` or ``invalid``."""
    if action not in MOVE_INDEX:
        return state, "invalid"
    if not move_legal(layout, state.cell, action, state.unlocked):
        return state, "bump"
    return step(layout, state, action)[0], "move"


def _record(ro: Rollout, grid: Grid, action: int, reason: str = "") -> None:
    state = ro.states[-1]
    nxt, kind = apply(grid.layout, state, action)
    ro.actions.append(int(action))
    ro.kinds.append(kind)
    ro.optimal.append(action in optimal_set(grid.layout, state, grid.goal))
    ro.reasons.append(reason if kind == "invalid" else "")
    ro.states.append(nxt)
    ro.success = nxt.cell == grid.goal


def run_rollouts(agents: list, grid: Grid) -> list[Rollout]:
    """Roll every agent out once on ``grid`` (capped at :attr:`Grid.max_steps`).

    Agents with an ``act_batch(layout, states) -> actions`` method that are all the same object
    run in lockstep (one batched call per step); otherwise each agent acts alone. An agent may
    expose ``last_reason`` (why its last answer was invalid), which is recorded per step.
    """
    cap = grid.max_steps
    rollouts = [Rollout(states=[grid.start]) for _ in agents]
    batched = hasattr(agents[0], "act_batch") and all(a is agents[0] for a in agents)
    if batched:
        live = list(range(len(agents)))
        for _ in range(cap):
            live = [i for i in live if rollouts[i].states[-1].cell != grid.goal]
            if not live:
                break
            actions = agents[0].act_batch(grid.layout, [rollouts[i].states[-1] for i in live])
            for i, a in zip(live, actions):
                _record(rollouts[i], grid, int(a))
        return rollouts
    for agent, ro in zip(agents, rollouts):
        for _ in range(cap):
            if ro.states[-1].cell == grid.goal:
                break
            action = agent.act(grid.layout, ro.states[-1])
            _record(ro, grid, int(action), getattr(agent, "last_reason", "") or "")
    return rollouts


def action_names(actions: list[int]) -> list[str]:
    """Readable names of recorded actions (``INVALID`` for invalid answers, else the ACTIONS name)."""
    names = {a: n for a, n in zip(MOVES, MOVE_NAMES)}
    return [names.get(a, "INVALID" if a == INVALID else f"A{a}") for a in actions]

