"""The learned-observer base: configs, batched per-step surprise, and safe checkpoints (weights_only).

A checkpoint is ``torch.save({"state_dict": ..., "config": {...}})`` where ``config`` holds only
JSON types: ``format`` (``bib.checkpoint/1``), ``observer`` (registry name), ``model`` (the model
config), ``train`` (the training config), ``metrics``, ``vocabulary`` (the sprite shapes of
:mod:`bib.vocabulary` in channel order; a checkpoint trained with another vocabulary is refused,
one written before checkpoints recorded it is taken to have
:data:`bib.vocabulary.LEGACY_VOCABULARY`) and ``channels`` (the input channels the model was fed,
:attr:`~bib.observers.encoders.InputSpec.channel_names`; one written before checkpoints recorded them was fed
:data:`~bib.observers.encoders.LEGACY_SYMBOLIC_CHANNELS` and is fed them still, the first channels of today's
states; a list that is not the first channels of today's is refused). It is read with
``torch.load(..., weights_only=True)``, so a file holding any pickled object is refused instead of
executing code.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from bib.episode import Episode
from bib.errors import BibInputError
from bib.observers.base import BaseObserver, weights_mismatch
from bib.observers.config import (  # noqa: F401 - re-exported: learned observers and their users import them here
    GPU_LOADER_WORKERS,
    SIZE_MAX,
    InputConfig,
    TrainConfig,
    as_is,
    check_sizes,
    config_from_dict,
    loader_workers,
)
from bib.observers.device import torch_threads
from bib.observers.encoders import (
    FRAME_CHANNELS,
    LEGACY_SYMBOLIC_CHANNELS,
    Batch,
    EncodedEpisode,
    InputSpec,
    channel_difference,
    collate,
    encode_episode,
)
from bib.observers.registry import LEARNED, learned_class, register_learned  # noqa: F401 - re-exported
from bib.observers.trainable import save_checkpoint
from bib.observers.training import fit_episodes
from bib.vocabulary import LEGACY_VOCABULARY, checkpoint_vocabulary, vocabulary_difference

FORMAT = "bib.checkpoint/1"

class _Encoded(torch.utils.data.Dataset):
    """The scoring loader's items: one encoded episode each (:func:`~bib.observers.encoders.encode_episode`). Each
    loader process keeps its own cache, so a trial that several of its episodes show is rendered once there."""

    def __init__(self, spec: InputSpec, episodes: Sequence[Episode]) -> None:
        self.spec = spec
        self.episodes = episodes
        self.cache: dict[Any, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.episodes)

    def __getitem__(self, k: int) -> EncodedEpisode:
        return encode_episode(self.episodes[k], self.spec, self.cache)


class LearnedObserver(BaseObserver):
    """A torch observer: ``net.step_errors(batch)`` gives one error per test step, used both as the
    training loss terms and as the surprise.

    Subclasses set ``name`` and ``Config`` (a dataclass extending :class:`InputConfig`) and
    implement :meth:`build_net`.
    """

    name: ClassVar[str] = "learned"
    Config: ClassVar[type] = InputConfig
    score_batch: int = 32
    threads: int = 1
    device: str = "cpu"
    """Where the network runs (:meth:`to_device`; ``bib score`` / ``bib train --device``)."""
    score_workers: int = 0
    """Loader processes that encode episodes while scoring (:meth:`score_batches`); 0: inline. On CUDA at
    least :data:`GPU_LOADER_WORKERS`."""

    def __init__(self, config: Any | None = None, *, channels: Sequence[str] = (), **overrides: Any) -> None:
        """Build an untrained observer from ``config`` (a ``Config``) and/or field overrides. ``channels``: the input
        channels it is fed (:attr:`~bib.observers.encoders.InputSpec.channel_names`; empty, the default: all of
        today's; a checkpoint's record when it is loaded)."""
        if config is None:
            config = config_from_dict(self.Config, overrides, f"observer {self.name}")
        elif overrides:
            config = dataclasses.replace(config, **overrides)
        self.spec = InputSpec(config.input, config.image_size, config.cell_px, tuple(config.grid), config.normalize,
                              tuple(config.pixel_mean), tuple(config.pixel_std), tuple(channels))
        # the numbers normalize resolved to (ImageNet's, or a dataset's measured ones) are the config's record
        self.config = dataclasses.replace(config, pixel_mean=list(self.spec.pixel_mean),
                                          pixel_std=list(self.spec.pixel_std))
        torch.manual_seed(config.seed)
        self.net = self.build_net()
        if self.spec.input == "frames":  # convolutions over frames run ~1.6x faster channels-last on CPU
            self.net.to(memory_format=torch.channels_last)
        self.net.eval()

    def build_net(self) -> nn.Module:
        """The network (with a ``step_errors(batch) -> [Q]`` method)."""
        raise NotImplementedError

    def set_pixel_statistics(self, mean: Sequence[float], std: Sequence[float]) -> None:
        """Use ``mean`` / ``std`` (per channel, R, G, B) as the frame normalisation of a ``normalize = "dataset"``
        observer (measured by ``bib train``): in the config (so the checkpoint records them), the input spec and the
        encoder."""
        self.spec = dataclasses.replace(self.spec, pixel_mean=tuple(mean), pixel_std=tuple(std))
        self.config = dataclasses.replace(self.config, pixel_mean=list(self.spec.pixel_mean),
                                          pixel_std=list(self.spec.pixel_std))
        self.net.encoder.set_normalization(self.spec.pixel_mean, self.spec.pixel_std)

    def to_device(self, device: str) -> LearnedObserver:
        """Move the network to ``device`` (a resolved torch device, :func:`bib.observers.device.resolve_device`);
        batches follow it in :meth:`step_errors`."""
        self.device = str(device)
        self.net.to(self.device)
        return self

    @classmethod
    def create(cls, checkpoint: Path | None = None, **config: Any) -> LearnedObserver:
        """Registry factory: load ``checkpoint``, or build an untrained observer from ``config``."""
        if checkpoint is not None:
            if config:
                raise BibInputError(f"observer {cls.name}: options {sorted(config)} cannot be combined with a checkpoint")
            return load_observer(checkpoint, expected=cls.name)
        return cls(**config)

    def encode(self, episode: Episode, cache: dict[Any, np.ndarray] | None = None) -> EncodedEpisode:
        """The episode's states and actions under this observer's input spec (``cache``: see
        :func:`~bib.observers.encoders.encode_episode`)."""
        return encode_episode(episode, self.spec, cache)

    def step_errors(self, batch: Batch) -> torch.Tensor:
        """Per test-step errors of a batch (with gradients when the net is in training mode)."""
        if self.device != "cpu":  # the CPU path moves nothing
            batch = batch.to(torch.device(self.device), non_blocking=True)
        return self.net.step_errors(batch)

    def surprise_many(self, episodes: Sequence[Episode]) -> list[np.ndarray]:
        """Per-step surprise of each episode, batched ``score_batch`` episodes at a time.

        Frame batches render and store a trial shown by several episodes of the batch once (the
        two episodes of a pair share their familiarization; ``bib score`` keeps pairs together).
        """
        self.net.eval()
        out: list[np.ndarray] = []
        with torch.inference_mode(), torch_threads(self.threads):
            for batch in self.score_batches(episodes):
                errors = self.step_errors(batch).double().cpu().numpy()
                out += np.split(errors, np.cumsum(batch.query_counts)[:-1])
        return out

    def score_batches(self, episodes: Sequence[Episode]) -> Iterator[Batch]:
        """The collated batches of ``episodes``, ``score_batch`` at a time, in order.

        Inline on the CPU (``score_workers = 0``, the default: each batch with its own cache of rendered
        trials). With loader processes (on CUDA always, at least :data:`GPU_LOADER_WORKERS`), a torch
        ``DataLoader`` encodes the episodes in those processes, in order, while the main process collates and
        the GPU works; on CUDA each batch is then copied into pinned (page-locked) memory, from which
        :meth:`step_errors` copies it to the GPU without blocking. A daemonic process (a dask or
        ``multiprocessing.Pool`` worker), which may not start processes, encodes inline. The batches are the
        same either way (a trial rendered once or twice gives the same pictures; :func:`collate` stores it
        once by its key).
        """
        size = self.score_batch
        pin = self.device.startswith("cuda")
        workers = min(loader_workers(self.device, self.score_workers), len(episodes))
        if multiprocessing.current_process().daemon:
            workers = 0  # a daemonic process (a dask or multiprocessing.Pool worker) may not start any
        if workers <= 0:
            for start in range(0, len(episodes), size):
                cache: dict[Any, np.ndarray] = {}
                batch = collate([self.encode(ep, cache) for ep in episodes[start : start + size]])
                yield batch.pin_memory() if pin else batch
            return
        loader = torch.utils.data.DataLoader(_Encoded(self.spec, episodes), batch_size=None, shuffle=False,
                                             num_workers=workers, collate_fn=as_is)
        encoded = iter(loader)
        for start in range(0, len(episodes), size):
            batch = collate([next(encoded) for _ in episodes[start : start + size]])
            yield batch.pin_memory() if pin else batch

    def surprise(self, episode: Episode) -> np.ndarray:
        """Per-step surprise of the test trial (``episode.test.n_steps`` values)."""
        return self.surprise_many([episode])[0]

    def fit(self, background_episodes: Sequence[Episode], train: TrainConfig | None = None) -> None:
        """Train on in-memory episodes (80/20 split by sorted id); ``bib train`` streams from disk instead."""
        fit_episodes(self, background_episodes, train or TrainConfig())

    def checkpoint(self, train: TrainConfig | None = None, metrics: dict[str, Any] | None = None) -> dict[str, Any]:
        """The checkpoint dict: the state dict and a JSON-serialisable config."""
        return {
            "state_dict": {k: v.detach().cpu().clone() for k, v in self.net.state_dict().items()},
            "config": {
                "format": FORMAT,
                "observer": self.name,
                "model": dataclasses.asdict(self.config),
                "train": dataclasses.asdict(train) if train is not None else None,
                "metrics": metrics or {},
                "vocabulary": checkpoint_vocabulary(),
                "channels": list(self.spec.channel_names),
            },
        }

    def save(self, path: str | Path, train: TrainConfig | None = None, metrics: dict[str, Any] | None = None) -> None:
        """Write the checkpoint to ``path`` atomically."""
        save_checkpoint(self.checkpoint(train, metrics), path)


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint with ``weights_only=True`` and check its layout.

    Raises:
        BibInputError: the file is missing, holds pickled objects, or is not a bib checkpoint.
    """
    from bib.io import load_weights

    p = Path(path)
    ckpt = load_weights(p)
    if not (isinstance(ckpt, dict) and isinstance(ckpt.get("state_dict"), dict) and isinstance(ckpt.get("config"), dict)):
        raise BibInputError(f"{p}: not a bib checkpoint (expected a dict with 'state_dict' and 'config')")
    cfg = ckpt["config"]
    if cfg.get("format") != FORMAT:
        raise BibInputError(f"{p}: config field 'format': expected {FORMAT!r}, got {cfg.get('format')!r}")
    stored = cfg.get("vocabulary", LEGACY_VOCABULARY)  # checkpoints older than the record used the legacy one
    diff = vocabulary_difference(stored) if isinstance(stored, dict) else "unreadable"
    if diff:
        raise BibInputError(f"{p}: checkpoint was trained with another sprite vocabulary ({diff}); retrain it")
    return ckpt


def load_observer(path: str | Path, expected: str | None = None) -> LearnedObserver:
    """Rebuild a trained observer from a checkpoint.

    Args:
        path: the checkpoint file.
        expected: the observer name the caller asked for; a checkpoint of another observer is refused.

    Raises:
        BibInputError: an unloadable checkpoint, a name mismatch or weights that do not fit the model.
    """
    ckpt = read_checkpoint(path)
    cfg = ckpt["config"]
    name = cfg.get("observer")
    if expected is not None and name != expected:
        raise BibInputError(f"{path}: checkpoint is for observer {name!r}, not {expected!r}")
    cls = learned_class(str(name))
    model = config_from_dict(cls.Config, cfg.get("model") or {}, f"{path}: config.model")
    obs = cls(model, channels=checkpoint_channels(cfg, model.input, path))
    try:
        obs.net.load_state_dict(ckpt["state_dict"])
    except RuntimeError as exc:
        raise BibInputError(f"{path}: weights do not fit the {name} model ({weights_mismatch(exc)})") from None
    obs.net.eval()
    obs.metrics = dict(cfg.get("metrics") or {})
    obs.train_config = dict(cfg.get("train") or {})
    return obs


def checkpoint_channels(config: dict[str, Any], kind: str, path: str | Path) -> tuple[str, ...]:
    """The input channels a checkpoint's model was trained on (its ``config["channels"]``; one written before
    checkpoints recorded them: :data:`~bib.observers.encoders.LEGACY_SYMBOLIC_CHANNELS`, or the frames' RGB).

    Raises:
        BibInputError: a record this bib cannot feed (an unknown, missing or reordered channel:
            :func:`~bib.observers.encoders.channel_difference`), in one line naming the difference.
    """
    stored = config.get("channels", LEGACY_SYMBOLIC_CHANNELS if kind == "symbolic" else FRAME_CHANNELS)
    if diff := channel_difference(kind, stored):
        raise BibInputError(f"{path}: checkpoint was trained with other input channels ({diff}); retrain it")
    return tuple(stored)
