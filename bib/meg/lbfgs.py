"""L-BFGS with a strong-Wolfe line search as a generator over float64 numpy vectors, so many runs can share
their evaluations (unknown-utility MEG of many trials in lockstep, :func:`bib.meg.unknown.target_megs`).

The algorithm is torch's ``torch.optim.LBFGS(lr=1, line_search_fn="strong_wolfe")`` (itself minFunc's),
step for step: the same history update, two-loop recursion, first step ``min(1, 1 / |g|_1)``, line search
(bracketing, cubic interpolation, zoom with its 0.1 safeguard and ``tolerance_change = 1e-9``, at most
``max_eval - evaluations so far`` evaluations) and stopping tests. Only the arithmetic is numpy's instead of
torch's, so a run can differ from torch's in the last bits of a dot product and then within the tolerances
(``tests/test_meg.py::test_lbfgs_is_torchs``).
"""

from __future__ import annotations

import math
from collections.abc import Generator

import numpy as np

Steps = Generator[np.ndarray, tuple[float, np.ndarray], np.ndarray]
"""Yields each point to evaluate, is sent ``(f, gradient)`` there, returns the final point."""


def minimise(x0: np.ndarray, max_iter: int, tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
             history_size: int = 100) -> Steps:
    """Minimise ``f`` from ``x0`` (torch's LBFGS defaults; ``max_eval = max_iter * 5 // 4``)."""
    max_eval = max_iter * 5 // 4
    x = np.array(x0, dtype=np.float64)
    loss, g = yield x.copy()
    evals = 1
    if np.abs(g).max() <= tolerance_grad:
        return x
    dirs: list[np.ndarray] = []
    stps: list[np.ndarray] = []
    ro: list[float] = []
    h_diag = 1.0
    d = -g
    t = 1.0
    prev_g = g
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        if n_iter > 1:
            y = g - prev_g
            s = d * t
            ys = float(y @ s)
            if ys > 1e-10:
                if len(dirs) == history_size:
                    dirs.pop(0)
                    stps.pop(0)
                    ro.pop(0)
                dirs.append(y)
                stps.append(s)
                ro.append(1.0 / ys)
                h_diag = ys / float(y @ y)
            q = -g
            al = [0.0] * len(dirs)
            for i in range(len(dirs) - 1, -1, -1):
                al[i] = float(stps[i] @ q) * ro[i]
                q = q - al[i] * dirs[i]
            d = q * h_diag
            for i in range(len(dirs)):
                be_i = float(dirs[i] @ d) * ro[i]
                d = d + (al[i] - be_i) * stps[i]
        prev_g, prev_loss = g, loss
        t = min(1.0, 1.0 / float(np.abs(g).sum())) if n_iter == 1 else 1.0
        gtd = float(g @ d)
        if gtd > -tolerance_change:
            break
        loss, g, t, ls_evals = yield from _strong_wolfe(x, t, d, loss, g, gtd, max_ls=max_eval - evals)
        x = x + t * d
        evals += ls_evals
        if n_iter == max_iter or evals >= max_eval or np.abs(g).max() <= tolerance_grad:
            break
        if np.abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
            break
    return x


def _cubic_interpolate(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                       bounds: tuple[float, float] | None = None) -> float:
    """The minimiser of the cubic through two points with their derivatives, within ``bounds``."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, lo), hi)
    return (lo + hi) / 2.0


def _strong_wolfe(x: np.ndarray, t: float, d: np.ndarray, f: float, g: np.ndarray, gtd: float, c1: float = 1e-4,
                  c2: float = 0.9, tolerance_change: float = 1e-9, max_ls: int = 25,
                  ) -> Generator[np.ndarray, tuple[float, np.ndarray], tuple[float, np.ndarray, float, int]]:
    """The line search along ``d`` from ``x``: returns ``(f, g, t, evaluations)`` at the step ``t`` it accepts."""
    d_norm = float(np.abs(d).max())
    f_new, g_new = yield x + t * d
    evals = 1
    gtd_new = float(g_new @ d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    bracket: list[float] = []
    bracket_f: list[float] = []
    bracket_g: list[np.ndarray] = []
    bracket_gtd: list[float] = []
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f, bracket_g, bracket_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f, bracket_g, bracket_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = yield x + t * d
        evals += 1
        gtd_new = float(g_new @ d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]
    insufficient = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        top, bottom = max(bracket), min(bracket)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:
            if insufficient or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = yield x + t * d
        evals += 1
        gtd_new = float(g_new @ d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = (
                    bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low])
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals
