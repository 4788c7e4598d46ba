"""bib.envs: a Gymnasium environment per registered task; replaying a generated trial earns its reward."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from bib.envs import ENV_IDS, GridworldEnv, env_id
from bib.errors import BibInputError
from bib.observers.encoders import symbolic_states
from bib.tasks import REGISTRY, make_unit
from bib.world.dynamics import STAY, action_between
from bib.world.planning import path_cost


def test_every_task_has_a_registered_id() -> None:
    assert ENV_IDS == [env_id(t) for t in REGISTRY]
    assert all(e in gym.envs.registry for e in ENV_IDS)


@pytest.mark.parametrize("task", ["preference", "instrumental-blocking", "navigation", "key-door"])
def test_gymnasium_checker_passes(task: str) -> None:
    check_env(gym.make(f"bib.envs:{env_id(task)}").unwrapped, skip_render_check=True)


@pytest.mark.parametrize("task", ["single-object", "instrumental-no-barrier", "agent-blocked-instrumental", "key-door"])
def test_replaying_the_trial_reaches_its_goal_with_its_observations(task: str) -> None:
    env = GridworldEnv(task, step_cost=0.01)
    obs, info = env.reset(seed=3)
    trial = make_unit(task, info["unit"], 0)[0].test
    expected_obs = symbolic_states(trial)
    total, events = 0.0, []
    h, w = expected_obs.shape[2:]
    assert np.array_equal(obs[:, :h, :w], expected_obs[0]) and not obs[:, h:, :].any()
    for i, (a, b) in enumerate(zip(trial.path, trial.path[1:])):
        obs, reward, terminated, truncated, info = env.step(action_between(a, b))
        total += reward
        events += info["events"]
        assert info["cell"] == b and not truncated
        assert np.array_equal(obs[:, :h, :w], expected_obs[i + 1])
        assert terminated == (i == len(trial.path) - 2)
    assert info["reached"] == trial.goal
    assert total == pytest.approx(1.0 - 0.01 * path_cost(trial.path))
    assert events == [e.type for e in trial.events]


def test_illegal_moves_stay_and_cost_one_step() -> None:
    env = GridworldEnv("navigation", step_cost=0.5)
    env.reset(seed=0)
    start = env.unwrapped._state.cell
    _, reward, terminated, _, info = env.step(1)  # NE: diagonals are illegal on 4-connected grids
    assert info["cell"] == start and reward == -0.5 and not terminated
    _, reward, _, _, info = env.step(STAY)
    assert info["cell"] == start and reward == -0.5


def test_truncation_and_seeding() -> None:
    env = GridworldEnv("single-object", max_steps=2)
    a, info_a = env.reset(seed=11)
    b, info_b = env.reset(seed=11)
    assert info_a["unit"] == info_b["unit"] and np.array_equal(a, b)
    env.step(STAY)
    assert env.step(STAY)[3] is True


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(BibInputError, match="unknown task id"):
        GridworldEnv("nope")
    with pytest.raises(BibInputError, match="trial must be one of"):
        GridworldEnv("single-object", trial="first")
    with pytest.raises(BibInputError, match="does not fit grid=8"):
        GridworldEnv("navigation", grid=8).reset(seed=29)  # seed 29 draws a navigation layout wider than 8 cells


@pytest.mark.parametrize("task", ["preference", "instrumental-blocking", "navigation"])
def test_pixel_observations_are_the_renderers_frames_and_pass_the_checker(task: str) -> None:
    from bib.render.frames import RenderSettings, step_frames

    env = gym.make(f"bib.envs:{env_id(task)}", obs_type="pixels", cell_px=6, render_mode="rgb_array").unwrapped
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert obs.shape == (env.grid * 6, env.grid * 6, 3) and obs.dtype == np.uint8
    trial = make_unit(task, info["unit"], 0)[0].test
    frames = list(step_frames(trial, RenderSettings(cell_px=6)))  # the trial's own frames, key and lock included
    h, w = frames[0].shape[:2]
    assert np.array_equal(obs[:h, :w], frames[0]) and not obs[h:].any() and not obs[:, w:].any()
    for i, (a, b) in enumerate(zip(trial.path, trial.path[1:])):
        obs = env.step(action_between(a, b))[0]
        assert np.array_equal(obs[:h, :w], frames[i + 1]), i
    assert np.array_equal(env.render(), frames[len(trial.path) - 1])
    with pytest.raises(BibInputError, match="obs_type must be one of symbolic, frames, pixels"):
        GridworldEnv(task, obs_type="rgb")
    with pytest.raises(BibInputError, match="cell_px must be an integer >= 4"):
        GridworldEnv(task, obs_type="pixels", cell_px=2)
