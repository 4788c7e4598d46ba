"""Key rooms (reference §7): key pickup, non-optimal moves that head for the key, two-path corridor choice.

For every rollout: whether it picked the key up; how many of its non-optimal steps taken before
a pickup there were, and how many of those were optimal *towards the key* (pi* with the key cell
as the goal, as ``replace_key_with_goal`` in the published analysis); whether it stepped on the
key's cell (for a key-less copy of a two-path grid: the cell where the key was), and the cells
it visited (for the Jaccard overlap of a two-path grid with and without its key).
"""

from __future__ import annotations

import numpy as np

from bib.agency.env import Grid, Rollout, optimal_set
from bib.tasks import task_ids
from bib.world.grid import Cell

KEY_TASKS = task_ids("agent", family="keys")
"""The key-room grids: the agent tasks of family ``keys`` in the task registry."""


def key_columns(grid: Grid, rollouts: list[Rollout], key_cell: Cell | None) -> dict:
    """Key columns of one grid's row: ``pickup``, ``key_cell_visit``, ``nonopt_before_pickup``, ``nonopt_toward_key``."""
    if key_cell is None:
        return {}
    before = toward = 0
    for ro in rollouts:
        for s, a, ok in zip(ro.states, ro.actions, ro.optimal):
            if s.has_key or ok:
                continue
            before += 1
            toward += a in optimal_set(grid.layout, s, key_cell)
    return {
        "pickup": float(np.mean([ro.states[-1].has_key for ro in rollouts])),
        "key_cell_visit": float(np.mean([key_cell in ro.cells for ro in rollouts])),
        "nonopt_before_pickup": before,
        "nonopt_toward_key": toward,
    }


def jaccard(a: set, b: set) -> float:
    """``|a & b| / |a | b|`` (1 for two empty sets)."""
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def visited(rollouts: list[Rollout]) -> set[Cell]:
    """Every cell the rollouts stood on."""
    return {c for ro in rollouts for c in ro.cells}


def key_summary(rows: list[dict]) -> list[dict]:
    """Per (task, variant): grids, success, accuracy, pickup rate, key-cell visits, share of non-optimal moves toward the key, Jaccard."""
    out = []
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        if r["task"] in KEY_TASKS:
            groups.setdefault((r["task"], r["variant"]), []).append(r)
    for (task, variant), rs in sorted(groups.items()):
        before = sum(int(r.get("nonopt_before_pickup", 0) or 0) for r in rs)
        toward = sum(int(r.get("nonopt_toward_key", 0) or 0) for r in rs)
        jac = [r["jaccard_no_key"] for r in rs if r.get("jaccard_no_key") == r.get("jaccard_no_key")
               and r.get("jaccard_no_key") is not None]
        out.append({
            "task": task,
            "variant": variant,
            "grids": len(rs),
            "rollouts": int(sum(r["rollouts"] for r in rs)),
            "success": float(np.mean([r["success"] for r in rs])),
            "accuracy": float(np.mean([r["accuracy"] for r in rs])),
            "pickup": float(np.mean([r.get("pickup", np.nan) for r in rs])),
            "key_cell_visit": float(np.mean([r.get("key_cell_visit", np.nan) for r in rs])),
            "nonopt_before_pickup": before,
            "toward_key_share": toward / before if before else float("nan"),
            "jaccard_no_key": float(np.mean(jac)) if jac else float("nan"),
        })
    return out
