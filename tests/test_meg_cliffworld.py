"""CliffWorld: seals' conventions and the independent exact MEG values of shared/reference/meg.md section 1.4."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bib.errors import BibInputError
from bib.meg import known_utility_meg, occupancy, predictive_accuracy, soft_policy, tabular_utility_meg
from bib.meg.cliffworld import EPSILONS, cliffworld, epsilon_greedy, greedy_policy, run_experiments

# The reference's numbers as printed (strings keep their precision: a value must round to them).
KNOWN_EPS_H40 = ["36.85", "26.80", "19.20", "13.24", "8.59", "5.07", "2.57", "0.98", "0.196"]
UNKNOWN_EPS_H40 = {0.1: "39.79", 0.9: "0.36"}
BETA_EPS_H40 = {0.1: "0.262", 0.3: "0.131", 0.5: "0.075", 0.7: "0.042", 0.9: "0.013"}
KNOWN_K_H40 = ["54.07", "38.03", "34.07", "32.19"]
KNOWN_EPS_H9 = ["6.72", "4.15", "2.36", "1.22", "0.61", "0.30", "0.14", "0.053", "0.011"]
KNOWN_K_H9 = ["11.09", "9.99", "9.30", "8.79"]


def rounds_to(x: float, printed: str) -> bool:
    """True when ``x`` rounded to the printed number of decimals equals the printed value."""
    decimals = len(printed.split(".")[1])
    return round(x, decimals) == pytest.approx(float(printed), abs=1e-12)


def test_seals_conventions() -> None:
    mdp = cliffworld(7, 4, 40, 0.3)
    T = mdp.dense_transitions()
    assert mdp.shape == (28, 4, 40) and mdp.initial[0] == 1.0
    assert T[0, 3, 8] == pytest.approx(0.7) and T[0, 3, 1] == pytest.approx(0.3)  # down-right: wind into the cliff
    assert T[6, 1, 6] == 1.0  # up-right at the goal stays there
    assert mdp.utility[0] == -1 and mdp.utility[6] == 10 and mdp.utility[3] == -10 and mdp.utility[7] == -1
    k3 = cliffworld(goal_length=3).utility
    assert list(k3[:7]) == [-1, -10, -10, -10, 10, 10, 10]


def test_known_utility_reference_values_h40() -> None:
    mdp = cliffworld()
    for eps, ref in zip(EPSILONS, KNOWN_EPS_H40):
        res = known_utility_meg(mdp, epsilon_greedy(mdp, eps))
        assert rounds_to(res.meg, ref), (eps, res.meg, ref)
        if eps in BETA_EPS_H40:
            assert rounds_to(res.beta, BETA_EPS_H40[eps]), (eps, res.beta)
    for k, ref in zip(range(1, 5), KNOWN_K_H40):
        mk = cliffworld(goal_length=k)
        res = known_utility_meg(mk, greedy_policy(mk))
        assert rounds_to(res.meg, ref) and res.beta == math.inf
    assert rounds_to(39 * math.log(4), KNOWN_K_H40[0])


def test_tie_limit_is_not_uniform_over_argmax() -> None:
    """k = 2: the beta -> inf limit gives 38.03; uniform over the hard argmax would give 42.28."""
    mk = cliffworld(goal_length=2)
    pol = greedy_policy(mk)
    res = known_utility_meg(mk, pol)
    assert rounds_to(res.meg, "38.03")
    assert float(predictive_accuracy(mk, pol, 30.0)) == pytest.approx(res.meg, abs=1e-6)  # the plateau
    S, A, H = mk.shape
    visits = occupancy(mk, pol)[:-1]
    q_opt = np.zeros((H, S, A), bool)  # uniform over the hard argmax, the wrong limit
    v = np.zeros(S)
    for t in range(H - 1, -1, -1):
        q = mk.utility[:, None] + (mk.dense_transitions() @ v)
        q_opt[t] = q >= q.max(axis=1, keepdims=True) - 1e-9
        v = q.max(axis=1)
    uniform_argmax = np.sum(visits * np.log(A / q_opt.sum(axis=2)))
    assert round(uniform_argmax, 2) == 42.28


def test_reference_values_h9_and_soft_recovery() -> None:
    m9 = cliffworld(horizon=9)
    for eps, ref in zip(EPSILONS, KNOWN_EPS_H9):
        assert rounds_to(known_utility_meg(m9, epsilon_greedy(m9, eps)).meg, ref)
    for k, ref in zip(range(1, 5), KNOWN_K_H9):
        mk = cliffworld(horizon=9, goal_length=k)
        assert rounds_to(known_utility_meg(mk, greedy_policy(mk)).meg, ref)
    for mdp, ref in ((m9, "9.79"), (cliffworld(), "49.57")):
        res = known_utility_meg(mdp, soft_policy(mdp, 0.5))
        assert rounds_to(res.meg, ref) and res.beta == pytest.approx(0.5, rel=1e-7)


def test_unknown_utility_reference_values() -> None:
    mdp = cliffworld()
    for eps, ref in UNKNOWN_EPS_H40.items():
        pol = epsilon_greedy(mdp, eps)
        res = tabular_utility_meg(mdp, pol)
        assert rounds_to(res.meg, ref), (eps, res.meg)
        assert res.meg >= known_utility_meg(mdp, pol).meg
    mk = cliffworld(goal_length=3)
    assert tabular_utility_meg(mk, greedy_policy(mk)).meg == pytest.approx(39 * math.log(4), abs=1e-6)


def test_experiment_trends() -> None:
    rows = run_experiments(horizon=12, epsilons=(0.1, 0.5, 0.9), goal_lengths=(1, 2, 4))
    eps = [r for r in rows if r.experiment == "epsilon-greedy"]
    ks = [r for r in rows if r.experiment == "goal-length"]
    assert [r.known for r in eps] == sorted((r.known for r in eps), reverse=True)
    assert [r.known for r in ks] == sorted((r.known for r in ks), reverse=True)
    assert all(r.unknown_tabular >= r.known - 1e-9 for r in rows)
    assert ks[-1].unknown_tabular > ks[-1].known + 1
    json.dumps([r.to_dict() for r in rows])


def test_bad_cliffworld_arguments() -> None:
    with pytest.raises(BibInputError, match="goal length must be in 1..6, got 7"):
        cliffworld(goal_length=7)
    with pytest.raises(BibInputError, match="need width >= 3"):
        cliffworld(width=2)
    with pytest.raises(BibInputError, match="epsilon: must be in"):
        epsilon_greedy(cliffworld(), 1.5)
