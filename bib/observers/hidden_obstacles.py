"""Hidden obstacles behind an occluder: the inverse planner's hypotheses about what the occluder hides (issue 43).

What the observer is handed of a familiarization with an occluder (:mod:`bib.world.occluder`) is the rectangle
and the agent's walks; the cells under it read as free, and what lies there is unknown. The hypothesis space is

- nothing (prior 1/2), or
- one straight wall segment, one cell wide, 2 to :data:`MAX_LENGTH` cells long, across or along the rectangle,
  anywhere under it (the other 1/2, uniform over the segments),

kept only where every familiarization walk stays legal with it in place (an agent does not walk through a wall
or cut its corner). The posterior weighs each hypothesis by the likelihood of the walks under the inverse
planner's own agent model (a Boltzmann policy over the goal and beta, filtered trial by trial as in
:meth:`bib.observers.inverse_planning.InversePlanner.familiarize`) in the layouts with the hypothesis' walls.

At test the occluder is removed and the cells it hid are shown. The surprise of that reveal is
``-log P(revealed | walks)``; a revealed shape outside the space joins it for the evaluation with one segment's
prior weight, so any reveal is scored. The planner adds it to every test step (the max readout then adds it
once). Nothing here reads anything but the episode a model is handed (its blind view).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from bib.episode import Episode, Trial
from bib.meg.soft import logsumexp
from bib.observers.goal_values import layout_goal_values
from bib.world.dynamics import action_between, move_legal
from bib.world.grid import Cell
from bib.world.occluder import Occluder

if TYPE_CHECKING:
    from bib.observers.inverse_planning import InversePlanner

MAX_LENGTH = 6
"""The longest wall segment the observer considers hidden (cells)."""
NOTHING_PRIOR = 0.5
"""Prior probability that the occluder hides nothing."""


def segments(occ: Occluder, max_length: int = MAX_LENGTH) -> list[frozenset[Cell]]:
    """Every straight segment (one cell wide, 2 to ``max_length`` long, vertical or horizontal) under ``occ``."""
    out: dict[frozenset[Cell], None] = {}
    for length in range(2, max_length + 1):
        for x in range(occ.x0, occ.x1 + 1):
            for y in range(occ.y0, occ.y1 - length + 2):
                out[frozenset((x, y + i) for i in range(length))] = None
        for y in range(occ.y0, occ.y1 + 1):
            for x in range(occ.x0, occ.x1 - length + 2):
                out[frozenset((x + i, y) for i in range(length))] = None
    return list(out)


def legal_with(trial: Trial, walls: frozenset[Cell]) -> bool:
    """Whether ``trial``'s walk stays legal with ``walls`` added to its layout."""
    if not walls:
        return True
    lay = replace(trial.layout, walls=trial.layout.walls | walls)
    for a, b in zip(trial.path, trial.path[1:]):
        action = action_between(a, b)
        if action is None or not move_legal(lay, a, action):
            return False
    return True


def walks_log_likelihood(planner: InversePlanner, trials: tuple[Trial, ...], walls: frozenset[Cell]) -> float:
    """``log p(walks | walls hidden)``: the familiarization filtered by the planner in layouts with ``walls``."""
    if not all(legal_with(t, walls) for t in trials):
        return -math.inf
    shown = [replace(t, layout=replace(t.layout, walls=t.layout.walls | walls)) for t in trials]
    values = layout_goal_values([t.layout for t in shown])
    beliefs: dict = {}
    total = 0.0
    for trial, vals in zip(shown, values):
        key = planner.agent_key(trial)
        belief = beliefs.get(key) or planner.prior_belief()
        result = planner.infer_trial(trial, belief, vals)
        total -= float(np.sum(result.sequential_surprise))
        beliefs[key] = planner.updated(belief, result)
    return total


def hidden_posterior(planner: InversePlanner, trials: tuple[Trial, ...],
                     extra: frozenset[Cell] | None = None) -> dict[frozenset[Cell], float]:
    """``{hidden walls: log posterior}`` over the hypotheses (``extra`` added with one segment's prior weight)."""
    occ = trials[0].occluder
    if occ is None:
        raise ValueError("the familiarization shows no occluder")
    segs = [s for s in segments(occ) if all(legal_with(t, s) for t in trials)]
    if extra is not None and extra and extra not in segs:
        segs.append(extra)
    n = max(len(segs), 1)
    hyps = [frozenset(), *segs]
    log_prior = np.array([math.log(NOTHING_PRIOR), *[math.log((1 - NOTHING_PRIOR) / n)] * len(segs)])
    log_lik = np.array([walks_log_likelihood(planner, trials, h) for h in hyps])
    total = log_prior + log_lik
    post = total - logsumexp(total, axis=(0,))
    return dict(zip(hyps, post.tolist()))


_CACHE: dict[tuple, dict[frozenset[Cell], float]] = {}
"""The posterior of the last few familiarizations (a pair's two episodes share theirs)."""
_CACHE_MAX = 16


def reveal_surprise(planner: InversePlanner, episode: Episode) -> float:
    """``-log P(what the test reveals under the familiarization's occluder | the walks)`` (0 when the test's layout
    is not a familiarization layout with cells under the occluder revealed: nothing to score)."""
    fam = episode.familiarization
    occ = fam[0].occluder
    test = episode.test
    if occ is None:
        return 0.0
    base = next((t.layout for t in fam if t.path == test.path), fam[-1].layout)
    revealed = test.layout.walls - base.walls
    if not revealed <= occ.cells or base.walls - test.layout.walls:
        return 0.0
    key = (planner.betas.tobytes(), planner.log_beta_prior.tobytes(), planner.epsilon, planner.alpha,
           planner.via_key, fam)
    posterior = _CACHE.get(key)
    if posterior is None:
        posterior = hidden_posterior(planner, fam)
        while len(_CACHE) >= _CACHE_MAX:
            del _CACHE[next(iter(_CACHE))]
        _CACHE[key] = posterior
    if revealed not in posterior:
        posterior = hidden_posterior(planner, fam, revealed)
    post = posterior[revealed]
    return -post if np.isfinite(post) else FLOOR


FLOOR = -math.log(1e-12)
"""Surprise of a reveal the walks rule out (its walls cross a walk): a finite cap, nats."""
