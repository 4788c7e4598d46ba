"""Iso-difficulty transforms of square grids and the paired Wilcoxon test (reference §6).

``rotate`` ((x, y) -> (y, W-1-x), MiniGrid's rotate_left), ``reflect`` (x -> W-1-x),
``transpose`` ((x, y) -> (y, x)) and ``swap`` (agent and goal exchange places) keep the grid
size and the optimal path length (``swap`` only where the key plays no role: it would strand
the agent of a key-door grid behind the door, so the suite transforms navigation grids). :func:`paired_tests` pairs per-grid means of a transformed
variant with its base grid and runs ``scipy.stats.wilcoxon(transform, base)`` (two-sided) with
the rank-biserial effect size; a test is skipped with fewer than 10 pairs or fewer than 5
non-zero differences.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from bib.tasks.agent_grids import GOAL
from bib.world.grid import Cell, Layout

TRANSFORMS: tuple[str, ...] = ("rotate", "reflect", "transpose", "swap")
MIN_PAIRS = 10
MIN_NONZERO = 5


def map_layout(layout: Layout, f: Callable[[Cell], Cell]) -> Layout:
    """The layout with every cell (walls, barriers, lock, key, objects, homes) mapped by ``f``."""
    return replace(
        layout,
        walls=frozenset(map(f, layout.walls)),
        barriers=frozenset(map(f, layout.barriers)),
        lock=None if layout.lock is None else f(layout.lock),
        key=None if layout.key is None else f(layout.key),
        objects=tuple(replace(o, cell=f(o.cell)) for o in layout.objects),
        agents=tuple(replace(a, home=f(a.home)) for a in layout.agents),
    )


def transform(layout: Layout, name: str) -> Layout:
    """The layout under transform ``name`` (one of :data:`TRANSFORMS`); square grids only."""
    if layout.width != layout.height:
        raise ValueError(f"transforms need a square grid, got {layout.width} x {layout.height}")
    n = layout.width
    if name == "rotate":
        return map_layout(layout, lambda c: (c[1], n - 1 - c[0]))
    if name == "reflect":
        return map_layout(layout, lambda c: (n - 1 - c[0], c[1]))
    if name == "transpose":
        return map_layout(layout, lambda c: (c[1], c[0]))
    if name == "swap":
        home, goal = layout.agent.home, layout.goal_cell(GOAL)
        return replace(
            layout,
            objects=tuple(replace(o, cell=home) if o.id == GOAL else o for o in layout.objects),
            agents=(replace(layout.agent, home=goal), *layout.agents[1:]),
        )
    raise ValueError(f"unknown transform {name!r}; known: {', '.join(TRANSFORMS)}")


def rank_biserial(diff: np.ndarray) -> float:
    """Matched-pairs rank-biserial correlation ``(R+ - R-) / (R+ + R-)`` of non-zero differences."""
    from scipy.stats import rankdata

    d = np.asarray(diff, dtype=float)
    d = d[d != 0]
    if d.size == 0:
        return 0.0
    ranks = rankdata(np.abs(d))
    plus, minus = ranks[d > 0].sum(), ranks[d < 0].sum()
    return float((plus - minus) / (plus + minus))


def paired_test(transformed: np.ndarray, base: np.ndarray) -> dict:
    """Wilcoxon signed-rank test of paired per-grid means (two-sided) with the rank-biserial effect.

    Returns a dict with ``pairs``, ``nonzero``, ``mean_diff``, ``statistic``, ``p``, ``effect``
    and ``skipped`` (the reason, or ``""``); statistic, p and effect are NaN when skipped.
    """
    from scipy.stats import wilcoxon

    t, b = np.asarray(transformed, dtype=float), np.asarray(base, dtype=float)
    keep = ~(np.isnan(t) | np.isnan(b))
    t, b = t[keep], b[keep]
    diff = t - b
    out = {"pairs": int(t.size), "nonzero": int((diff != 0).sum()),
           "mean_diff": float(diff.mean()) if t.size else float("nan"),
           "statistic": float("nan"), "p": float("nan"), "effect": float("nan"), "skipped": ""}
    if t.size < MIN_PAIRS:
        out["skipped"] = f"fewer than {MIN_PAIRS} pairs"
    elif out["nonzero"] < MIN_NONZERO:
        out["skipped"] = f"fewer than {MIN_NONZERO} non-zero differences"
    else:
        res = wilcoxon(t, b, alternative="two-sided")
        out.update(statistic=float(res.statistic), p=float(res.pvalue), effect=rank_biserial(diff))
    return out


def paired_tests(rows: list[dict], metrics: tuple[str, ...] = ("success", "accuracy", "spl")) -> list[dict]:
    """One test per (transform, metric) from per-grid rows (``grid`` id ``<base>/<variant>``, ``variant``)."""
    base = {r["grid"].split("/")[0]: r for r in rows if r["variant"] == "base"}
    out = []
    for name in TRANSFORMS:
        pairs = [(r, base[r["grid"].split("/")[0]]) for r in rows
                 if r["variant"] == name and r["grid"].split("/")[0] in base]
        for metric in metrics:
            res = paired_test(np.array([p[0][metric] for p in pairs]), np.array([p[1][metric] for p in pairs]))
            out.append({"transform": name, "metric": metric, **res})
    return out
