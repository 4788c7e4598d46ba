"""Trial -> frames (uint8 H x W x 3): constant agent speed, pauses, key pickup and barrier fade.

Timing rule (exact, so frame counts can be checked): an orthogonal step lasts ``1 / speed``
seconds, a diagonal step ``sqrt(2) / speed``, a stay step ``1 / speed``; after the step that
unlocks, the agent waits ``unlock_pause`` seconds while the barrier fades. With ``T`` the sum of
these durations, the moving part has frames at ``t = k / fps`` for ``k = 0 .. ceil(T * fps)``
(the last one clamped to ``T``), preceded by ``round(pause_start * fps)`` and followed by
``round(pause_end * fps)`` still frames.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Container, Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import ClassVar

import numpy as np

from bib.episode import Episode, Trial
from bib.errors import BibInputError
from bib.render.sprites import blend, blend_all
from bib.vocabulary import BARRIER_COLOR as BARRIER
from bib.vocabulary import HOME_COLOR
from bib.vocabulary import KEY_COLOR as KEY
from bib.vocabulary import OCCLUDER_COLOR as OCCLUDER
from bib.vocabulary import SLOT_COLOR as SLOT
from bib.vocabulary import TERRAIN_COLOR as TERRAIN
from bib.vocabulary import WALL_COLOR as WALL
from bib.world.dynamics import STAY, action_between, action_cost

PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")
"""libx264's speed presets, fastest first (``placebo`` left out)."""
PIXEL_FORMATS = ("yuv420p", "yuv444p")
"""Planar formats :mod:`bib.render.yuv` draws and libx264 encodes (``yuv420p``: browser-playable)."""


@dataclass(frozen=True)
class RenderSettings:
    """How episodes become pictures and videos: the one declaration of the render settings.

    The stimulus spec's ``[render]`` table (:class:`bib.stimuli.spec.RenderSpec`), the CLI's options
    and the renderer read these fields, their :data:`LIMITS` and :data:`CHOICES`.

    Attributes:
        cell_px: pixels per grid cell (BIB: 20, so a 10 x 10 grid is 200 x 200).
        fps: frames per second (BIB: 25).
        speed: agent speed in cells per second (an orthogonal step takes ``1 / speed`` s).
        pause_start: seconds the first frame is held.
        pause_end: seconds the last frame is held.
        unlock_pause: seconds the agent waits at the lock while the barrier fades.
        gap: seconds of blank frames between trials in an episode video.
        canvas: ``(width, height)`` of a letterboxed output frame (e.g. 1280 x 720), or None for
            the grid's own size.
        background: RGB of free cells.
        letterbox: RGB of the letterbox bars and of the blank between trials.
        preset: libx264 speed preset of H.264 videos (docs/stimuli.md: measured table, why the default).
        crf: libx264 constant rate factor (0 lossless .. 51; lower is better quality and bigger files).
        pix_fmt: pixel format of H.264 videos (``yuv420p`` plays in browsers; ``yuv444p`` does not).
    """

    cell_px: int = 20
    fps: int = 25
    speed: float = 2.5
    pause_start: float = 0.6
    pause_end: float = 0.8
    unlock_pause: float = 0.8
    gap: float = 0.4
    canvas: tuple[int, int] | None = None
    background: tuple[int, int, int] = (255, 255, 255)
    letterbox: tuple[int, int, int] = (0, 0, 0)
    preset: str = "ultrafast"
    crf: int = 18
    pix_fmt: str = "yuv420p"

    LIMITS: ClassVar[dict[str, tuple[float, float, bool]]] = {
        "cell_px": (4, 256, True), "fps": (1, 240, True), "speed": (0.1, 100, True), "pause_start": (0, 60, True),
        "pause_end": (0, 60, True), "unlock_pause": (0, 60, True), "gap": (0, 60, True), "crf": (0, 51, True),
    }
    """Field -> ``(low, high, low included)``; ``high`` is always included."""
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"preset": PRESETS, "pix_fmt": PIXEL_FORMATS}
    """Field -> its allowed values."""

    def __post_init__(self) -> None:
        for name, (lo, hi, closed) in self.LIMITS.items():
            v = getattr(self, name)
            if not ((lo <= v) if closed else (lo < v)) or v > hi:
                raise BibInputError(f"render setting '{name}' is out of range: {v} (allowed: {lo} {'<=' if closed else '<'} "
                                    f"{name} <= {hi})")
        if self.canvas is not None:  # checked when the settings are made, before anything is written
            sides = tuple(self.canvas)
            if len(sides) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= self.MAX_SIDE
                                          for v in sides):
                raise BibInputError(f"render setting 'canvas' must be two whole numbers of pixels from 1 to "
                                    f"{self.MAX_SIDE}, got {str(self.canvas)[:60]}")
        for name, allowed in self.CHOICES.items():
            if getattr(self, name) not in allowed:
                raise BibInputError(f"render setting '{name}': unknown value {getattr(self, name)!r}; allowed: {', '.join(allowed)}")

    MAX_SIDE: ClassVar[int] = 8192
    """The most pixels a frame may have on a side (libx264 opens up to 16384; a frame of 8192 x 8192 is
    already 200 MB of RGB): a bigger grid or cell size is refused before anything is drawn or encoded."""

    def frame_size(self, width: int, height: int) -> tuple[int, int]:
        """Output ``(width_px, height_px)`` for a grid of ``width x height`` cells.

        Raises:
            BibInputError: the canvas is smaller than the grid, or a side exceeds :attr:`MAX_SIDE`.
        """
        if self.canvas is not None:
            cw, ch = self.canvas
            if cw < width * self.cell_px or ch < height * self.cell_px:
                raise BibInputError(
                    f"render setting 'canvas' {cw} x {ch} is smaller than the grid "
                    f"({width * self.cell_px} x {height * self.cell_px} px at cell_px {self.cell_px})"
                )
            size = cw, ch
        else:
            size = width * self.cell_px, height * self.cell_px
        if max(size) > self.MAX_SIDE:
            raise BibInputError(f"a {width} x {height} grid at cell_px {self.cell_px} makes {size[0]} x {size[1]} px "
                                f"frames; videos allow at most {self.MAX_SIDE} px a side (use a smaller --cell-px)")
        return size


def agent_timeline(trial: Trial, settings: RenderSettings) -> tuple[np.ndarray, np.ndarray, float | None, float | None]:
    """Knot times and cells of the agent's motion, plus the pickup and unlock times.

    Returns ``(times, cells, t_pickup, t_unlock)``: the agent is at ``cells[i]`` (float x, y)
    at ``times[i]`` seconds after motion starts and moves linearly in between; the times of
    the key pickup and of the unlock are None when they do not happen.
    """
    unlock = trial.unlock_step()
    pickup = trial.pickup_step()
    times = [0.0]
    cells = [trial.path[0]]
    t_pickup = 0.0 if pickup == 0 else None
    t_unlock = None
    for i, (a, b) in enumerate(zip(trial.path, trial.path[1:]), start=1):
        action = action_between(a, b)
        cost = 1.0 if action == STAY else action_cost(action)
        times.append(times[-1] + cost / settings.speed)
        cells.append(b)
        if i == pickup:
            t_pickup = times[-1]
        if i == unlock:
            t_unlock = times[-1]
            times.append(times[-1] + settings.unlock_pause)
            cells.append(b)
    return np.asarray(times), np.asarray(cells, dtype=np.float64), t_pickup, t_unlock


def motion_frames(trial: Trial, settings: RenderSettings) -> int:
    """Number of frames of the moving part: ``ceil(T * fps) + 1``."""
    times = agent_timeline(trial, settings)[0]
    return math.ceil(times[-1] * settings.fps - 1e-9) + 1


def frame_count(trial: Trial, settings: RenderSettings) -> int:
    """Total frames :func:`trial_frames` yields for ``trial``."""
    return round(settings.pause_start * settings.fps) + motion_frames(trial, settings) + round(settings.pause_end * settings.fps)


def outcome_frame(trial: Trial, settings: RenderSettings) -> int:
    """Index of the first frame :func:`trial_frames` draws as the trial's final picture (the agent at its
    final cell, key and barrier as at the end: the outcome of the trial); every later frame shows
    that picture. Positions are compared as drawn (the agent's corner rounded to pixels, as
    ``_Painter.agent_corner`` places it), the barrier's fade to 1/255."""
    a = trial_state_arrays(trial, settings)
    px = settings.cell_px
    cx, cy = np.round(a.x * px), np.round(a.y * px)
    same = ((cx == cx[-1]) & (cy == cy[-1]) & (a.carrying == a.carrying[-1])
            & (a.before_pickup == a.before_pickup[-1]) & (np.abs(a.fade - a.fade[-1]) * 255 < 0.5))
    changed = np.flatnonzero(~same)
    first = int(changed[-1]) + 1 if len(changed) else 0
    return round(settings.pause_start * settings.fps) + first


def _fill_cells(img: np.ndarray, cells, color, px: int) -> None:
    value = np.asarray(color, dtype=np.uint8)
    for x, y in cells:
        img[y * px : (y + 1) * px, x * px : (x + 1) * px] = value


@lru_cache(maxsize=4)  # the trials of an episode share their walls; a few images at most
def _walled(width: int, height: int, walls: frozenset, px: int, background: tuple[int, int, int]) -> np.ndarray:
    """The free-cell colour with the walls drawn (read-only; trials of a set share a few wall layouts)."""
    img = np.empty((height * px, width * px, 3), dtype=np.uint8)
    img[...] = background
    _fill_cells(img, walls, WALL, px)
    img.flags.writeable = False
    return img


def differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pixel of two ``H x W x 3`` images: whether any channel differs (``(a != b).any(axis=2)``, faster)."""
    d = a != b
    return d[..., 0] | d[..., 1] | d[..., 2]


class _Painter:
    """Pre-rendered backgrounds of one trial; composes a frame from an agent position."""

    def __init__(self, trial: Trial, settings: RenderSettings) -> None:
        self.trial = trial
        self.s = settings
        lay = trial.layout
        px = settings.cell_px
        base = _walled(lay.width, lay.height, frozenset(lay.walls), px, tuple(settings.background)).copy()
        self._cell_fill(base, lay.terrain, TERRAIN)  # mud: static, under the home pad and the objects
        agent = lay.agent
        blend(base, "home_pad", HOME_COLOR, agent.home[0] * px, agent.home[1] * px, px)
        for obj in lay.objects:
            blend(base, obj.shape, obj.color, obj.cell[0] * px, obj.cell[1] * px, px)
        if trial.occluder is not None:  # one opaque block over the cells it hides (they hold nothing in the file)
            self._cell_fill(base, trial.occluder.cells, OCCLUDER)
        self.open = base.copy()  # barriers gone, key used
        closed = base.copy()
        self._cell_fill(closed, lay.barriers, BARRIER)
        if lay.lock is not None:
            self._cell_fill(closed, [lay.lock], BARRIER)
            blend(closed, "lock_slot", SLOT, lay.lock[0] * px, lay.lock[1] * px, px)
        self.no_key = closed  # closed, key picked up
        if lay.key is not None:
            self.with_key = closed.copy()
            blend(self.with_key, "key", KEY, lay.key[0] * px, lay.key[1] * px, px)
        else:
            self.with_key = closed
        w, h = settings.frame_size(lay.width, lay.height)
        self.offset = ((w - base.shape[1]) // 2, (h - base.shape[0]) // 2)
        if settings.canvas is not None:  # letterbox the backgrounds once, not every frame
            self.open, self.no_key, self.with_key = (self._letterbox(b, w, h) for b in (self.open, self.no_key, self.with_key))

    @cached_property
    def _fade(self) -> tuple[np.ndarray, tuple[int, int, int, int] | None, tuple[np.ndarray, np.ndarray]]:
        """:attr:`fade_pixels`, :attr:`fade_box` and the fading pixels of both backgrounds (found on first use:
        pictures without a fade, such as :func:`step_pictures`, never need them)."""
        lay, px = self.trial.layout, self.s.cell_px
        pixels = np.empty(0, dtype=np.intp)
        box = None
        cells = [*lay.barriers, *([lay.lock] if lay.lock is not None else [])]
        if cells:  # compared only around their cells
            ox, oy = self.offset
            y0, x0 = min(c[1] for c in cells) * px + oy, min(c[0] for c in cells) * px + ox
            y1, x1 = (max(c[1] for c in cells) + 1) * px + oy, (max(c[0] for c in cells) + 1) * px + ox
            changed = differs(self.no_key[y0:y1, x0:x1], self.open[y0:y1, x0:x1])
            rows, cols = np.nonzero(changed)
            pixels = (rows + y0) * self.open.shape[1] + cols + x0
            if len(rows):
                box = (int(rows.min()) + y0, int(rows.max()) + y0 + 1, int(cols.min()) + x0, int(cols.max()) + x0 + 1)
        return pixels, box, (self.no_key.reshape(-1, 3)[pixels], self.open.reshape(-1, 3)[pixels])

    @property
    def fade_pixels(self) -> np.ndarray:
        """The pixels (flat indices) the barrier fade changes (barriers and lock): a fade frame blends only these."""
        return self._fade[0]

    @property
    def fade_box(self) -> tuple[int, int, int, int] | None:
        """``(y0, y1, x0, x1)`` (end exclusive) around the fading pixels, None when nothing fades."""
        return self._fade[1]

    def _letterbox(self, img: np.ndarray, w: int, h: int) -> np.ndarray:
        out = np.empty((h, w, 3), dtype=np.uint8)
        out[...] = self.s.letterbox
        ox, oy = self.offset
        out[oy : oy + img.shape[0], ox : ox + img.shape[1]] = img
        return out

    def _cell_fill(self, img: np.ndarray, cells, color) -> None:
        _fill_cells(img, cells, color, self.s.cell_px)

    def background(self, before_pickup: bool, fade: float) -> np.ndarray:
        """The picture without the agent (read-only use; ``fade``: 1 = barriers present, 0 = gone)."""
        if fade >= 1.0:
            return self.with_key if before_pickup else self.no_key
        if fade <= 0.0:
            return self.open
        # Blending only the pixels that differ gives the bytes of a whole-frame blend: where the two
        # backgrounds agree on x, x * fade + x * (1 - fade) + 0.5 truncates back to x.
        out = self.no_key.copy()
        out.reshape(-1, 3)[self.fade_pixels] = self.fade_values(fade)
        return out

    def fade_values(self, fade: float | np.ndarray) -> np.ndarray:
        """The fading pixels (:attr:`fade_pixels`) at ``fade`` strictly between 0 and 1: uint8 ``[n, 3]``
        (``[m, n, 3]`` for ``m`` fades at once, the same bytes)."""
        closed, gone = self._fade[2]  # the fading pixels of both backgrounds, gathered once
        f = np.asarray(fade, dtype=np.float64)[..., None, None]
        return (closed * f + gone * (1.0 - f) + 0.5).astype(np.uint8)

    def draw_agent(self, img: np.ndarray, x: int, y: int, carrying: bool) -> None:
        """Blend the agent (and the key it carries) with its cell's top-left corner at pixel ``(x, y)``."""
        px = self.s.cell_px
        agent = self.trial.layout.agent
        blend(img, agent.shape, agent.color, x, y, px)
        if carrying:
            half = max(px // 2, 2)
            blend(img, "key", KEY, x + px - half, y, half)

    def draw_agents(self, patches: np.ndarray, x: int, y: int, carrying: bool) -> bool:
        """:meth:`draw_agent` into a batch of patches (uint8 ``[m, h, w, 3]``) at once, the agent's corner at
        ``(x, y)`` in each; the same bytes. False (nothing drawn) when the agent would not fit in a patch."""
        px = self.s.cell_px
        if x < 0 or y < 0 or y + px > patches.shape[1] or x + px > patches.shape[2]:
            return False
        agent = self.trial.layout.agent
        blend_all(patches[:, y : y + px, x : x + px], agent.shape, agent.color, px)
        if carrying:
            half = max(px // 2, 2)
            blend_all(patches[:, y : y + half, x + px - half : x + px], "key", KEY, half)
        return True

    def agent_corner(self, pos: np.ndarray) -> tuple[int, int]:
        """Pixel ``(x, y)`` of the top-left corner of the agent's cell at grid position ``pos``; the agent
        (and the key it carries) lies inside the ``cell_px`` square from there."""
        px = self.s.cell_px
        return int(round(pos[0] * px)) + self.offset[0], int(round(pos[1] * px)) + self.offset[1]

    def frame(self, pos: np.ndarray, carrying: bool, before_pickup: bool, fade: float) -> np.ndarray:
        """``fade``: 1 = barriers fully present, 0 = gone."""
        img = self.background(before_pickup, fade)
        if fade <= 0.0 or fade >= 1.0:  # a shared background, not a fresh blend
            img = img.copy()
        self.draw_agent(img, *self.agent_corner(pos), carrying)
        return img


@dataclass(frozen=True)
class FrameState:
    """What one frame of a trial shows: the agent's grid position, the key and the barrier fade."""

    pos: np.ndarray
    carrying: bool
    before_pickup: bool
    fade: float
    """1 = barriers fully present, 0 = gone."""


@dataclass(frozen=True)
class TrialStates:
    """The distinct states of a trial's moving part as arrays (one entry per state), and per output
    frame the index of its state (the pauses repeat the first and last state)."""

    x: np.ndarray
    """float64 grid x of the agent."""
    y: np.ndarray
    carrying: np.ndarray
    """bool: the agent carries the key."""
    before_pickup: np.ndarray
    fade: np.ndarray
    """float64; 1 = barriers fully present, 0 = gone."""
    index: np.ndarray


def trial_state_arrays(trial: Trial, settings: RenderSettings) -> TrialStates:
    """:func:`trial_states` as arrays (no object per state)."""
    s = settings
    times, cells, t_pickup, t_unlock = agent_timeline(trial, s)
    n = motion_frames(trial, s)
    ts = np.minimum(np.arange(n) / s.fps, times[-1])
    xs = np.interp(ts, times, cells[:, 0])
    ys = np.interp(ts, times, cells[:, 1])
    before_pickup = np.ones(n, dtype=bool) if t_pickup is None else ts < t_pickup
    if t_unlock is None:
        fade = np.ones(n)
    elif s.unlock_pause > 0:
        fade = np.where(ts < t_unlock, 1.0, np.maximum(0.0, 1.0 - (ts - t_unlock) / s.unlock_pause))
    else:
        fade = np.where(ts < t_unlock, 1.0, 0.0)
    start = round(s.pause_start * s.fps)
    end = round(s.pause_end * s.fps)
    index = np.concatenate([np.zeros(start, dtype=int), np.arange(n), np.full(end, n - 1)])
    return TrialStates(xs, ys, ~before_pickup & (fade >= 1.0), before_pickup, fade, index)


def trial_states(trial: Trial, settings: RenderSettings) -> tuple[list[FrameState], np.ndarray]:
    """The distinct states of a trial's moving part and, per output frame, the index of its state.

    The pauses repeat the first and last state, so a renderer draws each state once.
    """
    a = trial_state_arrays(trial, settings)
    states = [FrameState(np.array((x, y)), bool(c), bool(b), float(f))
              for x, y, c, b, f in zip(a.x, a.y, a.carrying, a.before_pickup, a.fade)]
    return states, a.index


def trial_frames(trial: Trial, settings: RenderSettings | None = None, only: Container[int] | None = None) -> Iterator[np.ndarray]:
    """Yield the frames of one trial (each a fresh uint8 ``H x W x 3`` array), streaming.

    With ``only``, yield just the frames at those indices (in order), without drawing the others.
    """
    s = settings or RenderSettings()
    painter = _Painter(trial, s)
    states, idx = trial_states(trial, s)
    last, drawn = -1, None
    for i, k in enumerate(idx):
        if only is not None and i not in only:
            continue
        if k != last:  # a pause repeats a frame: draw it once
            st = states[k]
            last, drawn = k, painter.frame(st.pos, st.carrying, st.before_pickup, st.fade)
        repeats = i + 1 < len(idx) and idx[i + 1] == k
        yield drawn.copy() if repeats else drawn  # the last of a run may be the drawn array itself


def _step_status(trial: Trial) -> Iterator[tuple[np.ndarray, bool, bool, float]]:
    """Per path cell: the agent's cell (float), carrying the key, before the pickup, barrier fade."""
    pickup, unlock = trial.pickup_step(), trial.unlock_step()
    for i, cell in enumerate(trial.path):
        picked = pickup is not None and i >= pickup
        opened = unlock is not None and i >= unlock
        yield np.asarray(cell, dtype=np.float64), picked and not opened, not picked, 0.0 if opened else 1.0


def step_frames(trial: Trial, settings: RenderSettings | None = None) -> Iterator[np.ndarray]:
    """One frame per path cell: the agent standing on ``path[i]``, key and lock as after step ``i``.

    The still pictures a frame-based observer sees (no pauses, no motion in between; once
    unlocked the barrier is fully gone).
    """
    s = settings or RenderSettings()
    painter = _Painter(trial, s)
    for pos, carrying, before_pickup, fade in _step_status(trial):
        yield painter.frame(pos, carrying, before_pickup, fade)


@dataclass
class StepPictures:
    """The :func:`step_frames` of a trial resized to ``size x size``, with what they share.

    Every frame equals one of a few backgrounds (the layout with the key, after the pickup, after
    the unlock; no agent) outside a small box around the agent.

    Attributes:
        frames: uint8 ``[n + 1, size, size, 3]``.
        backgrounds: uint8 ``[G, size, size, 3]``.
        background: ``[n + 1]`` the background of each frame.
        boxes: ``[n + 1, 4]`` ``(y0, y1, x0, x1)``, inclusive: outside it frame ``i`` equals
            ``backgrounds[background[i]]`` (empty, ``y1 < y0``, when the whole frame does).
    """

    frames: np.ndarray
    backgrounds: np.ndarray
    background: np.ndarray
    boxes: np.ndarray


_REACH_MARGIN = 2
"""Source pixels, beyond ``[floor(d * n / size), ceil((d + 1) * n / size))``, that output pixel ``d`` of a resize
of ``n`` pixels to ``size`` is taken to read: OpenCV's area downscale reads exactly that interval, its area
upscale (two-tap linear) reads ``sx`` and ``sx + 1`` with ``sx`` that interval's start computed in floating
point (one less at worst); 2 leaves room for a wider kernel."""


@lru_cache(maxsize=32)
def _reach(n: int, size: int) -> tuple[list[int], list[int]]:
    """Per output pixel ``d`` of a resize of ``n`` pixels to ``size`` (one axis), the source pixels
    ``[lo[d], hi[d])`` it may read (a superset, see :data:`_REACH_MARGIN`); both non-decreasing."""
    lo = [d * n // size - _REACH_MARGIN for d in range(size)]
    hi = [-(-(d + 1) * n // size) + _REACH_MARGIN for d in range(size)]
    return lo, hi


def _rectangle(lo: list[int], hi: list[int], s0: int, s1: int) -> tuple[int, int]:
    """The output pixels ``[d0, d1)`` that may read source pixels ``[s0, s1)`` (:func:`_reach`'s ``lo``, ``hi``)."""
    return bisect.bisect_right(hi, s0), bisect.bisect_left(lo, s1)


@lru_cache(maxsize=8)
def _settings(cell_px: int) -> RenderSettings:
    return RenderSettings(cell_px=cell_px)


def _step_kinds(trial: Trial) -> tuple[list[tuple[bool, float]], list[int], list[bool]]:
    """Per path cell, as :func:`_step_status` gives them: the distinct ``(before_pickup, fade)`` in order of
    first appearance, each cell's index into them, and whether the agent carries the key."""
    kinds: dict[tuple[bool, float], int] = {}
    background, carrying = [], []
    for _, carries, before_pickup, fade in _step_status(trial):
        background.append(kinds.setdefault((before_pickup, fade), len(kinds)))
        carrying.append(carries)
    return list(kinds), background, carrying


def step_pictures(trial: Trial, cell_px: int, size: int) -> StepPictures:
    """The still frame of every path cell (:func:`step_frames` at ``cell_px``), resized to ``size x size``
    with OpenCV's area interpolation (the same bytes as resizing each frame of :func:`step_frames`),
    with the backgrounds they share and, per frame, the box where it differs from its background
    (found by comparing the pixels, so it is exact whatever the interpolation reads).

    A frame differs from its background only in the agent's cell, so only the output pixels that may
    read that cell (:func:`_reach`: its *rectangle*) can differ from the resized background. Several
    agents whose rectangles do not overlap are drawn on one copy of a background (a *sheet*) and
    resized together, each rectangle read back from it: every output pixel of a rectangle reads the
    pixels it reads in the agent's own whole frame, and the resize computes each output pixel from
    the pixels it reads with coefficients that depend on its place only, so the bytes are those of
    resizing each whole frame (:func:`_step_pictures_whole`, which a test compares on every task).
    Each distinct picture (cell, key carried, background) is drawn once.
    """
    import cv2

    painter = _Painter(trial, _settings(cell_px))
    kinds, background, carrying = _step_kinds(trial)
    natives = [painter.background(before_pickup, fade) for before_pickup, fade in kinds]
    height, width = natives[0].shape[:2]
    whole = (height, width) == (size, size)  # no resize: a copy

    def resized(img: np.ndarray, out: np.ndarray) -> None:
        if whole:
            out[...] = img
        else:
            cv2.resize(img, (size, size), dst=out, interpolation=cv2.INTER_AREA)

    backgrounds = np.empty((len(kinds), size, size, 3), dtype=np.uint8)
    for g, img in enumerate(natives):
        resized(img, backgrounds[g])
    # The distinct pictures: the agent's corner (as _Painter.agent_corner puts it: whole cells), the key, the background.
    px = cell_px
    ox, oy = painter.offset
    pictures: dict[tuple[int, int, bool, int], int] = {}
    step_picture = [pictures.setdefault((x * px + ox, y * px + oy, c, g), len(pictures))
                    for (x, y), c, g in zip(trial.path, carrying, background)]
    xs, ys, carry, kind = (list(v) for v in zip(*pictures))
    if min(xs) < 0 or min(ys) < 0 or max(xs) + px > width or max(ys) + px > height:
        return _step_pictures_whole(trial, cell_px, size)  # an agent off the picture (not on a valid trial)
    cells = np.stack([natives[g][y : y + px, x : x + px] for x, y, _, g in pictures])
    for flag in (False, True):
        sel = [u for u, c in enumerate(carry) if c == flag]
        if sel:
            drawn = cells[sel]
            painter.draw_agents(drawn, 0, 0, flag)
            cells[sel] = drawn
    # Each picture's rectangle: the output pixels that may read its cell, all of one size (h x w) (and
    # ``[sr0, sr1) x [sc0, sc1)``: the source pixels they may read).
    if whole:
        rows, cols = [(y, y + px) for y in ys], [(x, x + px) for x in xs]
    else:
        (ylo, yhi), (xlo, xhi) = _reach(height, size), _reach(width, size)
        rows, cols = [_rectangle(ylo, yhi, y, y + px) for y in ys], [_rectangle(xlo, xhi, x, x + px) for x in xs]
    h, w = max(e - b for b, e in rows), max(e - b for b, e in cols)
    r0, c0 = [min(b, size - h) for b, _ in rows], [min(b, size - w) for b, _ in cols]
    # The backgrounds differ only in the key, barrier and lock cells: a picture whose rectangle reads none
    # of their pixels may go on a sheet of another background.
    lay = trial.layout
    dynamic = [*([lay.key] if lay.key is not None else []), *lay.barriers, *([lay.lock] if lay.lock is not None else [])]
    touches = [False] * len(pictures)
    if len(natives) > 1 and dynamic:
        for u in range(len(pictures)):
            if whole:
                sr0, sr1, sc0, sc1 = r0[u], r0[u] + h, c0[u], c0[u] + w
            else:
                sr0, sr1, sc0, sc1 = ylo[r0[u]], yhi[r0[u] + h - 1], xlo[c0[u]], xhi[c0[u] + w - 1]
            touches[u] = any(sr0 < cy * px + oy + px and sr1 > cy * px + oy and sc0 < cx * px + ox + px and sc1 > cx * px + ox
                             for cx, cy in dynamic)
    # Sheets: pictures whose rectangles do not overlap, drawn on one background together (first fit).
    sheets: list[tuple[int, list[int]]] = []
    for u in range(len(pictures)):
        for g, members in sheets:
            if (g == kind[u] or not touches[u]) and all(abs(r0[u] - r0[v]) >= h or abs(c0[u] - c0[v]) >= w for v in members):
                members.append(u)
                break
        else:
            sheets.append((kind[u], [u]))
    patches = np.empty((len(pictures), h, w, 3), dtype=np.uint8)
    under = np.empty_like(patches)  # the backgrounds' rectangles
    out = np.empty((size, size, 3), dtype=np.uint8)
    for g, members in sheets:
        img = natives[g].copy()
        for u in members:
            img[ys[u] : ys[u] + px, xs[u] : xs[u] + px] = cells[u]
        resized(img, out)
        for u in members:
            patches[u] = out[r0[u] : r0[u] + h, c0[u] : c0[u] + w]
            under[u] = backgrounds[kind[u], r0[u] : r0[u] + h, c0[u] : c0[u] + w]
    changed = differs(patches, under)
    boxes = np.empty((len(pictures), 4), dtype=np.int64)
    for k, (hit, start, n) in enumerate(((changed.any(axis=2), r0, h), (changed.any(axis=1), c0, w))):
        none = ~hit.any(axis=1)
        boxes[:, 2 * k] = np.where(none, 0, np.asarray(start) + hit.argmax(axis=1))
        boxes[:, 2 * k + 1] = np.where(none, -1, np.asarray(start) + n - 1 - hit[:, ::-1].argmax(axis=1))  # empty: nothing differs
    frames = backgrounds[background]
    for frame, u in zip(frames, step_picture):
        frame[r0[u] : r0[u] + h, c0[u] : c0[u] + w] = patches[u]
    return StepPictures(frames, backgrounds, np.asarray(background, dtype=np.int64), boxes[step_picture])


def _step_pictures_whole(trial: Trial, cell_px: int, size: int) -> StepPictures:
    """:func:`step_pictures` the direct way (the reference a test compares it with): every whole frame of
    :func:`step_frames` resized, and compared with its resized background.

    The still frame of every path cell (:func:`step_frames` at ``cell_px``), resized to ``size x size``
    with OpenCV's area interpolation (the same bytes as resizing each frame of :func:`step_frames`),
    with the backgrounds they share and, per frame, the box where it differs from its background
    (found by comparing the pixels, so it is exact whatever the interpolation reads).
    """
    import cv2

    painter = _Painter(trial, RenderSettings(cell_px=cell_px))
    states = list(_step_status(trial))
    kinds: dict[tuple[bool, float], int] = {}
    for _, _, before_pickup, fade in states:
        kinds.setdefault((before_pickup, fade), len(kinds))

    def resized(img: np.ndarray, out: np.ndarray) -> None:
        if img.shape[:2] == (size, size):
            out[...] = img
        else:
            cv2.resize(img, (size, size), dst=out, interpolation=cv2.INTER_AREA)

    backgrounds = np.empty((len(kinds), size, size, 3), dtype=np.uint8)
    for (before_pickup, fade), g in kinds.items():
        resized(painter.background(before_pickup, fade), backgrounds[g])
    n = len(states)
    frames = np.empty((n, size, size, 3), dtype=np.uint8)
    background = np.asarray([kinds[(b, f)] for _, _, b, f in states], dtype=np.int64)
    for i, (pos, carrying, before_pickup, fade) in enumerate(states):
        resized(painter.frame(pos, carrying, before_pickup, fade), frames[i])
    rows = np.empty((n, size), dtype=bool)
    cols = np.empty((n, size), dtype=bool)
    for g in range(len(backgrounds)):
        sel = np.flatnonzero(background == g)
        changed = (frames[sel] != backgrounds[g]).reshape(len(sel), size, size * 3)
        rows[sel] = changed.any(axis=2)
        cols[sel] = changed.any(axis=1).reshape(len(sel), size, 3).any(axis=2)
    boxes = np.empty((n, 4), dtype=np.int64)
    for k, hit in enumerate((rows, cols)):
        none = ~hit.any(axis=1)
        boxes[:, 2 * k] = np.where(none, 0, hit.argmax(axis=1))
        boxes[:, 2 * k + 1] = np.where(none, -1, size - 1 - hit[:, ::-1].argmax(axis=1))  # empty when nothing differs
    return StepPictures(frames, backgrounds, background, boxes)


def blank_frames(width: int, height: int, settings: RenderSettings) -> Iterator[np.ndarray]:
    """The blank shown between trials: ``round(gap * fps)`` frames of the letterbox colour."""
    w, h = settings.frame_size(width, height)
    blank = np.empty((h, w, 3), dtype=np.uint8)
    blank[...] = settings.letterbox
    for _ in range(round(settings.gap * settings.fps)):
        yield blank.copy()


def episode_frames(episode: Episode, settings: RenderSettings | None = None) -> Iterator[np.ndarray]:
    """All trials of an episode in order, with a short blank between consecutive trials."""
    s = settings or RenderSettings()
    for i, trial in enumerate(episode.trials):
        if i:
            yield from blank_frames(episode.width, episode.height, s)
        yield from trial_frames(trial, s)


def episode_frame_count(episode: Episode, settings: RenderSettings | None = None) -> int:
    """Total frames :func:`episode_frames` yields."""
    s = settings or RenderSettings()
    gaps = round(s.gap * s.fps) * (len(episode.trials) - 1)
    return gaps + sum(frame_count(t, s) for t in episode.trials)
