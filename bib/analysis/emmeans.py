"""Estimated marginal means and their pairwise contrasts, as R's emmeans gives them for an lmer fit.

The reference grid is every combination of the levels of the model's fixed-effect factors, with each numeric
predictor at its mean over the fitted rows (emmeans' default). The marginal mean of a cell of ``specs`` is the
prediction ``L beta`` averaged with equal weights over the grid's other factors; its SE is ``sqrt(L V L')``
and its df Satterthwaite's (as lmerTest's, ``emmeans(..., lmer.df = "satterthwaite")``), with a t interval.
``pairs`` takes every difference of two means (the earlier level first, as emmeans: ``A - B``), each with its
own Satterthwaite df, and adjusts the p-values in the family: ``tukey`` (the studentized range with as many
means as the family compares), ``holm``, ``bonferroni`` or ``none``; intervals use Tukey's quantile, or
Bonferroni's for ``holm`` and ``bonferroni``, as emmeans does.

Function terms are evaluated on the grid as the fit evaluated them (``factor(x)``, ``relevel(f, ref = "b")`` and
``C(f, contr.sum)`` are factors of their column; ``log(x)``, ``poly(x, 2)``, ``I(x - mean(x))`` take ``x`` at its
mean and the fit's parameters), as emmeans does; a transformed response adds emmeans' line saying on which scale
the results are.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats

from bib.analysis import rexpr
from bib.analysis.formula import Formula, Variable, is_number, make_variable, term_matrix
from bib.analysis.mixed import _contrast
from bib.errors import BibInputError
from bib.results import Result, markdown_table

if TYPE_CHECKING:
    from bib.analysis.mixed import LmmFit

ADJUSTMENTS = ("tukey", "holm", "bonferroni", "none")


@dataclass
class EmmTable(Result):
    """A table of marginal means or of contrasts, with emmeans' column names and its notes below."""

    table: pd.DataFrame
    notes: list[str]
    name: str = field(default="emmeans")

    def to_json(self) -> dict[str, Any]:
        return {"rows": [{k: (v if isinstance(v, str) else _num(v)) for k, v in r.items()}
                         for r in self.table.to_dict(orient="records")], "notes": list(self.notes)}

    def to_markdown(self) -> str:
        cols = list(self.table.columns)
        rows = [[v if isinstance(v, str) else _cell(c, v) for c, v in zip(cols, r)] for r in self.table.itertuples(index=False)]
        text = markdown_table(cols, rows, align="".join("l" if self.table[c].dtype == object else "r" for c in cols))
        return text + "".join(f"\n\n{n}" for n in self.notes)


def _num(v: Any) -> Any:
    v = float(v)
    return v if math.isfinite(v) else None


def _cell(column: str, v: Any) -> str:
    v = float(v)
    if column == "p.value":
        return f"{v:.4f}" if v >= 1e-4 else "<.0001"
    return f"{v:.2f}" if column == "df" else f"{v:.4f}"


def _resolve(fit: LmmFit, specs: str | list[str]) -> list[str]:
    """The formula variables ``specs`` names (a variable or its column: ``temp`` for ``factor(temp)``)."""
    frame = fit.frame
    f = frame.formula
    fixed = list(dict.fromkeys(v for t in f.terms for v in t))
    by_column = {f.column(v): v for v in fixed}
    out = []
    for s in [specs] if isinstance(specs, str) else list(specs):
        name = s if s in fixed else by_column.get(s)
        if name is None:
            raise BibInputError(f"emmeans: {s!r} is not a fixed-effect variable of {fit.formula} "
                                f"({', '.join(fixed) or 'none'})")
        if not frame.variables[name].is_factor:
            raise BibInputError(f"emmeans: {s} is numeric; marginal means are of factors (a numeric predictor is "
                                "held at its mean)")
        out.append(name)
    if not out or len(set(out)) != len(out):
        raise BibInputError("emmeans: specs must name one or more distinct factors")
    return out


def _grid(fit: LmmFit) -> tuple[pd.DataFrame, dict[str, Variable]]:
    """The reference grid: every combination of the fixed factors' levels, every other column the model reads at
    its mean over the fitted rows; the model's terms are then evaluated on it as the fit evaluated them (as
    emmeans: ``log(x)`` is ``log(mean(x))``, ``poly(x, 2)`` uses the fit's coefficients, ``I(x - mean(x))`` the
    fitted data's mean)."""
    from bib.analysis.effects import new_variables

    frame = fit.frame
    f = frame.formula
    fixed = list(dict.fromkeys(v for t in f.terms for v in t))
    calls = dict(f.calls)
    factors = [v for v in fixed if frame.variables[v].is_factor and v not in calls]
    combos = list(itertools.product(*[range(len(frame.variables[v].levels)) for v in factors])) or [()]
    grid = pd.DataFrame(combos, columns=factors, dtype=np.int64)
    rows = frame.rows if frame.rows is not None else pd.DataFrame()
    newdata = {f.column(v): [frame.variables[v].levels[c] for c in grid[v]] for v in factors}
    for v in fixed:
        if v in factors:
            continue
        read = rexpr.names(calls[v]) if v in calls else [v]
        for column in read:
            if column not in newdata and column in rows.columns:
                newdata[column] = np.full(len(grid), float(pd.to_numeric(rows[column]).mean()))
    variables = new_variables(fit, pd.DataFrame(newdata, index=range(len(grid))), "emmeans", names=fixed)
    return grid, variables


def transformation(formula: Formula) -> tuple[str, str] | None:
    """emmeans' reading of a transformed response: its name for the means' scale and for the contrasts' (the
    functions of the response joined by ``.``, ``I`` as ``identity``; ``log(mu + 1)`` for ``log(y + 1)``, emmeans'
    own reading of the response's text), or ``None``."""
    if formula.response_expr is None:
        return None
    fns: list[str] = []
    stack: list[rexpr.Node] = [formula.response_expr]
    while stack:  # depth first, outer calls first (R's all.vars(functions = TRUE))
        node = stack.pop()
        if isinstance(node, rexpr.Call):
            fns += [] if node.fn in fns else [node.fn]
            stack += list(reversed(node.args))
        elif isinstance(node, rexpr.Paren):
            stack.append(node.inner)
        elif isinstance(node, rexpr.Unary):
            stack.append(node.operand)
        elif isinstance(node, rexpr.BinOp):
            stack += [node.right, node.left]
    if not fns:
        return None
    tran = ".".join("identity" if fn == "I" else fn for fn in fns)
    parts = re.split(r"\(|\)|\+", formula.lhs_text)
    while parts and parts[-1] == "":
        parts.pop()
    offset = parts[2].strip() if len(parts) == 3 and is_number(parts[2].strip()) else None
    return (f"{tran}(mu + {offset})" if offset else tran), tran


def _scale_notes(formula: Formula, contrasts: bool) -> tuple[list[str], list[str]]:
    """emmeans' lines on the scale, before and after the df line: the means ``Results are given on the sqrt (not
    the response) scale.``; contrasts ``Note: contrasts are still on the sqrt scale`` first, or on the log scale
    the ``Results are given on the log ...`` line (a difference of logs is a log ratio)."""
    tran = transformation(formula)
    if tran is None:
        return [], []
    means, base = tran
    if not contrasts:
        return [], [f"Results are given on the {means} (not the response) scale."]
    if base == "log":
        return [], ["Results are given on the log (not the response) scale."]
    return [f"Note: contrasts are still on the {base} scale"], []


def _own_order(fit: LmmFit, name: str) -> list[int]:
    """Per level code of the factor ``name``, its rank in its data column's own level order: emmeans builds its grid
    from the data's columns, so ``factor(x, levels = c(2, 0, 1))`` is listed 0, 1, 2 (the fit's order for a plain
    factor, or without the fitted rows)."""
    frame = fit.frame
    var = frame.variables[name]
    column = frame.formula.column(name)
    if column == name or frame.rows is None or column not in frame.rows.columns:
        return list(range(len(var.levels)))
    own = make_variable(column, frame.rows[column], factor=True).levels
    numeric = frame.rows[column].dtype.kind in "iuf"

    def key(text: str) -> Any:
        return float(text) if numeric and is_number(text) else text
    where = {key(t): i for i, t in enumerate(own)}
    return [where.get(key(t), i) for i, t in enumerate(var.levels)]


def _means(fit: LmmFit, specs: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """The cells of ``specs`` (level labels) and their rows ``L`` of the marginal means."""
    frame = fit.frame
    f = frame.formula
    grid, variables = _grid(fit)
    X, names = term_matrix(f.terms, f.intercept, variables, len(grid))
    position = {n: j for j, n in enumerate(names)}
    X = X[:, [position[n] for n in frame.xnames]]
    cells = grid.groupby(specs, sort=True).indices
    rank = {v: _own_order(fit, v) for v in specs}
    keys = sorted(cells, key=lambda k: tuple(reversed([rank[v][c] for v, c in zip(specs, k if isinstance(k, tuple)
                                                                                  else (k,))])))  # first fastest
    L = np.array([X[cells[k]].mean(axis=0) for k in keys])
    labels = pd.DataFrame([k if isinstance(k, tuple) else (k,) for k in keys], columns=specs)
    for v in specs:
        labels[v] = [frame.variables[v].levels[c] for c in labels[v]]
    labels.columns = [f.column(v) for v in specs]
    return labels, L


def emmeans(fit: LmmFit, specs: str | list[str], *, level: float = 0.95) -> EmmTable:
    """emmeans' ``emmeans(fit, specs)``: the marginal mean of each cell of ``specs`` with SE, Satterthwaite df
    and a ``level`` t interval.

    Raises:
        BibInputError: a spec that is not a factor of the model's fixed effects, or a function term in them.
    """
    names = _resolve(fit, specs)
    labels, L = _means(fit, names)
    rows = [_row(fit, l_row, 1 - level, None) for l_row in L]
    table = pd.concat([labels, pd.DataFrame(rows)[["emmean", "SE", "df", "lower.CL", "upper.CL"]]], axis=1)
    others = [v for v in fit.frame.variables if v not in names and fit.frame.variables[v].is_factor
              and any(v in t for t in fit.frame.formula.terms)]
    notes = [f"Results are averaged over the levels of: {', '.join(fit.frame.formula.column(v) for v in others)}"] if others else []
    before, after = _scale_notes(fit.frame.formula, contrasts=False)
    notes += [*before, "Degrees-of-freedom method: satterthwaite", *after, f"Confidence level used: {level:g}"]
    return EmmTable(table, notes, name="emmeans")


def _row(fit: LmmFit, weights: np.ndarray, alpha: float, quantile: float | None) -> dict[str, float]:
    c = _contrast(weights, fit.coefficients["estimate"].to_numpy(), fit.vcov.to_numpy(), fit._jac, fit._A, alpha)
    q = quantile if quantile is not None else float(stats.t.ppf(1 - alpha / 2, c["df"]))
    return {"emmean": c["estimate"], "estimate": c["estimate"], "SE": c["se"], "df": c["df"], "t.ratio": c["t"],
            "p.value": c["p"], "lower.CL": c["estimate"] - q * c["se"], "upper.CL": c["estimate"] + q * c["se"]}


@functools.lru_cache(maxsize=256)
def _tukey_quantile(level: float, k: int, df: float) -> float:
    """The studentized range's ``level`` quantile (R's ``qtukey``), cached: scipy takes about 0.3 s a call, and
    a family's contrasts share their df to 8 significant digits (the key), which moves the quantile by less
    than 1e-9 relative."""
    return float(stats.studentized_range.ppf(level, k, df))


def _cell_label(labels: pd.DataFrame, i: int) -> str:
    """emmeans' name of a cell: its levels joined by spaces, a number prefixed by its variable (``temp175``,
    ``dgrp0 - dgrp1``)."""
    parts = []
    for col in labels.columns:
        v = str(labels.iloc[i][col])
        parts.append(f"{col}{v}" if is_number(v) else v)
    return " ".join(parts)


def pairs(fit: LmmFit, specs: str | list[str], *, adjust: str = "tukey", level: float = 0.95) -> EmmTable:
    """emmeans' ``pairs(emmeans(fit, specs), adjust=)`` with ``infer = c(TRUE, TRUE)``: every pairwise
    difference of the marginal means, its SE, Satterthwaite df, interval, t ratio and adjusted p-value.

    Raises:
        BibInputError: an adjustment not in :data:`ADJUSTMENTS`, fewer than two means, or a bad spec.
    """
    if adjust not in ADJUSTMENTS:
        raise BibInputError(f"pairs: adjust must be one of {', '.join(ADJUSTMENTS)}, got {adjust!r}")
    names = _resolve(fit, specs)
    labels, L = _means(fit, names)
    k = len(L)
    if k < 2:
        raise BibInputError("pairs: fewer than two marginal means to compare")
    index = list(itertools.combinations(range(k), 2))
    n = len(index)
    rows, names_out = [], []
    for i, j in index:
        w = L[i] - L[j]
        c = _contrast(w, fit.coefficients["estimate"].to_numpy(), fit.vcov.to_numpy(), fit._jac, fit._A, 1 - level)
        if adjust == "tukey":
            q = _tukey_quantile(level, k, float(f"{c['df']:.8g}")) / math.sqrt(2)
            p = float(stats.studentized_range.sf(abs(c["t"]) * math.sqrt(2), k, c["df"]))
        elif adjust in ("holm", "bonferroni"):
            q = float(stats.t.ppf(1 - (1 - level) / (2 * n), c["df"]))
            p = c["p"]
        else:
            q = float(stats.t.ppf(1 - (1 - level) / 2, c["df"]))
            p = c["p"]
        rows.append({"estimate": c["estimate"], "SE": c["se"], "df": c["df"], "lower.CL": c["estimate"] - q * c["se"],
                     "upper.CL": c["estimate"] + q * c["se"], "t.ratio": c["t"], "p.value": p})
        names_out.append(f"{_cell_label(labels, i)} - {_cell_label(labels, j)}")
    p = np.array([r["p.value"] for r in rows])
    if adjust == "bonferroni":
        p = np.minimum(1.0, p * n)
    elif adjust == "holm":
        order = np.argsort(p, kind="stable")
        stepped = np.maximum.accumulate(np.minimum(1.0, p[order] * (n - np.arange(n))))
        p = np.empty(n)
        p[order] = stepped
    for r, v in zip(rows, p):
        r["p.value"] = float(v)
    table = pd.concat([pd.DataFrame({"contrast": names_out}), pd.DataFrame(rows)], axis=1)
    before, after = _scale_notes(fit.frame.formula, contrasts=True)
    notes = [*before, "Degrees-of-freedom method: satterthwaite", *after, f"Confidence level used: {level:g}"]
    if adjust == "tukey":
        notes += [f"Conf-level adjustment: tukey method for comparing a family of {k} estimates",
                  f"P value adjustment: tukey method for comparing a family of {k} estimates"]
    elif adjust != "none":
        notes += [f"Conf-level adjustment: bonferroni method for {n} estimates",
                  f"P value adjustment: {adjust} method for {n} tests"]
    return EmmTable(table, notes, name="pairs")
