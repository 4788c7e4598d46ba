"""The VOE analysis of a looking-time table: filter, exclusions, per-task and pooled mixed models, a report.

Per task the spec's model (default ``log_lt ~ outcome + (1 | participant)``, plus ``(1 | item)``
when the task shows more than one item per outcome) is fitted by :mod:`bib.analysis.mixed`
(lme4's PLS, REML) through MB1's "fit, check, prune" ladder, and the outcome effect is reported
with lmerTest's Satterthwaite df, the Wald z p-value (labelled), a Wald CI with the Satterthwaite t
quantile, and d_z (mean per-participant difference / its SD) with a noncentral-t CI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, stats

from bib.analysis import rexpr
from bib.analysis.exclusions import REPORT_COLUMNS, ExclusionResult, apply_exclusions
from bib.analysis.formula import Formula, RandomTerm, parse_formula, uncorrelated
from bib.analysis.importers import ImportResult
from bib.analysis.mixed import LmmFit, SingularCause, fit_singular_causes, format_p, lmer
from bib.analysis.schema import ROW, rows_text
from bib.analysis.spec import AnalysisSpec, find_term
from bib.errors import BibInputError
from bib.guard import read_json
from bib.results import Result, jsonable

#: 0/1 column marking the contrast outcome (the spec's second outcome; "unexpected" by default).
EFFECT = "unexpected"
DAYS_PER_MONTH = 30.44
#: Version of the report.json layout (docs/analysis.md, "report.json").
SCHEMA = "bib.analysis/2"


def model_rows(kept: pd.DataFrame, tasks: list[str], scale: str, source: str,
               outcomes: tuple[str, str] = ("expected", "unexpected")) -> pd.DataFrame:
    """The kept test trials of ``tasks`` with ``y`` (log seconds or seconds), ``log_lt``,
    ``participant`` and the 0/1 ``unexpected`` (= the contrast outcome).

    Raises:
        BibInputError: a missing looking time (no ``missing`` exclusion step), or a zero one on the
            log scale (its log is not finite).
    """
    rows = kept[(kept["phase"] == "test") & kept["task"].isin(tasks)].copy()
    missing = rows["looking_time_s"].isna()
    if missing.any():
        raise BibInputError(
            f"{source}: column looking_time_s: missing looks reach the model; add the 'missing' exclusion "
            f"step ({rows_text(rows.loc[missing, ROW].tolist())})"
        )
    zero = rows["looking_time_s"] <= 0
    if scale == "log" and zero.any():
        raise BibInputError(
            f"{source}: column looking_time_s: zero looks have no log; set exclusions.min_look_s > 0 "
            f"or scale = raw ({rows_text(rows.loc[zero, ROW].tolist())})"
        )
    with np.errstate(divide="ignore"):
        rows["log_lt"] = np.log(rows["looking_time_s"].to_numpy(dtype=float))
    rows["y"] = rows["log_lt"] if scale == "log" else rows["looking_time_s"]
    rows[EFFECT] = (rows["outcome"] == outcomes[1]).astype(float)
    rows["participant"] = rows["participant_id"]
    if "age_mo" not in rows.columns:
        rows["age_mo"] = rows["age_days"] / DAYS_PER_MONTH
    rows = rows.reset_index(drop=True)
    rows.attrs["scale"] = scale
    return rows


def default_formula(rows: pd.DataFrame, scale: str, covariates: list[str]) -> tuple[str, list[str]]:
    """The VOE default formula for one task's rows, and the notes saying why it has its terms."""
    notes = []
    fixed = ["outcome"]
    if "order" in covariates:
        if rows["order"].nunique() > 1:
            fixed.append("factor(order)")
        else:
            notes.append("covariate order has a single level; left out")
    if "age" in covariates:
        fixed.append("age_c")
    random = ["(1 | participant)"]
    items = rows.loc[rows["item"] != "", ["outcome", "item"]].drop_duplicates()
    per_outcome = items.groupby("outcome")["item"].nunique()
    if len(per_outcome) and per_outcome.max() > 1:
        random.append("(1 | item)")
        notes.append(f"(1 | item) added: {int(per_outcome.max())} items per outcome "
                     f"({items['item'].nunique()} items), so stimulus variance is modelled unless the fit "
                     "prunes the term (see the models tried)")
    response = "log_lt" if scale == "log" else "looking_time_s"
    return f"{response} ~ {' + '.join(fixed)} + {' + '.join(random)}", notes


def _age_c(rows: pd.DataFrame, source: str) -> None:
    missing = rows["age_days"].isna()
    if missing.any():
        raise BibInputError(f"{source}: column age_days: the age covariate needs every age ({rows_text(rows.loc[missing, ROW].tolist())})")
    rows["age_c"] = (rows["age_days"] - rows["age_days"].mean()) / DAYS_PER_MONTH


def dz_interval(diff: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """d_z = mean / SD of per-participant differences, with its ``1 - alpha`` interval: exact
    (inverting the noncentral t) up to 200 participants, beyond that the normal approximation
    ``d_z ± z sqrt(1/n + d_z^2 / (2(n - 1)))`` (the two agree to 3 decimals there)."""
    n = len(diff)
    if n < 3 or np.std(diff, ddof=1) == 0:
        return math.nan, math.nan, math.nan
    dz = float(np.mean(diff) / np.std(diff, ddof=1))
    t = dz * math.sqrt(n)
    if n > 200:
        half = float(stats.norm.ppf(1 - alpha / 2)) * math.sqrt(1 / n + dz * dz / (2 * (n - 1)))
        return dz, dz - half, dz + half

    def ncp_for(q: float) -> float:
        f = lambda nc: stats.nct.cdf(t, n - 1, nc) - q  # noqa: E731
        lo, hi = t - 10 - abs(t), t + 10 + abs(t)
        return optimize.brentq(f, lo, hi, xtol=1e-10)

    return dz, ncp_for(1 - alpha / 2) / math.sqrt(n), ncp_for(alpha / 2) / math.sqrt(n)


def fit_ladder(formula: Formula, rows: pd.DataFrame, *, reference: dict[str, str], prune: list[str] | None,
               reml: bool, alpha: float, where: str) -> tuple[LmmFit, list[dict[str, Any]], str]:
    """MB1's "fit, check, prune": fit, and while the fit is singular or its non-convergence is
    confirmed (lme4's check failed again after a restart from the optimum, :mod:`bib.analysis.optimum`)
    simplify the random structure, never dropping the last term. Without ``prune``, a singular fit is
    simplified as lme4 practice does (:func:`_simplify`): first the correlations of a singular term with
    several columns, then the single-column term whose variance is at the boundary; a fit that does not
    converge loses the formula's random terms from last to first. With ``prune``, its terms go in its order
    for both. Each step says what it did and why. Returns the kept fit, every step, and why it was kept."""
    current = list(formula.random)
    order = [formula.random[i] for i in ([find_term(formula.random, e) for e in prune] if prune is not None
                                          else range(len(formula.random) - 1, -1, -1))]
    steps: list[dict[str, Any]] = []
    while True:
        f = formula.with_random(current)
        fit = lmer(f, rows, reml=reml, reference=reference, alpha=alpha, where=where)
        steps.append({"formula": f.text, "converged": fit.converged, "singular": fit.singular,
                      "warnings": list(fit.warnings), "action": ""})
        if fit.converged and not fit.singular:
            why = "converged, not singular" + (" after pruning" if len(steps) > 1 else "")
            break
        simpler = _simplify(current, fit_singular_causes(fit)) if fit.singular and prune is None else None
        if simpler is not None:
            current, steps[-1]["action"] = simpler
            continue
        nxt = next((t for t in order if t in current), None)
        if nxt is None or len(current) == 1:
            problem = "singular" if fit.singular else "not converged (confirmed after a restart)"
            why = f"kept although {problem}: no random term left to prune"
            break
        steps[-1]["action"] = f"pruned {nxt.text} ({'singular' if fit.singular else 'confirmed non-convergence'})"
        current.remove(nxt)
    steps[-1]["action"] = "kept"
    return fit, steps, why


def _simplify(current: list[RandomTerm], causes: list[SingularCause]) -> tuple[list[RandomTerm], str] | None:
    """The next simpler random structure for a singular fit, as lme4 practice goes (Bates, Kliegl, Vasishth &
    Baayen 2015; Matuschek et al. 2017): a singular term with several columns loses its correlations
    (``(1 + x | g)`` becomes ``(1 | g) + (0 + x | g)``); else the last single-column term whose variance is
    estimated as 0 is dropped, unless it is the last term left. ``None`` when neither applies."""
    by_text = {t.text: t for t in current}
    for cause in causes:
        t = by_text.get(cause.term)
        if t is not None and int(t.intercept) + len(t.terms) > 1:
            i = current.index(t)
            return (current[:i] + uncorrelated(t.intercept, t.terms, t.group) + current[i + 1:],
                    f"removed the correlations of {t.text} (singular: {cause.message})")
    zero = [by_text[c.term] for c in causes if c.kind == "variance" and c.term in by_text]
    if zero and len(current) > 1:
        t = max(zero, key=current.index)
        return [x for x in current if x != t], f"pruned {t.text} (singular)"
    return None


@dataclass(frozen=True)
class _Plan:
    formula: Formula
    notes: list[str]
    reference: dict[str, str]


def _plan(spec: AnalysisSpec, rows: pd.DataFrame, scale: str, source: str) -> _Plan:
    reference = {"outcome": spec.outcomes[0], **spec.model.reference}
    if spec.model.formula:
        f = parse_formula(spec.model.formula, f"{source}: field model.formula")
        notes = [] if not spec.covariates else ["covariates ignored: model.formula is given"]
        if scale != spec.scale:
            notes.append(f"--scale {scale} ignored: model.formula names the response ({f.lhs_text})")
    else:
        text, notes = default_formula(rows, scale, spec.covariates)
        f = parse_formula(text)
    reference = {k: v for k, v in reference.items() if f.uses(k)}  # a reference for x serves factor(x) too
    unused = sorted(k for k in spec.model.reference if not f.uses(k))
    if unused:
        raise BibInputError(f"{source}: field model.reference: {', '.join(unused)} not in the formula")
    return _Plan(f, notes, reference)


def _effect_name(spec: AnalysisSpec) -> str:
    return f"outcome{spec.outcomes[1]}"


def task_effect(rows: pd.DataFrame, covariates: list[str], alpha: float, label: str, *,
                spec: AnalysisSpec | None = None, scale: str | None = None) -> dict[str, Any]:
    """Fit one task's model through the ladder and report the outcome effect (see module doc).

    ``scale`` defaults to the one :func:`model_rows` recorded in ``rows.attrs``.
    """
    spec = spec or AnalysisSpec(covariates=covariates, alpha=alpha)
    scale = scale or rows.attrs.get("scale", "log")
    rows = rows.copy()
    if "age" in covariates and not spec.model.formula:
        _age_c(rows, label)
    if "participant" not in rows.columns:
        rows["participant"] = rows["participant_id"]
    if "item" not in rows.columns:
        rows["item"] = ""
    plan = _plan(spec, rows, scale, label)
    if "outcome" not in plan.formula.variables:
        raise BibInputError(f"{label}: field model.formula: the fixed part must include outcome")
    fit, steps, why = fit_ladder(plan.formula, rows, reference=plan.reference, prune=spec.model.prune,
                                 reml=spec.model.reml, alpha=alpha, where=f"{label}: model.formula")
    name = _effect_name(spec)
    if name not in fit.coefficients.index:
        raise BibInputError(f"{label}: field model.formula: no fixed effect {name} (outcome must enter as a main effect)")
    effect = fit.contrast({name: 1.0}, alpha)
    notes = plan.notes + uncentred_notes(fit)
    o0, o1 = spec.outcomes
    resp = plan.formula.response
    expr = plan.formula.response_expr  # a transformed response (log(looking_time)): on the model's scale
    with np.errstate(all="ignore"):
        yv = rows[resp].to_numpy(dtype=float) if expr is None else rexpr.evaluate(expr, rows, fit.frame.basis).astype(float)
    wide = pd.DataFrame({"p": rows["participant_id"].to_numpy(), "o": rows["outcome"].to_numpy(), "y": yv}).pivot_table(
        index="p", columns="o", values="y", aggfunc="mean")
    diff = (wide[o1] - wide[o0]).dropna().to_numpy() if {o0, o1} <= set(wide.columns) else np.zeros(0)
    dz, dz_lo, dz_hi = dz_interval(diff, alpha)
    means = rows.groupby("outcome")[resp].mean() if expr is None else pd.Series(
        yv, index=rows["outcome"].to_numpy()).groupby(level=0).mean()
    var_participant = next((v.variance for v in fit.varcomps if v.group == "participant" and v.name == "(Intercept)"), 0.0)
    tests = model_tests(fit, notes)
    return {
        "effect": f"{o1} - {o0}",
        **effect,
        "inference": "Satterthwaite t (lmerTest); CI: Wald with the Satterthwaite t quantile; p_wald_z: Wald z",
        "dz": dz,
        "dz_ci_low": dz_lo,
        "dz_ci_high": dz_hi,
        "n_dz": len(diff),
        "n_participants": int(rows["participant_id"].nunique()),
        "n_trials": len(rows),
        "n_items": int(rows.loc[rows["item"] != "", "item"].nunique()),
        "mean_reference": float(means.get(o0, math.nan)),
        "mean_contrast": float(means.get(o1, math.nan)),
        "mean_expected": float(means.get(o0, math.nan)),
        "mean_unexpected": float(means.get(o1, math.nan)),
        "participant_var": var_participant,
        "residual_var": fit.sigma ** 2,
        "converged": fit.converged,
        "singular": fit.singular,
        "formula": fit.formula,
        "formula_declared": plan.formula.text,
        "kept_because": why,
        "ladder": steps,
        "model": fit.to_json(),
        **tests,
        "notes": notes,
        "warnings": notes + fit.warnings,
        "_fit": fit,
    }


def model_tests(fit: LmmFit, notes: list[str]) -> dict[str, Any]:
    """What a psychologist reads after the effect (issue 41): lmerTest's type III F tests of every fixed term
    (Satterthwaite), and emmeans' marginal means of each outcome (on the model's scale) with their pairwise
    contrast. A part that cannot be computed for this model is left out with a note saying why."""
    out: dict[str, Any] = {"anova": None, "emmeans": None, "pairs": None}
    try:
        out["anova"] = fit.anova(type=3).to_json()
        out["emmeans"] = fit.emmeans("outcome").to_json()
        out["pairs"] = fit.pairs("outcome", adjust="tukey").to_json()
    except BibInputError as exc:
        notes.append(f"not computed: {exc}")
    return out


def uncentred_notes(fit: LmmFit, effect: str = "outcome") -> list[str]:
    """A note per numeric covariate that interacts with ``effect`` and is not centred: the effect the table
    reports is then the effect where that covariate is 0, which may be no infant's value (an age of 0 days)."""
    frame = fit.frame
    notes = []
    for term in frame.formula.terms:
        if effect not in term or len(term) < 2:
            continue
        for v in term:
            var = frame.variables.get(v)
            if v == effect or var is None or var.is_factor or var.numeric is None:
                continue
            mean, sd = float(np.mean(var.numeric)), float(np.std(var.numeric))
            if abs(mean) > 0.01 * max(sd, 1e-12):
                col = frame.formula.column(v)
                notes.append(f"{effect}'s effect is reported at {col} = 0: {effect} interacts with {col}, which is "
                             f"not centred (mean {mean:.4g}); centre it (e.g. {col} - {mean:.4g}) for the effect at "
                             "the mean")
    return list(dict.fromkeys(notes))


def pooled_effect(rows: pd.DataFrame, tasks: list[str], covariates: list[str], alpha: float, label: str, *,
                  spec: AnalysisSpec | None = None, scale: str | None = None) -> dict[str, Any]:
    """Fit ``outcome * task`` (with the task model's random part) over all tasks; report the
    interaction terms (each task's effect minus the first task's) and their joint Wald test."""
    spec = spec or AnalysisSpec(covariates=covariates, alpha=alpha)
    scale = scale or rows.attrs.get("scale", "log")
    rows = rows.copy()
    if "item" not in rows.columns:
        rows["item"] = ""
    if spec.model.pooled_formula:
        f = parse_formula(spec.model.pooled_formula, f"{label}: field model.pooled_formula")
        notes: list[str] = []
    else:
        base = _plan(spec, rows, scale, label)
        if "age" in covariates and not spec.model.formula:
            _age_c(rows, label)
        extra = [":".join(t) for t in base.formula.terms if t != ("outcome",)]
        text = f"{base.formula.lhs_text} ~ {' + '.join(['outcome * task', *extra])} + " + " + ".join(
            r.text for r in base.formula.random)
        f = parse_formula(text)
        notes = base.notes
    reference = {"outcome": spec.outcomes[0], "task": tasks[0], **spec.model.reference}
    reference = {k: v for k, v in reference.items() if f.uses(k)}
    fit, steps, why = fit_ladder(f, rows, reference=reference, prune=None, reml=spec.model.reml, alpha=alpha,
                                 where=f"{label}: model.pooled_formula")
    name = _effect_name(spec)
    inter = [n for n in fit.coefficients.index if n.startswith(f"{name}:task")]
    names = list(fit.coefficients.index)
    b = fit.coefficients.loc[inter, "estimate"].to_numpy()
    v = fit.vcov.loc[inter, inter].to_numpy()
    chi2 = float(b @ np.linalg.pinv(v) @ b) if inter else math.nan
    assert set(inter) <= set(names)
    return {
        "formula": fit.formula,
        "reference_task": tasks[0],
        "effect_in_reference": fit.contrast({name: 1.0}, alpha),
        "interaction": {n.split(":task", 1)[1]: fit.contrast({n: 1.0}, alpha) for n in inter},
        "interaction_test": {"test": "Wald chi-square", "chi2": chi2, "df": len(inter),
                             "p": float(stats.chi2.sf(chi2, len(inter))) if inter else math.nan},
        "n_participants": int(rows["participant_id"].nunique()),
        "converged": fit.converged,
        "singular": fit.singular,
        "kept_because": why,
        "ladder": steps,
        "warnings": notes + fit.warnings,
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return jsonable(frame.to_dict("records"))


def _center(spec: AnalysisSpec, imported: pd.DataFrame, rows: pd.DataFrame, tasks: list[str], source: str) -> dict[str, float]:
    """Centre the spec's ``model.center`` columns on the imported test rows of the analysed tasks."""
    base = imported[(imported["phase"] == "test") & imported["task"].isin(tasks)]
    means = {}
    for col in spec.model.center:
        src = base[col] if col in base.columns else (base["age_days"] / DAYS_PER_MONTH if col == "age_mo" else None)
        if src is None:
            raise BibInputError(f"{source}: field model.center: column {col} is not in the data")
        values = pd.to_numeric(src, errors="coerce")
        if values.isna().any():
            raise BibInputError(f"{source}: field model.center: column {col} has missing or non-numeric values "
                                f"({rows_text(base.loc[values.isna(), ROW].astype(str).tolist())})")
        means[col] = float(values.mean())
        rows[col] = pd.to_numeric(rows[col], errors="coerce") - means[col]
    return means


@dataclass
class Analysis(Result):
    """The analysis of one data set: the JSON report, the model rows (``y`` on the model's scale)
    and the exclusions. ``to_json()`` is report.json, ``to_markdown()`` the text report."""

    name = "report"
    report: dict[str, Any]
    data: pd.DataFrame
    exclusions: ExclusionResult
    scale: str = "log"
    extra: dict[str, Any] = field(default_factory=dict)
    #: The kept fit of each task (for the residual plots; not in the report).
    fits: dict[str, LmmFit] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        return self.report

    def to_markdown(self) -> str:
        return format_report(self.report)

    def write(self, out: str | Path) -> list[Path]:
        """Write report.json, report.md, exclusions.csv and the per-task plots (paired looks, residuals) into ``out``."""
        from bib.analysis.plots import analysis_plots
        from bib.io import atomic_open, csv_writer
        from bib.results import save_figure

        paths = self.save(out)
        path = Path(out) / "exclusions.csv"
        with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
            w = csv_writer(fh)
            w.writerow([*REPORT_COLUMNS, "stage"])
            for stage, frame in (("import", self.report["exclusions"]["import_dropped"]),
                                 ("excluded", self.report["exclusions"]["excluded"]),
                                 ("capped", self.report["exclusions"]["capped"])):
                for r in frame:
                    w.writerow([r.get(c, "") if r.get(c) is not None else "" for c in REPORT_COLUMNS] + [stage])
        paths.append(path)
        paths += analysis_plots(self.data, self.report, self.scale, out)
        for task, fit in self.fits.items():  # residuals vs fitted, QQ of residuals and of each random effect
            paths += save_figure(fit.plot_residuals(), out, f"residuals-{task}")
        return paths


def analyze(imported: ImportResult, spec: AnalysisSpec, scale: str | None = None) -> Analysis:
    """Run the spec's exclusions and mixed models on imported looking times.

    Args:
        imported: from :func:`bib.analysis.importers.read_looking_times` (already filtered).
        spec: the analysis spec (tasks, outcomes, model, exclusions, alpha).
        scale: ``"log"`` or ``"raw"``; overrides the spec's scale for the default formula.

    Returns:
        An :class:`Analysis` whose ``report["tasks"][task]`` holds the outcome effect (estimate,
        se, df, t, p, p_wald_z, ci_low, ci_high), d_z with its CI, counts, the kept formula, the
        ladder, the full model and its warnings.

    Raises:
        BibInputError: a task of the spec absent from the data, or a task left without both outcomes.
    """
    scale = scale or spec.scale
    source = imported.source
    present = sorted(imported.table.loc[imported.table["phase"] == "test", "task"].unique())
    absent = [t for t in spec.tasks if t not in present]
    if absent:
        raise BibInputError(f"{source}: the spec's tasks {', '.join(absent)} have no test trials in the data")
    tasks = list(spec.tasks) or present
    from bib.guard import distinct_names

    distinct_names(tasks, str.casefold, "tasks", source)  # each gets its own plot file, before any fit
    excl = apply_exclusions(imported.table, spec.exclusions, spec.outcomes, source)
    rows = model_rows(excl.kept, tasks, scale, source, spec.outcomes)
    centred = _center(spec, imported.table, rows, tasks, source)
    results: dict[str, Any] = {}
    fits: dict[str, LmmFit] = {}
    for task in tasks:
        sub = rows[rows["task"] == task]
        if sub["outcome"].nunique() < 2:
            raise BibInputError(f"{source}: task {task}: no participant has both test outcomes after exclusions")
        results[task] = task_effect(sub, spec.covariates, spec.alpha, f"{source}: task {task}", spec=spec, scale=scale)
        fits[task] = results[task].pop("_fit")
        results[task]["n_excluded"] = excl.n_excluded_participants(task)
    pooled = (pooled_effect(rows, tasks, spec.covariates, spec.alpha, f"{source}: pooled model", spec=spec, scale=scale)
              if len(tasks) > 1 else None)
    report = {
        "schema": SCHEMA,
        "source": source,
        "spec": spec.name,
        "scale": "log seconds" if scale == "log" else "seconds",
        "alpha": spec.alpha,
        "outcomes": list(spec.outcomes),
        "filter": imported.filtered,
        "skipped_files": list(imported.skipped_files),
        "centred": centred,
        "tasks": results,
        "tasks_not_analysed": [t for t in present if t not in tasks],
        "order_balance": order_balance(imported.table, excl.kept),
        "pooled": pooled,
        "exclusions": {
            "steps": list(spec.exclusions.steps),
            "parameters": spec.exclusions.model_dump(exclude={"steps"}),
            "summary": ([{"step": "import", "reason": r, "rows": int(n)}
                         for r, n in imported.dropped["reason"].value_counts(sort=False).items()]
                        if len(imported.dropped) else []) + excl.summary(),
            "participants_by_reason": excl.participants_by_reason(),
            "import_dropped": _records(imported.dropped),
            "excluded": _records(excl.excluded),
            "capped": _records(excl.capped),
        },
    }
    return Analysis(jsonable(report), rows, excl, scale, fits=fits)


def order_balance(table: pd.DataFrame, kept: pd.DataFrame) -> list[dict[str, Any]]:
    """Participants per counterbalancing order (the ``order`` column), before and after the
    exclusions: ``[{"order", "participants", "kept"}]`` in order; ``[]`` when no row has an order."""
    if "order" not in table.columns or (table["order"].astype(str).str.strip() == "").all():
        return []

    def per_order(frame: pd.DataFrame) -> dict[str, int]:
        return {str(o): int(n) for o, n in frame.groupby(frame["order"].astype(str).str.strip())["participant_id"].nunique().items()}

    def numeric_first(o: str) -> tuple[bool, int, str]:
        return (not o.isdigit(), int(o) if o.isdigit() else 0, o)

    everyone, after = per_order(table), per_order(kept)
    return [{"order": o, "participants": everyone[o], "kept": after.get(o, 0)} for o in sorted(everyone, key=numeric_first)]


def _fmt(x: float | None, digits: int = 3) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _df(x: float | None) -> str:
    return "inf" if x is None or not math.isfinite(x) else f"{x:.1f}"


def format_report(report: dict[str, Any]) -> str:
    """Plain-text report: filter, per-task effects, the models kept and why, exclusions by reason."""
    o0, o1 = report.get("outcomes", ["expected", "unexpected"])
    lines = [f"{report['source']}: outcome effect ({o1} - {o0}) on {report['scale']}; "
             f"Satterthwaite df, Wald CI with t quantile ({1 - report['alpha']:.0%})"]
    filt = report.get("filter")
    if filt:
        why = "; ".join(f"{k}: {v}" for k, v in filt["dropped"].items())
        lines.append(f"filter: kept {filt['rows_kept']} of {filt['rows_read']} rows ({why})")
    if report.get("skipped_files"):
        lines.append(f"skipped (not trial files): {', '.join(report['skipped_files'])}")
    if report.get("centred"):
        lines.append("centred: " + ", ".join(f"{k} (mean {v:.4g})" for k, v in report["centred"].items()))
    head = (f"{'task':<24}{'estimate':>9}{'SE':>8}{'df':>8}{'ci_low':>9}{'ci_high':>9}{'p':>8}{'p (z)':>8}"
            f"{'d_z':>7}{'kept':>6}{'excl':>6}")
    lines += [head, "-" * len(head)]
    for task, r in report["tasks"].items():
        lines.append(
            f"{task:<24}{_fmt(r['estimate']):>9}{_fmt(r['se']):>8}{_df(r['df']):>8}{_fmt(r['ci_low']):>9}"
            f"{_fmt(r['ci_high']):>9}{format_p(r['p']):>8}{format_p(r['p_wald_z']):>8}{_fmt(r['dz'], 2):>7}"
            f"{r['n_participants']:>6}{r['n_excluded']:>6}"
        )
        lines.append(f"    d_z {_fmt(r['dz'], 2)} [{_fmt(r['dz_ci_low'], 2)}, {_fmt(r['dz_ci_high'], 2)}] "
                     f"({r['n_dz']} participants with both outcomes); {r['n_trials']} trials"
                     + (f", {r['n_items']} items" if r["n_items"] else " (no item ids in the data: items not modelled)"))
        lines.append(f"    model kept: {r['formula']} ({r['kept_because']})")
        for row in (r.get("anova") or {}).get("rows", []):
            lines.append(f"    type III F test (Satterthwaite): {row['row']}: F({row['NumDF']:.0f}, {_df(row['DenDF'])}) = "
                         f"{_fmt(row['F value'], 2)}, p = {format_p(row['Pr(>F)'])}")
        for row in (r.get("emmeans") or {}).get("rows", []):
            lines.append(f"    marginal mean (model scale): {row['outcome']}: {_fmt(row['emmean'])} "
                         f"[{_fmt(row['lower.CL'])}, {_fmt(row['upper.CL'])}], SE {_fmt(row['SE'])}, df {_df(row['df'])}")
        for row in (r.get("pairs") or {}).get("rows", []):
            lines.append(f"    pairwise: {row['contrast']}: {_fmt(row['estimate'])}, t({_df(row['df'])}) = "
                         f"{_fmt(row['t.ratio'], 2)}, p = {format_p(row['p.value'])} (Tukey)")
        for step in r["ladder"][:-1]:
            lines.append(f"    tried: {step['formula']}: {step['action']}")
        lines += [f"    warning: {w}" for w in r["warnings"]]
    if report.get("tasks_not_analysed"):
        lines.append(f"not analysed (not in the spec's tasks): {', '.join(report['tasks_not_analysed'])}")
    pooled = report.get("pooled")
    if pooled:
        t = pooled["interaction_test"]
        lines.append(f"pooled: outcome x task interaction, Wald chi2({t['df']}) = {t['chi2']:.3f}, p = {format_p(t['p'])} "
                     f"(reference task {pooled['reference_task']}; {pooled['formula']})")
        for task, c in pooled["interaction"].items():
            lines.append(f"    effect in {task} minus reference: {_fmt(c['estimate'])} [{_fmt(c['ci_low'])}, {_fmt(c['ci_high'])}], "
                         f"t({_df(c['df'])}) = {_fmt(c['t'], 2)}, p = {format_p(c['p'])}")
        lines += [f"    warning: {w}" for w in pooled["warnings"]]
    if report.get("order_balance"):
        lines.append("participants per order (counterbalancing; after exclusions): " + ", ".join(
            f"order {b['order']}: {b['participants']} ({b['kept']})" for b in report["order_balance"]))
    ex = report["exclusions"]
    lines.append(f"exclusions ({', '.join(ex['steps'])}): {len(ex['import_dropped'])} rows dropped at import, "
                 f"{len(ex['excluded'])} excluded, {len(ex['capped'])} capped; by reason:")
    for s in ex["summary"]:
        lines.append(f"    {s['rows']:>6}  {s['step']}: {s['reason']}")
    if ex.get("participants_by_reason"):
        lines.append("  participants excluded by the experimenter's codes: " + ", ".join(
            f"{s['participants']} {s['reason']}" for s in ex["participants_by_reason"]))
    lines.append("    (every row with its line in the original file: exclusions.csv with --out, or --json)")
    return "\n".join(lines)


def read_report(path: str | Path) -> dict[str, Any]:
    """Read an analysis report (``bib analyze --json`` output) from ``path``.

    Raises:
        BibInputError: unreadable JSON, or an object without ``tasks`` and ``exclusions``.
    """
    p = Path(path)
    try:
        doc = read_json(p)
    except OSError as exc:
        raise BibInputError(f"{p}: cannot read analysis report ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), dict) or not isinstance(doc.get("exclusions"), dict):
        raise BibInputError(f"{p}: not a `bib analyze --json` report (no 'tasks' and 'exclusions')")
    return doc
