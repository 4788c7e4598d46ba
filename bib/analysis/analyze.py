"""The VOE analysis of a looking-time table: exclusions, per-task and pooled mixed models, a report."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bib.analysis.exclusions import ExclusionResult, apply_exclusions
from bib.analysis.importers import ImportResult
from bib.analysis.lmm import fit_mixed
from bib.analysis.schema import ROW, rows_text
from bib.analysis.spec import AnalysisSpec
from bib.errors import BibInputError

#: Fixed-effect name of the outcome contrast (unexpected = 1, expected = 0).
EFFECT = "unexpected"
DAYS_PER_MONTH = 30.44


@dataclass(frozen=True)
class Analysis:
    """The JSON-ready report, the rows the models used (with ``y`` on the model's scale), the exclusions."""

    report: dict[str, Any]
    data: pd.DataFrame
    exclusions: ExclusionResult


def model_rows(kept: pd.DataFrame, tasks: list[str], scale: str, source: str) -> pd.DataFrame:
    """The kept test trials of ``tasks`` with ``y`` (log seconds or seconds) and the 0/1 ``unexpected``.

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
    if scale == "log":
        zero = rows["looking_time_s"] <= 0
        if zero.any():
            raise BibInputError(
                f"{source}: column looking_time_s: zero looks have no log; set exclusions.min_look_s > 0 "
                f"or scale = raw ({rows_text(rows.loc[zero, ROW].tolist())})"
            )
        rows["y"] = np.log(rows["looking_time_s"])
    else:
        rows["y"] = rows["looking_time_s"]
    rows[EFFECT] = (rows["outcome"] == "unexpected").astype(float)
    return rows.reset_index(drop=True)


def covariate_terms(rows: pd.DataFrame, covariates: list[str], source: str) -> tuple[list[str], list[str]]:
    """Formula terms for the covariates (``C(order)``, centred age in months ``age_c``) and notes.

    Adds ``age_c`` to ``rows`` in place when age is a covariate.

    Raises:
        BibInputError: age requested but missing on some rows.
    """
    terms, notes = [], []
    if "order" in covariates:
        if rows["order"].nunique() > 1:
            terms.append("C(order)")
        else:
            notes.append("covariate order has a single level; left out")
    if "age" in covariates:
        missing = rows["age_days"].isna()
        if missing.any():
            raise BibInputError(f"{source}: column age_days: the age covariate needs every age ({rows_text(rows.loc[missing, ROW].tolist())})")
        rows["age_c"] = (rows["age_days"] - rows["age_days"].mean()) / DAYS_PER_MONTH
        terms.append("age_c")
    return terms, notes


def task_effect(rows: pd.DataFrame, covariates: list[str], alpha: float, label: str) -> dict[str, Any]:
    """Fit ``y ~ unexpected [+ covariates] + (1 | participant)`` and report the outcome effect."""
    rows = rows.copy()
    terms, notes = covariate_terms(rows, covariates, label)
    formula = " + ".join([f"y ~ {EFFECT}", *terms])
    fit = fit_mixed(rows, formula, "participant_id", label=label)
    effect = fit.contrast({EFFECT: 1.0}, alpha)
    means = rows.groupby("outcome")["y"].mean()
    return {
        **effect.as_dict(),
        "n_participants": int(rows["participant_id"].nunique()),
        "n_trials": len(rows),
        "mean_expected": float(means.get("expected", math.nan)),
        "mean_unexpected": float(means.get("unexpected", math.nan)),
        "participant_var": fit.group_var,
        "residual_var": fit.residual_var,
        "converged": fit.converged,
        "formula": f"{formula} + (1 | participant_id)",
        "warnings": notes + fit.warnings,
    }


def pooled_effect(rows: pd.DataFrame, tasks: list[str], covariates: list[str], alpha: float, label: str) -> dict[str, Any]:
    """Fit ``y ~ unexpected * task [+ covariates] + (1 | participant)``; report the interaction terms.

    The first of ``tasks`` is the reference level, so ``effect_in_reference`` is its outcome effect
    and each interaction term is another task's effect minus the reference's.
    """
    rows = rows.copy()
    terms, notes = covariate_terms(rows, covariates, label)
    task_term = f"C(task, Treatment({tasks[0]!r}))"
    formula = " + ".join([f"y ~ {EFFECT} * {task_term}", *terms])
    fit = fit_mixed(rows, formula, "participant_id", label=label)
    inter = [n for n in fit.params.index if n.startswith(f"{EFFECT}:")]
    return {
        "formula": f"{formula} + (1 | participant_id)",
        "reference_task": tasks[0],
        "effect_in_reference": fit.contrast({EFFECT: 1.0}, alpha).as_dict(),
        "interaction": {n.split("[T.")[-1].rstrip("]"): fit.contrast({n: 1.0}, alpha).as_dict() for n in inter},
        "interaction_test": fit.joint_test(inter),
        "n_participants": int(rows["participant_id"].nunique()),
        "converged": fit.converged,
        "warnings": notes + fit.warnings,
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return jsonable(frame.to_dict("records"))


def analyze(imported: ImportResult, spec: AnalysisSpec, scale: str | None = None) -> Analysis:
    """Run the spec's exclusions and mixed models on imported looking times.

    Args:
        imported: from :func:`bib.analysis.importers.read_looking_times`.
        spec: the analysis spec (tasks, covariates, exclusions, alpha).
        scale: ``"log"`` or ``"raw"``; overrides the spec's scale.

    Returns:
        An :class:`Analysis` whose ``report["tasks"][task]`` holds estimate, ci_low, ci_high, p,
        n_participants, n_excluded and warnings (estimate on the model's scale).

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
    excl = apply_exclusions(imported.table, spec.exclusions)
    rows = model_rows(excl.kept, tasks, scale, source)
    results: dict[str, Any] = {}
    for task in tasks:
        sub = rows[rows["task"] == task]
        if sub["outcome"].nunique() < 2:
            raise BibInputError(f"{source}: task {task}: no participant has both test outcomes after exclusions")
        results[task] = task_effect(sub, spec.covariates, spec.alpha, f"{source}: task {task}")
        results[task]["n_excluded"] = excl.n_excluded_participants(task)
    pooled = pooled_effect(rows, tasks, spec.covariates, spec.alpha, f"{source}: pooled model") if len(tasks) > 1 else None
    report = {
        "source": source,
        "spec": spec.name,
        "scale": "log seconds" if scale == "log" else "seconds",
        "alpha": spec.alpha,
        "tasks": results,
        "tasks_not_analysed": [t for t in present if t not in tasks],
        "pooled": pooled,
        "exclusions": {
            "steps": list(spec.exclusions.steps),
            "parameters": spec.exclusions.model_dump(exclude={"steps"}),
            "import_dropped": _records(imported.dropped),
            "excluded": _records(excl.excluded),
            "capped": _records(excl.capped),
        },
    }
    return Analysis(report, rows, excl)


def _fmt(x: float | None, digits: int = 3) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def format_report(report: dict[str, Any]) -> str:
    """Plain-text tables of a report: per task, the pooled interaction, and every dropped row."""
    lines = [f"{report['source']}: outcome effect (unexpected - expected) on {report['scale']}, Wald z, {1 - report['alpha']:.0%} CI"]
    head = f"{'task':<30}{'estimate':>10}{'ci_low':>10}{'ci_high':>10}{'p':>9}{'kept':>6}{'excl':>6}"
    lines += [head, "-" * len(head)]
    for task, r in report["tasks"].items():
        lines.append(
            f"{task:<30}{_fmt(r['estimate']):>10}{_fmt(r['ci_low']):>10}{_fmt(r['ci_high']):>10}"
            f"{_fmt(r['p'], 4):>9}{r['n_participants']:>6}{r['n_excluded']:>6}"
        )
        lines += [f"    warning: {w}" for w in r["warnings"]]
    if report.get("tasks_not_analysed"):
        lines.append(f"not analysed (not in the spec's tasks): {', '.join(report['tasks_not_analysed'])}")
    pooled = report.get("pooled")
    if pooled:
        t = pooled["interaction_test"]
        lines.append(f"pooled: outcome x task interaction chi2({t['df']}) = {t['chi2']:.3f}, p = {t['p']:.4f} (reference task {pooled['reference_task']})")
        for task, c in pooled["interaction"].items():
            lines.append(f"    effect in {task} minus reference: {_fmt(c['estimate'])} [{_fmt(c['ci_low'])}, {_fmt(c['ci_high'])}] p = {_fmt(c['p'], 4)}")
        lines += [f"    warning: {w}" for w in pooled["warnings"]]
    ex = report["exclusions"]
    dropped = ex["import_dropped"] + ex["excluded"] + ex["capped"]
    lines.append(f"exclusions ({', '.join(ex['steps'])}): {len(ex['import_dropped'])} dropped at import, "
                 f"{len(ex['excluded'])} rows excluded, {len(ex['capped'])} capped")
    for r in dropped:
        where = f" {r['task']} trial {r['trial_num']}" if "trial_num" in r else ""
        lines.append(f"    line {r[ROW]}: {r['participant_id']}{where}: {r['reason']}")
    return "\n".join(lines)


def jsonable(obj: Any) -> Any:
    """``obj`` with NaN/inf floats as None and numpy scalars as Python ones, for strict JSON."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def read_report(path: str | Path) -> dict[str, Any]:
    """Read an analysis report (``bib analyze --json`` output) from ``path``.

    Raises:
        BibInputError: unreadable JSON, or an object without ``tasks`` and ``exclusions``.
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BibInputError(f"{p}: cannot read analysis report ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), dict) or not isinstance(doc.get("exclusions"), dict):
        raise BibInputError(f"{p}: not a `bib analyze --json` report (no 'tasks' and 'exclusions')")
    return doc
