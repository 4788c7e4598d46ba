"""Inputs of the learned observers: per-step states (symbolic grids or 84 x 84 frames), batches, encoders.

A trial with path ``p_0 .. p_n`` gives ``n + 1`` states ``s_0 .. s_n`` (the agent at ``p_i``, the
key and barriers as they are after the events up to step ``i``) and ``n + 1`` actions: ``a_i`` is
the move from ``p_i`` to ``p_{i+1}`` and the terminal state carries ``stay``. Context trials use all
``n + 1`` (state, action) samples; the test trial's query ``i`` (``0 <= i < n``) predicts ``a_i``
from ``s_i``, so the observers give exactly ``n`` values per test trial (the Observer protocol's
step ``i + 1`` is the move ``a_i``).

Two state sources:

* ``symbolic`` (the fast default): a ``C x H x W`` float grid (:data:`SYMBOLIC_CHANNELS`) with
  walls, barriers, lock, key, home pad, agent, key carried, the identity features of objects
  (sprite shape one-hot + RGB) and of the agent (shape one-hot + RGB) on their cells, and the mud
  and the occluder (the cells each covers, as the frames draw them).
* ``frames``: the trial rendered by :mod:`bib.render.frames` at ``cell_px`` pixels per cell with
  the agent on ``p_i``, resized to ``image_size`` (BIB: 84 x 84), RGB in [0, 1].

**One frame convention** (issue 42): a state becomes pixels through :func:`frame_states` only, for the learned
observers, :mod:`bib.data` (``input="frames"``) and the Gymnasium environments (``obs_type="frames"``): the layout
drawn by :mod:`bib.render.frames` at :data:`FRAME_CELL_PX` (8) pixels per cell, resized to ``image_size x
image_size`` with OpenCV's area interpolation (a 10 x 10 grid: 80 px up to 84), RGB in that channel order, uint8 0-255
``[n, 3, S, S]`` (channels-last memory); as model input float32 = uint8 / 255, in [0, 1] (:func:`frame_floats`,
``Batch.dense``), then the config's normalisation (:data:`NORMALIZATIONS`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bib.episode import Episode, Trial
from bib.errors import BibInputError
from bib.vocabulary import AGENT_SHAPES, OBJECT_SHAPES
from bib.world.dynamics import ACTIONS, STAY, action_between

INPUTS = ("symbolic", "frames")

FRAME_CELL_PX = 8
"""Pixels per grid cell a frame is drawn at before it is resized to its side (the one frame convention, above)."""
FRAME_SIZE = 84
"""A frame's side in pixels by default (BIB's 84 x 84)."""

NORMALIZATIONS: tuple[str, ...] = ("none", "imagenet", "dataset")
"""How a frame's floats in [0, 1] are normalised before the conv encoder (``normalize`` in ``[model]``): ``none``
(BIB's baselines: ``atc/models.py`` and ``atc/datasets.py`` divide by 255 and nothing more), ``imagenet``
(torchvision's published per-channel mean and std, :data:`IMAGENET_MEAN` / :data:`IMAGENET_STD`) or ``dataset``
(the per-channel mean and std of the training frames, measured by ``bib train`` before training,
:func:`frame_statistics`). The numbers used are the config's ``pixel_mean`` / ``pixel_std``, so the checkpoint
records them."""
IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
"""torchvision's ImageNet channel means (R, G, B), for ``normalize = "imagenet"``."""
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)
"""torchvision's ImageNet channel standard deviations (R, G, B), for ``normalize = "imagenet"``."""
STAT_DECIMALS = 6
"""Measured channel statistics are rounded to this many decimals (the config records them as JSON)."""


def pixel_normalization(normalize: str, mean: Sequence[float] = (), std: Sequence[float] = ()
                        ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The per-channel ``(mean, std)`` a frame encoder applies under ``normalize`` (:data:`NORMALIZATIONS`), given the
    config's ``pixel_mean`` / ``pixel_std`` (empty: not given). ``none`` gives ``()`` (nothing applied);
    ``imagenet`` the published numbers; ``dataset`` the given ones, or ``()`` while they are not measured yet.

    Raises:
        BibInputError: an unknown ``normalize``, numbers given with ``none`` or other than ImageNet's with
            ``imagenet``, lists that are not 3 finite numbers each, or a std that is not positive.
    """
    if normalize not in NORMALIZATIONS:
        raise BibInputError(f"config field 'normalize': expected one of {', '.join(NORMALIZATIONS)}, got {normalize!r}")
    mean, std = tuple(float(v) for v in mean), tuple(float(v) for v in std)
    if (len(mean) == 0) != (len(std) == 0) or (mean and (len(mean) != 3 or len(std) != 3)):
        raise BibInputError(f"config fields 'pixel_mean'/'pixel_std': expected 3 numbers each (R, G, B) or none, "
                            f"got {list(mean)!r} and {list(std)!r}")
    if mean and not (all(np.isfinite(mean)) and all(np.isfinite(std)) and min(std) > 0):
        raise BibInputError(f"config field 'pixel_std': expected positive finite numbers, got {list(std)!r}")
    if normalize == "none":
        if mean:
            raise BibInputError("config fields 'pixel_mean'/'pixel_std' are given but normalize = \"none\"")
        return (), ()
    if normalize == "imagenet":
        if mean and (mean, std) != (IMAGENET_MEAN, IMAGENET_STD):
            raise BibInputError(f"config fields 'pixel_mean'/'pixel_std' differ from ImageNet's {list(IMAGENET_MEAN)} / "
                                f"{list(IMAGENET_STD)} under normalize = \"imagenet\" (use \"dataset\" for your own)")
        return IMAGENET_MEAN, IMAGENET_STD
    return mean, std


def frame_statistics(frames: Sequence[np.ndarray]) -> tuple[list[float], list[float]]:
    """Per-channel mean and standard deviation of the pixels of ``frames`` (uint8 ``[n, 3, H, W]`` arrays), as floats
    in [0, 1] rounded to :data:`STAT_DECIMALS` decimals (a std of 0 becomes 1: a flat channel is left as it is)."""
    total = np.zeros(3)
    square = np.zeros(3)
    count = 0
    for f in frames:
        x = np.asarray(f, dtype=np.float64) / 255.0
        total += x.sum(axis=(0, 2, 3))
        square += (x * x).sum(axis=(0, 2, 3))
        count += x.shape[0] * x.shape[2] * x.shape[3]
    if count == 0:
        raise BibInputError("no frames to measure the pixel statistics of")
    mean = total / count
    std = np.sqrt(np.maximum(square / count - mean * mean, 0.0))
    std = np.where(std > 0, std, 1.0)
    return [round(float(v), STAT_DECIMALS) for v in mean], [round(float(v), STAT_DECIMALS) for v in std]

_STATIC = ("wall", "barrier", "lock", "key", "home")
_DYNAMIC = ("agent", "carrying")
LEGACY_SYMBOLIC_CHANNELS: tuple[str, ...] = (
    *_STATIC,
    *(f"object:{s}" for s in OBJECT_SHAPES),
    "object:r",
    "object:g",
    "object:b",
    *_DYNAMIC,
    *(f"agent:{s}" for s in AGENT_SHAPES),
    "agent:r",
    "agent:g",
    "agent:b",
)
"""The channels of a symbolic state before ``mud`` and ``occluder`` were appended: what a checkpoint written before
checkpoints recorded their channels was trained with (its model is fed these, the first
``len(LEGACY_SYMBOLIC_CHANNELS)`` of :data:`SYMBOLIC_CHANNELS`)."""
SYMBOLIC_CHANNELS: tuple[str, ...] = (*LEGACY_SYMBOLIC_CHANNELS, "mud", "occluder")
"""Channel names of a symbolic state, in order. New channels are appended (never inserted), so a model trained on a
shorter list is fed the first channels of a state (:attr:`InputSpec.channel_names`). ``mud``: 1 on every mud cell of
the trial's layout (:attr:`bib.world.grid.Layout.terrain`, :mod:`bib.world.terrain`); ``occluder``: 1 on every cell the
trial's occluder covers (:attr:`bib.world.occluder.Occluder.cells`)."""
FRAME_CHANNELS: tuple[str, ...] = ("r", "g", "b")
"""Channel names of a frame (RGB, in that order)."""
_CH = {name: i for i, name in enumerate(SYMBOLIC_CHANNELS)}


def channel_difference(kind: str, names: Sequence[str]) -> str:
    """Why a model trained on the channels ``names`` cannot be fed by this bib for input ``kind`` (``symbolic`` or
    ``frames``; '' when it can).

    Symbolic: ``names`` must be the first channels of :data:`SYMBOLIC_CHANNELS`, at least the legacy ones
    (:data:`LEGACY_SYMBOLIC_CHANNELS`); frames: exactly :data:`FRAME_CHANNELS`.
    """
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        return "unreadable"  # a checkpoint's record that is not a list of names
    names = list(names)
    known = SYMBOLIC_CHANNELS if kind == "symbolic" else FRAME_CHANNELS
    unknown = [n for n in names if n not in known]
    if unknown:
        return f"unknown {', '.join(unknown)}"
    required = LEGACY_SYMBOLIC_CHANNELS if kind == "symbolic" else FRAME_CHANNELS
    missing = [n for n in required if n not in names]
    if missing:
        return f"missing {', '.join(missing)}"
    if names != list(known[: len(names)]):
        at = next(i for i, (a, b) in enumerate(zip(names, known)) if a != b)
        return f"reordered: channel {at} is {names[at]}, here {known[at]}"
    return ""

ACTION_VECTORS = np.asarray(ACTIONS, dtype=np.float32)
"""Action index -> (dx, dy) as float32 (index 8, stay, is (0, 0))."""


@dataclass(frozen=True)
class InputSpec:
    """How states are made.

    Attributes:
        input: ``symbolic`` or ``frames``.
        image_size: side of a frame in pixels (``frames`` only; BIB: 84).
        cell_px: render cell size before resizing (``frames`` only).
        grid: ``(width, height)`` of the symbolic grid; episodes of another size are refused.
        normalize: ``frames`` only: ``none``, ``imagenet`` or ``dataset`` (:data:`NORMALIZATIONS`).
        pixel_mean, pixel_std: the per-channel numbers of ``normalize`` (:func:`pixel_normalization`; empty for
            ``none`` and for a ``dataset`` not measured yet).
        channel_names: the channels a model is fed, the one place that decides how many it gets (:attr:`channels`):
            symbolic, the first ones of :data:`SYMBOLIC_CHANNELS` (all of them unless a checkpoint trained on fewer
            says so: :func:`encode_episode` slices the states); frames, :data:`FRAME_CHANNELS`. Empty (the default):
            the full list of ``input``.
    """

    input: str = "symbolic"
    image_size: int = FRAME_SIZE
    cell_px: int = FRAME_CELL_PX
    grid: tuple[int, int] = (10, 10)
    normalize: str = "none"
    pixel_mean: tuple[float, ...] = ()
    pixel_std: tuple[float, ...] = ()
    channel_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.input not in INPUTS:
            raise BibInputError(f"config field 'input': expected one of {', '.join(INPUTS)}, got {self.input!r}")
        names = tuple(self.channel_names) or (SYMBOLIC_CHANNELS if self.input == "symbolic" else FRAME_CHANNELS)
        if diff := channel_difference(self.input, names):
            raise BibInputError(f"input channels: {diff} (a model is fed the first channels of today's {self.input} "
                                "states)")
        object.__setattr__(self, "channel_names", names)
        if self.image_size < 8 or self.cell_px < 4:
            raise BibInputError(f"config fields 'image_size'/'cell_px' too small: {self.image_size}, {self.cell_px}")
        if self.input == "symbolic" and (self.normalize != "none" or self.pixel_mean or self.pixel_std):
            raise BibInputError(f"config field 'normalize': {self.normalize!r} applies to input = \"frames\" only "
                                "(symbolic grids are not normalised)")
        mean, std = pixel_normalization(self.normalize, self.pixel_mean, self.pixel_std)
        object.__setattr__(self, "pixel_mean", mean)
        object.__setattr__(self, "pixel_std", std)

    @property
    def channels(self) -> int:
        """Channels of one state: ``len(channel_names)``."""
        return len(self.channel_names)

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of one state."""
        if self.input == "symbolic":
            return (self.channels, self.grid[1], self.grid[0])
        return (self.channels, self.image_size, self.image_size)


def trial_actions(trial: Trial) -> np.ndarray:
    """Action index at each of the ``n + 1`` states of ``trial`` (the last one is stay)."""
    acts = [action_between(a, b) for a, b in zip(trial.path, trial.path[1:])]
    if any(a is None for a in acts):
        raise BibInputError("trial path has a jump between non-adjacent cells")
    return np.asarray([*acts, STAY], dtype=np.int64)


def _status(trial: Trial) -> tuple[np.ndarray, np.ndarray]:
    """Per state: key picked up, lock opened (booleans of length ``n + 1``)."""
    steps = np.arange(len(trial.path))
    pickup, unlock = trial.pickup_step(), trial.unlock_step()
    picked = steps >= pickup if pickup is not None else np.zeros(len(steps), bool)
    opened = steps >= unlock if unlock is not None else np.zeros(len(steps), bool)
    return picked, opened


STATIC_CHANNELS: tuple[int, ...] = tuple(_CH[n] for n in SYMBOLIC_CHANNELS if not n.startswith(("agent", "carrying")))
"""Channels of the layout (the same for every state with the same key / lock status)."""
DYNAMIC_CHANNELS: tuple[int, ...] = tuple(_CH[n] for n in SYMBOLIC_CHANNELS if n.startswith(("agent", "carrying")))
"""Channels that are non-zero only on the agent's cell: agent, carrying, agent shape, agent RGB."""


@dataclass
class SymbolicTrial:
    """The symbolic states of one trial in factored form (a state = layout variant + agent cell).

    Attributes:
        variants: ``[K, C, H, W]`` layouts (dynamic channels zero); K <= 3 (key status x lock status).
        variant: ``[n + 1]`` the variant shown at each state.
        cells: ``[n + 1]`` the agent's flat cell index ``y * W + x``.
        dynamic: ``[n + 1, len(DYNAMIC_CHANNELS)]`` the agent's channel values on its cell.
    """

    variants: np.ndarray
    variant: np.ndarray
    cells: np.ndarray
    dynamic: np.ndarray


def symbolic_trial(trial: Trial) -> SymbolicTrial:
    """The ``n + 1`` symbolic states of ``trial`` in factored form."""
    lay = trial.layout
    static = np.zeros((len(SYMBOLIC_CHANNELS), lay.height, lay.width), dtype=np.float32)

    def put(channel: str, cells) -> None:
        for x, y in cells:
            static[_CH[channel], y, x] = 1.0

    put("wall", lay.walls)
    put("barrier", lay.barriers)
    put("home", [lay.agent.home])
    if lay.lock is not None:
        put("lock", [lay.lock])
    if lay.key is not None:
        put("key", [lay.key])
    for obj in lay.objects:
        x, y = obj.cell
        static[_CH[f"object:{obj.shape}"], y, x] = 1.0
        static[[_CH["object:r"], _CH["object:g"], _CH["object:b"]], y, x] = np.asarray(obj.color) / 255.0
    put("mud", lay.terrain)
    if trial.occluder is not None:
        put("occluder", trial.occluder.cells)
    picked, opened = _status(trial)
    status = picked.astype(int) + 2 * opened.astype(int)
    kinds, variant = np.unique(status, return_inverse=True)
    variants = np.repeat(static[None], len(kinds), axis=0)
    for k, kind in enumerate(kinds):
        if kind & 1:
            variants[k, _CH["key"]] = 0.0
        if kind & 2:
            variants[k, [_CH["barrier"], _CH["lock"]]] = 0.0
    agent = lay.agent
    ident = np.zeros(len(DYNAMIC_CHANNELS), dtype=np.float32)
    names = [SYMBOLIC_CHANNELS[c] for c in DYNAMIC_CHANNELS]
    ident[names.index("agent")] = 1.0
    if f"agent:{agent.shape}" in names:
        ident[names.index(f"agent:{agent.shape}")] = 1.0
    for k, c in zip(("r", "g", "b"), agent.color):
        ident[names.index(f"agent:{k}")] = c / 255.0
    dynamic = np.repeat(ident[None], len(trial.path), axis=0)
    dynamic[:, names.index("carrying")] = (picked & ~opened).astype(np.float32)
    cells = np.asarray([y * lay.width + x for x, y in trial.path], dtype=np.int64)
    return SymbolicTrial(variants, variant.astype(np.int64), cells, dynamic)


def densify(variants, variant, cells, dynamic):
    """Dense ``[N, C, H, W]`` states from the factored form (numpy arrays or torch tensors alike)."""
    out = variants[variant]  # advanced indexing copies
    width = out.shape[-1]
    rows = np.arange(out.shape[0])
    for j, ch in enumerate(DYNAMIC_CHANNELS):
        out[rows, ch, cells // width, cells % width] = dynamic[:, j]
    return out


def symbolic_states(trial: Trial) -> np.ndarray:
    """The ``n + 1`` dense symbolic states of ``trial``: float32 ``[n + 1, C, H, W]``."""
    st = symbolic_trial(trial)
    return densify(st.variants, st.variant, st.cells, st.dynamic)


def frame_states(trial: Trial, image_size: int = FRAME_SIZE, cell_px: int = FRAME_CELL_PX) -> np.ndarray:
    """The ``n + 1`` rendered states of ``trial``: uint8 ``[n + 1, 3, S, S]`` with ``S = image_size``: the one frame
    convention (the module docstring), for the learned observers, :mod:`bib.data` and :mod:`bib.envs`.

    Frames come from the trial painter of :mod:`bib.render.frames` (the same pictures as the
    videos, at ``cell_px``) with the agent standing on each path cell, resized (OpenCV's area
    interpolation) straight into one buffer (:func:`bib.render.frames.step_pictures`). The memory is
    channels-last (``[n + 1, S, S, 3]`` transposed, as torch's ``channels_last`` format lays out a
    ``[N, C, H, W]`` tensor), so :func:`collate` copies it into a batch without reordering.
    """
    from bib.render.frames import step_pictures

    return step_pictures(trial, cell_px, image_size).frames.transpose(0, 3, 1, 2)


def frame_floats(frames: np.ndarray) -> np.ndarray:
    """uint8 frames (:func:`frame_states`) as a model reads them: float32 ``frames / 255``, in [0, 1] (what
    ``Batch.dense`` computes in torch: the same float32 division)."""
    return frames.astype(np.float32) / np.float32(255.0)


def trial_key(trial: Trial) -> tuple[Any, ...]:
    """What a trial's pictures and actions depend on (layout, path, events): equal keys, equal states."""
    return (trial.layout, trial.path, trial.events)


@dataclass
class EncodedEpisode:
    """One episode as arrays: the states of every trial concatenated, trial by trial.

    Symbolic episodes keep the factored form (``variants``, ``variant``, ``cells``, ``dynamic``,
    see :class:`SymbolicTrial`, with ``variant`` indexing the episode's ``variants``); frame
    episodes keep ``frames``.

    Attributes:
        id: the episode id.
        actions: ``[S]`` action index at each state.
        lengths: states per trial (``n_t + 1``); the last trial is the test trial.
        frames: ``[S, 3, H, W]`` uint8 (channels-last memory, see :func:`frame_states`), or None.
        variants, variant, cells, dynamic: the factored symbolic states, or None.
        keys: per trial, its :func:`trial_key` (frame episodes), so :func:`collate` stores the
            states of equal trials once (a pair's shared familiarization); None: no sharing.
        backgrounds: frame episodes: uint8 ``[G, 3, H, W]`` the pictures without the agent that the
            frames are made of (:class:`bib.render.frames.StepPictures`), trial by trial.
        background: ``[S]`` the background of each state (an index into ``backgrounds``).
        boxes: ``[S, 4]`` ``(y0, y1, x0, x1)``: outside it a state's frame equals its background.
        n_backgrounds: backgrounds per trial.
    """

    id: str
    actions: np.ndarray
    lengths: list[int]
    frames: np.ndarray | None = None
    variants: np.ndarray | None = None
    variant: np.ndarray | None = None
    cells: np.ndarray | None = None
    dynamic: np.ndarray | None = None
    keys: list[Any] | None = None
    backgrounds: np.ndarray | None = None
    background: np.ndarray | None = None
    boxes: np.ndarray | None = None
    n_backgrounds: list[int] | None = None


def encode_episode(ep: Episode, spec: InputSpec, cache: dict[Any, np.ndarray] | None = None) -> EncodedEpisode:
    """States and actions of every trial of ``ep`` under ``spec``.

    ``cache`` (frames only): trial key -> rendered states, shared between the episodes of one
    batch, so a trial that several episodes show (a pair's familiarization) is rendered once.

    Raises:
        BibInputError: when the episode has no familiarization trial, or its grid does not match
            the symbolic grid size of ``spec``.
    """
    if len(ep.trials) < 2:
        raise BibInputError(f"episode {ep.id}: learned observers need familiarization trials and a test trial")
    actions = np.concatenate([trial_actions(t) for t in ep.trials])
    lengths = [len(t.path) for t in ep.trials]
    if spec.input == "frames":
        from bib.render.frames import step_pictures

        keys = [trial_key(t) for t in ep.trials]
        store = {} if cache is None else cache
        parts = []
        for key, t in zip(keys, ep.trials):
            if key not in store:
                store[key] = step_pictures(t, spec.cell_px, spec.image_size)
            parts.append(store[key])
        offsets = np.cumsum([0] + [len(p.backgrounds) for p in parts])
        return EncodedEpisode(
            ep.id, actions, lengths, keys=keys,
            frames=_channels_last_concat([p.frames for p in parts]),
            backgrounds=_channels_last_concat([p.backgrounds for p in parts]),
            background=np.concatenate([p.background + o for p, o in zip(parts, offsets)]),
            boxes=np.concatenate([p.boxes for p in parts]),
            n_backgrounds=[len(p.backgrounds) for p in parts],
        )
    if (ep.width, ep.height) != tuple(spec.grid):
        raise BibInputError(
            f"episode {ep.id}: grid {ep.width} x {ep.height} differs from the model's {spec.grid[0]} x {spec.grid[1]}"
        )
    parts = [symbolic_trial(t) for t in ep.trials]
    offsets = np.cumsum([0] + [len(p.variants) for p in parts])
    variants = np.concatenate([p.variants for p in parts])
    if spec.channels < variants.shape[1]:  # a model trained on fewer channels: the first ones (new ones are appended)
        variants = np.ascontiguousarray(variants[:, : spec.channels])
    return EncodedEpisode(
        ep.id,
        actions,
        lengths,
        variants=variants,
        variant=np.concatenate([p.variant + o for p, o in zip(parts, offsets)]),
        cells=np.concatenate([p.cells for p in parts]),
        dynamic=np.concatenate([p.dynamic for p in parts]),
    )


def _channels_last_concat(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Concatenate ``[n, S, S, 3]`` picture arrays (or ``[n, 3, S, S]`` views of them) into one
    channels-last buffer, returned as ``[N, 3, S, S]``."""
    parts = [p if p.shape[-1] == 3 else p.transpose(0, 2, 3, 1) for p in parts]
    h, w = parts[0].shape[1:3]
    out = np.empty((sum(len(p) for p in parts), h, w, 3), dtype=np.uint8)
    at = 0
    for p in parts:
        out[at : at + len(p)] = p
        at += len(p)
    return out.transpose(0, 3, 1, 2)


@dataclass
class Batch:
    """Several encoded episodes in the index form the networks use (torch tensors).

    States are numbered 0 .. N-1 over the whole batch. Frame batches hold ``frames``, uint8
    ``[N, 3, H, W]`` in torch's ``channels_last`` memory format (:meth:`dense` gives them as floats
    in [0, 1]), where the states of equal trials (a pair's shared familiarization) are stored once
    and indexed by every episode that shows them, and the distinct ``backgrounds`` [G, 3, H, W]
    (uint8) with each state's ``background`` [N] and changed ``boxes`` [N, 4] (see
    :class:`EncodedEpisode`); symbolic batches hold the factored form (``variants`` [K, C, H, W],
    and per state ``variant``, ``cells``, ``dynamic``).

    Attributes:
        actions: ``[N]`` action index at each state.
        ctx_index: ``[T, L]`` indices of the states of each context trial, padded with 0.
        ctx_lengths: ``[T]`` true lengths of the context trials.
        ctx_episode: ``[T]`` episode (0 .. B-1) of each context trial.
        query_index: ``[Q]`` indices of the test-trial states that have a next move.
        query_episode: ``[Q]`` episode of each query.
        n_episodes: B.
        query_counts: queries per episode (test-trial steps), to split outputs back.
    """

    actions: Any
    ctx_index: Any
    ctx_lengths: Any
    ctx_episode: Any
    query_index: Any
    query_episode: Any
    n_episodes: int
    query_counts: list[int]
    frames: Any = None
    variants: Any = None
    variant: Any = None
    cells: Any = None
    dynamic: Any = None
    backgrounds: Any = None
    background: Any = None
    boxes: Any = None

    @property
    def n_states(self) -> int:
        """N, the number of states in the batch."""
        return int(self.actions.shape[0])

    def _tensors(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self) if hasattr(getattr(self, f.name), "is_pinned")]

    def to(self, device: Any, non_blocking: bool = False) -> Batch:
        """This batch with its tensors on ``device`` (itself when they are there already: the CPU path copies
        nothing). ``non_blocking`` overlaps the copy from pinned memory with the GPU's work."""
        names = [n for n in self._tensors() if getattr(self, n).device != device]
        if not names:
            return self
        return dataclasses.replace(self, **{n: getattr(self, n).to(device, non_blocking=non_blocking) for n in names})

    def pin_memory(self) -> Batch:
        """This batch with its tensors in page-locked memory (what a DataLoader with ``pin_memory=True`` calls)."""
        return dataclasses.replace(self, **{n: getattr(self, n).pin_memory() for n in self._tensors()})

    def dense(self, index: Any) -> Any:
        """Dense float states ``[len(index), C, H, W]`` of the states ``index`` (an index tensor or a slice)."""
        if self.frames is not None:
            return self.frames[index].float().div_(255.0)
        return densify(self.variants, self.variant[index], self.cells[index], self.dynamic[index])


def collate(items: Sequence[EncodedEpisode], share: bool = True) -> Batch:
    """Stack encoded episodes into one :class:`Batch`.

    With ``share`` (the default), trials with equal keys (:attr:`EncodedEpisode.keys`) are stored
    once; the networks' results are the same as without sharing (each state is computed alone).
    """
    import torch

    ctx_rows: list[np.ndarray] = []
    ctx_episode: list[int] = []
    query_index: list[np.ndarray] = []
    query_episode: list[np.ndarray] = []
    counts: list[int] = []
    kept_actions: list[np.ndarray] = []  # the actions of the stored states, in order
    kept_frames: list[np.ndarray] = []
    kept_background: list[np.ndarray] = []
    kept_boxes: list[np.ndarray] = []
    backgrounds: dict[bytes, int] = {}  # distinct background pictures -> index
    seen: dict[Any, int] = {}
    base = 0
    variant_base = 0
    variant_idx = []
    for b, item in enumerate(items):
        starts = np.concatenate([[0], np.cumsum(item.lengths)])
        keys = item.keys if share and item.keys is not None else [None] * len(item.lengths)
        bg_starts = np.cumsum([0] + list(item.n_backgrounds or []))
        where = []  # the batch index of each trial's first state
        for t, key in enumerate(keys):
            if key is not None and key in seen:
                where.append(seen[key])
                continue
            lo, hi = starts[t], starts[t + 1]
            where.append(base)
            if key is not None:
                seen[key] = base
            kept_actions.append(item.actions[lo:hi])
            if item.frames is not None:
                kept_frames.append(item.frames[lo:hi])
            if item.backgrounds is not None:
                remap = np.zeros(len(item.backgrounds), dtype=np.int64)
                for g in range(bg_starts[t], bg_starts[t + 1]):
                    picture = item.backgrounds[g].transpose(1, 2, 0)  # H x W x 3, contiguous
                    remap[g] = backgrounds.setdefault(picture.tobytes(), len(backgrounds))
                kept_background.append(remap[item.background[lo:hi]])
                kept_boxes.append(item.boxes[lo:hi])
            base += hi - lo
        for t, length in enumerate(item.lengths[:-1]):
            ctx_rows.append(where[t] + np.arange(length))
            ctx_episode.append(b)
        n_query = item.lengths[-1] - 1
        query_index.append(where[-1] + np.arange(n_query))
        query_episode.append(np.full(n_query, b))
        counts.append(n_query)
        if item.variants is not None:
            variant_idx.append(item.variant + variant_base)
            variant_base += len(item.variants)
    lengths = np.asarray([len(r) for r in ctx_rows])
    index = np.zeros((len(ctx_rows), int(lengths.max())), dtype=np.int64)
    for i, r in enumerate(ctx_rows):
        index[i, : len(r)] = r

    def cat(name: str) -> Any:
        return torch.from_numpy(np.concatenate([getattr(it, name) for it in items]))

    batch = Batch(
        actions=torch.from_numpy(np.concatenate(kept_actions)),
        ctx_index=torch.from_numpy(index),
        ctx_lengths=torch.from_numpy(lengths),
        ctx_episode=torch.from_numpy(np.asarray(ctx_episode, dtype=np.int64)),
        query_index=torch.from_numpy(np.concatenate(query_index).astype(np.int64)),
        query_episode=torch.from_numpy(np.concatenate(query_episode).astype(np.int64)),
        n_episodes=len(items),
        query_counts=counts,
    )
    if items[0].frames is not None:
        batch.frames = torch.from_numpy(_channels_last_concat(kept_frames))
        if kept_background and len(kept_background) == len(kept_frames):
            h, w = batch.frames.shape[-2:]
            pictures = [np.frombuffer(b, dtype=np.uint8).reshape(1, h, w, 3) for b in backgrounds]
            batch.backgrounds = torch.from_numpy(_channels_last_concat(pictures))
            batch.background = torch.from_numpy(np.concatenate(kept_background))
            batch.boxes = torch.from_numpy(np.concatenate(kept_boxes))
    else:
        batch.variants = cat("variants")
        batch.variant = torch.from_numpy(np.concatenate(variant_idx))
        batch.cells = cat("cells")
        batch.dynamic = cat("dynamic")
    return batch
