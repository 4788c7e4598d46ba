"""Frames in the encoder's pixel format (planar YUV, BT.601 limited range), drawn for throughput.

:func:`episode_yuv` yields the frames of :func:`bib.render.frames.episode_frames` already converted
to ``yuv420p`` (I420: Y, then U and V at half resolution) or ``yuv444p``, so the encoder converts
nothing. Each trial's backgrounds are converted once; a frame is its background's planes with only
the boxes that differ from it (the agent's cell, the fading barriers) drawn and converted again. The
conversion is a function of each 2 x 2 pixel block alone (integer arithmetic), so converting a box
aligned to even pixels gives the bytes of converting the whole frame (:func:`rgb_to_yuv`; a test
checks every frame). Frames shown several times in a row (the pauses, the blank between trials) are
drawn once and yielded again.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from bib.episode import Episode, Trial
from bib.render.frames import PIXEL_FORMATS, FrameState, RenderSettings, _Painter, trial_states

__all__ = ["PIXEL_FORMATS", "episode_yuv", "planes", "rgb_to_yuv", "trial_yuv"]



def frame_bytes(width: int, height: int, pix_fmt: str) -> int:
    """Bytes of one frame."""
    return width * height * 3 // 2 if pix_fmt == "yuv420p" else 3 * width * height


def planes(buf: np.ndarray, width: int, height: int, pix_fmt: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Views ``(Y, U, V)`` of one frame's flat buffer."""
    n = width * height
    if pix_fmt == "yuv420p":
        q = n // 4
        return (buf[:n].reshape(height, width), buf[n : n + q].reshape(height // 2, width // 2),
                buf[n + q :].reshape(height // 2, width // 2))
    return buf[:n].reshape(height, width), buf[n : 2 * n].reshape(height, width), buf[2 * n :].reshape(height, width)


_COEFFS = np.array([[66, -38, 112], [129, -74, -94], [25, 112, -18]], dtype=np.int32)
"""BT.601 limited range: columns Y, U, V of the integer RGB weights (scaled by 256)."""


def _convert(rgb: np.ndarray, y: np.ndarray, u: np.ndarray, v: np.ndarray, sub: bool) -> None:
    """BT.601 limited-range conversion of ``rgb`` (uint8 ``... x h x w x 3``) into the planes' regions;
    with ``sub`` chroma is taken from each 2 x 2 block's sum (``h`` and ``w`` even)."""
    p = rgb.astype(np.int32) @ _COEFFS  # per pixel: the Y, U and V sums before rounding
    y[...] = ((p[..., 0] + 128) >> 8) + 16
    c = p[..., 1:]
    if sub:  # the four pixels' sums, rounded once
        c = (c[..., 0::2, 0::2, :] + c[..., 1::2, 0::2, :] + c[..., 0::2, 1::2, :] + c[..., 1::2, 1::2, :] + 512) >> 10
    else:
        c = (c + 128) >> 8
    u[...] = c[..., 0] + 128
    v[...] = c[..., 1] + 128


def rgb_to_yuv(rgb: np.ndarray, pix_fmt: str = "yuv420p") -> np.ndarray:
    """One whole RGB frame -> its flat planar buffer (the reference :func:`episode_yuv` equals)."""
    h, w = rgb.shape[:2]
    buf = np.empty(frame_bytes(w, h, pix_fmt), dtype=np.uint8)
    _convert(rgb, *planes(buf, w, h, pix_fmt), pix_fmt == "yuv420p")
    return buf


def _even(box: tuple[int, int, int, int], h: int, w: int) -> tuple[int, int, int, int]:
    """``box`` widened to even edges and clipped to an ``h x w`` frame."""
    y0, y1, x0, x1 = box
    return max(y0 & ~1, 0), min(y1 + (y1 & 1), h), max(x0 & ~1, 0), min(x1 + (x1 & 1), w)


def _regions(buf: np.ndarray, box: tuple[int, int, int, int], w: int, h: int, pix_fmt: str) -> tuple[np.ndarray, ...]:
    """Views of an even ``box`` in the three planes of ``buf``."""
    y0, y1, x0, x1 = box
    y, u, v = planes(buf, w, h, pix_fmt)
    if pix_fmt == "yuv420p":
        return y[y0:y1, x0:x1], u[y0 // 2 : y1 // 2, x0 // 2 : x1 // 2], v[y0 // 2 : y1 // 2, x0 // 2 : x1 // 2]
    return y[y0:y1, x0:x1], u[y0:y1, x0:x1], v[y0:y1, x0:x1]


def _update(buf: np.ndarray, rgb: np.ndarray, box: tuple[int, int, int, int], pix_fmt: str) -> None:
    """Convert ``rgb``'s pixels in ``box`` ``(y0, y1, x0, x1)`` (widened to even edges) into ``buf``."""
    h, w = rgb.shape[:2]
    y0, y1, x0, x1 = _even(box, h, w)
    if y1 > y0 and x1 > x0:
        _convert(rgb[y0:y1, x0:x1], *_regions(buf, (y0, y1, x0, x1), w, h, pix_fmt), pix_fmt == "yuv420p")


def changed_box(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int, int] | None:
    """``(y0, y1, x0, x1)`` (end exclusive) around the pixels where two frames differ; None if none do."""
    diff = (a != b).any(axis=2)
    rows, cols = np.flatnonzero(diff.any(axis=1)), np.flatnonzero(diff.any(axis=0))
    return (int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1) if len(rows) else None


class Backgrounds:
    """Converts the backgrounds of an episode's trials: the first whole, each later one as the first's
    planes with the box where it differs converted again (backgrounds share walls and most objects)."""

    def __init__(self, pix_fmt: str) -> None:
        self.pix_fmt = pix_fmt
        self.ref: tuple[np.ndarray, np.ndarray] | None = None

    def __call__(self, img: np.ndarray) -> np.ndarray:
        if self.ref is None or self.ref[0].shape != img.shape:
            self.ref = (img, rgb_to_yuv(img, self.pix_fmt))
            return self.ref[1]
        box = changed_box(img, self.ref[0])
        out = self.ref[1].copy()
        if box is not None:
            _update(out, img, box, self.pix_fmt)
        return out


def trial_yuv(trial: Trial, settings: RenderSettings, pix_fmt: str = "yuv420p",
              backgrounds: Backgrounds | None = None) -> Iterator[np.ndarray]:
    """The frames of :func:`bib.render.frames.trial_frames` as flat planar buffers.

    Every frame is the same array, overwritten for the next one: copy a frame to keep it.
    """
    painter = _Painter(trial, settings)
    convert = backgrounds or Backgrounds(pix_fmt)
    converted: dict[int, np.ndarray] = {}

    def base(st: FrameState) -> np.ndarray:
        """The converted background outside the boxes (a fading frame's is the closed one's there)."""
        img = painter.background(st.before_pickup, 1.0 if 0.0 < st.fade < 1.0 else st.fade)
        if id(img) not in converted:
            converted[id(img)] = convert(img)
        return converted[id(img)]

    px = settings.cell_px
    states, idx = trial_states(trial, settings)
    h, w = painter.open.shape[:2]
    sub = pix_fmt == "yuv420p"
    # The agent's box in every state, drawn on its background and converted in one batch.
    boxes, patches = [], []
    for st in states:
        x, y = painter.agent_corner(st.pos)
        box = _even((y, y + px, x, x + px), h, w)
        img = painter.background(st.before_pickup, st.fade) if not 0.0 < st.fade < 1.0 else painter.no_key
        patch = img[box[0] : box[1], box[2] : box[3]].copy()
        if not 0.0 < st.fade < 1.0:
            painter.draw_agent(patch, x - box[2], y - box[0], st.carrying)
        boxes.append(box)
        patches.append(patch)
    converted_patches = _convert_all(patches, pix_fmt)
    work: np.ndarray | None = None
    work_base: np.ndarray | None = None
    dirty: list[tuple[int, int, int, int]] = []  # even boxes where ``work`` differs from ``work_base``
    last = -1
    for k in idx:
        if k != last:
            last, st = k, states[k]
            b = base(st)
            if work is None or work_base is not b:
                work, work_base = b.copy(), b
            else:
                for box in dirty:
                    for dst, src in zip(_regions(work, box, w, h, pix_fmt), _regions(b, box, w, h, pix_fmt)):
                        dst[...] = src
            dirty = [boxes[k]]
            if 0.0 < st.fade < 1.0:  # the barrier fades: a fresh blend, drawn and converted whole
                img = painter.frame(st.pos, st.carrying, st.before_pickup, st.fade)
                for box in ([_even(painter.fade_box, h, w)] if painter.fade_box is not None else []) + [boxes[k]]:
                    _convert(img[box[0] : box[1], box[2] : box[3]], *_regions(work, box, w, h, pix_fmt), sub)
                    dirty.append(box)
            else:
                for dst, src in zip(_regions(work, boxes[k], w, h, pix_fmt), converted_patches[k]):
                    dst[...] = src
        yield work


def _convert_all(patches: list[np.ndarray], pix_fmt: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each RGB patch (even sides) -> its ``(Y, U, V)`` planes; patches of one size are converted at once."""
    sub = pix_fmt == "yuv420p"
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [None] * len(patches)  # type: ignore[list-item]
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for i, p in enumerate(patches):
        by_shape.setdefault(p.shape, []).append(i)
    for (ph, pw, _), idx in by_shape.items():
        m = len(idx)
        ch, cw = (ph // 2, pw // 2) if sub else (ph, pw)
        y, u, v = (np.empty((m, ph, pw), np.uint8), np.empty((m, ch, cw), np.uint8), np.empty((m, ch, cw), np.uint8))
        _convert(np.stack([patches[i] for i in idx]), y, u, v, sub)
        for j, i in enumerate(idx):
            out[i] = (y[j], u[j], v[j])
    return out


def blank_yuv(episode: Episode, settings: RenderSettings, pix_fmt: str = "yuv420p") -> np.ndarray:
    """The blank frame shown between trials."""
    w, h = settings.frame_size(episode.width, episode.height)
    rgb = np.empty((h, w, 3), dtype=np.uint8)
    rgb[...] = settings.letterbox
    return rgb_to_yuv(rgb, pix_fmt)


def episode_yuv(episode: Episode, settings: RenderSettings | None = None, pix_fmt: str = "yuv420p") -> Iterator[np.ndarray]:
    """The frames of :func:`bib.render.frames.episode_frames` as flat planar buffers (each valid until
    the next is asked for: copy a frame to keep it)."""
    s = settings or RenderSettings()
    blank = blank_yuv(episode, s, pix_fmt)
    gap = round(s.gap * s.fps)
    backgrounds = Backgrounds(pix_fmt)
    for i, trial in enumerate(episode.trials):
        if i:
            for _ in range(gap):
                yield blank
        yield from trial_yuv(trial, s, pix_fmt, backgrounds)
