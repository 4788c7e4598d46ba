"""Finite-horizon soft value iteration (batched over utilities and beta), occupancies and beta -> +-inf limits.

All soft quantities are in beta-scaled units: ``Qs_t = beta*U + T Vs_{t+1}``, ``Vs_t = logsumexp_a Qs_t``,
``log pi_t = Qs_t - Vs_t``, ``Vs_H = 0``; for ``beta != 0`` this is ``beta`` times the paper's soft
Q-function (Definition 5.2), and ``beta = 0`` gives the uniform policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bib.errors import BibInputError
from bib.world.tabular import TabularMDP


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
            raise BibInputError(f"utility: expected shape [S] or [B, S] with S={mdp.n_states}, got {u.shape}")
    b = np.atleast_1d(np.asarray(beta, dtype=np.float64))
    if b.ndim != 1 or not np.all(np.isfinite(b)):
        raise BibInputError("beta: expected a finite scalar or 1-D array")
    batched = np.ndim(beta) == 1 or (utility is not None and np.ndim(utility) == 2)
    n = max(u.shape[0], b.shape[0])
    if u.shape[0] not in (1, n) or b.shape[0] not in (1, n):
        raise BibInputError(f"utility batch {u.shape[0]} and beta batch {b.shape[0]} do not broadcast")
    u = np.ascontiguousarray(np.broadcast_to(u, (n, mdp.n_states)).T)
    return u, np.broadcast_to(b, (n,)).copy(), batched


def logsumexp(x: np.ndarray, axis: int | tuple[int, ...]) -> np.ndarray:
    """``log sum exp`` of ``x`` over ``axis``; a slice that is all ``-inf`` gives ``-inf`` (no warning, no NaN)."""
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(np.log(np.exp(x - top).sum(axis=axis, keepdims=True)) + top, axis=axis)


def log_softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    """``log softmax`` over ``axis``: the log of a Boltzmann policy when ``logits = beta * Q``.

    ``-inf`` logits (illegal or hopeless actions) get probability 0; a slice with no finite logit
    is ``-inf`` throughout.
    """
    top = logits.max(axis=axis, keepdims=True)
    finite = np.isfinite(top)
    shifted = np.where(finite, logits - np.where(finite, top, 0.0), -np.inf)
    with np.errstate(divide="ignore"):
        lse = np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return np.where(finite, shifted - np.where(finite, lse, 0.0), -np.inf)


def _lse(q: np.ndarray, want_pi: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """Logsumexp over actions of action-major ``q[A, S, B]``: returns ``(V[S, B], pi[A, S, B] or None)``.

    The hot path of soft value iteration: ``q`` is always finite there (finite utilities and
    beta), so it skips the ``-inf`` handling of :func:`logsumexp` and fuses the policy.
    """
    m = q.max(axis=0)
    z = np.exp(q - m)
    s = z.sum(axis=0)
    if want_pi:
        z /= s
    return m + np.log(s), (z if want_pi else None)


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
    logpi, values = _soft_backward(mdp, u, b)
    logpi = logpi.transpose(3, 0, 2, 1)  # [B, H, S, A]
    values = np.moveaxis(values, -1, 0)
    if not batched:
        logpi, values = logpi[0], values[0]
    return SoftVI(log_policy=np.ascontiguousarray(logpi), values=values)


def _soft_backward(mdp: TabularMDP, u: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The backward pass of :func:`soft_value_iteration` for checked ``u [S, B]``, ``b [B]``:
    action-major ``log pi [H, A, S, B]`` and values ``[H+1, S, B]``."""
    S, A, H = mdp.shape
    B = b.shape[0]
    bu = u * b
    logpi = np.empty((H, A, S, B))
    values = np.zeros((H + 1, S, B))
    v = None
    for t in range(H - 1, -1, -1):
        # The hot loop (finite values only): logsumexp over actions fused with the log policy,
        # q - V = (q - max) - log(sum exp(q - max)), reusing buffers to save passes over [A, S, B].
        q = np.broadcast_to(bu, (A, S, B)).copy() if v is None else bu + mdp.backup(v)
        m = q.max(axis=0)
        lp = logpi[t]
        np.subtract(q, m, out=lp)
        np.exp(lp, out=q)
        log_s = q.sum(axis=0)
        np.log(log_s, out=log_s)
        lp -= log_s
        v = m + log_s
        values[t] = v
    return logpi, values


_ONE = np.ones(1)


def trajectory_loglik_visits(mdp: TabularMDP, utility: np.ndarray,
                             single: tuple[np.ndarray, np.ndarray]) -> tuple[float, np.ndarray]:
    """At beta = 1: ``sum W log pi`` for one trajectory's weights (``single``: their
    :func:`single_entries`) and the soft policy's expected visits ``sum_{t<H} D_t [S]``.

    The numbers of :func:`weighted_loglik` of :func:`soft_value_iteration`'s log policy and of
    :func:`forward` under its policy, from the same backward pass, read one entry per step and
    without transposing the policy (what unknown-utility MEG evaluates at every L-BFGS step).
    """
    u = np.asarray(utility, dtype=np.float64)
    if u.shape != (mdp.n_states,) or not np.isfinite(u).all():
        u = mdp.require_utility(u)  # raises, naming the problem
    S, A, H = mdp.shape
    logpi = _soft_backward(mdp, u[:, None], _ONE)[0][..., 0]  # [H, A, S]: what _batch(mdp, u, 1.0) gives
    index, weight = single
    steps = np.flatnonzero(index >= 0)
    a, s = np.divmod(index[steps], S)
    value = float(np.sum(weight[steps] * logpi[steps, a, s]))
    return value, _visits(mdp, np.exp(logpi))


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
        D[t + 1] = mdp.push(pi[t].T * D[t])
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


def optimal_value(mdp: TabularMDP, utility: np.ndarray) -> float:
    """``initial @ V*_0``: the hard optimal value of ``utility``, as :func:`limit_log_policy` returns it
    (the same backward maxima, without the limit policy)."""
    v = np.zeros(mdp.n_states)
    u = np.asarray(utility, dtype=np.float64)
    for _ in range(mdp.horizon):
        v = (u[None, :] + mdp.backup(v)).max(axis=0)
    return float(mdp.initial @ v)


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
        q = u[None, :] + mdp.backup(v)
        h = mdp.backup(hv)
        vmax = q.max(axis=0)
        h = np.where(q >= vmax - tol, h, -np.inf)
        hv = logsumexp(h, axis=0)
        logpi[t] = (h - hv).T
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
    return beta_objective_am(mdp, utility, beta, action_major(weights))


def action_major(weights: np.ndarray) -> np.ndarray:
    """``W[H, S, A]`` as the flat action-major ``[H, 1, A*S]`` that :func:`beta_objective_am` takes."""
    W = np.asarray(weights, dtype=np.float64)
    H, S, A = W.shape
    return np.ascontiguousarray(W.transpose(0, 2, 1)).reshape(H, 1, A * S)


def single_entries(w_am: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """For action-major weights ``[H, 1, A*S]`` with at most one nonzero entry per step (one trajectory's
    weights): ``(index [H], weight [H])`` (index -1 and weight 0 where a step has none); else None.

    A dot product with such a row is exactly that entry times its weight, so the passes below read
    one entry per step instead of multiplying whole arrays (the same numbers)."""
    nz = w_am[:, 0, :] != 0
    if (nz.sum(axis=1) > 1).any():
        return None
    has = nz.any(axis=1)
    index = np.where(has, nz.argmax(axis=1), -1)
    return index, np.where(has, w_am[np.arange(len(index)), 0, np.maximum(index, 0)], 0.0)


def beta_objective_am(mdp: TabularMDP, utility: np.ndarray, beta: float | np.ndarray, w_am: np.ndarray,
                      single: tuple[np.ndarray, np.ndarray] | None = None) -> BetaObjective:
    """:func:`beta_objective` with weights already converted by :func:`action_major` (no copy per call);
    ``single``: :func:`single_entries` of ``w_am`` when it has them (the same result, less work)."""
    u, b, _ = _batch(mdp, utility, beta)
    return _beta_pass(mdp, u, b, w_am, single)


def _beta_step(nxt: np.ndarray | None, u: np.ndarray, bu: np.ndarray,
               shape: tuple[int, int, int]) -> tuple[np.ndarray, ...]:
    """One step ``t`` of the beta pass: from the backed-up ``[Vs, Vs', Vs'']`` of step ``t+1`` (``nxt [A, S, 3B]``,
    None at the last step), ``(q, vt, dev, q2, v2t, v1t)``: ``Qs``, ``Vs``, ``Qs' - Vs'``, ``Qs''``, ``Vs''``, ``Vs'``."""
    A, S, B = shape
    if nxt is None:
        q = np.broadcast_to(bu, (A, S, B))
        q1 = np.broadcast_to(u, (A, S, B))
        q2 = np.zeros((A, S, B))
    else:
        q = bu + nxt[:, :, :B]
        q1 = u + nxt[:, :, B : 2 * B]
        q2 = nxt[:, :, 2 * B :]
    vt, pi = _lse(q)
    v1t = (pi * q1).sum(axis=0)
    dev = q1 - v1t
    v2t = (pi * (q2 + dev * dev)).sum(axis=0)
    return q, vt, dev, q2, v2t, v1t


def _beta_pass(mdp: TabularMDP, u: np.ndarray, b: np.ndarray, w_am: np.ndarray,
               single: tuple[np.ndarray, np.ndarray] | None) -> BetaObjective:
    """The backward pass of :func:`beta_objective_am` for checked ``u [S, B]`` and ``b [B]``."""
    S, A, H = mdp.shape
    B = b.shape[0]
    bu = u * b
    acc = np.zeros((3, B))
    vs = None  # [S, 3B]: Vs, Vs', Vs'' side by side, so one sparse product per step
    for t in range(H - 1, -1, -1):
        q, vt, dev, q2, v2t, v1t = _beta_step(None if vs is None else mdp.backup(vs), u, bu, (A, S, B))
        if single is None:
            w = w_am[t]
            acc[0] += (w @ (q - vt).reshape(A * S, B))[0]
            acc[1] += (w @ dev.reshape(A * S, B))[0]
            acc[2] += (w @ (q2 - v2t).reshape(A * S, B))[0]
        elif single[0][t] >= 0:
            a, s = divmod(int(single[0][t]), S)
            w1 = single[1][t]
            acc[0] += w1 * (q[a, s] - vt[s])
            acc[1] += w1 * dev[a, s]
            acc[2] += w1 * (q2[a, s] - v2t[s])
        vs = np.concatenate([vt, v1t, v2t], axis=1)
    return BetaObjective(value=acc[0], d1=acc[1], d2=acc[2], soft_return=mdp.initial @ vs[:, B : 2 * B])


@dataclass(frozen=True)
class Stack:
    """Deterministic MDPs of one horizon, each with one trajectory's weights, side by side: their states numbered
    one MDP after another, so that one backward pass evaluates them all (:func:`stacked_beta_pass`,
    :func:`stacked_loglik_visits`). Each MDP's numbers are those of its own pass to the bit: every operation
    of a backward pass is per state (or a sum over actions, in the same order), each trajectory's entries are
    read as :func:`single_entries` reads them, and what mixes states (the forward pass) runs per MDP.

    Attributes:
        mdps: the MDPs.
        succ: ``[A, S_total]`` the successor of each stacked state-action.
        starts: ``[n + 1]`` where each MDP's states begin (and the total).
        action, state, weight: ``[H, n]`` each trajectory's action, stacked state and weight at step ``t``
            (weight 0 and state 0 where it has none).
        has: ``[H, n]`` whether it has one.
    """

    mdps: tuple[TabularMDP, ...]
    succ: np.ndarray
    starts: np.ndarray
    action: np.ndarray
    state: np.ndarray
    weight: np.ndarray
    has: np.ndarray

    @classmethod
    def of(cls, mdps: Sequence[TabularMDP], singles: Sequence[tuple[np.ndarray, np.ndarray]]) -> Stack:
        """Stack deterministic ``mdps`` of one horizon with the :func:`single_entries` of their weights."""
        sizes = np.array([m.n_states for m in mdps])
        starts = np.concatenate([[0], np.cumsum(sizes)])
        index = np.stack([single[0] for single in singles], axis=1)
        has = index >= 0
        action, state = np.divmod(np.where(has, index, 0), sizes)
        return cls(tuple(mdps), np.concatenate([m._succ + o for m, o in zip(mdps, starts)], axis=1), starts,
                   action, np.where(has, state + starts[:-1], 0), np.stack([single[1] for single in singles], axis=1), has)

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(S_total, A, H)``, as :attr:`TabularMDP.shape`."""
        return self.succ.shape[1], self.succ.shape[0], self.action.shape[0]

    def backup(self, v: np.ndarray) -> np.ndarray:
        """:meth:`TabularMDP.backup` of every stacked MDP at once."""
        return v[self.succ]

    def split(self, x: np.ndarray) -> list[np.ndarray]:
        """``x [S_total, ...]`` cut into each MDP's part."""
        return [x[lo:hi] for lo, hi in zip(self.starts, self.starts[1:])]


def stacked_beta_pass(stack: Stack, u: np.ndarray, betas: np.ndarray) -> BetaObjective:
    """:func:`beta_objective_am` of every MDP of ``stack`` (stacked checked utilities ``u [S_total, 1]``) at its
    own ``betas [n]``, in one backward pass (fields ``[n]``)."""
    S, A, H = stack.shape
    bu = u * np.repeat(betas, np.diff(stack.starts))[:, None]
    acc = np.zeros((3, len(betas)))
    vs = None
    for t in range(H - 1, -1, -1):
        q, vt, dev, q2, v2t, v1t = _beta_step(None if vs is None else stack.backup(vs), u, bu, (A, S, 1))
        h = stack.has[t]
        a, s, w1 = stack.action[t, h], stack.state[t, h], stack.weight[t, h]
        acc[0, h] += w1 * (q[a, s, 0] - vt[s, 0])
        acc[1, h] += w1 * dev[a, s, 0]
        acc[2, h] += w1 * (q2[a, s, 0] - v2t[s, 0])
        vs = np.concatenate([vt, v1t, v2t], axis=1)
    ret = np.array([(m.initial @ part[:, 1:2])[0] for m, part in zip(stack.mdps, stack.split(vs))])
    return BetaObjective(value=acc[0], d1=acc[1], d2=acc[2], soft_return=ret)


def stacked_loglik_visits(stack: Stack, u: np.ndarray) -> tuple[list[float], list[np.ndarray]]:
    """:func:`trajectory_loglik_visits` of every MDP of ``stack`` at its part of ``u [S_total]``: each one's value
    and visits, the backward pass shared."""
    S, A, H = stack.shape
    logpi = _soft_backward(stack, u[:, None], _ONE)[0][..., 0]  # [H, A, S_total]
    pi = np.exp(logpi)
    values, visits = [], []
    for i, (mdp, lo, hi) in enumerate(zip(stack.mdps, stack.starts, stack.starts[1:])):
        steps = np.flatnonzero(stack.has[:, i])
        values.append(float(np.sum(stack.weight[steps, i] * logpi[steps, stack.action[steps, i], stack.state[steps, i]])))
        visits.append(_visits(mdp, pi[:, :, lo:hi]))
    return values, visits


def _visits(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
    """``sum_{t<H} D_t [S]`` under the action-major policy ``pi [H, A, S]`` from ``mdp.initial``."""
    H = mdp.horizon
    D = np.empty((H + 1, mdp.n_states))
    D[0] = mdp.initial
    for t in range(H):
        D[t + 1] = mdp.push(pi[t] * D[t])
    return D[:-1].sum(axis=0)


def weighted_loglik(log_policy: np.ndarray, weights: np.ndarray) -> float:
    """``sum W log pi`` with ``0 * log 0 = 0`` and ``-inf`` when ``W > 0`` where ``pi = 0``."""
    mask = weights > 0
    return float(np.sum(weights[mask] * log_policy[mask]))
