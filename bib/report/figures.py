"""Report figures: matplotlib SVGs with fixed ids and no date, so the same input gives the same bytes."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bib.io import atomic_write_text

CHANCE = 0.5
#: Colours of the series of a bar chart (ours first), and of published anchors.
PALETTE = ["#3b6ea5", "#d9822b", "#5b9e4d", "#b0413e", "#7a5ea8", "#8c6d46", "#c45ca2", "#6b6b6b"]
ANCHOR_COLOUR = "#999999"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_svg(fig: Any, path: Path) -> None:
    """Write ``fig`` as a deterministic SVG (``svg.hashsalt`` fixed, no date) and close it."""
    plt = _pyplot()
    buf = io.StringIO()
    with plt.rc_context({"svg.hashsalt": "bib-report", "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "bib report"}, bbox_inches="tight")
    plt.close(fig)
    atomic_write_text(path, buf.getvalue(), durable=False)


def accuracy_bars(conditions: Sequence[str], series: dict[str, dict[str, tuple[float, float, float]]],
                  anchors: dict[str, dict[str, float]], path: Path) -> None:
    """Grouped bars of accuracy per condition with 95% CI whiskers, one series per observer;
    published accuracies as grey markers; a dashed line at chance.

    Args:
        conditions: x-axis order.
        series: ``{observer: {condition: (accuracy, ci_low, ci_high)}}`` in [0, 1].
        anchors: ``{model: {condition: accuracy}}`` in [0, 1] (published).
        path: SVG file.
    """
    plt = _pyplot()
    n = max(len(series), 1)
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(conditions) + 2), 3.8))
    for k, (name, values) in enumerate(series.items()):
        xs, ys, lo, hi = [], [], [], []
        for i, c in enumerate(conditions):
            if c in values:
                acc, low, high = values[c]
                xs.append(i - 0.4 + width * (k + 0.5))
                ys.append(acc)
                lo.append(acc - low if math.isfinite(low) else 0.0)
                hi.append(high - acc if math.isfinite(high) else 0.0)
        ax.bar(xs, ys, width=width * 0.92, color=PALETTE[k % len(PALETTE)], label=name,
               yerr=[lo, hi], capsize=2, error_kw={"elinewidth": 0.8})
    markers = "osD^v<>ph"
    for j, (model, values) in enumerate(anchors.items()):
        xs = [i for i, c in enumerate(conditions) if c in values]
        ax.scatter(xs, [values[conditions[i]] for i in xs], marker=markers[j % len(markers)], s=18,
                   facecolors="none", edgecolors=ANCHOR_COLOUR, linewidths=0.9, zorder=3, label=f"{model} (published)")
    ax.axhline(CHANCE, color="black", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(conditions)))
    ax.set_xticklabels(conditions, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pairwise accuracy")
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.32), frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    save_svg(fig, path)


def count_bars(labels: Sequence[str], counts: Sequence[int], title: str, path: Path) -> None:
    """Horizontal bars of counts (e.g. excluded rows per reason)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 0.35 * max(len(labels), 1) + 1.0))
    ax.barh(range(len(labels)), counts, color=PALETTE[0])
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(title)
    for i, c in enumerate(counts):
        ax.text(c, i, f" {c}", va="center", fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    save_svg(fig, path)


def estimates_plot(rows: Sequence[tuple[str, float, float, float]], xlabel: str, path: Path) -> None:
    """Point estimates with CI bars, one row per label, and a line at 0 (a forest plot)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 0.45 * max(len(rows), 1) + 1.0))
    for i, (_label, est, lo, hi) in enumerate(rows):
        if all(math.isfinite(v) for v in (est, lo, hi)):
            ax.plot([lo, hi], [i, i], color=PALETTE[0], linewidth=1.5)
        if math.isfinite(est):
            ax.plot([est], [i], "o", color=PALETTE[0])
    ax.axvline(0, color="black", linestyle="--", linewidth=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r[0] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.spines[["top", "right"]].set_visible(False)
    save_svg(fig, path)


def difficulty_lines(bins: Sequence[str], groups: dict[str, dict[str, tuple[float, float, float]]], path: Path) -> None:
    """Accuracy per difficulty bin, one line per group (``all`` bold), CI whiskers, chance dashed."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    for k, (group, values) in enumerate(groups.items()):
        xs = [i for i, b in enumerate(bins) if b in values]
        ys = [values[bins[i]][0] for i in xs]
        lo = [ys[j] - values[bins[i]][1] if math.isfinite(values[bins[i]][1]) else 0.0 for j, i in enumerate(xs)]
        hi = [values[bins[i]][2] - ys[j] if math.isfinite(values[bins[i]][2]) else 0.0 for j, i in enumerate(xs)]
        bold = group == "all"
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", markersize=3, capsize=2, linewidth=2.2 if bold else 0.9,
                    color="black" if bold else PALETTE[k % len(PALETTE)], label=group)
    ax.axhline(CHANCE, color="black", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(bins)))
    ax.set_xticklabels(bins, fontsize=8)
    ax.set_xlabel("difficulty bin")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pairwise accuracy")
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.25), frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    save_svg(fig, path)
