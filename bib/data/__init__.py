"""Episode sets as PyTorch datasets: the entry point for people who train their own models on ``bib``.

Two datasets, one item format, and :func:`load`, a named set generated once into a cache:

- :class:`EpisodeDataset` (map-style): an episode set on disk (a folder, or a ``manifest.csv``);
  only the index is read up front, each episode is read and encoded when it is asked for.
- :class:`EpisodeStream` (iterable): episodes streamed one by one, from a set on disk or generated
  on the fly from the task registry (:meth:`EpisodeStream.generate`), split across DataLoader
  workers.

An item is a dict: ``id`` and ``condition`` (strings), and per phase (``familiarization`` and/or ``test``, as asked) ``<phase>_states`` (float32
``[steps, C, H, W]``), ``<phase>_actions`` (int64 ``[steps]``: the move taken from each state, the
last state of a trial ``stay``) and ``<phase>_lengths`` (int64 ``[trials]``: states per trial).
States are ``symbolic`` grids (the learned observers' channels, :data:`CHANNELS`) or ``frames``
rendered on the fly at ``size x size`` pixels (RGB in [0, 1]): the learned observers' frames, through the one
function :func:`bib.observers.encoders.frame_states` (8 px per cell resized to ``size``; issue 42).

Items are blind by default (:mod:`bib.stimuli.blind`, issues 26 and 42): encoded from each episode's blind
view (no outcome, pair or design field), ``id`` an opaque id (the one ``bib score`` hands a model for the
same file: :func:`bib.stimuli.blind.opaque_id` under the SHA-256 of the file's bytes), and the episodes in an
order drawn from ``seed``, so neither an id nor a place says which episode of a pair is which. ``open=True``
gives the episodes' real ids in id order (a pair side by side): for making training labels of your own,
never for what a model is handed. :attr:`EpisodeDataset.key` maps opaque ids back to real ones, for writing
results (a model is scored with ``bib score`` / ``bib.score``, which hand it the same blind view).

**n + 1 states, n surprise values.** A trial of ``n`` moves has ``n + 1`` states (the agent's
cell before its first move and after each move; ``<phase>_lengths`` counts states) and ``n``
actions that move (the last state's action is ``stay``). An observer's ``surprise(episode)``
returns ``n`` values for a test trial of ``n`` moves: value ``i`` is the surprise at the move
from state ``i`` to state ``i + 1``, so it reads ``test_states[: n + 1]`` and scores
``test_actions[: n]``.

Tasks of different grid sizes mix in one batch with :func:`pad_collate`, which pads every axis
(time and the grid's height and width) and says which entries are real.

Example::

    from torch.utils.data import DataLoader
    from bib.data import EpisodeStream, pad_collate

    stream = EpisodeStream.generate({"preference": 2}, seed=0, phases=("test",))
    batch = next(iter(DataLoader(stream, batch_size=4, collate_fn=pad_collate)))
    batch["test_states"].shape   # [4, longest test trial, C, 10, 10]
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from bib.episode import Episode, load_episode
from bib.errors import BibInputError
from bib.evaluation import EpisodeRef, EpisodeSet, find_episodes
from bib.observers.encoders import (
    FRAME_CELL_PX,
    FRAME_SIZE,
    LEGACY_SYMBOLIC_CHANNELS,
    SYMBOLIC_CHANNELS,
    frame_floats,
    frame_states,
    symbolic_states,
    trial_actions,
)
from bib.stimuli.blind import blind_episode, episode_secret, file_secret, opaque_id
from bib.tasks import get_task, make_unit

PHASES: tuple[str, ...] = ("familiarization", "test")
SPLITS: tuple[str, ...] = ("all", "train", "val")
"""Parts of a set: all of it, or the 80/20 split ``bib train`` uses (episodes sorted by id, every fifth
one validation: :func:`bib.observers.training.split`)."""
CACHE_ENV = "BIB_DATA_CACHE"
"""The environment variable naming :func:`load`'s cache folder (default ``$XDG_CACHE_HOME/bib/data``,
``~/.cache/bib/data`` when that is unset)."""
INPUTS: tuple[str, ...] = ("symbolic", "frames")
CHANNELS: tuple[str, ...] = SYMBOLIC_CHANNELS
"""Channel names of a symbolic state, in order (walls, barriers, lock, key, home, object shapes and
colours, agent, key carried, agent shape and colour, mud, occluder): the learned observers' list
(:data:`bib.observers.encoders.SYMBOLIC_CHANNELS`)."""
LEGACY_CHANNELS: tuple[str, ...] = LEGACY_SYMBOLIC_CHANNELS
"""The channels before ``mud`` and ``occluder`` were appended: the first ``len(LEGACY_CHANNELS)`` of
:data:`CHANNELS` (a model trained on them reads ``states[:, :len(LEGACY_CHANNELS)]``)."""


@dataclass(frozen=True)
class Encoding:
    """How an episode becomes tensors.

    Attributes:
        input: ``symbolic`` (a ``C x H x W`` grid per state) or ``frames`` (``3 x size x size`` RGB).
        size: frame side in pixels (``frames`` only): the learned observers' frames (the one frame convention of
            :mod:`bib.observers.encoders`: drawn at :data:`FRAME_CELL_PX` pixels per cell, resized to ``size``
            with area interpolation, RGB, float32 in [0, 1] = uint8 / 255).
        phases: which phases an item carries: ``familiarization``, ``test`` or both.
    """

    input: str = "symbolic"
    size: int = FRAME_SIZE
    phases: tuple[str, ...] = PHASES

    def __post_init__(self) -> None:
        if self.input not in INPUTS:
            raise BibInputError(f"input must be one of {', '.join(INPUTS)}, got {self.input!r}")
        bad = [p for p in self.phases if p not in PHASES]
        if bad or not self.phases:
            raise BibInputError(f"phases must be a non-empty subset of {', '.join(PHASES)}, got {list(self.phases)!r}")
        if self.size < 8:
            raise BibInputError(f"size must be at least 8 pixels, got {self.size}")

    def states(self, ep: Episode, trial_index: int) -> np.ndarray:
        """The states of one trial of ``ep``: float32 ``[n + 1, C, H, W]``."""
        trial = ep.trials[trial_index]
        if self.input == "symbolic":
            return symbolic_states(trial)
        return frame_floats(frame_states(trial, self.size))  # the one frame convention (bib.observers.encoders)

    def encode(self, ep: Episode) -> dict[str, Any]:
        """The item of one episode (see the module docstring): its id, its condition and the states and
        moves of its blind view (:func:`bib.stimuli.blind.blind_episode`)."""
        item: dict[str, Any] = {"id": ep.id, "condition": ep.condition}
        ep = blind_episode(ep, b"bib.data")
        last = len(ep.trials) - 1
        groups = {"familiarization": range(last), "test": range(last, last + 1)}
        for phase in self.phases:
            idx = list(groups[phase])
            if not idx:
                raise BibInputError(f"episode {item['id']} has no {phase} trial")
            states = [self.states(ep, i) for i in idx]
            item[f"{phase}_states"] = torch.from_numpy(np.concatenate(states))
            item[f"{phase}_actions"] = torch.from_numpy(np.concatenate([trial_actions(ep.trials[i]) for i in idx]))
            item[f"{phase}_lengths"] = torch.tensor([len(s) for s in states], dtype=torch.int64)
        return item


def _load(ref: EpisodeRef) -> Episode:
    ep = load_episode(ref.path)
    if ep.id != ref.id:
        raise BibInputError(f"{ref.path}: episode id is {ep.id!r}, but the manifest says {ref.id!r}")
    return ep


def order(n: int, seed: int) -> list[int]:
    """The blind order of ``n`` episodes (in id order): a permutation drawn from ``numpy.random.default_rng(seed)``."""
    return [int(i) for i in np.random.default_rng(seed).permutation(n)]


def blind_id(ref: EpisodeRef) -> str:
    """The opaque id of an episode file: what ``bib score`` names it when it hands it to a model."""
    return opaque_id(file_secret(ref.path), ref.id)


def _refs(source: str | Path | EpisodeSet, conditions: Sequence[str] | None, split: str = "all") -> list[EpisodeRef]:
    if split not in SPLITS:
        raise BibInputError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    found = source if isinstance(source, EpisodeSet) else find_episodes(source)
    refs = list(found.refs) if conditions is None else [r for r in found.refs if r.condition in set(conditions)]
    if split == "all":
        return refs
    from bib.observers.training import split as train_val

    return [refs[i] for i in train_val([r.id for r in refs])[split == "val"]]


class EpisodeDataset(Dataset):
    """A map-style dataset over an episode set: item ``i`` is episode ``refs[i]``, encoded.

    Blind by default (see the module docstring): ``refs`` in an order drawn from ``seed`` and opaque ids;
    with ``open=True`` the episodes sorted by id under their real ids.

    Args:
        source: a folder (searched recursively for manifests and episode files), a ``manifest.csv``
            or an :class:`~bib.evaluation.EpisodeSet`.
        input: ``symbolic`` or ``frames`` (see :class:`Encoding`).
        size: frame side in pixels (``frames`` only).
        phases: ``familiarization``, ``test`` or both.
        conditions: keep only episodes of these conditions / tasks (all when None).
        split: ``all``, or ``train`` / ``val``: the 80/20 split of the (kept) episodes that
            ``bib train`` uses (:data:`SPLITS`).
        open: real ids in id order, for making labels of your own (default: blind).
        seed: the seed of the blind order.
    """

    def __init__(self, source: str | Path | EpisodeSet, input: str = "symbolic", size: int = FRAME_SIZE,
                 phases: Sequence[str] = PHASES, conditions: Sequence[str] | None = None, split: str = "all",
                 *, open: bool = False, seed: int = 0) -> None:
        self.encoding = Encoding(input, size, tuple(phases))
        refs = _refs(source, conditions, split)
        self.open = open
        self.refs = refs if open else [refs[i] for i in order(len(refs), seed)]

    def __len__(self) -> int:
        return len(self.refs)

    def __getitem__(self, index: int) -> dict[str, Any]:
        ref = self.refs[index]
        item = self.encoding.encode(_load(ref))
        if not self.open:
            item["id"] = blind_id(ref)
        return item

    @property
    def key(self) -> dict[str, str]:
        """Opaque id -> real id of every item (reads every file once): for writing results under the real ids,
        never for a model. The identity for an ``open`` dataset."""
        return {(r.id if self.open else blind_id(r)): r.id for r in self.refs}


class EpisodeStream(IterableDataset):
    """An iterable dataset: episodes read (or generated) one at a time, split across DataLoader workers.

    Worker ``k`` of ``m`` takes every ``m``-th unit starting at ``k``, so together the workers see
    every episode once, and a set of any size never sits in memory.

    Blind by default, as :class:`EpisodeDataset`: the units in an order drawn from ``seed`` (the two episodes
    of a generated pair in an order drawn from it too), opaque ids; ``open=True``: real ids in id (or
    generation) order.

    Args:
        source: as for :class:`EpisodeDataset`.
        input: ``symbolic`` or ``frames`` (see :class:`Encoding`).
        size: frame side in pixels (``frames`` only).
        phases: ``familiarization``, ``test`` or both.
        conditions: as for :class:`EpisodeDataset`.
        open: as for :class:`EpisodeDataset`.
        seed: the seed of the blind order.
    """

    def __init__(self, source: str | Path | EpisodeSet, input: str = "symbolic", size: int = FRAME_SIZE,
                 phases: Sequence[str] = PHASES, conditions: Sequence[str] | None = None, *, open: bool = False,
                 seed: int = 0) -> None:
        self.encoding = Encoding(input, size, tuple(phases))
        refs = _refs(source, conditions)
        self.open = open
        self.seed = seed
        self._units: list[Any] = refs if open else [refs[i] for i in order(len(refs), seed)]

    @classmethod
    def generate(cls, units: Mapping[str, int], seed: int = 0, input: str = "symbolic", size: int = FRAME_SIZE,
                 phases: Sequence[str] = PHASES, *, open: bool = False) -> EpisodeStream:
        """Stream freshly generated episodes: ``units[task]`` units of each task (pairs for evaluation
        conditions), exactly those ``bib generate`` writes for the same tasks, counts and seed (blind unless
        ``open``; the blind order is drawn from ``seed`` too)."""
        for task, n in units.items():
            get_task(task)
            if n < 0:
                raise BibInputError(f"units[{task!r}] must be >= 0, got {n}")
        stream = cls.__new__(cls)
        stream.encoding = Encoding(input, size, tuple(phases))
        stream.open = open
        stream.seed = int(seed)
        made = [(task, i, int(seed)) for task, n in units.items() for i in range(n)]
        stream._units = made if open else [made[i] for i in order(len(made), int(seed))]
        return stream

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = get_worker_info()
        k, m = (info.id, info.num_workers) if info is not None else (0, 1)
        for unit in self._units[k::m]:
            if isinstance(unit, EpisodeRef):
                item = self.encoding.encode(_load(unit))
                if not self.open:
                    item["id"] = blind_id(unit)
                yield item
                continue
            episodes = make_unit(*unit)
            if not self.open:  # which of a pair comes first: drawn from the seed and the unit
                flip = np.random.default_rng([self.seed, unit[1], len(unit[0])]).permutation(len(episodes))
                episodes = [episodes[int(i)] for i in flip]
            for ep in episodes:
                item = self.encoding.encode(ep)
                if not self.open:
                    item["id"] = opaque_id(episode_secret(ep), ep.id)
                yield item


def pad_collate(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Batch items of different sizes: tensors are zero-padded along every axis (time, and the grid's
    height and width, so tasks of different grid sizes mix) and stacked, strings become lists, and each
    ``<phase>_states`` ``[B, steps, C, H, W]`` gets a boolean ``<phase>_mask`` ``[B, steps]`` (real
    states) and ``<phase>_area`` ``[B, H, W]`` (the item's own grid, or frame)."""
    if not items:
        raise BibInputError("pad_collate needs at least one item")
    out: dict[str, Any] = {}
    for key in items[0]:
        values = [it[key] for it in items]
        if not isinstance(values[0], torch.Tensor):
            out[key] = values
            continue
        ranks = sorted({v.dim() for v in values})
        if len(ranks) > 1:
            raise BibInputError(f"pad_collate: {key!r} has {' and '.join(map(str, ranks))} axes in different items")
        shape = [max(v.shape[d] for v in values) for d in range(ranks[0])]
        batch = values[0].new_zeros((len(values), *shape))
        for b, v in enumerate(values):
            batch[(b, *(slice(0, n) for n in v.shape))] = v
        out[key] = batch
        if key.endswith("_states"):
            phase = key[: -len("_states")]
            mask = torch.zeros((len(values), shape[0]), dtype=torch.bool)
            area = torch.zeros((len(values), *shape[-2:]), dtype=torch.bool)
            for b, v in enumerate(values):
                mask[b, : v.shape[0]] = True
                area[b, : v.shape[-2], : v.shape[-1]] = True
            out[f"{phase}_mask"], out[f"{phase}_area"] = mask, area
    return out


def cache_dir() -> Path:
    """Where :func:`load` keeps generated sets: ``$BIB_DATA_CACHE``, else ``$XDG_CACHE_HOME/bib/data``
    (``~/.cache/bib/data``)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "bib" / "data"


def load(name_or_spec: str | os.PathLike[str] | Any, split: str = "all", phases: Sequence[str] = PHASES,
         input: str = "symbolic", size: int = FRAME_SIZE, *, seed: int | None = None, limit: int | None = None,
         conditions: Sequence[str] | None = None, cache: str | os.PathLike[str] | None = None,
         workers: int = 1, open: bool = False, order_seed: int = 0) -> EpisodeDataset:
    """A stimulus set as an :class:`EpisodeDataset`, generated the first time and read from a cache after.

    Nothing is downloaded: the set is built from its spec and seed (as ``bib generate`` builds it,
    without videos) into ``<cache>/<name>-<seed>-<16 hex digits of sha256(spec, limit)>``, and a later
    call with the same spec, seed and limit reads that folder. A set is built beside its place and
    renamed into it when whole, so an interrupted build leaves nothing that a later call would read.

    Args:
        name_or_spec: a built-in set (``bib-eval``, ``bib-ctrl``, ``bib-background``, ...), a spec TOML
            file, or a :class:`bib.stimuli.spec.StimulusSpec`.
        split: ``all``, ``train`` or ``val`` (:data:`SPLITS`).
        phases: as for :class:`EpisodeDataset`.
        input: as for :class:`EpisodeDataset`.
        size: as for :class:`EpisodeDataset`.
        conditions: as for :class:`EpisodeDataset`.
        seed: another seed than the spec's.
        limit: at most this many units per task (as ``bib generate --limit``): a small set to try things.
        cache: the cache folder (default :func:`cache_dir`: ``$BIB_DATA_CACHE`` or the user cache).
        workers: worker processes for the first build.
        open: real ids in id order (see :class:`EpisodeDataset`; default: blind).
        order_seed: the seed of the blind order (``seed`` is the set's).

    Example::

        from bib.data import load

        train = load("bib-background", split="train", phases=["familiarization"], limit=20)
        test = load("bib-ctrl", input="frames", size=64)
    """
    from bib.stimuli.spec import StimulusSpec, load_spec, override, spec_to_toml

    Encoding(input, size, tuple(phases))  # bad options fail before anything is built
    if split not in SPLITS:
        raise BibInputError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if limit is not None and limit < 1:
        raise BibInputError(f"limit must be >= 1, got {limit}")
    spec = name_or_spec if isinstance(name_or_spec, StimulusSpec) else load_spec(name_or_spec)
    if seed is not None:
        spec = override(spec, str(name_or_spec), seed=seed)
    digest = hashlib.sha256(f"{spec_to_toml(spec)}\nlimit = {limit}\n".encode()).hexdigest()[:16]
    folder = Path(cache if cache is not None else cache_dir()) / f"{spec.name}-{spec.seed}-{digest}"
    if not folder.is_dir():
        _build_into(spec, folder, limit, workers)
    return EpisodeDataset(folder, input, size, phases, conditions, split, open=open, seed=order_seed)


def _build_into(spec: Any, folder: Path, limit: int | None, workers: int) -> None:
    """Build ``spec`` beside ``folder`` and rename it into place (another process may win the race: its set is the same)."""
    from bib.stimuli.build import build_spec

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        build_spec(spec, tmp, video=False, workers=workers, limit=limit)
        try:
            os.rename(tmp, folder)
        except OSError:
            if not folder.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


__all__ = ["CACHE_ENV", "CHANNELS", "FRAME_CELL_PX", "FRAME_SIZE", "INPUTS", "LEGACY_CHANNELS", "PHASES", "SPLITS", "Encoding", "EpisodeDataset", "EpisodeStream",
           "blind_id", "cache_dir", "load", "order", "pad_collate"]
