"""``bib train package.module:Class``: a user's model built (or given), fitted on the blind background set and saved
into a folder made or refused before ``fit`` (:mod:`bib.observers.trainable` saves and restores it)."""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bib.errors import BibInputError, ModelError
from bib.observers.context import (
    TrainingContext,
    provenance,
    resolved_options,
    resume_file,
    split,
    takes_context,
)
from bib.observers.device import device_for, place, torch_threads
from bib.observers.registry import OBSERVERS, make_observer
from bib.observers.trainable import (
    BackgroundEpisodes,
    _is_module,
    check_trainable,
    count_parameters,
    save_trained,
    seed_everything,
    subset,
)


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
    epochs: int | None = None,
    patience: int = 0,
    threads: int = 0,
    resume_from: str | os.PathLike[str] | None = None,
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

    A ``fit(episodes, context)`` that takes a second argument (:func:`bib.observers.context.takes_context`) is
    given a :class:`~bib.observers.context.TrainingContext` instead of the whole set: the 80/20 split (blind
    views), the seed, the device, ``threads``, ``epochs`` (``max_epochs``), early stopping after ``patience``
    epochs without gain, a logger writing ``checkpoint.log.json`` and ``metrics.csv`` into ``folder``, ``last.pt``
    after every epoch, and ``resume_from`` (a folder an earlier run wrote). After ``fit`` the best epoch's weights
    of a ``torch.nn.Module`` are the ones saved. Either way ``model.json`` and ``checkpoint.log.json`` record the
    provenance (:func:`bib.observers.context.provenance`).

    Returns:
        The model card written (:data:`MODEL_CARD`).

    Raises:
        BibInputError: what is refused before ``fit`` (above), or a model that cannot be saved after it.
    """
    created = not Path(folder).exists()
    path = prepare_folder(folder)
    try:
        return _train_into(target, background, path, options=options, seed=seed, max_episodes=max_episodes, log=log,
                           device=device, model=model, epochs=epochs, patience=patience, threads=threads,
                           resume_from=resume_from)
    except BaseException:
        if created:  # leave nothing behind that the call made
            import shutil

            shutil.rmtree(path, ignore_errors=True)
        raise


def _train_into(target: str, background: str | os.PathLike[str], folder: Path, *, options: Mapping[str, Any] | None,
                seed: int, max_episodes: int, log: Callable[[str], None], device: str, model: Any = None,
                epochs: int | None = None, patience: int = 0, threads: int = 0,
                resume_from: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """:func:`train_model` into a folder that exists and is empty."""
    from bib.stimuli.sets import find_episodes

    opts = dict(options or {})
    given = model is not None
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
    dev = device_for(model, device)
    place(model, dev)
    found = find_episodes(background)
    refs = subset(found.refs, max_episodes)
    episodes = BackgroundEpisodes([r.path for r in refs], blind=True)
    with_context = takes_context(model.fit)
    if not with_context and (epochs is not None or patience or resume_from is not None):
        raise BibInputError(f"observer {target!r}: --epochs, --patience and --resume-from go to a fit(episodes, "
                            f"context); {type(model).__name__}.fit takes the episodes alone")
    if resume_from is not None:
        resume_file(resume_from)  # refused now, before fit
    tr, va = split([r.id for r in refs])
    context = TrainingContext(BackgroundEpisodes([refs[i].path for i in tr], blind=True),
                              BackgroundEpisodes([refs[i].path for i in va], blind=True), seed=seed, device=dev,
                              threads=threads, max_epochs=epochs, patience=patience, folder=folder,
                              resume_from=None if resume_from is None else Path(resume_from), log=log)
    log(f"{target}: fit on {len(episodes)} background episodes from {background}"
        + (f" ({len(context.train)} training, {len(context.val)} validation, with a training context)"
           if with_context else "")
        + (f"; {count_parameters(model)} parameters" if _is_module(model) else ""))
    cpu = time.process_time()
    try:
        with torch_threads(threads):
            returned = model.fit(episodes, context) if with_context else model.fit(episodes)
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
    cpu = time.process_time() - cpu
    context.finish(trained if with_context else None)
    # the options the class was built with, defaults included (an instance the caller built: not known here)
    resolved = None if given else resolved_options(OBSERVERS[target].resolve(), opts)
    record = provenance(trained, device=dev, options=resolved or {}, cpu_seconds=cpu)
    if given:
        record["options"] = None
    card = {"options": opts, "seed": seed,
            "training_data": {"path": str(background), "episodes": len(episodes), "sets": found.sets},
            "training": context.summary() if with_context else None, "provenance": record}
    context.fields = {"target": target, "provenance": record}
    context.write()
    return save_trained(target, trained, folder, card)
