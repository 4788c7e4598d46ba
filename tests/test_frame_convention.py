"""One frame convention (issue 42 item 3): bib.data's frames, the Gymnasium environments' ``frames`` observations and
the learned observers' input are the same arrays for the same state, made by one function
(bib.observers.encoders.frame_states: 8 px per cell, area-resized, RGB, uint8 / 255 as float32)."""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np
import pytest
import torch

from bib.data import FRAME_CELL_PX, FRAME_SIZE, Encoding
from bib.envs import GridworldEnv
from bib.observers.bc import BCMLPObserver
from bib.observers.encoders import collate, frame_states, trial_actions
from bib.render.frames import RenderSettings, step_frames
from bib.tasks import REGISTRY, make_unit


def three_routes(task: str, size: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, object]:
    """The test trial of the unit an environment draws, through the environment (stepping its moves), bib.data and a
    frames bc-mlp's batch (``Batch.dense``): three float32 ``[n + 1, 3, size, size]`` arrays, and the trial."""
    env = GridworldEnv(task, obs_type="frames", image_size=size)
    first, info = env.reset(seed=seed)
    episode = make_unit(task, info["unit"], 0)[0]
    trial = episode.trials[-1]
    seen = [first]
    for action in trial_actions(trial)[:-1]:
        seen.append(env.step(int(action))[0])
    data = Encoding("frames", size, ("test",)).encode(episode)["test_states"].numpy()
    observer = BCMLPObserver(input="frames", image_size=size)
    if len(episode.trials) < 2:  # a one-trial background task: the learned observers need a context trial
        episode = dataclasses.replace(episode, trials=(trial, trial))
    encoded = observer.encode(episode)
    batch = collate([encoded])
    start = int(batch.query_index[0])
    learned = batch.dense(torch.arange(start, start + encoded.lengths[-1])).numpy()
    return np.stack(seen), data, learned, trial


@pytest.mark.parametrize("task", list(REGISTRY))
def test_bib_data_the_envs_and_the_learned_observers_see_the_same_frames(task: str) -> None:
    env, data, learned, trial = three_routes(task, FRAME_SIZE, seed=3)
    assert env.dtype == data.dtype == learned.dtype == np.float32
    assert env.shape == data.shape == learned.shape == (len(trial.path), 3, FRAME_SIZE, FRAME_SIZE)
    assert np.array_equal(env, data) and np.array_equal(data, learned)
    assert 0.0 <= data.min() and data.max() <= 1.0 and data.max() > 0.5


@pytest.mark.parametrize("task, size", [("key-door", 64), ("instrumental-blocking", 40), ("preference", 100)])
def test_the_routes_agree_at_other_sizes_and_with_key_events(task: str, size: int) -> None:
    env, data, learned, trial = three_routes(task, size, seed=11)
    assert env.shape[-1] == size and np.array_equal(env, data) and np.array_equal(data, learned)


def test_the_convention_is_8_px_per_cell_area_resized_rgb_over_255() -> None:
    """Against an independent computation: the renderer's frame at 8 px per cell (80 x 80 for a 10 x 10 grid), resized
    to 84 x 84 by OpenCV's area interpolation, RGB channels first, divided by 255 as float32."""
    assert (FRAME_CELL_PX, FRAME_SIZE) == (8, 84)
    trial = make_unit("preference", 0, 5)[0].trials[-1]
    raw = list(step_frames(trial, RenderSettings(cell_px=8)))
    assert raw[0].shape == (80, 80, 3)
    expected = np.stack([cv2.resize(f, (84, 84), interpolation=cv2.INTER_AREA) for f in raw]).transpose(0, 3, 1, 2)
    frames = frame_states(trial)
    assert frames.dtype == np.uint8 and np.array_equal(frames, expected)
    data = Encoding("frames", 84, ("test",)).encode(make_unit("preference", 0, 5)[0])["test_states"].numpy()
    assert np.array_equal(data, expected.astype(np.float32) / np.float32(255))


def test_frame_observations_pass_the_checker_and_bad_sizes_are_refused() -> None:
    from gymnasium.utils.env_checker import check_env

    from bib.errors import BibInputError

    env = GridworldEnv("instrumental-blocking", obs_type="frames", image_size=40)
    check_env(env, skip_render_check=True)
    assert env.observation_space.shape == (3, 40, 40) and env.observation_space.dtype == np.float32
    for bad in (4, 40.0, True):
        with pytest.raises(BibInputError, match="image_size must be an integer >= 8"):
            GridworldEnv("preference", obs_type="frames", image_size=bad)
