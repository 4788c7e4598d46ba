"""Confidence intervals of a mixed model's parameters as lme4's ``confint`` gives them: Wald, profile and
parametric bootstrap, for the fixed effects and the variance components.

The parameters are lme4's (``confint(m, oldNames = FALSE)``): per random term, the standard deviation of each
column and the correlation of each pair (``sd_(Intercept)|Subject``, ``cor_Days.(Intercept)|Subject``,
``sd_Days|Subject``, in the order of lme4's ``.sig01``, ``.sig02``, ...), the residual ``sigma``, then the fixed
effects.

- ``Wald``: ``estimate +- z SE`` for the fixed effects (the normal quantile, as lme4), none for the variance
  components.
- ``profile``: as ``lme4::profile`` (which profiles the ML deviance also for a REML fit): for each parameter,
  ``zeta = sign(p - p_hat) sqrt(D(p) - D(p_hat))`` with ``D(p)`` the ML deviance minimised over every other
  parameter (variance components in the sd / correlation scale; a fixed effect enters as an offset), and the
  interval's ends where ``zeta`` is the normal quantile (found by root-finding, where lme4 interpolates a spline
  through its profile). An end beyond a boundary (an sd of 0, a correlation of +-1) is the boundary.
- ``boot``: a parametric bootstrap (lme4's ``bootMer``, ``type = "perc"``): ``nsim`` responses simulated from the
  fit with a seeded ``numpy.random.Generator``, each refitted as the fit was (REML or ML), percentile intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import optimize, stats

from bib.errors import BibInputError
from bib.results import Result, markdown_table

if TYPE_CHECKING:
    from bib.analysis.mixed import LmmFit, ModelFrame

METHODS = ("Wald", "profile", "boot")


@dataclass
class Intervals(Result):
    """A table of intervals: one row per parameter, lme4's column names (``2.5 %``, ``97.5 %``)."""

    table: pd.DataFrame
    method: str
    notes: list[str] = field(default_factory=list)
    name: str = field(default="confint", init=False)

    def to_json(self) -> dict[str, Any]:
        lo, hi = self.table.columns
        return {"method": self.method, "notes": self.notes,
                "rows": [{"parameter": k, "lower": _num(r[lo]), "upper": _num(r[hi])} for k, r in self.table.iterrows()]}

    def to_markdown(self) -> str:
        rows = [[k] + ["" if not math.isfinite(v) else f"{v:.4f}" for v in r] for k, r in self.table.iterrows()]
        text = markdown_table(["parameter", *self.table.columns], rows, align="lrr")
        return f"{self.method} intervals\n\n{text}" + "".join(f"\n\n{n}" for n in self.notes)


def _num(v: Any) -> Any:
    v = float(v)
    return v if math.isfinite(v) else None


# ---------------------------------------------------------------------------------------------
# The sd / correlation scale


def variance_names(frame: ModelFrame) -> list[str]:
    """lme4's names of the variance parameters (``oldNames = FALSE``), in the order of ``theta``, then ``sigma``."""
    names = []
    for t in frame.terms:
        for c in range(t.k):
            for r in range(c, t.k):
                names.append(f"sd_{t.columns[c]}|{t.group}" if r == c else f"cor_{t.columns[r]}.{t.columns[c]}|{t.group}")
    return names + ["sigma"]


def _factor(theta: np.ndarray, k: int) -> np.ndarray:
    T = np.zeros((k, k))
    idx = 0
    for c in range(k):
        for r in range(c, k):
            T[r, c] = theta[idx]
            idx += 1
    return T


def to_sdcor(frame: ModelFrame, theta: np.ndarray, sigma: float) -> np.ndarray:
    """``(theta, sigma)`` in lme4's sd / correlation scale (the order of :func:`variance_names`)."""
    out, k0 = [], 0
    for t in frame.terms:
        cov = sigma ** 2 * (lambda T: T @ T.T)(_factor(theta[k0: k0 + t.n_theta], t.k))
        sd = np.sqrt(np.maximum(np.diag(cov), 0.0))
        for c in range(t.k):
            for r in range(c, t.k):
                out.append(sd[c] if r == c else (cov[r, c] / (sd[r] * sd[c]) if sd[r] > 0 and sd[c] > 0 else 0.0))
        k0 += t.n_theta
    return np.array(out + [sigma])


def from_sdcor(frame: ModelFrame, p: np.ndarray) -> tuple[np.ndarray, float]:
    """The inverse of :func:`to_sdcor`: ``(theta, sigma)``; a correlation matrix that is not positive
    definite gives ``theta`` of NaN."""
    sigma = float(p[-1])
    theta, k0 = [], 0
    for t in frame.terms:
        sd, R = np.zeros(t.k), np.eye(t.k)
        idx = k0
        for c in range(t.k):
            for r in range(c, t.k):
                if r == c:
                    sd[c] = p[idx]
                else:
                    R[r, c] = R[c, r] = p[idx]
                idx += 1
        cov = (sd[:, None] * R * sd[None, :]) / sigma ** 2
        try:
            T = np.linalg.cholesky(cov + 1e-300 * np.eye(t.k)) if t.k > 1 else np.sqrt(cov)
        except np.linalg.LinAlgError:
            T = _semi_cholesky(cov)
        for c in range(t.k):
            for r in range(c, t.k):
                theta.append(T[r, c])
        k0 += t.n_theta
    return np.array(theta), sigma


def _semi_cholesky(cov: np.ndarray) -> np.ndarray:
    """A lower-triangular ``T`` with ``T T' = cov`` for a positive semi-definite ``cov`` (NaN if it is not)."""
    k = len(cov)
    T = np.zeros((k, k))
    for j in range(k):
        d = cov[j, j] - T[j, :j] @ T[j, :j]
        if d < -1e-10 * max(cov[j, j], 1e-300):
            return np.full((k, k), np.nan)
        T[j, j] = math.sqrt(max(d, 0.0))
        for i in range(j + 1, k):
            T[i, j] = (cov[i, j] - T[i, :j] @ T[j, :j]) / T[j, j] if T[j, j] > 0 else 0.0
    return T


def _sdcor_bounds(frame: ModelFrame) -> tuple[np.ndarray, np.ndarray]:
    lower, upper = [], []
    for t in frame.terms:
        for c in range(t.k):
            for r in range(c, t.k):
                lower.append(0.0 if r == c else -1.0)
                upper.append(math.inf if r == c else 1.0)
    return np.array(lower + [1e-10]), np.array(upper + [math.inf])


# ---------------------------------------------------------------------------------------------
# Wald


def wald(fit: LmmFit, level: float) -> pd.DataFrame:
    z = float(stats.norm.ppf(0.5 + level / 2))
    names = variance_names(fit.frame)
    est, se = fit.coefficients["estimate"], fit.coefficients["se"]
    rows = {n: (math.nan, math.nan) for n in names} | {k: (est[k] - z * se[k], est[k] + z * se[k]) for k in est.index}
    return pd.DataFrame.from_dict(rows, orient="index")


# ---------------------------------------------------------------------------------------------
# Profile


def _ml_deviance_sdcor(pls: Any, frame: ModelFrame, p: np.ndarray) -> float:
    theta, sigma = from_sdcor(frame, p)
    if not np.isfinite(theta).all() or sigma <= 0:
        return math.inf
    try:
        return pls.deviance_vp(np.append(theta, sigma), False)
    except np.linalg.LinAlgError:
        return math.inf


def _minimise(f: Any, x0: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[float, np.ndarray]:
    """``min f`` over a box from ``x0`` (NLopt's BOBYQA, as the fit); ``(f, x)``."""
    if len(x0) == 0:
        return float(f(x0)), x0
    import nlopt

    opt = nlopt.opt(nlopt.LN_BOBYQA, len(x0))
    opt.set_lower_bounds(lower)
    opt.set_upper_bounds(upper)
    opt.set_min_objective(lambda x, grad: float(min(f(np.asarray(x)), 1e300)))
    opt.set_xtol_rel(1e-10)
    opt.set_ftol_abs(1e-12)
    opt.set_maxeval(4000)
    step = np.maximum(np.abs(x0) * 0.1, 0.05)
    opt.set_initial_step(np.minimum(step, np.where(np.isfinite(upper - lower), (upper - lower) / 4, step)))
    x0 = np.clip(x0, lower + 1e-12 * (np.abs(lower) + 1), np.where(np.isfinite(upper), upper - 1e-12, upper))
    try:
        x = opt.optimize(x0)
        return float(opt.last_optimum_value()), np.asarray(x)
    except (nlopt.RoundoffLimited, ValueError):
        return float(f(x0)), x0


def _profile_variance(ml: LmmFit, j: int, level: float) -> tuple[float, float]:
    """The ends of the interval of variance parameter ``j`` (sd / correlation scale) from the ML profile."""
    frame, pls = ml.frame, ml._pls
    p_hat = to_sdcor(frame, ml.theta, ml.sigma)
    d_hat = ml.deviance
    lower, upper = _sdcor_bounds(frame)
    others = [i for i in range(len(p_hat)) if i != j]
    z = float(stats.norm.ppf(0.5 + level / 2))
    start = {"x": p_hat[others].copy()}

    def zeta(value: float) -> float:
        def f(x: np.ndarray) -> float:
            p = p_hat.copy()
            p[others] = x
            p[j] = value
            return _ml_deviance_sdcor(pls, frame, p)

        d, x = _minimise(f, start["x"], lower[others], upper[others])
        start["x"] = x
        return math.copysign(math.sqrt(max(d - d_hat, 0.0)), value - p_hat[j])

    ends = []
    for sign in (-1.0, 1.0):
        start["x"] = p_hat[others].copy()
        bound = lower[j] if sign < 0 else upper[j]
        step = max(abs(p_hat[j]) * 0.1, 0.01)
        a = b = p_hat[j]
        found = None
        for _ in range(60):  # walk out until zeta passes the quantile or the bound is reached
            b = a + sign * step
            if (sign < 0 and b <= bound) or (sign > 0 and b >= bound):
                b = bound + (1e-9 if sign < 0 else -1e-9)
                zb = zeta(b)
                found = (a, b) if abs(zb) >= z else None
                if found is None:
                    ends.append(bound if math.isfinite(bound) else math.nan)
                break
            zb = zeta(b)
            if abs(zb) >= z:
                found = (a, b)
                break
            a, step = b, step * 2
        if found is not None:
            g = lambda v: abs(zeta(v)) - z  # noqa: E731
            ends.append(optimize.brentq(g, *sorted(found), xtol=1e-10 * max(1.0, abs(p_hat[j]))))
    return ends[0], ends[1]


def _profile_fixed(ml: LmmFit, name: str, level: float) -> tuple[float, float]:
    """The ends of the interval of fixed effect ``name`` from the ML profile (the effect as an offset)."""
    from bib.analysis.mixed import PLS, fit_lmm

    frame = ml.frame
    j = frame.xnames.index(name)
    keep = [i for i in range(len(frame.xnames)) if i != j]
    b_hat, se = float(ml.coefficients.loc[name, "estimate"]), float(ml.coefficients.loc[name, "se"])
    z = float(stats.norm.ppf(0.5 + level / 2))
    theta = {"x": ml.theta}

    def zeta(b: float) -> float:
        sub = replace(frame, y=frame.y - frame.X[:, j] * b, X=frame.X[:, keep], xnames=[frame.xnames[i] for i in keep])
        if not keep:
            pls = PLS(sub)
            d, x = _minimise(lambda th: pls.deviance(th, False), theta["x"], pls.lower, np.full(len(pls.lower), np.inf))
        else:
            refit = fit_lmm(sub, reml=False, satterthwaite=False, theta0=theta["x"])
            d, x = refit.deviance, refit.theta
        theta["x"] = x
        return math.copysign(math.sqrt(max(d - ml.deviance, 0.0)), b - b_hat)

    ends = []
    for sign in (-1.0, 1.0):
        theta["x"] = ml.theta
        a, b = b_hat, b_hat + sign * z * se
        for _ in range(40):
            if abs(zeta(b)) >= z:
                break
            a, b = b, b + sign * z * se
        ends.append(optimize.brentq(lambda v: abs(zeta(v)) - z, *sorted((a, b)), xtol=1e-10 * max(1.0, abs(b_hat))))
    return ends[0], ends[1]


def profile(fit: LmmFit, level: float) -> pd.DataFrame:
    ml = fit.refit(reml=False)
    names = variance_names(ml.frame)
    rows = {n: _profile_variance(ml, j, level) for j, n in enumerate(names)}
    rows |= {k: _profile_fixed(ml, k, level) for k in ml.coefficients.index}
    return pd.DataFrame.from_dict(rows, orient="index")


# ---------------------------------------------------------------------------------------------
# Parametric bootstrap


def simulate(fit: LmmFit, rng: np.random.Generator) -> np.ndarray:
    """One response drawn from the fitted model: ``X beta + Z b + e`` with ``b = Lambda u``,
    ``u ~ N(0, sigma^2 I)``, ``e ~ N(0, sigma^2 / w)`` (lme4's ``simulate``; ``y`` as the model frame holds it,
    any offset already subtracted)."""
    pls, frame = fit._pls, fit.frame
    u = rng.standard_normal(pls.q) * fit.sigma
    e = rng.standard_normal(pls.n) * fit.sigma
    if frame.weights is not None:
        e = e / np.sqrt(frame.weights)
    y = frame.X @ fit.coefficients["estimate"].to_numpy() + pls.z_matrix() @ (pls.lam(fit.theta) @ u) + e
    return y


def boot(fit: LmmFit, level: float, nsim: int, seed: int) -> tuple[pd.DataFrame, list[str]]:
    from bib.analysis.mixed import fit_lmm

    frame = fit.frame
    rng = np.random.default_rng(seed)
    draws, failed = [], 0
    for _ in range(nsim):
        sub = replace(frame, y=simulate(fit, rng))
        try:
            refit = fit_lmm(sub, reml=fit.reml, satterthwaite=False, theta0=fit.theta)
        except (BibInputError, np.linalg.LinAlgError):
            failed += 1
            continue
        draws.append(np.concatenate([to_sdcor(frame, refit.theta, refit.sigma), refit.coefficients["estimate"].to_numpy()]))
    arr = np.array(draws)
    lo, hi = np.quantile(arr, [0.5 - level / 2, 0.5 + level / 2], axis=0)
    names = variance_names(frame) + list(fit.coefficients.index)
    notes = [f"parametric bootstrap: {len(draws)} refits of {nsim} simulated responses (seed {seed})"]
    if failed:
        notes.append(f"{failed} simulated responses could not be refitted and are left out")
    return pd.DataFrame({"lo": lo, "hi": hi}, index=names), notes


def confint(fit: LmmFit, method: str = "profile", *, level: float = 0.95, nsim: int = 500, seed: int = 0) -> Intervals:
    """lme4's ``confint(fit, method=)``: intervals of the variance components and fixed effects.

    Raises:
        BibInputError: an unknown method, a level outside (0, 1), or ``nsim`` below 10.
    """
    if method not in METHODS:
        raise BibInputError(f"confint: method must be one of {', '.join(METHODS)}, got {method!r}")
    if not 0 < level < 1:
        raise BibInputError(f"confint: level must be between 0 and 1, got {level!r}")
    notes: list[str] = []
    if method == "Wald":
        table = wald(fit, level)
    elif method == "profile":
        table = profile(fit, level)
        if fit.reml:
            notes.append("profiled on the ML deviance, as lme4 does also for a REML fit")
    else:
        if nsim < 10:
            raise BibInputError(f"confint: nsim must be at least 10, got {nsim}")
        table, notes = boot(fit, level, nsim, seed)
    a = (1 - level) / 2
    table.columns = [f"{100 * a:.3g} %", f"{100 * (1 - a):.3g} %"]
    return Intervals(table, method, notes)
