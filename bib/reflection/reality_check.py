"""The reality-check transformation RC(agent) of Definition 8, computed incrementally.

``RC(T)(h)`` is ``T(h)`` when every action recorded in ``h`` is the one ``T`` takes on the prefix
before it, and otherwise ``T`` on the first percept alone (``T(h[:2])``). The policy state carries a
"consistent so far" flag next to the inner agent's state, so a reality check costs O(1) per step on
any history that is built by appending; on a rewritten history it walks only until the first
mismatch. RC takes no options (V1's wrapper accepted no keyword arguments).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bib.reflection.agents import Agent
from bib.reflection.policy import Policy, State

# state = (inner state or None once frozen, consistent so far, action on the first percept or None)


class _RCPolicy(Policy):
    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.num_actions = inner.num_actions
        self.num_observations = inner.num_observations
        self._empty = (inner.empty(), True, None)

    def empty(self) -> State:
        return self._empty

    def percept(self, state: State, reward: int, obs: int) -> State:
        inner, ok, first = state
        if not ok:
            return state
        inner = self.inner.percept(inner, reward, obs)
        if first is None:
            first = self.inner.act(inner)
        return (inner, True, first)

    def record(self, state: State, action: int) -> State:
        inner, ok, first = state
        if not ok:
            return state
        if self.inner.act(inner) != action:
            return (None, False, first)
        return (self.inner.record(inner, action), True, first)

    def extend(self, state: State, symbols: Sequence[int]) -> State:
        reward = 0
        for i in range(len(symbols)):
            if not state[1]:
                return state
            phase = i % 3
            if phase == 0:
                reward = symbols[i]
            elif phase == 1:
                state = self.percept(state, reward, symbols[i])
            else:
                state = self.record(state, symbols[i])
        return state

    def act(self, state: State) -> int:
        inner, ok, first = state
        if ok:
            return self.inner.act(inner)
        return first


class RealityCheck(Agent):
    """``RC(agent)``: share the inner agent's memo (the same instance), add the consistency check.

    Args:
        agent: the agent to wrap.
    """

    def __init__(self, agent: Agent) -> None:
        super().__init__()
        self.agent = agent
        self.name = f"RC({agent.name})"

    def _make_policy(self, num_actions: int, num_observations: int, **options: Any) -> Policy:
        if options:
            raise TypeError(f"{self.name} got unexpected keyword argument(s) {', '.join(sorted(options))}")
        inner = self.agent.policy(num_actions, num_observations)
        if inner.history_independent:
            return inner  # RC(T) == T when T ignores the history
        return _RCPolicy(inner)
