"""Gymnasium environments for the gridworld tasks: one registered id per task, ``bib/<task>-v0``.

Importing :mod:`bib.envs` registers an environment for every task of the task registry (BIB's
evaluation conditions, the background tasks and the agent grids), so::

    import gymnasium as gym
    env = gym.make("bib.envs:bib/navigation-v0")      # "module:id" imports bib.envs first
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(2)   # E

Each reset draws a fresh unit of the task (seeded by ``reset(seed=...)``) and plays one of its
trials (the test trial by default) from the agent's home:

- actions: the world's moves (:data:`bib.world.dynamics.ACTION_NAMES`: N, NE, E, SE, S, SW, W,
  NW, stay; 4-connected grids refuse diagonals); an illegal move leaves the agent in place;
- observation (``obs_type``): ``symbolic``, the state the learned observers see
  (:data:`bib.data.CHANNELS` x H x W, float32), zero-padded to ``grid x grid`` cells; ``frames``, the
  frame the learned observers and :mod:`bib.data` see (:func:`bib.observers.encoders.frame_states`, the one frame
  convention: the layout drawn at 8 px per cell and resized to ``image_size`` square, float32 ``[3, S, S]`` in
  [0, 1]; the same array as ``bib.data``'s item and a frame model's input for the same state); or
  ``pixels``, the renderer's frame of the state (:func:`bib.render.frames.step_frames`: uint8
  RGB, ``grid * cell_px`` square, the layout in the top-left corner and black beyond it), the
  picture ``render()`` returns too (a picture to look at, not a model input);
- reward: 1 for reaching the trial's goal (the object the trial's agent went to, or the key when
  that trial ends at the key), 0 for reaching another object, minus ``step_cost`` times the
  length of every move (1 orthogonal, sqrt 2 diagonal; a stay or an illegal move costs 1: an
  illegal move is a bump, the agent stays where it is, as in ``bib profile`` and the agency suite);
- the episode terminates when the agent reaches an object (or the key, when that is the goal) and
  is truncated after ``max_steps`` moves; ``info`` has the task, unit, goal and key/lock events.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from bib.episode import Event, Trial
from bib.errors import BibInputError
from bib.observers.encoders import FRAME_SIZE, SYMBOLIC_CHANNELS, frame_floats, frame_states, symbolic_states
from bib.tasks import REGISTRY, get_task, make_unit
from bib.world.dynamics import ACTIONS, STAY, AgentState, action_cost, move_legal, step

TRIALS = ("test", "any")
"""Which trial of a unit an environment plays: always the test trial, or one drawn at random."""
OBS_TYPES = ("symbolic", "frames", "pixels")
"""What an observation is: the symbolic grid, the learned observers' frame (the one frame convention of
:mod:`bib.observers.encoders`), or the renderer's full-size RGB picture."""


def env_id(task: str) -> str:
    """The registered Gymnasium id of a task: ``bib/<task>-v0``."""
    return f"bib/{task}-v0"


class GridworldEnv(gym.Env):
    """One task of the registry as a Gymnasium environment (see the module docstring).

    Args:
        task: a registered task id.
        trial: ``test`` (the unit's test trial) or ``any`` (a trial drawn at random).
        grid: observation side in cells (layouts are zero-padded to it); default 10 for BIB's
            tasks and 15 for the agent grids.
        step_cost: cost per unit of move length.
        max_steps: moves before truncation (default ``4 * grid * grid``).
        base_seed: the base seed units are generated under (units are drawn by index from it).
        obs_type: ``symbolic``, ``frames`` or ``pixels`` (:data:`OBS_TYPES`).
        cell_px: pixels per cell of ``pixels`` observations and of ``render()`` (BIB's 20 by default).
        image_size: side of ``frames`` observations in pixels (84, BIB's, by default).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, task: str = "single-object", trial: str = "test", grid: int | None = None,
                 step_cost: float = 0.01, max_steps: int | None = None, base_seed: int = 0,
                 render_mode: str | None = None, obs_type: str = "symbolic", cell_px: int = 20,
                 image_size: int = FRAME_SIZE) -> None:
        spec = get_task(task)
        if trial not in TRIALS:
            raise BibInputError(f"trial must be one of {', '.join(TRIALS)}, got {trial!r}")
        if obs_type not in OBS_TYPES:
            raise BibInputError(f"obs_type must be one of {', '.join(OBS_TYPES)}, got {obs_type!r}")
        if isinstance(cell_px, bool) or not isinstance(cell_px, int) or cell_px < 4:
            raise BibInputError(f"cell_px must be an integer >= 4, got {cell_px!r}")
        if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 8:
            raise BibInputError(f"image_size must be an integer >= 8, got {image_size!r}")
        if render_mode not in (None, "rgb_array"):
            raise BibInputError(f"render_mode must be rgb_array or None, got {render_mode!r}")
        self.task, self.trial_choice, self.base_seed = task, trial, int(base_seed)
        self.grid = int(grid if grid is not None else (15 if spec.kind == "agent" else 10))
        self.step_cost = float(step_cost)
        self.max_steps = int(max_steps if max_steps is not None else 4 * self.grid * self.grid)
        self.render_mode = render_mode
        self.obs_type, self.cell_px, self.image_size = obs_type, cell_px, image_size
        self.action_space = spaces.Discrete(len(ACTIONS))
        if obs_type == "frames":
            self.observation_space = spaces.Box(0.0, 1.0, (3, image_size, image_size), np.float32)
        elif obs_type == "pixels":
            side = self.grid * cell_px
            self.observation_space = spaces.Box(0, 255, (side, side, 3), np.uint8)
        else:
            self.observation_space = spaces.Box(0.0, 1.0, (len(SYMBOLIC_CHANNELS), self.grid, self.grid), np.float32)
        self._trial: Trial | None = None
        self._state: AgentState | None = None
        self._steps = 0

    def _now(self) -> Trial:
        """The current state as a one-state trial (key carried and lock opened as events at step 0)."""
        assert self._trial is not None and self._state is not None
        events = []
        if self._state.has_key:
            events.append(Event(0, "pickup-key"))
        if self._state.unlocked:
            events.append(Event(0, "unlock"))
        return Trial(self._trial.phase, self._trial.layout, (self._state.cell,), tuple(events), self._trial.goal,
                     occluder=self._trial.occluder)

    def _frame(self) -> np.ndarray:
        """The renderer's picture of the current state, uint8 ``[H, W, 3]`` (the layout's own size)."""
        from bib.render.frames import RenderSettings, step_frames  # lazy: pygame is loaded only to draw

        return next(iter(step_frames(self._now(), RenderSettings(cell_px=self.cell_px))))

    def _observation(self) -> np.ndarray:
        if self.obs_type == "frames":  # the one frame convention: the learned observers' and bib.data's pixels
            return frame_floats(frame_states(self._now(), self.image_size))[0]
        if self.obs_type == "pixels":
            frame = self._frame()
            out = np.zeros(self.observation_space.shape, dtype=np.uint8)
            out[: frame.shape[0], : frame.shape[1]] = frame
            return out
        state = symbolic_states(self._now())[0]
        out = np.zeros(self.observation_space.shape, dtype=np.float32)
        out[:, : state.shape[1], : state.shape[2]] = state
        return out

    def _info(self, events: list[str]) -> dict[str, Any]:
        assert self._trial is not None and self._state is not None
        return {"task": self.task, "unit": self._unit, "goal": self._trial.goal, "events": events,
                "cell": self._state.cell, "has_key": self._state.has_key, "unlocked": self._state.unlocked}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Draw a fresh unit of the task and start its trial at the agent's home."""
        super().reset(seed=seed)
        self._unit = int(self.np_random.integers(0, 2**31 - 1))
        episode = make_unit(self.task, self._unit, self.base_seed)[0]
        index = len(episode.trials) - 1 if self.trial_choice == "test" else int(self.np_random.integers(len(episode.trials)))
        self._trial = episode.trials[index]
        lay = self._trial.layout
        if max(lay.width, lay.height) > self.grid:
            raise BibInputError(f"{self.task}: a {lay.width} x {lay.height} layout does not fit grid={self.grid}")
        self._state = AgentState(lay.agent.home)
        self._steps = 0
        return self._observation(), self._info([])

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Move (an illegal move stays in place), and score the move (see the module docstring)."""
        if self._trial is None or self._state is None:
            raise RuntimeError("call reset() before step()")
        action = int(action)
        if not self.action_space.contains(action):
            raise BibInputError(f"action must be in 0..{len(ACTIONS) - 1}, got {action}")
        lay = self._trial.layout
        legal = move_legal(lay, self._state.cell, action, self._state.unlocked)
        length = action_cost(action) if legal and action != STAY else 1.0
        events: list[str] = []
        if legal:
            self._state, events = step(lay, self._state, action)
        self._steps += 1
        reward = -self.step_cost * length
        reached = next((o.id for o in lay.objects if o.cell == self._state.cell), None)
        if reached is None and self._trial.goal == "key" and "pickup-key" in events:
            reached = "key"
        terminated = reached is not None
        if terminated:
            reward += 1.0 if reached == self._trial.goal else 0.0
        truncated = not terminated and self._steps >= self.max_steps
        return self._observation(), float(reward), terminated, truncated, {**self._info(events), "reached": reached}

    def render(self) -> np.ndarray | None:
        """The current state as an RGB frame (``render_mode="rgb_array"``), drawn by the renderer."""
        if self.render_mode != "rgb_array" or self._trial is None or self._state is None:
            return None
        return self._frame()


def register_envs() -> list[str]:
    """Register ``bib/<task>-v0`` for every task of the registry (idempotent); returns the ids."""
    ids = []
    for task in REGISTRY:
        eid = env_id(task)
        if eid not in gym.envs.registry:
            gym.register(id=eid, entry_point="bib.envs:GridworldEnv", kwargs={"task": task})
        ids.append(eid)
    return ids


ENV_IDS = register_envs()
"""The registered ids, in registry order."""

__all__ = ["ENV_IDS", "OBS_TYPES", "TRIALS", "GridworldEnv", "env_id", "register_envs"]
