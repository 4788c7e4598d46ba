"""Figures (PNG and SVG): per-participant expected vs unexpected looks per task, and the models-vs-infants forest plot."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from bib.io import atomic_write_bytes, ensure_dir

COLORS = ("#1f77b4", "#d62728")
#: Up to this many participants the paired plot draws a line per participant; beyond it, a
#: histogram of the per-participant differences replaces the lines (legible at N = 2,000).
MAX_LINES = 40


def _save(fig: Any, stem: Path) -> list[Path]:
    """Write ``stem``.png and ``stem``.svg atomically (SVG without date or random ids)."""
    import io

    paths = []
    for ext in ("png", "svg"):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, dpi=120, metadata={"Date": None} if ext == "svg" else None)
        path = stem.with_name(f"{stem.name}.{ext}")  # not with_suffix: task "pref.a" is not "pref" + ".a"
        atomic_write_bytes(path, buf.getvalue())
        paths.append(path)
    return paths


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "bib"
    return plt


def paired_plot(rows: pd.DataFrame, result: dict[str, Any], task: str, scale: str, stem: Path,
                outcomes: tuple[str, str] = ("expected", "unexpected")) -> list[Path]:
    """One task: the two outcomes' means with 95% CIs, and the participants.

    Up to :data:`MAX_LINES` participants, a grey line per participant joins their two looks; with
    more, a right-hand panel shows the histogram of the per-participant differences instead (a
    line per infant is a grey block at N = 2,000).

    Args:
        rows: the task's model rows (``participant_id``, ``outcome``, ``y``).
        result: the task's entry of the analysis report (estimate, CI, p, N).
        task: the task name (title).
        scale: ``"log"`` (geometric means, log axis) or ``"raw"`` (arithmetic means).
        stem: output path without suffix.
        outcomes: (reference, contrast) outcome names.
    """
    from bib.analysis.mixed import format_p

    plt = _pyplot()
    wide = rows.pivot_table(index="participant_id", columns="outcome", values="y", aggfunc="mean")
    wide = wide[[o for o in outcomes if o in wide.columns]].dropna()
    back = np.exp if scale == "log" else (lambda v: v)
    many = len(wide) > MAX_LINES
    if many:
        fig, (ax, hx) = plt.subplots(1, 2, figsize=(7.6, 4.6), gridspec_kw={"width_ratios": [1, 1.2]})
    else:
        fig, ax = plt.subplots(figsize=(4.2, 4.6))
        for _, r in wide.iterrows():
            ax.plot([0, 1], back(r.to_numpy()), color="0.75", lw=0.8, zorder=1)
    for x, outcome in enumerate(outcomes):
        if outcome not in wide.columns:
            continue
        y = wide[outcome].to_numpy()
        mean = y.mean()
        half = stats.t.ppf(0.975, len(y) - 1) * y.std(ddof=1) / math.sqrt(len(y)) if len(y) > 1 else 0.0
        ax.errorbar([x], [back(mean)], yerr=[[back(mean) - back(mean - half)], [back(mean + half) - back(mean)]],
                    fmt="o", color=COLORS[x], ms=8, capsize=6, lw=2, zorder=3)
    if scale == "log":
        from matplotlib.ticker import FuncFormatter

        ax.set_yscale("log")
        plain = FuncFormatter(lambda v, _: f"{v:g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
    ax.set_xticks([0, 1], list(outcomes))
    ax.set_xlim(-0.4, 1.4)
    ax.set_ylabel("looking time (s)" + (", log axis; geometric mean" if scale == "log" else "; mean") + " ± 95% CI")
    unit = "log s" if scale == "log" else "s"
    if many and len(wide):
        diff = (wide[outcomes[1]] - wide[outcomes[0]]).to_numpy()
        hx.hist(diff, bins=min(60, max(10, int(math.sqrt(len(diff))))), color="0.6", edgecolor="white", lw=0.3)
        hx.axvline(0, color="0.2", lw=0.8, ls="--")
        hx.axvline(float(diff.mean()), color=COLORS[1], lw=1.5)
        hx.set_xlabel(f"{outcomes[1]} − {outcomes[0]} per participant ({unit})")
        hx.set_ylabel("participants")
    fig.suptitle(f"{task} (N = {result['n_participants']})\n"
                 f"effect {result['estimate']:.2f} {unit} [{result['ci_low']:.2f}, {result['ci_high']:.2f}], "
                 f"p {_p_text(format_p(result['p']))}", fontsize=9)
    fig.tight_layout()
    paths = _save(fig, stem)
    plt.close(fig)
    return paths


def _p_text(p: str) -> str:
    return p if p.startswith("<") else f"= {p}"


def analysis_plots(data: pd.DataFrame, report: dict[str, Any], scale: str, out: str | Path) -> list[Path]:
    """Paired plots of every task of an analysis, as ``out/paired-<task>.{png,svg}``."""
    from bib.guard import check_name, distinct_names

    for task in report["tasks"]:
        check_name(f"paired-{task}", "task name in a plot's file name")
    distinct_names(report["tasks"], str.casefold, "tasks", "the analysis")  # one plot each, on any file system
    folder = ensure_dir(out)
    paths = []
    for task, result in report["tasks"].items():
        outcomes = tuple(report.get("outcomes", ("expected", "unexpected")))
        paths += paired_plot(data[data["task"] == task], result, task, scale, folder / f"paired-{task}", outcomes)
    return paths


def forest_figure(result: dict[str, Any]) -> Any:
    """The forest plot of a comparison (a matplotlib Figure): per task, the infants' and every model's effect (z) with CI."""
    from matplotlib.figure import Figure

    rows = [(task, name, e) for task, r in result["tasks"].items() for name, e in r["observers"].items()]
    fig = Figure(figsize=(6.5, 0.42 * len(rows) + 1.2))
    ax = fig.subplots()
    ys = np.arange(len(rows))[::-1]
    for y, (task, name, e) in zip(ys, rows, strict=True):
        color = "black" if name == "infants" else "#d62728"
        ax.errorbar([e["estimate"]], [y], xerr=[[e["estimate"] - e["ci_low"]], [e["ci_high"] - e["estimate"]]],
                    fmt="s" if name == "infants" else "o", color=color, capsize=3)
    ax.axvline(0, color="0.6", lw=0.8, ls="--")
    ax.set_yticks(ys, [f"{task} · {name}" for task, name, _ in rows], fontsize=8)
    ax.set_xlabel(f"VOE effect, unexpected − expected (z), {1 - result['alpha']:.0%} CI")
    fig.tight_layout()
    return fig


def forest_plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """Write the forest plot of the comparison (:func:`forest_figure`) to ``stem``.png and ``stem``.svg."""
    _pyplot()  # the SVG settings
    stem = Path(stem)
    ensure_dir(stem.parent)
    return _save(forest_figure(result), stem)
