"""A recurrent DQN (GRU) as an extended-environment agent: the agent of the paper's Section 3.2.

The paper reports that "a recurrent DQN agent (implemented in our library as custom_DQN.py)" earns
rewards converging towards the optimal +0.5 per turn on TemptingButton, for many hyperparameters.
That file (E0 era of the library, removed as "too poorly understood") was a GRU DQN over a lookback
window of the history that also used the power-of-two trick of Section 2.1; its experiment ran
4,000 steps and varied the learning rate and the lookback. The code is not available here, so this
is the closest agent we can build from that description (no maintained recurrent DQN exists in
SB3 or sb3-contrib: sb3-contrib's recurrent algorithm is RecurrentPPO):

* the input of percept i is ``(r_i, one-hot o_i, one-hot a_{i-1})`` (zeros before the first
  action); the Q-values of a history are a linear head on the last GRU state over its last
  ``lookback`` percepts (zero-padded before the first);
* the agent answers a history of N percepts with a model trained on its first K percepts, K the
  largest power of two <= N (Section 2.1), epsilon-greedy (``epsilon``) with memoised draws;
* training is DQN on the forced replay of the prefix: one gradient step (Adam, Huber loss, batch
  of ``batch`` random transitions, discount ``gamma``) per transition once ``batch`` transitions
  exist, a target network copied every ``target_every`` gradient steps. Training is online, so the
  model of a 2K-prefix resumes its K-prefix's model (the SB3 DQN agent's prefix tree).

Hyperparameters are ours (the paper had "no way of canonically choosing" them); torch is needed
(the ``rl`` extra). Weights come from a torch Generator seeded by the run seed, minibatches from a
numpy Generator, so one seed gives one result.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from bib.errors import BibInputError
from bib.reflection.agents import Agent
from bib.reflection.policy import Policy, State, Uniforms
from bib.reflection.prefix import Checkpoints, PowerOfTwoPolicy, flatten

#: Checkpoints kept for resuming (least recently used evicted; eviction costs only time).
CHECKPOINTS = 256


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise BibInputError("--agent recurrent-dqn needs torch: pip install 'bib-voe[rl]'") from None
    return torch


def features(symbols: list[int], num_actions: int, num_observations: int) -> np.ndarray:
    """Rows ``(r_i, one-hot o_i, one-hot a_{i-1})`` for each percept of a flat history."""
    n = (len(symbols) + 1) // 3
    x = np.zeros((n, 1 + num_observations + num_actions), dtype=np.float32)
    x[:, 0] = symbols[0::3][:n]
    x[np.arange(n), 1 + np.asarray(symbols[1::3][:n], dtype=np.int64)] = 1.0
    if n > 1:
        x[np.arange(1, n), 1 + num_observations + np.asarray(symbols[2::3][: n - 1], dtype=np.int64)] = 1.0
    return x


class _Model:
    """GRU + linear head; ``q(windows)`` for a batch of (lookback, features) windows."""

    def __init__(self, torch: Any, inputs: int, hidden: int, actions: int, seed: int) -> None:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.gru = torch.nn.GRU(inputs, hidden, batch_first=True)
            self.head = torch.nn.Linear(hidden, actions)
        self.torch = torch

    def parameters(self) -> list:
        return list(self.gru.parameters()) + list(self.head.parameters())

    def q(self, windows: Any) -> Any:
        _, h = self.gru(windows)
        return self.head(h[-1])


class _DRQNPolicy(PowerOfTwoPolicy):
    def __init__(self, owner: RecurrentDQN, num_actions: int, num_observations: int) -> None:
        super().__init__(num_actions, num_observations)
        self.owner = owner
        torch = _torch()
        torch.set_num_threads(1)  # a tiny GRU: more threads only contend (and results stay thread-count free)
        self.torch = torch
        inputs = 1 + num_observations + num_actions
        self.model = _Model(torch, inputs, owner.hidden, num_actions, owner.seed)
        self.target = _Model(torch, inputs, owner.hidden, num_actions, owner.seed)  # the same initial weights
        self.initial = [p.detach().clone() for p in self.model.parameters()]
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=owner.learning_rate)
        self.checkpoints = Checkpoints(CHECKPOINTS)

    # -- training -------------------------------------------------------------------------------
    def _windows(self, x: Any, ends: np.ndarray) -> Any:
        """Windows of ``lookback`` rows ending at each index of ``ends`` (x has ``lookback`` zero rows first)."""
        lb = self.owner.lookback
        idx = ends[:, None] + np.arange(1, lb + 1)[None, :]
        return x[self.torch.from_numpy(idx)]

    def _load(self, params: list, opt_state: dict | None, target: list) -> None:
        with self.torch.no_grad():
            for p, v in zip(self.model.parameters(), params):
                p.copy_(v)
            for p, v in zip(self.target.parameters(), target):
                p.copy_(v)
        if opt_state is None:
            self.optimizer.state.clear()
        else:
            self.optimizer.load_state_dict(opt_state)

    def train(self, symbols: list[int], k: int, key: bytes, ancestors: tuple) -> Any:
        torch, o = self.torch, self.owner
        transitions = k - 1
        start = self.checkpoints.latest(ancestors)
        if start is None:
            self._load(self.initial, None, self.initial)
            rng = np.random.default_rng([o.seed, 0xD2])
            done, updates = 0, 0
        else:
            params, opt_state, target, rng_state, done, updates = start
            self._load(params, opt_state, target)
            rng = np.random.default_rng()
            rng.bit_generator.state = rng_state
        x = torch.from_numpy(features(symbols, self.num_actions, self.num_observations))
        x = torch.cat([torch.zeros(o.lookback, x.shape[1]), x])
        actions = torch.tensor(symbols[2::3][:transitions], dtype=torch.long)
        rewards = torch.tensor(symbols[0::3][1 : transitions + 1], dtype=torch.float32)
        for t in range(done, transitions):  # transition t (percept t -> t + 1) has arrived
            if t + 1 < o.batch:
                continue
            idx = rng.integers(0, t + 1, size=o.batch)
            with torch.no_grad():
                nxt = self.target.q(self._windows(x, idx + 1)).max(dim=1).values
                goal = rewards[idx] + o.gamma * nxt
            q = self.model.q(self._windows(x, idx)).gather(1, actions[idx].reshape(-1, 1))[:, 0]
            loss = torch.nn.functional.smooth_l1_loss(q, goal)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            updates += 1
            o.gradient_steps += 1
            if updates % o.target_every == 0:
                with torch.no_grad():
                    for p, v in zip(self.target.parameters(), self.model.parameters()):
                        p.copy_(v)
        o.trainings += 1
        snapshot = (
            [p.detach().clone() for p in self.model.parameters()],
            copy.deepcopy(self.optimizer.state_dict()),
            [p.detach().clone() for p in self.target.parameters()],
            rng.bit_generator.state,
            transitions,
            updates,
        )
        self.checkpoints.keep(key, snapshot, ancestors)
        return _Frozen(snapshot[0])

    def answer(self, model: Any, state: State) -> int:
        o = self.owner
        u = o.uniforms()
        if u < o.epsilon:
            return min(int(o.uniforms() * self.num_actions), self.num_actions - 1)
        tail = flatten(state[4], 3 * o.lookback + 3)
        m = min(state[2], o.lookback)  # the window's percepts; one more gives its first a_{i-1}
        rows = features(tail[-(3 * min(state[2], m + 1) - 1) :], self.num_actions, self.num_observations)[-m:]
        return int(np.argmax(model.q(self, rows)))


class _Frozen:
    """Frozen weights of a trained prefix; answers by loading them into the policy's network."""

    def __init__(self, params: list) -> None:
        self.params = params

    def q(self, policy: _DRQNPolicy, rows: np.ndarray) -> np.ndarray:
        torch = policy.torch
        lb = policy.owner.lookback
        window = np.zeros((lb, rows.shape[1]), dtype=np.float32)
        window[lb - len(rows) :] = rows[-lb:]
        with torch.no_grad():
            for p, v in zip(policy.model.parameters(), self.params):
                p.copy_(v)
            return policy.model.q(torch.from_numpy(window)[None]).numpy()[0]


class RecurrentDQN(Agent):
    """The recurrent DQN of Section 3.2 (see the module docstring for what is ours).

    Args:
        seed: weights, minibatches and the answers' draws.
        lookback: percepts the GRU reads.
        hidden: GRU width.
        learning_rate, gamma, batch, target_every, epsilon: DQN settings.
    """

    name = "recurrent-dqn"

    def __init__(
        self,
        seed: int = 0,
        lookback: int = 1,
        hidden: int = 16,
        learning_rate: float = 1e-3,
        gamma: float = 0.99,
        batch: int = 16,
        target_every: int = 50,
        epsilon: float = 0.05,
    ) -> None:
        super().__init__()
        _torch()
        if lookback < 1 or hidden < 1 or batch < 1 or target_every < 1 or not 0 <= epsilon <= 1:
            raise BibInputError("recurrent-dqn: lookback, hidden, batch, target_every >= 1 and 0 <= epsilon <= 1")
        self.seed = int(seed)
        self.lookback, self.hidden, self.learning_rate = lookback, hidden, learning_rate
        self.gamma, self.batch, self.target_every, self.epsilon = gamma, batch, target_every, epsilon
        self.uniforms = Uniforms(np.random.default_rng([self.seed, 0xD2]))
        self.trainings = 0
        self.gradient_steps = 0

    def _make_policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        if options:
            raise TypeError(f"recurrent-dqn got unexpected keyword argument(s) {', '.join(sorted(options))}")
        return _DRQNPolicy(self, num_actions, num_observations)
