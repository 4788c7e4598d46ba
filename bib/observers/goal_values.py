"""Goal values in the (cell, has_key, unlocked) state space for the inverse planner, and Boltzmann move policies.

Costs are exact for the deterministic BIB dynamics (1 per orthogonal step, sqrt 2 per diagonal,
no corner cutting), so ``Q(s, a) = -(cost(a) + V(s'))`` are the Q-values an optimal planner uses,
and ``pi(a|s) ∝ exp(beta * Q(s, a))`` over the 8 moves is HBToM's Boltzmann (soft-optimal) agent
(:func:`bib.meg.soft.log_softmax`, shared with MEG).
For a deterministic shortest-path goal this needs no value iteration. The values come from the
suite's key/lock planner, :mod:`bib.world.keylock` (cached per layout and goal).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bib.episode import Trial
from bib.meg.soft import log_softmax, logsumexp
from bib.world.dynamics import ACTIONS, STAY, action_cost
from bib.world.grid import Cell, Layout
from bib.world.keylock import DIRECT, HAS_KEY, NO_KEY, UNLOCKED, key_lock_values
from bib.world.planning import layout_graph

N_MOVES = STAY
"""The 8 king moves (a soft-optimal agent never stays before reaching its goal)."""

MOVE_COST = np.array([action_cost(a) for a in range(N_MOVES)])


def layout_goal_values(layouts: Sequence[Layout]) -> list[dict[Cell, np.ndarray]]:
    """For each layout, ``{goal cell: V[4, H, W]}``: optimal cost-to-go to each object (and to the key) per key/lock state.

    The layers are ``NO_KEY``, ``HAS_KEY``, ``UNLOCKED`` and ``DIRECT`` (never using the key) of
    :attr:`bib.world.keylock.KeyLockValues.stack`; ``inf`` marks cells from which the goal cannot be
    reached (and, without a key, the modes holding it). The key, when present, is also a goal.
    Arrays are read-only and shared through the planner's cache.
    """
    out = []
    for lay in layouts:
        values = {o.cell: key_lock_values(lay, o.cell).stack for o in lay.objects}
        if lay.key is not None and lay.key not in values:
            values[lay.key] = key_lock_values(lay, lay.key).stack
        out.append(values)
    return out


def via_key_values(layout: Layout, goal: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``V[4, H, W]`` of the goal "object ``goal``, reached holding the key": without the key the agent must
    first fetch it (the key's ``NO_KEY`` field plus ``goal``'s cost-to-go from the key once it is held),
    holding it the object's own fields; never without the key (``DIRECT`` is ``inf``).

    ``goal`` and ``key`` are the :func:`layout_goal_values` stacks of the object and of the key.
    """
    kx, ky = layout.key  # type: ignore[misc]
    lock = layout.lock
    opens = lock is not None and abs(kx - lock[0]) + abs(ky - lock[1]) == 1
    onwards = goal[UNLOCKED if opens else HAS_KEY, ky, kx]
    out = np.array(goal)
    out[NO_KEY] = key[NO_KEY] + onwards
    out[DIRECT] = np.inf
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class TrialMoves:
    """What a trial's path looks like to a planner: per step, the legal moves, where they lead, the move taken.

    Attributes:
        legal: ``[T, 8]`` bool, moves legal at the step's start.
        next_state: ``[T, 8]`` int, key/lock state index after each move.
        next_x, next_y: ``[T, 8]`` int, the cell after each move (clipped onto the grid).
        taken: ``[T]`` int, the move taken (``-1`` for a stay, which no soft-optimal agent makes).
    """

    legal: np.ndarray
    next_state: np.ndarray
    next_x: np.ndarray
    next_y: np.ndarray
    taken: np.ndarray

    @property
    def n_steps(self) -> int:
        """Number of moves."""
        return int(self.taken.shape[0])


_DX = np.array([ACTIONS[a][0] for a in range(N_MOVES)])
_DY = np.array([ACTIONS[a][1] for a in range(N_MOVES)])
_ACTION_OF_CODE = np.full(9, -1, dtype=np.int64)
for _a in range(N_MOVES):
    _ACTION_OF_CODE[(_DX[_a] + 1) * 3 + (_DY[_a] + 1)] = _a


def trial_moves(trial: Trial) -> TrialMoves:
    """Replay a trial's path through the dynamics (vectorised) and tabulate every step's options.

    The key is picked up on arriving at its cell and the lock opens on arriving next to it with
    the key, as in :func:`bib.world.dynamics.step`.
    """
    layout = trial.layout
    path = np.asarray(trial.path, dtype=np.int64)
    n = len(path) - 1
    x, y = path[:-1, 0], path[:-1, 1]
    next_x = np.clip(x[:, None] + _DX[None, :], 0, layout.width - 1)
    next_y = np.clip(y[:, None] + _DY[None, :], 0, layout.height - 1)
    closed = layout_graph(layout, False).legal[y, x]  # [T, 8]
    key, lock = layout.key, layout.lock
    step = path[1:] - path[:-1]
    moved = np.any(step != 0, axis=1)
    codes = (step[:, 0] + 1) * 3 + (step[:, 1] + 1)
    taken = np.where(moved & (np.abs(step).max(axis=1) <= 1), _ACTION_OF_CODE[np.clip(codes, 0, 8)], -1)
    if key is None:
        # no key: the state never changes
        return TrialMoves(closed, np.zeros((n, N_MOVES), dtype=np.int64), next_x, next_y, taken)
    on_key = np.zeros(n + 1, dtype=bool)
    on_key[1:] = (path[1:, 0] == key[0]) & (path[1:, 1] == key[1])
    has_key = np.logical_or.accumulate(on_key)  # after arriving at path[t]
    if lock is None:
        # no lock to open: holding the key changes no cost to an object (HAS_KEY equals NO_KEY there), only
        # what a "via the key" goal still needs (:func:`via_key_values`)
        hk1 = has_key[:-1, None] | ((next_x == key[0]) & (next_y == key[1]))
        return TrialMoves(closed, np.where(hk1, HAS_KEY, NO_KEY).astype(np.int64), next_x, next_y, taken)
    near_lock = np.abs(path[:, 0] - lock[0]) + np.abs(path[:, 1] - lock[1]) == 1
    opens = has_key & near_lock
    opens[0] = False
    unlocked = np.logical_or.accumulate(opens)
    hk0, ul0 = has_key[:-1], unlocked[:-1]  # state at the start of each move
    legal = np.where(ul0[:, None], layout_graph(layout, True).legal[y, x], closed)
    hk1 = hk0[:, None] | ((next_x == key[0]) & (next_y == key[1]))
    ul1 = ul0[:, None] | (hk1 & (np.abs(next_x - lock[0]) + np.abs(next_y - lock[1]) == 1))
    next_state = np.where(ul1, UNLOCKED, np.where(hk1, HAS_KEY, NO_KEY)).astype(np.int64)
    return TrialMoves(legal, next_state, next_x, next_y, taken)


def move_q_values(moves: TrialMoves, values: np.ndarray) -> np.ndarray:
    """Q-values ``[G, T, 8]`` of every move at every step for a stack of goal values ``[G, 4, H, W]``.

    ``Q = -(cost(a) + V(s'))``; illegal moves and moves from which the goal is unreachable are ``-inf``.
    """
    v_next = values[:, moves.next_state, moves.next_y, moves.next_x]  # [G, T, 8]
    q = -(MOVE_COST[None, None, :] + v_next)
    return np.where(moves.legal[None], q, -np.inf)


def boltzmann_log_policy(q: np.ndarray, betas: np.ndarray) -> np.ndarray:
    """``log softmax(beta * Q)`` over the last axis, for every beta: ``[G, T, 8] -> [G, B, T, 8]``.

    The Boltzmann policy of :func:`bib.meg.soft.log_softmax`; rows with no finite Q (goal
    unreachable) get ``-inf`` everywhere.
    """
    return log_softmax(betas[None, :, None, None] * q[:, None, :, :], axis=-1)


def step_surprises(log_prior: np.ndarray, log_lik: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-step surprises of a trial from a log prior ``[G, B]`` over (goal, beta) and the moves' ``log_lik [G, B, T]``.

    Returns ``(marginal, sequential)``: ``-log p(move_t | prior)`` (each move against the prior predictive) and
    ``-log p(move_t | prior, moves_<t)`` (the predictive Bayes-updated after every move), each ``[T]``.
    """
    before = np.concatenate([np.zeros(log_lik.shape[:2] + (1,)), np.cumsum(log_lik, axis=2)], axis=2)
    norm = logsumexp(log_prior[:, :, None] + before, axis=(0, 1))  # [T+1]
    sequential = -(norm[1:] - norm[:-1])
    marginal = -logsumexp(log_prior[:, :, None] + log_lik, axis=(0, 1))
    return marginal, sequential
