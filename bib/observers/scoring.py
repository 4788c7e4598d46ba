"""Score an episode set with a registered observer: per-step surprise in parallel, results CSV + Parquet."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from bib.episode import Episode
from bib.errors import BibInputError
from bib.evaluation import (
    MODEL_JSON,
    EpisodeRef,
    EpisodeSet,
    find_episodes,
    readout,
    steps_path,
    write_results,
    write_steps,
)
from bib.observers.base import Observer, surprise_many, surprise_of_views
from bib.observers.registry import make_observer
from bib.results import Result, jsonable, markdown_table
from bib.stimuli.blind import load_blind

CHUNK = 32
"""Episodes per work item (refs are sorted by id; the observer gets each chunk's blind views shuffled)."""

_OBSERVERS: dict[str, Observer] = {}


def _observer_key(name: str, checkpoint: str | None, config: Mapping[str, Any], device: str = "cpu") -> str:
    return json.dumps([name, checkpoint, dict(config)] + ([device] if device != "cpu" else []), sort_keys=True,
                      default=str)


def _cached_observer(name: str, checkpoint: str | None, config: Mapping[str, Any], device: str = "cpu") -> Observer:
    """One observer per (name, checkpoint, config, device) per process (workers build their own), on ``device``
    (a resolved torch device, :func:`bib.observers.device.place`)."""
    key = _observer_key(name, checkpoint, config, device)
    if key not in _OBSERVERS:
        from bib.observers.device import place

        _OBSERVERS[key] = place(make_observer(name, checkpoint, **config), device)
    return _OBSERVERS[key]


def _score_chunk(item: tuple[str, str | None, dict[str, Any], str, list[tuple[str, str]]]) -> list[tuple[str, np.ndarray]]:
    """Worker: load a chunk of episodes and return ``[(episode id, per-step surprise)]``.

    The observer sees only the episodes' blind views (:func:`bib.stimuli.blind.load_blind`), in a
    shuffled order (:func:`bib.observers.base.surprise_of_views`).
    """
    name, checkpoint, config, device, chunk = item
    return score_files(_cached_observer(name, checkpoint, config, device), chunk)


def score_files(observer: Observer, chunk: Sequence[tuple[str, str]]) -> list[tuple[str, np.ndarray]]:
    """``[(episode id, per-step surprise)]`` of a chunk of ``(id, episode file)`` scored by ``observer`` (an
    instance), through the episodes' blind views (:func:`bib.stimuli.blind.load_blind`) in a shuffled order
    (:func:`bib.observers.base.surprise_of_views`): what every scoring path runs on each chunk (``bib score``'s
    workers, :func:`bib.api.score`)."""
    views = [load_blind(path, eid) for eid, path in chunk]
    ids = [eid for eid, _ in chunk]
    return list(zip(ids, surprise_of_views(observer, views, ids)))


def score_episodes(observer: Observer, episodes: Sequence[Episode], chunk: int = CHUNK) -> Iterator[tuple[str, np.ndarray]]:
    """Per-step surprise of episodes held in memory, by ``observer`` (an instance), sorted by id and handed over
    in chunks of ``chunk`` as ``bib score`` hands a set's files (so a batched observer gets the same batches)."""
    ordered = sorted(episodes, key=lambda e: e.id)
    for i in range(0, len(ordered), chunk):
        part = ordered[i : i + chunk]
        yield from zip((ep.id for ep in part), surprise_many(observer, part))


def model_card(observer: Observer, checkpoint: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``{"name", "parameters", "training_data", "seed"}`` of a built observer: its ``name`` attribute, the
    parameters of its torch network (None otherwise), and what the checkpoint records of its training (a user
    model's ``model.json`` from ``bib train``, a learned observer's checkpoint config; None where unknown). A learned
    observer on frames adds ``frames``: ``image_size``, ``cell_px``, ``normalize``, ``pixel_mean``, ``pixel_std`` and
    ``pretrain`` (``atc`` or None)."""
    from bib.observers.trainable import count_parameters, is_model_folder, read_card

    net = getattr(observer, "net", None)
    card: dict[str, Any] = {"name": str(getattr(observer, "name", "")) or None,
                            "parameters": count_parameters(observer) or count_parameters(net),
                            "training_data": None, "seed": None}
    if is_model_folder(checkpoint):
        saved = read_card(checkpoint)  # type: ignore[arg-type]
        card.update({k: saved.get(k) for k in ("training_data", "seed")})
        card["parameters"] = card["parameters"] or saved.get("parameters")
    elif isinstance(getattr(observer, "metrics", None), dict) and observer.metrics:  # type: ignore[attr-defined]
        m = observer.metrics  # type: ignore[attr-defined]
        card["training_data"] = {"episodes": int(m.get("n_train", 0)) + int(m.get("n_val", 0)),
                                 "train": m.get("n_train"), "validation": m.get("n_val"), "sets": m.get("sets")}
        card["seed"] = (getattr(observer, "train_config", None) or {}).get("seed")
    config = getattr(observer, "config", None)
    if getattr(config, "input", None) == "frames":  # a frame model's input (issue 42); symbolic cards are unchanged
        pre = (getattr(observer, "metrics", None) or {}).get("pretrain")
        card["frames"] = {"image_size": config.image_size, "cell_px": config.cell_px, "normalize": config.normalize,
                          "pixel_mean": list(config.pixel_mean), "pixel_std": list(config.pixel_std),
                          "pretrain": pre.get("method") if isinstance(pre, dict) else None}
    return card


def check_observer(name: str, checkpoint: str | os.PathLike[str] | None = None,
                   config: Mapping[str, Any] | None = None) -> Observer:
    """Build the observer once in this process, so an unknown name, a bad checkpoint or option is
    refused (BibInputError) before any work; returns it (on the CPU)."""
    return _cached_observer(name, None if checkpoint is None else str(checkpoint), dict(config or {}))


def score_refs(
    name: str,
    refs: Sequence[EpisodeRef],
    *,
    checkpoint: str | os.PathLike[str] | None = None,
    config: Mapping[str, Any] | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    chunk: int = CHUNK,
    device: str = "cpu",
) -> Iterator[tuple[str, np.ndarray]]:
    """Per-step surprise of every episode, in the order of ``refs`` (streamed, any worker count).

    The observer is built once per worker process, when it starts (learned observers load their
    checkpoint once). This process, which has built it already (to check it), scores chunks too
    beside ``workers - 1`` pool processes, and alone until one of them has started, so its share
    does not wait for a worker's start-up. In a process that has not imported torch yet (a fresh
    ``bib score``), the forkserver is started first and imports the observer's modules (for a learned
    observer, torch: 2-3 s of CPU) on another core while this process imports its own, so workers
    forked from it start without that import. ``device`` is a resolved torch device
    (:func:`bib.observers.device.resolve_device`) every process puts a torch observer on.
    """
    from bib.parallel import map_ordered, start_forkserver

    ckpt = None if checkpoint is None else str(checkpoint)
    cfg = dict(config or {})
    # When this process has still to import torch (a fresh `bib score`), the forkserver imports the
    # observer's modules meanwhile. Not otherwise: starting a pool process waits for the forkserver to be
    # ready, so this process would wait for that import instead of scoring while a worker imports torch.
    preload = worker_modules(name) if workers > 1 and not scheduler and "torch" not in sys.modules else []
    if preload:
        start_forkserver(preload)
    _cached_observer(name, ckpt, cfg, device)  # fail early (unknown name, bad checkpoint or option) in this process
    items = (
        (name, ckpt, cfg, device, [(r.id, str(r.path)) for r in refs[i : i + chunk]]) for i in range(0, len(refs), chunk)
    )
    chunks = map_ordered(_score_chunk, items, workers=workers, scheduler=scheduler, local=True,
                         setup=functools.partial(_cached_observer, name, ckpt, cfg, device), preload=preload)
    with closing(chunks):  # Ctrl-C or an error stops the pool during the unwind (see bib.stimuli.build)
        for results in chunks:
            yield from results


def worker_modules(name: str) -> list[str]:
    """The modules a scoring worker imports for the registered observer ``name``: this one and the observer's
    own (a learned observer's imports torch). A user's ``package.module:Class`` is not preloaded (an
    error importing it would stop the forkserver, not name the module)."""
    from bib.observers.registry import OBSERVERS

    factory = OBSERVERS[name].factory if ":" not in name and name in OBSERVERS else None
    if factory is None:
        return [__name__]
    return [__name__, factory.partition(":")[0] if isinstance(factory, str) else factory.__module__]


@dataclass(frozen=True)
class ScoreSummary(Result):
    """What :func:`score` wrote (``bib score`` prints it): the files, and per condition the mean surprise
    (max readout) of the expected and the unexpected episodes.

    Attributes:
        n_episodes: episodes scored.
        results: the results CSV (``episode_id,surprise``, max readout).
        steps: the per-step surprise (Parquet) beside it.
        episodes: the episode set.
        observer: the observer's name (or ``package.module:Class``).
        surprise: episode id -> surprise (max readout).
    """

    name: ClassVar[str] = "score"
    n_episodes: int
    results: Path
    steps: Path
    episodes: EpisodeSet
    observer: str = ""
    surprise: dict[str, float] = field(default_factory=dict)

    model: dict[str, Any] = field(default_factory=dict)

    def by_condition(self) -> dict[str, dict[str, Any]]:
        """:func:`condition_means` of the set's episodes."""
        return condition_means(self.episodes.refs, self.surprise)

    def to_json(self) -> dict[str, Any]:
        """``{"observer", "model", "episodes", "readout", "results", "steps", "conditions"}`` (file names, not paths;
        ``observer`` is the model's ``name``, ``model`` its :func:`model_card`)."""
        return {"observer": self.observer, "model": self.model, "episodes": self.n_episodes, "readout": "max",
                "results": self.results.name, "steps": self.steps.name, "conditions": self.by_condition()}

    def to_markdown(self) -> str:
        """One line naming the files, and the mean surprise per condition and outcome."""
        head = f"{self.n_episodes} episodes scored with {self.observer}: {self.results.name} (max readout), " \
               f"per-step surprise in {self.steps.name}"
        return head + "\n\n" + condition_table(self.by_condition())


def condition_means(refs: Sequence[EpisodeRef], surprise: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """``{condition: {"episodes", "expected", "unexpected"}}``: counts and mean surprise per outcome of the episodes
    of ``refs`` that ``surprise`` has (background episodes under their task; None where a condition has no episode
    of an outcome)."""
    groups: dict[str, dict[str, list[float]]] = {}
    for ref in refs:
        if ref.id in surprise:
            g = groups.setdefault(ref.condition or ref.task or "?", {"expected": [], "unexpected": [], "none": []})
            g.setdefault(ref.outcome, []).append(surprise[ref.id])
    return {c: {"episodes": sum(len(v) for v in g.values()),
                **{o: (float(np.mean(g[o])) if g[o] else None) for o in ("expected", "unexpected")}}
            for c, g in sorted(groups.items())}


def condition_table(by_condition: Mapping[str, Mapping[str, Any]]) -> str:
    """:func:`condition_means` as a Markdown table."""
    rows = [[c, v["episodes"], v["expected"], v["unexpected"]] for c, v in by_condition.items()]
    return markdown_table(["condition", "episodes", "mean surprise, expected", "mean surprise, unexpected"], rows)


def score(
    name: str,
    episodes: str | os.PathLike[str] | EpisodeSet,
    out: str | os.PathLike[str],
    *,
    checkpoint: str | os.PathLike[str] | None = None,
    config: Mapping[str, Any] | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    progress: bool = True,
    device: str = "auto",
) -> ScoreSummary:
    """Score every episode under ``episodes``; write ``out`` (CSV ``episode_id,surprise``, max readout),
    the per-step surprise beside it (``<out stem>.steps.parquet``) and the model card (:data:`MODEL_JSON`,
    :func:`model_card`), which ``bib evaluate`` puts into ``evaluation.json``. ``device``: ``auto``, ``cpu``,
    ``cuda[:N]`` or ``mps`` for a torch observer (:func:`bib.observers.device.device_for`).
    """
    from bib.io import atomic_write_text, ensure_dir
    from bib.progress import track

    found = episodes if isinstance(episodes, EpisodeSet) else find_episodes(episodes)
    out_path = Path(out)
    ensure_dir(out_path.parent if str(out_path.parent) else Path("."))
    from bib.observers.device import device_for

    ckpt = None if checkpoint is None else str(checkpoint)
    dev = device_for(_cached_observer(name, ckpt, dict(config or {})), device)
    stream = score_refs(name, found.refs, checkpoint=checkpoint, config=config, workers=workers, scheduler=scheduler,
                        device=dev)
    if progress:
        stream = track(stream, total=len(found.refs), description=f"scoring with {name}")
    steps = list(stream)
    write_steps(steps_path(out_path), steps)
    maxima = {eid: readout(s, "max") for eid, s in steps}
    write_results(out_path, maxima)
    card = model_card(_cached_observer(name, ckpt, dict(config or {}), dev), checkpoint)
    atomic_write_text(out_path.parent / MODEL_JSON, json.dumps(jsonable(card), indent=2) + "\n")
    return ScoreSummary(len(steps), out_path, steps_path(out_path), found, card["name"] or name,
                        {k: float(v) for k, v in maxima.items()}, card)


def parse_options(options: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` observer options; values are JSON when they parse (``seed=3``, ``betas=[1,2]``), else strings.

    Raises:
        BibInputError: an option without ``=``.
    """
    out: dict[str, Any] = {}
    for opt in options:
        key, sep, raw = opt.partition("=")
        if not sep or not key.strip():
            raise BibInputError(f"--option {opt!r}: expected KEY=VALUE")
        try:
            out[key.strip().replace("-", "_")] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip().replace("-", "_")] = raw
    return out
