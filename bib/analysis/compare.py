"""Models vs infants: surprise and looking times on one z scale, one mixed model per task.

Each observer's response (infants: looking time on the analysis scale; a model: its surprise) is
z-scored within observer and task. Per task, ``response_z ~ unexpected * observer + (1 | unit)``
is fitted with the infants as the reference observer (units: infants, or a model's episode pairs),
so ``unexpected`` is the infants' VOE effect and ``unexpected:observer[T.m]`` how much model ``m``'s
effect differs from theirs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from bib.analysis.analyze import EFFECT
from bib.analysis.lmm import fit_mixed
from bib.analysis.schema import OUTCOMES
from bib.errors import BibInputError
from bib.evaluation import EpisodeRef, EpisodeSet, find_episodes
from bib.evaluation import read_results as read_results_file
from bib.results import Result, markdown_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

INFANTS = "infants"
MANIFEST_FIELDS = ("episode_id", "pair_id", "condition", "outcome")


def read_episode_index(root: str | Path) -> pd.DataFrame:
    """``episode_id, pair_id, condition, outcome, source`` of every episode under ``root``, as read by
    :func:`bib.evaluation.find_episodes` (the one episode-set reader: manifests, else episode files).

    Raises:
        BibInputError: no episodes, a malformed manifest or episode file, or one episode id listed
            twice with different pair, condition or outcome (identical repeats are merged).
    """
    refs = find_episodes(root).refs
    return pd.DataFrame([(r.id, r.pair_id, r.condition, r.outcome, str(r.path)) for r in refs],
                        columns=[*MANIFEST_FIELDS, "source"])


def read_results(path: str | Path, episodes: pd.DataFrame, name: str | None = None) -> pd.DataFrame:
    """A model's results file (``episode_id,surprise``) joined with the episode index.

    The file is read by :func:`bib.evaluation.read_results` (the one results-file reader); it may
    cover part of the set.

    Returns:
        ``observer, task, unit, outcome, response`` for every scored episode whose outcome is
        expected or unexpected (``none`` episodes carry no VOE contrast and are left out).

    Raises:
        BibInputError: a malformed file, non-finite surprise, duplicate or unknown episode ids.
    """
    p = Path(path)
    ids, surprise = read_model_scores(p, episodes)
    raw = pd.DataFrame({"episode_id": ids, "surprise": surprise})
    df = raw.merge(episodes, on="episode_id", how="left")
    df = df[df["outcome"].isin(OUTCOMES)]
    return _responses(name or p.stem, df["condition"], df["pair_id"], df["outcome"], df["surprise"])


def read_model_scores(path: str | Path, episodes: pd.DataFrame) -> tuple[list[str], list[float]]:
    """A model's results file (``episode_id,surprise``) read by :func:`bib.evaluation.read_results`
    against the episode index (it may cover part of the set): its episode ids and surprises.

    Raises:
        BibInputError: a malformed file, non-finite surprise, duplicate or unknown episode ids.
    """
    p = Path(path)
    known = EpisodeSet([EpisodeRef(e, None, "", "", p) for e in episodes["episode_id"]])
    scores = read_results_file(p, known, complete=False)
    return list(scores), [float(v) for v in scores.values()]


def infant_responses(rows: pd.DataFrame) -> pd.DataFrame:
    """The infants' kept test trials (``y`` from :func:`bib.analysis.analyze.model_rows`) as responses."""
    return _responses(INFANTS, rows["task"], rows["participant_id"], rows["outcome"], rows["y"])


def _responses(observer: str, task: pd.Series, unit: pd.Series, outcome: pd.Series, response: pd.Series) -> pd.DataFrame:
    """The long response table; units are prefixed by the observer so they never collide."""
    return pd.DataFrame({
        "observer": observer,
        "task": task.to_numpy(),
        "unit": (observer + ":" + unit.astype(str)).to_numpy(),
        "outcome": outcome.to_numpy(),
        "response": response.to_numpy(dtype=float),
    })


def zscore(responses: pd.DataFrame) -> pd.DataFrame:
    """Add ``response_z``: the response z-scored (SD with ddof 1) within observer and task."""
    out = responses.copy()
    grouped = out.groupby(["observer", "task"])["response"]
    sd = grouped.transform("std")
    out["response_z"] = (out["response"] - grouped.transform("mean")) / sd.where(sd > 0, 1.0)
    return out


def compare_task(data: pd.DataFrame, alpha: float, label: str) -> dict[str, Any]:
    """Fit one task's comparison model and report every observer's effect and its difference from the infants'."""
    data = data.assign(**{EFFECT: (data["outcome"] == "unexpected").astype(float)})
    models = sorted(o for o in data["observer"].unique() if o != INFANTS)
    term = f"C(observer, Treatment({INFANTS!r}))"
    fit = fit_mixed(data, f"response_z ~ {EFFECT} * {term}", "unit", label=label)
    counts = data.groupby("observer")["unit"].nunique()
    observers = {INFANTS: {**fit.contrast({EFFECT: 1.0}, alpha).as_dict(), "n_units": int(counts[INFANTS])}}
    differences = {}
    for m in models:
        inter = f"{EFFECT}:{term}[T.{m}]"
        observers[m] = {**fit.contrast({EFFECT: 1.0, inter: 1.0}, alpha).as_dict(), "n_units": int(counts[m])}
        diff = fit.contrast({inter: 1.0}, alpha).as_dict()
        differences[m] = {**diff, "differs": bool(diff["p"] < alpha)}
    return {"observers": observers, "differences": differences, "converged": fit.converged, "warnings": fit.warnings}


def compare(infant_rows: pd.DataFrame, model_responses: list[pd.DataFrame], alpha: float = 0.05) -> dict[str, Any]:
    """Compare every model with the infants on each task both were measured on.

    Args:
        infant_rows: the infants' kept test trials with ``y`` (from :class:`bib.analysis.analyze.Analysis`).
        model_responses: one frame per model from :func:`read_results`.
        alpha: significance level of the difference tests and ``1 - alpha`` intervals.

    Returns:
        ``{"tasks": {task: {"observers": {name: effect}, "differences": {model: ...}, ...}},
        "skipped": {task: reason}}`` with effects in z units (unexpected minus expected).
    """
    data = zscore(pd.concat([infant_responses(infant_rows), *model_responses], ignore_index=True))
    infant_tasks = set(data.loc[data["observer"] == INFANTS, "task"])
    tasks, skipped = {}, {}
    for task in sorted(data["task"].unique()):
        sub = data[data["task"] == task]
        if task not in infant_tasks:
            skipped[task] = "no infant data"
        elif sub["observer"].nunique() < 2:
            skipped[task] = "no model results"
        else:
            tasks[task] = compare_task(sub, alpha, f"compare: task {task}")
    if not tasks:
        raise BibInputError("compare: no task has both infant data and model results")
    return {"alpha": alpha, "scale": "z within observer and task", "tasks": tasks, "skipped": skipped}


def write_table(result: dict[str, Any], path: str | Path) -> None:
    """Write the comparison as CSV (one row per task and observer), atomically."""
    from bib.io import atomic_open, csv_writer

    with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv_writer(fh)
        w.writerow(["task", "observer", "effect", "ci_low", "ci_high", "diff_from_infants", "p_diff", "differs"])
        for task, r in result["tasks"].items():
            for name, e in r["observers"].items():
                d = r["differences"].get(name, {})
                w.writerow([task, name, e["estimate"], e["ci_low"], e["ci_high"], d.get("estimate", math.nan),
                            d.get("p", math.nan), d.get("differs", "")])


@dataclass
class Comparison(Result):
    """``bib compare``'s result: the dict of :func:`compare` (``to_json()``, what ``--json`` prints),
    one Markdown table of effects and differences, and the forest plot."""

    name: ClassVar[str] = "compare"
    result: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.result

    def to_markdown(self) -> str:
        r = self.result
        rows = []
        for task, t in r["tasks"].items():
            for name, e in t["observers"].items():
                d = t["differences"].get(name)
                rows.append([task, name, e["estimate"], e["ci_low"], e["ci_high"], d["estimate"] if d else None,
                             d["p"] if d else None, ("yes" if d["differs"] else "no") if d else "-"])
        text = [f"VOE effect (unexpected - expected) in z units, {1 - r['alpha']:.0%} CI; difference from infants (Wald z)",
                "", markdown_table(["task", "observer", "effect", "ci_low", "ci_high", "diff", "p_diff", "differs"], rows,
                                   align="llrrrrrl")]
        notes = [f"- warning ({task}): {w}" for task, t in r["tasks"].items() for w in t["warnings"]]
        notes += [f"- skipped {task}: {why}" for task, why in r["skipped"].items()]
        return "\n".join(text + ([""] + notes if notes else []))

    def plot(self) -> Figure:
        from bib.analysis.plots import forest_figure

        return forest_figure(self.result)
