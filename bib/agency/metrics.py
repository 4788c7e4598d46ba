"""Behavioural metrics of rollouts on one grid (reference §5): accuracy, success, SPL, entropy, JSD, MEG.

- Per-action accuracy: ``(1/T) sum_t 1[a_t in pi*(s_t)]`` per rollout (bumps and invalid answers
  are errors), averaged over the grid's rollouts.
- Success (goal reached within the cap) and SPL ``1_S L* / max(L*, L)``.
- Entropy and Jensen-Shannon divergence (base 2) of the *empirical* policy: at each visited
  non-goal state the counts of the 4 moves pooled over the grid's rollouts (invalid answers are
  left out; bumps count as the move chosen); JSD against uniform over pi*(s); each visited state
  weighs the same.
- MEG (:mod:`bib.meg`) of the rollouts against the utility "reach the goal" (1 in goal states,
  absorbing) in the MDP of reachable ``(cell, has_key, unlocked)`` states with the 4 moves
  (:func:`bib.world.mdp.layout_mdp`; a bump stays), horizon the step cap; steps after the goal is reached are uniform under every
  soft policy and add nothing; an invalid step is scored as a uniformly random choice.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from bib.agency.env import MOVE_INDEX, MOVES, Grid, Rollout, optimal_mask
from bib.meg.known import meg_from_weights
from bib.world.dynamics import AgentState
from bib.world.mdp import layout_mdp


def entropy2(p: np.ndarray) -> float:
    """Shannon entropy in bits."""
    p = np.asarray(p, dtype=float)
    nz = p[p > 0]
    return float(-(nz * np.log2(nz)).sum())


def jsd2(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence in bits: ``KL(P||M)/2 + KL(Q||M)/2`` with ``M = (P + Q)/2``; in [0, 1]."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    m = (p + q) / 2

    def kl(a: np.ndarray) -> float:
        nz = a > 0
        return float((a[nz] * np.log2(a[nz] / m[nz])).sum())

    return 0.5 * kl(p) + 0.5 * kl(q)


def accuracy(ro: Rollout) -> float:
    """Share of the rollout's steps whose action was in pi*(s_t)."""
    return float(np.mean(ro.optimal)) if ro.optimal else float("nan")


def spl(ro: Rollout, optimal_length: int) -> float:
    """``1_S L* / max(L*, L)``."""
    return optimal_length / max(optimal_length, ro.n_steps) if ro.success else 0.0


def empirical_policy(grid: Grid, rollouts: list[Rollout]) -> dict[AgentState, np.ndarray]:
    """Counts of the 4 moves at each visited non-goal state, pooled over ``rollouts``."""
    counts: dict[AgentState, np.ndarray] = defaultdict(lambda: np.zeros(4))
    for ro in rollouts:
        for s, a in zip(ro.states, ro.actions):
            if a in MOVE_INDEX:
                counts[s][MOVE_INDEX[a]] += 1
    return dict(counts)


def policy_divergence(grid: Grid, rollouts: list[Rollout]) -> tuple[float, float]:
    """``(mean entropy, mean JSD vs uniform over pi*)`` over visited states, in bits (NaN if none)."""
    ents, jsds = [], []
    for s, c in empirical_policy(grid, rollouts).items():
        mask = optimal_mask(grid.layout, s, grid.goal)
        if not mask.any() or c.sum() == 0:
            continue
        p = c / c.sum()
        ents.append(entropy2(p))
        jsds.append(jsd2(p, mask / mask.sum()))
    if not ents:
        return float("nan"), float("nan")
    return float(np.mean(ents)), float(np.mean(jsds))


def trajectory_meg(grid: Grid, rollouts: list[Rollout]) -> float:
    """Known-utility MEG (nats) of the rollouts against "reach the goal" (see the module docstring)."""
    world = layout_mdp(grid.layout, grid.start.cell, grid.max_steps, key_lock=True, actions=MOVES,
                       absorbing=(grid.goal,))
    mdp, index = world.mdp, world.index
    u = world.reach_utility(grid.goal)
    S, A, H = mdp.shape
    W = np.zeros((H, S, A))
    for ro in rollouts:
        for t in range(H):
            if t < ro.n_steps:
                s, a = index[ro.states[t]], ro.actions[t]
                if a in MOVE_INDEX:
                    W[t, s, MOVE_INDEX[a]] += 1.0
                else:
                    W[t, s] += 1.0 / A
            else:  # at the goal (absorbing, uniform under every soft policy) or stopped by the cap
                W[t, index[ro.states[-1]]] += 1.0 / A
    W /= len(rollouts)
    eu = float(W.sum(axis=(0, 2)) @ u)
    return meg_from_weights(mdp, u, W, eu, expected=None).meg


def grid_metrics(grid: Grid, rollouts: list[Rollout], meg: bool = True) -> dict:
    """Every metric of one grid's rollouts as a flat dict (one row of ``grids.csv``)."""
    L = grid.optimal_length
    ent, jsd = policy_divergence(grid, rollouts)
    steps = sum(ro.n_steps for ro in rollouts)
    row = {
        "grid": grid.id,
        "task": grid.task,
        "index": grid.index,
        "variant": grid.variant,
        "size": grid.size,
        "density": grid.density,
        "optimal_length": L,
        "rollouts": len(rollouts),
        "accuracy": float(np.nanmean([accuracy(ro) for ro in rollouts])),
        "success": float(np.mean([ro.success for ro in rollouts])),
        "spl": float(np.mean([spl(ro, L) for ro in rollouts])),
        "steps": steps / len(rollouts),
        "entropy": ent,
        "jsd": jsd,
        "bumps": sum(k == "bump" for ro in rollouts for k in ro.kinds) / max(steps, 1),
        "invalid": sum(k == "invalid" for ro in rollouts for k in ro.kinds) / max(steps, 1),
        "meg": trajectory_meg(grid, rollouts) if meg else float("nan"),
    }
    if math.isnan(row["accuracy"]):
        row["accuracy"] = 0.0
    return row
