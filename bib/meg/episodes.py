"""MEG of the agents in stimulus episodes: each trial's path against "reach object X" and against utilities over objects."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from bib.meg.known import megs_from_weights
from bib.meg.trajectories import trajectory_weights
from bib.meg.unknown import target_megs
from bib.results import Result, markdown_table


def trial_meg(trial: Any, objects: Sequence[str] | None = None) -> dict[str, Any]:
    """MEG of one trial's path (a single trajectory) in the gridworld MDP of its layout.

    The MDP (:func:`bib.world.mdp.layout_mdp`) has the layout's own moves + stay as actions, all
    initial mass on the path's first cell and ``H = moves + 1`` decisions (the last one is uniform
    under every soft policy and scores 0, so the utility of the cell reached by the last move counts).
    Its states are the free cells; when the layout has both a key and a lock they are the
    ``(cell, has_key, unlocked)`` states reachable from the start, so picking up the key and opening
    the lock follow the real dynamics. Known utility: "reach X" (1 on object X's cell) for every
    object, with the exact beta fitted to the path (signed: negative when the path does worse on X
    than a random walk). Unknown utility: every utility over the objects (``U(s) = theta_k`` on
    object k's cell, 0 elsewhere), i.e. target-variable MEG.

    Args:
        trial: a :class:`bib.episode.Trial`.
        objects: ids of the objects to measure known-utility MEG towards (default: every object;
            the unknown-utility value always covers all of them).

    Returns:
        A dict with ``steps``, ``unlocked`` (the trial opens the lock), ``key_lock`` (the key/lock
        mode is part of the state), ``upper_bound`` (``moves * log |A|``), ``meg``, ``signed_meg`` and
        ``beta`` per object id, and ``unknown_objects``.
    """
    return trials_meg([trial], [objects])[0]


def trials_meg(trials: Sequence[Any], objects: Sequence[Sequence[str] | None] | None = None) -> list[dict[str, Any]]:
    """:func:`trial_meg` of each trial (``objects``: each trial's, default every object of every trial).

    The same rows to the bit, faster: every exact beta fit of all the trials (towards each object, and the
    polish of each unknown-utility optimum) runs in lockstep, one backward pass over the stacked MDPs of a
    horizon per round (:func:`bib.meg.known.megs_from_weights`).
    """
    from bib.world.mdp import layout_mdp

    rows, known, unknown = [], [], []
    for i, trial in enumerate(trials):
        wanted = None if objects is None else objects[i]
        path = [tuple(c) for c in trial.path]
        layout = trial.layout
        key_lock = layout.key is not None and layout.lock is not None
        grid = layout_mdp(layout, path[0], horizon=len(path), key_lock=key_lock)
        states, actions = grid.trajectory(path)
        rows.append({
            "steps": len(path) - 1,
            "unlocked": trial.unlock_step() is not None,
            "key_lock": key_lock,
            "upper_bound": (len(path) - 1) * math.log(grid.mdp.n_actions),
            "meg": {}, "signed_meg": {}, "beta": {},
        })
        weights = trajectory_weights(grid.mdp, states, actions)
        labels = np.full(len(grid.states), -1)
        for k, obj in enumerate(layout.objects):
            if not grid.at(obj.cell).size:
                continue
            labels[grid.at(obj.cell)] = k
            if wanted is not None and obj.id not in wanted:
                continue
            u = grid.mdp.require_utility(grid.reach_utility(obj.cell))
            known.append((i, obj.id, (grid.mdp, u, weights, float(weights.sum(axis=(0, 2)) @ u), None)))
        if (labels >= 0).any():
            unknown.append((i, (grid.mdp, labels, weights)))
        else:
            rows[i]["unknown_objects"] = None
    for (i, obj_id, _), res in zip(known, megs_from_weights([problem for _, _, problem in known])):
        rows[i]["meg"][obj_id] = res.meg
        rows[i]["signed_meg"][obj_id] = res.signed_meg
        rows[i]["beta"][obj_id] = res.to_dict()["beta"]
    for (i, _), res in zip(unknown, target_megs([problem for _, problem in unknown])):
        rows[i]["unknown_objects"] = res.meg
    return rows


def episode_meg(episode: Any) -> list[dict[str, Any]]:
    """:func:`trial_meg` for every trial of an episode (:func:`trials_meg`), with the episode's identifiers."""
    rows = []
    for i, (trial, meg) in enumerate(zip(episode.trials, trials_meg(episode.trials))):
        row = {
            "episode": episode.id, "task": episode.task, "condition": episode.condition, "outcome": episode.outcome,
            "trial": i, "phase": trial.phase, "goal": trial.goal,
        }
        row.update(meg)
        rows.append(row)
    return rows


@dataclass
class EpisodeMEG(Result):
    """MEG of every trial's agent in a set of episodes (what ``bib meg episodes`` prints).

    Attributes:
        rows: one dict per trial (see :func:`trial_meg`), with ``episode``, ``trial``, ``phase``,
            ``goal``, ``steps`` and the episode ``file``.
    """

    name: ClassVar[str] = "meg-episodes"
    rows: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        """``{"trials": rows}``."""
        return {"trials": self.rows}

    def to_markdown(self) -> str:
        """One line per trial: MEG (signed) towards each object and over all object utilities, in nats."""
        table = []
        for r in self.rows:
            per = ", ".join(f"{k}: {v:.2f} ({r['signed_meg'][k]:+.2f})" for k, v in r["meg"].items())
            unk = "-" if r["unknown_objects"] is None else f"{r['unknown_objects']:.2f}"
            table.append([r["episode"], r["trial"], r["phase"], r["goal"], r["steps"], per, unk])
        return markdown_table(["episode", "trial", "phase", "goal", "steps", "MEG per object (signed)",
                               "unknown (objects)"], table, align="lrllrll")


def _file_meg(path: str) -> list[dict[str, Any]]:
    """Worker: the MEG rows of one episode file (checked as every reader checks episodes)."""
    from bib.stimuli.check import load_checked

    rows = episode_meg(load_checked(path))
    for row in rows:
        row["file"] = path
    return rows


def meg_of_directory(directory: str | os.PathLike[str], workers: int = 1, progress: bool = True) -> EpisodeMEG:
    """MEG of every trial of every episode of the set at ``directory`` (read by
    :func:`bib.stimuli.sets.find_episodes`), in set order for any number of worker processes."""
    from bib.parallel import map_ordered
    from bib.stimuli.sets import find_episodes

    files = [str(Path(r.path)) for r in find_episodes(directory).refs]
    results = map_ordered(_file_meg, files, workers=workers)
    if progress:
        from bib.progress import track

        results = track(results, total=len(files), description="MEG of episodes")
    return EpisodeMEG([row for rows in results for row in rows])
