"""Incremental views of an agent: states of histories, memoised actions and history-prefix hashing.

An extended environment asks what the agent *would* do on rewritten histories. Calling the agent on
whole tuples makes a run quadratic (cubic under a reality check), so every built-in agent also
exposes a :class:`Policy`: an immutable *state* per history, advanced one symbol at a time. States
are persistent values, so keeping one is forking the agent at a counterfactual branch, and
memoisation is by a rolling hash of the history prefix (``(length, polynomial hash mod 2**61-1)``),
which also supports O(1) concatenation (DejaVu, BackwardConsciousness).

A history is the flat V1 tuple ``(r0, o0, a0, r1, o1, a1, ..., rn, on)``; a *prompt* ends with an
observation (the agent is asked to act), a *play* ends with an action (or is empty).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bib.errors import BibInputError

MOD = (1 << 61) - 1
BASE = 0x1F3D5B79A3C4E1
_MUL = 0x9E3779B97F4A7C15
_ADD = 0x632BE59BD9B4E019
_POW: list[int] = [1]

State = Any


class IllegalActionError(BibInputError):
    """An agent returned something that is not a legal action."""


def symbol_code(x: int) -> int:
    """Hash code of one history symbol (a reward, observation or action; integers)."""
    return (int(x) * _MUL + _ADD) % MOD


def power(n: int) -> int:
    """``BASE**n mod MOD`` from a growing table."""
    while len(_POW) <= n:
        _POW.append(_POW[-1] * BASE % MOD)
    return _POW[n]


def push(h: int, x: int) -> int:
    """Hash after appending symbol ``x`` to a history with hash ``h``."""
    return (h * BASE + (int(x) * _MUL + _ADD) % MOD) % MOD


def join(h_left: int, h_right: int, n_right: int) -> int:
    """Hash of the concatenation of two histories."""
    return (h_left * power(n_right) + h_right) % MOD


def memo_key(h: int, n: int) -> int:
    """One integer naming a history of length ``n`` and hash ``h``."""
    return h | (n << 61)


class Uniforms:
    """Uniform [0, 1) draws from an explicitly seeded numpy Generator, served from blocks."""

    def __init__(self, rng: np.random.Generator, block: int = 4096) -> None:
        self._rng = rng
        self._block = block
        self._buf: list[float] = []
        self._i = 0

    def __call__(self) -> float:
        i = self._i
        if i == len(self._buf):
            self._buf = self._rng.random(self._block).tolist()
            i = 0
        self._i = i + 1
        return self._buf[i]


class Policy:
    """An agent for one ``(num_actions, num_observations)``, advanced incrementally.

    Subclasses implement :meth:`empty`, :meth:`percept`, :meth:`record`, :meth:`act` and may
    override :meth:`concat` with an O(1) version.
    """

    num_actions: int
    num_observations: int
    #: True when the action never depends on the history (a reality check is then the identity).
    history_independent = False

    def empty(self) -> State:
        """State of the empty history."""
        raise NotImplementedError

    def percept(self, state: State, reward: int, obs: int) -> State:
        """State after appending the percept ``(reward, obs)`` to a play."""
        raise NotImplementedError

    def record(self, state: State, action: int) -> State:
        """State after appending ``action`` to a prompt."""
        raise NotImplementedError

    def act(self, state: State) -> int:
        """The (deterministic, memoised) action of the agent on a prompt state."""
        raise NotImplementedError

    def extend(self, state: State, symbols: Sequence[int]) -> State:
        """State after appending flat ``symbols`` (starting at a reward) to a play state."""
        reward = 0
        for i in range(len(symbols)):
            phase = i % 3
            if phase == 0:
                reward = symbols[i]
            elif phase == 1:
                state = self.percept(state, reward, symbols[i])
            else:
                state = self.record(state, symbols[i])
        return state

    def concat(self, left: State, symbols: Sequence[int], right: State) -> State:
        """State of ``left + symbols`` where ``right`` is this policy's state of ``symbols`` alone.

        ``left`` is a play state (its length is a multiple of 3). The default walks the symbols;
        hash-keyed policies join in O(1).
        """
        return self.extend(left, symbols)

    def walk(self, history: Sequence[int]) -> State:
        """State of a whole flat history, from the empty state."""
        return self.extend(self.empty(), history)


def check_counts(num_actions: int, num_observations: int) -> None:
    """Reject non-positive action or observation counts."""
    if int(num_actions) < 1 or int(num_observations) < 1:
        raise BibInputError(
            f"num_actions and num_observations must be >= 1, got {num_actions}, {num_observations}"
        )


def check_action(action: Any, num_actions: int, who: str) -> int:
    """Return ``action`` as an int, or raise :class:`IllegalActionError` naming the agent."""
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise IllegalActionError(f"agent {who!r} returned {action!r}, not an integer action")
    if not 0 <= int(action) < num_actions:
        raise IllegalActionError(f"agent {who!r} returned action {int(action)}, legal actions are 0..{num_actions - 1}")
    return int(action)
