"""The recurrent DQN of Section 3.2 (skipped without torch)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from bib.reflection import environments as E  # noqa: E402
from bib.reflection.drqn import RecurrentDQN, features  # noqa: E402
from bib.reflection.environments import EnvSpec  # noqa: E402
from bib.reflection.harness import make_agent, run_battery  # noqa: E402


def test_features_rows():
    x = features([1, 0, 1, -1, 1, 0, 0, 0], num_actions=2, num_observations=2)
    assert x.tolist() == [[1, 1, 0, 0, 0], [-1, 0, 1, 0, 1], [0, 1, 0, 1, 0]]  # r, one-hot o, one-hot a_{i-1}


def test_power_of_two_training_resumed_and_deterministic():
    rng = np.random.default_rng(0)
    history = []
    for i in range(40):
        history += [int(rng.integers(-1, 2)), int(rng.integers(0, 2))] + ([int(rng.integers(0, 2))] if i < 39 else [])
    agent = RecurrentDQN(seed=1, batch=4)
    answers = [agent.act(tuple(history[: 3 * n - 1]), 2, 2) for n in range(1, 41)]
    assert agent.trainings == 6  # K = 1, 2, 4, 8, 16, 32
    assert agent.gradient_steps == 31 - 3  # each transition of the 32-prefix once, from the 4th on
    fresh = RecurrentDQN(seed=1, batch=4)
    assert fresh.act(tuple(history), 2, 2) == answers[-1]
    assert fresh.gradient_steps == 28 and fresh.trainings == 1
    p_fresh = fresh.policy(2, 2).models[next(iter(fresh.policy(2, 2).models))].params
    resumed = agent.policy(2, 2).models
    key = [k for k in resumed if k in fresh.policy(2, 2).models][0]
    assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(resumed[key].params, p_fresh))
    again = RecurrentDQN(seed=1, batch=4)
    assert [again.act(tuple(history[: 3 * n - 1]), 2, 2) for n in range(1, 41)] == answers


def test_registered_and_runs_cells():
    cells = run_battery(make_agent("recurrent-dqn", 0), 12, 0, [EnvSpec(E.TemptingButton), EnvSpec(E.DejaVu)])
    assert all(c.error is None for c in cells)
    with pytest.raises(TypeError):
        RecurrentDQN(0).policy(2, 1, learning_rate=1)  # IncentivizeLearningRate's option is not accepted
