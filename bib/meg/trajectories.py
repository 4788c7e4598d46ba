"""MEG estimated from sampled trajectories (the trajectory average of Definition 3.2) and trajectory sampling."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bib.errors import BibInputError
from bib.meg.known import MEGResult, meg_from_weights
from bib.world.tabular import TabularMDP


@dataclass(frozen=True)
class Trajectories:
    """``states [N, H+1]`` (``s_0 .. s_H``) and ``actions [N, H]`` as integer arrays."""

    states: np.ndarray
    actions: np.ndarray


def sample_trajectories(mdp: TabularMDP, policy: np.ndarray, n: int, rng: np.random.Generator) -> Trajectories:
    """Sample ``n`` trajectories of ``policy`` (``[S, A]`` or ``[H, S, A]``) from the initial distribution."""
    if n < 1:
        raise BibInputError(f"n: need at least one trajectory, got {n}")
    S, A, H = mdp.shape
    pi = mdp.as_policy(policy)
    csr = mdp._csr
    states = np.empty((n, H + 1), dtype=np.int64)
    actions = np.empty((n, H), dtype=np.int64)
    states[:, 0] = _draw(np.broadcast_to(np.cumsum(mdp.initial), (n, S)), rng)
    for t in range(H):
        s = states[:, t]
        actions[:, t] = _draw(np.cumsum(pi[t, s], axis=1), rng)
        rows = s * A + actions[:, t]
        dense = csr[rows].toarray()
        states[:, t + 1] = _draw(np.cumsum(dense, axis=1), rng)
    return Trajectories(states, actions)


def _draw(cum: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of cumulative probabilities ``cum [N, K]``."""
    r = rng.random(cum.shape[0]) * cum[:, -1]
    return np.minimum((cum <= r[:, None]).sum(axis=1), cum.shape[1] - 1)


def trajectory_weights(mdp: TabularMDP, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Empirical ``W[t, s, a]``: the fraction of trajectories in ``s`` taking ``a`` at step ``t``."""
    S, A, H = mdp.shape
    st = np.asarray(states)
    ac = np.asarray(actions)
    if ac.ndim != 2 or ac.shape[1] != H or st.ndim != 2 or st.shape[0] != ac.shape[0] or st.shape[1] < H:
        raise BibInputError(f"trajectories: expected states [N, H(+1)] and actions [N, H] with H={H}, got {st.shape} and {ac.shape}")
    if not (np.issubdtype(st.dtype, np.integer) and np.issubdtype(ac.dtype, np.integer)):
        raise BibInputError("trajectories: states and actions must be integers")
    for name, arr, hi in (("states", st[:, :H], S), ("actions", ac, A)):
        bad = np.argwhere((arr < 0) | (arr >= hi))
        if bad.size:
            i, t = bad[0]
            raise BibInputError(f"trajectories: {name}[{i}, {t}] = {arr[i, t]} out of range 0..{hi - 1}")
    W = np.zeros((H, S, A))
    t_idx = np.broadcast_to(np.arange(H), ac.shape)
    np.add.at(W, (t_idx.ravel(), st[:, :H].ravel(), ac.ravel()), 1.0)
    return W / ac.shape[0]


def trajectory_meg(mdp: TabularMDP, states: np.ndarray, actions: np.ndarray, utility: np.ndarray | None = None) -> MEGResult:
    """Known-utility MEG estimated from trajectories (Definition 3.2 with ``E_pi`` replaced by their average).

    The average log-likelihood is maximised over beta exactly as for a policy; for a fixed beta the
    average is unbiased, and the maximum is a consistent estimate of ``MEG_U(pi)``.

    Args:
        mdp: the MDP.
        states: ``[N, H+1]`` or ``[N, H]`` state indices.
        actions: ``[N, H]`` action indices.
        utility: ``U[S]``; default ``mdp.utility``.
    """
    u = mdp.require_utility(utility)
    W = trajectory_weights(mdp, states, actions)
    eu = float(W.sum(axis=(0, 2)) @ u)
    return meg_from_weights(mdp, u, W, eu, expected=None)
