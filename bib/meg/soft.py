"""Finite-horizon soft value iteration (batched over utilities and beta), occupancies and beta -> +-inf limits.

All soft quantities are in beta-scaled units: ``Qs_t = beta*U + T Vs_{t+1}``, ``Vs_t = logsumexp_a Qs_t``,
``log pi_t = Qs_t - Vs_t``, ``Vs_H = 0``; for ``beta != 0`` this is ``beta`` times the paper's soft
Q-function (Definition 5.2), and ``beta = 0`` gives the uniform policy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bib.meg.mdp import TabularMDP


@dataclass(frozen=True)
class SoftVI:
    """Result of :func:`soft_value_iteration` (leading batch axis only when the input was batched).

    Attributes:
        log_policy: ``log pi_beta,t(a|s)``, shape ``[B?, H, S, A]``.
        values: beta-scaled soft values ``Vs_t(s)``, shape ``[B?, H+1, S]`` (``Vs_H = 0``).
    """

    log_policy: np.ndarray
    values: np.ndarray

    @property
    def policy(self) -> np.ndarray:
        """``pi_beta,t(a|s)``."""
        return np.exp(self.log_policy)


def _batch(mdp: TabularMDP, utility: np.ndarray | None, beta: float | np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Broadcast utility ``[S]|[B,S]`` and beta ``()|[B]`` to ``U[S,B]``, ``beta[B]``."""
    if utility is None:
        u = mdp.require_utility()[None, :]
    else:
        u = np.asarray(utility, dtype=np.float64)
        if u.ndim == 1:
            u = mdp.require_utility(u)[None, :]
        elif u.ndim != 2 or u.shape[1] != mdp.n_states:
            raise ValueError(f"utility: expected shape [S] or [B, S] with S={mdp.n_states}, got {u.shape}")
    b = np.atleast_1d(np.asarray(beta, dtype=np.float64))
    if b.ndim != 1 or not np.all(np.isfinite(b)):
        raise ValueError("beta: expected a finite scalar or 1-D array")
    batched = np.ndim(beta) == 1 or (utility is not None and np.ndim(utility) == 2)
    n = max(u.shape[0], b.shape[0])
    if u.shape[0] not in (1, n) or b.shape[0] not in (1, n):
        raise ValueError(f"utility batch {u.shape[0]} and beta batch {b.shape[0]} do not broadcast")
    u = np.ascontiguousarray(np.broadcast_to(u, (n, mdp.n_states)).T)
    return u, np.broadcast_to(b, (n,)).copy(), batched


def _lse(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise (axis 1) logsumexp of ``q[S, A, B]``: returns ``(V[S, 1, B], pi[S, A, B])``."""
    m = q.max(axis=1, keepdims=True)
    z = np.exp(q - m)
    s = z.sum(axis=1, keepdims=True)
    z /= s
    return m + np.log(s), z


def soft_value_iteration(
    mdp: TabularMDP, beta: float | np.ndarray = 1.0, utility: np.ndarray | None = None
) -> SoftVI:
    """Batched finite-horizon soft value iteration (one backward pass over ``t = H-1 .. 0``).

    Args:
        mdp: the MDP (its utility is used when ``utility`` is None).
        beta: rationality parameter, a scalar or ``[B]`` (finite; 0 gives the uniform policy).
        utility: ``[S]`` or ``[B, S]``.

    Returns:
        A :class:`SoftVI` with ``log_policy [B?, H, S, A]`` and beta-scaled values ``[B?, H+1, S]``.
    """
    u, b, batched = _batch(mdp, utility, beta)
    S, A, H = mdp.shape
    B = b.shape[0]
    bu = (u * b)[:, None, :]
    logpi = np.empty((H, S, A, B))
    values = np.zeros((H + 1, S, B))
    v = None
    for t in range(H - 1, -1, -1):
        q = np.broadcast_to(bu, (S, A, B)) if v is None else bu + (mdp.P @ v).reshape(S, A, B)
        vt, _ = _lse(q)
        np.subtract(q, vt, out=logpi[t])
        v = vt[:, 0, :]
        values[t] = v
    logpi = np.moveaxis(logpi, -1, 0)
    values = np.moveaxis(values, -1, 0)
    if not batched:
        logpi, values = logpi[0], values[0]
    return SoftVI(log_policy=logpi, values=values)


def soft_policy(mdp: TabularMDP, beta: float, utility: np.ndarray | None = None) -> np.ndarray:
    """The soft-optimal policy ``pi_beta [H, S, A]``; ``beta = +-inf`` gives the exact limit policy."""
    if np.isinf(beta):
        return np.exp(limit_log_policy(mdp, mdp.require_utility(utility) * np.sign(beta))[0])
    return soft_value_iteration(mdp, float(beta), utility).policy


def occupancy(mdp: TabularMDP, policy: np.ndarray) -> np.ndarray:
    """State occupancies ``D[t, s] = P(s_t = s)`` for ``t = 0 .. H`` under ``policy [H, S, A]``."""
    return forward(mdp, mdp.as_policy(policy))


def forward(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
    """:func:`occupancy` without validation, for a policy already shaped ``[H, S, A]``."""
    S, A, H = mdp.shape
    D = np.empty((H + 1, S))
    D[0] = mdp.initial
    for t in range(H):
        D[t + 1] = mdp.PT @ (D[t][:, None] * pi[t]).ravel()
    return D


def state_action_occupancy(mdp: TabularMDP, policy: np.ndarray) -> np.ndarray:
    """``W[t, s, a] = P(s_t = s, a_t = a)`` for ``t < H``: the weights of every MEG sum."""
    pi = mdp.as_policy(policy)
    return occupancy(mdp, pi)[:-1, :, None] * pi


def expected_utility(mdp: TabularMDP, policy: np.ndarray, utility: np.ndarray | None = None) -> float:
    """``E_pi[sum_{t<H} U(s_t)]``."""
    u = mdp.require_utility(utility)
    return float(occupancy(mdp, policy)[:-1].sum(axis=0) @ u)


def _tolerance(mdp: TabularMDP, u: np.ndarray) -> float:
    """Absolute tolerance for ties in hard values of ``u`` (relative to the utility range and horizon)."""
    return 1e-9 * max(1.0, float(np.ptp(u)) * mdp.horizon)


def limit_log_policy(mdp: TabularMDP, utility: np.ndarray) -> tuple[np.ndarray, float]:
    """The exact limit of ``log pi_beta`` as ``beta -> +inf`` and the optimal value ``V*(initial)``.

    The limit is not "uniform over optimal actions": with ``Qs_beta = beta Q* + h + o(1)``, the
    entropy term ``h_t(s,a) = sum_s' T(s,a,s') logsumexp_{a' in A*_{t+1}(s')} h_{t+1}(s',a')``
    favours optimal actions that keep more optimal continuations open, so the limit policy is
    ``softmax(h_t)`` restricted to the optimal actions ``A*_t(s)`` (``-inf`` elsewhere). For
    ``beta -> -inf`` pass ``-utility``.

    Returns:
        ``(log_policy [H, S, A], initial @ V*_0)`` with ``V*`` the hard optimal values of ``utility``.
    """
    S, A, H = mdp.shape
    u = np.asarray(utility, dtype=np.float64)
    tol = _tolerance(mdp, u)
    v = np.zeros(S)
    hv = np.zeros(S)
    logpi = np.empty((H, S, A))
    for t in range(H - 1, -1, -1):
        q = u[:, None] + (mdp.P @ v).reshape(S, A)
        h = (mdp.P @ hv).reshape(S, A)
        vmax = q.max(axis=1)
        h = np.where(q >= vmax[:, None] - tol, h, -np.inf)
        hmax = h.max(axis=1, keepdims=True)
        hv = hmax[:, 0] + np.log(np.exp(h - hmax).sum(axis=1))
        logpi[t] = h - hv[:, None]
        v = vmax
    return logpi, float(mdp.initial @ v)


@dataclass(frozen=True)
class BetaObjective:
    """Weighted log-likelihood ``L(beta) = sum_t sum_{s,a} W_t(s,a) log pi_beta,t(a|s)`` and its derivatives.

    Attributes:
        value, d1, d2: ``L``, ``dL/dbeta``, ``d2L/dbeta2`` per batch entry ``[B]``.
        soft_return: ``E_{pi_beta}[sum_{t<H} U(s_t)] = d(initial . Vs_0)/dbeta`` per batch entry.
    """

    value: np.ndarray
    d1: np.ndarray
    d2: np.ndarray
    soft_return: np.ndarray


def beta_objective(mdp: TabularMDP, utility: np.ndarray, beta: float | np.ndarray, weights: np.ndarray) -> BetaObjective:
    """One backward pass computing ``L(beta)``, ``L'(beta)``, ``L''(beta)`` for weights ``W[H, S, A]``.

    Forward-mode derivatives are carried through the recursion (``Qs' = U + T Vs'``,
    ``Vs' = E_pi Qs'``, ``Qs'' = T Vs''``, ``Vs'' = E_pi[Qs'' + (Qs' - Vs')^2]``), so no policy is
    stored. With ``W`` the exact state-action occupancy of a policy ``pi``, ``L`` is concave and
    ``L' = E_pi[sum U] - E_pi_beta[sum U]`` (the paper's gradient).
    """
    u, b, _ = _batch(mdp, utility, beta)
    S, A, H = mdp.shape
    B = b.shape[0]
    bu = (u * b)[:, None, :]
    u3 = u[:, None, :]
    acc = np.zeros((3, B))
    v = v1 = v2 = None
    for t in range(H - 1, -1, -1):
        if v is None:
            q = np.broadcast_to(bu, (S, A, B))
            q1 = np.broadcast_to(u3, (S, A, B))
            q2 = np.zeros((S, A, B))
        else:
            q = bu + (mdp.P @ v).reshape(S, A, B)
            q1 = u3 + (mdp.P @ v1).reshape(S, A, B)
            q2 = (mdp.P @ v2).reshape(S, A, B)
        vt, pi = _lse(q)
        v1t = np.einsum("sab,sab->sb", pi, q1)[:, None, :]
        dev = q1 - v1t
        v2t = np.einsum("sab,sab->sb", pi, q2 + dev * dev)[:, None, :]
        w = weights[t].reshape(1, S * A)
        acc[0] += (w @ (q - vt).reshape(S * A, B))[0]
        acc[1] += (w @ dev.reshape(S * A, B))[0]
        acc[2] += (w @ (q2 - v2t).reshape(S * A, B))[0]
        v, v1, v2 = vt[:, 0, :], v1t[:, 0, :], v2t[:, 0, :]
    return BetaObjective(value=acc[0], d1=acc[1], d2=acc[2], soft_return=mdp.initial @ v1)


def weighted_loglik(log_policy: np.ndarray, weights: np.ndarray) -> float:
    """``sum W log pi`` with ``0 * log 0 = 0`` and ``-inf`` when ``W > 0`` where ``pi = 0``."""
    mask = weights > 0
    return float(np.sum(weights[mask] * log_policy[mask]))
