"""Stable Baselines3 adapters (skipped when the optional rl extra is not installed)."""

from __future__ import annotations

import pytest

pytest.importorskip("stable_baselines3")

from bib.reflection import environments as E  # noqa: E402
from bib.reflection.environments import EnvSpec  # noqa: E402
from bib.reflection.harness import make_agent, run_battery  # noqa: E402
from bib.reflection.sb3 import SB3Agent  # noqa: E402


def test_power_of_two_training_and_determinism():
    agent = SB3Agent("dqn", seed=0)
    history = tuple(x for i in range(9) for x in (i % 2, 0, i % 2))[:-1]  # 9 percepts
    first = agent.act(history, 2, 1)
    assert agent.trainings == 1  # K = 8 percepts -> 7 transitions -> DQN learns 4 steps
    assert agent.act(history, 2, 1) == first
    longer = history + (0, 1, 0)  # 10 percepts share the 8-percept prefix: no new training
    agent.act(longer, 2, 1)
    assert agent.trainings == 1
    assert agent.act((0, 0), 2, 1) == 0  # too short to train: action 0


def test_sb3_agent_accepts_learning_rate_and_runs_cells():
    cells = run_battery(SB3Agent("dqn", seed=1), 10, 0, [EnvSpec(E.IncentivizeLearningRate), EnvSpec(E.IgnoreRewards)])
    assert all(c.error is None for c in cells)
    assert cells[0].score != -0.9  # the option is accepted, unlike the non-SB3 agents
    a2c = run_battery(make_agent("a2c", 0), 4, 0, [EnvSpec(E.IgnoreActions)])
    assert a2c[0].error is None
