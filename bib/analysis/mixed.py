"""Linear mixed models as lme4 fits them, with lmerTest's Satterthwaite inference.

The engine is lme4's penalized least squares (Bates, Maechler, Bolker & Walker 2015, J. Stat.
Softw. 67(1), section 3). The random effects are ``b = Lambda_theta u`` with ``u ~ N(0, sigma^2 I)``;
for a given ``theta`` the sparse system

    [Lambda'Z'Z Lambda + I   Lambda'Z'X] [u   ]   [Lambda'Z'y]
    [X'Z Lambda              X'X       ] [beta] = [X'y       ]

is solved, and ``sigma`` and ``beta`` are profiled out of the (REML or ML) deviance, which is then
minimised over ``theta`` with bounds (diagonal elements of each relative covariance factor >= 0)
by BOBYQA with lme4's restarts and convergence check (:mod:`bib.analysis.optimum`). A fit is
*singular* when a diagonal element ends below 1e-4, lme4's ``isSingular`` rule.

The factorization of ``A = Lambda'Z'Z Lambda + I`` uses the structure lme4's fill-reducing ordering
finds: the random-effects term with the most levels comes first, and its block of ``A`` is block
diagonal (each observation belongs to one level), so it is inverted block by block and only the
Schur complement of the other terms (labs, items: a few hundred columns) is factorized, densely
(``numpy``) when it has at most 3,000 columns or is filled in (:func:`dense_schur`), else by a
sparse LDL' with AMD ordering (qdldl,
:class:`SparseCholesky`: symbolic analysis once, numeric refactorisation per theta). The profiled
deviance only needs ``log det A`` and ``A^{-1}`` applied to the ``p + 1`` right-hand sides, which
this gives exactly.

Inference follows lmerTest 3.x: the variance parameters are ``(theta, sigma)``; the Hessian of the
unprofiled deviance in them (numerically, central differences with Richardson extrapolation)
gives their asymptotic covariance ``A = 2 H^{-1}`` (Moore-Penrose where H is singular), the
Jacobian of ``Var(beta) = sigma^2 (R_X'R_X)^{-1}`` gives ``g``, and a contrast ``L beta`` has
Satterthwaite ``df = 2 (L V L')^2 / (g' A g)``. Intervals are Wald intervals with the
Satterthwaite t quantile (lmerTest's ``confint`` in ``contest``); the Wald z p-value is kept as
well and labelled as such.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import linalg, stats
from scipy.linalg import lapack
from threadpoolctl import threadpool_limits

from bib.analysis import rexpr
from bib.analysis.formula import (
    Formula,
    RandomTerm,
    Variable,
    call_variable,
    evaluate_term,
    expand_dot,
    factor_variable,
    group_codes,
    learn_basis,
    make_variable,
    parse_formula,
    term_matrix,
)
from bib.analysis.optimum import SINGULAR_TOL, Optimum, minimise, numeric_hessian, numeric_jacobian
from bib.errors import BibInputError

#: Largest Schur complement factorized densely.
DENSE_MAX = 3000
#: A larger Schur complement is still factorised densely (LAPACK) when at least this share of it
#: is nonzero (crossed participants x items: filled in) and it has at most DENSE_LIMIT columns
#: (12,000: 1.1 GB); a sparse LDL' of a filled-in matrix does the dense work without BLAS.
DENSE_FILL = 0.05
DENSE_LIMIT = 12_000
#: Up to this many random effects the whole PLS system is dense (``Lambda'Z'Z Lambda + I`` by one
#: LAPACK Cholesky): on lme4's small data sets (30-45 random effects) scipy.sparse's per-call
#: overhead made one deviance evaluation cost 2 ms, the dense system costs tens of microseconds.
SMALL_DENSE = 200


def dense_schur(n: int, nnz: int) -> bool:
    """Whether an ``n x n`` Schur complement with ``nnz`` nonzeros is factorised densely."""
    return n <= DENSE_MAX or (n <= DENSE_LIMIT and nnz >= DENSE_FILL * n * n)


@dataclass(frozen=True)
class ReTerm:
    """A random-effects term in the model: its group, columns, levels and where it sits in ``u``."""

    text: str
    group: str
    columns: list[str]
    levels: list[str]
    codes: np.ndarray
    values: np.ndarray  # n x k: the lhs model matrix
    offset: int = 0

    @property
    def k(self) -> int:
        return len(self.columns)

    @property
    def n_levels(self) -> int:
        return len(self.levels)

    @property
    def q(self) -> int:
        return self.k * self.n_levels

    @property
    def n_theta(self) -> int:
        return self.k * (self.k + 1) // 2


#: What to do with a row that has a missing value in a variable of the model (R's ``na.action``).
NA_ACTIONS = ("omit", "fail")


@dataclass
class ModelFrame:
    """The numbers a fit needs: response, fixed-effects matrix, random-effects terms.

    ``variables`` are the data variables the design was built from (factor levels, numeric columns), and
    ``na_omitted`` the labels of the data's rows left out for a missing value (``na_action="omit"``).
    """

    formula: Formula
    y: np.ndarray
    X: np.ndarray
    xnames: list[str]
    terms: list[ReTerm]
    dropped: list[str] = field(default_factory=list)
    variables: dict[str, Variable] = field(default_factory=dict)
    na_omitted: list[Any] = field(default_factory=list)
    #: The offsets' sum per row (already subtracted from ``y``), or ``None``.
    offset: np.ndarray | None = None
    #: Prior weights per row (lme4's ``weights``: the residual variance of a row is ``sigma^2 / w``), or ``None``.
    weights: np.ndarray | None = None
    #: The data-dependent calls' parameters on the data given to the fit (R's ``predvars``): what ``predict`` and
    #: ``emmeans`` evaluate the terms with.
    basis: rexpr.Basis = field(default_factory=rexpr.Basis)
    #: The fitted rows of the data (a reference, not a copy: for a reference grid's covariate means).
    rows: pd.DataFrame | None = None

    @property
    def n(self) -> int:
        return len(self.y)


#: Codings a factor may be given (``lmer(..., contrasts={"recipe": "sum"})``), R's ``contr.treatment`` / ``contr.sum``.
CONTRASTS = ("treatment", "sum")


def _variables(formula: Formula, data: pd.DataFrame, reference: dict[str, str], where: str,
               contrasts: dict[str, str] | None = None, basis: rexpr.Basis | None = None) -> dict[str, Variable]:
    out = {}
    calls = dict(formula.calls)
    for name in formula.variables[1:]:
        if name in calls:
            out[name] = call_variable(name, calls[name], data, where, basis)
            continue
        column = formula.column(name)
        if column not in data.columns:
            raise BibInputError(f"{where}: column {column} (named in the formula) is not in the data")
        ref = reference.get(name, reference.get(column))
        out[name] = (factor_variable(name, data[column], formula.steps(name), reference=ref, where=where)
                     if column != name else make_variable(name, data[column], reference=ref, where=where))
    for name in reference:
        if not formula.uses(name):
            raise BibInputError(f"{where}: reference level given for {name}, which the formula does not use")
    for name, coding in (contrasts or {}).items():
        if coding not in CONTRASTS:
            raise BibInputError(f"{where}: contrasts for {name} must be one of {', '.join(CONTRASTS)}, got {coding!r}")
        var = out.get(name) or next((v for k, v in out.items() if formula.column(k) == name), None)
        if var is None or not var.is_factor:
            raise BibInputError(f"{where}: contrasts given for {name}, which is not a factor of the formula")
        var.contrasts = coding
    return out


def _columns_of(expr: rexpr.Node, data: pd.DataFrame) -> list[str]:
    """The data's columns an expression of a function term names (the column names of its tree)."""
    names = set(rexpr.names(expr))
    return [c for c in data.columns if str(c) in names]


def missing_rows(formula: Formula, data: pd.DataFrame) -> pd.Series:
    """Per row of ``data``, whether a variable of the model is missing there (R's ``NA``: ``None``, ``NaN``,
    ``pd.NA``, ``NaT``) in a column of :func:`missing_columns`: what ``model.frame``'s ``na.omit`` drops."""
    columns = missing_columns(formula, data)
    if not columns:
        return pd.Series(False, index=data.index)
    return data[columns].isna().any(axis=1)


def missing_columns(formula: Formula, data: pd.DataFrame) -> list[str]:
    """The data's columns a model reads: the response, every predictor and grouping column, and the columns
    named inside function terms and offsets."""
    calls = dict(formula.calls)
    cols = list(formula.response_columns)
    for name in formula.variables[1:]:
        cols += _columns_of(calls[name], data) if name in calls else [formula.column(name)]
    for _, expr in formula.offsets:
        cols += _columns_of(expr, data)
    return [c for c in dict.fromkeys(cols) if c in data.columns]


def response_values(formula: Formula, data: pd.DataFrame, where: str, basis: rexpr.Basis | None = None) -> np.ndarray:
    """The response on ``data``: the column, or its transformation (``sqrt(y)``, ``log(y + 1)``, ``I(y^2)``).

    Raises:
        BibInputError: a value that is not finite, naming the first such row and its value (R computes NaN or
            -Inf with a warning and lme4 stops or fits them; bib refuses).
    """
    if formula.response_expr is None:
        y = pd.to_numeric(data[formula.response], errors="coerce").to_numpy(dtype=float)
    else:
        try:
            y = rexpr.evaluate(formula.response_expr, data, basis).astype(float)
        except rexpr.EvalError as exc:
            raise BibInputError(f"{where}: response {formula.lhs_text} cannot be evaluated on the data ({exc})") from None
    bad = ~np.isfinite(y)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        values = ", ".join(f"{c} = {data[c].iloc[first]}" for c in formula.response_columns if c in data.columns)
        fns = rexpr.functions(formula.response_expr) if formula.response_expr is not None else set()
        hint = ("; log() needs values above 0" if fns & {"log", "log2", "log10"} else
                "; sqrt() needs values of at least 0" if "sqrt" in fns else "")
        raise BibInputError(f"{where}: response {formula.lhs_text} is missing or not finite in {int(bad.sum())} rows "
                            f"(first: row {data.index[first]}, where {values}){hint}; R would fit NaN or -Inf with a "
                            "warning, bib refuses")
    return y


def model_frame(formula: Formula, data: pd.DataFrame, *, reference: dict[str, str] | None = None,
                where: str = "model.formula", na_action: str = "omit", weights: Any = None,
                contrasts: dict[str, str] | None = None, basis_data: pd.DataFrame | None = None) -> ModelFrame:
    """Build ``y``, ``X`` and the random-effects terms of ``formula`` on ``data``.

    Rows with a missing value (``NaN``, ``None``, ``pd.NA``) in any variable of the model, or in ``weights``,
    are left out (``na_action="omit"``, lme4's default ``na.omit``; their labels are in ``na_omitted``) or
    refused (``"fail"``, R's ``na.fail``). A missing value never becomes a factor level. ``weights`` (a column
    name or one positive number per row) are lme4's prior weights.

    Raises:
        BibInputError: a column the formula names is missing, no rows are left, a value is missing
            (``na_action="fail"``) or not finite, a grouping factor has one level (or as many as there are
            rows), or a random slope does not vary within any level of its group.
    """
    reference = reference or {}
    if na_action not in NA_ACTIONS:
        raise BibInputError(f"{where}: na_action must be one of {', '.join(NA_ACTIONS)}, got {na_action!r}")
    for column in formula.response_columns:
        if column not in data.columns:
            raise BibInputError(f"{where}: response column {column} is not in the data")
    if len(data) == 0:
        raise BibInputError(f"{where}: the data have no rows")
    formula = expand_dot(formula, list(data.columns), [weights] if isinstance(weights, str) else [], where)
    basis = learn_basis(formula, data if basis_data is None else basis_data, where)
    w_all = _weights(weights, data, where)
    missing = missing_rows(formula, data)
    if w_all is not None:
        missing = missing | pd.Series(np.isnan(w_all), index=data.index)
    omitted: list[Any] = []
    if missing.any():
        if na_action == "fail":
            cols = [c for c in missing_columns(formula, data) if data[c].isna().any()]
            first = data.index[missing.to_numpy()][0]
            raise BibInputError(f"{where}: {int(missing.sum())} rows have missing values (in {', '.join(map(str, cols))}; "
                                f"first at row {first}); na_action=\"omit\" leaves them out as lme4 does")
        omitted = list(data.index[missing.to_numpy()])
        data = data.loc[~missing.to_numpy()]
        w_all = w_all[~missing.to_numpy()] if w_all is not None else None
        if len(data) == 0:
            raise BibInputError(f"{where}: no rows are left after leaving out the {len(omitted)} rows with missing values")
    y = response_values(formula, data, where, basis)
    y_offset = None
    for text, expr in formula.offsets:  # lme4 fits y - offset: the same estimates and criterion
        value = evaluate_term(text, expr, data, where, basis).astype(float)
        y = y - value
        y_offset = value if y_offset is None else y_offset + value
    variables = _variables(formula, data, reference, where, contrasts, basis)
    for name, var in variables.items():
        if var.matrix is None and not var.is_factor and not np.isfinite(var.numeric).all():  # type: ignore[arg-type]
            raise BibInputError(f"{where}: column {name} has missing or non-numeric values")
    _check_fixed_terms(formula, variables, where)
    n = len(y)
    X, xnames = term_matrix(formula.terms, formula.intercept, variables, n)
    X, xnames, dropped = _full_rank(X, xnames)
    terms = []
    for r in formula.random:
        terms.append(_re_term(r, variables, n, where))
    terms.sort(key=lambda t: -t.n_levels)  # lme4 puts the term with most levels first
    offset = 0
    placed = []
    for t in terms:
        placed.append(ReTerm(t.text, t.group, t.columns, t.levels, t.codes, t.values, offset))
        offset += t.q
    return ModelFrame(formula, y, X, xnames, placed, dropped, variables, omitted, y_offset, w_all, basis, data)


def _weights(weights: Any, data: pd.DataFrame, where: str) -> np.ndarray | None:
    """Prior weights as floats aligned with ``data`` (NaN where missing), checked: finite where given, positive."""
    if weights is None:
        return None
    if isinstance(weights, str):
        if weights not in data.columns:
            raise BibInputError(f"{where}: weights column {weights} is not in the data")
        values = data[weights]
    else:
        values = pd.Series(np.asarray(weights))
        if len(values) != len(data):
            raise BibInputError(f"{where}: weights has {len(values)} values for {len(data)} rows")
    if values.dtype == bool or not (values.dtype.kind in "iuf" or values.isna().all()):
        raise BibInputError(f"{where}: weights must be numbers, got {values.dtype}")
    w = values.to_numpy(dtype=float)
    bad = ~np.isnan(w) & ~(np.isfinite(w) & (w > 0))
    if bad.any():
        raise BibInputError(f"{where}: weights must be positive and finite (row {data.index[int(np.flatnonzero(bad)[0])]}: "
                            f"{float(w[bad][0])!r})")
    return w


def _check_fixed_terms(formula: Formula, variables: dict[str, Variable], where: str) -> None:
    """A fixed term on a factor with one level, or (with an intercept) on a predictor that does not
    vary, is refused with one line naming the term (R: "contrasts can be applied only to factors
    with 2 or more levels"; lme4 would drop the constant column)."""
    for term in formula.terms:
        text = ":".join(term)
        for v in term:
            var = variables[v]
            if var.is_factor and len(var.levels) < 2:
                what = f"factor {v}" if formula.column(v) == v else f"column {formula.column(v)}"
                raise BibInputError(f"{where}: term {text}: {what} has one level ({var.levels[0]}); "
                                    "a fixed effect needs at least two")
            values = var.matrix if var.matrix is not None else None if var.is_factor else var.numeric[:, None]  # type: ignore[index]
            if formula.intercept and values is not None and len(values) > 1 and (np.ptp(values, axis=0) == 0).any():
                raise BibInputError(f"{where}: term {text}: predictor {v} does not vary (every value is "
                                    f"{values[0, int(np.argmin(np.ptp(values, axis=0)))]:g}), so its effect cannot be estimated")


def _re_term(r: RandomTerm, variables: dict[str, Variable], n: int, where: str) -> ReTerm:
    for g in r.group:
        if variables[g].is_factor is False and g in variables:
            pass
    codes, levels = group_codes(r.group, variables)
    if len(levels) < 2:
        raise BibInputError(f"{where}: random term {r.text}: grouping factor {r.group_name} has one level "
                            f"({levels[0] if levels else 'none'}); a variance needs at least two")
    if len(levels) >= n:
        raise BibInputError(f"{where}: random term {r.text}: grouping factor {r.group_name} has {len(levels)} "
                            f"levels for {n} rows (lme4 needs fewer levels than rows)")
    values, names = term_matrix(r.terms, r.intercept, variables, n)
    if values.shape[1] == 0:
        raise BibInputError(f"{where}: random term {r.text} has no columns")
    for j, name in enumerate(names):
        if name == "(Intercept)":
            continue
        col = values[:, j]
        lo = np.full(len(levels), np.inf)
        hi = np.full(len(levels), -np.inf)
        np.minimum.at(lo, codes, col)
        np.maximum.at(hi, codes, col)
        if not (hi - lo > 1e-12).any():
            var = next(v for t in r.terms for v in t if name.startswith(v))
            raise BibInputError(f"{where}: random term {r.text}: {var} does not vary within any level of "
                                f"{r.group_name}, so its slope has no variance to estimate")
    if n <= len(levels) * values.shape[1]:  # lme4's check.nobs.vs.nRE ("stop")
        raise BibInputError(f"{where}: number of observations (={n}) <= number of random effects "
                            f"(={len(levels) * values.shape[1]}) for term {r.text}; the random-effects parameters and "
                            "the residual variance (or scale parameter) are probably unidentifiable")
    return ReTerm(r.text, r.group_name, names, levels, codes, values)


def _full_rank(X: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str], list[str]]:
    """Drop the columns that make ``X`` rank deficient, choosing them as lme4 does (with a message).

    lme4's ``chkRank.drop.cols`` drops the columns R's ``qr(X, tol = 1e-7)`` pivots to the end: R's
    QR (LINPACK ``dqrdc2``, limited pivoting) takes the columns in order and moves one whose part
    not in the span of the columns kept before it is below 1e-7 of its norm. So the later of two
    collinear columns goes (``temp:factor(recipe)C`` on cake, not ``(Intercept)``).
    """
    if X.shape[1] == 0:
        return X, names, []
    norms = np.sqrt((X ** 2).sum(axis=0))
    if (norms > 0).all():
        Xs = X / norms
        ev = np.linalg.eigvalsh(Xs.T @ Xs)
        if ev[0] > 1e-10 * ev[-1]:
            return X, names, []
    keep: list[int] = []
    basis = np.zeros((X.shape[0], 0))
    for j in range(X.shape[1]):
        r = X[:, j].astype(float)
        for _ in range(2):  # Gram-Schmidt twice: orthogonal to rounding
            r = r - basis @ (basis.T @ r)
        size = float(np.sqrt(r @ r))
        if norms[j] == 0 or size < 1e-7 * norms[j]:
            continue
        keep.append(j)
        basis = np.column_stack([basis, r / size])
    if len(keep) == X.shape[1]:
        return X, names, []
    drop = [names[i] for i in range(X.shape[1]) if i not in keep]
    return X[:, keep], [names[i] for i in keep], drop


# ---------------------------------------------------------------------------------------------
# Penalized least squares


@dataclass
class _State:
    logdet_a: float
    rtr: np.ndarray  # R_X'R_X
    beta: np.ndarray
    r2: float
    logdet_r: float = 0.0  # log det R_X'R_X



class SparseCholesky:
    """The Schur complement's factorisation past ``DENSE_MAX`` columns: qdldl's sparse LDL' with AMD
    (fill-reducing) ordering on the upper triangle. The symbolic analysis (ordering, elimination
    tree) is done once, on the first matrix's pattern; each later matrix is refactorised numerically
    on that pattern (``qdldl.Solver.update``). Entries that vanish at some theta stay in the pattern
    as zeros; an entry outside it (never seen in practice) redoes the analysis on the union."""

    def __init__(self) -> None:
        self.solver: Any = None
        self.keys: np.ndarray | None = None
        self.n = 0
        self.analyses = 0

    def factor_solve(self, S: sp.spmatrix, rhs: np.ndarray) -> tuple[float, np.ndarray]:
        """``log det S`` and ``S^{-1} rhs``.

        Raises:
            np.linalg.LinAlgError: ``S`` is not positive definite (a pivot <= 0).
        """
        import qdldl

        U = sp.triu(S, format="csc")
        U.sort_indices()
        n = U.shape[0]
        cols = np.repeat(np.arange(n), np.diff(U.indptr))
        keys = cols.astype(np.int64) * n + U.indices
        if self.keys is None or self.n != n or not np.isin(keys, self.keys, assume_unique=True).all():
            self.keys = np.union1d(keys, self.keys) if self.keys is not None and self.n == n else keys
            self.n = n
            self.solver = None
        data = np.zeros(len(self.keys))
        data[np.searchsorted(self.keys, keys)] = U.data
        rows, cols = self.keys % n, self.keys // n
        M = sp.csc_matrix((data, (rows, cols)), shape=(n, n))
        M.sort_indices()
        if self.solver is None:
            self.solver = qdldl.Solver(M, upper=True)
            self.analyses += 1
        else:
            self.solver.update(M, upper=True)
        d = self.solver.factors()[1]
        if not (d > 0).all():
            raise np.linalg.LinAlgError("the random-effects system is not positive definite")
        rhs = np.asarray(rhs, dtype=float)
        sol = np.column_stack([self.solver.solve(np.ascontiguousarray(rhs[:, j])) for j in range(rhs.shape[1])])
        return float(np.log(d).sum()), sol


class PLS:
    """The penalized least-squares problem of one model frame (lme4's ``merPredD`` in spirit)."""

    def __init__(self, frame: ModelFrame) -> None:
        self.frame = frame
        n, p = frame.X.shape
        self.n, self.p = n, p
        self.q = sum(t.q for t in frame.terms)
        Z = self.z_matrix()
        Xy = np.column_stack([frame.X, frame.y])
        #: ``-sum(log w)``: what prior weights add to the deviance (0 without weights).
        self.log_w = 0.0
        if frame.weights is not None:  # the weighted system: rows of X, y and Z times sqrt(w)
            sw = np.sqrt(frame.weights)
            Z = (sp.diags(sw) @ Z).tocsc()
            Xy = Xy * sw[:, None]
            self.log_w = -float(np.log(frame.weights).sum())
        self.ZtZ = (Z.T @ Z).tocsc()
        self.ZtXy = np.asarray(Z.T @ Xy)
        self.XytXy = Xy.T @ Xy
        # Lambda's pattern: lower-triangular k x k per level, theta in column-major lower-triangle order.
        lr, lc, li, lower, scale = [], [], [], [], []
        base = 0
        for t in frame.terms:
            idx = 0
            rms = np.sqrt((t.values ** 2).mean(axis=0))
            for c in range(t.k):
                for r in range(c, t.k):
                    lr.append(t.offset + np.arange(t.n_levels) * t.k + r)
                    lc.append(t.offset + np.arange(t.n_levels) * t.k + c)
                    li.append(np.full(t.n_levels, base + idx))
                    lower.append(0.0 if r == c else -np.inf)
                    # theta's natural unit: 1 / the column's size where that is far from 1 (lme4's
                    # badly scaled predictors), else 1.
                    scale.append(1.0 / rms[r] if 0 < rms[r] and not 1e-3 <= rms[r] <= 1e3 else 1.0)
                    idx += 1
            base += t.n_theta
        self.n_theta = base
        self.lower = np.array(lower)
        #: Per coordinate of theta, its natural unit (1 unless a random-effect column is badly scaled).
        self.theta_scale = np.array(scale)
        self._lr = np.concatenate(lr) if lr else np.zeros(0, int)
        self._lc = np.concatenate(lc) if lc else np.zeros(0, int)
        self._li = np.concatenate(li) if li else np.zeros(0, int)
        first = frame.terms[0]
        self.q1, self.k1 = first.q, first.k
        self._sparse = SparseCholesky()
        self.evaluations = 0
        self._vp_states: dict[bytes, _State] = {}
        self._ztz_dense = self.ZtZ.toarray() if self.q <= SMALL_DENSE else None
        # Intercept-only terms (every k = 1): Lambda is diagonal and A's pattern is fixed.
        self.diagonal = all(t.k == 1 for t in frame.terms)
        if self.diagonal:
            q1 = self.q1
            self._tidx = np.concatenate([np.full(t.q, i) for i, t in enumerate(frame.terms)])
            self._c11 = self.ZtZ.diagonal()[:q1]
            csr = self.ZtZ.tocsr()
            self._c21 = csr[q1:, :q1].tocsr()
            c22 = csr[q1:, q1:]
            n2 = self.q - q1
            nnz = n2 if n2 <= DENSE_MAX else (abs(c22) + abs(self._c21) @ abs(self._c21).T).nnz
            self._c22 = c22.toarray() if dense_schur(n2, nnz) else c22.tocsc()

    def z_matrix(self) -> sp.csc_matrix:
        """The random-effects model matrix ``Z`` (``n x q``; not kept: rebuilt on each call)."""
        rows, cols, vals = [], [], []
        for t in self.frame.terms:
            for j in range(t.k):
                rows.append(np.arange(self.n))
                cols.append(t.offset + t.codes * t.k + j)
                vals.append(t.values[:, j])
        return sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(self.n, self.q))

    def theta_start(self) -> np.ndarray:
        """lme4's start: 1 on the diagonals, 0 off them (in ``theta_scale`` units)."""
        return np.where(self.lower == 0.0, self.theta_scale, 0.0)

    def lam(self, theta: np.ndarray) -> sp.csc_matrix:
        """``Lambda_theta`` as a sparse matrix."""
        return sp.csc_matrix((theta[self._li], (self._lr, self._lc)), shape=(self.q, self.q))

    def solve(self, theta: np.ndarray) -> _State:
        """Solve the PLS system at ``theta``: ``log det A``, ``R_X'R_X``, ``beta`` and the penalized RSS."""
        self.evaluations += 1
        if self._ztz_dense is not None:
            return self._solve_dense(np.asarray(theta, dtype=float))
        if self.diagonal:
            return self._solve_diagonal(np.asarray(theta, dtype=float))
        lam = self.lam(np.asarray(theta, dtype=float))
        A = (lam.T @ self.ZtZ @ lam).tocsc() + sp.identity(self.q, format="csc")
        B = np.asarray(lam.T @ self.ZtXy)
        q1, k1 = self.q1, self.k1
        # Block-diagonal inverse of the first term's block.
        blocks = np.empty((q1 // k1, k1, k1))
        A11 = A[:q1, :q1]
        for j in range(k1):
            for m in range(k1):
                diag = A11.diagonal(m - j)
                blocks[:, j, m] = diag[np.arange(q1 // k1) * k1 + min(j, m)]
        chol = np.linalg.cholesky(blocks)
        logdet = 2.0 * float(np.log(np.diagonal(chol, axis1=1, axis2=2)).sum())
        binv = np.linalg.inv(blocks)
        base = np.arange(q1 // k1)[:, None, None] * k1
        rr, cc = np.broadcast_arrays(base + np.arange(k1)[None, :, None], base + np.arange(k1)[None, None, :])
        Dinv = sp.csc_matrix((binv.ravel(), (rr.ravel(), cc.ravel())), shape=(q1, q1))
        B1 = B[:q1]
        if q1 < self.q:
            A21 = A[q1:, :q1]
            A22 = A[q1:, q1:]
            A21D = (A21 @ Dinv).tocsc()
            S = A22 - A21D @ A21.T
            rhs2 = B[q1:] - A21D @ B1
            if dense_schur(S.shape[0], S.nnz):
                cS = linalg.cho_factor(S.toarray(), lower=True, check_finite=False)
                logdet += 2.0 * float(np.log(np.diag(cS[0])).sum())
                W2 = linalg.cho_solve(cS, rhs2, check_finite=False)
            else:
                ld, W2 = self._sparse.factor_solve(S, rhs2)
                logdet += ld
            W1 = Dinv @ (B1 - A21.T @ W2)
            M = B1.T @ W1 + B[q1:].T @ W2
        else:
            M = B1.T @ (Dinv @ B1)
        return self._finish(M, logdet)

    def _solve_dense(self, theta: np.ndarray) -> _State:
        """The PLS system of a small model as dense matrices (see ``SMALL_DENSE``)."""
        lam = np.zeros((self.q, self.q))
        lam[self._lr, self._lc] = theta[self._li]
        A = lam.T @ self._ztz_dense @ lam
        A.flat[:: self.q + 1] += 1.0
        L, info = lapack.dpotrf(A, lower=1, clean=0)  # LAPACK directly: scipy's wrappers cost more than q = 36
        if info != 0:
            raise np.linalg.LinAlgError("Lambda'Z'Z Lambda + I is not positive definite")
        B = lam.T @ self.ZtXy
        W, _ = lapack.dpotrs(L, B, lower=1)
        return self._finish(B.T @ W, 2.0 * float(np.log(L.diagonal()).sum()))

    def _solve_diagonal(self, theta: np.ndarray) -> _State:
        q1 = self.q1
        lam = theta[self._tidx]
        t1 = theta[0]
        d1 = t1 * t1 * self._c11 + 1.0
        logdet = float(np.log(d1).sum())
        B1 = t1 * self.ZtXy[:q1]
        if q1 == self.q:
            return self._finish(B1.T @ (B1 / d1[:, None]), logdet)
        lam2 = lam[q1:]
        B2 = lam2[:, None] * self.ZtXy[q1:]
        w = (t1 * t1) / d1
        G = self._c21.multiply(w[None, :]).tocsr() @ self._c21.T
        if isinstance(self._c22, np.ndarray):
            S = lam2[:, None] * (self._c22 - G.toarray()) * lam2[None, :]
            S[np.diag_indices_from(S)] += 1.0
        else:
            S = (sp.diags(lam2) @ (self._c22 - G) @ sp.diags(lam2) + sp.identity(len(lam2))).tocsc()
        A21 = self._c21.multiply((t1 * lam2)[:, None]).tocsr()
        rhs2 = B2 - A21 @ (B1 / d1[:, None])
        if isinstance(S, np.ndarray):
            cS = linalg.cho_factor(S, lower=True, check_finite=False)
            logdet += 2.0 * float(np.log(np.diag(cS[0])).sum())
            W2 = linalg.cho_solve(cS, rhs2, check_finite=False)
        else:
            ld, W2 = self._sparse.factor_solve(S, rhs2)
            logdet += ld
        W1 = (B1 - A21.T @ W2) / d1[:, None]
        return self._finish(B1.T @ W1 + B2.T @ W2, logdet)

    def _finish(self, M: np.ndarray, logdet: float) -> _State:
        p = self.p
        G = self.XytXy - M
        rtr = G[:p, :p]
        rhs = G[:p, p]
        logdet_r = 0.0
        if p:
            L, info = lapack.dpotrf(rtr, lower=1, clean=0)
            if info != 0:
                raise np.linalg.LinAlgError("R_X'R_X is not positive definite")
            beta, _ = lapack.dpotrs(L, rhs, lower=1)
            logdet_r = 2.0 * float(np.log(L.diagonal()).sum())
        else:
            beta = np.zeros(0)
        r2 = float(G[p, p] - rhs @ beta)
        return _State(logdet, rtr, beta, max(r2, 1e-300), logdet_r)

    def deviance(self, theta: np.ndarray, reml: bool) -> float:
        """The profiled deviance (``-2 log L`` or the REML criterion) at ``theta``."""
        s = self.solve(theta)
        n, p = self.n, self.p
        if not reml:
            return s.logdet_a + n * (1.0 + math.log(2.0 * math.pi * s.r2 / n)) + self.log_w
        return s.logdet_a + s.logdet_r + (n - p) * (1.0 + math.log(2.0 * math.pi * s.r2 / (n - p))) + self.log_w

    def solve_vp(self, theta: np.ndarray) -> _State:
        """:meth:`solve` for the inference derivatives, remembered per theta: the Hessian's sigma steps and
        joint steps and the Jacobian's steps revisit the thetas of its diagonal steps (MathAchieve: 9 PLS
        solves instead of 41). At most 256 are kept; :meth:`forget_vp` drops them."""
        key = np.asarray(theta, dtype=float).tobytes()
        state = self._vp_states.get(key)
        if state is None:
            if len(self._vp_states) >= 256:  # a profile's optimiser visits thousands of thetas: keep few
                self._vp_states.clear()
            state = self._vp_states[key] = self.solve(theta)
        return state

    def forget_vp(self) -> None:
        """Drop the states :meth:`solve_vp` remembered."""
        self._vp_states.clear()

    def deviance_vp(self, varpar: np.ndarray, reml: bool) -> float:
        """The deviance as a function of ``(theta, sigma)`` (lmerTest's ``devfun_vp``)."""
        theta, sigma2 = varpar[:-1], varpar[-1] ** 2
        s = self.solve_vp(theta)
        dev = s.logdet_a + s.r2 / sigma2 + self.n * math.log(2 * math.pi * sigma2) + self.log_w
        if not reml:
            return dev
        return dev + s.logdet_r - self.p * math.log(2 * math.pi * sigma2)

    def vcov_vp(self, varpar: np.ndarray) -> np.ndarray:
        """``Var(beta) = sigma^2 (R_X'R_X)^{-1}`` at ``(theta, sigma)``."""
        s = self.solve_vp(varpar[:-1])
        return varpar[-1] ** 2 * np.linalg.inv(s.rtr)


@dataclass
class VarComp:
    """One variance component: group, name, variance / SD, and (lme4's ``Corr`` column) its
    correlations with the earlier columns of the same random term."""

    group: str
    name: str
    variance: float
    sd: float
    corr: tuple[float, ...] = ()
    term: str = ""


@dataclass
class LmmFit:
    """A fitted linear mixed model: fixed effects with Satterthwaite inference, variance components.

    ``coefficients`` has one row per fixed effect: ``estimate, se, df, t, p`` (Satterthwaite),
    ``p_wald_z`` (the Wald z p-value) and ``ci_low, ci_high`` (Wald interval with the
    Satterthwaite t quantile at ``1 - alpha``).
    """

    formula: str
    reml: bool
    coefficients: pd.DataFrame
    vcov: pd.DataFrame
    varcomps: list[VarComp]
    theta: np.ndarray
    sigma: float
    deviance: float
    n_obs: int
    n_groups: dict[str, int]
    converged: bool
    singular: bool
    warnings: list[str]
    alpha: float
    seconds: float
    evaluations: int
    random_terms: list[dict[str, Any]] = field(default_factory=list)
    #: Labels of the data's rows left out for a missing value (``na_action="omit"``).
    na_omitted: list[Any] = field(default_factory=list)
    _pls: PLS | None = field(default=None, repr=False)
    #: What :func:`lmer` was called with (the data by reference), for :meth:`update`.
    _call: dict[str, Any] | None = field(default=None, repr=False)
    _vp: np.ndarray | None = field(default=None, repr=False)
    _A: np.ndarray | None = field(default=None, repr=False)
    _jac: list[np.ndarray] | None = field(default=None, repr=False)

    @property
    def reml_criterion(self) -> float | None:
        """lme4's ``REMLcrit``: the minimised REML criterion (``None`` for an ML fit)."""
        return self.deviance if self.reml else None

    @property
    def loglik(self) -> float:
        """lme4's ``logLik``: minus half the REML criterion (REML) or of the deviance (ML)."""
        return -0.5 * self.deviance

    @property
    def n_params(self) -> int:
        """lme4's ``npar`` (the ``df`` of ``logLik``): fixed effects, covariance parameters and the residual SD."""
        return len(self.coefficients) + len(self.theta) + 1

    @property
    def aic(self) -> float:
        """lme4's ``AIC``: ``-2 logLik + 2 npar`` (of the REML criterion for a REML fit, as lme4)."""
        return -2.0 * self.loglik + 2.0 * self.n_params

    @property
    def bic(self) -> float:
        """lme4's ``BIC``: ``-2 logLik + log(n) npar``."""
        return -2.0 * self.loglik + math.log(self.n_obs) * self.n_params

    @property
    def frame(self) -> ModelFrame:
        """The model frame the fit was made on (response, design, random terms, variables)."""
        if self._pls is None:
            raise ValueError("this fit keeps no model frame (it was read back from JSON)")
        return self._pls.frame

    def refit(self, *, reml: bool) -> LmmFit:
        """The same model on the same rows fitted by REML or ML (``self`` when it already is)."""
        if reml == self.reml:
            return self
        return fit_lmm(self.frame, reml=reml, alpha=self.alpha, satterthwaite=self._jac is not None)

    def update(self, formula: str | None = None, **changes: Any) -> LmmFit:
        """R's ``update(fit, formula, ...)``: the same call with a new formula and other arguments changed.

        In ``formula``, ``.`` stands for the fit's own side (``". ~ . + age"``, ``". ~ . - Days"``) and
        ``- (1 | g)`` removes a random term. ``changes`` are :func:`lmer`'s keywords (``reml=False``,
        ``data=``, ``weights=``, ``subset=``, ``na_action=``).

        Raises:
            BibInputError: a fit not made by :func:`lmer`, an unknown keyword, or a bad new formula.
        """
        if self._call is None:
            raise BibInputError("update: this fit was not made by bib.analysis.lmer")
        call = dict(self._call)
        unknown = set(changes) - (set(call) - {"formula"})
        if unknown:
            raise BibInputError(f"update: unknown argument(s) {', '.join(sorted(unknown))} "
                                f"(lmer's: {', '.join(sorted(set(call) - {'formula'}))})")
        call.update(changes)
        old: Formula = call.pop("formula")
        new = old if formula is None else updated_formula(old, formula, call["where"])
        return lmer(new, call.pop("data"), **call)

    def ranef(self) -> dict[str, pd.DataFrame]:
        """lme4's ``ranef``: the conditional modes per grouping factor (:func:`bib.analysis.effects.ranef`)."""
        from bib.analysis.effects import ranef

        return ranef(self)

    def fitted(self) -> np.ndarray:
        """lme4's ``fitted``: ``X beta + Z b`` (plus any offset), one value per observation."""
        from bib.analysis.effects import fitted

        return fitted(self)

    def residuals(self) -> np.ndarray:
        """lme4's ``residuals`` (response residuals): the observed minus the fitted values."""
        from bib.analysis.effects import residuals

        return residuals(self)

    def predict(self, newdata: pd.DataFrame | None = None, *, re: bool = True,
                allow_new_levels: bool = False) -> np.ndarray:
        """lme4's ``predict``: with the random effects (``re=True``, ``re.form = NULL``) or the fixed
        effects alone (``re=False``, ``re.form = NA``), on the fitted rows or on ``newdata``
        (:func:`bib.analysis.effects.predict`)."""
        from bib.analysis.effects import predict

        return predict(self, newdata, re=re, allow_new_levels=allow_new_levels)

    def plot_residuals(self) -> Any:
        """Residuals against fitted values, their normal QQ plot, and a QQ plot of each random effect's
        conditional modes: a matplotlib ``Figure`` (:func:`bib.analysis.effects.plot_residuals`)."""
        from bib.analysis.effects import plot_residuals

        return plot_residuals(self)

    def confint(self, method: str = "profile", *, level: float = 0.95, nsim: int = 500, seed: int = 0) -> Any:
        """lme4's ``confint(fit, method=)``: Wald, profile or parametric-bootstrap intervals of the variance
        components and fixed effects (:mod:`bib.analysis.intervals`)."""
        from bib.analysis.intervals import confint

        return confint(self, method, level=level, nsim=nsim, seed=seed)

    def emmeans(self, specs: str | list[str], *, level: float = 0.95) -> Any:
        """emmeans' ``emmeans(fit, specs)``: marginal means with Satterthwaite df (:mod:`bib.analysis.emmeans`)."""
        from bib.analysis.emmeans import emmeans

        return emmeans(self, specs, level=level)

    def pairs(self, specs: str | list[str], *, adjust: str = "tukey", level: float = 0.95) -> Any:
        """emmeans' ``pairs(emmeans(fit, specs), adjust=)``: every pairwise contrast of the marginal means
        (:func:`bib.analysis.emmeans.pairs`)."""
        from bib.analysis.emmeans import pairs

        return pairs(self, specs, adjust=adjust, level=level)

    def anova(self, type: int = 3) -> Any:  # noqa: A002 (lmerTest's argument name)
        """lmerTest's ``anova(fit, type=)`` (3, 2 or 1): an F test per fixed term, Satterthwaite's denominator df
        (:func:`bib.analysis.anova.f_tests`)."""
        from bib.analysis.anova import f_tests

        return f_tests(self, type=type)

    def contrast(self, weights: dict[str, float], alpha: float | None = None) -> dict[str, float]:
        """Estimate, SE, Satterthwaite df, t, p, Wald-z p and interval of ``sum(w * beta)``."""
        alpha = self.alpha if alpha is None else alpha
        names = list(self.coefficients.index)
        unknown = [k for k in weights if k not in names]
        if unknown:
            raise KeyError(f"not fixed effects of the model: {', '.join(unknown)}")
        L = np.array([weights.get(n, 0.0) for n in names])
        return _contrast(L, self.coefficients["estimate"].to_numpy(), self.vcov.to_numpy(), self._jac, self._A, alpha)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (see docs/analysis.md, "report.json")."""
        return {
            "formula": self.formula,
            "method": "REML" if self.reml else "ML",
            "fixed_effects": [{"term": k, **{c: _num(v) for c, v in row.items()}} for k, row in self.coefficients.iterrows()],
            "random_effects": [{"group": v.group, "name": v.name, "variance": v.variance, "sd": v.sd,
                                "corr": list(v.corr), "term": v.term} for v in self.varcomps],
            "residual_sd": self.sigma,
            "theta": [float(t) for t in self.theta],
            "deviance": self.deviance,
            "reml_criterion": self.reml_criterion,
            "loglik": self.loglik,
            "n_obs": self.n_obs,
            "n_groups": self.n_groups,
            "random_terms": [dict(t) for t in self.random_terms],
            "n_params": self.n_params,
            "aic": self.aic,
            "bic": self.bic,
            "na_omitted": len(self.na_omitted),
            "converged": self.converged,
            "singular": self.singular,
            "warnings": list(self.warnings),
            "inference": "Satterthwaite df (lmerTest); CI: Wald with the Satterthwaite t quantile; p_wald_z: Wald z",
        }

    def to_markdown(self) -> str:
        """The fixed-effects and variance-components tables in Markdown."""
        lines = [f"`{self.formula}` ({'REML' if self.reml else 'ML'}, {self.n_obs} observations; "
                 + ", ".join(f"{g}: {n}" for g, n in self.n_groups.items()) + ")", "",
                 "| term | estimate | SE | df | t | p | 95% CI |", "|---|---|---|---|---|---|---|"]
        for k, r in self.coefficients.iterrows():
            lines.append(f"| {k} | {r['estimate']:.4f} | {r['se']:.4f} | {r['df']:.1f} | {r['t']:.2f} | "
                         f"{format_p(r['p'])} | [{r['ci_low']:.4f}, {r['ci_high']:.4f}] |")
        lines += ["", "| group | name | variance | SD | corr |", "|---|---|---|---|---|"]
        for v in self.varcomps:
            lines.append(f"| {v.group} | {v.name} | {v.variance:.5f} | {v.sd:.4f} | {' '.join(f'{c:.3f}' for c in v.corr)} |")
        lines.append(f"| Residual | | {self.sigma ** 2:.5f} | {self.sigma:.4f} | |")
        crit = f"REML criterion {self.deviance:.4f}" if self.reml else f"deviance {self.deviance:.4f}"
        lines += ["", f"{crit}, logLik {self.loglik:.4f}"]
        return "\n".join(lines)

    def summary(self) -> str:
        """The fit as lmerTest's ``summary()`` prints it: criterion, random effects with
        correlations, observations and groups, fixed effects with SE, Satterthwaite df, t and p."""
        head = ("Linear mixed model fit by REML. t-tests use Satterthwaite's method" if self.reml else
                "Linear mixed model fit by maximum likelihood . t-tests use Satterthwaite's method")
        lines = [head, f"Formula: {self.formula}", ""]
        if self.reml:
            lines.append(f"REML criterion at convergence: {self.deviance:.1f}")
        else:
            lines.append(f"logLik: {self.loglik:.1f}  deviance: {self.deviance:.1f}")
        rows = [["Groups", "Name", "Variance", "Std.Dev.", "Corr"]]
        last = None
        for v in self.varcomps:
            group = v.group if (v.group, v.term) != last else ""
            last = (v.group, v.term)
            rows.append([group, v.name, _g4(v.variance), _g4(v.sd), v.corr])
        rows.append(["Residual", "", _g4(self.sigma ** 2), _g4(self.sigma), ()])
        width = max((len(f"{c:.2f}") for r in rows[1:] for c in r[4]), default=0)  # R: one width for all of Corr
        for r in rows[1:]:
            r[4] = " ".join(f"{c:.2f}".rjust(width) for c in r[4])
        if not any(r[4] for r in rows[1:]):
            rows = [r[:4] for r in rows]
        widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
        lines += ["", "Random effects:"]
        for r in rows:  # names and the Corr column (one 5-wide sub-column per earlier column) left, numbers right
            lines.append(" " + " ".join(c.ljust(w) if j in (0, 1, 4) else c.rjust(w)
                                        for j, (c, w) in enumerate(zip(r, widths))).rstrip())
        groups = "; ".join(f"{g}, {n}" for g, n in self.n_groups.items())
        lines.append(f"Number of obs: {self.n_obs}, groups:  {groups}")
        if self.na_omitted:
            lines.append(f"({len(self.na_omitted)} observations deleted due to missingness)")
        table = [["", "Estimate", "Std. Error", "df", "t value", "Pr(>|t|)"]]
        for k, r in self.coefficients.iterrows():
            table.append([str(k), _g4(r["estimate"]), _g4(r["se"]), _g4(r["df"]), f"{r['t']:.3f}", _p_r(r["p"])])
        widths = [max(len(r[j]) for r in table) for j in range(6)]
        lines += ["", "Fixed effects:"]
        for r in table:
            lines.append(" ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))))
        if self.warnings:
            lines += [""] + [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _g4(v: float) -> str:
    """R's default printing of a number to 4 significant digits (``signif(v, 4)``)."""
    return f"{float(v):.4g}" if math.isfinite(float(v)) else str(float(v))


def _p_r(p: float) -> str:
    """A p-value as R prints it in a coefficient table (``format.pval``, 3 digits; ``< 2e-16``)."""
    if p is None or not math.isfinite(p):
        return "NaN"
    return "< 2e-16" if p < 2.2e-16 else f"{p:.3g}"


def _num(v: Any) -> Any:
    v = float(v)
    return v if math.isfinite(v) else None


def format_p(p: float) -> str:
    """APA-style p: ``< .001``, else three decimals without the leading zero (``.010``)."""
    if p is None or not math.isfinite(p):
        return "nan"
    if p < 0.001:
        return "< .001"
    return f"{p:.3f}".lstrip("0") if p < 1 else "1.000"


def _contrast(L: np.ndarray, beta: np.ndarray, V: np.ndarray, jac: list[np.ndarray] | None, A: np.ndarray | None,
              alpha: float) -> dict[str, float]:
    est = float(L @ beta)
    var = float(L @ V @ L)
    se = math.sqrt(max(var, 0.0))
    if jac is not None and A is not None and var > 0:
        g = np.array([L @ J @ L for J in jac])
        denom = float(g @ A @ g)
        df = 2 * var ** 2 / denom if denom > 0 else math.inf
    else:
        df = math.inf
    t = est / se if se > 0 else math.nan
    p = float(2 * stats.t.sf(abs(t), df)) if math.isfinite(t) else math.nan
    pz = float(2 * stats.norm.sf(abs(t))) if math.isfinite(t) else math.nan
    q = float(stats.t.ppf(1 - alpha / 2, df))
    return {"estimate": est, "se": se, "df": df, "t": t, "p": p, "p_wald_z": pz, "ci_low": est - q * se,
            "ci_high": est + q * se}


def fit_lmm(frame: ModelFrame, *, reml: bool = True, alpha: float = 0.05, satterthwaite: bool = True,
            theta0: np.ndarray | None = None, threads: int | None = 1, at_theta: np.ndarray | None = None) -> LmmFit:
    """Fit the model of ``frame`` by (RE)ML and compute lmerTest's Satterthwaite inference.

    Non-convergence, singular fits and badly scaled predictors are recorded in ``warnings`` (with
    ``converged`` and ``singular``), never raised or silenced. ``threads`` caps the BLAS threads
    during the fit (``threadpoolctl``; default 1, so the numbers are the same on any machine;
    ``None`` leaves them as they are). ``theta0``: where the optimiser starts (lme4's ``start``).
    ``at_theta``: no optimisation; the fit and its inference at this theta (lme4's modular
    ``mkMerMod(..., opt = list(par = theta))``), e.g. to compare with R at R's own optimum; the fit
    says so in its warnings.

    Raises:
        BibInputError: the model has no random term, or its deviance cannot be evaluated at any theta.
    """
    if threads is None:
        return _fit(frame, reml, alpha, satterthwaite, theta0, at_theta)
    with threadpool_limits(limits=threads, user_api="blas"):
        return _fit(frame, reml, alpha, satterthwaite, theta0, at_theta)


def scale_warning(X: np.ndarray, names: list[str], tol: float = 1e3) -> str | None:
    """lme4's ``checkScaleX``: the columns of ``X`` that are not all 0/1 have standard deviations
    more than ``tol`` apart, or one above ``tol`` or below ``1 / tol``."""
    cont = [j for j in range(X.shape[1]) if not np.isin(X[:, j], (0.0, 1.0)).all()]
    if not cont or X.shape[0] < 2:
        return None
    sd = X[:, cont].std(axis=0, ddof=1)
    sd = sd[sd > 0]
    if not sd.size:
        return None
    logsd = np.log(sd)
    if (np.abs(logsd) > math.log(tol)).any() or logsd.max() - logsd.min() > math.log(tol):
        which = ", ".join(f"{names[j]} (SD {s:.3g})" for j, s in zip(cont, X[:, cont].std(axis=0, ddof=1)))
        return f"some predictor variables are on very different scales: consider rescaling ({which})"
    return None


@dataclass(frozen=True)
class SingularCause:
    """Why one column of one random term puts the fit on the boundary: ``kind`` is ``variance`` (estimated as
    0), ``correlation`` (+-1 with ``other``) or ``combination`` (a linear combination of the earlier columns)."""

    term: str
    column: str
    kind: str
    message: str
    other: str = ""


def singular_causes(frame: ModelFrame, theta: np.ndarray, at_zero: np.ndarray) -> list[SingularCause]:
    """Why a fit is singular, term by term: a zero diagonal of a relative covariance factor is a variance
    estimated as 0 when its row of the factor is 0, else the column's random effects are a linear combination
    of those of the columns before it in the term: a correlation of +-1 with one of them, or with several."""
    causes, k0 = [], 0
    for t in frame.terms:
        T = np.zeros((t.k, t.k))
        idx = 0
        for c in range(t.k):
            for r in range(c, t.k):
                T[r, c] = theta[k0 + idx]
                if r == c and at_zero[k0 + idx]:
                    T[r, c] = 0.0
                idx += 1
        zero = [at_zero[k0 + sum(t.k - i for i in range(c))] for c in range(t.k)]
        for j in range(t.k):
            if not zero[j]:
                continue
            name = t.columns[j]
            if np.abs(T[j, :j]).max(initial=0.0) < SINGULAR_TOL:
                causes.append(SingularCause(t.text, name, "variance",
                                            f"the variance of {name} in {t.text} is estimated as 0"))
                continue
            cov = T @ T.T
            sd = np.sqrt(np.diag(cov))
            with np.errstate(invalid="ignore", divide="ignore"):
                corr = [cov[j, i] / (sd[j] * sd[i]) for i in range(j)]
            i = int(np.nanargmax(np.abs(corr)))
            if abs(corr[i]) > 0.99:
                causes.append(SingularCause(t.text, name, "correlation", f"the correlation of {name} with "
                                            f"{t.columns[i]} in {t.text} is estimated as {corr[i]:+.2f}", t.columns[i]))
            else:
                causes.append(SingularCause(t.text, name, "combination", f"the random effects of {name} in {t.text} "
                                            f"are estimated as a linear combination of those of {', '.join(t.columns[:j])} "
                                            "(the term's covariance matrix is singular)"))
        k0 += t.n_theta
    return causes


def at_boundary(pls: PLS, theta: np.ndarray) -> np.ndarray:
    """Per coordinate of ``theta``, whether it is a diagonal of a relative covariance factor estimated as 0
    (below lme4's ``isSingular`` tolerance in the coordinate's unit)."""
    return (pls.lower == 0.0) & (theta < SINGULAR_TOL * pls.theta_scale)


def fit_singular_causes(fit: LmmFit) -> list[SingularCause]:
    """:func:`singular_causes` of a fit (empty when it is not singular or keeps no model frame)."""
    if fit._pls is None:
        return []
    at_zero = at_boundary(fit._pls, fit.theta)
    return singular_causes(fit.frame, fit.theta, at_zero) if at_zero.any() else []


def _fit(frame: ModelFrame, reml: bool, alpha: float, satterthwaite: bool, theta0: np.ndarray | None,
         at_theta: np.ndarray | None = None) -> LmmFit:
    if not frame.terms:
        raise BibInputError(f"{frame.formula.text}: a mixed model needs at least one random term")
    t0 = time.perf_counter()
    pls = PLS(frame)
    messages = [f"fixed-effect model matrix is rank deficient; dropped {', '.join(frame.dropped)}"] if frame.dropped else []
    scaling = scale_warning(frame.X, frame.xnames)
    if scaling:
        messages.append(scaling)
    start = pls.theta_start() if theta0 is None else np.asarray(theta0, dtype=float)
    if at_theta is None:
        opt = minimise(lambda th: pls.deviance(th, reml), start, pls.lower, pls.theta_scale)
    else:
        given = np.atleast_1d(np.asarray(at_theta, dtype=float))
        if given.shape != (pls.n_theta,) or not np.isfinite(given).all() or (given < pls.lower).any():
            raise BibInputError(f"{frame.formula.text}: at_theta needs {pls.n_theta} finite values within the "
                                f"bounds (diagonal elements >= 0), got {given.tolist()}")
        opt = Optimum(given, pls.deviance(given, reml), 1, True, ["not optimised: the fit is at the theta given"])
    theta = opt.theta
    converged = opt.converged
    messages += opt.messages
    if not math.isfinite(opt.deviance):
        raise BibInputError(f"{frame.formula.text}: the model cannot be fitted: {'; '.join(opt.messages)}")
    state = pls.solve(theta)
    n, p = pls.n, pls.p
    sigma = math.sqrt(state.r2 / (n - p if reml else n))
    dev = pls.deviance(theta, reml)
    at_zero = at_boundary(pls, theta)
    singular = bool(at_zero.any())
    if singular:
        messages.append("boundary (singular) fit: " + "; ".join(c.message for c in singular_causes(frame, theta, at_zero)))
    V = sigma ** 2 * np.linalg.inv(state.rtr) if p else np.zeros((0, 0))
    jac = A = None
    vp = np.append(theta, sigma)
    if satterthwaite and p:
        try:
            with np.errstate(all="ignore"):
                units = np.append(pls.theta_scale, sigma)  # sigma's natural size is itself
                H = numeric_hessian(lambda v: pls.deviance_vp(v, reml), vp, units)
                ev, evec = np.linalg.eigh(H)
                jac = numeric_jacobian(pls.vcov_vp, vp, units)
                pls.forget_vp()
        except (np.linalg.LinAlgError, ValueError):
            messages.append("Satterthwaite df not computed: the deviance cannot be evaluated next to the optimum")
        else:
            tol = 1e-8
            if (ev < -tol).any():
                messages.append("the Hessian of the deviance in (theta, sigma) has "
                                f"{int((ev < -tol).sum())} negative eigenvalue(s)")
            pos = ev > tol
            A = 2 * (evec[:, pos] / ev[pos]) @ evec[:, pos].T
    names = frame.xnames
    rows = [_contrast(np.eye(p)[i], state.beta, V, jac, A, alpha) for i in range(p)]
    coef = pd.DataFrame(rows, index=names)[["estimate", "se", "df", "t", "p", "p_wald_z", "ci_low", "ci_high"]]
    varcomps = []
    k0 = 0
    for t in frame.terms:
        m = t.n_theta
        T = np.zeros((t.k, t.k))
        idx = 0
        for c in range(t.k):
            for r in range(c, t.k):
                T[r, c] = theta[k0 + idx]
                idx += 1
        cov = sigma ** 2 * T @ T.T
        sd = np.sqrt(np.maximum(np.diag(cov), 0.0))
        for j, name in enumerate(t.columns):
            corr = tuple(float(cov[j, i] / (sd[j] * sd[i])) if sd[j] > 0 and sd[i] > 0 else math.nan for i in range(j))
            varcomps.append(VarComp(t.group, name, float(cov[j, j]), float(sd[j]), corr, t.text))
        k0 += m
    return LmmFit(
        formula=frame.formula.text,
        reml=reml,
        coefficients=coef,
        vcov=pd.DataFrame(V, index=names, columns=names),
        varcomps=varcomps,
        theta=theta,
        sigma=sigma,
        deviance=dev,
        n_obs=n,
        n_groups={t.group: t.n_levels for t in frame.terms},
        converged=converged,
        singular=singular,
        warnings=messages,
        alpha=alpha,
        seconds=time.perf_counter() - t0,
        evaluations=pls.evaluations,
        random_terms=[{"term": t.text, "group": t.group, "n_groups": t.n_levels, "columns": list(t.columns)}
                      for t in frame.terms],
        na_omitted=list(frame.na_omitted),
        _pls=pls,
        _vp=vp,
        _A=A,
        _jac=jac,
    )


def updated_formula(old: Formula, template: str, where: str = "update") -> Formula:
    """R's ``update.formula``: ``template`` with ``.`` as ``old``'s response (left) or right-hand side (right);
    a ``- (lhs | group)`` removes that random term."""
    if "~" not in template:
        raise BibInputError(f"{where}: a new formula needs '~', got {template!r}")
    lhs, rhs = (part.strip() for part in template.split("~", 1))
    dot = re.compile(r"(?<![\w.])\.(?![\w.])")
    lhs = dot.sub(lambda _: old.lhs_text, lhs)
    old_rhs = old.text.split("~", 1)[1].strip()
    rhs = dot.sub(lambda _: old_rhs, rhs)
    removed: list[str] = []
    for m in re.finditer(r"-\s*(\([^()]*\|[^()]*\))", rhs):
        removed += [r.text for r in parse_formula(f"y ~ {m.group(1)}", where).random]
    rhs = re.sub(r"-\s*\([^()]*\|[^()]*\)", "", rhs)
    f = parse_formula(f"{lhs} ~ {rhs}", where)
    if removed:
        unknown = [r for r in removed if r not in {t.text for t in f.random}]
        if unknown:
            raise BibInputError(f"{where}: cannot remove {', '.join(unknown)}: not a random term of {f.text}")
        f = f.with_random([t for t in f.random if t.text not in removed])
    return f


def lmer(formula: str | Formula, data: pd.DataFrame, *, reml: bool = True, reference: dict[str, str] | None = None,
         alpha: float = 0.05, where: str = "formula", na_action: str = "omit", weights: Any = None,
         subset: Any = None, contrasts: dict[str, str] | None = None, inference: bool = True) -> LmmFit:
    """Fit a linear mixed model as ``lme4::lmer`` with lmerTest's inference.

    Example::

        from bib.analysis import lmer
        fit = lmer("Reaction ~ Days + (Days | Subject)", sleepstudy)
        print(fit.summary())          # lmerTest's layout
        fit.to_json(); fit.to_markdown(); fit.contrast({"Days": 1})

    Args:
        formula: lme4 syntax (see :mod:`bib.analysis.formula`), or a parsed :class:`Formula`.
        data: one row per observation.
        reml: REML (default, as lme4) or ML.
        reference: reference level per factor (default: the first level, sorted).
        alpha: for the intervals in ``coefficients``.
        where: names the formula in error messages.
        na_action: ``"omit"`` (lme4's default) leaves out the rows with a missing value in a variable of
            the model (their labels in ``na_omitted``, their count in ``summary()``); ``"fail"`` refuses them.
        weights: lme4's prior weights: a column name or one positive number per row (a row's residual
            variance is ``sigma^2 / w``).
        subset: one True or False per row: fit the rows marked True (R's ``subset``, as a boolean mask:
            formulas and specs are data, never evaluated).
        contrasts: a factor's coding by name (``{"recipe": "sum"}``: R's ``contr.sum``, columns ``recipe1``,
            ``recipe2``); the default is R's ``contr.treatment``.
        inference: compute lmerTest's Satterthwaite df (default). ``False`` fits as ``lme4::lmer`` alone does
            (``df`` infinite, p-values and intervals from the normal distribution; F tests and emmeans then
            have infinite denominator df).

    Raises:
        BibInputError: a bad formula or column, a grouping factor with one level, a slope with no
            variance, or a deviance that cannot be evaluated anywhere: one line naming the term.
    """
    f = parse_formula(formula, where) if isinstance(formula, str) else formula
    rows, row_weights = data, weights
    if subset is not None:
        mask = np.asarray(subset)
        if mask.dtype != bool or mask.shape != (len(data),):
            raise BibInputError(f"{where}: subset must be one True or False per row of the data ({len(data)}), "
                                f"got {mask.dtype} of shape {mask.shape}")
        rows = data.loc[mask]
        if weights is not None and not isinstance(weights, str):
            if len(np.asarray(weights)) != len(data):
                raise BibInputError(f"{where}: weights has {len(np.asarray(weights))} values for {len(data)} rows")
            row_weights = np.asarray(weights)[mask]
    fit = fit_lmm(model_frame(f, rows, reference=reference, where=where, na_action=na_action, weights=row_weights,
                              contrasts=contrasts, basis_data=data), reml=reml, alpha=alpha, satterthwaite=inference)
    fit._call = {"data": data, "reml": reml, "reference": reference, "alpha": alpha, "where": where,
                 "na_action": na_action, "weights": weights if isinstance(weights, str) or weights is None
                 else np.asarray(weights), "subset": subset, "contrasts": contrasts, "inference": inference,
                 "formula": f}
    return fit
