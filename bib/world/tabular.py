"""TabularMDP: finite-horizon tabular MDP with state utilities and (optionally sparse) transitions."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from bib.errors import BibInputError

# Transition matrices with at most this many dense entries are kept dense (faster for small MDPs).
_DENSE_LIMIT = 1 << 20
_ATOL = 1e-8


def _finite_vector(name: str, x: np.ndarray, size: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (size,):
        raise BibInputError(f"{name}: expected shape ({size},), got {x.shape}")
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise BibInputError(f"{name}[{bad[0]}]: not finite ({x[bad[0]]})")
    return x


class TabularMDP:
    """A finite-horizon MDP over ``S`` states and ``A`` actions with a state utility ``U[S]``.

    Convention (used by everything in :mod:`bib.meg` and by :mod:`bib.world.mdp`): decisions are taken at ``t = 0 .. H-1``;
    the utility ``U(s_t)`` is credited for ``t = 0 .. H-1``; soft values are
    ``Q_t(s,a) = U(s) + sum_s' T(s,a,s') V_{t+1}(s')`` with ``V_H = 0`` and the soft policy is
    ``pi_beta,t = softmax(beta * Q_t)``. Hence ``Q_{H-1}(s, .) = U(s)`` and the last decision is
    uniform under every soft policy.

    Args:
        transitions: ``T[s, a, s']`` as a dense array ``[S, A, S]``; or a scipy sparse matrix of
            shape ``[S*A, S]`` whose row ``s*A + a`` is ``T(s, a, .)``; or a pair
            ``(successors[S, A, K] int, probabilities[S, A, K])`` listing the K successors of each
            state-action (unused slots with probability 0).
        utility: ``U[S]``, or ``None`` for an MDP without utility (unknown-utility MEG).
        horizon: number of decisions ``H >= 1``.
        initial: initial state distribution ``[S]``; default: all mass on state 0.

    Raises:
        BibInputError: rows that do not sum to 1, negative probabilities, ``horizon < 1``, bad shapes
            or non-finite values; the message names the array and the offending index.
    """

    def __init__(
        self,
        transitions: np.ndarray | sp.spmatrix | sp.sparray | tuple[np.ndarray, np.ndarray],
        utility: np.ndarray | None,
        horizon: int,
        initial: np.ndarray | None = None,
    ) -> None:
        csr, n_states, n_actions = _to_csr(transitions)
        if isinstance(horizon, bool) or int(horizon) != horizon or horizon < 1:
            raise BibInputError(f"horizon: must be an integer >= 1, got {horizon!r}")
        self.n_states = n_states
        self.n_actions = n_actions
        self.horizon = int(horizon)
        if initial is None:
            initial = np.zeros(n_states)
            initial[0] = 1.0
        init = _finite_vector("initial", initial, n_states)
        neg = np.flatnonzero(init < 0)
        if neg.size:
            raise BibInputError(f"initial[{neg[0]}]: negative probability {init[neg[0]]}")
        if abs(init.sum() - 1.0) > 1e-6:
            raise BibInputError(f"initial: probabilities sum to {init.sum():.6g}, expected 1")
        self.initial = init / init.sum()
        self.utility = None if utility is None else _finite_vector("utility", utility, n_states)
        self._csr = csr
        # Action-major copy: row a*S + s is T(s, a, .), so backups reshape to contiguous [A, S].
        order = (np.arange(n_states)[None, :] * n_actions + np.arange(n_actions)[:, None]).ravel()
        am = csr[order]
        # A deterministic MDP (one successor per state-action, probability 1: every gridworld layout)
        # backs up by indexing: v[succ] is exactly the product with the 0/1 matrix, without its
        # S x S work per action.
        self._succ = (csr.indices[order].reshape(n_actions, n_states)
                      if np.all(np.diff(csr.indptr) == 1) and np.all(csr.data == 1.0) else None)
        if n_states * n_actions * n_states <= _DENSE_LIMIT:
            self.P = am.toarray()
            self.PT = np.ascontiguousarray(self.P.T)
        else:
            self.P = am.tocsr()
            self.PT = am.T.tocsr()

    def backup(self, v: np.ndarray) -> np.ndarray:
        """``sum_s' T(s, a, s') v[s', ...]`` as an action-major array ``[A, S, ...]``."""
        if self._succ is not None:
            return v[self._succ]
        return (self.P @ v).reshape((self.n_actions, self.n_states) + v.shape[1:])

    def push(self, x: np.ndarray) -> np.ndarray:
        """Next-state distribution ``sum_{s,a} x[a, s] T(s, a, .)`` for action-major mass ``x [A, S]``."""
        return self.PT @ x.ravel()

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(S, A, H)``."""
        return self.n_states, self.n_actions, self.horizon

    @property
    def deterministic(self) -> bool:
        """True when every state-action has a single successor."""
        return bool(np.all(np.diff(self._csr.indptr) == 1))

    def with_utility(self, utility: np.ndarray | None) -> TabularMDP:
        """The same MDP with another utility (shares the transition arrays)."""
        new = object.__new__(TabularMDP)
        new.__dict__.update(self.__dict__)
        new.utility = None if utility is None else _finite_vector("utility", utility, self.n_states)
        return new

    def with_horizon(self, horizon: int) -> TabularMDP:
        """The same MDP with another horizon."""
        if isinstance(horizon, bool) or int(horizon) != horizon or horizon < 1:
            raise BibInputError(f"horizon: must be an integer >= 1, got {horizon!r}")
        new = object.__new__(TabularMDP)
        new.__dict__.update(self.__dict__)
        new.horizon = int(horizon)
        return new

    def dense_transitions(self) -> np.ndarray:
        """``T[s, a, s']`` as a dense array."""
        return self._csr.toarray().reshape(self.n_states, self.n_actions, self.n_states)

    def require_utility(self, utility: np.ndarray | None = None) -> np.ndarray:
        """``utility`` if given (validated), else the MDP's own; raise if neither exists."""
        if utility is not None:
            return _finite_vector("utility", utility, self.n_states)
        if self.utility is None:
            raise BibInputError("utility: this MDP has no utility; pass one")
        return self.utility

    def as_policy(self, policy: np.ndarray, name: str = "policy") -> np.ndarray:
        """Validate a policy ``[S, A]`` (stationary) or ``[H, S, A]`` and return it as ``[H, S, A]``.

        Raises:
            BibInputError: wrong shape, NaN/inf, negative entries or rows not summing to 1.
        """
        S, A, H = self.shape
        p = np.asarray(policy, dtype=np.float64)
        if p.shape == (S, A):
            names = ("s", "a")
        elif p.shape == (H, S, A):
            names = ("t", "s", "a")
        else:
            raise BibInputError(f"{name}: expected shape ({S}, {A}) or ({H}, {S}, {A}), got {p.shape}")
        if not np.isfinite(p).all():
            bad = np.argwhere(~np.isfinite(p))[0]
            raise BibInputError(f"{name}{_index(bad, names)}: not finite ({p[tuple(bad)]})")
        if (p < 0).any():
            bad = np.argwhere(p < 0)[0]
            raise BibInputError(f"{name}{_index(bad, names)}: negative probability {p[tuple(bad)]}")
        sums = p.sum(axis=-1)
        if (np.abs(sums - 1.0) > 1e-6).any():
            bad = np.argwhere(np.abs(sums - 1.0) > 1e-6)[0]
            raise BibInputError(f"{name}{_index(bad, names[:-1])}: probabilities sum to {sums[tuple(bad)]:.6g}, expected 1")
        return np.broadcast_to(p, (H, S, A)) if p.ndim == 2 else p


def _index(idx: np.ndarray, names: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"{n}={int(i)}" for n, i in zip(names, idx)) + "]"


def _to_csr(transitions) -> tuple[sp.csr_matrix, int, int]:
    """Convert any supported transition format to CSR ``[S*A, S]`` and validate it."""
    if isinstance(transitions, tuple):
        if len(transitions) != 2:
            raise BibInputError("transitions: a tuple must be (successors[S, A, K], probabilities[S, A, K])")
        succ = np.asarray(transitions[0])
        prob = np.asarray(transitions[1], dtype=np.float64)
        if succ.ndim != 3 or succ.shape != prob.shape:
            raise BibInputError(f"transitions: successors {succ.shape} and probabilities {prob.shape} must both be [S, A, K]")
        if not np.issubdtype(succ.dtype, np.integer):
            raise BibInputError("transitions: successors must be integers")
        S, A, K = succ.shape
        if succ.size and (succ.min() < 0 or succ.max() >= S):
            bad = np.argwhere((succ < 0) | (succ >= S))[0]
            raise BibInputError(f"transitions[s={bad[0]}, a={bad[1]}, k={bad[2]}]: successor {succ[tuple(bad)]} out of range 0..{S - 1}")
        _check_probs(prob, last="k")
        rows = np.repeat(np.arange(S * A), K)
        csr = sp.csr_matrix((prob.ravel(), (rows, succ.ravel())), shape=(S * A, S))
    elif sp.issparse(transitions):
        csr = sp.csr_matrix(transitions, dtype=np.float64)
        n_rows, S = csr.shape
        if S == 0 or n_rows % S:
            raise BibInputError(f"transitions: sparse matrix must have shape [S*A, S], got {csr.shape}")
        A = n_rows // S
        if not np.all(np.isfinite(csr.data)):
            raise BibInputError("transitions: contains non-finite values")
        if csr.data.size and csr.data.min() < 0:
            coo = csr.tocoo()
            k = int(np.argmin(coo.data))
            r = int(coo.row[k])
            raise BibInputError(f"transitions[s={r // A}, a={r % A}, s'={int(coo.col[k])}]: negative probability {coo.data[k]}")
        sums = np.asarray(csr.sum(axis=1)).ravel()
        _check_sums(sums.reshape(S, A))
    else:
        T = np.asarray(transitions, dtype=np.float64)
        if T.ndim != 3 or T.shape[0] != T.shape[2]:
            raise BibInputError(f"transitions: expected a dense array [S, A, S], got shape {T.shape}")
        S, A, _ = T.shape
        _check_probs(T)
        csr = sp.csr_matrix(T.reshape(S * A, S))
    if A < 1 or S < 1:
        raise BibInputError("transitions: need at least one state and one action")
    csr.eliminate_zeros()
    csr.sort_indices()
    return csr, S, A


def _check_probs(T: np.ndarray, last: str = "s'") -> None:
    bad = np.argwhere(~np.isfinite(T))
    if bad.size:
        idx = tuple(int(i) for i in bad[0])
        raise BibInputError(f"transitions[s={idx[0]}, a={idx[1]}, {last}={idx[2]}]: not finite")
    bad = np.argwhere(T < 0)
    if bad.size:
        s, a, k = (int(i) for i in bad[0])
        raise BibInputError(f"transitions[s={s}, a={a}, {last}={k}]: negative probability {T[s, a, k]}")
    _check_sums(T.sum(axis=2))


def _check_sums(sums: np.ndarray) -> None:
    bad = np.argwhere(np.abs(sums - 1.0) > _ATOL * max(1, sums.shape[-1]))
    if bad.size:
        s, a = (int(i) for i in bad[0])
        raise BibInputError(f"transitions[s={s}, a={a}]: probabilities sum to {sums[s, a]:.6g}, expected 1")
