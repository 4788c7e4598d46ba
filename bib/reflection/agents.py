"""Extended-environment agents: the protocol, RandomAgent, ConstantAgent, NaiveLearner, FunctionAgent.

An agent answers ``act(history, num_actions, num_observations) -> action`` for a flat history
``(r0, o0, a0, ..., rn, on)`` and must be deterministic on the same history (random agents are
memoised by history). One agent instance is one run's memory: its memo is shared by every
environment it meets and by its reality check (the scope the published Table 1 used).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bib.reflection.policy import (
    Policy,
    State,
    Uniforms,
    check_action,
    check_counts,
    join,
    memo_key,
    push,
)

#: NaiveLearner's exploration probability.
EXPLORATION = 0.15


class Agent:
    """Base class: an agent is a family of :class:`Policy` views, one per action/observation count.

    Subclasses implement :meth:`_make_policy`; options (e.g. ``learning_rate``) an agent does not
    accept raise TypeError, as calling the V1 agent function with an unknown keyword did.
    """

    name = "agent"

    def __init__(self) -> None:
        self._policies: dict[tuple[int, int, tuple], Policy] = {}

    def policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        """The incremental view for these counts (cached, so memos are shared)."""
        check_counts(num_actions, num_observations)
        key = (int(num_actions), int(num_observations), tuple(sorted(options.items())))
        found = self._policies.get(key)
        if found is None:
            found = self._policies[key] = self._make_policy(int(num_actions), int(num_observations), **options)
        return found

    def _make_policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        raise NotImplementedError

    def act(self, history: Sequence[int], num_actions: int, num_observations: int, **options: Any) -> int:
        """The agent's action on a flat prompt ``(r0, o0, a0, ..., rn, on)``."""
        p = self.policy(num_actions, num_observations, **options)
        return p.act(p.walk(tuple(history)))


def _no_options(name: str, options: dict[str, Any]) -> None:
    if options:
        raise TypeError(f"{name} got unexpected keyword argument(s) {', '.join(sorted(options))}")


class _HashedPolicy(Policy):
    """State ``(hash, length)``; the action is a memoised draw (RandomAgent)."""

    def __init__(self, num_actions: int, num_observations: int, uniforms: Uniforms) -> None:
        self.num_actions = num_actions
        self.num_observations = num_observations
        self.memo: dict[int, int] = {}
        self.uniforms = uniforms

    def empty(self) -> State:
        return (0, 0)

    def percept(self, state: State, reward: int, obs: int) -> State:
        return (push(push(state[0], reward), obs), state[1] + 2)

    def record(self, state: State, action: int) -> State:
        return (push(state[0], action), state[1] + 1)

    def concat(self, left: State, symbols: Sequence[int], right: State) -> State:
        return (join(left[0], right[0], right[1]), left[1] + right[1])

    def act(self, state: State) -> int:
        key = memo_key(state[0], state[1])
        a = self.memo.get(key)
        if a is None:
            a = self.memo[key] = int(self.uniforms() * self.num_actions)
        return a


class RandomAgent(Agent):
    """Uniformly random action, memoised by history (V1 ``random_agent``).

    Args:
        seed: seeds the agent's own ``numpy.random.Generator``.
    """

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.uniforms = Uniforms(np.random.default_rng([int(seed), 0x5EED]))

    def _make_policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        _no_options("RandomAgent", options)
        return _HashedPolicy(num_actions, num_observations, self.uniforms)


class _ConstantPolicy(Policy):
    history_independent = True

    def __init__(self, num_actions: int, num_observations: int, action: int) -> None:
        self.num_actions = num_actions
        self.num_observations = num_observations
        self.action = action

    def empty(self) -> State:
        return None

    def percept(self, state: State, reward: int, obs: int) -> State:
        return None

    def record(self, state: State, action: int) -> State:
        return None

    def extend(self, state: State, symbols: Sequence[int]) -> State:
        return None

    def act(self, state: State) -> int:
        return self.action


class ConstantAgent(Agent):
    """Always action 0 (V1 ``constant_agent``)."""

    name = "constant"

    def __init__(self, seed: int = 0) -> None:
        super().__init__()

    def _make_policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        _no_options("ConstantAgent", options)
        return _ConstantPolicy(num_actions, num_observations, 0)


class _NaivePolicy(_HashedPolicy):
    """State ``(hash, length, first reward, sums, counts, last action)``.

    ``sums[a]`` / ``counts[a]`` total the rewards that immediately followed action ``a`` inside the
    history; the first reward follows no action and is not counted. Observations are ignored.
    """

    def empty(self) -> State:
        zeros = (0,) * self.num_actions
        return (0, 0, None, zeros, zeros, None)

    def percept(self, state: State, reward: int, obs: int) -> State:
        h, n, head, sums, counts, tail = state
        h = push(push(h, reward), obs)
        if n == 0:
            return (h, 2, reward, sums, counts, None)
        sums = sums[:tail] + (sums[tail] + reward,) + sums[tail + 1 :]
        counts = counts[:tail] + (counts[tail] + 1,) + counts[tail + 1 :]
        return (h, n + 2, head, sums, counts, None)

    def record(self, state: State, action: int) -> State:
        h, n, head, sums, counts, _ = state
        return (push(h, action), n + 1, head, sums, counts, int(action))

    def concat(self, left: State, symbols: Sequence[int], right: State) -> State:
        if left[1] == 0:
            return right
        if right[1] == 0:
            return left
        h = join(left[0], right[0], right[1])
        sums = [x + y for x, y in zip(left[3], right[3])]
        counts = [x + y for x, y in zip(left[4], right[4])]
        sums[left[5]] += right[2]
        counts[left[5]] += 1
        return (h, left[1] + right[1], left[2], tuple(sums), tuple(counts), right[5])

    def act(self, state: State) -> int:
        key = memo_key(state[0], state[1])
        a = self.memo.get(key)
        if a is None:
            a = self.memo[key] = self._choose(state[3], state[4])
        return a

    def _choose(self, sums: tuple, counts: tuple) -> int:
        u = self.uniforms
        if u() < EXPLORATION:
            return int(u() * self.num_actions)
        best, best_value = 0, -float("inf")
        for a in range(self.num_actions):
            value = float(sums[a]) / (1 + counts[a])
            if value > best_value:
                best, best_value = a, value
        return best


class NaiveLearner(Agent):
    """V1 NaiveLearner: with probability 0.15 a random action, else the best average immediate reward.

    The average of action ``a`` is ``sum(rewards right after a) / (1 + count(a))``, ties go to the
    lowest action, observations are ignored, and the answer is memoised by history.
    """

    name = "naive-learner"

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.uniforms = Uniforms(np.random.default_rng([int(seed), 0x5EED]))

    def _make_policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        _no_options("NaiveLearner", options)
        return _NaivePolicy(num_actions, num_observations, self.uniforms)


class _FunctionPolicy(Policy):
    """State = the history tuple itself; O(length) per step, for arbitrary user functions."""

    def __init__(self, owner: FunctionAgent, num_actions: int, num_observations: int, options: dict[str, Any]) -> None:
        self.owner = owner
        self.num_actions = num_actions
        self.num_observations = num_observations
        self.options = options
        self.memo: dict[tuple, int] | None = {} if owner.memoize else None

    def empty(self) -> State:
        return ()

    def percept(self, state: State, reward: int, obs: int) -> State:
        return state + (reward, obs)

    def record(self, state: State, action: int) -> State:
        return state + (action,)

    def extend(self, state: State, symbols: Sequence[int]) -> State:
        return state + tuple(symbols)

    def act(self, state: State) -> int:
        if self.memo is not None and state in self.memo:
            return self.memo[state]
        raw = self.owner.fn(state, self.num_actions, self.num_observations, **self.options)
        action = check_action(raw, self.num_actions, self.owner.name)
        if self.memo is not None:
            self.memo[state] = action
        return action


class FunctionAgent(Agent):
    """Wrap a V1-style function ``fn(history, num_actions, num_observations, **options) -> action``.

    Args:
        fn: the agent function; it is called on whole history tuples.
        name: used in error messages and reports.
        memoize: memoise by history (V1 did for every stochastic agent); turn off to let the
            determinism inspectors see a nondeterministic function.
    """

    def __init__(self, fn: Callable[..., int], name: str = "function", memoize: bool = True) -> None:
        super().__init__()
        self.fn = fn
        self.name = name
        self.memoize = memoize

    def _make_policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        return _FunctionPolicy(self, num_actions, num_observations, options)
