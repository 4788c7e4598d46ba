"""The recurrent DQN of Section 3.2 (skipped without torch)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from bib.errors import BibInputError  # noqa: E402
from bib.reflection import environments as E  # noqa: E402
from bib.reflection.drqn import RecurrentDQN, windows  # noqa: E402
from bib.reflection.environments import EnvSpec  # noqa: E402
from bib.reflection.harness import make_agent, run_battery  # noqa: E402


def _history(n: int, seed: int = 0) -> list[int]:
    rng = np.random.default_rng(seed)
    out: list[int] = []
    for i in range(n):
        out += [int(rng.integers(-1, 2)), int(rng.integers(0, 2))] + ([int(rng.integers(0, 2))] if i < n - 1 else [])
    return out


def test_windows_left_padded_with_zeros():
    seq = np.array([5, 6, 7, 8], dtype=np.float32)
    assert windows(seq, np.array([0, 2, 3]), 3).tolist() == [[0, 0, 5], [5, 6, 7], [6, 7, 8]]


def test_prefixes_trained_from_scratch_and_deterministic():
    history = _history(40)
    agent = RecurrentDQN(seed=1, batch=4, lookback=2)
    answers = [agent.act(tuple(history[: 3 * n - 1]), 2, 2) for n in range(1, 41)]
    assert agent.trainings == 6  # K = 1, 2, 4, 8, 16, 32
    # each prefix replays its K - 1 transitions from scratch, one step once 4 are in memory: 0 + 0 + 0 + 4 + 12 + 28
    assert agent.gradient_steps == 44
    fresh = RecurrentDQN(seed=1, batch=4, lookback=2)
    assert fresh.act(tuple(history), 2, 2) == answers[-1]  # the 32-prefix alone gives the same network
    assert fresh.trainings == 1 and fresh.gradient_steps == 28
    models = agent.policy(2, 2).models
    key = next(iter(fresh.policy(2, 2).models))
    for a, b in zip(models[key].parameters(), fresh.policy(2, 2).models[key].parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    again = RecurrentDQN(seed=1, batch=4, lookback=2)
    assert [again.act(tuple(history[: 3 * n - 1]), 2, 2) for n in range(1, 41)] == answers
    other = RecurrentDQN(seed=2, batch=4, lookback=2)
    assert [other.act(tuple(history[: 3 * n - 1]), 2, 2) for n in range(1, 41)] != answers


def test_answer_reads_the_window_without_the_first_reward():
    agent = RecurrentDQN(seed=0, batch=4, lookback=1)
    policy = agent.policy(2, 2)
    history = _history(9)
    agent.act(tuple(history), 2, 2)
    net = next(iter(policy.models.values()))
    torch = policy.torch
    # the 9-percept history answered from the 8-prefix's network on o_7, a_7, r_8, o_8 (lookback 1: 4 scalars)
    x = torch.tensor([history[-4:]], dtype=torch.float32)
    with torch.no_grad():
        assert agent.act(tuple(history), 2, 2) == int(torch.argmax(net.q(x)[0]))
    short = _history(1)  # one percept: only o_0, zero-padded (the first reward r_0 never enters)
    x = torch.tensor([[0, 0, 0, short[1]]], dtype=torch.float32)
    net1 = RecurrentDQN(seed=0, batch=4, lookback=1)
    a = net1.act(tuple(short), 2, 2)
    with torch.no_grad():
        assert a == int(torch.argmax(next(iter(net1.policy(2, 2).models.values())).q(x)[0]))


def test_registered_runs_cells_and_refuses_bad_settings():
    cells = run_battery(make_agent("recurrent-dqn", 0), 12, 0, [EnvSpec(E.TemptingButton), EnvSpec(E.DejaVu)])
    assert all(c.error is None for c in cells)
    with pytest.raises(TypeError):
        RecurrentDQN(0).policy(2, 1, learning_rate=1)  # IncentivizeLearningRate's option is not accepted
    with pytest.raises(BibInputError, match="capacity >= batch"):
        RecurrentDQN(0, batch=64, capacity=32)
    with pytest.raises(BibInputError, match="dropout"):
        RecurrentDQN(0, dropout=1.0)


def _tempting_button_history(percepts: int, push, seed: int) -> list[int]:
    """A TemptingButton history (button p = 0.25) of an agent pushing as ``push(obs)`` says."""
    rng = np.random.default_rng(seed)
    obs = int(rng.random() < 0.25)
    out = [0, obs]
    for _ in range(percepts - 1):
        action = push(obs)
        reward = (1 if action == 1 else -1) if obs == 1 else (-1 if push(1) == 1 else 1)
        obs = int(rng.random() < 0.25)
        out += [action, reward, obs]
    return out


@pytest.mark.parametrize(
    ("pushes", "answer"),
    [("always", 0), ("never", 0), ("at the button", 1)],
)
def test_greedy_agent_values_the_action_it_takes_by_its_average_reward(pushes, answer):
    """Why the paper's recurrent DQN converges to +0.5 on TemptingButton (Section 3.2): trained on a
    256-percept history, the greedy network values the action taken by the rewards it earned, while
    the action never taken keeps its untrained value. Always pushing earned -0.5 a turn: it stops
    pushing, at the button too. Never pushing earned +0.5: it stays. Pushing only at the button earned
    +1 for pushing and -1 for skipping: it pushes (then everywhere, which earns -0.5: it stops)."""
    push = {"always": lambda o: 1, "never": lambda o: 0, "at the button": lambda o: int(o == 1)}[pushes]
    history = _tempting_button_history(256, push, seed=0)
    agent = RecurrentDQN(seed=0)
    assert agent.act(tuple(history[:-1] + [1]), 2, 2) == answer  # a button in front of it
    assert agent.trainings == 1 and agent.gradient_steps == 255 - 127
