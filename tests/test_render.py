"""Frames: timing from the speed rule, sprites where the layout puts them, letterboxing, sprite set."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bib.episode import Trial
from bib.errors import BibInputError
from bib.render.frames import (
    RenderSettings,
    episode_frame_count,
    episode_frames,
    frame_count,
    step_frames,
    trial_frames,
)
from bib.render.sprites import alpha_mask
from bib.tasks import make_unit
from bib.tasks.common import empty_layout, place
from bib.vocabulary import AGENT_SHAPES, OBJECT_SHAPES
from bib.world.grid import Agent


def _trial(path, objects=(("heart", (220, 40, 60), (6, 6)),)):
    agent = Agent("a", "pentagon", (40, 90, 220), path[0])
    objs = tuple(place((shape, color), chr(65 + i), cell) for i, (shape, color, cell) in enumerate(objects))
    return Trial("familiarization", empty_layout(objects=objs, agents=(agent,)), tuple(path), (), None)


def test_sprite_set_is_large_enough():
    assert len(OBJECT_SHAPES) >= 10 and len(AGENT_SHAPES) >= 3
    masks = {s: alpha_mask(s, 20) for s in [*OBJECT_SHAPES, *AGENT_SHAPES, "key", "lock_slot", "home_pad"]}
    for name, m in masks.items():
        assert m.shape == (20, 20) and 0.1 < m.mean() < 0.8, name
    # All shapes are distinct pictures.
    flat = [m.round(2).tobytes() for m in masks.values()]
    assert len(set(flat)) == len(flat)


@pytest.mark.parametrize("speed, fps", [(1.0, 100), (2.5, 25), (3.0, 30)])
def test_frame_count_follows_speed_rule(speed, fps):
    orth = _trial([(2, 2), (3, 2)])
    diag = _trial([(2, 2), (3, 3)])
    mixed = _trial([(2, 2), (3, 3), (4, 3), (5, 4), (5, 4)])  # two diagonals, one orthogonal, one stay
    s = RenderSettings(speed=speed, fps=fps, pause_start=0.5, pause_end=0.3)
    still = round(0.5 * fps) + round(0.3 * fps)
    assert frame_count(orth, s) == still + math.ceil(fps / speed - 1e-9) + 1
    assert frame_count(diag, s) == still + math.ceil(math.sqrt(2) * fps / speed - 1e-9) + 1
    assert frame_count(mixed, s) == still + math.ceil((2 * math.sqrt(2) + 2) * fps / speed - 1e-9) + 1
    assert sum(1 for _ in trial_frames(mixed, s)) == frame_count(mixed, s)


def _where_opaque(shape):
    ys, xs = np.nonzero(alpha_mask(shape, 20) >= 1.0)
    return ys, xs


def test_sprites_are_drawn_where_the_layout_puts_them():
    trial = _trial([(2, 2), (3, 3), (4, 4)], objects=(("heart", (220, 40, 60), (6, 6)), ("star", (40, 170, 200), (2, 7))))
    s = RenderSettings(pause_start=0.2)
    frames = list(trial_frames(trial, s))
    first, last = frames[0], frames[-1]
    assert first.shape == (200, 200, 3) and first.dtype == np.uint8
    for obj in trial.layout.objects:
        ys, xs = _where_opaque(obj.shape)
        x0, y0 = obj.cell[0] * 20, obj.cell[1] * 20
        assert (first[y0 + ys, x0 + xs] == obj.color).all()
    ys, xs = _where_opaque("pentagon")
    assert (first[40 + ys, 40 + xs] == (40, 90, 220)).all()  # agent at home (2, 2)
    assert (last[80 + ys, 80 + xs] == (40, 90, 220)).all()  # agent at the end (4, 4)
    assert (first[0:20, 0:20] == 0).all()  # border wall is black
    assert (first[5 * 20 : 6 * 20, 7 * 20 : 8 * 20] == 255).all()  # an empty cell is white
    # Mid-way, the agent sits where constant speed along the diagonal puts it (within a pixel of rounding).
    k = 15
    t = k / 25
    along = t * s.speed / math.sqrt(2)  # cells moved along each axis
    mid = frames[round(0.2 * 25) + k]
    agent_px = np.argwhere((mid == (40, 90, 220)).all(axis=2))
    opaque = np.argwhere(alpha_mask("pentagon", 20) >= 1.0)
    offset = agent_px.min(axis=0) - opaque.min(axis=0)
    assert np.abs(offset - round((2 + along) * 20)).max() <= 1


def test_letterboxed_canvas_centres_the_grid():
    trial = _trial([(2, 2), (3, 2)])
    s = RenderSettings(cell_px=72, fps=30, canvas=(1280, 720))
    frame = next(trial_frames(trial, s))
    assert frame.shape == (720, 1280, 3)
    assert (frame[:, :280] == 0).all() and (frame[:, 1000:] == 0).all()
    assert (frame[:72, 280:352] == 0).all()  # top-left border wall
    assert (frame[2 * 72 + 36, 280 + 5 * 72 : 280 + 6 * 72] == 255).all()
    with pytest.raises(BibInputError, match="canvas"):
        RenderSettings(cell_px=80, canvas=(640, 480)).frame_size(10, 10)


def test_episode_frames_have_blanks_between_trials():
    ep = make_unit("single-object", 1, 5)[0]
    s = RenderSettings(gap=0.4)
    n = sum(1 for _ in episode_frames(ep, s))
    assert n == episode_frame_count(ep, s) == sum(frame_count(t, s) for t in ep.trials) + 8 * 10


def test_bad_settings_are_rejected():
    with pytest.raises(BibInputError, match="'fps'"):
        RenderSettings(fps=0)
    with pytest.raises(BibInputError, match="'speed'"):
        RenderSettings(speed=-1)


def test_step_frames_put_the_agent_on_each_path_cell():
    path = [(2, 2), (3, 3), (4, 3)]
    frames = list(step_frames(_trial(path)))
    assert len(frames) == len(path)
    ys, xs = _where_opaque("pentagon")
    for frame, (x, y) in zip(frames, path):
        assert (frame[y * 20 + ys, x * 20 + xs] == (40, 90, 220)).all()


@pytest.mark.parametrize("task, cell_px, size", [("single-object", 8, 84), ("agent-blocked-instrumental", 8, 84),
                                                  ("single-object", 20, 84), ("single-object", 8, 80)])
def test_step_pictures_are_the_resized_step_frames_with_exact_boxes(task, cell_px, size):
    import cv2

    from bib.render.frames import step_pictures
    from bib.tasks import make_unit

    for trial in make_unit(task, 1, 4)[0].trials:
        pics = step_pictures(trial, cell_px, size)
        want = [cv2.resize(f, (size, size), interpolation=cv2.INTER_AREA) if f.shape[0] != size else f
                for f in step_frames(trial, RenderSettings(cell_px=cell_px))]
        assert np.array_equal(pics.frames, np.stack(want))
        for frame, g, (y0, y1, x0, x1) in zip(pics.frames, pics.background, pics.boxes):
            assert y0 <= y1 and x0 <= x1  # the agent is always visible
            outside = np.ones(frame.shape[:2], dtype=bool)
            outside[y0 : y1 + 1, x0 : x1 + 1] = False
            assert np.array_equal(frame[outside], pics.backgrounds[g][outside])
            inside = frame[y0 : y1 + 1, x0 : x1 + 1] != pics.backgrounds[g][y0 : y1 + 1, x0 : x1 + 1]
            assert inside.any(axis=(1, 2))[[0, -1]].all() and inside.any(axis=(0, 2))[[0, -1]].all()  # tight


def test_frames_larger_than_a_video_allows_are_refused_before_anything_is_drawn():
    """libx264 opens at most 16384 px a side; bib stops at RenderSettings.MAX_SIDE (8192) (issue 28)."""
    s = RenderSettings()
    assert s.MAX_SIDE == 8192 and s.frame_size(409, 10) == (8180, 200)
    with pytest.raises(BibInputError, match=r"^a 410 x 10 grid at cell_px 20 makes 8200 x 200 px frames; videos "
                                            r"allow at most 8192 px a side \(use a smaller --cell-px\)$"):
        s.frame_size(410, 10)
    with pytest.raises(BibInputError, match="makes 2000000 x 2000000 px frames"):
        s.frame_size(100000, 100000)
    # a canvas beyond MAX_SIDE is refused as the settings are made (issue 39), before any frame is sized
    with pytest.raises(BibInputError, match=r"^render setting 'canvas' must be two whole numbers of pixels from 1 to "
                                            r"8192, got \(9000, 100\)$"):
        RenderSettings(canvas=(9000, 100))
