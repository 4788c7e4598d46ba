"""Background (training) tasks: expected-only episodes drawn from familiarization-like distributions."""

from __future__ import annotations

import numpy as np

from bib.episode import Episode, Problem
from bib.tasks.common import (
    N_FAMILIARIZATION,
    empty_layout,
    interior,
    make_episode,
    make_trial,
    place,
    sample_agent,
    sample_cells,
    sample_looks,
)
from bib.tasks.registry import LayoutRejected, TaskSpec, UnitInfo, register
from bib.world.planning import is_shortest, shortest_path


def _single_object(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """One agent (fixed home) walks a shortest path to one object placed anew in every trial.

    Each trial also gets 0-4 random interior wall cells, so paths vary; layouts where the object
    is unreachable are redrawn.
    """
    free = interior()
    home = sample_cells(rng, free, 1)[0]
    agent = sample_agent(rng, "agent-0", home)
    look = sample_looks(rng, 1)[0]
    trials = []
    for t in range(N_FAMILIARIZATION + 1):
        for _ in range(50):
            walls = sample_cells(rng, free, int(rng.integers(0, 5)), exclude=[home])
            goal_cell = sample_cells(rng, free, 1, exclude=[home, *walls])[0]
            if max(abs(goal_cell[0] - home[0]), abs(goal_cell[1] - home[1])) < 2:
                continue
            layout = empty_layout(walls=frozenset(walls), objects=(place(look, "A", goal_cell),), agents=(agent,))
            path = shortest_path(layout, home, goal_cell, rng=rng)
            if path is not None:
                break
        else:
            raise LayoutRejected("no reachable object placement")
        phase = "test" if t == N_FAMILIARIZATION else "familiarization"
        trials.append(make_trial(layout, path, "A", phase))
    return [make_episode(unit, trials, outcome="none")]


def _single_object_rule(ep: Episode) -> list[Problem]:
    """Every trial goes to object A along a shortest path."""
    out = []
    for i, trial in enumerate(ep.trials):
        if trial.goal != "A":
            out.append(Problem(ep.id, f"goal is {trial.goal!r}, expected 'A'", i))
        elif not is_shortest(trial.layout, trial.path):
            out.append(Problem(ep.id, "path is not a shortest path to the object", i))
    return out


register(TaskSpec("single-object", "background", "background", _single_object, rule=_single_object_rule))
