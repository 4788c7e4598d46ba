"""A gridworld Layout as a deterministic TabularMDP (its own moves + stay, optionally the key/lock product state) and paths as trajectories."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from bib.errors import BibInputError
from bib.world.dynamics import ACTION_NAMES, ACTIONS, STAY, AgentState, action_between, move_legal, step
from bib.world.grid import Cell, Layout
from bib.world.tabular import TabularMDP


def layout_actions(layout: Layout) -> tuple[int, ...]:
    """The layout's own action set as indices into ``ACTIONS``: its moves (4 orthogonal or 8 king moves), then stay."""
    moves = range(STAY) if layout.moves == 8 else range(0, STAY, 2)
    return (*moves, STAY)


@dataclass(frozen=True)
class GridMDP:
    """A layout's states as MDP states.

    Attributes:
        mdp: the TabularMDP (utility as given, horizon, all initial mass on the start state).
        states: the :class:`bib.world.dynamics.AgentState` of each state index.
        index: state index of each state.
        actions: the ``ACTIONS`` index of each MDP action.
        successors: ``[S, A]`` int, the state each action leads to.
    """

    mdp: TabularMDP
    states: tuple[AgentState, ...]
    index: dict[AgentState, int]
    actions: tuple[int, ...]
    successors: np.ndarray
    _at: dict[Cell, np.ndarray] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        at: dict[Cell, list[int]] = {}
        for i, s in enumerate(self.states):
            at.setdefault(s.cell, []).append(i)
        object.__setattr__(self, "_at", {c: np.array(v, dtype=np.int64) for c, v in at.items()})

    @property
    def cells(self) -> tuple[Cell, ...]:
        """The cell of each state index."""
        return tuple(s.cell for s in self.states)

    def at(self, cell: Cell) -> np.ndarray:
        """Indices of the states on ``cell`` (one per key/lock mode reached there; empty when none)."""
        return self._at.get(tuple(cell), np.zeros(0, dtype=np.int64))

    def reach_utility(self, cell: Cell) -> np.ndarray:
        """The utility "reach ``cell``": 1 while the agent stands on it (in any key/lock mode), 0 elsewhere."""
        where = self.at(cell)
        if not where.size:
            raise BibInputError(f"reach utility: cell {list(cell)} is not a state of the layout's MDP")
        u = np.zeros(len(self.states))
        u[where] = 1.0
        return u

    def trajectory(self, path: Sequence[Cell], final_action: int = STAY) -> tuple[np.ndarray, np.ndarray]:
        """A path (cell per step, from the start state) as ``states [1, H+1]`` and ``actions [1, H]`` for this MDP's horizon ``H``.

        The path is replayed through the MDP from its start state (so the key/lock mode follows the
        dynamics when it is part of the state). The path's ``len(path) - 1`` moves fill the first
        decisions; any remaining decisions (``H = len(path)`` in :func:`bib.meg.episodes.trial_meg`,
        whose last decision is uniform under every soft policy and so scores 0) take
        ``final_action`` (an ``ACTIONS`` index, stay by default) where the path ends.
        """
        H = self.mdp.horizon
        if len(path) - 1 > H:
            raise BibInputError(f"path: {len(path) - 1} moves exceed the horizon {H}")
        column = {a: i for i, a in enumerate(self.actions)}
        if final_action not in column:
            raise BibInputError(f"final action {ACTION_NAMES[final_action]} is not an action of this MDP")
        start = np.flatnonzero(self.mdp.initial)
        first = tuple(path[0]) if path else None
        if start.size != 1 or self.states[int(start[0])].cell != first:
            raise BibInputError(f"path[0]: cell {list(first or ())} is not the start of the layout's MDP")
        states, actions = [int(start[0])], []
        for i in range(len(path) - 1):
            a = action_between(tuple(path[i]), tuple(path[i + 1]))
            if a is None or a not in column:
                raise BibInputError(f"path[{i + 1}]: {list(path[i + 1])} is not one move from {list(path[i])}")
            nxt = int(self.successors[states[-1], column[a]])
            if self.states[nxt].cell != tuple(path[i + 1]):
                raise BibInputError(f"path[{i + 1}]: the move from {list(path[i])} to {list(path[i + 1])} is illegal")
            states.append(nxt)
            actions.append(column[a])
        while len(actions) < H:
            actions.append(column[final_action])
            states.append(int(self.successors[states[-1], column[final_action]]))
        return np.array([states]), np.array([actions])


def _successor(layout: Layout, state: AgentState, action: int, key_lock: bool) -> AgentState:
    """Where ``action`` leads: nowhere new when it is stay or illegal; key/lock events only with ``key_lock``."""
    if action == STAY or not move_legal(layout, state.cell, action, state.unlocked):
        return state
    if key_lock:
        return step(layout, state, action)[0]
    dx, dy = ACTIONS[action]
    return AgentState((state.cell[0] + dx, state.cell[1] + dy), state.has_key, state.unlocked)


def layout_mdp(
    layout: Layout,
    start: Cell,
    horizon: int,
    utility: np.ndarray | None = None,
    *,
    key_lock: bool = False,
    actions: Sequence[int] | None = None,
    absorbing: Iterable[Cell] = (),
) -> GridMDP:
    """The layout as a deterministic MDP whose moves are those of :mod:`bib.world.dynamics`.

    An illegal move (into a wall, barrier or lock, or cutting a corner) leaves the agent where it
    is, like stay. Without ``key_lock`` the states are the layout's free cells with the lock closed
    (row order), and picking up the key or opening the lock does not happen. With ``key_lock`` the
    states are the ``(cell, has_key, unlocked)`` states reachable from ``start`` (no key, lock
    closed), in breadth-first order from it, and moves pick up the key and open the lock as
    :func:`bib.world.dynamics.step` does.

    Args:
        layout: the grid.
        start: the initial cell (all initial mass, without the key and with the lock closed).
        horizon: number of decisions.
        utility: per-state utility (index order of ``states``), or None.
        key_lock: whether the key/lock mode is part of the state.
        actions: the MDP's actions as ``ACTIONS`` indices (default :func:`layout_actions`).
        absorbing: cells where every action stays put (e.g. a goal that ends the episode).
    """
    acts = tuple(layout_actions(layout) if actions is None else actions)
    if not acts or any(not 0 <= a < len(ACTIONS) for a in acts):
        raise BibInputError(f"actions: need indices into ACTIONS (0..{len(ACTIONS) - 1}), got {list(acts)}")
    if not layout.is_free(tuple(start)):
        raise BibInputError(f"start: cell {list(start)} is not a free cell of the layout")
    ends = frozenset(tuple(c) for c in absorbing)
    first = AgentState(tuple(start))
    order = [first] if key_lock else [AgentState(c) for c in layout.free_cells()]
    index = {s: i for i, s in enumerate(order)}
    rows: list[list[int]] = []
    while len(rows) < len(order):  # breadth-first: states are appended as they are found
        s = order[len(rows)]
        row = []
        for a in acts:
            nxt = s if s.cell in ends else _successor(layout, s, a, key_lock)
            if nxt not in index:
                index[nxt] = len(order)
                order.append(nxt)
            row.append(index[nxt])
        rows.append(row)
    succ = np.array(rows, dtype=np.int64)
    initial = np.zeros(len(order))
    initial[index[first]] = 1.0
    mdp = TabularMDP((succ[:, :, None], np.ones(succ.shape + (1,))), utility, horizon, initial)
    return GridMDP(mdp, tuple(order), index, acts, succ)
