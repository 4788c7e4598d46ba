"""step_pictures (sheets of agents, rectangles read back) gives the bytes of resizing every whole frame."""

from __future__ import annotations

import numpy as np
import pytest

from bib.render.frames import _reach, _step_pictures_whole, step_pictures
from bib.tasks import make_unit, task_ids


def _trials(seeds):
    """Every trial of unit 0 of every registered task, for each seed (familiarization and test trials, keys,
    barriers, locks, several agents' shapes and grid sizes)."""
    return [t for task in task_ids() for seed in seeds for ep in make_unit(task, 0, seed) for t in ep.trials]


@pytest.fixture(scope="module")
def trials():
    return {seed: _trials((seed,)) for seed in (1, 2)}


# Upscales (80 -> 84, 60 -> 84, 50 -> 84 at cell 5 on a 10 x 10 grid), downscales (80 -> 64, 200 -> 84,
# 80 -> 37: one period, the whole picture), the native size (80 -> 80: a copy).
SIZES = [(8, 84), (6, 84), (5, 84), (8, 64), (20, 84), (8, 37), (8, 80)]


def _check(trials, cell_px, size):
    assert len({t.layout.key is not None for t in trials}) == 2 and any(t.layout.barriers for t in trials)
    for trial in trials:
        got, want = step_pictures(trial, cell_px, size), _step_pictures_whole(trial, cell_px, size)
        for name in ("frames", "backgrounds", "background", "boxes"):
            a, b = getattr(got, name), getattr(want, name)
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), (name, cell_px, size)


@pytest.mark.parametrize("cell_px, size", SIZES)
def test_step_pictures_equal_the_whole_frame_path_on_every_task(trials, cell_px, size):
    _check([t for seed in ((1, 2) if cell_px < 20 else (1,)) for t in trials[seed]], cell_px, size)  # 200 px: slower


@pytest.mark.slow
@pytest.mark.parametrize("cell_px, size", [*SIZES, (7, 84), (12, 84), (16, 84), (10, 37), (4, 84)])
def test_step_pictures_equal_the_whole_frame_path_on_more_seeds(cell_px, size):
    _check(_trials(range(3, 9)), cell_px, size)


def test_reach_covers_what_the_resize_reads():
    """Changing one source pixel changes only output pixels whose reach holds it (OpenCV, both directions)."""
    import cv2

    rng = np.random.default_rng(0)
    for n, size in [(80, 84), (60, 84), (80, 64), (200, 84), (50, 84), (80, 37)]:
        lo, hi = _reach(n, size)
        assert all(a <= b for a, b in zip(lo, lo[1:])) and all(a <= b for a, b in zip(hi, hi[1:]))
        img = rng.integers(0, 256, (3, n, 3), dtype=np.uint8)
        base = cv2.resize(img, (size, 3), interpolation=cv2.INTER_AREA)
        for s in range(n):
            other = img.copy()
            other[:, s] = 255 - other[:, s]
            changed = np.flatnonzero((cv2.resize(other, (size, 3), interpolation=cv2.INTER_AREA) != base).any(axis=(0, 2)))
            assert all(lo[d] <= s < hi[d] for d in changed), (n, size, s)
