"""The Observer protocol (a VOE model: optional ``fit`` on background, per-step ``surprise`` of a test trial)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from bib.episode import Episode


@runtime_checkable
class Observer(Protocol):
    """A violation-of-expectation model.

    ``surprise(episode)`` returns one float per step of the episode's test trial
    (``episode.test.n_steps`` values; step ``i`` is the move from ``path[i-1]`` to ``path[i]``),
    higher meaning more surprising. ``fit(background_episodes)`` is optional: observers that
    learn nothing from background data accept it and do nothing.
    """

    name: str

    def fit(self, background_episodes: Sequence[Episode]) -> None:
        """Learn from background (expected-only) episodes."""
        ...

    def surprise(self, episode: Episode) -> np.ndarray:
        """Per-step surprise of the test trial, shape ``[episode.test.n_steps]``."""
        ...


class BaseObserver:
    """Convenience base class: a no-op ``fit`` and a looping ``surprise_many``.

    Subclasses set ``name`` and implement :meth:`surprise`. Batched observers (neural nets)
    may override :meth:`surprise_many`, which scoring calls on chunks of episodes.
    """

    name: str = "observer"

    def fit(self, background_episodes: Sequence[Episode]) -> None:  # noqa: B027 - optional hook
        """Learn nothing (override in learned observers)."""

    def surprise(self, episode: Episode) -> np.ndarray:
        """Per-step surprise of the test trial (override)."""
        raise NotImplementedError

    def surprise_many(self, episodes: Sequence[Episode]) -> list[np.ndarray]:
        """:meth:`surprise` of each episode, in order."""
        return [self.surprise(ep) for ep in episodes]


def surprise_many(observer: Observer, episodes: Sequence[Episode]) -> list[np.ndarray]:
    """Per-step surprise of each episode, using the observer's batched method when it has one.

    Raises:
        ValueError: when an observer returns the wrong number of values or non-finite ones.
    """
    batched = getattr(observer, "surprise_many", None)
    out = list(batched(episodes)) if callable(batched) else [observer.surprise(ep) for ep in episodes]
    if len(out) != len(episodes):
        raise ValueError(f"observer {observer.name!r} returned {len(out)} results for {len(episodes)} episodes")
    checked = []
    for ep, s in zip(episodes, out):
        arr = np.asarray(s, dtype=np.float64).reshape(-1)
        if arr.shape[0] != ep.test.n_steps:
            raise ValueError(
                f"observer {observer.name!r} gave {arr.shape[0]} surprise values for episode {ep.id}, "
                f"whose test trial has {ep.test.n_steps} steps"
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"observer {observer.name!r} gave a non-finite surprise for episode {ep.id}")
        checked.append(arr)
    return checked
