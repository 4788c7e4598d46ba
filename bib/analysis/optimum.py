"""Minimise a profiled deviance over ``theta`` as lme4 does, and check the optimum as lme4 does.

The optimiser is BOBYQA (Powell's bound-constrained quadratic-model method, NLopt's
``LN_BOBYQA``), lme4's default through ``nloptwrap``, with tighter tolerances than lme4's (so the
optimum is at least as good). A deviance that cannot be evaluated (a factorisation fails, a value
is not finite) counts as ``+inf``: the optimiser never raises, the best finite point is kept and
the failure is reported.

After the optimiser stops, two of lme4's checks run:

- **boundary restarts** (``restart_edge``): a diagonal element of ``theta`` that ended on its
  bound 0 is moved off it; where that lowers the deviance the optimiser restarts from there.
- **convergence** (``checkConv``): the gradient and Hessian of the deviance at the optimum by
  central differences (``deriv12``, step 1e-4) on the coordinates not on the boundary; the
  gradient scaled by the Cholesky factor of the Hessian (``solve(chol(H), g)``), and
  ``max(pmin(|scaled|, |g|)) < 0.002``. A failed check is not yet a failure: the optimiser
  restarts from the optimum and the check is repeated; only a second failure is reported as
  non-convergence, with the gradient and what was tried.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import nlopt
import numpy as np

#: lme4's ``isSingular`` tolerance on the diagonal of the relative covariance factors.
SINGULAR_TOL = 1e-4
#: lme4's ``check.conv.grad`` tolerance.
GRAD_TOL = 2e-3
#: lme4's ``deriv12`` step.
DERIV_STEP = 1e-4
#: Relative and absolute tolerances of one BOBYQA run (lme4's nloptwrap: 1e-8 absolute on both).
FTOL_REL = 1e-13
XTOL_ABS = 1e-10
MAXEVAL = 100_000


@dataclass
class Optimum:
    """Where the optimiser ended and what the checks found."""

    theta: np.ndarray
    deviance: float
    evaluations: int
    converged: bool
    messages: list[str] = field(default_factory=list)
    max_grad: float = 0.0


class _Objective:
    """The deviance, with failures as ``+inf``, the number of calls and the best finite point."""

    def __init__(self, fun: Callable[[np.ndarray], float]) -> None:
        self.fun = fun
        self.calls = 0
        self.failures = 0
        self.best_x: np.ndarray | None = None
        self.best_f = math.inf

    def __call__(self, x: np.ndarray) -> float:
        self.calls += 1
        try:
            with np.errstate(all="ignore"):
                f = float(self.fun(np.asarray(x, dtype=float)))
        except (np.linalg.LinAlgError, ValueError, ZeroDivisionError, FloatingPointError):
            f = math.inf
        if not math.isfinite(f):
            self.failures += 1
            return math.inf
        if f < self.best_f:
            self.best_f, self.best_x = f, np.array(x, dtype=float)
        return f


def _bobyqa(obj: _Objective, start: np.ndarray, lower: np.ndarray, scale: np.ndarray,
            step: float | None = None) -> tuple[np.ndarray, float]:
    """One BOBYQA run from ``start``; returns the best point seen (never raises)."""
    m = len(start)
    opt = nlopt.opt(nlopt.LN_BOBYQA, m)
    opt.set_lower_bounds(np.where(np.isfinite(lower), lower, -np.inf))
    opt.set_upper_bounds(np.full(m, np.inf))
    opt.set_ftol_rel(FTOL_REL)
    opt.set_xtol_abs(XTOL_ABS)
    opt.set_maxeval(MAXEVAL)
    # A failure is +inf to the caller; inside BOBYQA's quadratic model a huge finite value is used.
    big = [math.nan]

    def f(x: np.ndarray, grad: np.ndarray) -> float:
        v = obj(x)
        if math.isfinite(v):
            return v
        if not math.isfinite(big[0]):
            big[0] = 1e10 * max(1.0, abs(obj.best_f)) if math.isfinite(obj.best_f) else 1e300
        return big[0]

    opt.set_min_objective(f)
    x0 = np.maximum(np.asarray(start, dtype=float), np.where(np.isfinite(lower), lower, -np.inf))
    opt.set_initial_step(step * scale if step is not None else default_step(x0, lower, scale))
    try:
        opt.optimize(x0)
    except (nlopt.RoundoffLimited, RuntimeError, ValueError):
        pass  # the best point seen is kept
    if obj.best_x is None:
        return x0, math.inf
    return obj.best_x.copy(), obj.best_f


def default_step(x0: np.ndarray, lower: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """BOBYQA's first step per coordinate as lme4 gets it: NLopt's default initial step (nloptr is not
    given one), ``0.75 (x0 - lower)`` off a finite bound, else ``|x0|``, else 1 (``scale`` units where x0 is 0).

    NLopt's ``nlopt_set_default_initial_step``; on the parity suite it takes lme4's path: 143 deviance
    evaluations on Orthodont with lme4's tolerances (lme4: 119 + 19 for its derivative check), against 201 with
    the earlier ``max(0.2 |x0|, 0.1)``."""
    bounded = np.isfinite(lower) & (x0 > lower)
    gap = np.where(bounded, x0 - np.where(np.isfinite(lower), lower, 0.0), 0.0)
    return np.where(bounded, 0.75 * gap, np.where(x0 != 0, np.abs(x0), scale))


def derivatives(fun: Callable[[np.ndarray], float], x: np.ndarray, h: float = DERIV_STEP) -> tuple[np.ndarray, np.ndarray]:
    """lme4's ``deriv12``: gradient and Hessian of ``fun`` at ``x`` by central differences."""
    m = len(x)
    f0 = fun(x)
    g = np.empty(m)
    H = np.empty((m, m))
    for i in range(m):
        e = np.zeros(m)
        e[i] = h
        fp, fm = fun(x + e), fun(x - e)
        g[i] = (fp - fm) / (2 * h)
        H[i, i] = (fp - 2 * f0 + fm) / h ** 2
        for j in range(i):
            d = np.zeros(m)
            d[j] = h
            H[i, j] = H[j, i] = (fun(x + e + d) - fun(x + e - d) - fun(x - e + d) + fun(x - e - d)) / (4 * h * h)
    return g, H


def scaled_gradient(fun: Callable[[np.ndarray], float], theta: np.ndarray, lower: np.ndarray,
                    scale: np.ndarray | None = None) -> tuple[float, int, str]:
    """lme4's convergence measure at ``theta``: ``max(pmin(|solve(chol(H), g)|, |g|))`` on the
    coordinates off the boundary (derivatives in ``theta / scale``), the (0-based) coordinate where
    it is largest, and a problem with the Hessian ("" when none)."""
    scale = np.ones(len(theta)) if scale is None else scale
    free = np.flatnonzero(~((lower == 0.0) & (theta < SINGULAR_TOL * scale)))
    if free.size == 0:
        return 0.0, -1, ""

    def sub(v: np.ndarray) -> float:
        full = theta.copy()
        full[free] = v * scale[free]
        return fun(full)

    g, H = derivatives(sub, theta[free] / scale[free])
    if not (np.isfinite(g).all() and np.isfinite(H).all()):
        return math.inf, -1, "the deviance is not finite next to the optimum"
    try:
        upper = np.linalg.cholesky(H).T  # R's chol(): H = R'R
        scaled = np.linalg.solve(upper, g)
        problem = ""
    except np.linalg.LinAlgError:
        scaled = g
        problem = "the Hessian of the deviance is not positive definite at the optimum (unable to evaluate scaled gradient)"
    mingrad = np.minimum(np.abs(scaled), np.abs(g))
    k = int(np.argmax(mingrad))
    return float(mingrad[k]), int(free[k]), problem


def minimise(fun: Callable[[np.ndarray], float], start: np.ndarray, lower: np.ndarray,
             scale: np.ndarray | None = None) -> Optimum:
    """Minimise ``fun`` over ``theta >= lower`` with BOBYQA, boundary restarts and lme4's check.

    ``scale`` is each coordinate's natural unit (initial steps and boundary probes are multiples of
    it; default 1).
    """
    scale = np.ones(len(start)) if scale is None else np.asarray(scale, dtype=float)
    obj = _Objective(fun)
    x, f = _bobyqa(obj, start, lower, scale)
    messages: list[str] = []
    if not math.isfinite(f):
        return Optimum(x, math.inf, obj.calls, False,
                       [f"the deviance could not be evaluated at any theta tried ({obj.calls} evaluations): "
                        "every factorisation failed"], math.inf)
    x, f = _edge_restarts(obj, x, f, lower, scale)
    grad, k, problem = scaled_gradient(obj, x, lower, scale)
    tried = "BOBYQA"
    if grad > GRAD_TOL or problem:
        # Restart from the optimum (a fresh quadratic model, small steps) before calling it anything.
        x2, f2 = _bobyqa(obj, x, lower, scale, step=1e-3 * max(1.0, float(np.max(np.abs(x / scale)))))
        if f2 <= f:
            x, f = x2, f2
        x, f = _edge_restarts(obj, x, f, lower, scale)
        grad, k, problem = scaled_gradient(obj, x, lower, scale)
        tried = "BOBYQA, then BOBYQA restarted from its optimum"
    converged = grad <= GRAD_TOL and not problem
    if problem:
        messages.append(f"{problem} (after {tried})")
    if grad > GRAD_TOL:
        messages.append(f"model failed to converge with max|grad| = {grad:.6g} (tol = {GRAD_TOL:g}, component {k + 1}) "
                        f"after {tried}, {obj.calls} deviance evaluations")
    if obj.failures:
        messages.append(f"the deviance could not be evaluated at {obj.failures} of {obj.calls} theta values "
                        "(a factorisation failed; counted as an infinite deviance)")
    return Optimum(x, f, obj.calls, converged, messages, grad)


def _edge_restarts(obj: _Objective, x: np.ndarray, f: float, lower: np.ndarray,
                   scale: np.ndarray) -> tuple[np.ndarray, float]:
    """lme4's ``restart_edge``: move each diagonal element on its bound 0 off it and restart where
    that lowers the deviance, until none does."""
    for _ in range(len(x) + 1):
        improved = False
        for i in np.flatnonzero((lower == 0.0) & (x < SINGULAR_TOL * scale)):
            for probe in (1e-3, 0.05, 0.2, 0.5, 1.0, 2.0):
                y = x.copy()
                y[i] = probe * scale[i]
                if obj(y) < f - 1e-9 * max(1.0, abs(f)):
                    x2, f2 = _bobyqa(obj, y, lower, scale)
                    if f2 < f - 1e-12 * max(1.0, abs(f)):
                        x, f, improved = x2, f2, True
                    break
        if not improved:
            break
    return np.where((lower == 0.0) & (x < 0), 0.0, x), f


def numeric_step(x: float, unit: float = 1.0) -> float:
    """The first finite-difference step of the inference derivatives: 0.1 relative, at least 1e-4 ``unit``.

    lmerTest's numDeriv starts at 1e-4 relative (four Richardson steps, as :func:`numeric_hessian`); bib's
    deviance is noisier at that width (at lme4's own theta on the parity suite, the largest relative gap to
    lmerTest's df is 1.96 from 1e-4 and 2.2e-4 from 1e-2, against 8.1e-7 from 0.1), and at scale: on the
    1M-row design (deviance about 2e6) steps of 1e-3 gave Satterthwaite df 31.9 and 12.8 at lme4's own
    (theta, sigma) and 83.5 at bib's optimum, against lmerTest's 34.48 and 14.00; steps of 0.1 give 34.50
    and 14.0006. The floor keeps a small coordinate's step wide enough for that noise: with a floor of
    1e-5 below 0.01, a weighted sleepstudy fit's off-diagonal theta of 0.0033 moved the df by 4e-3 for a
    change of 1e-7 in theta; with 1e-4 ``unit`` (``unit``: the coordinate's natural size, theta's
    ``theta_scale``), by 3e-6."""
    return max(1e-1 * abs(x), 1e-4 * unit)


#: Richardson iterations of the inference derivatives (numDeriv's ``r``; each halves the step, ``v = 2``).
RICHARDSON = 4


def _richardson(values: list[Any]) -> Any:
    """numDeriv's Richardson extrapolation of ``values`` (steps h, h/2, h/4, ...): the first after r-1 rounds."""
    a = list(values)
    for m in range(1, len(a)):
        a = [(a[k + 1] * 4 ** m - a[k]) / (4 ** m - 1) for k in range(len(a) - 1)]
    return a[0]


def numeric_hessian(f: Callable[[np.ndarray], float], x: np.ndarray, units: np.ndarray | None = None) -> np.ndarray:
    """Hessian of ``f`` at ``x`` as numDeriv's ``genD`` computes it (lmerTest's ``hessian``): central
    differences at :data:`RICHARDSON` steps halving from :func:`numeric_step`, Richardson-extrapolated;
    an off-diagonal element from the joint step in both coordinates less the two diagonal terms (``units``:
    each coordinate's natural size, 1 by default)."""
    m = len(x)
    units = np.ones(m) if units is None else units
    h0 = np.array([numeric_step(v, u) for v, u in zip(x, units)])
    f0 = f(x)
    H = np.empty((m, m))
    for i in range(m):
        approx, h = [], h0.copy()
        for _ in range(RICHARDSON):
            e = np.zeros(m)
            e[i] = h[i]
            approx.append((f(x + e) - 2 * f0 + f(x - e)) / h[i] ** 2)
            h = h / 2
        H[i, i] = _richardson(approx)
    for i in range(m):
        for j in range(i):
            approx, h = [], h0.copy()
            for _ in range(RICHARDSON):
                e = np.zeros(m)
                e[i], e[j] = h[i], h[j]
                approx.append((f(x + e) - 2 * f0 + f(x - e) - H[i, i] * h[i] ** 2 - H[j, j] * h[j] ** 2)
                              / (2 * h[i] * h[j]))
                h = h / 2
            H[i, j] = H[j, i] = _richardson(approx)
    return H


def numeric_jacobian(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
                     units: np.ndarray | None = None) -> list[np.ndarray]:
    """Derivatives of a matrix-valued ``f`` in each coordinate as numDeriv's ``jacobian`` (central
    differences at :data:`RICHARDSON` halving steps from :func:`numeric_step`, Richardson-extrapolated)."""
    units = np.ones(len(x)) if units is None else units
    out = []
    for i in range(len(x)):
        approx, step = [], numeric_step(x[i], units[i])
        for _ in range(RICHARDSON):
            e = np.zeros(len(x))
            e[i] = step
            approx.append((f(x + e) - f(x - e)) / (2 * step))
            step /= 2
        out.append(_richardson(approx))
    return out
