"""Stable Baselines3 agents (skipped when the optional rl extra is not installed).

The reference below is the V1 conversion run through SB3 itself: a fresh model trained with
``learn()`` on a replay environment whose actions are forced by monkeypatching. The agent's numpy
updates (bib.reflection.sb3_train) must give the same model.
"""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402
from stable_baselines3 import A2C, DQN, PPO  # noqa: E402
from stable_baselines3.common.buffers import ReplayBuffer  # noqa: E402

from bib.reflection import environments as E  # noqa: E402
from bib.reflection.environments import EnvSpec  # noqa: E402
from bib.reflection.harness import make_agent, measure, run_battery  # noqa: E402
from bib.reflection.prefix import flatten, prefix_key  # noqa: E402
from bib.reflection.sb3 import SB3Agent  # noqa: E402
from bib.reflection.sb3_train import QNet  # noqa: E402


def _history(percepts: int, n_actions: int, n_obs: int, seed: int = 3) -> tuple[int, ...]:
    rng = np.random.default_rng(seed)
    out: list[int] = []
    for i in range(percepts):
        out += [int(rng.integers(-1, 2)), int(rng.integers(0, n_obs))]
        if i < percepts - 1:
            out.append(int(rng.integers(0, n_actions)))
    return tuple(out)


class _Replay(gym.Env):
    """V1's dummy environment: replays the prefix, the recorded action is forced."""

    def __init__(self, prefix: tuple[int, ...], n_actions: int, n_obs: int) -> None:
        self.rewards, self.obs, self.actions = prefix[0::3], prefix[1::3], prefix[2::3]
        self.observation_space = gym.spaces.Discrete(n_obs)
        self.action_space = gym.spaces.Discrete(n_actions)
        self.i = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.i = 0
        return int(self.obs[0]), {}

    def step(self, action):
        self.i += 1
        return int(self.obs[self.i]), float(self.rewards[self.i]), False, self.i >= len(self.actions), {}


def _sb3_reference(kind: str, prefix: tuple[int, ...], n_actions: int, n_obs: int, seed: int):
    """Train a fresh SB3 model with learn() on the forced replay (the V1 SBL3_agents construction)."""
    env = _Replay(prefix, n_actions, n_obs)
    transitions = len(env.actions)
    kwargs = {"seed": seed, "device": "cpu", "verbose": 0}
    if kind == "dqn":
        steps = transitions - transitions % 4
        model = DQN("MlpPolicy", env, learning_starts=1, **kwargs)
        model._sample_action = lambda learning_starts, action_noise=None, n_envs=1: (
            np.array([env.actions[env.i]] * n_envs),) * 2
    else:
        steps = transitions
        model = (PPO("MlpPolicy", env, n_steps=steps, batch_size=steps, **kwargs) if kind == "ppo"
                 else A2C("MlpPolicy", env, n_steps=steps, **kwargs))
        policy, original = model.policy, model.policy.forward

        def forward(obs, deterministic=False):
            original(obs, deterministic)
            actions = torch.full((obs.shape[0],), env.actions[env.i], dtype=torch.long)
            values, log_prob, _ = policy.evaluate_actions(obs, actions)
            return actions, values, log_prob

        policy.forward = forward
    model.learn(total_timesteps=steps)
    return model


@pytest.mark.parametrize("kind", ["a2c", "ppo"])
def test_actor_critic_update_equals_sb3_learn(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # the reference's learn() logs there
    prefix = _history(64, 3, 4)
    reference = _sb3_reference(kind, prefix, 3, 4, seed=5)
    with torch.no_grad():
        expected = reference.policy.get_distribution(torch.arange(4)).distribution.probs.numpy()
    got = SB3Agent(kind, seed=5).policy(3, 4).train(list(prefix), 64, b"key", ())
    assert np.abs(np.array(got) - expected).max() < 1e-6
    assert np.abs(expected - 1 / 3).max() > 1e-3  # the update moved the policy: the check has teeth


def test_dqn_update_equals_sb3_learn_with_the_same_minibatches(tmp_path, monkeypatch):
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))
    stream = np.random.default_rng([5, 0xD0])  # the agent's minibatch stream for seed 5

    def sample(self, batch_size, env=None):
        upper = self.buffer_size if self.full else self.pos
        return self._get_samples(stream.integers(0, upper, size=batch_size), env=env)

    monkeypatch.setattr(ReplayBuffer, "sample", sample)
    prefix = _history(64, 3, 4)
    reference = _sb3_reference("dqn", prefix, 3, 4, seed=5)
    with torch.no_grad():
        expected = reference.q_net(torch.arange(4).reshape(-1, 1)).numpy()
    policy = SB3Agent("dqn", seed=5).policy(3, 4)
    table = policy.train(list(prefix), 64, b"key", ())
    trainer = policy.template().dqn
    state = policy.checkpoints[b"key"]
    assert state[-1] == 60 and trainer.gradient_steps == 15  # 63 transitions -> 60 steps, one update per 4
    got = QNet(trainer.flat.views(state[0])).forward()[1]
    assert np.abs(got - expected).max() < 1e-6
    assert np.abs(expected - QNet(trainer.flat.views(trainer.fresh()[0])).forward()[1]).max() > 1e-4
    greedy = expected.argmax(axis=1)
    assert [int(np.argmax(row)) for row in table] == greedy.tolist()
    assert max(table[0]) == pytest.approx(0.95 + 0.05 / 3)  # epsilon 0.05 at the end of training


def test_dqn_resumed_from_the_parent_prefix_equals_training_from_scratch():
    prefix = list(_history(64, 2, 3))
    fresh = SB3Agent("dqn", seed=2).policy(2, 3)
    fresh.train(prefix, 64, b"k64", ())
    resumed = SB3Agent("dqn", seed=2).policy(2, 3)
    resumed.train(prefix[: 3 * 32 - 1], 32, b"k32", ())
    resumed.train(prefix, 64, b"k64", (b"k32",))
    assert resumed.template().dqn.gradient_steps == fresh.template().dqn.gradient_steps == 15
    assert np.array_equal(fresh.checkpoints[b"k64"][0], resumed.checkpoints[b"k64"][0])


def test_training_along_an_appended_history_costs_each_transition_once():
    """Queried at every step, DQN trains each transition once in all; A2C/PPO once per power of two."""
    history = _history(300, 2, 2)
    for kind in ("dqn", "a2c", "ppo"):
        agent = SB3Agent(kind, seed=0)
        policy = agent.policy(2, 2)
        state = policy.empty()
        for i in range(300):
            state = policy.percept(state, history[3 * i], history[3 * i + 1])
            action = policy.act(state)
            if i < 299:
                state = policy.record(state, history[3 * i + 2])
        assert action in (0, 1)
        if kind == "dqn":  # K = 256 at the end: (256 - 4) / 4 gradient steps, however many queries
            assert agent.trainings == 6 and policy.template().dqn.gradient_steps == 63  # K = 8 .. 256
        else:
            assert agent.trainings == (8 if kind == "a2c" else 7)  # K = 2 (4 for PPO) .. 256


def test_concatenated_history_names_the_same_model_as_the_appended_one():
    history = _history(12, 2, 2)
    agent = SB3Agent("a2c", seed=0)
    policy = agent.policy(2, 2)
    left_symbols, right_symbols = history[:15], history[15:]  # 5 percepts + action | 7 percepts
    left = policy.walk(left_symbols)
    joined = policy.concat(left, right_symbols, policy.walk(right_symbols))
    walked = policy.walk(history)
    assert flatten(joined[4]) == flatten(walked[4]) == list(history)
    assert joined[:3] == walked[:3]  # hash, length, percepts
    assert joined[3][3] is None and walked[3][3] == prefix_key(history[: 3 * 8 - 1])
    first = policy.act(joined)
    trainings = agent.trainings
    assert policy.act(walked) == first and agent.trainings == trainings  # memo and model shared


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


def test_same_seed_same_measure_for_any_worker_count():
    one = measure("dqn", reality_check=True, steps=16, seeds=2, workers=1, progress=False)
    two = measure("dqn", reality_check=True, steps=16, seeds=2, workers=2, progress=False)
    assert one.seed_means == two.seed_means and one.environments == two.environments
    assert one.seed_means[0] != one.seed_means[1]  # the seed matters


def test_training_writes_nothing_to_the_temp_dir(tmp_path, monkeypatch):
    """SB3's default logger makes an empty SB3-<date> folder in the temp dir for every model it builds."""
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert tempfile.gettempdir() == str(tmp_path)
    for kind in ("a2c", "dqn", "ppo"):
        run_battery(SB3Agent(kind, seed=0), 20, 0, [EnvSpec(E.IgnoreRewards), EnvSpec(E.DejaVu)])
    assert list(tmp_path.iterdir()) == []


def test_reflect_table_cli_runs_the_sb3_rows(capsys, tmp_path):
    from cli_run import run_cli

    code, out, err = run_cli(capsys, "reflect", "table", "--agent", "a2c", "--steps", "6", "--seeds", "2",
                             "--out", str(tmp_path / "t"))
    assert code == 0, err
    assert "Made by: `bib reflect table --agent a2c --steps 6 --seeds 2`" in out
    assert "| A2C | 6 |" in out and "| A2C_RC | 6 |" in out
    assert (tmp_path / "t" / "table1.md").read_text().startswith("Made by: `bib reflect table --agent a2c")
