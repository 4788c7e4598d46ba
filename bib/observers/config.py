"""Configs of the learned observers and their training: the dataclasses, their checked reading, and the loader
processes a run uses (below :mod:`bib.observers.learned` and :mod:`bib.observers.training`, which both read
them; a run's torch threads: :func:`bib.observers.device.torch_threads`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from bib.episode import GRID_MAX
from bib.errors import BibInputError


@dataclass
class TrainConfig:
    """How a learned observer is trained (``[train]`` in ``baselines/NAME.toml``).

    Attributes:
        epochs: passes over the training split.
        batch_size: episodes per optimisation step.
        lr: Adam learning rate.
        weight_decay: Adam weight decay.
        grad_clip: gradient-norm clipping threshold.
        seed: seeds ``torch.manual_seed`` and the numpy Generator that shuffles episodes.
        max_episodes: use N episodes spread evenly over the id-sorted background set; 0 = all.
        max_batches: stop each epoch after N batches; 0 = a full pass.
        max_val_episodes: validate on the first N validation episodes; 0 = all.
        threads: torch intra-op threads during training (0 = torch's default).
        loader_workers: processes that load and encode episodes while the main process trains
            (0 = load inline).
        patience: stop after N epochs without a lower validation loss (0 = never stop early).
        pretrain: ``none``, or ``atc``: pretrain a frame encoder with Augmented Temporal Contrast on the training
            split before the behaviour-cloning epochs (:mod:`bib.observers.atc`, ``bib train --pretrain atc``).
        pretrain_epochs: ATC passes over the training episodes.
        pretrain_batches: stop each ATC epoch after N batches; 0 = a full pass.
        pretrain_batch_size: (anchor, positive) frame pairs per ATC step (BIB: 512).
        pretrain_lr: the ATC Adam learning rate (BIB: 1e-4).
        atc_k: the positive is the frame ``atc_k`` steps after the anchor, in the same trial (BIB: the next frame).
        atc_tau: the momentum (EMA) target encoder's update rate per step (BIB: 0.01).
        atc_pad: random-shift augmentation: replicate-pad by this many pixels, crop back at a random offset (BIB: 1).
    """

    epochs: int = 5
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.0
    grad_clip: float = 10.0
    seed: int = 0
    max_episodes: int = 0
    max_batches: int = 0
    max_val_episodes: int = 0
    threads: int = 1
    loader_workers: int = 1
    patience: int = 0
    pretrain: str = "none"
    pretrain_epochs: int = 1
    pretrain_batches: int = 0
    pretrain_batch_size: int = 512
    pretrain_lr: float = 1e-4
    atc_k: int = 1
    atc_tau: float = 0.01
    atc_pad: int = 1


PRETRAINS: tuple[str, ...] = ("none", "atc")
"""``[train] pretrain`` / ``bib train --pretrain``: no pretraining, or ATC (:mod:`bib.observers.atc`)."""


GPU_LOADER_WORKERS = 2
"""Loader processes at least, when a learned observer trains or scores on a CUDA GPU (the GPU would otherwise
wait for batches)."""


def loader_workers(device: str, workers: int) -> int:
    """The loader processes to use for ``workers`` asked on ``device``: at least :data:`GPU_LOADER_WORKERS` on CUDA."""
    return max(workers, GPU_LOADER_WORKERS) if device.startswith("cuda") else workers


def as_is(item: Any) -> Any:
    """The ``collate_fn`` of loaders whose items are already what the caller wants (module-level: picklable)."""
    return item


def config_from_dict(cls: type, values: dict[str, Any], where: str) -> Any:
    """Build dataclass ``cls`` from ``values``, checking names and types.

    Raises:
        BibInputError: naming ``where`` and the field for an unknown field or a wrong type.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    defaults = cls()
    out = {}
    for key, value in values.items():
        if key not in fields:
            raise BibInputError(f"{where}: unknown field {key!r}; known: {', '.join(fields)}")
        default = getattr(defaults, key)
        if isinstance(default, bool) or isinstance(value, bool):  # a bool is not a number, nor a number a bool
            ok = isinstance(value, bool) and isinstance(default, bool)
        elif isinstance(default, float):
            ok = isinstance(value, (int, float)) and math.isfinite(value)
            value = float(value) if ok else value
        elif isinstance(default, (list, tuple)) and _float_list(fields[key]):
            ok = isinstance(value, (list, tuple)) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
            value = [float(v) for v in value] if ok else value
        elif isinstance(default, (list, tuple)):
            ok = isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            value = list(value) if ok else value
        else:
            ok = isinstance(value, type(default))
        if not ok:
            raise BibInputError(f"{where}: field {key!r} expects {type(default).__name__}, got {value!r}")
        out[key] = value
    for key, value in out.items():
        if key in RANGES and not isinstance(value, bool):
            lo, hi, open_low, open_high = RANGES[key]
            if not ((lo < value) if open_low else (lo <= value)) or not ((value < hi) if open_high else (value <= hi)):
                shown = f"{'(' if open_low else '['}{lo:g}, {hi:g}{')' if open_high else ']'}"
                raise BibInputError(f"{where}: field {key!r} must be in {shown}, got {value!r}")
    if "pretrain" in out and out["pretrain"] not in PRETRAINS:
        raise BibInputError(f"{where}: field 'pretrain': expected one of {', '.join(PRETRAINS)}, got {out['pretrain']!r}")
    config = cls(**out)
    if issubclass(cls, InputConfig):  # a model's sizes (a training config's counts are not sizes)
        check_sizes(config, where)
    return config


def _float_list(f: dataclasses.Field) -> bool:
    """True for a field annotated ``list[float]`` (the annotations are strings here: ``from __future__``)."""
    return str(f.type).replace(" ", "") == "list[float]"


#: Ranges of the numbers a model or training config gives (low, high, low excluded, high excluded):
#: ``dropout = 5.0`` or ``-3`` and ``lr = -1`` are refused before anything is built (issue 39; ``lr = 0``
#: stays allowed: a frozen run whose best epoch is the untrained net, tests/test_training_context.py).
RANGES: dict[str, tuple[float, float, bool, bool]] = {
    "dropout": (0.0, 1.0, False, True), "lr": (0.0, 10.0, False, False), "weight_decay": (0.0, 10.0, False, False),
    "grad_clip": (0.0, 1e6, True, False), "epochs": (1, 100_000, False, False), "batch_size": (1, 1 << 16, False, False),
    "seed": (0, 2**64 - 1, False, False), "max_episodes": (0, 10**9, False, False),
    "max_batches": (0, 10**9, False, False), "max_val_episodes": (0, 10**9, False, False),
    "threads": (0, 1024, False, False), "loader_workers": (0, 256, False, False),
    "pretrain_epochs": (1, 100_000, False, False), "pretrain_batches": (0, 10**9, False, False),
    "pretrain_batch_size": (2, 1 << 16, False, False), "pretrain_lr": (0.0, 10.0, True, False),
    "atc_k": (1, 1000, False, False), "atc_tau": (0.0, 1.0, True, False), "atc_pad": (0, 16, False, False),
}


SIZE_MAX = 4096
"""Largest layer width, embedding, hidden size or image side a learned model's config may give: the
sizes are checked before anything is allocated (a checkpoint's config could ask for terabytes)."""


def check_sizes(config: Any, where: str) -> None:
    """BibInputError unless every size of ``config`` is in range: ``grid`` 1 to :data:`bib.episode.GRID_MAX`
    cells a side, ``cell_px`` 1 to 64, every other integer or list of integers (but the seed) 1 to
    :data:`SIZE_MAX`."""
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name == "seed" or isinstance(value, bool) or not isinstance(value, (int, list)) or _float_list(f):
            continue
        top = {"grid": GRID_MAX, "cell_px": 64}.get(f.name, SIZE_MAX)
        values = value if isinstance(value, list) else [value]
        if (f.name == "grid" and len(values) != 2) or not all(1 <= v <= top for v in values):
            shape = "two integers" if f.name == "grid" else "integers" if isinstance(value, list) else "an integer"
            raise BibInputError(f"{where}: field {f.name!r}: expected {shape} from 1 to {top}, got {value!r}"[:300])


@dataclass
class InputConfig:
    """Fields every learned model shares.

    Attributes:
        input: ``symbolic`` (fast default) or ``frames`` (see :class:`bib.observers.encoders.InputSpec`).
        image_size: frame side in pixels (``frames``; BIB: 84).
        cell_px: render cell size before resizing (``frames``).
        grid: ``[width, height]`` of the symbolic grid.
        embed: state embedding size.
        symbolic_hidden: hidden units of the symbolic state MLP.
        seed: ``torch.manual_seed`` for the initial weights.
        normalize: ``frames``: the input normalisation, ``none`` (BIB's: pixels / 255), ``imagenet`` or ``dataset``
            (:data:`bib.observers.encoders.NORMALIZATIONS`).
        pixel_mean, pixel_std: the per-channel (R, G, B) numbers ``normalize`` uses, filled in when the observer is
            built (``imagenet``) or trained (``dataset``: measured on the training frames), so the checkpoint
            records them; empty for ``none``.
    """

    input: str = "symbolic"
    image_size: int = 84
    cell_px: int = 8
    grid: list[int] = field(default_factory=lambda: [10, 10])
    embed: int = 128
    symbolic_hidden: int = 256
    seed: int = 0
    normalize: str = "none"
    pixel_mean: list[float] = field(default_factory=list)
    pixel_std: list[float] = field(default_factory=list)
