"""MEG core: soft value iteration against an independent dense implementation, the paper's properties, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from bib.errors import BibInputError
from bib.meg import (
    TabularMDP,
    expected_utility,
    known_utility_meg,
    limit_log_policy,
    predictive_accuracy,
    soft_policy,
    soft_value_iteration,
    tabular_utility_meg,
    target_meg,
)
from bib.meg.trajectories import sample_trajectories, trajectory_meg, trajectory_weights
from bib.meg.unknown import _Objective, mlp_utility_meg


def random_mdp(seed: int, S: int = 6, A: int = 3, H: int = 5, sparse_k: int | None = None) -> TabularMDP:
    rng = np.random.default_rng(seed)
    T = rng.dirichlet(np.ones(S) * 0.5, size=(S, A))
    if sparse_k is not None:  # keep k successors per (s, a)
        cut = np.sort(T, axis=2)[:, :, -sparse_k][:, :, None]
        T = np.where(T >= cut, T, 0.0)
        T /= T.sum(axis=2, keepdims=True)
    init = rng.dirichlet(np.ones(S))
    return TabularMDP(T, rng.normal(size=S), H, init)


def random_policy(mdp: TabularMDP, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    S, A, H = mdp.shape
    return rng.dirichlet(np.ones(A), size=(H, S))


def dense_soft_vi(T: np.ndarray, r: np.ndarray, H: int) -> np.ndarray:
    """imitation's ``mce_partition_fh`` written out densely (reward r = beta * U): returns pi[H, S, A]."""
    S, A, _ = T.shape
    Q = np.zeros((H, S, A))
    V = np.zeros((H, S))
    Q[H - 1] = r[:, None]
    V[H - 1] = np.log(np.exp(Q[H - 1]).sum(axis=1))
    for t in range(H - 2, -1, -1):
        Q[t] = r[:, None] + T @ V[t + 1]
        V[t] = np.log(np.exp(Q[t]).sum(axis=1))
    return np.exp(Q - V[:, :, None])


def mouse(p_towards: float) -> tuple[TabularMDP, np.ndarray]:
    """Example 1: cheese left/right (states 0/1, prob 1/2), move left/right, get cheese (state 2, U=+1) or not (3, U=-1)."""
    T = np.zeros((4, 2, 4))
    T[0, 0, 2] = T[0, 1, 3] = 1.0  # cheese on the left: moving left gets it
    T[1, 1, 2] = T[1, 0, 3] = 1.0
    T[2, :, 2] = T[3, :, 3] = 1.0
    mdp = TabularMDP(T, np.array([0.0, 0.0, 1.0, -1.0]), horizon=2, initial=np.array([0.5, 0.5, 0, 0]))
    pol = np.full((4, 2), 0.5)
    pol[0] = [p_towards, 1 - p_towards]
    pol[1] = [1 - p_towards, p_towards]
    return mdp, pol


# --- soft value iteration -------------------------------------------------------------------------


@pytest.mark.parametrize("beta", [0.3, 1.0, -2.0])
def test_soft_vi_matches_dense_reference(beta: float) -> None:
    mdp = random_mdp(0, sparse_k=2)
    pi = soft_value_iteration(mdp, beta).policy
    ref = dense_soft_vi(mdp.dense_transitions(), beta * mdp.utility, mdp.horizon)
    np.testing.assert_allclose(pi, ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(pi[-1], 1.0 / mdp.n_actions)  # the last decision is uniform


def test_soft_vi_batched_equals_individual_and_formats_agree() -> None:
    mdp = random_mdp(1, S=9, A=4, H=7, sparse_k=3)
    rng = np.random.default_rng(5)
    U = rng.normal(size=(3, 9))
    betas = np.array([0.5, 2.0, -1.0])
    batch = soft_value_iteration(mdp, betas, U)
    assert batch.log_policy.shape == (3, 7, 9, 4) and batch.values.shape == (3, 8, 9)
    for i in range(3):
        single = soft_value_iteration(mdp, betas[i], U[i])
        np.testing.assert_allclose(batch.log_policy[i], single.log_policy, rtol=1e-13, atol=1e-13)
    T = mdp.dense_transitions()
    succ = np.argsort(-T, axis=2)[:, :, :3]
    prob = np.take_along_axis(T, succ, axis=2)
    as_tuple = TabularMDP((succ, prob), mdp.utility, 7, mdp.initial)
    as_sparse = TabularMDP(sp.csr_matrix(T.reshape(36, 9)), mdp.utility, 7, mdp.initial)
    for other in (as_tuple, as_sparse):
        np.testing.assert_allclose(soft_value_iteration(other, 1.3).log_policy, soft_value_iteration(mdp, 1.3).log_policy, atol=1e-12)


def test_large_sparse_mdp_uses_sparse_arrays_and_matches_dense() -> None:
    from bib.meg.cliffworld import cliffworld

    big = cliffworld(width=40, height=20, horizon=6)
    assert sp.issparse(big.P)
    ref = np.log(dense_soft_vi(big.dense_transitions(), 0.7 * big.utility, 6))
    np.testing.assert_allclose(soft_value_iteration(big, 0.7).log_policy, ref, atol=1e-10)


# --- the paper's examples and properties ---------------------------------------------------------


def test_mouse_example_values() -> None:
    mdp, pol = mouse(0.8)
    res = known_utility_meg(mdp, pol)
    assert res.meg == pytest.approx(math.log(2) + 0.8 * math.log(0.8) + 0.2 * math.log(0.2), abs=1e-9)
    assert round(res.meg, 2) == 0.19 and res.beta == pytest.approx(math.log(2), rel=1e-7)
    opt = known_utility_meg(mdp, mouse(1.0)[1])
    assert round(opt.meg, 2) == 0.69 and opt.beta == math.inf
    doubled = known_utility_meg(mdp, pol, 2 * mdp.utility)  # Section 3: the 2U policy has beta / 2
    assert doubled.meg == pytest.approx(res.meg, abs=1e-10) and doubled.beta == pytest.approx(res.beta / 2, rel=1e-7)


@pytest.mark.parametrize("a,b", [(2.5, 3.0), (0.1, -7.0), (-3.0, 1.0)])
def test_translation_and_scale_invariance(a: float, b: float) -> None:
    mdp = random_mdp(2)
    pol = random_policy(mdp, 3)
    base = known_utility_meg(mdp, pol)
    moved = known_utility_meg(mdp, pol, a * mdp.utility + b)
    assert moved.meg == pytest.approx(base.meg, abs=1e-9)
    assert moved.beta == pytest.approx(base.beta / a, rel=1e-6)


def test_bounds_uniform_and_unique_optimal() -> None:
    mdp = random_mdp(4)
    S, A, H = mdp.shape
    assert known_utility_meg(mdp, np.full((S, A), 1 / A)).meg == pytest.approx(0.0, abs=1e-12)
    for seed in range(5):
        m = known_utility_meg(mdp, random_policy(mdp, seed))
        assert 0.0 <= m.meg <= (H - 1) * math.log(A) + 1e-12
    # every state: action 1 leads to a state of utility 1, action 0 to utility 0, uniquely at every step
    T = np.zeros((2, 2, 2))
    T[:, 0, 0] = T[:, 1, 1] = 1.0
    chain = TabularMDP(T, np.array([0.0, 1.0]), horizon=6)
    best = known_utility_meg(chain, np.array([[0.0, 1.0], [0.0, 1.0]]))
    worst = known_utility_meg(chain, np.array([[1.0, 0.0], [1.0, 0.0]]))
    assert best.meg == pytest.approx(5 * math.log(2)) == best.upper_bound and best.beta == math.inf
    assert worst.meg == pytest.approx(5 * math.log(2)) and worst.beta == -math.inf
    assert best.signed_meg > 0 > worst.signed_meg == pytest.approx(-worst.meg)


def test_no_goal_directedness_without_causal_influence() -> None:
    rng = np.random.default_rng(0)
    S, A = 5, 3
    row = rng.dirichlet(np.ones(S), size=S)
    T = np.repeat(row[:, None, :], A, axis=1)  # actions do not affect the next state
    mdp = TabularMDP(T, rng.normal(size=S), 6, rng.dirichlet(np.ones(S)))
    res = known_utility_meg(mdp, random_policy(mdp, 1))
    assert res.meg == 0.0 and res.beta == 0.0
    assert tabular_utility_meg(mdp, random_policy(mdp, 1)).meg == pytest.approx(0.0, abs=1e-9)


def test_pseudo_terminal_goal_theorem() -> None:
    """Thm 4.1: D -> S (mediator) -> T; D is independent of T given S, so MEG_T(D) <= MEG_S(D)."""
    for seed in range(6):
        rng = np.random.default_rng(seed)
        n_med, n_tgt, A = 3, 2, 3
        S = 1 + n_med + n_tgt
        T = np.zeros((S, A, S))
        T[0, :, 1 : 1 + n_med] = rng.dirichlet(np.ones(n_med) * 0.7, size=A)  # the decision picks a mediator
        for m in range(n_med):  # the target depends on the mediator only, not on any later action
            T[1 + m, :, 1 + n_med :] = rng.dirichlet(np.ones(n_tgt))
        for k in range(n_tgt):
            T[1 + n_med + k, :, 1 + n_med + k] = 1.0
        mdp = TabularMDP(T, None, horizon=3)
        pol = np.full((S, A), 1 / A)
        pol[0] = rng.dirichlet(np.ones(A))
        med = np.array([-1] + list(range(n_med)) + [-1] * n_tgt)
        tgt = np.array([-1] * (1 + n_med) + list(range(n_tgt)))
        meg_s = target_meg(mdp, pol, med).meg
        meg_t = target_meg(mdp, pol, tgt).meg
        assert meg_t <= meg_s + 1e-7
        assert meg_s > 0


@pytest.mark.parametrize("beta0", [0.7, -1.3, 4.0])
def test_beta_recovered_from_soft_policy(beta0: float) -> None:
    mdp = random_mdp(6, S=8, A=3, H=6)
    res = known_utility_meg(mdp, soft_policy(mdp, beta0))
    assert res.beta == pytest.approx(beta0, rel=1e-6)
    assert res.iterations < 30


def test_predictive_accuracy_is_concave_with_paper_gradient() -> None:
    mdp = random_mdp(7)
    pol = random_policy(mdp, 8)
    betas = np.linspace(-3, 3, 61)
    acc = predictive_accuracy(mdp, pol, betas)
    assert np.all(np.diff(acc, 2) <= 1e-10)  # concave
    h = 1e-5
    for beta in (-1.0, 0.4, 2.0):
        fd = (predictive_accuracy(mdp, pol, beta + h) - predictive_accuracy(mdp, pol, beta - h)) / (2 * h)
        grad = expected_utility(mdp, pol) - expected_utility(mdp, soft_policy(mdp, beta))
        assert fd == pytest.approx(grad, rel=1e-5, abs=1e-8)
    res = known_utility_meg(mdp, pol)
    assert res.meg >= acc.max() - 1e-12
    assert res.meg == pytest.approx(float(predictive_accuracy(mdp, pol, res.beta)), abs=1e-10)


def test_limit_policy_prefers_more_optimal_continuations() -> None:
    """Two tied optimal actions: one to a state with 2 optimal continuations, one to a state with 1."""
    T = np.zeros((4, 2, 4))
    T[0, 0, 1] = T[0, 1, 2] = 1.0
    T[1, :, 3] = 1.0  # both actions optimal in state 1
    T[2, 0, 3] = 1.0
    T[2, 1, 0] = 1.0  # in state 2 only action 0 reaches the goal
    T[3, :, 3] = 1.0
    mdp = TabularMDP(T, np.array([0.0, 0.0, 0.0, 1.0]), horizon=3)
    logpi, vstar = limit_log_policy(mdp, mdp.utility)
    assert vstar == 1.0
    assert np.exp(logpi[0, 0]) == pytest.approx([2 / 3, 1 / 3])  # exp(log 2) : exp(log 1)
    np.testing.assert_allclose(np.exp(logpi[0, 0]), soft_policy(mdp, 60.0)[0, 0], atol=1e-12)


# --- unknown utility, trajectories -----------------------------------------------------------------


def test_unknown_gradient_matches_finite_differences() -> None:
    mdp = random_mdp(9)
    obj = _Objective(mdp, random_policy(mdp, 10))
    u = np.random.default_rng(11).normal(size=mdp.n_states)
    _, grad = obj(u)
    for i in range(mdp.n_states):
        e = np.zeros_like(u)
        e[i] = 1e-6
        assert (obj(u + e)[0] - obj(u - e)[0]) / 2e-6 == pytest.approx(grad[i], abs=1e-7)


def test_unknown_at_least_known_and_mlp_restarts_reported() -> None:
    mdp = random_mdp(12, S=7, A=3, H=5)
    pol = random_policy(mdp, 13)
    known = known_utility_meg(mdp, pol).meg
    tab = tabular_utility_meg(mdp, pol)
    assert tab.meg >= known - 1e-9
    assert np.linalg.norm(_Objective(mdp, pol)(tab.utility)[1]) < 1e-5  # a stationary point of a concave objective
    mlp = mlp_utility_meg(mdp, pol, restarts=2, seed=3, hidden=32, max_iter=100)
    assert len(mlp.runs) == 2 and mlp.std >= 0 and mlp.mean <= mlp.meg
    assert mlp.meg <= tab.meg + 1e-6  # an MLP over one-hot states cannot beat the tabular supremum
    assert mlp.meg >= 0.9 * tab.meg
    again = mlp_utility_meg(mdp, pol, restarts=2, seed=3, hidden=32, max_iter=100)
    assert again.runs == mlp.runs


def test_trajectory_estimate_converges_to_exact() -> None:
    mdp = random_mdp(14, S=6, A=3, H=6)
    pol = random_policy(mdp, 15) ** 3
    pol /= pol.sum(axis=-1, keepdims=True)
    exact = known_utility_meg(mdp, pol)
    errors = []
    for n in (30, 300, 30000):
        tr = sample_trajectories(mdp, pol, n, np.random.default_rng(n))
        errors.append(abs(trajectory_meg(mdp, tr.states, tr.actions).meg - exact.meg))
    assert errors[-1] < 0.02 * max(exact.meg, 0.1)
    assert errors[-1] < errors[0]
    tr = sample_trajectories(mdp, pol, 200000, np.random.default_rng(0))
    W = trajectory_weights(mdp, tr.states, tr.actions)
    from bib.meg.soft import state_action_occupancy

    np.testing.assert_allclose(W, state_action_occupancy(mdp, pol), atol=5e-3)


def test_trajectory_sampling_is_deterministic() -> None:
    mdp = random_mdp(16)
    pol = random_policy(mdp, 0)
    a = sample_trajectories(mdp, pol, 50, np.random.default_rng(9))
    b = sample_trajectories(mdp, pol, 50, np.random.default_rng(9))
    assert np.array_equal(a.states, b.states) and np.array_equal(a.actions, b.actions)


# --- bad input ---------------------------------------------------------------------------------------


def test_bad_transitions_and_horizon() -> None:
    T = np.full((3, 2, 3), 1 / 3)
    T[1, 0] = [0.5, 0.2, 0.0]
    with pytest.raises(ValueError, match=r"transitions\[s=1, a=0\]: probabilities sum to 0.7"):
        TabularMDP(T, np.zeros(3), 2)
    T[1, 0] = [1.2, -0.2, 0.0]
    with pytest.raises(BibInputError, match=r"transitions\[s=1, a=0, s'=1\]: negative probability"):
        TabularMDP(T, np.zeros(3), 2)
    good = np.full((3, 2, 3), 1 / 3)
    with pytest.raises(ValueError, match="horizon: must be an integer >= 1, got 0"):
        TabularMDP(good, np.zeros(3), 0)
    with pytest.raises(ValueError, match=r"utility\[2\]: not finite"):
        TabularMDP(good, np.array([0, 1, np.nan]), 2)


def test_bad_policy() -> None:
    mdp = TabularMDP(np.full((3, 2, 3), 1 / 3), np.arange(3.0), 4)
    with pytest.raises(ValueError, match=r"policy: expected shape \(3, 2\) or \(4, 3, 2\), got \(2, 3\)"):
        known_utility_meg(mdp, np.full((2, 3), 0.5))
    pol = np.full((4, 3, 2), 0.5)
    pol[2, 1, 0] = np.nan
    with pytest.raises(ValueError, match=r"policy\[t=2, s=1, a=0\]: not finite"):
        known_utility_meg(mdp, pol)
    with pytest.raises(ValueError, match=r"policy\[s=0\]: probabilities sum to 0.9"):
        known_utility_meg(mdp, np.array([[0.4, 0.5], [0.5, 0.5], [0.5, 0.5]]))


def test_bad_sparse_and_successor_transitions() -> None:
    succ = np.zeros((2, 2, 1), dtype=np.int64)
    succ[1, 1, 0] = 5
    with pytest.raises(BibInputError, match=r"transitions\[s=1, a=1, k=0\]: successor 5 out of range 0..1"):
        TabularMDP((succ, np.ones((2, 2, 1))), None, 2)
    with pytest.raises(BibInputError, match=r"sparse matrix must have shape \[S\*A, S\], got \(5, 2\)"):
        TabularMDP(sp.csr_matrix(np.ones((5, 2)) / 2), None, 2)
    m = np.full((4, 2), 0.5)
    m[3] = [1.5, -0.5]
    with pytest.raises(BibInputError, match=r"transitions\[s=1, a=1, s'=1\]: negative probability -0.5"):
        TabularMDP(sp.csr_matrix(m), None, 2)
    mdp = random_mdp(0)
    with pytest.raises(BibInputError, match="do not broadcast"):
        soft_value_iteration(mdp, np.array([1.0, 2.0, 3.0]), np.zeros((2, mdp.n_states)))
    with pytest.raises(BibInputError, match="this MDP has no utility"):
        known_utility_meg(mdp.with_utility(None), random_policy(mdp, 0))


def test_predictive_accuracy_limits_match_large_beta() -> None:
    T = np.zeros((2, 2, 2))
    T[:, 0, 0] = T[:, 1, 1] = 1.0
    chain = TabularMDP(T, np.array([0.0, 1.0]), horizon=4)
    pol = np.array([[0.1, 0.9], [0.1, 0.9]])
    acc = predictive_accuracy(chain, pol, np.array([40.0, np.inf, -np.inf]))
    assert acc[1] == -np.inf and acc[2] == -np.inf  # the policy sometimes takes the non-optimal action
    best = known_utility_meg(chain, pol)
    assert math.isfinite(best.beta) and best.meg == pytest.approx(3 * (math.log(2) + 0.1 * math.log(0.1) + 0.9 * math.log(0.9)))


def test_logsumexp_and_log_softmax_handle_minus_inf() -> None:
    from scipy.special import logsumexp as scipy_lse

    from bib.meg.soft import log_softmax, logsumexp

    x = np.array([[0.5, -np.inf, 2.0], [-np.inf, -np.inf, -np.inf]])
    assert logsumexp(x, axis=1)[0] == pytest.approx(scipy_lse([0.5, 2.0]))
    assert logsumexp(x, axis=1)[1] == -np.inf
    assert logsumexp(x[:1], axis=(0, 1)) == pytest.approx(scipy_lse([0.5, 2.0]))
    with np.errstate(all="raise"):
        lp = log_softmax(x, axis=1)
    assert np.exp(lp[0]) == pytest.approx([1 / (1 + math.exp(1.5)), 0.0, 1 / (1 + math.exp(-1.5))])
    assert np.all(lp[1] == -np.inf)


def _torch_lbfgs(fn, x0: np.ndarray, max_iter: int) -> np.ndarray:
    """torch.optim.LBFGS with linear/target MEG's settings (what bib.meg.unknown._lbfgs ran before its numpy port)."""
    import torch

    x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([x], lr=1.0, max_iter=max_iter, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-7, tolerance_change=1e-14, history_size=20)

    def closure():  # noqa: ANN202
        value, grad = fn(x.detach().numpy())
        x.grad = torch.from_numpy(-grad)
        return torch.tensor(-value, dtype=torch.float64)

    opt.step(closure)
    return x.detach().numpy().copy()


def test_lbfgs_is_torchs() -> None:
    """bib.meg.lbfgs is torch's L-BFGS step for step: on Rosenbrock (many line searches, zooms and history shifts)
    and on target-variable MEG of wandering paths, it stops at torch's point within the tolerances (the arithmetic
    differs only in the last bits of dot products), with the same number of evaluations within a few."""
    from bib.meg.lbfgs import minimise
    from bib.meg.unknown import _LBFGS_SETTINGS, _chain, _lbfgs, target_features
    from bib.world.mdp import layout_mdp

    def rosenbrock(x: np.ndarray) -> tuple[float, np.ndarray]:
        f = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        g = np.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2), 200 * (x[1] - x[0] ** 2)])
        return -f, -g  # maximised

    counts = {"numpy": 0, "torch": 0}

    def counted(name):  # noqa: ANN001, ANN202
        def fn(x: np.ndarray) -> tuple[float, np.ndarray]:
            counts[name] += 1
            return rosenbrock(x)
        return fn

    ours = _lbfgs(counted("numpy"), np.array([-1.2, 1.0]), 500)
    theirs = _torch_lbfgs(counted("torch"), np.array([-1.2, 1.0]), 500)
    assert np.allclose(ours, [1.0, 1.0], atol=1e-6) and np.allclose(ours, theirs, rtol=0, atol=1e-9)
    assert counts["numpy"] > 30 and abs(counts["numpy"] - counts["torch"]) <= 3
    steps = minimise(np.zeros(3), 10, **_LBFGS_SETTINGS)  # a zero gradient at the start: stops there
    assert np.array_equal(next(steps), np.zeros(3))
    with pytest.raises(StopIteration):
        steps.send((0.0, np.zeros(3)))

    from test_meg_episodes import wandering_path

    from bib.tasks import make_unit

    rng = np.random.default_rng(11)
    for task in ("preference", "instrumental-blocking", "multi-agent"):
        lay = make_unit(task, 0, 0)[0].trials[-1].layout
        path = wandering_path(lay, 25, rng)
        grid = layout_mdp(lay, path[0], horizon=len(path), key_lock=lay.key is not None and lay.lock is not None)
        labels = np.full(grid.mdp.n_states, -1)
        for k, o in enumerate(lay.objects):
            labels[grid.at(o.cell)] = k
        W = trajectory_weights(grid.mdp, *grid.trajectory(path))
        obj, phi = _Objective(grid.mdp, None, W), target_features(grid.mdp, labels)
        a = _lbfgs(lambda th: _chain(obj, phi, th), np.zeros(phi.shape[1]), 500)
        b = _torch_lbfgs(lambda th: _chain(obj, phi, th), np.zeros(phi.shape[1]), 500)
        assert np.allclose(a, b, rtol=1e-6, atol=1e-9), (task, a, b)
        assert obj(phi @ a)[0] == pytest.approx(obj(phi @ b)[0], rel=1e-12, abs=1e-15)

