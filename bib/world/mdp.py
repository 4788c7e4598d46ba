"""A gridworld Layout as a deterministic TabularMDP (8 moves + stay; illegal moves stay put) and paths as trajectories."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bib.errors import BibInputError
from bib.meg.mdp import TabularMDP
from bib.world.dynamics import ACTIONS, STAY, action_between, move_legal
from bib.world.grid import Cell, Layout


@dataclass(frozen=True)
class GridMDP:
    """A layout's free cells as MDP states.

    Attributes:
        mdp: the TabularMDP (utility as given, horizon, all initial mass on ``start``).
        cells: the cell of each state index.
        index: state index of each free cell.
    """

    mdp: TabularMDP
    cells: tuple[Cell, ...]
    index: dict[Cell, int]

    def reach_utility(self, cell: Cell) -> np.ndarray:
        """The utility "reach ``cell``": 1 while the agent stands on it, 0 elsewhere."""
        if cell not in self.index:
            raise BibInputError(f"reach utility: cell {list(cell)} is not a free cell of the layout")
        u = np.zeros(len(self.cells))
        u[self.index[cell]] = 1.0
        return u

    def trajectory(self, path: Sequence[Cell], final_action: int = STAY) -> tuple[np.ndarray, np.ndarray]:
        """A path (cell per step) as ``states [1, H+1]`` and ``actions [1, H]`` for this MDP's horizon ``H``.

        The path's ``len(path) - 1`` moves fill the first decisions; any remaining decisions
        (``H = len(path)`` by :func:`layout_mdp`'s default, whose last decision is uniform under every soft
        policy and so scores 0) take ``final_action`` (stay) at the last cell.
        """
        H = self.mdp.horizon
        if len(path) - 1 > H:
            raise BibInputError(f"path: {len(path) - 1} moves exceed the horizon {H}")
        states, actions = [], []
        for i, cell in enumerate(path):
            if tuple(cell) not in self.index:
                raise BibInputError(f"path[{i}]: cell {list(cell)} is not a free cell of the layout")
            states.append(self.index[tuple(cell)])
        for i in range(len(path) - 1):
            a = action_between(tuple(path[i]), tuple(path[i + 1]))
            if a is None:
                raise BibInputError(f"path[{i + 1}]: {list(path[i + 1])} is not one move from {list(path[i])}")
            actions.append(a)
        while len(actions) < H:
            actions.append(final_action)
            states.append(int(self.mdp._csr[states[-1] * self.mdp.n_actions + final_action].indices[0]))
        return np.array([states]), np.array([actions])


def layout_mdp(
    layout: Layout, start: Cell, horizon: int, utility: np.ndarray | None = None, unlocked: bool = False
) -> GridMDP:
    """The layout as a deterministic MDP over its free cells with the 9 actions of :mod:`bib.world.dynamics`.

    An illegal move (into a wall, barrier or lock, or cutting a corner) leaves the agent where it
    is, like stay. The key and the lock are not part of the state: pass ``unlocked=True`` to use the
    layout with its barriers and lock gone.

    Args:
        layout: the grid.
        start: the initial cell (all initial mass).
        horizon: number of decisions.
        utility: per-state utility (index order of ``cells``), or None.
        unlocked: whether barriers and lock are gone.
    """
    cells = tuple(layout.free_cells(unlocked))
    index = {c: i for i, c in enumerate(cells)}
    if tuple(start) not in index:
        raise BibInputError(f"start: cell {list(start)} is not a free cell of the layout")
    S, A = len(cells), len(ACTIONS)
    succ = np.empty((S, A, 1), dtype=np.int64)
    for i, cell in enumerate(cells):
        for a, (dx, dy) in enumerate(ACTIONS):
            legal = a != STAY and move_legal(layout, cell, a, unlocked)
            succ[i, a, 0] = index[(cell[0] + dx, cell[1] + dy)] if legal else i
    initial = np.zeros(S)
    initial[index[tuple(start)]] = 1.0
    mdp = TabularMDP((succ, np.ones((S, A, 1))), utility, horizon, initial)
    return GridMDP(mdp, cells, index)
