"""Stable Baselines3 A2C / DQN / PPO as extended-environment agents (optional ``rl`` extra).

The power-of-two trick of Section 2.1: on a history of N percepts, take the largest power of two
K <= N, train a *fresh* model on an environment that replays the first K percepts with the
recorded actions forced, cache it by that prefix, and answer ``predict(last observation)``. So
one model serves every history that shares the K-percept prefix (no retraining until percept 2K),
and the answer is memoised by history, which makes the agent deterministic.

SB3 seeds torch/numpy through its own ``set_random_seed`` (a global RNG that SB3 owns); the
model seed is the run seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bib.errors import BibInputError
from bib.reflection.agents import FunctionAgent

KINDS = ("a2c", "dqn", "ppo")


def _import_sb3() -> Any:
    try:
        import gymnasium  # noqa: F401
        import stable_baselines3
    except ImportError:
        raise BibInputError(
            "--agent a2c/dqn/ppo needs the rl extra: pip install 'bib-voe[rl]' (stable-baselines3, gymnasium)"
        ) from None
    return stable_baselines3


def _replay_env(prefix: tuple[int, ...], num_actions: int, num_observations: int) -> Any:
    import gymnasium as gym

    class Replay(gym.Env):
        """Replays ``prefix``: observation o_i, forced action a_i, then reward r_{i+1}, o_{i+1}."""

        def __init__(self) -> None:
            self.rewards = prefix[0::3]
            self.observations = prefix[1::3]
            self.actions = prefix[2::3]
            self.observation_space = gym.spaces.Discrete(num_observations)
            self.action_space = gym.spaces.Discrete(num_actions)
            self.i = 0

        def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[int, dict]:
            super().reset(seed=seed)
            self.i = 0
            return int(self.observations[0]), {}

        def forced(self) -> int:
            return int(self.actions[self.i])

        def step(self, action: Any) -> tuple[int, float, bool, bool, dict]:
            self.i += 1
            done = self.i >= len(self.actions)
            return int(self.observations[self.i]), float(self.rewards[self.i]), False, done, {}

    return Replay()


class SB3Agent(FunctionAgent):
    """An SB3 algorithm (``a2c``, ``dqn`` or ``ppo``) trained by the power-of-two schedule.

    Args:
        kind: ``a2c``, ``dqn`` or ``ppo``.
        seed: the models' seed.

    Raises:
        BibInputError: for an unknown kind or when stable-baselines3 is not installed.
    """

    def __init__(self, kind: str, seed: int = 0) -> None:
        if kind not in KINDS:
            raise BibInputError(f"unknown SB3 agent {kind!r}; choose from {', '.join(KINDS)}")
        _import_sb3()
        super().__init__(self._answer, name=kind, memoize=True)
        self.kind = kind
        self.seed = int(seed)
        self.models: dict[tuple, Any] = {}
        self.trainings = 0

    def _answer(self, history: tuple[int, ...], num_actions: int, num_observations: int, **options: Any) -> int:
        unknown = set(options) - {"learning_rate"}
        if unknown:
            raise TypeError(f"{self.kind} got unexpected keyword argument(s) {', '.join(sorted(unknown))}")
        percepts = (len(history) + 1) // 3
        if percepts < 1:
            return 0
        k = 1 << (percepts.bit_length() - 1)
        model = self._model(history[: 3 * k - 1], num_actions, num_observations, options)
        if model is None:
            return 0
        action, _ = model.predict(np.int64(history[-1]), deterministic=False)
        return int(action)

    def _model(self, prefix: tuple[int, ...], num_actions: int, num_observations: int, options: dict) -> Any:
        key = (prefix, num_actions, num_observations, tuple(sorted(options.items())))
        if key not in self.models:
            self.models[key] = self._train(prefix, num_actions, num_observations, options)
        return self.models[key]

    def _train(self, prefix: tuple[int, ...], num_actions: int, num_observations: int, options: dict) -> Any:
        sb3 = _import_sb3()
        import torch

        transitions = (len(prefix) + 1) // 3 - 1
        kwargs: dict[str, Any] = {"seed": self.seed, "device": "cpu", "verbose": 0}
        if "learning_rate" in options:
            kwargs["learning_rate"] = options["learning_rate"]
        env = _replay_env(prefix, num_actions, num_observations)
        if self.kind == "dqn":
            steps = transitions - transitions % 4
            if steps < 4:
                return None
            model = sb3.DQN("MlpPolicy", env, learning_starts=1, **kwargs)

            def sample(learning_starts: int, action_noise: Any = None, n_envs: int = 1) -> tuple:
                a = np.array([env.forced()] * n_envs)
                return a, a

            model._sample_action = sample
        else:
            steps = transitions
            if steps < (2 if self.kind == "ppo" else 1):
                return None
            if self.kind == "ppo":
                model = sb3.PPO("MlpPolicy", env, n_steps=steps, batch_size=steps, **kwargs)
            else:
                model = sb3.A2C("MlpPolicy", env, n_steps=steps, **kwargs)
            policy = model.policy
            original = policy.forward

            def forward(obs: Any, deterministic: bool = False) -> tuple:
                original(obs, deterministic)
                actions = torch.full((obs.shape[0],), env.forced(), dtype=torch.long)
                values, log_prob, _ = policy.evaluate_actions(obs, actions)
                return actions, values, log_prob

            policy.forward = forward
        model.learn(total_timesteps=steps)
        self.trainings += 1
        return model
