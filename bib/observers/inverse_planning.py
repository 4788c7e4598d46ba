"""``inverse-planner``: Bayesian inverse planning over the preferred object and rationality beta (a simplified HBToM).

Generative model of one agent (agents are told apart by shape and colour):

- a preference ``theta ~ Dirichlet(alpha)`` over object identities (shape + colour, not location,
  so it carries across layouts); each trial the agent wants ``g ~ theta`` among the objects it can
  reach (FEASIBILIZE: unreachable objects are dropped and the rest renormalised);
- a rationality ``beta`` on a small grid, shared by all the agent's trials;
- moves from a Boltzmann policy ``pi(a|s) ∝ exp(beta * Q_g(s, a))`` with exact shortest-path Q-values
  in the (cell, has_key, unlocked) state space, so an instrumental agent plans to fetch the key
  and open the lock (:mod:`bib.observers.goal_values`);
- stepping onto an object ends the trial exactly when it is the goal (a trial that ends anywhere
  else, e.g. on the key, is treated as cut short);
- with probability ``epsilon`` a step is noise, uniform over the legal moves and staying.

Familiarization trials are filtered in order: each trial's joint posterior over (goal, beta)
adds its goal marginal to the agent's Dirichlet counts and replaces the agent's beta belief
(assumed-density filtering, HBToM's approximate conjugate update). A new agent starts from the
prior. The surprise of a test step is ``-log p(move_t | moves_<t, familiarization)`` under the
posterior predictive, updated step by step within the test trial.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bib.episode import Episode, Trial
from bib.errors import BibInputError
from bib.meg.soft import logsumexp
from bib.observers.base import BaseObserver
from bib.observers.goal_values import (
    boltzmann_log_policy,
    layout_goal_values,
    move_q_values,
    step_surprises,
    trial_moves,
    via_key_values,
)
from bib.world.grid import Cell
from bib.world.keylock import DIRECT, NO_KEY

DEFAULT_BETAS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
"""Rationality grid (inverse temperature per unit of path cost), uniform prior."""

Identity = tuple[str, tuple[int, int, int]]


@dataclass
class AgentBelief:
    """What the observer believes about one agent: Dirichlet pseudo-counts and a log posterior over beta."""

    counts: dict[Identity, float]
    log_beta: np.ndarray


KEY: Identity = ("key", (0, 0, 0))
"""Identity of the key as a goal in its own right (an agent may simply want the key)."""

VIA_KEY_PRIOR = 0.03
"""Default pseudo-count share of an "object with the key" goal (:class:`InversePlanner`'s ``via_key``)."""

VIA_KEY = "via-key:"
"""Prefix of the identity of an object wanted together with the key (the agent fetches the key, needed or
not, then goes to the object: ``(VIA_KEY + shape, colour)``)."""


@dataclass(frozen=True)
class Goal:
    """A goal hypothesis of one trial: an object (or the key), its identity and its cell; ``via_key``: the
    object wanted with the key (reached only once the key is held)."""

    identity: Identity
    cell: Cell
    is_key: bool
    via_key: bool = False


@dataclass(frozen=True)
class TrialInference:
    """Result of filtering one trial.

    Attributes:
        surprise: ``-log p(move_t | belief before the trial)`` per step, shape ``[T]``: each move
            scored against the prior predictive alone (the belief is not updated by earlier moves
            of the same trial).
        sequential_surprise: ``-log p(move_t | belief, moves_<t)`` per step: the sequential
            posterior predictive (Bayes-updated after every move of the trial).
        goals: identities of the trial's feasible goals (hypotheses), in layout order.
        log_posterior: joint log posterior ``[G, B]`` over (goal, beta) after the trial.
    """

    surprise: np.ndarray
    sequential_surprise: np.ndarray
    goals: tuple[Identity, ...]
    log_posterior: np.ndarray


class InversePlanner(BaseObserver):
    """Bayesian inverse planning observer (see the module docstring for the model).

    Args:
        betas: rationality grid (all > 0).
        beta_prior: prior weights over ``betas`` (uniform by default).
        alpha: Dirichlet pseudo-count of every object identity.
        via_key: the pseudo-count of each "object with the key" goal, as a share of ``alpha`` (an agent
            that fetches a key it does not need; 0 leaves the hypothesis out).
        epsilon: probability that a step is uniform noise (bounds the surprise of any move).
        hidden: where the familiarization shows an occluder and the test removes it, add to every test step the
            surprise of what it reveals under the hidden-obstacle posterior (:mod:`bib.observers.hidden_obstacles`).
        costs: where the trials show costly terrain (mud), score the episode with the cost model
            (:mod:`bib.observers.cost_model`: rewards per object, a Boltzmann choice of the goal given reward minus
            the cost the mud adds); episodes without mud are scored as without it.
    """

    name = "inverse-planner"

    def __init__(
        self,
        betas: Sequence[float] = DEFAULT_BETAS,
        beta_prior: Sequence[float] | None = None,
        alpha: float = 1.0,
        epsilon: float = 1e-3,
        sequential: bool = False,
        via_key: float = VIA_KEY_PRIOR,
        hidden: bool = True,
        costs: bool = True,
    ) -> None:
        self.hidden = bool(hidden)
        self.costs = bool(costs)
        self._cost_model = None
        self.betas = np.asarray(betas, dtype=np.float64)
        if self.betas.ndim != 1 or self.betas.size == 0 or not np.all(self.betas > 0) or not np.all(np.isfinite(self.betas)):
            raise BibInputError(f"inverse-planner: betas must be a non-empty list of positive numbers, got {list(betas)}")
        prior = np.ones_like(self.betas) if beta_prior is None else np.asarray(beta_prior, dtype=np.float64)
        if prior.shape != self.betas.shape or np.any(prior < 0) or prior.sum() <= 0:
            raise BibInputError("inverse-planner: beta_prior needs one non-negative weight per beta, not all zero")
        with np.errstate(divide="ignore"):
            self.log_beta_prior = np.log(prior / prior.sum())
        if alpha <= 0:
            raise BibInputError(f"inverse-planner: alpha must be > 0, got {alpha}")
        if not 0 < epsilon < 1:
            raise BibInputError(f"inverse-planner: epsilon must be in (0, 1), got {epsilon}")
        if not 0 <= via_key <= 1:
            raise BibInputError(f"inverse-planner: via_key must be in [0, 1], got {via_key}")
        self.via_key = float(via_key)
        self.alpha = float(alpha)
        self.epsilon = float(epsilon)
        self.sequential = bool(sequential)
        self._cache: OrderedDict[tuple[Trial, ...], dict[Identity, AgentBelief]] = OrderedDict()

    # ------------------------------------------------------------------ public API

    def surprise(self, episode: Episode) -> np.ndarray:
        """``-log`` posterior predictive probability of each test move, given the familiarization trials."""
        if self.costs and any(t.layout.terrain for t in episode.trials):
            from bib.observers.cost_model import CostModel, applies

            if applies(episode):
                if self._cost_model is None:
                    self._cost_model = CostModel(self)
                return self._cost_model.surprise(episode)
        values = layout_goal_values([t.layout for t in episode.trials])
        fam = episode.familiarization
        beliefs = self._familiarize_cached(fam, values[: len(fam)])
        test = episode.test
        result = self.infer_trial(test, self.belief_of(beliefs, test), values[-1])
        out = result.sequential_surprise if self.sequential else result.surprise
        if self.hidden and fam and fam[0].occluder is not None and test.occluder is None:
            from bib.observers.hidden_obstacles import reveal_surprise

            out = out + reveal_surprise(self, episode)  # the same at every step: what the removed occluder shows
        return out

    def familiarize(
        self, trials: Sequence[Trial], values: Sequence[dict] | None = None
    ) -> dict[Identity, AgentBelief]:
        """Filter familiarization trials in order; return the belief about each agent seen."""
        if values is None:
            values = layout_goal_values([t.layout for t in trials])
        beliefs: dict[Identity, AgentBelief] = {}
        for trial, vals in zip(trials, values):
            key = self.agent_key(trial)
            belief = beliefs.setdefault(key, self.prior_belief())
            result = self.infer_trial(trial, belief, vals, surprise=False)
            beliefs[key] = self.updated(belief, result)
        return beliefs

    @staticmethod
    def updated(belief: AgentBelief, result: TrialInference) -> AgentBelief:
        """The belief after a trial (its goal marginal added to the Dirichlet counts, its beta marginal the new
        beta belief); unchanged when the trial had no feasible goal."""
        if not result.goals:
            return belief
        counts = dict(belief.counts)
        for goal, weight in zip(result.goals, np.exp(result.log_posterior).sum(axis=1)):
            counts[goal] = counts.get(goal, 0.0) + float(weight)
        return AgentBelief(counts, logsumexp(result.log_posterior, axis=(0,)))

    def prior_belief(self) -> AgentBelief:
        """The belief about an agent never seen before."""
        return AgentBelief({}, self.log_beta_prior.copy())

    @staticmethod
    def agent_key(trial: Trial) -> Identity:
        """How the observer tells agents apart: by shape and colour."""
        return (trial.agent.shape, trial.agent.color)

    def belief_of(self, beliefs: dict[Identity, AgentBelief], trial: Trial) -> AgentBelief:
        """The belief about the agent of ``trial`` (the prior for a new agent)."""
        return beliefs.get(self.agent_key(trial)) or self.prior_belief()

    def goal_prior(self, belief: AgentBelief, goals: Sequence[Identity]) -> np.ndarray:
        """Posterior-predictive probability that the agent wants each of ``goals`` (the feasible ones)."""
        weights = np.array([self.alpha * (self.via_key if g[0].startswith(VIA_KEY) else 1.0) + belief.counts.get(g, 0.0)
                            for g in goals])
        return weights / weights.sum()

    def infer_trial(
        self, trial: Trial, belief: AgentBelief, values: dict | None = None, surprise: bool = True
    ) -> TrialInference:
        """Filter one trial's moves given the belief about its agent.

        Args:
            trial: the trial.
            belief: what is believed about its agent before the trial.
            values: ``{goal cell: V[4, H, W]}`` of the trial's layout (computed when omitted).
            surprise: compute the per-step surprises (False: only the posterior, for familiarization).

        Returns:
            The per-step surprise and the joint posterior over (feasible goal, beta).
        """
        identities, log_lik, log_noise = self.move_log_likelihood(trial, values)
        if not identities:
            return TrialInference(-log_noise, -log_noise, (), np.zeros((0, self.betas.size)))
        with np.errstate(divide="ignore"):
            log_prior = np.log(self.goal_prior(belief, identities))[:, None] + belief.log_beta[None, :]
        total = log_prior + log_lik.sum(axis=2)
        posterior = total - logsumexp(total, axis=(0, 1))
        if not surprise:
            return TrialInference(np.zeros(0), np.zeros(0), identities, posterior)
        marginal, sequential = step_surprises(log_prior, log_lik)
        return TrialInference(marginal, sequential, identities, posterior)

    def move_log_likelihood(
        self, trial: Trial, values: dict | None = None
    ) -> tuple[tuple[Identity, ...], np.ndarray, np.ndarray]:
        """The likelihood of each move of ``trial`` under each feasible goal and beta.

        Returns:
            ``(goals, log_lik, log_noise)``: the identities of the trial's feasible goals (layout order), ``log p(move_t
            | goal, beta)`` ``[G, B, T]`` (the Boltzmann policy mixed with the noise), and the noise alone ``[T]``
            (``log_lik`` is ``[0, B, T]`` when no goal is feasible).
        """
        moves = trial_moves(trial)
        layout = trial.layout
        if values is None:
            values = layout_goal_values([layout])[0]
        home = trial.path[0]
        goals: list[Goal] = [Goal((o.shape, o.color), o.cell, False) for o in layout.objects]
        stacks = {g.identity: values[g.cell] for g in goals}
        if layout.key is not None and layout.key not in {g.cell for g in goals}:
            goals.append(Goal(KEY, layout.key, True))
            stacks[KEY] = values[layout.key]
            if self.via_key > 0:  # every object also "with the key": fetched on the way, needed or not
                for o in layout.objects:
                    via = Goal((VIA_KEY + o.shape, o.color), o.cell, False, via_key=True)
                    goals.append(via)
                    stacks[via.identity] = via_key_values(layout, values[o.cell], values[layout.key])
        goals = [g for g in goals if np.isfinite(stacks[g.identity][NO_KEY, home[1], home[0]])]  # FEASIBILIZE
        # noise: uniform over the legal moves and staying
        log_noise = np.log(self.epsilon) - np.log(moves.legal.sum(axis=1) + 1.0)  # [T]
        if not goals:
            return (), np.zeros((0, self.betas.size, moves.n_steps)), log_noise
        stack = np.stack([stacks[g.identity] for g in goals])
        log_pi = boltzmann_log_policy(move_q_values(moves, stack), self.betas)  # [G, B, T, 8]
        t_idx = np.arange(moves.n_steps)
        taken = np.where(moves.taken >= 0, moves.taken, 0)
        log_obs = log_pi[:, :, t_idx, taken]  # [G, B, T]
        log_obs = np.where(moves.taken[None, None, :] >= 0, log_obs, -np.inf)
        with np.errstate(divide="ignore"):
            log_term = np.log(termination(trial, goals, stack))
        log_obs = log_obs + np.log1p(-self.epsilon) + log_term[:, None, :]
        log_lik = np.logaddexp(log_obs, log_noise[None, None, :])  # [G, B, T]
        return tuple(g.identity for g in goals), log_lik, log_noise

    # ------------------------------------------------------------------ helpers

    def _familiarize_cached(self, trials: Sequence[Trial], values: Sequence[dict]) -> dict[Identity, AgentBelief]:
        """:meth:`familiarize`, remembered for the last few sets of trials (a pair shares them)."""
        key = tuple(trials)
        hit = self._cache.get(key)
        if hit is None:
            hit = self.familiarize(trials, values)
            self._cache[key] = hit
            while len(self._cache) > 16:
                self._cache.popitem(last=False)
        return hit


def termination(trial: Trial, goals: Sequence[Goal], values: np.ndarray) -> np.ndarray:
    """``[G, T]`` 1/0: is where each step arrives (and whether the trial stops there) consistent with goal g.

    Reaching the goal ends the trial, so walking over it is impossible and stopping on another
    object or on the key (when the key is not what the agent wants) is too, with one exception:
    a TEST trial may be cut short right after the agent picks up the key when the key is a subgoal
    of its plan (the goal cannot be reached as cheaply without it), as BIB's blocking test is. A
    familiarization trial shows the agent reach its goal, so one that stops on the key says the
    agent wanted the key. An object wanted with the key (a ``via_key`` goal) is reached only once the key
    is held: before the pickup its cell is another object's (walking over it is possible, stopping on it
    is not). Other arrivals carry no information.
    """
    path = trial.path
    n = len(path) - 1
    layout = trial.layout
    home, key = path[0], layout.key
    ends = {o.cell for o in layout.objects}
    picked = next((t for t in range(1, n + 1) if path[t] == key), n + 1)  # the step the key is picked up
    out = np.ones((len(goals), n))
    for g, goal in enumerate(goals):
        for t in range(1, n + 1):
            cell, last = path[t], t == n
            if cell == goal.cell and (not goal.via_key or t > picked):
                out[g, t - 1] = float(last)
            elif last and cell in ends:
                out[g, t - 1] = 0.0
            elif last and cell == key and not goal.is_key:
                if trial.phase != "test":
                    out[g, t - 1] = 0.0
                    continue
                v = values[g]
                subgoal = v[NO_KEY, home[1], home[0]] < v[DIRECT, home[1], home[0]] - 1e-9
                out[g, t - 1] = float(subgoal)
    return out


def make_inverse_planner(
    checkpoint: Path | None = None,
    betas: Sequence[float] = DEFAULT_BETAS,
    beta_prior: Sequence[float] | None = None,
    alpha: float = 1.0,
    epsilon: float = 1e-3,
    sequential: bool = False,
    via_key: float = VIA_KEY_PRIOR,
    hidden: bool = True,
    costs: bool = True,
) -> InversePlanner:
    """Factory for ``inverse-planner`` (it learns from each episode's familiarization; no checkpoint)."""
    if checkpoint is not None:
        raise BibInputError(f"observer 'inverse-planner' takes no --checkpoint (got {checkpoint})")
    return InversePlanner(betas=betas, beta_prior=beta_prior, alpha=alpha, epsilon=epsilon, sequential=sequential,
                          via_key=via_key, hidden=hidden, costs=costs)
