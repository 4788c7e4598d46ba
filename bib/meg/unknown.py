"""Unknown-utility MEG (Definition 4.3): linear/tabular utilities by L-BFGS, an MLP class, and target-variable MEG."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bib.errors import BibInputError
from bib.meg.known import MEGResult, known_utility_meg, meg_from_weights, megs_from_weights
from bib.meg.lbfgs import Steps, minimise
from bib.meg.soft import (
    Stack,
    action_major,
    forward,
    single_entries,
    soft_value_iteration,
    stacked_loglik_visits,
    state_action_occupancy,
    trajectory_loglik_visits,
    weighted_loglik,
)
from bib.world.tabular import TabularMDP

LBFGS_ITERATIONS = 500
"""L-BFGS iterations of :func:`linear_utility_meg` (and so of target-variable MEG) by default."""


@dataclass(frozen=True)
class UnknownMEGResult:
    """Unknown-utility MEG over a class of utilities.

    Attributes:
        meg: the best value found (a lower bound of the supremum for non-concave classes).
        utility: the best utility ``U[S]`` found (its scale carries the rationality parameter).
        runs: MEG of each restart.
        mean, std: mean and standard deviation of ``runs`` (the paper reports these for the MLP).
        utility_class: ``"linear"``, ``"tabular"``, ``"target"`` or ``"mlp"``.
        known: known-utility MEG of ``utility`` with its exact beta (incl. +-inf); ``meg >= known.meg``.
    """

    meg: float
    utility: np.ndarray
    runs: tuple[float, ...]
    mean: float
    std: float
    utility_class: str
    known: MEGResult

    def to_dict(self) -> dict:
        """JSON-friendly summary (without the utility vector)."""
        return {
            "meg": self.meg, "mean": self.mean, "std": self.std, "runs": list(self.runs),
            "utility_class": self.utility_class, "beta_of_best_utility": self.known.to_dict()["beta"],
        }


class _Objective:
    """``L(U) = sum_t E_pi[log pi_U,t + log|A|]`` at beta = 1 and its exact gradient ``c_pi - c_U``.

    ``c`` are the visit counts ``sum_{t<H} D_t``; with ``L(U) = U . c_pi - initial . Vs_0(U) + const``
    the gradient of the log-partition term is the soft policy's own visit counts.
    """

    def __init__(self, mdp: TabularMDP, policy: np.ndarray | None, weights: np.ndarray | None = None) -> None:
        self.mdp = mdp
        self.policy = None if policy is None else mdp.as_policy(policy)
        if self.policy is not None:
            self.weights = state_action_occupancy(mdp, self.policy)
        elif weights is not None:
            if not mdp.deterministic:
                raise BibInputError("weights: trajectory weights give the exact gradient only for deterministic MDPs")
            self.weights = np.asarray(weights, dtype=np.float64)
        else:
            raise BibInputError("unknown-utility MEG needs a policy or trajectory weights")
        # one trajectory's weights (one entry per step): the objective reads those entries only
        self.single = None if self.policy is not None else single_entries(action_major(self.weights))
        self.counts = self.weights.sum(axis=(0, 2))
        self.baseline = float(self.weights.sum()) * math.log(mdp.n_actions)
        self.evaluations = 0

    def known(self, u: np.ndarray) -> MEGResult:
        """Known-utility MEG of ``u`` (exact beta, including the limits) under the same policy or weights."""
        if self.policy is not None:
            return known_utility_meg(self.mdp, self.policy, u)
        return meg_from_weights(*self.known_problem(u))

    def known_problem(self, u: np.ndarray) -> tuple[TabularMDP, np.ndarray, np.ndarray, float, None]:
        """What :func:`~bib.meg.known.meg_from_weights` takes for :meth:`known` under trajectory weights."""
        return self.mdp, u, self.weights, float(self.counts @ u), None

    def __call__(self, u: np.ndarray) -> tuple[float, np.ndarray]:
        self.evaluations += 1
        if self.single is not None:
            value, counts = trajectory_loglik_visits(self.mdp, u, self.single)
            return value + self.baseline, self.counts - counts
        svi = soft_value_iteration(self.mdp, 1.0, u)
        value = weighted_loglik(svi.log_policy, self.weights) + self.baseline
        counts = forward(self.mdp, np.exp(svi.log_policy))[:-1].sum(axis=0)
        return value, self.counts - counts


def linear_utility_meg(
    mdp: TabularMDP, policy: np.ndarray | None, features: np.ndarray | None = None, *, init: np.ndarray | None = None,
    utility_class: str = "linear", max_iter: int = LBFGS_ITERATIONS, weights: np.ndarray | None = None,
) -> UnknownMEGResult:
    """MEG over utilities ``U = features @ theta`` (concave in theta: one L-BFGS run with the exact gradient).

    Args:
        mdp: the MDP (its utility, if any, is ignored).
        policy: ``[S, A]`` or ``[H, S, A]``.
        features: ``[S, F]``; default the identity (tabular state utilities).
        init: starting ``theta [F]`` (default zeros, i.e. the uniform policy).
        utility_class: label stored in the result.
        max_iter: L-BFGS iterations.
        weights: instead of ``policy``, trajectory frequencies ``W[H, S, A]``
            (:func:`bib.meg.trajectories.trajectory_weights`); deterministic MDPs only, where the
            gradient ``c_W - c_U`` stays exact.

    Returns:
        An :class:`UnknownMEGResult`; the found direction is polished by :func:`known_utility_meg`
        so the limits ``beta -> +-inf`` (suprema not attained at finite theta) are included.
    """
    obj, u = _linear_optimum(mdp, policy, features, init, max_iter, weights)
    return _polished(obj, u, obj.known(u), utility_class)


def _linear_optimum(mdp: TabularMDP, policy: np.ndarray | None, features: np.ndarray | None, init: np.ndarray | None,
                    max_iter: int, weights: np.ndarray | None) -> tuple[_Objective, np.ndarray]:
    """The objective of :func:`linear_utility_meg` and the utility ``features @ theta`` its L-BFGS run finds."""
    S = mdp.n_states
    phi = np.eye(S) if features is None else np.asarray(features, dtype=np.float64)
    if phi.ndim != 2 or phi.shape[0] != S or not np.all(np.isfinite(phi)):
        raise BibInputError(f"features: expected a finite array [S={S}, F], got shape {phi.shape}")
    obj = _Objective(mdp, policy, weights)
    theta0 = np.zeros(phi.shape[1]) if init is None else np.asarray(init, dtype=np.float64)
    theta = _lbfgs(lambda th: _chain(obj, phi, th), theta0, max_iter)
    return obj, phi @ theta


def _polished(obj: _Objective, u: np.ndarray, known: MEGResult, utility_class: str) -> UnknownMEGResult:
    """The result for the found utility ``u``: the better of its value at beta = 1 and ``known`` (its exact beta)."""
    meg = max(obj(u)[0], known.meg)
    return UnknownMEGResult(meg, u, (meg,), meg, 0.0, utility_class, known)


def _chain(obj: _Objective, phi: np.ndarray, theta: np.ndarray) -> tuple[float, np.ndarray]:
    value, grad_u = obj(phi @ theta)
    return value, phi.T @ grad_u


_LBFGS_SETTINGS = {"tolerance_grad": 1e-7, "tolerance_change": 1e-14, "history_size": 20}
"""The L-BFGS settings of linear (and target-variable) unknown-utility MEG."""


def _lbfgs(fn, x0: np.ndarray, max_iter: int) -> np.ndarray:
    """Maximise ``fn(x) -> (value, gradient)`` by L-BFGS with a strong-Wolfe line search (:mod:`bib.meg.lbfgs`,
    torch's algorithm in numpy: these problems have a handful of parameters, where torch's per-operation cost
    was most of the time)."""
    steps = minimise(x0, max_iter, **_LBFGS_SETTINGS)
    x = next(steps)
    while True:
        value, grad = fn(x)
        try:
            x = steps.send((-value, -grad))
        except StopIteration as done:
            return done.value


def _lockstep_lbfgs(items: Sequence[tuple[_Objective, np.ndarray]], max_iter: int) -> list[np.ndarray]:
    """``theta`` of :func:`_linear_optimum` for each ``(objective, features)``, the same to the bit, with the runs
    on one trajectory's weights in a deterministic MDP in lockstep: each round, the runs of one horizon evaluate
    their points in one backward pass over their stacked MDPs (:func:`bib.meg.soft.stacked_loglik_visits`)."""
    thetas: list[np.ndarray | None] = [None] * len(items)
    runs: dict[int, Steps] = {}
    groups: dict[int, list[int]] = {}
    for i, (obj, phi) in enumerate(items):
        if obj.single is None or not obj.mdp.deterministic:
            thetas[i] = _lbfgs(lambda th, obj=obj, phi=phi: _chain(obj, phi, th), np.zeros(phi.shape[1]), max_iter)
            continue
        runs[i] = minimise(np.zeros(phi.shape[1]), max_iter, **_LBFGS_SETTINGS)
        groups.setdefault(obj.mdp.horizon, []).append(i)
    point = {i: next(run) for i, run in runs.items()}
    for members in groups.values():
        while members:
            stack = Stack.of([items[i][0].mdp for i in members], [items[i][0].single for i in members])
            values, visits = stacked_loglik_visits(stack, np.concatenate([items[i][1] @ point[i] for i in members]))
            going = []
            for i, value, seen in zip(members, values, visits):
                obj, phi = items[i]
                try:
                    point[i] = runs[i].send((-(value + obj.baseline), -(phi.T @ (obj.counts - seen))))
                    going.append(i)
                except StopIteration as done:
                    thetas[i] = done.value
            members = going
    return thetas  # type: ignore[return-value]


def tabular_utility_meg(mdp: TabularMDP, policy: np.ndarray, **kwargs) -> UnknownMEGResult:
    """MEG over all state utilities ``U in R^S`` (:func:`linear_utility_meg` with identity features)."""
    return linear_utility_meg(mdp, policy, None, utility_class="tabular", **kwargs)


def target_meg(mdp: TabularMDP, policy: np.ndarray, target: np.ndarray, **kwargs) -> UnknownMEGResult:
    """Target-variable MEG (Definition 4.4): MEG over every utility ``U(s) = theta[target[s]]``.

    Args:
        mdp: the MDP.
        policy: ``[S, A]`` or ``[H, S, A]``.
        target: integer value of the target variable in each state ``[S]``; ``-1`` marks states where
            the variable is not defined (utility 0 there).
    """
    return linear_utility_meg(mdp, policy, target_features(mdp, target), utility_class="target", **kwargs)


def target_features(mdp: TabularMDP, target: np.ndarray) -> np.ndarray:
    """The features of target-variable MEG: ``phi[s, k] = 1`` where ``target[s] = k`` (checked as :func:`target_meg` says)."""
    tgt = np.asarray(target)
    if tgt.shape != (mdp.n_states,) or not np.issubdtype(tgt.dtype, np.integer) or tgt.min() < -1:
        raise BibInputError(f"target: expected integers >= -1 of shape ({mdp.n_states},), got {tgt.dtype} {tgt.shape}")
    n = int(tgt.max()) + 1
    if n < 1:
        raise BibInputError("target: no state has a target value")
    phi = np.zeros((mdp.n_states, n))
    defined = tgt >= 0
    phi[np.flatnonzero(defined), tgt[defined]] = 1.0
    return phi


def target_megs(problems: Sequence[tuple[TabularMDP, np.ndarray, np.ndarray]]) -> list[UnknownMEGResult]:
    """:func:`target_meg` of many ``(mdp, target, trajectory weights)``, the same results to the bit: the L-BFGS runs
    in lockstep (:func:`_lockstep_lbfgs`), then the exact-beta polish of every found utility in lockstep
    (:func:`bib.meg.known.megs_from_weights`)."""
    items = [(_Objective(mdp, None, weights), target_features(mdp, target)) for mdp, target, weights in problems]
    found = [(obj, phi @ theta) for (obj, phi), theta in zip(items, _lockstep_lbfgs(items, LBFGS_ITERATIONS))]
    known = megs_from_weights([obj.known_problem(u) for obj, u in found])
    return [_polished(obj, u, k, "target") for (obj, u), k in zip(found, known)]


def mlp_utility_meg(
    mdp: TabularMDP, policy: np.ndarray, features: np.ndarray | None = None, *, hidden: int = 256,
    restarts: int = 5, seed: int = 0, max_iter: int = 200,
) -> UnknownMEGResult:
    """MEG over state utilities given by an MLP (one hidden layer of ``hidden`` ReLU units), several restarts.

    Each restart draws its initial weights from ``torch.Generator().manual_seed(seed + r)`` and runs
    torch's L-BFGS (strong Wolfe) on ``-L``; the gradient flows from the exact ``dL/dU = c_pi - c_U``
    through the network. Non-concave: the result is a lower bound; ``runs``, ``mean`` and ``std`` report
    the spread over restarts as in the paper's table.

    Args:
        mdp: the MDP.
        policy: ``[S, A]`` or ``[H, S, A]``.
        features: per-state input ``[S, F]``; default one-hot states.
        hidden: hidden units.
        restarts: number of random initialisations (>= 1).
        seed: base seed.
        max_iter: L-BFGS function evaluations per restart.
    """
    import torch

    if restarts < 1:
        raise BibInputError(f"restarts: must be >= 1, got {restarts}")
    S = mdp.n_states
    x = np.eye(S) if features is None else np.asarray(features, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != S:
        raise BibInputError(f"features: expected [S={S}, F], got shape {x.shape}")
    obj = _Objective(mdp, policy)
    xt = torch.from_numpy(x)
    runs, utils = [], []
    for r in range(restarts):
        gen = torch.Generator().manual_seed(seed + r)
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)).double()
        with torch.no_grad():
            for layer in (net[0], net[2]):
                bound = 1.0 / math.sqrt(layer.in_features)
                layer.weight.uniform_(-bound, bound, generator=gen)
                layer.bias.uniform_(-bound, bound, generator=gen)
        opt = torch.optim.LBFGS(net.parameters(), lr=1.0, max_iter=max_iter, line_search_fn="strong_wolfe",
                                tolerance_grad=1e-9, tolerance_change=1e-12, history_size=20)

        def closure() -> torch.Tensor:
            opt.zero_grad()
            out = net(xt).squeeze(-1)
            value, grad_u = obj(out.detach().numpy())
            out.backward(torch.from_numpy(-grad_u))
            return torch.tensor(-value, dtype=torch.float64)

        opt.step(closure)
        with torch.no_grad():
            u = net(xt).squeeze(-1).numpy().copy()
        runs.append(obj(u)[0])
        utils.append(u)
    best = int(np.argmax(runs))
    known = obj.known(utils[best])
    runs[best] = max(runs[best], known.meg)
    arr = np.asarray(runs)
    return UnknownMEGResult(float(arr.max()), utils[best], tuple(float(v) for v in arr), float(arr.mean()),
                            float(arr.std()), "mlp", known)


def unknown_utility_meg(mdp: TabularMDP, policy: np.ndarray, utility_class: str = "tabular", **kwargs) -> UnknownMEGResult:
    """Unknown-utility MEG over ``utility_class``: ``"tabular"`` (L-BFGS, exact) or ``"mlp"`` (torch, restarts)."""
    if utility_class == "tabular":
        return tabular_utility_meg(mdp, policy, **kwargs)
    if utility_class == "mlp":
        return mlp_utility_meg(mdp, policy, **kwargs)
    raise BibInputError(f"utility_class: expected 'tabular' or 'mlp', got {utility_class!r}")
