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
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bib.episode import Episode
from bib.errors import BibInputError, ModelError
from bib.io import atomic_write_text
from bib.observers.base import weights_mismatch
from bib.observers.device import device_for, place

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


def save_trained(target: str, model: Any, folder: Path, card: Mapping[str, Any]) -> dict[str, Any]:
    """Save a fitted model into ``folder`` (its state dict, or its own ``save``) and write :data:`MODEL_CARD`.

    Raises:
        BibInputError: nothing savable (an empty state dict, or a ``save`` that wrote nothing).
    """
    cls = _class_name(model)
    if _is_module(model):
        from bib.observers.learned import save_checkpoint  # torch is imported already

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
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BibInputError(f"{p}: cannot read the model card ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("saved") not in ("state_dict", "save"):
        raise BibInputError(f"{p}: not a bib model card (expected format {FORMAT!r} and saved 'state_dict' or 'save')")
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


def prepare_folder(folder: str | os.PathLike[str]) -> Path:
    """The folder a trained model is saved into: created (with its parents) when missing, refused when it is a
    file or a folder that holds anything, so that nothing is trained that cannot be saved.

    Raises:
        BibInputError: a file, a folder with files in it, or a folder that cannot be created.
    """
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise BibInputError(f"{path}: is a file; give a folder to save the trained model into")
    if path.is_dir() and any(path.iterdir()):
        raise BibInputError(f"{path}: already holds files; give a new or empty folder to save the trained model into")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BibInputError(f"{path}: cannot create the folder ({exc.strerror or exc})") from None
    return path


def train_model(
    target: str,
    background: str | os.PathLike[str],
    folder: str | os.PathLike[str],
    *,
    options: Mapping[str, Any] | None = None,
    seed: int = 0,
    max_episodes: int = 0,
    log: Callable[[str], None] = print,
    device: str = "auto",
    model: Any = None,
) -> dict[str, Any]:
    """Train a user's model ``package.module:Class`` on the background set and save it into ``folder``.

    Everything that can be refused is refused before ``fit`` runs: the class (it must have ``fit`` and
    be a ``torch.nn.Module`` or have ``save(folder)``), its options and the background set. Then
    ``random``, numpy and torch are seeded with ``seed``, the model is built, ``fit`` is called with a
    :class:`BackgroundEpisodes` sequence (the episodes under ``background``, read from disk on demand,
    ``max_episodes`` of them spread evenly over the id-sorted set when given) and what it learned is
    saved (:func:`save_trained`). When ``fit`` returns a model (as scikit-learn's return ``self``), that
    model is the one saved. A ``torch.nn.Module`` is moved to ``device`` (``auto``, ``cpu``, ``cuda[:N]``,
    ``mps``: :func:`bib.observers.device.device_for`) before ``fit``; its weights are saved from the CPU.

    ``folder`` (a ``str`` or a path) is created when it does not exist and refused when it is not an empty
    folder, before anything is trained. ``model``: an instance already built (of the class ``target`` names; no
    ``options`` then) to train instead of building one.

    Returns:
        The model card written (:data:`MODEL_CARD`).

    Raises:
        BibInputError: what is refused before ``fit`` (above), or a model that cannot be saved after it.
    """
    created = not Path(folder).exists()
    path = prepare_folder(folder)
    try:
        return _train_into(target, background, path, options=options, seed=seed, max_episodes=max_episodes, log=log,
                           device=device, model=model)
    except BaseException:
        if created:  # leave nothing behind that the call made
            import shutil

            shutil.rmtree(path, ignore_errors=True)
        raise


def _train_into(target: str, background: str | os.PathLike[str], folder: Path, *, options: Mapping[str, Any] | None,
                seed: int, max_episodes: int, log: Callable[[str], None], device: str, model: Any = None
                ) -> dict[str, Any]:
    """:func:`train_model` into a folder that exists and is empty."""
    from bib.observers.registry import OBSERVERS, make_observer
    from bib.stimuli.sets import find_episodes

    opts = dict(options or {})
    if model is not None:
        if opts:
            raise BibInputError(f"observer {target!r}: options build a model from its class; "
                                "an instance is already built, give it alone")
        seed_everything(seed)
    else:
        OBSERVERS[target].resolve()  # imports the user's module (and torch, if it uses it) before seeding
        seed_everything(seed)
        model = make_observer(target, None, **opts)
    check_trainable(target, model)
    place(model, device_for(model, device))
    found = find_episodes(background)
    refs = subset(found.refs, max_episodes)
    episodes = BackgroundEpisodes([r.path for r in refs], blind=True)
    log(f"{target}: fit on {len(episodes)} background episodes from {background}"
        + (f"; {count_parameters(model)} parameters" if _is_module(model) else ""))
    try:
        returned = model.fit(episodes)
    except BibInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - the model's own code: one line, its traceback kept for --debug
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ModelError(f"observer {target!r} raised {type(exc).__name__} in fit" + (f": {first}" if first else "")
                         + " (bib --debug shows the traceback)", traceback.format_exc()) from exc
    trained = model if returned is None or returned is model else returned
    if trained is not model and not (_is_module(trained) or callable(getattr(trained, "save", None))):
        raise BibInputError(f"observer {target!r}: fit returned a {type(trained).__name__}, which bib train "
                            "cannot save (neither a torch.nn.Module nor has save(folder))")
    card = {"options": opts, "seed": seed,
            "training_data": {"path": str(background), "episodes": len(episodes), "sets": found.sets}}
    return save_trained(target, trained, folder, card)
