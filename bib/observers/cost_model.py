"""The inverse planner's cost model: what an agent values, read from the costs it pays (issue 43, AGENT's "cost-reward").

Where a trial shows costly terrain (mud, :mod:`bib.world.terrain`), the planner of
:mod:`bib.observers.inverse_planning` scores it with this model instead of its Dirichlet goal counts:

- *Costs.* Every trial's cost of reaching an object is the cheapest time from the agent's home with the mud the
  trial's layout SHOWS (:func:`bib.world.terrain.terrain_cost`; the one Dijkstra). Moves are scored with the same
  fields: ``Q(s, a) = -(cost(a) + mud(s') + V(s'))`` (:func:`terrain_values`), and the stays the mud forces (the
  :data:`~bib.world.terrain.MUD_STAYS` steps after stepping onto a mud cell) are the world's, not a choice: they
  carry no information and get surprise 0 (:func:`forced_stays`).
- *Rewards.* Each of the two objects (told apart by shape and colour, as the planner does) has a reward; only the
  difference matters, ``d = R(first) - R(second)`` (the first identity in sorted order), on the grid
  :data:`REWARDS` with a uniform prior.
- *Choice.* In each trial the agent picks its goal among the reachable objects by a Boltzmann choice over reward
  minus cost, ``P(g) ∝ exp(beta_c * (R(g) - C(g)))``, ``beta_c`` on :data:`CHOICE_BETAS` (uniform prior), and
  walks to it by the planner's Boltzmann move policy (its ``betas`` and prior, its noise ``epsilon``).
- *Familiarization.* The joint posterior over ``(d, beta_c, beta)`` is exact on the grid: each trial multiplies in
  ``sum_g P(g | d, beta_c) p(moves | g, beta)``.
- *Test.* The posterior predictive of the test's goal and moves: a move's surprise is
  ``-log sum_{g, beta} P(g, beta | familiarization) p(move | g, beta)`` (each move against the predictive, or with
  the planner's ``sequential``, Bayes-updated after every move), where ``P(g, beta | ...)`` sums the posterior over
  ``(d, beta_c)`` with the test layout's choice probabilities.

The model applies (:func:`applies`) to an episode whose trials show mud and, throughout, one agent and the same two
objects; anything else is scored by the planner as before. Nothing here reads more than the episode a model is
handed (its blind view): the layouts, their mud and the walks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from bib.episode import Episode, Trial
from bib.meg.soft import log_softmax, logsumexp
from bib.observers.goal_values import step_surprises
from bib.world.grid import Cell, Layout
from bib.world.terrain import MUD_COST, cost_field, forced_stays, terrain_cost

if TYPE_CHECKING:
    from bib.observers.inverse_planning import Identity, InversePlanner

REWARDS: tuple[float, ...] = tuple(round(-12.0 + 0.1 * i, 1) for i in range(241))
"""Grid of the reward difference ``d = R(first) - R(second)`` (cells of time), -12 to 12 by 0.1, uniform prior:
wider than any margin a 10 x 10 grid with one ring of mud can show."""
CHOICE_BETAS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
"""Grid of the choice rationality ``beta_c`` (per cell of reward minus cost), uniform prior."""


def applies(episode: Episode) -> bool:
    """Whether the cost model scores ``episode``: some trial shows mud, and every trial shows one agent (the same
    look) and the same two objects (by shape and colour)."""
    trials = episode.trials
    if not any(t.layout.terrain for t in trials):
        return False
    looks = {frozenset((o.shape, o.color) for o in t.layout.objects) for t in trials}
    agents = {(t.agent.shape, t.agent.color) for t in trials}
    return len(looks) == 1 and len(next(iter(looks))) == 2 and len(agents) == 1 and all(
        len(t.layout.objects) == 2 for t in trials)


def without_forced_stays(trial: Trial) -> tuple[Trial, np.ndarray]:
    """``trial`` with the mud's forced stays taken out of its path, and the ``[T]`` mask of the steps kept."""
    forced = forced_stays(trial.layout, trial.path)
    keep = ~forced
    path = (trial.path[0],) + tuple(c for c, k in zip(trial.path[1:], keep) if k)
    return replace(trial, path=path), keep


def terrain_values(layout: Layout) -> dict[Cell, np.ndarray]:
    """``{object cell: V[4, H, W]}`` for the planner's move Q-values with mud: the cheapest time to the object
    (:func:`bib.world.terrain.cost_field`) plus the cell's own mud cost, so that ``Q = -(cost(a) + V(s'))`` charges
    a move onto mud its stays. The same in every key/lock layer (a layout with mud has no key)."""
    extra = np.zeros((layout.height, layout.width))
    for x, y in layout.terrain:
        extra[y, x] = MUD_COST
    out = {}
    for o in layout.objects:
        field = cost_field(layout, o.cell) + extra
        stack = np.broadcast_to(field, (4, layout.height, layout.width))
        out[o.cell] = stack
    return out


def choice_log_probs(layout: Layout, goals: Sequence[Identity], first: Identity, betas: np.ndarray) -> np.ndarray:
    """``log P(goal | d, beta_c)`` ``[G, D, Bc]`` over the trial's feasible ``goals``: a Boltzmann choice over
    reward (``d`` for ``first``, 0 for the other) minus the cheapest time from the home, mud included."""
    home = layout.agent.home
    cell = {(o.shape, o.color): o.cell for o in layout.objects}
    rewards = np.asarray(REWARDS)
    utility = np.stack([(rewards if g == first else np.zeros_like(rewards)) - terrain_cost(layout, home, cell[g])
                        for g in goals])  # [G, D]
    return log_softmax(betas[None, None, :] * utility[:, :, None], axis=0)


class CostModel:
    """The cost model of one planner (its betas, prior and noise); posteriors of the last few familiarizations are
    remembered (a pair shares its familiarization)."""

    def __init__(self, planner: InversePlanner) -> None:
        self.planner = planner
        self.choice_betas = np.asarray(CHOICE_BETAS)
        self._cache: OrderedDict[tuple[Trial, ...], np.ndarray] = OrderedDict()

    def trial_terms(self, trial: Trial, first: Identity) -> tuple[tuple[Identity, ...], np.ndarray, np.ndarray,
                                                                  np.ndarray, np.ndarray]:
        """``(goals, log_choice [G, D, Bc], log_lik [G, B, T'], log_noise [T'], keep [T])`` of one trial (``T'`` its
        steps without the forced stays)."""
        shown, keep = without_forced_stays(trial)
        goals, log_lik, log_noise = self.planner.move_log_likelihood(shown, terrain_values(shown.layout))
        return goals, choice_log_probs(shown.layout, goals, first, self.choice_betas), log_lik, log_noise, keep

    def posterior(self, fam: Sequence[Trial], first: Identity) -> np.ndarray:
        """``log P(d, beta_c, beta | familiarization)`` ``[D, Bc, B]``."""
        key = tuple(fam)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        n_d, n_c = len(REWARDS), self.choice_betas.size
        total = (np.full((n_d, n_c, 1), -np.log(n_d * n_c)) + self.planner.log_beta_prior[None, None, :])
        for trial in fam:
            goals, log_choice, log_lik, _, _ = self.trial_terms(trial, first)
            if not goals:
                continue
            walk = log_lik.sum(axis=2)  # [G, B]
            total = total + logsumexp(log_choice[:, :, :, None] + walk[:, None, None, :], axis=(0,))
        post = total - logsumexp(total, axis=(0, 1, 2))
        self._cache[key] = post
        while len(self._cache) > 16:
            self._cache.popitem(last=False)
        return post

    def surprise(self, episode: Episode) -> np.ndarray:
        """Per test step: ``-log`` posterior predictive of the move (0 at the stays the mud forces)."""
        first = min((o.shape, o.color) for o in episode.trials[0].layout.objects)
        post = self.posterior(episode.familiarization, first)
        test = episode.test
        goals, log_choice, log_lik, log_noise, keep = self.trial_terms(test, first)
        if not goals:
            scored = -log_noise
        else:
            log_prior = logsumexp(post[None, :, :, :] + log_choice[:, :, :, None], axis=(1, 2))  # [G, B]
            marginal, sequential = step_surprises(log_prior, log_lik)
            scored = sequential if self.planner.sequential else marginal
        out = np.zeros(keep.size)
        out[keep] = scored
        return out

    def predictive(self, episode: Episode) -> dict[Identity, float]:
        """``P(goal | familiarization)`` of the test trial's reachable objects (the choice the model predicts)."""
        first = min((o.shape, o.color) for o in episode.trials[0].layout.objects)
        post = self.posterior(episode.familiarization, first)
        goals, log_choice, _, _, _ = self.trial_terms(episode.test, first)
        log_p = logsumexp(post[None, :, :, :] + log_choice[:, :, :, None], axis=(1, 2, 3))
        return {g: float(np.exp(v)) for g, v in zip(goals, log_p)}

    def reward_posterior(self, fam: Sequence[Trial]) -> tuple[Identity, np.ndarray]:
        """``(first, P(d | familiarization))`` over :data:`REWARDS` (``d = R(first) - R(other)``)."""
        first = min((o.shape, o.color) for o in fam[0].layout.objects)
        return first, np.exp(logsumexp(self.posterior(fam, first), axis=(1, 2)))
