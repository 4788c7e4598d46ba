"""Draw baselines/ctrl/difficulty.{png,svg}: every observer's accuracy per difficulty bin on bib-ctrl, all
conditions pooled, on two axes: the pair's evidence (nats, the curve ``bib evaluate`` reports) and the
excess cost of its deviation (cells, the generator's grading; the same scores regrouped).

Usage: python baselines/ctrl/figure.py SET SCORES_ROOT EVAL_ROOT OUT_STEM
SET is bib-ctrl (its manifest has both columns), SCORES_ROOT holds <observer>/results.csv (`bib score
--out` folders) and EVAL_ROOT <observer>/difficulty.json (`bib evaluate --out` folders); every observer of
OBSERVERS with a folder in EVAL_ROOT is drawn, in that order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from matplotlib.figure import Figure

from bib.evaluation import difficulty_json, evaluate_difficulty, find_episodes, read_results

OBSERVERS = ["inverse-planner", "bc-mlp", "bc-rnn", "video-rnn", "closest-object", "random"]
AXES = [("evidence", "evidence of the pair under the generator's agent (nats)"),
        ("excess", "excess path cost of the deviation (cells)")]


def main(set_dir: Path, scores: Path, evals: Path, stem: Path) -> None:
    episodes = find_episodes(set_dir)
    fig = Figure(figsize=(11, 4.2))
    axes = fig.subplots(1, len(AXES), sharey=True)
    for ax, (measure, label) in zip(axes, AXES):
        bins: list[str] = []
        for name in [n for n in OBSERVERS if (evals / n / "difficulty.json").exists()]:
            if measure == "evidence":
                doc = json.loads((evals / name / "difficulty.json").read_text())
            else:
                surprise = read_results(scores / name / "results.csv", episodes)
                doc = difficulty_json(evaluate_difficulty(episodes.refs, surprise, measure=measure), measure)
            bins = bins or doc["bins"]
            curve = doc["groups"]["all"]
            xs = [doc["bins"].index(b) for b in curve]
            ys = [100 * curve[b]["accuracy"] for b in curve]
            err = [[y - 100 * curve[b]["ci_low"] for b, y in zip(curve, ys)],
                   [100 * curve[b]["ci_high"] - y for b, y in zip(curve, ys)]]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, linewidth=1.6, label=name)
        ax.axhline(50, color="grey", linestyle="--", linewidth=1)
        ax.set_xticks(range(len(bins)), bins)
        ax.set_ylim(0, 102)
        ax.set_title(f"bib-ctrl (seed 20211207), binned by {measure}", fontsize=10)
        ax.set_xlabel(f"{label}; smaller is harder")
    axes[0].set_ylabel("pairwise accuracy, all conditions pooled (%)")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{stem}.{ext}", dpi=110, metadata={"Date": None} if ext == "svg" else None)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
