"""The in-process API for model builders: :func:`train` a model, :func:`score` it on episodes and :func:`evaluate`
its scores.

They take objects as well as names and paths, and score and evaluate need no files: a model instance or a registered name /
``package.module:Class``, episodes in memory or a set on disk. They run the same library code as ``bib score``
and ``bib evaluate`` (:mod:`bib.observers.scoring`, :mod:`bib.evaluation`), so the numbers are the CLI's::

    import bib

    model = MyModel()
    bib.train(model, "out/background", "out/my-model")  # bib train: fit on the blind view, saved into the folder
    scores = bib.score(model, "out/tiny")            # or bib.score("my_model:MyModel", episodes, checkpoint=...)
    result = bib.evaluate("out/tiny", scores)          # an Evaluation: to_json(), to_markdown(), plot(), save()
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from bib.episode import Episode
from bib.errors import BibInputError
from bib.evaluation import (
    EpisodeRef,
    EpisodeSet,
    Evaluation,
    evaluate_difficulty,
    find_episodes,
    readout,
    set_summary,
    steps_path,
    write_results,
    write_steps,
)
from bib.evaluation import evaluate as pairwise
from bib.observers.base import Observer
from bib.results import Result

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SCORES_SCHEMA = "bib.scores/1"
"""``schema`` of :meth:`Scores.to_json`."""

Episodes = str | os.PathLike[str] | EpisodeSet | Sequence[Episode]
"""What :func:`score` and :func:`evaluate` take as episodes: a set on disk (folder or manifest.csv), an
:class:`~bib.evaluation.EpisodeSet`, or :class:`~bib.episode.Episode` objects."""


def episode_refs(episodes: Episodes) -> EpisodeSet:
    """The :class:`EpisodeSet` of ``episodes`` (episodes in memory become refs without a path).

    Raises:
        BibInputError: an empty sequence, an item that is not an Episode, or one id given twice.
    """
    if isinstance(episodes, EpisodeSet):
        return episodes
    if isinstance(episodes, (str, os.PathLike)):
        return find_episodes(episodes)
    items = list(episodes)
    if not items:
        raise BibInputError("no episodes given")
    bad = next((x for x in items if not isinstance(x, Episode)), None)
    if bad is not None:
        raise BibInputError(f"episodes: expected bib.episode.Episode objects, got a {type(bad).__name__}")
    seen: set[str] = set()
    for ep in items:
        if ep.id in seen:
            raise BibInputError(f"episodes: episode id {ep.id!r} is given twice")
        seen.add(ep.id)
    return EpisodeSet(sorted((EpisodeRef(ep.id, ep.pair_id, ep.condition, ep.outcome, Path(), twin_id=ep.twin_id,
                                         difficulty=ep.difficulty, variant=ep.variant or None, task=ep.task)
                              for ep in items), key=lambda r: r.id))


@dataclass
class Scores(Result):
    """Per-step surprise of every episode, from :func:`score` (what ``bib score`` writes as results.csv and
    results.steps.parquet).

    Attributes:
        steps: episode id -> per-step surprise (``episode.test.n_steps`` values), in id order.
        episodes: the episodes scored (their refs: condition, outcome, pair).
        model: the model card (:func:`bib.observers.scoring.model_card`: ``name``, ``parameters``,
            ``training_data``, ``seed``).
    """

    name: ClassVar[str] = "scores"
    steps: dict[str, np.ndarray]
    episodes: EpisodeSet
    model: dict[str, Any] = field(default_factory=dict)

    @property
    def observer(self) -> str:
        """The model's name (its ``name`` attribute)."""
        return str(self.model.get("name") or "")

    def surprise(self, how: str = "max") -> dict[str, float]:
        """One surprise per episode: the per-step values reduced by ``max`` (BIB's readout) or ``mean``."""
        return {eid: readout(s, how) for eid, s in self.steps.items()}

    def by_condition(self) -> dict[str, dict[str, Any]]:
        """Counts and mean surprise (max readout) per condition and outcome
        (:func:`bib.observers.scoring.condition_means`)."""
        from bib.observers.scoring import condition_means

        return condition_means(self.episodes.refs, self.surprise())

    def to_json(self) -> dict[str, Any]:
        """``{"schema", "model", "episodes", "readout", "surprise": {id: max}, "steps": {id: [...]}, "conditions"}``."""
        return {"schema": SCORES_SCHEMA, "model": self.model, "episodes": len(self.steps), "readout": "max",
                "surprise": self.surprise(), "steps": {k: v.tolist() for k, v in self.steps.items()},
                "conditions": self.by_condition()}

    def to_markdown(self) -> str:
        """One line naming the model, and the mean surprise per condition and outcome."""
        from bib.observers.scoring import condition_table

        return (f"{len(self.steps)} episodes scored with {self.observer} (max readout)\n\n"
                + condition_table(self.by_condition()))

    def plot(self) -> Figure | None:
        """Mean surprise (max readout) of the expected and the unexpected episodes per condition."""
        from matplotlib.figure import Figure

        rows = {c: v for c, v in self.by_condition().items() if v["expected"] is not None or v["unexpected"] is not None}
        if not rows:
            return None
        fig = Figure(figsize=(6, 0.45 * len(rows) + 1.2))
        ax = fig.add_subplot()
        y = np.arange(len(rows))[::-1]
        for k, (outcome, color) in enumerate((("expected", "#4c72b0"), ("unexpected", "#dd8452"))):
            vals = [v[outcome] if v[outcome] is not None else np.nan for v in rows.values()]
            ax.barh(y + (0.2 if k == 0 else -0.2), vals, height=0.4, color=color, label=outcome)
        ax.set_yticks(y, list(rows))
        ax.set_xlabel(f"mean surprise (max readout), {self.observer}")
        ax.legend(fontsize=7)
        return fig

    def write(self, results: str | os.PathLike[str]) -> Path:
        """Write ``results`` (CSV ``episode_id,surprise``, max readout) and the per-step Parquet beside it, as
        ``bib score`` writes them (``bib evaluate SET RESULTS`` reads them); returns ``results``."""
        from bib.io import ensure_dir

        path = Path(results)
        ensure_dir(path.parent)
        write_steps(steps_path(path), self.steps.items())
        write_results(path, self.surprise())
        return path


def _observer(observer: str | Observer, checkpoint: str | os.PathLike[str] | None,
              options: Mapping[str, Any] | None) -> Observer:
    if isinstance(observer, str):
        from bib.observers.registry import make_observer

        return make_observer(observer, checkpoint, **dict(options or {}))
    if checkpoint is not None or options:
        raise BibInputError("checkpoint and options build an observer given by name; "
                            "pass an instance alone, already built")
    if not callable(getattr(observer, "surprise", None)):
        raise BibInputError(f"observer: a {type(observer).__name__} has no surprise(episode) method")
    return observer


def score(
    observer: str | Observer,
    episodes: Episodes,
    *,
    checkpoint: str | os.PathLike[str] | None = None,
    options: Mapping[str, Any] | None = None,
    workers: int = 1,
    device: str = "auto",
) -> Scores:
    """Per-step surprise of every episode, as ``bib score`` computes it, returned instead of written.

    Args:
        observer: a model instance (anything with ``name`` and ``surprise(episode)``), a registered observer
            name or ``package.module:Class``.
        episodes: a set on disk (folder or manifest.csv), an :class:`~bib.evaluation.EpisodeSet`, or
            :class:`~bib.episode.Episode` objects (no files needed).
        checkpoint: for a name: a checkpoint (a ``bib train`` folder or file), as ``bib score --checkpoint``.
        options: for a name: constructor options, as ``bib score --option KEY=VALUE``.
        workers: worker processes for a name and a set on disk (an instance is scored in this process).
        device: where a torch model runs, as ``--device`` (``auto``, ``cpu``, ``cuda[:N]``, ``mps``); an instance
            given on another device than ``cpu`` is moved there.

    The episodes go to the model through the library's scoring functions
    (:func:`bib.observers.scoring.score_refs`, :func:`~bib.observers.scoring.score_files`,
    :func:`~bib.observers.scoring.score_episodes`), sorted by id in chunks of
    :data:`~bib.observers.scoring.CHUNK`, as ``bib score`` hands them, so the numbers are the CLI's.

    Raises:
        BibInputError: an unknown name, bad options or checkpoint, bad episodes, or a model that returns the
            wrong number of values.
    """
    from bib.observers.device import device_for, place
    from bib.observers.scoring import CHUNK, check_observer, model_card, score_episodes, score_files, score_refs

    found = episode_refs(episodes)
    on_disk = not (isinstance(episodes, Sequence) and not isinstance(episodes, str))
    if isinstance(observer, str) and on_disk:
        dev = device_for(check_observer(observer, checkpoint, options), device)
        built = _observer(observer, checkpoint, options)
        stream = score_refs(observer, found.refs, checkpoint=checkpoint, config=options, workers=workers, device=dev)
    else:
        built = _observer(observer, checkpoint, options)
        place(built, device_for(built, device))
        if on_disk:
            refs = found.refs
            stream = (pair for i in range(0, len(refs), CHUNK)
                      for pair in score_files(built, [(r.id, str(r.path)) for r in refs[i : i + CHUNK]]))
        else:
            stream = score_episodes(built, list(episodes))  # type: ignore[arg-type]
    steps = dict(stream)  # the protocol's checks (wrong number of values, non-finite) raise BibInputError
    return Scores(steps, found, model_card(built, checkpoint))


def evaluate(
    episodes: Episodes | str | os.PathLike[str],
    scores: Scores | Mapping[str, float] | str | os.PathLike[str],
    *,
    readout_name: str = "max",
    seed: int = 0,
) -> Evaluation:
    """Pairwise VOE accuracy of ``scores`` on ``episodes``, as ``bib evaluate`` computes it.

    Args:
        episodes: the set the scores are for (a folder or manifest.csv, an EpisodeSet, or Episode objects), or
            the key file of a ``bib blind`` kit (scores on the kit's opaque ids; :mod:`bib.stimuli.kit`).
        scores: a :class:`Scores` (from :func:`score`), ``{episode id: surprise}``, or a results file / ``bib
            score`` folder.
        readout_name: ``max`` (BIB) or ``mean`` (needs per-step surprise: a Scores or a folder with its Parquet).
        seed: the bootstrap's seed.

    Raises:
        BibInputError: scores that do not match the set or key (ids missing or unknown, one line naming a few;
            results of another kit), or no expected/unexpected pairs.
    """
    from bib.evaluation import read_model_card, surprise_by_episode
    from bib.stimuli.kit import check_results_kit, is_key, key_note, read_key

    key = isinstance(episodes, (str, os.PathLike)) and is_key(episodes)
    found, fingerprint = read_key(episodes) if key else (episode_refs(episodes), "")  # type: ignore[arg-type]
    model: dict[str, Any] = {}
    if isinstance(scores, Scores):
        surprise = scores.surprise(readout_name)
        model = dict(scores.model)
    elif isinstance(scores, Mapping):
        if readout_name != "max":
            raise BibInputError(f"readout {readout_name!r} needs per-step surprise (a Scores), not one value per episode")
        surprise = {str(k): float(v) for k, v in scores.items()}
    else:
        from bib.evaluation import results_file

        path = results_file(scores)
        if key:
            check_results_kit(path, found, fingerprint, episodes)  # type: ignore[arg-type]
        surprise = surprise_by_episode(path, found, readout_name)
        model = read_model_card(path.parent)
    check_matching(found, surprise)
    res = pairwise(found.refs, surprise, seed=seed)
    if not res:
        raise BibInputError("the episodes have no expected/unexpected pairs to evaluate")
    return Evaluation(res, readout_name, found.sets, evaluate_difficulty(found.refs, surprise, seed=seed), model,
                      set_summary(found.refs, found.sets), note=key_note(episodes) if key else None)  # type: ignore[arg-type]


def check_matching(found: EpisodeSet, surprise: Mapping[str, float]) -> None:
    """Refuse (one line) scores whose episode ids are not exactly the set's, or that are not finite."""
    ids = found.ids()
    missing = sorted(ids - set(surprise))
    unknown = sorted(set(surprise) - ids)
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"{len(missing)} episode(s) of the set have no score, e.g. {', '.join(missing[:3])}")
        if unknown:
            parts.append(f"{len(unknown)} scored episode(s) are not in the set, e.g. {', '.join(unknown[:3])}")
        raise BibInputError("the scores do not match the episodes: " + "; ".join(parts))
    bad = sorted(k for k, v in surprise.items() if not np.isfinite(v))
    if bad:
        raise BibInputError(f"the scores of {len(bad)} episode(s) are not finite, e.g. {bad[0]}")


@dataclass(frozen=True)
class Trained:
    """What :func:`train` wrote: the model's name, the folder, and its model card (a user's model) or the
    checkpoint's training metrics (a learned observer). ``str()`` is the line ``bib train`` prints."""

    name: str
    folder: Path
    files: str
    card: dict[str, Any]

    def __str__(self) -> str:
        if self.files.startswith("checkpoint"):
            return f"{self.name}: checkpoint written to {self.folder / self.files}"
        return f"{self.name}: trained model written to {self.folder} ({self.files})"


def train(
    model: str | Any,
    background: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    config: str | os.PathLike[str] | None = None,
    epochs: int | None = None,
    max_episodes: int | None = None,
    seed: int | None = None,
    device: str = "auto",
    force: bool = False,
    log: Any = None,
    options: Mapping[str, Any] | None = None,
    patience: int | None = None,
    resume_from: str | os.PathLike[str] | None = None,
    pretrain: str | None = None,
    **more_options: Any,
) -> Trained:
    """Train a model on a background set into the folder ``out``: what ``bib train`` does, from Python.

    Args:
        model: a learned observer's name (``bc-mlp``, ``bc-rnn``, ``video-rnn``), your ``package.module:Class``,
            or an instance of your class (trained as it is; its class must be importable to restore it).
        background: the background set (a folder or a manifest.csv).
        out: the output folder (``str`` or path): checked before any work (a file, another job's output or a
            folder that cannot be written is refused), written atomically with ``provenance.json`` when training
            ends; rerunning the same job replaces it, ``force`` replaces another's.
        config: a learned observer's TOML config (``--config``).
        epochs: a learned observer's epochs override (``--epochs``); your class: the context's ``max_epochs``
            (its ``fit(episodes, context)`` reads it).
        max_episodes: use N episodes spread evenly over the id-sorted set (0 = all).
        seed: a learned observer's ``[train] seed`` override; your class: the seed of ``random``, numpy and torch
            (default 0).
        device: ``auto``, ``cpu``, ``cuda[:N]`` or ``mps`` (``--device``).
        log: where progress lines go (default: stderr).
        options: your class's constructor options (``--option KEY=VALUE``), checked against its annotations; one
            named like a keyword of ``train`` (``epochs``, ``seed``, ...) goes here.
        patience: stop after N epochs without a lower validation loss (``--patience``; 0: never early); a learned
            observer's ``[train] patience`` override (None: the config's), your class's context (None: 0).
        resume_from: a folder an earlier ``bib train`` wrote (its ``last.pt``): training continues after its last
            epoch (``--resume-from``).
        pretrain: a learned observer's ``[train] pretrain`` override (``--pretrain``): ``atc`` pretrains its frame
            encoder with Augmented Temporal Contrast before training (:mod:`bib.observers.atc`), ``none`` does not.
        **more_options: more constructor options, as keywords.

    The model's ``fit`` gets the episodes' blind view (opaque ids, no outcome), as ``bib train`` hands it.

    Raises:
        BibInputError: what ``bib train`` refuses (an untrainable name, options for a learned observer, a bad
            device or folder), before any training; a model's own exception in ``fit`` as one line
            (:class:`~bib.errors.ModelError`).
    """
    import sys

    from bib.io import OutputFolder
    from bib.observers.device import check_device, resolve_device
    from bib.observers.registry import trainable
    from bib.observers.trainable import CHECKPOINT, MODEL_CARD, SAVED, WEIGHTS

    say = log if log is not None else (lambda line: print(line, file=sys.stderr))
    options = {**dict(options or {}), **more_options}
    instance = None if isinstance(model, str) else model
    if instance is not None:
        if options:
            raise BibInputError("options build a model from its class; an instance is already built, give it alone")
        name = f"{type(instance).__module__}:{type(instance).__qualname__}"
    else:
        name = trainable(model)
    user = ":" in name
    if user and config is not None:
        raise BibInputError("--config configures the built-in learned observers; "
                            "give your own class its settings with --option KEY=VALUE")
    if not user and options:
        raise BibInputError(f"--option is for your own package.module:Class; configure {name} with --config")
    if user and pretrain is not None:
        raise BibInputError("--pretrain pretrains the frame encoder of a built-in learned observer; your own class "
                            "pretrains in its fit(episodes, context)")
    dev = check_device(device) if user else resolve_device(device)  # a learned observer: resolved before any work
    overrides = {"epochs": epochs, "max_episodes": max_episodes, "seed": seed,
                 **({"patience": patience} if patience is not None else {}),
                 **({"pretrain": pretrain} if pretrain else {})}
    job = {"command": "train", "observer": name, "background": Path(background), "config": config,
           "overrides": overrides, **({"options": options} if options else {}),
           **({"resume_from": Path(resume_from)} if resume_from is not None else {})}
    if resume_from is not None:
        from bib.observers.context import resume_file

        resume_file(resume_from)  # refused before any work
    folder = OutputFolder(out, job, force=force)
    if user:
        from bib.observers.user_training import train_model

        with folder as tmp:
            card = train_model(name, background, tmp, options=options, seed=seed or 0, max_episodes=max_episodes or 0,
                               log=say, device=dev, model=instance, epochs=epochs, patience=patience or 0,
                               resume_from=resume_from)
        files = f"{MODEL_CARD} and {WEIGHTS if card['saved'] == 'state_dict' else SAVED + '/'}"
        return Trained(str(card["name"]), Path(out), files, card)
    from bib.observers.training import train as run

    with folder as tmp:
        report = run(name, background, tmp / CHECKPOINT, config, overrides, log=say, device=dev,
                     resume_from=resume_from)
    return Trained(name, Path(out), CHECKPOINT, {"best_epoch": report.best_epoch,
                                                 "best_val_loss": report.best_val_loss,
                                                 "n_train": report.n_train, "n_val": report.n_val,
                                                 "stopped_early": report.stopped_early,
                                                 "warnings": report.warnings})


def read_episodes(path: str | os.PathLike[str]) -> Sequence[Episode]:
    """The episodes of a set on disk as they are (ids, outcomes and design fields included), as a sequence read on
    demand (:class:`bib.observers.trainable.BackgroundEpisodes`, in id order, each file checked when first read).
    Not what ``bib train`` hands a model's ``fit``: that is their blind view (:func:`train`)."""
    from bib.observers.trainable import BackgroundEpisodes

    return BackgroundEpisodes([r.path for r in find_episodes(path).refs])
