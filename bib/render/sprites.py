"""Procedural sprites (no image files): object, agent, key and lock shapes as alpha masks.

Shapes are drawn with pygame on an off-screen surface at 4x resolution and averaged down, which
gives anti-aliased edges. Every sprite is cached by (shape, size), so rendering a frame is only
numpy blending. Which shapes exist (and in which order observers see them) is
:mod:`bib.vocabulary`'s; this module draws exactly those (checked at import).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from bib.vocabulary import SHAPES

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
import pygame  # noqa: E402

SUPERSAMPLE = 4
WHITE = (255, 255, 255, 255)
CLEAR = (0, 0, 0, 0)

Draw = Callable[[pygame.Surface, int], None]
_SHAPES: dict[str, Draw] = {}


def _shape(name: str, kind: str) -> Callable[[Draw], Draw]:
    """Register the drawing of ``name`` (``kind`` documents the section; the vocabulary decides)."""

    def deco(fn: Draw) -> Draw:
        _SHAPES[name] = fn
        return fn

    return deco


def _poly(surf: pygame.Surface, s: int, pts: list[tuple[float, float]]) -> None:
    pygame.draw.polygon(surf, WHITE, [(x * s, y * s) for x, y in pts])


def _circle(surf: pygame.Surface, s: int, cx: float, cy: float, r: float, color=WHITE) -> None:
    pygame.draw.circle(surf, color, (cx * s, cy * s), r * s)


def _regular(n: int, r: float, rot: float = -math.pi / 2, cx: float = 0.5, cy: float = 0.5) -> list[tuple[float, float]]:
    return [(cx + r * math.cos(rot + 2 * math.pi * k / n), cy + r * math.sin(rot + 2 * math.pi * k / n)) for k in range(n)]


# ---- objects (coordinates are fractions of the cell)


@_shape("heart", "object")
def _heart(surf, s):
    _circle(surf, s, 0.33, 0.36, 0.2)
    _circle(surf, s, 0.67, 0.36, 0.2)
    _poly(surf, s, [(0.14, 0.44), (0.86, 0.44), (0.5, 0.88)])


@_shape("moon", "object")
def _moon(surf, s):
    _circle(surf, s, 0.5, 0.5, 0.4)
    _circle(surf, s, 0.68, 0.38, 0.33, CLEAR)


@_shape("double_diamond", "object")
def _double_diamond(surf, s):
    _poly(surf, s, [(0.5, 0.06), (0.74, 0.3), (0.5, 0.54), (0.26, 0.3)])
    _poly(surf, s, [(0.5, 0.46), (0.74, 0.7), (0.5, 0.94), (0.26, 0.7)])


@_shape("flag", "object")
def _flag(surf, s):
    pygame.draw.rect(surf, WHITE, pygame.Rect(0.2 * s, 0.1 * s, 0.1 * s, 0.82 * s))
    _poly(surf, s, [(0.3, 0.1), (0.86, 0.3), (0.3, 0.52)])


@_shape("capsule", "object")
def _capsule(surf, s):
    pygame.draw.rect(surf, WHITE, pygame.Rect(0.3 * s, 0.08 * s, 0.4 * s, 0.84 * s), border_radius=int(0.2 * s))


@_shape("vase", "object")
def _vase(surf, s):
    _circle(surf, s, 0.5, 0.62, 0.3)
    pygame.draw.rect(surf, WHITE, pygame.Rect(0.38 * s, 0.12 * s, 0.24 * s, 0.4 * s))
    pygame.draw.rect(surf, WHITE, pygame.Rect(0.3 * s, 0.08 * s, 0.4 * s, 0.1 * s))


@_shape("star", "object")
def _star(surf, s):
    outer = _regular(5, 0.46)
    inner = _regular(5, 0.19, rot=-math.pi / 2 + math.pi / 5)
    _poly(surf, s, [p for pair in zip(outer, inner) for p in pair])


@_shape("cross", "object")
def _cross(surf, s):
    pygame.draw.rect(surf, WHITE, pygame.Rect(0.38 * s, 0.1 * s, 0.24 * s, 0.8 * s))
    pygame.draw.rect(surf, WHITE, pygame.Rect(0.1 * s, 0.38 * s, 0.8 * s, 0.24 * s))


@_shape("ring", "object")
def _ring(surf, s):
    _circle(surf, s, 0.5, 0.5, 0.42)
    _circle(surf, s, 0.5, 0.5, 0.22, CLEAR)


@_shape("spoon", "object")
def _spoon(surf, s):
    pygame.draw.ellipse(surf, WHITE, pygame.Rect(0.3 * s, 0.06 * s, 0.4 * s, 0.42 * s))
    pygame.draw.rect(surf, WHITE, pygame.Rect(0.44 * s, 0.4 * s, 0.12 * s, 0.54 * s))


@_shape("wine", "object")
def _wine(surf, s):
    _poly(surf, s, [(0.22, 0.08), (0.78, 0.08), (0.64, 0.44), (0.36, 0.44)])
    pygame.draw.rect(surf, WHITE, pygame.Rect(0.45 * s, 0.4 * s, 0.1 * s, 0.4 * s))
    pygame.draw.rect(surf, WHITE, pygame.Rect(0.26 * s, 0.8 * s, 0.48 * s, 0.1 * s))


@_shape("clove_tree", "object")
def _clove_tree(surf, s):
    pygame.draw.rect(surf, WHITE, pygame.Rect(0.43 * s, 0.5 * s, 0.14 * s, 0.44 * s))
    for cx, cy in ((0.5, 0.24), (0.3, 0.44), (0.7, 0.44)):
        _circle(surf, s, cx, cy, 0.19)


@_shape("curved_triangle", "object")
def _curved_triangle(surf, s):
    pts = _regular(3, 0.34, cy=0.56)
    _poly(surf, s, pts)
    for x, y in pts:
        _circle(surf, s, x, y, 0.1)
    _poly(surf, s, _regular(3, 0.42, cy=0.56))


@_shape("hexagon", "object")
def _hexagon(surf, s):
    _poly(surf, s, _regular(6, 0.44, rot=0))


@_shape("medal", "object")
def _medal(surf, s):
    _poly(surf, s, [(0.3, 0.04), (0.44, 0.04), (0.56, 0.4), (0.42, 0.4)])
    _poly(surf, s, [(0.56, 0.04), (0.7, 0.04), (0.58, 0.4), (0.44, 0.4)])
    _circle(surf, s, 0.5, 0.64, 0.28)


# ---- agents


@_shape("pentagon", "agent")
def _pentagon(surf, s):
    _poly(surf, s, _regular(5, 0.46, cy=0.53))


@_shape("clove", "agent")
def _clove(surf, s):
    for k in range(4):
        a = math.pi / 4 + k * math.pi / 2
        _circle(surf, s, 0.5 + 0.2 * math.cos(a), 0.5 + 0.2 * math.sin(a), 0.24)


@_shape("kite", "agent")
def _kite(surf, s):
    _poly(surf, s, [(0.5, 0.04), (0.86, 0.38), (0.5, 0.96), (0.14, 0.38)])


# ---- key and lock


@_shape("key", "other")
def _key(surf, s):
    _poly(surf, s, [(0.16, 0.18), (0.86, 0.5), (0.16, 0.82)])


@_shape("lock_slot", "other")
def _lock_slot(surf, s):
    pygame.draw.polygon(surf, WHITE, [(0.16 * s, 0.18 * s), (0.86 * s, 0.5 * s), (0.16 * s, 0.82 * s)], max(1, int(0.1 * s)))


@_shape("home_pad", "other")
def _home_pad(surf, s):
    pygame.draw.rect(surf, WHITE, pygame.Rect(0.06 * s, 0.06 * s, 0.88 * s, 0.88 * s), border_radius=int(0.18 * s))


if set(_SHAPES) != SHAPES:  # the vocabulary and the drawings must name the same sprites
    raise RuntimeError(f"sprites drawn {sorted(set(_SHAPES) ^ SHAPES)} do not match bib.vocabulary")


def shape_names() -> list[str]:
    """Every sprite shape name."""
    return sorted(_SHAPES)


@lru_cache(maxsize=1024)
def alpha_mask(shape: str, size: int) -> np.ndarray:
    """Coverage of ``shape`` in a ``size x size`` cell, float32 in [0, 1], read-only.

    Raises:
        KeyError: for an unknown shape (the message lists the known ones).
    """
    if shape not in _SHAPES:
        raise KeyError(f"unknown sprite shape {shape!r}; known: {', '.join(shape_names())}")
    big = size * SUPERSAMPLE
    surf = pygame.Surface((big, big), pygame.SRCALPHA, 32)
    surf.fill(CLEAR)
    _SHAPES[shape](surf, big)
    alpha = pygame.surfarray.array_alpha(surf).T.astype(np.float32) / 255.0  # (y, x)
    mask = alpha.reshape(size, SUPERSAMPLE, size, SUPERSAMPLE).mean(axis=(1, 3))
    mask.flags.writeable = False
    return mask


@lru_cache(maxsize=1024)
def sprite(shape: str, color: tuple[int, int, int], size: int) -> tuple[np.ndarray, np.ndarray]:
    """A sprite ready to blend: ``(alpha [size, size, 1], alpha * color [size, size, 3])`` as float32."""
    a = alpha_mask(shape, size)[:, :, None]
    premul = a * np.asarray(color, dtype=np.float32)[None, None, :]
    a.flags.writeable = False
    premul.flags.writeable = False
    return a, premul


def blend(canvas: np.ndarray, shape: str, color: tuple[int, int, int], x: int, y: int, size: int) -> None:
    """Alpha-blend a sprite onto ``canvas`` (uint8 H x W x 3) with its top-left corner at pixel (x, y).

    Parts outside the canvas are clipped.
    """
    a, premul = sprite(shape, tuple(color), size)
    h, w = canvas.shape[:2]
    x0, y0 = max(x, 0), max(y, 0)
    x1, y1 = min(x + size, w), min(y + size, h)
    if x0 >= x1 or y0 >= y1:
        return
    sa = a[y0 - y : y1 - y, x0 - x : x1 - x]
    sp = premul[y0 - y : y1 - y, x0 - x : x1 - x]
    region = canvas[y0:y1, x0:x1]
    region[...] = (region * (1.0 - sa) + sp + 0.5).astype(np.uint8)


def blend_all(regions: np.ndarray, shape: str, color: tuple[int, int, int], size: int) -> None:
    """:func:`blend` into a batch of ``size x size`` regions at once (uint8 ``[..., size, size, 3]``): the
    bytes of blending into each region alone (the same float32 operations, element by element)."""
    keep, premul = _blend_terms(shape, tuple(color), size)
    regions[...] = (regions * keep + premul + 0.5).astype(np.uint8)


@lru_cache(maxsize=64)
def _blend_terms(shape: str, color: tuple[int, int, int], size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(1 - alpha)`` spread over the three channels (the same float32 values; a batch's innermost loop
    then runs along whole rows, not 3 channels) and ``alpha * color``."""
    a, premul = sprite(shape, color, size)
    keep = np.ascontiguousarray(np.broadcast_to(1.0 - a, premul.shape))
    keep.flags.writeable = False
    return keep, premul
