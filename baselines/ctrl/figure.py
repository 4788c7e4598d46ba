"""Draw baselines/ctrl/difficulty.{png,svg}: every observer's accuracy per difficulty bin (all conditions pooled).

Usage: python baselines/ctrl/figure.py EVAL_ROOT OUT_STEM
EVAL_ROOT holds eval-ctrl/<observer>/difficulty.json and eval-eval/<observer>/difficulty.json
(`bib evaluate --out` folders); one panel per set.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from matplotlib.figure import Figure

OBSERVERS = ["inverse-planner", "bc-mlp", "bc-rnn", "video-rnn"]
SETS = [("eval-ctrl", "bib-ctrl (seed 20211207)"), ("eval-eval", "bib-eval (seed 20211206)")]


def main(root: Path, stem: Path) -> None:
    fig = Figure(figsize=(11, 4.2))
    axes = fig.subplots(1, len(SETS), sharey=True)
    for ax, (folder, title) in zip(axes, SETS):
        bins: list[str] = []
        for name in OBSERVERS:
            path = root / folder / name / "difficulty.json"
            if not path.exists():
                continue
            doc = json.loads(path.read_text())
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
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("excess path cost of the deviation (cells; smaller is harder)")
    axes[0].set_ylabel("pairwise accuracy, all conditions pooled (%)")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{stem}.{ext}", dpi=110, metadata={"Date": None} if ext == "svg" else None)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
