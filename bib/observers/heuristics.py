"""Baseline observers without a model of agents: ``random`` (seeded noise) and ``closest-object`` (the shortcut)."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

from bib.episode import Episode
from bib.observers.base import BaseObserver
from bib.world.dynamics import action_between, action_cost
from bib.world.planning import distance_field


class RandomObserver(BaseObserver):
    """Uniform noise in [0, 1) per test step: the chance baseline (50% pairwise accuracy on average).

    The values for an episode depend only on ``seed`` and the episode id, so scores are the same
    whatever order or number of workers episodes are scored with.
    """

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)

    def surprise(self, episode: Episode) -> np.ndarray:
        """Seeded uniform noise, one value per test step."""
        rng = np.random.default_rng([self.seed, zlib.crc32(episode.id.encode())])
        return rng.random(episode.test.n_steps)


class ClosestObjectObserver(BaseObserver):
    """The shortcut the RNN baselines fall into: "the agent goes to the nearest object".

    It ignores familiarization. The closest object is the one with the shortest path from the
    agent's test start (objects it cannot reach are ignored). The surprise of a step is its excess
    cost over a shortest path to that object: ``cost(move) + d(next) - d(here)`` (0 for a step
    that heads straight for it, up to about 2.8 for a step straight away from it). Barriers
    count as walls until an ``unlock`` event.
    """

    name = "closest-object"

    def surprise(self, episode: Episode) -> np.ndarray:
        """Excess cost of each test step relative to heading for the closest object."""
        trial = episode.test
        layout = trial.layout
        start = trial.path[0]
        unlock = trial.unlock_step()
        fields = [distance_field(layout, obj.cell, unlocked=False) for obj in layout.objects]
        costs = [f[start[1], start[0]] for f in fields]
        out = np.zeros(trial.n_steps)
        if not costs or not np.isfinite(min(costs)):
            return out
        goal = layout.objects[int(np.argmin(costs))].cell
        for i, (a, b) in enumerate(zip(trial.path, trial.path[1:]), start=1):
            unlocked = unlock is not None and i > unlock
            dist = distance_field(layout, goal, unlocked=unlocked)
            here, there = dist[a[1], a[0]], dist[b[1], b[0]]
            action = action_between(a, b)
            if not (np.isfinite(here) and np.isfinite(there)) or action is None:
                out[i - 1] = 0.0
                continue
            out[i - 1] = max(0.0, action_cost(action) + there - here)
        return out


def make_random(checkpoint: Path | None = None, seed: int = 0) -> RandomObserver:
    """Factory for ``random`` (takes no checkpoint)."""
    no_checkpoint("random", checkpoint)
    return RandomObserver(seed=seed)


def make_closest_object(checkpoint: Path | None = None) -> ClosestObjectObserver:
    """Factory for ``closest-object`` (takes no checkpoint)."""
    no_checkpoint("closest-object", checkpoint)
    return ClosestObjectObserver()


def no_checkpoint(name: str, checkpoint: Path | None) -> None:
    """Refuse a checkpoint given to an observer that takes none."""
    if checkpoint is not None:
        from bib.errors import BibInputError

        raise BibInputError(f"observer {name!r} takes no --checkpoint (got {checkpoint})")
