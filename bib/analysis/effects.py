"""What a fitted mixed model says about each group and observation, as lme4 gives it: conditional modes of the
random effects (``ranef``), fitted values, residuals, predictions on new data, and the residual plots.

The conditional modes are the solution of the penalized least-squares system at the fit's ``theta`` and
``beta`` (Bates et al. 2015, eq. 11): ``u = (Lambda'Z'W Z Lambda + I)^{-1} Lambda'Z'W (y - X beta)`` (``W``
the prior weights, or I) and
``b = Lambda u``; ``fitted = X beta + Z b`` (plus any offset) and the residuals are ``y - fitted`` (lme4's
response residuals). ``predict`` on new data builds the fixed-effects design with the fit's factor levels
and reference levels, and the function terms with the fit's parameters (``poly``'s coefficients, ``scale``'s
centre and SD, ``mean()`` and ``sd()`` inside ``I()``: all of the data the model was fitted on); a random effect
of a level the fit did not see is refused, or taken as 0 with ``allow_new_levels=True`` (lme4's
``allow.new.levels``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import stats
from scipy.sparse.linalg import spsolve

from bib.analysis.formula import Variable, call_variable, evaluate_term, group_codes, make_variable, term_matrix
from bib.errors import BibInputError

if TYPE_CHECKING:
    from bib.analysis.mixed import LmmFit

def modes(fit: LmmFit) -> np.ndarray:
    """``b``: the conditional modes of every random effect, in the model's order (term by term, level by level,
    the term's columns fastest)."""
    pls = fit._pls
    if pls is None:
        raise ValueError("this fit keeps no model frame (it was read back from JSON)")
    frame = pls.frame
    Z = pls.z_matrix()
    lam = pls.lam(np.asarray(fit.theta, dtype=float))
    beta = fit.coefficients["estimate"].to_numpy()
    r = frame.y - frame.X @ beta
    if frame.weights is not None:  # the weighted system (prior weights)
        sw = np.sqrt(frame.weights)
        Z, r = sp.diags(sw) @ Z, r * sw
    ZL = (Z @ lam).tocsc()
    A = (ZL.T @ ZL + sp.identity(pls.q, format="csc")).tocsc()
    u = np.atleast_1d(spsolve(A, ZL.T @ r))
    return np.asarray(lam @ u)


def ranef(fit: LmmFit) -> dict[str, pd.DataFrame]:
    """Per grouping factor, a DataFrame of conditional modes: the levels as the index, one column per random
    coefficient named as lme4 names it (``(Intercept)``, ``Days``); two terms on one factor share its frame."""
    b = modes(fit)
    out: dict[str, pd.DataFrame] = {}
    for t in fit.frame.terms:
        block = b[t.offset: t.offset + t.q].reshape(t.n_levels, t.k)
        df = pd.DataFrame(block, index=pd.Index(t.levels, name=t.group), columns=list(t.columns))
        out[t.group] = df if t.group not in out else out[t.group].join(df, how="outer")
    return out


def fitted(fit: LmmFit) -> np.ndarray:
    """``X beta + Z b`` plus any offset: one value per observation of the fit."""
    frame = fit.frame
    value = frame.X @ fit.coefficients["estimate"].to_numpy() + fit._pls.z_matrix() @ modes(fit)  # type: ignore[union-attr]
    return value + frame.offset if frame.offset is not None else value


def residuals(fit: LmmFit) -> np.ndarray:
    """Response residuals: the observed response (on the formula's scale) minus :func:`fitted`."""
    frame = fit.frame
    observed = frame.y + frame.offset if frame.offset is not None else frame.y
    return observed - fitted(fit)


def new_variables(fit: LmmFit, newdata: pd.DataFrame, where: str, names: list[str] | None = None) -> dict[str, Variable]:
    """The fit's variables (or those in ``names``) evaluated on ``newdata`` as the fit evaluated them (R's
    ``predvars``): numbers as numbers, factors coded with the fit's levels (``-1`` for a level the fit did not
    see), function terms with the fit's parameters (``mean()``, ``sd()``, ``scale()``'s centre and SD,
    ``poly()``'s coefficients: of the data the model was fitted on)."""
    frame = fit.frame
    f = frame.formula
    calls = dict(f.calls)
    out: dict[str, Variable] = {}
    for name, var in frame.variables.items():
        if names is not None and name not in names:
            continue
        if name in calls:
            new = call_variable(name, calls[name], newdata, where, frame.basis)
            if var.is_factor:  # a logical term (I(x > 3)): coded with the fit's levels FALSE, TRUE
                labels = np.asarray(new.levels, dtype=object)[new.codes]
                new = Variable(name, codes=np.array([var.levels.index(v) if v in var.levels else -1 for v in labels],
                                                    dtype=np.int64), levels=list(var.levels), contrasts=var.contrasts)
            out[name] = new
            continue
        column = f.column(name)
        if column not in newdata.columns:
            raise BibInputError(f"{where}: column {column} (a variable of the model) is not in newdata")
        values = newdata[column]
        if values.isna().any():
            raise BibInputError(f"{where}: column {column} has missing values in newdata")
        if not var.is_factor:
            numeric = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
            if not np.isfinite(numeric).all():
                raise BibInputError(f"{where}: column {column} of newdata is not numeric in every row")
            out[name] = Variable(name, numeric=numeric)
            continue
        text = make_variable(name, values, factor=True, where=where)
        labels = np.asarray(text.levels, dtype=object)[text.codes]
        index = {level: i for i, level in enumerate(var.levels)}
        codes = np.array([index.get(str(v), -1) for v in labels], dtype=np.int64)
        out[name] = Variable(name, codes=codes, levels=list(var.levels), contrasts=var.contrasts)
    return out


def predict(fit: LmmFit, newdata: pd.DataFrame | None = None, *, re: bool = True,
            allow_new_levels: bool = False, where: str = "predict") -> np.ndarray:
    """Predictions of ``fit``: ``X beta`` (``re=False``) or ``X beta + Z b`` (``re=True``), plus any offset.

    Raises:
        BibInputError: newdata lacks a variable of the model, has a missing or non-numeric value, a level of
            a fixed factor the fit did not see, a level of a grouping factor the fit did not see (unless
            ``allow_new_levels``).
    """
    if newdata is None:
        if re:
            return fitted(fit)
        frame = fit.frame
        value = frame.X @ fit.coefficients["estimate"].to_numpy()
        return value + frame.offset if frame.offset is not None else value
    frame = fit.frame
    f = frame.formula
    m = len(newdata)
    variables = new_variables(fit, newdata, where)
    fixed_factors = {v for t in f.terms for v in t}
    for name in fixed_factors:
        var = variables[name]
        if var.is_factor and (var.codes < 0).any():  # type: ignore[operator]
            bad = newdata[f.column(name)].astype(str)[var.codes < 0].iloc[0]  # type: ignore[operator]
            raise BibInputError(f"{where}: level {bad!r} of {name} was not in the fitted data "
                                f"(levels: {', '.join(frame.variables[name].levels[:8])})")
    safe = {k: Variable(v.name, v.numeric, np.maximum(v.codes, 0), v.levels, v.matrix, v.suffixes, v.contrasts)
            if v.is_factor else v for k, v in variables.items()}
    X, names = term_matrix(f.terms, f.intercept, safe, m)
    position = {name: j for j, name in enumerate(names)}
    X = X[:, [position[n] for n in frame.xnames]]
    value = X @ fit.coefficients["estimate"].to_numpy()
    for text, expr in f.offsets:
        value = value + evaluate_term(text, expr, newdata, where, frame.basis).astype(float)
    if not re:
        return value
    b = modes(fit)
    random = {r.text: r for r in f.random}
    for t in frame.terms:
        r = random[t.text]
        unseen = np.zeros(m, dtype=bool)
        for g in r.group:
            if variables[g].is_factor:
                unseen |= variables[g].codes < 0  # type: ignore[operator]
        codes, labels = group_codes(r.group, safe)
        index = {level: i for i, level in enumerate(t.levels)}
        level = np.array([index.get(labels[c], -1) for c in codes], dtype=np.int64)
        level[unseen] = -1
        if (level < 0).any() and not allow_new_levels:
            first = int(np.flatnonzero(level < 0)[0])
            raise BibInputError(f"{where}: row {newdata.index[first]} has a level of {t.group} the fit did not see "
                                "(allow_new_levels=True predicts it with its random effects at 0)")
        values, _ = term_matrix(r.terms, r.intercept, safe, m)
        coef = b[t.offset: t.offset + t.q].reshape(t.n_levels, t.k)
        seen = level >= 0
        value[seen] = value[seen] + (values[seen] * coef[level[seen]]).sum(axis=1)
    return value


def plot_residuals(fit: LmmFit) -> Any:
    """Residuals against fitted values, a normal QQ plot of the residuals, and one of each random
    coefficient's conditional modes: a matplotlib ``Figure``."""
    from matplotlib.figure import Figure

    res, fit_values = residuals(fit), fitted(fit)
    effects = [(g, c, df[c].to_numpy()) for g, df in ranef(fit).items() for c in df.columns]
    panels = 2 + len(effects)
    fig = Figure(figsize=(3.2 * panels, 3.0))
    axes = fig.subplots(1, panels, squeeze=False)
    ax = axes[0, 0]
    ax.scatter(fit_values, res, s=8, alpha=0.6)
    ax.axhline(0, color="gray", lw=0.8)
    ax.set(xlabel="fitted", ylabel="residual", title="residuals vs fitted")
    for ax, (title, values) in zip(axes[0, 1:], [("residuals", res)] + [(f"{g}: {c}", v) for g, c, v in effects]):
        (osm, osr), (slope, intercept, _) = stats.probplot(values, dist="norm")
        ax.scatter(osm, osr, s=8, alpha=0.6)
        ax.plot(osm, slope * np.asarray(osm) + intercept, color="gray", lw=0.8)
        ax.set(xlabel="normal quantile", ylabel="sample quantile", title=f"QQ: {title}")
    fig.suptitle(fit.formula, fontsize=8)
    fig.tight_layout()
    return fig
