"""The Observer protocol (a VOE model: optional ``fit`` on background, per-step ``surprise`` of a test trial)."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

import numpy as np

from bib.episode import Episode
from bib.errors import BibInputError, ModelError
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
    got = _ask(observer, handed, [names[i] for i in order])
    if len(got) != len(views):
        raise BibInputError(f"observer {observer.name!r} returned {len(got)} results for {len(views)} episodes")
    out: list[object] = [None] * len(views)
    for k, i in enumerate(order):
        out[i] = got[k]
    checked = []
    for ep, name, s in zip(views, names, out):
        if callable(getattr(s, "detach", None)):  # a torch tensor, perhaps one that requires grad
            s = s.detach().cpu().numpy()
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


@contextmanager
def scoring_mode(observer: Any) -> Iterator[None]:
    """How every route scores a torch model: the module in eval mode (dropout off, batch norm's running
    statistics) under ``torch.inference_mode()``, its own mode restored afterwards. Nothing happens when torch
    is not imported (a model that does not use torch)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    module = observer if isinstance(observer, torch.nn.Module) else None
    was_training = module.training if module is not None else False
    if module is not None:
        module.eval()
    try:
        with torch.inference_mode():
            yield
    finally:
        if module is not None:
            module.train(was_training)


def _failed(observer: Any, exc: Exception, where: str) -> ModelError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return ModelError(f"observer {getattr(observer, 'name', type(observer).__name__)!r} raised "
                      f"{type(exc).__name__} on {where}" + (f": {first}" if first else "")
                      + " (bib --debug shows the traceback)", traceback.format_exc())


def _ask(observer: Any, handed: Sequence[Episode], names: Sequence[str]) -> list[object]:
    """The observer's answers for ``handed`` (``names``: their real ids), in scoring mode; the observer's own
    exception becomes one :class:`~bib.errors.ModelError` naming the episode (the batch's first, from a
    batched ``surprise_many`` of its own)."""
    batched = getattr(observer, "surprise_many", None)
    own_batch = callable(batched) and getattr(type(observer), "surprise_many", None) is not BaseObserver.surprise_many
    with scoring_mode(observer):
        if own_batch:
            try:
                return list(batched(handed))  # type: ignore[misc]
            except BibInputError:
                raise
            except Exception as exc:  # noqa: BLE001 - the model's own code: one line, the traceback kept
                raise _failed(observer, exc, f"a batch of {len(handed)} episodes (the first: {names[0]})") from exc
        got: list[object] = []
        for ep, name in zip(handed, names):
            try:
                got.append(observer.surprise(ep))
            except BibInputError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise _failed(observer, exc, f"episode {name}") from exc
        return got


def weights_mismatch(exc: Exception, limit: int = 600) -> str:
    """torch's ``load_state_dict`` error in one line: what is missing, unexpected or of another shape (the
    lines after its "Error(s) in loading state_dict" heading, joined), cut at ``limit`` characters."""
    lines = [line.strip().rstrip(".").strip() for line in str(exc).splitlines()]
    details = [line for line in lines[1:] if line] or lines[:1]
    text = "; ".join(details)
    return text if len(text) <= limit else text[: limit - 3] + "..."
