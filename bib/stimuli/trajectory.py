"""Continuous agent motion <-> 8-connected grid paths (the geometry behind BIB JSON import).

BIB's recordings store the agent's centre in pixels at every frame; the agent moves in straight
lines at any angle between a few turning points and stops touching its targets. A grid path is
recovered in three steps:

1. :func:`simplify` splits the recorded track into straight runs (Ramer-Douglas-Peucker with a
   tolerance of :data:`STRAIGHT_TOL_PX`: positions are whole pixels, so each recorded point,
   the run's two ends included, is up to sqrt(2)/2 px from where it was, and a point of a
   straight run lies within sqrt(2) px of the line through its recorded ends; anything farther
   is a turn).
2. The caller moves the contact points (where the agent touched the key, the lock and its goal)
   onto the target they touched.
3. :func:`line_cells` turns each straight run into the 8-connected cells it passes: one cell per
   column (or row) of its major axis, so a run between cells ``dx`` and ``dy`` apart takes
   ``max(|dx|, |dy|)`` moves, ``min(|dx|, |dy|)`` of them diagonal, at whatever angle and however
   long the agent dwelt in each cell (the move count of a shortest king-move path). A diagonal
   that would cut the corner of a wall or barrier goes round it through the free orthogonal
   neighbour nearer the line.

Coordinates here are in cells (float): ``x`` from the left, ``y`` from the TOP (as in
``bib.episode/1``); cell ``(cx, cy)`` spans ``[cx, cx + 1) x [cy, cy + 1)``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

import numpy as np

from bib.world.dynamics import AgentState, action_between, move_legal, step
from bib.world.grid import Cell, Layout

STRAIGHT_TOL_PX = 1.5
"""Largest distance (px) of a recorded position from the line through its run's recorded ends
(whole-pixel rounding of the point and of both ends gives at most sqrt(2) = 1.41)."""

Point = tuple[float, float]


def cell_of(p: Point) -> Cell:
    """The cell holding the continuous point ``p``."""
    return (int(math.floor(p[0])), int(math.floor(p[1])))


def simplify(points: np.ndarray, tol: float, keep: Sequence[int] = ()) -> list[int]:
    """Indices of the vertices of a polyline that stays within ``tol`` of ``points``.

    Ramer-Douglas-Peucker on each stretch between the indices in ``keep`` (always vertices, as
    are the first and the last point).
    """
    n = len(points)
    if n <= 2:
        return list(range(n))
    fixed = sorted({0, n - 1, *(int(k) for k in keep if 0 <= k < n)})
    out: list[int] = []
    for a, b in zip(fixed, fixed[1:]):
        out += _rdp(points, a, b, tol)[:-1]
    return out + [n - 1]


def _rdp(p: np.ndarray, a: int, b: int, tol: float) -> list[int]:
    stack = [(a, b)]
    keep = {a, b}
    while stack:
        i, j = stack.pop()
        if j - i < 2:
            continue
        seg = p[i + 1 : j]
        d = p[j] - p[i]
        norm = math.hypot(d[0], d[1])
        if norm == 0.0:
            dist = np.hypot(seg[:, 0] - p[i, 0], seg[:, 1] - p[i, 1])
        else:
            dist = np.abs(d[0] * (seg[:, 1] - p[i, 1]) - d[1] * (seg[:, 0] - p[i, 0])) / norm
        k = int(np.argmax(dist))
        if dist[k] > tol:
            m = i + 1 + k
            keep.add(m)
            stack += [(i, m), (m, j)]
    return sorted(keep)


def line_cells(p: Point, q: Point) -> list[Cell]:
    """The 8-connected cells of the straight run from ``p`` to ``q`` (both included).

    Steps along the axis with the larger cell difference; on the other axis each step takes the
    cell the line crosses at the middle of the step's column (row), kept within one of the
    previous cell and within reach of the end cell.
    """
    c0, c1 = cell_of(p), cell_of(q)
    dx, dy = c1[0] - c0[0], c1[1] - c0[1]
    n = max(abs(dx), abs(dy))
    cells = [c0]
    if n == 0:
        return cells
    major = 0 if abs(dx) >= abs(dy) else 1
    minor = 1 - major
    s = 1 if (dx, dy)[major] > 0 else -1
    span = q[major] - p[major]
    prev = c0[minor]
    for i in range(1, n + 1):
        m = c0[major] + s * i
        if i == n:
            v = c1[minor]
        else:
            t = (m + 0.5 - p[major]) / span if span else 1.0
            v = int(math.floor(p[minor] + t * (q[minor] - p[minor])))
            left = n - i
            v = max(prev - 1, min(prev + 1, v))
            v = max(c1[minor] - left, min(c1[minor] + left, v))
        cell = (m, v) if major == 0 else (v, m)
        cells.append(cell)
        prev = v
    return cells


def _bfs(layout: Layout, state: AgentState, goal: Cell) -> list[Cell] | None:
    """A shortest (in moves) legal path from ``state.cell`` to ``goal`` under ``state``'s lock status."""
    start = state.cell
    prev: dict[Cell, Cell | None] = {start: None}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        if here == goal:
            out = [here]
            while prev[out[-1]] is not None:
                out.append(prev[out[-1]])  # type: ignore[arg-type]
            return out[::-1]
        for dxy in ((0, -1), (1, -1), (1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1)):
            nxt = (here[0] + dxy[0], here[1] + dxy[1])
            if nxt not in prev and move_legal(layout, here, action_between(here, nxt), state.unlocked):  # type: ignore[arg-type]
                prev[nxt] = here
                queue.append(nxt)
    return None


class PathBuilder:
    """Builds a legal path run by run, replaying the key/lock dynamics as it goes."""

    def __init__(self, layout: Layout, start: Cell) -> None:
        self.layout = layout
        self.path: list[Cell] = [start]
        self.events: list[tuple[int, str]] = []
        self.state = AgentState(start)

    def _move(self, nxt: Cell) -> None:
        action = action_between(self.path[-1], nxt)
        self.state, events = step(self.layout, self.state, action)  # type: ignore[arg-type]
        self.path.append(nxt)
        self.events += [(len(self.path) - 1, e) for e in events]

    def _legal(self, a: Cell, b: Cell) -> bool:
        action = action_between(a, b)
        return action is not None and move_legal(self.layout, a, action, self.state.unlocked)

    def run(self, p: Point, q: Point) -> bool:
        """Append the cells of the straight run ``p -> q``; False when no legal route reaches ``q``'s cell.

        The run takes ``max(|dx|, |dy|)`` moves when a legal king-move path of that length lies in
        the corridor of the line (on each column of the major axis, the cell the line crosses or
        one of its two neighbours): of those, the one whose cells are nearest the line. Otherwise
        a diagonal that would cut a corner goes round it, and failing that the shortest legal
        route to the run's end cell is taken.
        """
        cells = line_cells(p, q)
        if cells[0] != self.path[-1]:  # the run starts elsewhere (a contact moved): join it legally
            if not self.goto(cells[0]):
                return False
        best = self._corridor(p, q, cells)
        if best is not None:
            for c in best[1:]:
                self._move(c)
            return True
        for nxt in cells[1:]:
            here = self.path[-1]
            if self._legal(here, nxt):
                self._move(nxt)
                continue
            if here[0] != nxt[0] and here[1] != nxt[1]:  # a diagonal cutting a corner: go round it
                options = sorted(
                    [(nxt[0], here[1]), (here[0], nxt[1])],
                    key=lambda c: _dist_to_line((c[0] + 0.5, c[1] + 0.5), p, q),
                )
                via = next((c for c in options if self._legal(here, c)), None)
                if via is not None and self._legal_after(via, nxt):
                    self._move(via)
                    self._move(nxt)
                    continue
            # the run crosses something it cannot (it only grazes it in the recording): shortest legal detour
            return self.goto(cells[-1])
        return True

    def _corridor(self, p: Point, q: Point, cells: list[Cell]) -> list[Cell] | None:
        """The legal king-move path of ``len(cells) - 1`` moves nearest the line, or None (Viterbi)."""
        n = len(cells) - 1
        if n == 0:
            return cells
        c0, c1 = cells[0], cells[-1]
        major = 0 if abs(c1[0] - c0[0]) >= abs(c1[1] - c0[1]) else 1
        minor = 1 - major
        # layer i: {cell: (cost, previous cell, state)}
        layer: dict[Cell, tuple[float, Cell | None, AgentState]] = {c0: (0.0, None, self.state)}
        layers = [layer]
        for i in range(1, n + 1):
            m = cells[i][major]
            lo, hi = c0[minor] - i, c0[minor] + i
            lo2, hi2 = c1[minor] - (n - i), c1[minor] + (n - i)
            base = cells[i][minor]
            nxt_layer: dict[Cell, tuple[float, Cell | None, AgentState]] = {}
            for dv in (0, -1, 1):
                v = base + dv
                if not (max(lo, lo2) <= v <= min(hi, hi2)):
                    continue
                cell = (m, v) if major == 0 else (v, m)
                d = _dist_to_line((cell[0] + 0.5, cell[1] + 0.5), p, q)
                for prev, (cost, _, st) in layer.items():
                    action = action_between(prev, cell)
                    if action is None or not move_legal(self.layout, prev, action, st.unlocked):
                        continue
                    if cell not in nxt_layer or cost + d < nxt_layer[cell][0] - 1e-12:
                        nxt_layer[cell] = (cost + d, prev, step(self.layout, st, action)[0])
            if not nxt_layer:
                return None
            layer = nxt_layer
            layers.append(layer)
        if c1 not in layer:
            return None
        out = [c1]
        for i in range(n, 0, -1):
            out.append(layers[i][out[-1]][1])  # type: ignore[arg-type]
        return out[::-1]

    def _legal_after(self, via: Cell, nxt: Cell) -> bool:
        action = action_between(via, nxt)
        if action is None:
            return False
        st, _ = step(self.layout, self.state, action_between(self.path[-1], via))  # type: ignore[arg-type]
        return move_legal(self.layout, via, action, st.unlocked)

    def goto(self, cell: Cell) -> bool:
        """Append a shortest legal route to ``cell``; False when there is none."""
        route = _bfs(self.layout, self.state, cell)
        if route is None:
            return False
        for c in route[1:]:
            self._move(c)
        return True


def _dist_to_line(c: Point, p: Point, q: Point) -> float:
    d = (q[0] - p[0], q[1] - p[1])
    norm = math.hypot(*d)
    if norm == 0.0:
        return math.hypot(c[0] - p[0], c[1] - p[1])
    return abs(d[0] * (c[1] - p[1]) - d[1] * (c[0] - p[0])) / norm


def distances_to_track(cells: Sequence[Cell], track: np.ndarray) -> np.ndarray:
    """Distance of each cell's centre from the polyline ``track`` (``[N, 2]``, same units), vectorised."""
    centres = np.asarray(cells, dtype=np.float64) + 0.5
    if len(track) == 1:
        return np.hypot(*(centres - track[0]).T)
    a, b = track[:-1], track[1:]
    ab = b - a
    den = (ab**2).sum(axis=1)
    den[den == 0] = 1.0
    t = ((centres[:, None, :] - a[None]) * ab[None]).sum(axis=2) / den[None]
    t = np.clip(t, 0.0, 1.0)
    nearest = a[None] + t[..., None] * ab[None]
    return np.sqrt(((centres[:, None, :] - nearest) ** 2).sum(axis=2)).min(axis=1)
