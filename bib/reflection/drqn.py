"""A recurrent DQN (GRU) as an extended-environment agent: the agent of the paper's Section 3.2.

The paper reports that "a recurrent DQN agent (implemented in our library as custom_DQN.py)" earns
rewards converging towards the optimal +0.5 per turn on TemptingButton, for many hyperparameters.
That file lived in the library's first era (``src/agents/custom_DQN.py``, later removed as "too
poorly understood"); its experiment (``src/experiments/TemptingButtonExperiment.py``) ran 4,000 steps
at the defaults and with the learning rate at 0.05, 0.1, 0.01, 0.001 and the lookback at 1, 3, 5.
This agent follows that file's design and defaults (our code; the original is read in the public
repository's history, shared/reference/extended_environments.md):

* **Input**: the history as a sequence of scalars ``o_0, a_0, r_1, o_1, a_1, r_2, ..., o_n`` (the
  first reward dropped), its last ``3 * lookback + 1`` entries, zero-padded on the left; each entry
  is one input of a 2-layer GRU (``hidden`` 5, dropout 0.2 between the layers while training);
  the Q-values are a linear head on the ReLU of the last step's output.
* **Conversion** (Section 2.1): a history of N percepts is answered by a network trained **from
  scratch** on its first K percepts, K the largest power of two <= N, greedily (argmax Q, no
  exploration: the agent is a deterministic function of the history).
* **Training** is DQN replayed over the prefix's K - 1 transitions in order: after each transition
  joins the replay memory (``capacity`` 10,000), once it holds ``batch`` (128) transitions, one SGD
  step (learning rate 0.1) on the Huber loss of a minibatch drawn without replacement, target
  ``r + gamma * max Q_target`` (``gamma`` 0.999), every gradient entry clamped to [-1, 1]; the target
  network is copied from the network after every ``target_every``-th (100) transition.

Why it converges to +0.5 on TemptingButton (docs/reflection.md): the greedy agent never explores,
so a briefly trained network values the action it took by the rewards that action earned, while the
action it never took keeps its untrained value, and the raw scalar input barely separates "button"
from "no button": a pusher (-0.5 a turn) stops pushing, a non-pusher (+0.5) stays. A network trained
longer (1,024 or 2,048 percepts) can learn the button and take its free reward again (-0.5): in 2 of
3 seeds at the defaults.

Seeding: the weights and the dropout masks of the network for a prefix come from torch's generator
seeded by (run seed, the prefix), the minibatches from a numpy Generator seeded the same way, so one
seed gives one result whatever order the prefixes are trained in. torch is needed (the ``rl`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bib.errors import BibInputError
from bib.reflection.agents import Agent
from bib.reflection.policy import Policy, State, Uniforms
from bib.reflection.prefix import PowerOfTwoPolicy, flatten


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise BibInputError("--agent recurrent-dqn needs torch: pip install 'bib-voe[rl]'") from None
    return torch


def windows(sequence: np.ndarray, ends: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` entries of ``sequence`` ending at each index of ``ends`` (zeros before its start)."""
    padded = np.concatenate([np.zeros(width, dtype=np.float32), np.asarray(sequence, dtype=np.float32)])
    return padded[ends[:, None] + 1 + np.arange(width)[None, :]]


class _Network:
    """GRU (scalar inputs) -> ReLU of the last step -> linear Q-values."""

    def __init__(self, torch: Any, settings: Settings, actions: int) -> None:
        self.gru = torch.nn.GRU(1, settings.hidden, settings.layers, batch_first=True,
                                dropout=settings.dropout if settings.layers > 1 else 0.0)
        self.head = torch.nn.Linear(settings.hidden, actions)

    def parameters(self) -> list:
        return list(self.gru.parameters()) + list(self.head.parameters())

    def train(self, mode: bool) -> None:
        self.gru.train(mode)
        self.head.train(mode)

    def copy_from(self, other: _Network) -> None:
        """Take ``other``'s weights (the target network's update)."""
        torch = _torch()
        with torch.no_grad():
            for p, v in zip(self.parameters(), other.parameters()):
                p.copy_(v)

    def q(self, x: Any) -> Any:
        """Q-values of a batch of windows ``x`` (batch, width)."""
        out, _ = self.gru(x[:, :, None])
        return self.head(out[:, -1].relu())


class _DRQNPolicy(PowerOfTwoPolicy):
    def __init__(self, owner: RecurrentDQN, num_actions: int, num_observations: int) -> None:
        super().__init__(num_actions, num_observations)
        self.owner = owner
        torch = _torch()
        torch.set_num_threads(1)  # a tiny GRU: more threads only contend (and results stay thread-count free)
        self.torch = torch
        self.width = 3 * owner.settings.lookback + 1

    def train(self, symbols: list[int], k: int, key: bytes, ancestors: tuple) -> Any:
        torch, owner = self.torch, self.owner
        o = owner.settings
        seed = [owner.seed, int.from_bytes(key[:8], "little")]
        rng = np.random.default_rng(seed + [1])
        with torch.random.fork_rng():  # the prefix's weights and dropout masks, from its own seed
            torch.manual_seed(int(np.random.default_rng(seed).integers(2**62)))
            net = _Network(torch, o, self.num_actions)
            target = _Network(torch, o, self.num_actions)
            target.copy_from(net)
            target.train(False)
            net.train(True)
            optimizer = torch.optim.SGD(net.parameters(), lr=o.learning_rate)
            seq = np.asarray(symbols[1:], dtype=np.float32)  # o_0, a_0, r_1, ..., o_{k-1}
            transitions = k - 1
            states = torch.from_numpy(windows(seq, 3 * np.arange(k), self.width))
            actions = torch.as_tensor(seq[1 : 3 * transitions : 3], dtype=torch.long)
            rewards = torch.as_tensor(seq[2 : 3 * transitions : 3])
            for t in range(transitions):  # transition t (state t -> t + 1) joins the memory
                size = min(t + 1, o.capacity)
                if size >= o.batch:
                    idx = torch.from_numpy(t + 1 - size + rng.choice(size, o.batch, replace=False))
                    with torch.no_grad():
                        goal = rewards[idx] + o.gamma * target.q(states[idx + 1]).max(dim=1).values
                    q = net.q(states[idx]).gather(1, actions[idx, None])[:, 0]
                    loss = torch.nn.functional.smooth_l1_loss(q, goal)
                    optimizer.zero_grad()
                    loss.backward()
                    for p in net.parameters():
                        p.grad.clamp_(-o.clip, o.clip)
                    optimizer.step()
                    owner.gradient_steps += 1
                if t % o.target_every == 0:
                    target.copy_from(net)
        net.train(False)
        owner.trainings += 1
        return net

    def answer(self, model: Any, state: State) -> int:
        o = self.owner
        if o.settings.epsilon and o.uniforms() < o.settings.epsilon:
            return min(int(o.uniforms() * self.num_actions), self.num_actions - 1)
        n = state[2]
        tail = flatten(state[4], self.width)[-min(self.width, 3 * n - 2) :]  # never the first reward
        x = windows(np.asarray(tail, dtype=np.float32), np.array([len(tail) - 1]), self.width)
        with self.torch.no_grad():
            return int(self.torch.argmax(model.q(self.torch.from_numpy(x))[0]))


@dataclass(frozen=True)
class Settings:
    """custom_DQN.py's defaults (see the module docstring)."""

    lookback: int = 10  #: percepts the GRU reads (``3 * lookback + 1`` scalars)
    hidden: int = 5  #: GRU units per layer
    layers: int = 2
    dropout: float = 0.2  #: between the GRU's layers, while training
    learning_rate: float = 0.1  #: SGD
    gamma: float = 0.999
    batch: int = 128
    target_every: int = 100  #: transitions between copies of the target network
    capacity: int = 10_000  #: replay memory
    clip: float = 1.0  #: every gradient entry clamped to [-clip, clip]
    epsilon: float = 0.0  #: probability of a uniform answer (0: greedy, as the original)

    def __post_init__(self) -> None:
        if min(self.lookback, self.hidden, self.layers, self.batch, self.target_every) < 1 or self.capacity < self.batch:
            raise BibInputError("recurrent-dqn: lookback, hidden, layers, batch, target_every >= 1 and capacity >= batch")
        if not (0 <= self.dropout < 1 and 0 <= self.epsilon <= 1 and self.learning_rate > 0 and self.clip > 0
                and 0 <= self.gamma <= 1):
            raise BibInputError("recurrent-dqn: 0 <= dropout < 1, 0 <= epsilon <= 1, 0 <= gamma <= 1, "
                                "learning_rate > 0 and clip > 0")


class RecurrentDQN(Agent):
    """The recurrent DQN of Section 3.2 (custom_DQN.py's design and defaults; see the module docstring).

    Args:
        seed: weights, dropout masks and minibatches (and epsilon's draws, if any).
        **settings: fields of :class:`Settings`.
    """

    name = "recurrent-dqn"

    def __init__(self, seed: int = 0, **settings: Any) -> None:
        super().__init__()
        _torch()
        self.seed = int(seed)
        self.settings = Settings(**settings)
        self.uniforms = Uniforms(np.random.default_rng([self.seed, 0xD2]))
        self.trainings = 0
        self.gradient_steps = 0

    def _make_policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        if options:
            raise TypeError(f"recurrent-dqn got unexpected keyword argument(s) {', '.join(sorted(options))}")
        return _DRQNPolicy(self, num_actions, num_observations)
