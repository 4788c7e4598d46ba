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
from bib.render.frames import PIXEL_FORMATS, RenderSettings, _Painter, differs, trial_state_arrays

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


def _convert(rgb: np.ndarray, y: np.ndarray, u: np.ndarray, v: np.ndarray, sub: bool) -> None:
    """BT.601 limited-range conversion of ``rgb`` (uint8 ``... x h x w x 3``) into the planes' regions;
    with ``sub`` chroma is taken from each 2 x 2 block's sum (``h`` and ``w`` even).

    Integer weights scaled by 256 (Y: 66, 129, 25; U: -38, -74, 112; V: 112, -94, -18), rounded by
    adding half and shifting; a 2 x 2 block's chroma is its four pixels' weighted sums rounded once,
    computed as the weights times the block's channel sums (the same integers). One channel at a time
    (three multiply-adds per plane): several times faster than an integer matrix product.
    """
    r, g, b = (rgb[..., k].astype(np.int32) for k in range(3))
    y[...] = ((66 * r + 129 * g + 25 * b + 128) >> 8) + 16
    if sub:  # the four pixels' sums, rounded once
        r, g, b = (c[..., 0::2, 0::2] + c[..., 1::2, 0::2] + c[..., 0::2, 1::2] + c[..., 1::2, 1::2] for c in (r, g, b))
        half, shift = 512, 10
    else:
        half, shift = 128, 8
    u[...] = ((-38 * r - 74 * g + 112 * b + half) >> shift) + 128
    v[...] = ((112 * r - 94 * g - 18 * b + half) >> shift) + 128


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
    diff = differs(a, b)
    rows, cols = np.flatnonzero(diff.any(axis=1)), np.flatnonzero(diff.any(axis=0))
    return (int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1) if len(rows) else None


class Backgrounds:
    """What the trials of one episode share once converted: their backgrounds (the first whole, each later
    one as the first's planes with the box where it differs converted again; backgrounds share walls and
    most objects) and the agent's boxes (:attr:`patches`)."""

    def __init__(self, pix_fmt: str) -> None:
        self.pix_fmt = pix_fmt
        self.ref: tuple[np.ndarray, np.ndarray] | None = None
        self.patches: dict[tuple, np.ndarray] = {}
        """(agent, key carried, box size, agent's place in the box, the box's background bytes) -> the box
        drawn and converted, its Y, U and V values flat: the agent mostly crosses plain cells, so a few
        boxes serve most frames."""

    def __call__(self, img: np.ndarray) -> np.ndarray:
        if self.ref is None or self.ref[0].shape != img.shape:
            self.ref = (img, rgb_to_yuv(img, self.pix_fmt))
            return self.ref[1]
        box = changed_box(img, self.ref[0])
        out = self.ref[1].copy()
        if box is not None:
            _update(out, img, box, self.pix_fmt)
        return out


def _groups(keys: np.ndarray, members: np.ndarray) -> dict[tuple[int, ...], np.ndarray]:
    """The ``members`` grouped by their row of ``keys`` (small integers), in order of first appearance."""
    out: dict[tuple[int, ...], list[int]] = {}
    for key, m in zip(map(tuple, keys.tolist()), members.tolist()):
        out.setdefault(key, []).append(m)
    return {key: np.asarray(ms) for key, ms in out.items()}


def _box_indices(y0: np.ndarray, x0: np.ndarray, ph: int, pw: int, w: int, h: int, pix_fmt: str) -> np.ndarray:
    """Per box (top-left ``(y0, x0)``, even, ``ph x pw``): the flat indices of its Y, U and V values in a frame."""
    c = 2 if pix_fmt == "yuv420p" else 1
    n, cw = w * h, w // c
    ty = (np.arange(ph)[:, None] * w + np.arange(pw)[None, :]).reshape(-1)
    tc = (np.arange(ph // c)[:, None] * cw + np.arange(pw // c)[None, :]).reshape(-1)
    oy = y0 * w + x0
    ou = n + (y0 // c) * cw + x0 // c
    return np.concatenate([oy[:, None] + ty, ou[:, None] + tc, (ou + (h // c) * cw)[:, None] + tc], axis=1)


def _agent_boxes(painter: _Painter, img: np.ndarray, y0: np.ndarray, x0: np.ndarray, dy: int, dx: int, ph: int, pw: int,
                 carrying: bool, cache: dict[tuple, np.ndarray], pix_fmt: str) -> np.ndarray:
    """``[m, L]``: the Y, U and V values of each box ``(y0, x0)`` (``ph x pw``) of ``img`` with the agent
    drawn at ``(dx, dy)`` in it; boxes over the same background bytes are drawn and converted once."""
    sub = pix_fmt == "yuv420p"
    agent = painter.trial.layout.agent
    cut = np.lib.stride_tricks.sliding_window_view(img, (ph, pw, 3))[y0, x0, 0]  # a copy, [m, ph, pw, 3]
    head = (agent.shape, agent.color, carrying, dy, dx, ph, pw)
    keys = [(*head, one.tobytes()) for one in cut]
    missing: dict[tuple, int] = {}  # one box per background not converted yet
    for j, key in enumerate(keys):
        if key not in cache and key not in missing:
            missing[key] = j
    if missing:
        firsts = list(missing.values())
        todo = cut[firsts]
        if not painter.draw_agents(todo, dx, dy, carrying):  # the agent overhangs its box: one at a time
            for one in todo:
                painter.draw_agent(one, dx, dy, carrying)
        ch, cw = (ph // 2, pw // 2) if sub else (ph, pw)
        m = len(firsts)
        yy, uu, vv = np.empty((m, ph, pw), np.uint8), np.empty((m, ch, cw), np.uint8), np.empty((m, ch, cw), np.uint8)
        _convert(todo, yy, uu, vv, sub)
        values = np.concatenate([yy.reshape(m, -1), uu.reshape(m, -1), vv.reshape(m, -1)], axis=1)
        for i, j in enumerate(firsts):
            cache[keys[j]] = values[i]
    return np.stack([cache[key] for key in keys])


def trial_yuv(trial: Trial, settings: RenderSettings, pix_fmt: str = "yuv420p",
              backgrounds: Backgrounds | None = None) -> Iterator[np.ndarray]:
    """The frames of :func:`bib.render.frames.trial_frames` as flat planar buffers.

    A frame shown several times in a row (a pause) is the same array yielded again; no array is
    written once yielded, so the encoder can hold on to frames and write many at once. A frame is
    its background's converted planes with the agent's box (even edges) replaced by that box drawn and
    converted. The boxes of all states are cut out before the first frame and each distinct one is
    drawn and converted once (in batches), so a frame costs one copy of the background and one scatter
    of the box. While a barrier fades, the fading cells and the agent's box are blended, drawn and
    converted frame by frame.
    """
    painter = _Painter(trial, settings)
    shared = backgrounds or Backgrounds(pix_fmt)
    h, w = painter.open.shape[:2]
    px = settings.cell_px
    st = trial_state_arrays(trial, settings)
    ox, oy = painter.offset
    ax = np.rint(st.x * px).astype(np.intp) + ox  # the agent's corner, as _Painter.agent_corner
    ay = np.rint(st.y * px).astype(np.intp) + oy
    by0, bx0 = np.maximum(ay & ~1, 0), np.maximum(ax & ~1, 0)  # its box widened to even edges (_even)
    by1, bx1 = np.minimum(ay + px + ((ay + px) & 1), h), np.minimum(ax + px + ((ax + px) & 1), w)
    fading = (st.fade > 0.0) & (st.fade < 1.0)
    # The background outside the boxes: 0 with the key, 1 closed (a fading frame's too), 2 open.
    kind = np.where(st.fade <= 0.0, 2, np.where(st.before_pickup & ~fading, 0, 1))
    images = (painter.with_key, painter.no_key, painter.open)
    bases: dict[int, np.ndarray] = {}
    for g in np.unique(kind).tolist():
        same = [j for j in bases if images[j] is images[g]]
        bases[g] = bases[same[0]] if same else shared(images[g])

    index: list[np.ndarray] = [None] * len(kind)  # type: ignore[list-item]  # per state: where its boxes go
    values: list[np.ndarray] = [None] * len(kind)  # type: ignore[list-item]  # and their values
    moving = np.flatnonzero(~fading)
    keys = np.stack([kind, st.carrying, ay - by0, ax - bx0, by1 - by0, bx1 - bx0], axis=1)[moving]
    for (k_img, carrying, dy, dx, ph, pw), ks in _groups(keys, moving).items():
        vals = _agent_boxes(painter, images[k_img], by0[ks], bx0[ks], dy, dx, ph, pw, bool(carrying), shared.patches, pix_fmt)
        idx = _box_indices(by0[ks], bx0[ks], ph, pw, w, h, pix_fmt)
        for j, k in enumerate(ks.tolist()):
            index[k], values[k] = idx[j], vals[j]

    fade_box = [_even(painter.fade_box, h, w)] if painter.fade_box is not None else []
    fades = np.flatnonzero(fading)
    keys = np.stack([by0, by1, bx0, bx1, ay, ax, st.carrying], axis=1)[fades]
    for (b0, b1, c0, c1, y, x, carrying), ks in _groups(keys, fades).items():  # usually one: the agent waits
        vals, idx = _fading_boxes(painter, [*fade_box, (b0, b1, c0, c1)], x, y, bool(carrying), st.fade[ks], pix_fmt)
        for j, k in enumerate(ks.tolist()):
            index[k], values[k] = idx, vals[j]

    kinds = kind.tolist()
    last, work = -1, bases[kinds[0]]
    for k in st.index.tolist():
        if k != last:
            last = k
            work = bases[kinds[k]].copy()
            work[index[k]] = values[k]
        yield work


def _fading_boxes(painter: _Painter, boxes: list[tuple[int, int, int, int]], x: int, y: int, carrying: bool,
                  fades: np.ndarray, pix_fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """The values ``[m, L]`` (one row per fade) and the flat indices ``[L]`` of ``boxes`` (even; the fading
    cells' box, which holds every fading pixel, and the agent's, whose corner is ``(x, y)``) of fading
    frames (:meth:`_Painter.frame`), drawn only over the region the boxes span, all fades at once."""
    h, w = painter.open.shape[:2]
    y0, y1 = min(b[0] for b in boxes), max(b[1] for b in boxes)
    x0, x1 = min(b[2] for b in boxes), max(b[3] for b in boxes)
    m = len(fades)
    crops = np.repeat(painter.no_key[None, y0:y1, x0:x1], m, axis=0)
    rows, cols = np.divmod(painter.fade_pixels, w)
    crops.reshape(m, -1, 3)[:, (rows - y0) * (x1 - x0) + cols - x0] = painter.fade_values(fades)
    if not painter.draw_agents(crops, x - x0, y - y0, carrying):
        for one in crops:
            painter.draw_agent(one, x - x0, y - y0, carrying)
    sub = pix_fmt == "yuv420p"
    values, index = [], []
    for b0, b1, c0, c1 in boxes:  # boxes may overlap: an index then gets the same value twice
        ph, pw = b1 - b0, c1 - c0
        ch, cw = (ph // 2, pw // 2) if sub else (ph, pw)
        yy, uu, vv = np.empty((m, ph, pw), np.uint8), np.empty((m, ch, cw), np.uint8), np.empty((m, ch, cw), np.uint8)
        _convert(crops[:, b0 - y0 : b1 - y0, c0 - x0 : c1 - x0], yy, uu, vv, sub)
        values += [yy.reshape(m, -1), uu.reshape(m, -1), vv.reshape(m, -1)]
        index.append(_box_indices(np.array([b0]), np.array([c0]), ph, pw, w, h, pix_fmt)[0])
    return np.concatenate(values, axis=1), np.concatenate(index)


def blank_yuv(episode: Episode, settings: RenderSettings, pix_fmt: str = "yuv420p") -> np.ndarray:
    """The blank frame shown between trials."""
    w, h = settings.frame_size(episode.width, episode.height)
    rgb = np.empty((h, w, 3), dtype=np.uint8)
    rgb[...] = settings.letterbox
    return rgb_to_yuv(rgb, pix_fmt)


def episode_yuv(episode: Episode, settings: RenderSettings | None = None, pix_fmt: str = "yuv420p", start: int = 0,
                stop: int | None = None) -> Iterator[np.ndarray]:
    """The frames of :func:`bib.render.frames.episode_frames` as flat planar buffers (a frame repeated
    in a row is the same array yielded again; none is written once yielded).

    With ``start`` and ``stop``: only the frames of trials ``start`` to ``stop - 1``, each followed by the
    blank between trials unless it is the episode's last (a segment of an H.264 video).
    """
    s = settings or RenderSettings()
    blank = blank_yuv(episode, s, pix_fmt)
    gap = round(s.gap * s.fps)
    backgrounds = Backgrounds(pix_fmt)
    n = len(episode.trials)
    for i in range(start, n if stop is None else stop):
        yield from trial_yuv(episode.trials[i], s, pix_fmt, backgrounds)
        if i < n - 1:
            for _ in range(gap):
                yield blank
