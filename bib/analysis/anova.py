"""Tests of a mixed model's terms as R's ``anova`` gives them: likelihood-ratio tests between nested fits
(lme4's ``anova(m0, m1)``) and F tests of each fixed term with Satterthwaite's denominator degrees of
freedom (lmerTest's ``anova(m, type = 3)``, type 1 too).

Likelihood-ratio tests follow ``lme4:::anova.merMod``: REML fits are refitted by ML first (and the table
says so), the models are ordered by their number of parameters, and each row's ``Chisq`` is twice the
gain in log-likelihood over the row above (0 when negative), on the difference in parameters.

F tests follow lmerTest 3.1's ``contestMD``: for a term's contrast matrix ``L`` (``q`` rows), with
``V = Var(beta)`` and the eigen decomposition ``L V L' = P D P'``, ``F = sum_m (P_m' L beta)^2 / d_m / q``;
each of the ``q`` one-degree contrasts ``P_m' L`` gets Satterthwaite's ``nu_m`` (as a t test does), and the
denominator df is ``2 E / (E - q)`` with ``E = sum nu_m / (nu_m - 2)`` (``mean(nu)`` when they are all
equal, 2 when one is at most 2). ``Sum Sq`` and ``Mean Sq`` are ``F q sigma^2`` and ``F sigma^2``.
The contrasts: type 1 are the rows of the unit upper-triangular factor of ``X'X`` (its Doolittle
decomposition) that belong to the term, so each term is adjusted for the terms before it; type 2 adjust a
term for every term but those containing it (lmerTest's ``get_contrasts_type2_unfolded``); type 3 are
lmerTest's ``extract_contrasts_type3`` for treatment coding: the over-parameterised design (every level of
every factor in each term) projected on the model's design, each term's columns orthogonalised against
the columns of the terms that contain it (higher-order terms first), the rows of the model's
coefficients kept. A model with one term gets the type 1 contrasts, as in lmerTest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats

from bib.analysis.formula import Formula, coded_variables, term_matrix
from bib.errors import BibInputError
from bib.results import Result, markdown_table

if TYPE_CHECKING:
    from bib.analysis.mixed import LmmFit

LRT_COLUMNS = ["npar", "AIC", "BIC", "logLik", "deviance", "Chisq", "Df", "Pr(>Chisq)"]
F_COLUMNS = ["Sum Sq", "Mean Sq", "NumDF", "DenDF", "F value", "Pr(>F)"]


@dataclass
class AnovaTable(Result):
    """An analysis-of-variance table: one row per model (likelihood-ratio tests) or per fixed term (F tests),
    R's column names, and the note R prints above it."""

    table: pd.DataFrame
    title: str
    note: str = ""
    name: str = field(default="anova", init=False)

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "note": self.note,
                "rows": [{"row": str(k), **{c: _num(v) for c, v in r.items()}} for k, r in self.table.iterrows()]}

    def to_markdown(self) -> str:
        rows = [[str(k)] + [_cell(c, r[c]) for c in self.table.columns] for k, r in self.table.iterrows()]
        lines = [self.title] + ([self.note] if self.note else []) + [""]
        return "\n".join(lines) + markdown_table(["", *self.table.columns], rows, align="l" + "r" * len(self.table.columns))


def _num(v: Any) -> Any:
    v = float(v)
    return v if math.isfinite(v) else None


def _cell(column: str, v: Any) -> str:
    v = float(v)
    if not math.isfinite(v):
        return ""
    if column.startswith("Pr("):
        return f"{v:.4g}"
    if column in ("npar", "Df", "NumDF"):
        return f"{v:.0f}"
    return f"{v:.4f}"


def anova(*fits: LmmFit, names: list[str] | None = None) -> AnovaTable:
    """lme4's ``anova(m0, m1, ...)``: likelihood-ratio tests between mixed models fitted to the same rows.

    Args:
        fits: two or more fits (:func:`bib.analysis.lmer`) of the same response on the same observations.
        names: a row label per fit (default: each fit's formula, or ``model 1``, ``model 2``, ... when two
            formulas are the same).

    Raises:
        BibInputError: fewer than two fits, or fits of other responses or numbers of observations.
    """
    if len(fits) < 2:
        raise BibInputError("anova: give two or more fits to compare (each fit's F tests: fit.anova())")
    if names is None:
        names = [f.formula for f in fits]
        if len(set(names)) < len(names):
            names = [f"model {i + 1}" for i in range(len(fits))]
    names = list(names)
    if len(names) != len(fits) or len(set(names)) != len(names):
        raise BibInputError("anova: names must give one distinct label per fit")
    n_obs = {f.n_obs for f in fits}
    if len(n_obs) > 1:
        raise BibInputError(f"anova: the models were not all fitted to the same number of observations "
                            f"({', '.join(str(f.n_obs) for f in fits)})")
    responses = {f.frame.formula.lhs_text for f in fits}
    if len(responses) > 1:
        raise BibInputError(f"anova: the models have different responses ({', '.join(sorted(responses))})")
    refitted = any(f.reml for f in fits)
    ml = [f.refit(reml=False) for f in fits]
    order = sorted(range(len(ml)), key=lambda i: ml[i].n_params)
    rows, prev = [], None
    for i in order:
        m = ml[i]
        row = {"npar": m.n_params, "AIC": m.aic, "BIC": m.bic, "logLik": m.loglik, "deviance": m.deviance,
               "Chisq": math.nan, "Df": math.nan, "Pr(>Chisq)": math.nan}
        if prev is not None:
            chisq = max(0.0, 2.0 * (m.loglik - prev.loglik))
            df = m.n_params - prev.n_params
            row.update({"Chisq": chisq, "Df": df,
                        "Pr(>Chisq)": float(stats.chi2.sf(chisq, df)) if df > 0 else math.nan})
        rows.append(row)
        prev = m
    table = pd.DataFrame(rows, index=[names[i] for i in order])[LRT_COLUMNS]
    note = "refitting model(s) with ML (instead of REML)" if refitted else ""
    return AnovaTable(table, "Likelihood-ratio tests of nested models (lme4's anova)", note)


# ---------------------------------------------------------------------------------------------
# F tests of the fixed terms (lmerTest)


def _term_columns(fit: LmmFit, variables: dict[str, Any] | None = None, names: list[str] | None = None) -> dict[str, list[int]]:
    """Per fixed term (R's label, ``a:b``), the columns of a design that belong to it (R's ``assign``; the terms
    are in R's order, by degree, so a term's coding depends only on the terms before it): of the fit's design
    (columns dropped for rank are not there), or of the design of ``variables`` whose columns are ``names``."""
    frame = fit.frame
    f = frame.formula
    n = len(frame.y)
    variables = variables if variables is not None else frame.variables
    _, built = term_matrix(f.terms, f.intercept, variables, n)
    position = {name: j for j, name in enumerate(names if names is not None else frame.xnames)}
    out: dict[str, list[int]] = {}
    begin = 1 if f.intercept else 0
    for i, term in enumerate(f.terms):
        end = term_matrix(f.terms[: i + 1], f.intercept, variables, n)[0].shape[1]
        out[":".join(term)] = [position[c] for c in built[begin:end] if c in position]
        begin = end
    return out


def _contains(inner: tuple[str, ...], outer: tuple[str, ...], numeric: set[str], f: Formula) -> bool:
    """lmerTest's ``term_contain``: ``outer`` has every variable of ``inner`` and more, and the same numeric ones,
    counting only the variables R codes by contrasts in each (``factors[, term] == 1``: :func:`coded_variables`),
    so in a non-hierarchical model (``grp + cond %in% grp``) ``grp`` is not contained in ``cond:grp``."""
    a = set(coded_variables(inner, f.terms, f.intercept))
    b = set(coded_variables(outer, f.terms, f.intercept))
    return a <= b and bool(b - a) and (a & numeric) == (b & numeric)


def _type1(fit: LmmFit, cols: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """Type 1 contrasts: rows of ``t(doolittle(X'X)$L)``, the unit upper-triangular factor of ``X'X``."""
    X = fit.frame.X
    C = np.linalg.cholesky(X.T @ X)
    U = (C / np.diag(C)).T  # unit upper triangular: X'X = U' D U
    return {t: U[c, :] for t, c in cols.items() if c}


def _containing(fit: LmmFit) -> dict[str, list[str]]:
    """lmerTest's ``containment``: per term, the terms that contain it."""
    f = fit.frame.formula
    numeric = {v for v, var in fit.frame.variables.items() if not var.is_factor}
    return {":".join(t): [":".join(o) for o in f.terms if _contains(t, o, numeric, f)] for t in f.terms}


def _type2(fit: LmmFit, cols: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """Type 2 contrasts (lmerTest's ``get_contrasts_type2_unfolded``): a term no other term contains gets its
    marginal contrast (its own coefficients); one that is contained gets the type 1 contrast of the design
    reordered as [the other columns, the term, the terms containing it], so it is adjusted for every term but
    those containing it."""
    X = fit.frame.X
    p = X.shape[1]
    containing = _containing(fit)
    out = {}
    for term, c in cols.items():
        if not c:
            continue
        if not containing[term]:
            out[term] = np.eye(p)[c]
            continue
        later = c + [j for o in containing[term] for j in cols[o]]
        order = [j for j in range(p) if j not in later] + later
        Xn = X[:, order]
        C = np.linalg.cholesky(Xn.T @ Xn)
        U = (C / np.diag(C)).T
        rows = U[[order.index(j) for j in c], :]
        L = np.zeros((len(c), p))
        L[:, order] = rows  # back to the columns' own order
        out[term] = L
    return out


def _type3(fit: LmmFit, cols: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """Type 3 contrasts (lmerTest's ``get_contrasts_type3``): computed for treatment coding
    (``extract_contrasts_type3``) and, where a factor has other contrasts (``sum``), mapped to the fit's coding
    by ``pinv(X_treatment) X``."""
    frame = fit.frame
    f = frame.formula
    n = len(frame.y)
    X, xnames = frame.X, frame.xnames
    coded = any(v.is_factor and v.contrasts != "treatment" for v in frame.variables.values())
    variables = frame.variables
    if coded:
        variables = {k: dc_replace(v, contrasts="treatment") if v.is_factor else v for k, v in variables.items()}
        X, xnames = term_matrix(f.terms, f.intercept, variables, n)
        cols = _term_columns(fit, variables, xnames)
    blocks, rd_names = ([np.ones((n, 1))], ["(Intercept)"]) if f.intercept else ([], [])
    rd_cols: dict[str, list[int]] = {}
    for term in f.terms:
        mat, names = term_matrix((term,), False, variables, n)  # every level of every factor ("~ 0 + term")
        start = sum(b.shape[1] for b in blocks)
        blocks.append(mat)
        rd_names += names
        rd_cols[":".join(term)] = list(range(start, start + mat.shape[1]))
    rdX = np.hstack(blocks)
    L = np.linalg.pinv(X) @ rdX  # p x P: the over-parameterised coefficients in the model's coefficients
    L = _zapsmall(L.T)  # P x p, rows: rdX's columns, columns: X's
    numeric = {v for v, var in frame.variables.items() if not var.is_factor}
    for term in sorted(f.terms, key=len, reverse=True):  # higher-order terms first
        label = ":".join(term)
        containing = [":".join(t) for t in f.terms if _contains(term, t, numeric, f)]
        if not containing or not cols[label]:
            continue
        other = [j for c in containing for j in cols[c]]
        if not other:
            continue
        Y, B = L[:, cols[label]], L[:, other]
        coef, *_ = np.linalg.lstsq(B, Y, rcond=None)
        L[:, cols[label]] = _zapsmall(Y - B @ coef)
    keep = [rd_names.index(name) for name in xnames]
    L = L[keep, :]
    to_fit = _zapsmall(np.linalg.pinv(X) @ frame.X) if coded else None  # lmerTest's map between codings
    out = {}
    for label, c in cols.items():
        Lt = L[:, c].T
        Lt = Lt[np.abs(Lt).sum(axis=1) > 1e-8]
        out[label] = Lt @ to_fit if to_fit is not None else Lt
    return out


def _zapsmall(a: np.ndarray, digits: int = 7) -> np.ndarray:
    """R's ``zapsmall``: round to ``digits`` decimals relative to the largest absolute value."""
    big = float(np.abs(a).max()) if a.size else 0.0
    if big == 0:
        return a
    return np.round(a, max(0, digits - int(math.ceil(math.log10(big)))))


def _f_test(fit: LmmFit, L: np.ndarray) -> dict[str, float]:
    """lmerTest's ``contestMD``: the F statistic of ``L beta = 0`` with Satterthwaite's denominator df."""
    beta = fit.coefficients["estimate"].to_numpy()
    V = fit.vcov.to_numpy()
    d, P = np.linalg.eigh(L @ V @ L.T)
    d, P = d[::-1], P[:, ::-1]  # decreasing, as R's eigen
    tol = max(np.sqrt(np.finfo(float).eps) * d[0], 0.0)
    q = int((d > tol).sum())
    PtL = (P.T @ L)[:q]
    t2 = (PtL @ beta) ** 2 / d[:q]
    F = float(t2.sum() / q)
    if fit._jac is None or fit._A is None:
        nu = np.full(q, math.inf)
    else:
        nu = np.array([2 * d[m] ** 2 / float(g @ fit._A @ g)
                       for m in range(q) for g in [np.array([PtL[m] @ J @ PtL[m] for J in fit._jac])]])
    if q == 1:
        df2 = float(nu[0])
    elif np.all(np.abs(np.diff(nu)) < 1e-8):
        df2 = float(nu.mean())
    elif (nu <= 2).any():
        df2 = 2.0
    else:
        E = float((nu / (nu - 2)).sum())
        df2 = 2 * E / (E - q)
    p = float(stats.f.sf(F, q, df2)) if math.isfinite(df2) else float(stats.chi2.sf(F * q, q))
    ms = F * fit.sigma ** 2
    return {"Sum Sq": ms * q, "Mean Sq": ms, "NumDF": q, "DenDF": df2, "F value": F, "Pr(>F)": p}


def f_tests(fit: LmmFit, type: int = 3) -> AnovaTable:  # noqa: A002 (lmerTest's argument name)
    """lmerTest's ``anova(fit, type = 3)`` (or 1, 2): one F test per fixed term, Satterthwaite's df.

    Raises:
        BibInputError: a type other than 1, 2 or 3, or a fit with no fixed term besides the intercept.
    """
    if type not in (1, 2, 3):
        raise BibInputError(f"anova: type must be 1, 2 or 3, got {type!r}")
    cols = _term_columns(fit)
    if not cols:
        raise BibInputError(f"anova: {fit.formula} has no fixed term to test")
    contrasts = (_type1(fit, cols) if type == 1 or len(cols) == 1 else
                 _type2(fit, cols) if type == 2 else _type3(fit, cols))
    rows = {t: _f_test(fit, L) for t, L in contrasts.items() if len(L)}
    table = pd.DataFrame.from_dict(rows, orient="index")[F_COLUMNS]
    roman = {1: "I", 2: "II", 3: "III"}[type]
    return AnovaTable(table, f"Type {roman} Analysis of Variance Table with Satterthwaite's method", "")
