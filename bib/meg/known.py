"""Known-utility MEG (Definition 3.2) with the exact maximising beta, including beta = +-inf, and its signed variant."""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from dataclasses import dataclass

import numpy as np

from bib.meg.soft import (
    Stack,
    _batch,
    _beta_pass,
    _tolerance,
    action_major,
    beta_objective,
    forward,
    limit_log_policy,
    optimal_value,
    single_entries,
    stacked_beta_pass,
    weighted_loglik,
)
from bib.world.tabular import TabularMDP

BETA_TOL = 1e-10
""":func:`fit_beta` stops when the next Newton step is below this times ``|beta|``."""
BETA_PASSES = 200
"""At most this many backward passes per beta fit."""
_B_MAX = 1e9  # largest finite |beta| * ptp(U) searched; beyond it the exact limit policy is used


@dataclass(frozen=True)
class MEGResult:
    """Known-utility MEG of a policy.

    Attributes:
        meg: ``max_beta E_pi[sum_{t<H} (log pi_beta,t(a|s) + log|A|)]`` in nats (>= 0 for a policy).
        beta: the maximising rationality parameter (``inf``/``-inf`` for the limits).
        signed_meg: ``meg * sign(E_pi[U] - E_uniform[U])`` (footnote 4 of the paper).
        expected_utility: ``E_pi[sum_{t<H} U(s_t)]`` (or its trajectory average).
        uniform_utility: the same under the uniform policy.
        optimal_utility: ``V*(initial)``, the best attainable.
        upper_bound: ``(H - 1) log|A|``; the last decision is uniform under every soft policy.
        iterations: backward passes used by the beta search.
    """

    meg: float
    beta: float
    signed_meg: float
    expected_utility: float
    uniform_utility: float
    optimal_utility: float
    upper_bound: float
    iterations: int

    def to_dict(self) -> dict[str, float | int]:
        """JSON-friendly dict (infinite beta as the strings "inf"/"-inf")."""
        d = dict(self.__dict__)
        if math.isinf(d["beta"]):
            d["beta"] = "inf" if d["beta"] > 0 else "-inf"
        return d


@dataclass(frozen=True)
class BetaFit:
    """Result of :func:`fit_beta`: ``value = max L``, the maximiser ``beta``, ``slope0 = L'(0)``,
    ``uniform_return = E_uniform[sum U]``, ``optimal_value = V*(initial)`` and the passes used."""

    value: float
    beta: float
    slope0: float
    uniform_return: float
    optimal_value: float
    iterations: int


def fit_beta(
    mdp: TabularMDP,
    utility: np.ndarray,
    weights: np.ndarray,
    *,
    expected: float | None = None,
    tol: float = BETA_TOL,
    max_iter: int = BETA_PASSES,
) -> BetaFit:
    """Maximise ``L(beta) = sum W log pi_beta`` over ``beta in R u {+-inf}``.

    A safeguarded Newton iteration in ``log beta`` (exact ``L'``, ``L''`` from forward-mode derivatives) inside
    a bracket that is expanded geometrically; ``L`` is concave when ``W`` is a policy's exact
    occupancy. The limits ``+-inf`` are evaluated exactly (:func:`limit_log_policy`).

    Args:
        mdp: the MDP.
        utility: ``U[S]``.
        weights: ``W[H, S, A]`` (a policy's occupancy or trajectory frequencies).
        expected: ``E_pi[sum U]`` when ``W`` is exact; lets the search stop at once for (anti-)optimal policies.
        tol: stop when the next Newton step ``|L' / L''|`` is below ``tol * |beta|`` (or ``L`` cannot improve).
        max_iter: cap on backward passes.

    Returns:
        A :class:`BetaFit`.
    """
    u = np.asarray(utility, dtype=np.float64)
    w_am = action_major(weights)
    single = single_entries(w_am)
    u_col = _batch(mdp, u, 0.0)[0]  # checked once: every pass below takes it as it is
    search = _beta_search(mdp, u, weights, expected, tol, max_iter)
    beta = next(search)
    while True:
        o = _beta_pass(mdp, u_col, np.array([beta]), w_am, single)
        try:
            beta = search.send((float(o.value[0]), float(o.d1[0]), float(o.d2[0]), float(o.soft_return[0])))
        except StopIteration as done:
            return done.value


def fit_betas(problems: Sequence[tuple[TabularMDP, np.ndarray, np.ndarray, float | None]]) -> list[BetaFit]:
    """:func:`fit_beta` of many ``(mdp, utility, weights, expected)`` at once, each the same :class:`BetaFit` to the bit.

    The searches run in lockstep: each round, the problems still searching that share a horizon (deterministic
    MDPs with one trajectory's weights, such as every trial of :mod:`bib.meg.episodes`) are evaluated in one
    backward pass over their stacked states (:func:`bib.meg.soft.stacked_beta_pass`), each at its own beta;
    any other problem is fitted alone. Many small MDPs then cost about what one does: the pass is a few
    numpy calls per step whatever the number of states.
    """
    fits: list[BetaFit | None] = [None] * len(problems)
    searches: dict[int, Generator[float, tuple[float, float, float, float], BetaFit]] = {}
    groups: dict[int, list[int]] = {}
    prepared: dict[int, tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]] = {}
    for i, (mdp, utility, weights, expected) in enumerate(problems):
        u = np.asarray(utility, dtype=np.float64)
        single = single_entries(action_major(weights)) if mdp.deterministic else None
        if single is None:
            fits[i] = fit_beta(mdp, u, weights, expected=expected)
            continue
        prepared[i] = (_batch(mdp, u, 0.0)[0], single)
        searches[i] = _beta_search(mdp, u, weights, expected, BETA_TOL, BETA_PASSES)
        groups.setdefault(mdp.horizon, []).append(i)
    beta = {i: next(search) for i, search in searches.items()}
    for members in groups.values():
        while members:
            stack = Stack.of([problems[i][0] for i in members], [prepared[i][1] for i in members])
            o = stacked_beta_pass(stack, np.concatenate([prepared[i][0] for i in members]),
                                  np.array([beta[i] for i in members]))
            searching = []
            for k, i in enumerate(members):
                try:
                    beta[i] = searches[i].send((float(o.value[k]), float(o.d1[k]), float(o.d2[k]),
                                                float(o.soft_return[k])))
                    searching.append(i)
                except StopIteration as done:
                    fits[i] = done.value
            members = searching
    return fits  # type: ignore[return-value]


def _beta_search(mdp: TabularMDP, u: np.ndarray, weights: np.ndarray, expected: float | None, tol: float,
                 max_iter: int) -> Generator[float, tuple[float, float, float, float], BetaFit]:
    """The search of :func:`fit_beta`: yields each beta to evaluate, is sent ``(L, L', L'', soft return)`` there,
    and returns the :class:`BetaFit` (one algorithm, whether one problem is fitted or many in lockstep)."""
    vmax = optimal_value(mdp, u)  # the limit policies are made below only for the sign that is searched
    vmin = -optimal_value(mdp, -u)
    value0, g0, h0, return0 = yield 0.0
    best = (value0, 0.0)
    eps = _tolerance(mdp, u)
    iters = 1

    def fit(value: float, beta: float) -> BetaFit:
        return BetaFit(value, beta, g0, return0, vmax, iters)

    if vmax - vmin <= eps or g0 == 0.0:
        return fit(*best)
    sgn = 1.0 if g0 > 0 else -1.0
    limit = weighted_loglik(limit_log_policy(mdp, sgn * u)[0], weights)
    if expected is not None and (expected >= vmax - eps if sgn > 0 else expected <= vmin + eps) and limit > -np.inf:
        return fit(limit, sgn * math.inf)
    scale = float(np.ptp(u))
    b_max = _B_MAX / scale
    lo, hi = 0.0, math.inf
    b = abs(g0) / -h0 if h0 < 0 else 1.0 / scale
    b = min(max(b, 1e-6 / scale), b_max)
    while iters < max_iter:
        val, d1, h, _ = yield sgn * b
        iters += 1
        g = sgn * d1
        if val > best[0] or best[1] == 0.0:
            best = (val, sgn * b)
        if g > 0:
            lo = b
        else:
            hi = b
        if h < 0 and (abs(g / h) <= tol * b or g * g / -h <= 1e-15 * (1.0 + abs(val))):
            break
        hx = b * b * h + b * g  # Newton in log(beta): L varies over orders of magnitude of beta
        newton = b * math.exp(max(min(-b * g / hx, 3.0), -3.0)) if hx < 0 else (b - g / h if h < 0 else math.inf)
        if hi == math.inf:
            if b >= b_max:
                break
            nb = newton if lo < newton <= 16 * b else 8 * b
            nb = min(nb, b_max)
        else:
            if hi - lo <= 1e-14 * hi:
                break
            if lo < newton < hi:
                nb = newton
            elif lo > 0 and hi / lo > 4:
                nb = math.sqrt(lo * hi)
            else:
                nb = 0.5 * (lo + hi)
        b = nb
    if limit >= best[0] - 1e-9 * (1.0 + abs(best[0])):
        best = (limit, sgn * math.inf)
    return fit(*best)


def known_utility_meg(mdp: TabularMDP, policy: np.ndarray, utility: np.ndarray | None = None) -> MEGResult:
    """Known-utility MEG of ``policy`` with respect to ``utility`` (default: the MDP's).

    ``MEG_U(pi) = max_{beta in R u {+-inf}} sum_{t<H} E_pi[log pi_beta,t(a_t|s_t) + log|A|]`` with the
    agent's own exact occupancy; see :class:`bib.world.tabular.TabularMDP` for the soft-value convention.

    Args:
        mdp: the MDP.
        policy: ``[S, A]`` (stationary) or ``[H, S, A]``.
        utility: ``U[S]``; default ``mdp.utility``.

    Returns:
        A :class:`MEGResult` (``signed_meg`` is the footnote-4 variant).
    """
    u = mdp.require_utility(utility)
    pi = mdp.as_policy(policy)
    D = forward(mdp, pi)[:-1]
    weights = D[:, :, None] * pi
    eu = float(D.sum(axis=0) @ u)
    return meg_from_weights(mdp, u, weights, eu, expected=eu)


def meg_from_weights(mdp: TabularMDP, u: np.ndarray, weights: np.ndarray, eu: float, expected: float | None) -> MEGResult:
    """MEG for state-action weights ``W[H, S, A]`` (exact occupancy, or trajectory frequencies).

    Args:
        mdp: the MDP.
        u: utility ``[S]``.
        weights: ``W[t, s, a]``.
        eu: ``sum W U`` reported as ``expected_utility``.
        expected: ``eu`` when ``W`` is an exact occupancy (enables the optimal-policy shortcut), else None.
    """
    return meg_result(mdp, weights, eu, fit_beta(mdp, u, weights, expected=expected))


def megs_from_weights(problems: Sequence[tuple[TabularMDP, np.ndarray, np.ndarray, float, float | None]]) -> list[MEGResult]:
    """:func:`meg_from_weights` of many ``(mdp, u, weights, eu, expected)``, their beta fits in lockstep
    (:func:`fit_betas`): the same results to the bit."""
    fits = fit_betas([(mdp, u, weights, expected) for mdp, u, weights, _, expected in problems])
    return [meg_result(p[0], p[2], p[3], fit) for p, fit in zip(problems, fits)]


def meg_result(mdp: TabularMDP, weights: np.ndarray, eu: float, fit: BetaFit) -> MEGResult:
    """The :class:`MEGResult` of a beta fit of ``weights`` (``eu``: their ``sum W U``)."""
    S, A, H = mdp.shape
    meg = max(fit.value + float(weights.sum()) * math.log(A), 0.0)
    sign = 0.0 if fit.slope0 == 0 else math.copysign(1.0, fit.slope0)
    return MEGResult(
        meg=meg,
        beta=fit.beta,
        signed_meg=sign * meg,
        expected_utility=eu,
        uniform_utility=fit.uniform_return,
        optimal_utility=fit.optimal_value,
        upper_bound=(H - 1) * math.log(A),
        iterations=fit.iterations,
    )


def predictive_accuracy(mdp: TabularMDP, policy: np.ndarray, beta: float | np.ndarray, utility: np.ndarray | None = None) -> np.ndarray:
    """``sum_{t<H} E_pi[log pi_beta,t + log|A|]`` at given beta values (the function MEG maximises).

    Args:
        mdp: the MDP.
        policy: ``[S, A]`` or ``[H, S, A]``.
        beta: a scalar or 1-D array; entries may be ``+-inf``.
        utility: ``U[S]``; default ``mdp.utility``.

    Returns:
        An array shaped like ``beta``.
    """
    u = mdp.require_utility(utility)
    S, A, H = mdp.shape
    pi = mdp.as_policy(policy)
    weights = forward(mdp, pi)[:-1, :, None] * pi
    betas = np.atleast_1d(np.asarray(beta, dtype=np.float64))
    out = np.empty(betas.shape)
    finite = np.isfinite(betas)
    if finite.any():
        out[finite] = beta_objective(mdp, u, betas[finite], weights).value
    for i in np.flatnonzero(~finite):
        out[i] = weighted_loglik(limit_log_policy(mdp, u * np.sign(betas[i]))[0], weights)
    out += float(weights.sum()) * math.log(A)
    return out.reshape(np.shape(beta))
