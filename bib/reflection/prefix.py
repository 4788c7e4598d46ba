"""Histories as persistent states for agents that train on their history's power-of-two prefix.

The conversion of Section 2.1 (the SB3 agents, the recurrent DQN) answers a history of N percepts
with a model trained on its first K percepts, K the largest power of two <= N. A state carries the
rolling hash of the history (the answer memo), the number of percepts, a key for every
power-of-two prefix (``None`` where a concatenation made it unknown: computed when asked), a rope of
the symbols (to materialise a prefix or a tail) and the last observation. Appending and
concatenating cost O(1); a prefix key costs O(K) once, when the history reaches K percepts.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from bib.reflection.policy import Policy, State, join, memo_key, push


class Checkpoints:
    """The training states of power-of-two prefixes, kept to resume training from (a least-recently-used
    cache of ``capacity`` entries; an evicted one costs only time: training starts further back)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[bytes, Any] = OrderedDict()

    def __getitem__(self, key: bytes) -> Any:
        return self._kept[key]

    def latest(self, ancestors: Sequence[bytes | None]) -> Any:
        """The state of the longest kept prefix among ``ancestors`` (shortest first), or None."""
        for ancestor in reversed(ancestors):
            if ancestor is not None and ancestor in self._kept:
                self._kept.move_to_end(ancestor)
                return self._kept[ancestor]
        return None

    def keep(self, key: bytes, state: Any, ancestors: Sequence[bytes | None]) -> None:
        """Keep ``state`` as prefix ``key``'s, if every ancestor is known (only histories built by appending
        are resumed later)."""
        if None in ancestors:
            return
        self._kept[key] = state
        if len(self._kept) > self.capacity:
            self._kept.popitem(last=False)


# state = (hash, length, percepts, keys of the 1-, 2-, 4-, ... percept prefixes, rope, last observation)


class _Cat:
    """Rope node: the symbols of ``left`` then those of ``right``."""

    __slots__ = ("left", "right")

    def __init__(self, left: Any, right: Any) -> None:
        self.left, self.right = left, right


def flatten(rope: Any, limit: int | None = None) -> list[int]:
    """The symbols of a rope (``None``; ``(prev, r, o)``; ``(prev, a)``; :class:`_Cat`), in order;
    with ``limit``, only (at least) the last ``limit`` of them."""
    out: list[int] = []
    stack: list[Any] = []
    node = rope
    while limit is None or len(out) < limit:
        if node is None:
            if not stack:
                break
            node = stack.pop()
        elif type(node) is _Cat:
            stack.append(node.left)
            node = node.right
        elif len(node) == 3:
            out.append(node[2])
            out.append(node[1])
            node = node[0]
        else:
            out.append(node[1])
            node = node[0]
    out.reverse()
    return out


def prefix_key(symbols: Sequence[int]) -> bytes:
    """Model key of a training prefix (the same bytes whichever way the history was built)."""
    return hashlib.blake2b(np.asarray(symbols, dtype=np.int64).tobytes(), digest_size=16).digest()


# state = (hash, length, percepts, keys of the 1-, 2-, 4-, ... percept prefixes (None: not known),
#          rope of the symbols, last observation)


class PowerOfTwoPolicy(Policy):
    """A policy answering from a model of the history's power-of-two prefix; subclasses train and answer.

    ``train(symbols, k, key, ancestors)`` returns the model of the ``k``-percept prefix ``symbols``
    (``ancestors``: the keys of its 1-, 2-, 4-, ... percept prefixes, ``None`` where unknown);
    ``answer(model, state)`` the action. Answers are memoised by history, models by prefix key.
    """


    def __init__(self, num_actions: int, num_observations: int) -> None:
        self.num_actions = num_actions
        self.num_observations = num_observations
        self.memo: dict[int, int] = {}
        self.models: dict[bytes, Any] = {}

    # -- history states -------------------------------------------------------------------------
    def empty(self) -> State:
        return (0, 0, 0, (), None, 0)

    def percept(self, state: State, reward: int, obs: int) -> State:
        h, length, n, keys, rope, _ = state
        rope = (rope, int(reward), int(obs))
        n += 1
        if n & (n - 1) == 0:  # a power of two: name the new training prefix
            keys = keys + (prefix_key(flatten(rope)),)
        return (push(push(h, reward), obs), length + 2, n, keys, rope, int(obs))

    def record(self, state: State, action: int) -> State:
        h, length, n, keys, rope, last = state
        return (push(h, action), length + 1, n, keys, (rope, int(action)), last)

    def concat(self, left: State, symbols: Sequence[int], right: State) -> State:
        if right[1] == 0:
            return left
        if left[1] == 0:
            return right
        n = left[2] + right[2]
        known = left[3]
        keys = known + (None,) * (n.bit_length() - len(known))
        return (join(left[0], right[0], right[1]), left[1] + right[1], n, keys, _Cat(left[4], right[4]), right[5])

    def act(self, state: State) -> int:
        h, length, n, keys, rope, last = state
        mk = memo_key(h, length)
        found = self.memo.get(mk)
        if found is not None:
            return found
        if n == 0:
            return 0
        level = n.bit_length() - 1
        k = 1 << level
        key = keys[level]
        symbols = None
        if key is None:
            symbols = flatten(rope)[: 3 * k - 1]
            key = prefix_key(symbols)
        if key in self.models:
            model = self.models[key]
        else:
            if symbols is None:
                symbols = flatten(rope)[: 3 * k - 1]
            model = self.models[key] = self.train(symbols, k, key, keys[:level])
        action = self.answer(model, state)
        self.memo[mk] = action
        return action

    def train(self, symbols: list[int], k: int, key: bytes, ancestors: tuple) -> Any:
        """The model of the ``k``-percept prefix ``symbols``."""
        raise NotImplementedError

    def answer(self, model: Any, state: State) -> int:
        """The action of ``model`` on the prompt ``state``."""
        raise NotImplementedError


