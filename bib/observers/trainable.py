"""Training any model with ``bib train package.module:Class``: build it, call its ``fit(background_episodes)``,
save what it learned, and restore it for ``bib score --checkpoint DIR``.

A trained model's folder holds :data:`MODEL_CARD` (``model.json``: the import target, the observer's
``name``, its options, how it was saved, the model card fields) and either

* :data:`WEIGHTS` (``weights.pt``), the ``state_dict`` of a ``torch.nn.Module``, written by
  ``torch.save`` and read back with ``torch.load(weights_only=True)`` (no pickled code), or
* :data:`SAVED` (``saved/``), the folder the model's own ``save(folder)`` wrote, read back by the
  class's ``load(folder)`` (a classmethod returning the model, or a method filling a model built with
  the same options).

Nothing here imports torch unless the model's own module has imported it.
"""

from __future__ import annotations

import inspect
import json
import os
import random
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bib.episode import Episode
from bib.errors import BibInputError
from bib.guard import MiB, read_json
from bib.io import atomic_write_bytes, atomic_write_text
from bib.observers.base import weights_mismatch

MODEL_CARD = "model.json"
"""The model card inside a ``bib train`` folder of a user's model."""
WEIGHTS = "weights.pt"
"""A ``torch.nn.Module``'s state dict inside a ``bib train`` folder (weights only)."""
SAVED = "saved"
"""The folder a model's own ``save(folder)`` writes into, inside a ``bib train`` folder."""
FORMAT = "bib.model/1"
"""``format`` of :data:`MODEL_CARD`."""
CHECKPOINT = "checkpoint.pt"
"""The checkpoint inside a ``bib train`` folder of a learned observer (``bib score --checkpoint`` takes the folder
or this file)."""


def is_model_folder(path: str | os.PathLike[str] | None) -> bool:
    """True when ``path`` is a folder ``bib train`` wrote for a user's model (it holds :data:`MODEL_CARD`)."""
    return path is not None and Path(path).is_dir() and (Path(path) / MODEL_CARD).is_file()


def _is_module(obj: Any) -> bool:
    torch = sys.modules.get("torch")  # a torch model's module has imported torch already
    return torch is not None and isinstance(obj, torch.nn.Module)


def _class_name(obj: Any) -> str:
    return obj.__name__ if inspect.isclass(obj) else type(obj).__name__


def check_trainable(target: str, model: Any) -> None:
    """Refuse (BibInputError, one line) a model ``bib train`` cannot train: no ``fit(background_episodes)``
    hook, or nothing to save what it learns with (neither a ``torch.nn.Module`` nor a ``save(folder)``)."""
    cls = _class_name(model)
    if not callable(getattr(model, "fit", None)):
        raise BibInputError(f"observer {target!r}: {cls} has no fit(background_episodes) training hook, "
                            "which bib train calls with the background episodes")
    if not _is_module(model) and not callable(getattr(model, "save", None)):
        raise BibInputError(f"observer {target!r}: {cls} is neither a torch.nn.Module nor has a save(folder) "
                            "method, so bib train cannot save what fit learns")


def subset(items: Sequence[Any], n: int) -> list[Any]:
    """``n`` items spread evenly over ``items`` (all of them when ``n`` is 0 or too large), in order.

    Background ids are grouped by task, so an even spread keeps every task's share.
    """
    if n <= 0 or n >= len(items):
        return list(items)
    return [items[int(i)] for i in np.unique(np.linspace(0, len(items) - 1, n).round().astype(int))]


class BackgroundEpisodes(Sequence[Episode]):
    """The background set as a sequence read from disk on demand (``len``, indexing, iteration), so a
    model's ``fit`` can take several passes without the set being held in memory. Each file is checked
    against the world rules (as ``bib score`` checks) the first time it is read. With ``blind`` (what
    ``bib train`` hands a model's ``fit``) each item is the episode's blind view
    (:func:`bib.stimuli.blind.read_blind`): no outcome, pair or design field, an opaque id; without it
    (:func:`bib.api.read_episodes`, whose episodes are scored and evaluated under their ids) the episode."""

    def __init__(self, paths: Sequence[Path], blind: bool = False) -> None:
        self.paths = list(paths)
        self.blind = blind
        self._checked: set[str] = set()

    def __len__(self) -> int:
        return len(self.paths)

    def _load(self, i: int) -> Episode:
        from bib.episode import load_episode
        from bib.stimuli.blind import read_blind
        from bib.stimuli.check import load_checked

        if self.blind:
            return read_blind(self.paths[i], self._checked)
        key = str(self.paths[i])
        if key in self._checked:
            return load_episode(self.paths[i])
        ep = load_checked(self.paths[i])
        self._checked.add(key)
        return ep

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self._load(k) for k in range(len(self.paths))[i]]
        return self._load(range(len(self.paths))[i])

    def __iter__(self) -> Iterator[Episode]:
        for i in range(len(self.paths)):
            yield self._load(i)


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, numpy's global generator and, when imported, torch (before the model is built)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def count_parameters(model: Any) -> int | None:
    """Parameters of a ``torch.nn.Module`` (None for other models)."""
    return int(sum(p.numel() for p in model.parameters())) if _is_module(model) else None


def save_checkpoint(ckpt: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """``torch.save`` ``ckpt`` (a state dict, or a learned observer's checkpoint dict) into memory, then write it
    atomically."""
    import io

    import torch

    buf = io.BytesIO()
    torch.save(ckpt, buf)
    atomic_write_bytes(path, buf.getvalue())


def save_trained(target: str, model: Any, folder: Path, card: Mapping[str, Any]) -> dict[str, Any]:
    """Save a fitted model into ``folder`` (its state dict, or its own ``save``) and write :data:`MODEL_CARD`.

    Raises:
        BibInputError: nothing savable (an empty state dict, or a ``save`` that wrote nothing).
    """
    cls = _class_name(model)
    if _is_module(model):
        state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
        if not state:
            raise BibInputError(f"observer {target!r}: {cls} has no parameters or buffers after fit; "
                                "there is nothing to save")
        save_checkpoint(state, folder / WEIGHTS)
        how = "state_dict"
    else:
        saved = folder / SAVED
        saved.mkdir()
        model.save(saved)
        if not any(saved.iterdir()):
            raise BibInputError(f"observer {target!r}: {cls}.save(folder) wrote nothing; there is nothing to restore")
        how = "save"
    doc = {"format": FORMAT, "target": target, "name": str(getattr(model, "name", target)), "saved": how,
           "parameters": count_parameters(model), **card}
    atomic_write_text(folder / MODEL_CARD, json.dumps(doc, indent=2, default=str) + "\n")
    return doc


def read_card(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The :data:`MODEL_CARD` of a ``bib train`` folder.

    Raises:
        BibInputError: unreadable JSON or another format.
    """
    p = Path(folder) / MODEL_CARD
    try:
        doc = read_json(p, MiB)
    except OSError as exc:
        raise BibInputError(f"{p}: cannot read the model card ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("saved") not in ("state_dict", "save"):
        raise BibInputError(f"{p}: not a bib model card (expected format {FORMAT!r} and saved 'state_dict' or 'save')")
    options = doc.get("options")
    if options is not None and not (isinstance(options, dict) and all(isinstance(k, str) for k in options)):
        raise BibInputError(f"{p}: field 'options' must be an object of named options, got {str(options)[:80]!r}")
    if not isinstance(doc.get("target"), str):
        raise BibInputError(f"{p}: field 'target' must be the model's package.module:Class, got {str(doc.get('target'))[:80]!r}")
    seed = doc.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise BibInputError(f"{p}: field 'seed' must be an integer, got {seed!r}")
    return doc


def restore(target: str, make: Callable[..., Any], folder: Path, options: Mapping[str, Any]) -> Any:
    """Rebuild a model ``bib train`` saved into ``folder``: ``make(**options)`` then ``load_state_dict`` of the
    weights (read with ``weights_only=True``), or the class's ``load(folder)``.

    Raises:
        BibInputError: a card of another model, weights that do not fit, or a class without ``load``.
    """
    card = read_card(folder)
    attr = target.partition(":")[2]
    if card["target"] != target:
        raise BibInputError(f"{folder}: the model there was trained as {card['target']!r}, not {target!r}")
    opts = dict(card.get("options") or {}) if not options else dict(options)
    if card["saved"] == "state_dict":
        from bib.io import load_weights

        state = load_weights(folder / WEIGHTS)
        model = make(**opts)
        if not _is_module(model) or not isinstance(state, dict):
            raise BibInputError(f"{folder}: {attr} did not build a torch.nn.Module to load the saved weights into")
        try:
            model.load_state_dict(state)
        except RuntimeError as exc:
            raise BibInputError(f"{folder}: weights do not fit {attr} ({weights_mismatch(exc)})") from None
        model.eval()
        return model
    loader = inspect.getattr_static(make, "load", None) if inspect.isclass(make) else None
    if isinstance(loader, (classmethod, staticmethod)):
        return make.load(folder / SAVED)
    model = make(**opts)
    if not callable(getattr(model, "load", None)):
        raise BibInputError(f"{folder}: {attr} has no load(folder) to restore what its save(folder) wrote")
    returned = model.load(folder / SAVED)
    return model if returned is None else returned
