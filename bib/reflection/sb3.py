"""Stable Baselines3 A2C / DQN / PPO as extended-environment agents (optional ``rl`` extra).

The agent is the paper's (Section 2.1, V1 ``SBL3_agents.py``): on a history of N percepts take the
largest power of two K <= N, train a *fresh* model (the SB3 defaults, seeded by the run seed) on an
environment that replays the first K percepts with the recorded actions forced, and answer with the
model's stochastic ``predict`` on the last observation, memoised by history. Settings as V1: A2C
``n_steps=K-1``; PPO ``n_steps=batch_size=K-1`` (action 0 below 2 transitions); DQN
``learning_starts=1``, trained ``(K-1) - (K-1) % 4`` steps (action 0 below 4).

What is computed differently (the same function at a different cost; docs/reflection.md):

* **One SB3 model per (kind, counts, options).** A fresh model of a given seed always starts from
  the same weights, so every training starts from that template's initial weights and settings.
* **The update runs in numpy** (``bib.reflection.sb3_train``): SB3's A2C / PPO / DQN formulas on a
  network that only ever sees ``num_observations`` one-hot inputs, evaluated once per update and
  gathered per sample (the same loss and gradient; only float summation order differs). With every
  action forced and the policy fixed during an on-policy rollout, the rollout is one batch.
* **DQN: training is resumed along the prefix trie.** DQN learns online: with forced actions, the
  weights, optimizer state and minibatch stream after t steps depend on the first t transitions
  only, so the model of a 2K-prefix is its K-prefix's model trained on the next transitions. A
  checkpoint per trained prefix (a bounded cache; evicting one only costs time) makes training
  along any history built by appending cost O(1) per percept, identical to training from scratch.
  Minibatch indices come from a numpy Generator seeded by the run seed.
* **predict is a table.** The answer distribution of a trained model over the observations is
  computed once per model (A2C/PPO: the categorical policy; DQN: epsilon-greedy with the final
  epsilon 0.05 around the greedy action); the memoised answer is a draw from it with the agent's
  own seeded Generator.

Histories are persistent states (rolling hash for the memo, a rope of the symbols, the key of every
power-of-two prefix), so concatenations (DejaVu, BackwardConsciousness) cost O(1) to form; a
history whose power-of-two prefix no earlier query has (those two environments rewrite the start
of the history at every step) still needs its own model: one batched update for A2C/PPO, K/4
sequential gradient steps for DQN (from the deepest cached ancestor).

Models are given a logger that writes nothing, so nothing is written outside ``--out``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bib.errors import BibInputError
from bib.reflection.agents import Agent
from bib.reflection.policy import Policy, State, Uniforms
from bib.reflection.prefix import Checkpoints, PowerOfTwoPolicy

KINDS = ("a2c", "dqn", "ppo")

#: DQN checkpoints kept for resuming (a least-recently-used cache; eviction costs only time).
CHECKPOINTS = 1024


def _import_sb3() -> Any:
    try:
        import gymnasium  # noqa: F401
        import stable_baselines3
    except ImportError:
        raise BibInputError(
            "--agent a2c/dqn/ppo needs the rl extra: pip install 'bib-voe[rl]' (stable-baselines3, gymnasium)"
        ) from None
    return stable_baselines3


def _spaces_env(num_actions: int, num_observations: int) -> Any:
    """A gymnasium env with the right spaces, only used to build the template model."""
    import gymnasium as gym

    class Spaces(gym.Env):
        def __init__(self) -> None:
            self.observation_space = gym.spaces.Discrete(num_observations)
            self.action_space = gym.spaces.Discrete(num_actions)

        def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[int, dict]:
            super().reset(seed=seed)
            return 0, {}

        def step(self, action: Any) -> tuple[int, float, bool, bool, dict]:
            return 0, 0.0, False, True, {}

    return Spaces()


class _SB3Policy(PowerOfTwoPolicy):
    """Incremental view of one SB3 agent for one ``(num_actions, num_observations, options)``."""

    def __init__(self, owner: SB3Agent, num_actions: int, num_observations: int, options: dict[str, Any]) -> None:
        super().__init__(num_actions, num_observations)
        self.owner = owner
        self.options = options
        self.checkpoints = Checkpoints(CHECKPOINTS)
        self._template: Any = None

    def answer(self, model: Any, state: State) -> int:
        return 0 if model is None else _draw(model[state[5]], self.owner.uniforms())

    # -- training -------------------------------------------------------------------------------
    def template(self) -> Any:
        if self._template is None:
            self._template = _Template(self.owner.kind, self.owner.seed, self.num_actions, self.num_observations, self.options)
        return self._template

    def train(self, symbols: list[int], k: int, key: bytes, ancestors: tuple) -> list | None:
        t = self.template()
        rewards = symbols[0::3]
        observations = symbols[1::3]
        actions = symbols[2::3]
        if self.owner.kind == "dqn":
            steps = (k - 1) - (k - 1) % 4
            if steps < 4:
                return None
            checkpoint, table = t.train_dqn(observations, actions, rewards, steps, self.checkpoints.latest(ancestors))
            self.checkpoints.keep(key, checkpoint, ancestors)
        else:
            transitions = k - 1
            if transitions < (2 if self.owner.kind == "ppo" else 1):
                return None
            table = t.train_on_policy(observations, actions, rewards, transitions)
        self.owner.trainings += 1
        return table


def _draw(row: list[float], u: float) -> int:
    total = 0.0
    for a, p in enumerate(row):
        total += p
        if u < total:
            return a
    return len(row) - 1


class _Template:
    """The SB3 model of one (kind, seed, counts, options): its initial weights and settings start every training."""

    def __init__(self, kind: str, seed: int, num_actions: int, num_observations: int, options: dict[str, Any]) -> None:
        sb3 = _import_sb3()
        from stable_baselines3.common.logger import Logger

        from bib.reflection.sb3_train import DQNTrainer, Flat

        self.kind = kind
        kwargs: dict[str, Any] = {"seed": seed, "device": "cpu", "verbose": 0}
        if "learning_rate" in options:
            kwargs["learning_rate"] = options["learning_rate"]
        env = _spaces_env(num_actions, num_observations)
        if kind == "dqn":
            model = sb3.DQN("MlpPolicy", env, learning_starts=1, buffer_size=1, **kwargs)
        elif kind == "ppo":
            model = sb3.PPO("MlpPolicy", env, n_steps=2, batch_size=2, **kwargs)
        else:
            model = sb3.A2C("MlpPolicy", env, n_steps=1, **kwargs)
        model.set_logger(Logger(None, []))  # SB3's default logger makes a folder in the temp dir
        self.model = model
        self.dqn = DQNTrainer(model, seed) if kind == "dqn" else None
        self.initial = None if kind == "dqn" else Flat(model.policy)

    def train_on_policy(self, observations: list[int], actions: list[int], rewards: list[int], transitions: int) -> list:
        """A2C / PPO trained on the first ``transitions`` forced steps; the action probabilities per observation."""
        from bib.reflection.sb3_train import train_actor_critic

        return train_actor_critic(
            self.model,
            np.asarray(observations[: transitions + 1], dtype=np.int64),
            np.asarray(actions[:transitions], dtype=np.int64),
            np.asarray(rewards[1 : transitions + 1], dtype=np.float32),
            ppo=self.kind == "ppo",
            initial=self.initial,
        )

    def train_dqn(
        self, observations: list[int], actions: list[int], rewards: list[int], steps: int, start: tuple | None
    ) -> tuple[tuple, list]:
        """DQN trained ``steps`` steps of the replay, resumed from ``start`` (a checkpoint) if given."""
        assert self.dqn is not None
        state = self.dqn.fresh() if start is None else start
        state = self.dqn.train(
            state,
            np.asarray(observations[: steps + 1], dtype=np.int64),
            np.asarray(actions[:steps], dtype=np.int64),
            np.asarray(rewards[1 : steps + 1], dtype=np.float32),
            steps,
        )
        return state, self.dqn.table(state)


class SB3Agent(Agent):
    """An SB3 algorithm (``a2c``, ``dqn`` or ``ppo``) trained by the power-of-two schedule.

    Args:
        kind: ``a2c``, ``dqn`` or ``ppo``.
        seed: the models' seed (initial weights, DQN minibatches) and the answers' draws.

    Raises:
        BibInputError: for an unknown kind or when stable-baselines3 is not installed.
    """

    def __init__(self, kind: str, seed: int = 0) -> None:
        if kind not in KINDS:
            raise BibInputError(f"unknown SB3 agent {kind!r}; choose from {', '.join(KINDS)}")
        _import_sb3()
        super().__init__()
        self.name = kind
        self.kind = kind
        self.seed = int(seed)
        self.uniforms = Uniforms(np.random.default_rng([self.seed, 0x5B3]))
        self.trainings = 0

    def _make_policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        unknown = set(options) - {"learning_rate"}
        if unknown:
            raise TypeError(f"{self.kind} got unexpected keyword argument(s) {', '.join(sorted(unknown))}")
        return _SB3Policy(self, num_actions, num_observations, options)
