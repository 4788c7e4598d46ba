"""The Observer protocol (a VOE model: optional ``fit`` on background, per-step ``surprise`` of a test trial)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from bib.episode import Episode
from bib.errors import BibInputError
from bib.stimuli.blind import blind_episode, episode_secret, shuffled


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
    """Per-step surprise of each episode, in the order of ``episodes``; the observer is handed only their
    blind view (:func:`bib.stimuli.blind.blind_episode`, secret: the SHA-256 of each episode's JSON text),
    in a shuffled order (:func:`surprise_of_views`).

    Raises:
        BibInputError: when an observer returns the wrong number of values or non-finite ones.
    """
    views = [blind_episode(ep, episode_secret(ep)) for ep in episodes]
    return surprise_of_views(observer, views, [ep.id for ep in episodes])


def surprise_of_views(observer: Observer, views: Sequence[Episode], names: Sequence[str]) -> list[np.ndarray]:
    """Per-step surprise of blind episodes (``names``: their real ids, for errors), in the order of ``views``.

    The observer gets them in the order of :func:`bib.stimuli.blind.shuffled`, through its batched
    ``surprise_many`` when it has one; the results are put back in the order of ``views``.

    Raises:
        BibInputError: (one line, exit 2 from the CLI) when an observer returns the wrong number of
            results or of values, values that are not numbers, or non-finite ones; naming the
            observer, the episode and both counts.
    """
    order = shuffled(views)
    handed = [views[i] for i in order]
    batched = getattr(observer, "surprise_many", None)
    got = list(batched(handed)) if callable(batched) else [observer.surprise(ep) for ep in handed]
    if len(got) != len(views):
        raise BibInputError(f"observer {observer.name!r} returned {len(got)} results for {len(views)} episodes")
    out: list[object] = [None] * len(views)
    for k, i in enumerate(order):
        out[i] = got[k]
    checked = []
    for ep, name, s in zip(views, names, out):
        try:
            arr = np.asarray(s, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise BibInputError(f"observer {observer.name!r} gave surprise values for episode {name} that are not "
                                f"numbers ({type(s).__name__})") from None
        if arr.shape[0] != ep.test.n_steps:
            raise BibInputError(
                f"observer {observer.name!r} gave {arr.shape[0]} surprise values for episode {name}, "
                f"whose test trial has {ep.test.n_steps} steps"
            )
        if not np.all(np.isfinite(arr)):
            raise BibInputError(f"observer {observer.name!r} gave a non-finite surprise for episode {name}")
        checked.append(arr)
    return checked
