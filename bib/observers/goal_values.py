"""Exact cost-to-go of reaching a goal in the (cell, has_key, unlocked) state space, and Boltzmann move policies.

Costs are exact for the deterministic BIB dynamics (1 per orthogonal step, sqrt 2 per diagonal,
no corner cutting), so ``Q(s, a) = -(cost(a) + V(s'))`` are the Q-values an optimal planner uses,
and ``pi(a|s) ∝ exp(beta * Q(s, a))`` over the 8 moves is HBToM's Boltzmann (soft-optimal) agent.
For a deterministic shortest-path goal this needs no value iteration. (This module stands in for
``bib.world.mdp`` + ``bib.meg`` soft value iteration, which were not committed when it was
written.) Distance fields are computed for a whole episode at once by a vectorised min-plus
relaxation (the same fields as :func:`bib.world.planning.distance_field`, which the tests check,
but batched) and cached by (grid, blocked cells, source).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from bib.episode import Trial
from bib.world.dynamics import ACTIONS, STAY, action_cost
from bib.world.grid import Cell, Layout

N_MOVES = STAY
"""The 8 king moves (a soft-optimal agent never stays before reaching its goal)."""

MOVE_COST = np.array([action_cost(a) for a in range(N_MOVES)])

NO_KEY, HAS_KEY, UNLOCKED = 0, 1, 2
"""Indices of the three key/lock states: (no key, locked), (key, locked), (lock opened)."""
DIRECT = 3
"""Index of the extra value layer: cost without ever using the key (barriers and lock stay)."""

_FieldKey = tuple[int, int, int, frozenset, Cell]
_FIELDS: OrderedDict[_FieldKey, np.ndarray] = OrderedDict()
_FIELDS_MAX = 20000


def state_index(has_key: bool, unlocked: bool) -> int:
    """Index of a key/lock state in a value stack."""
    return UNLOCKED if unlocked else (HAS_KEY if has_key else NO_KEY)


@lru_cache(maxsize=4096)
def _legal(width: int, height: int, moves: int, blocked: frozenset[Cell]) -> np.ndarray:
    pad = np.ones((height + 2, width + 2), dtype=bool)
    pad[1:-1, 1:-1] = False
    for x, y in blocked:
        if 0 <= x < width and 0 <= y < height:
            pad[y + 1, x + 1] = True
    free = ~pad[1:-1, 1:-1]
    legal = np.zeros((N_MOVES, height, width), dtype=bool)
    for a in range(N_MOVES):
        dx, dy = ACTIONS[a]
        ok = free & ~pad[1 + dy : 1 + dy + height, 1 + dx : 1 + dx + width]
        if dx and dy:
            if moves == 4:
                continue
            ok &= ~pad[1 : 1 + height, 1 + dx : 1 + dx + width] & ~pad[1 + dy : 1 + dy + height, 1 : 1 + width]
        legal[a] = ok
    legal.flags.writeable = False
    return legal


def legal_mask(layout: Layout, unlocked: bool = False) -> np.ndarray:
    """``[8, H, W]`` bool: move ``a`` is legal from free cell ``(x, y)`` (as :func:`bib.world.dynamics.move_legal`).

    Blocked cells have no legal move. Cached by (grid, blocked cells).
    """
    return _legal(layout.width, layout.height, layout.moves, layout.blocked(unlocked))


def _relax(legal: np.ndarray, sources: Sequence[Cell]) -> np.ndarray:
    """Batched exact shortest-path costs ``[N, H, W]`` from each source over its own legal-move mask ``[N, 8, H, W]``.

    Min-plus relaxation (Bellman-Ford on the grid) until nothing changes; moves are symmetric, so
    the cost from the source equals the cost to it. The caller handles blocked sources.
    """
    n, _, height, width = legal.shape
    cost = np.full((n, height, width, 3, 3), np.inf)
    cost[:, :, :, 1, 1] = 0.0
    for a in range(N_MOVES):
        dx, dy = ACTIONS[a]
        cost[:, :, :, 1 + dy, 1 + dx] = np.where(legal[:, a], MOVE_COST[a], np.inf)
    dist = np.full((n, height + 2, width + 2), np.inf)
    for i, (x, y) in enumerate(sources):
        if 0 <= x < width and 0 <= y < height:
            dist[i, y + 1, x + 1] = 0.0
    inner = dist[:, 1:-1, 1:-1]
    windows = sliding_window_view(dist, (3, 3), axis=(1, 2))  # a view: follows ``dist``
    while True:
        new = (windows + cost).min(axis=(3, 4))
        if np.array_equal(new, inner):
            return inner.copy()
        inner[...] = new


def distance_fields(requests: Sequence[tuple[Layout, bool, Cell]]) -> list[np.ndarray]:
    """Shortest-path cost fields ``[H, W]`` to each ``(layout, unlocked, goal)``, computed in one batch.

    Equal to :func:`bib.world.planning.distance_field` (``inf`` where the goal cannot be reached,
    everywhere when the goal cell is blocked). Results are read-only and cached.
    """
    keys = [(lay.width, lay.height, lay.moves, lay.blocked(unlocked), goal) for lay, unlocked, goal in requests]
    missing: dict[_FieldKey, None] = {k: None for k in keys if k not in _FIELDS}
    by_size: dict[tuple[int, int], list[_FieldKey]] = {}
    for k in missing:
        by_size.setdefault((k[0], k[1]), []).append(k)
    for group in by_size.values():
        legal = np.stack([_legal(*k[:4]) for k in group])
        blocked_goal = [k[4] in k[3] for k in group]
        fields = _relax(legal, [k[4] for k in group])
        for k, f, bad in zip(group, fields, blocked_goal):
            if bad:
                f = np.full_like(f, np.inf)
            f.flags.writeable = False
            _FIELDS[k] = f
    out = []
    for k in keys:
        _FIELDS.move_to_end(k)
        out.append(_FIELDS[k])
    while len(_FIELDS) > _FIELDS_MAX:
        _FIELDS.popitem(last=False)
    return out


def _lock_neighbours(layout: Layout) -> list[Cell]:
    lx, ly = layout.lock  # type: ignore[misc]
    return [c for c in ((lx + 1, ly), (lx - 1, ly), (lx, ly + 1), (lx, ly - 1)) if layout.is_free(c)]


def _requests(layout: Layout) -> list[tuple[Layout, bool, Cell]]:
    req = [(layout, False, o.cell) for o in layout.objects]
    if layout.key is not None:
        req.append((layout, False, layout.key))
    if layout.lock is not None and layout.key is not None:
        req += [(layout, True, o.cell) for o in layout.objects]
        req += [(layout, False, c) for c in _lock_neighbours(layout)]
    return req


def layout_goal_values(layouts: Sequence[Layout]) -> list[dict[Cell, np.ndarray]]:
    """For each layout, ``{goal cell: V[4, H, W]}``: optimal cost-to-go to each object (and to the key) per key/lock state.

    Without a lock and key the three layers are the plain distance field. With both, fetching the
    key (by stepping on it) and opening the lock (by stepping next to it holding the key) are
    planned for: ``V[UNLOCKED] = d_open(goal)``; ``V[HAS_KEY] = min(d_closed(goal), min_c d_closed(c) +
    d_open(c, goal))`` over the free cells ``c`` sharing an edge with the lock; ``V[NO_KEY] =
    min(d_closed(goal), d_closed(key) + V[HAS_KEY](key))``. Each term is the cost of an achievable
    plan and every plan splits at its first pickup and first unlock, so the minimum is exact.
    ``inf`` marks cells from which the goal cannot be reached. Layer :data:`DIRECT` holds
    ``d_closed(goal)`` (never using the key). The key, when present, is also a goal: its layers are all
    ``d_closed(key)``. All fields come from one batch.
    """
    per_layout = [_requests(lay) for lay in layouts]
    fields = iter(distance_fields([r for reqs in per_layout for r in reqs]))
    out = []
    for lay in layouts:
        closed = {o.cell: next(fields) for o in lay.objects}
        values: dict[Cell, np.ndarray] = {}
        to_key = next(fields) if lay.key is not None else None
        if lay.lock is None or lay.key is None:
            for cell, d in closed.items():
                values[cell] = np.broadcast_to(d, (4,) + d.shape)
        else:
            opened = {o.cell: next(fields) for o in lay.objects}
            to_lock = [(c, next(fields)) for c in _lock_neighbours(lay)]
            kx, ky = lay.key
            for cell in closed:
                with_key = closed[cell].copy()
                for c, d in to_lock:
                    via = opened[cell][c[1], c[0]]
                    if np.isfinite(via):
                        np.minimum(with_key, d + via, out=with_key)
                direct = closed[cell]
                v = np.stack([np.minimum(direct, to_key + with_key[ky, kx]), with_key, opened[cell], direct])
                v.flags.writeable = False
                values[cell] = v
        if to_key is not None and lay.key not in values:
            values[lay.key] = np.broadcast_to(to_key, (4,) + to_key.shape)
        out.append(values)
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
    closed = legal_mask(layout, False)[:, y, x].T  # [T, 8]
    key, lock = layout.key, layout.lock
    step = path[1:] - path[:-1]
    moved = np.any(step != 0, axis=1)
    codes = (step[:, 0] + 1) * 3 + (step[:, 1] + 1)
    taken = np.where(moved & (np.abs(step).max(axis=1) <= 1), _ACTION_OF_CODE[np.clip(codes, 0, 8)], -1)
    if key is None or lock is None:
        # no lock to open: the state never changes (a key alone changes nothing the planner uses)
        return TrialMoves(closed, np.zeros((n, N_MOVES), dtype=np.int64), next_x, next_y, taken)
    on_key = np.zeros(n + 1, dtype=bool)
    on_key[1:] = (path[1:, 0] == key[0]) & (path[1:, 1] == key[1])
    has_key = np.logical_or.accumulate(on_key)  # after arriving at path[t]
    near_lock = np.abs(path[:, 0] - lock[0]) + np.abs(path[:, 1] - lock[1]) == 1
    opens = has_key & near_lock
    opens[0] = False
    unlocked = np.logical_or.accumulate(opens)
    hk0, ul0 = has_key[:-1], unlocked[:-1]  # state at the start of each move
    legal = np.where(ul0[:, None], legal_mask(layout, True)[:, y, x].T, closed)
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

    Rows with no finite Q (goal unreachable) get ``-inf`` everywhere.
    """
    logits = betas[None, :, None, None] * q[:, None, :, :]
    top = logits.max(axis=-1, keepdims=True)
    finite = np.isfinite(top)
    shifted = np.where(finite, logits - np.where(finite, top, 0.0), -np.inf)
    with np.errstate(divide="ignore"):
        lse = np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return np.where(finite, shifted - np.where(finite, lse, 0.0), -np.inf)
