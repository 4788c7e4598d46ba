"""The instruments of ``bib profile``, one job per (instrument, seed): the agent as the actor of the BIB tasks
(with MEG and the observers' surprise on those very episodes), the extended gridworld battery, and the
agency suite.

Every job rebuilds what it needs from its seed (the BIB units of :func:`bib.tasks.make_unit`, the
agency grids of :func:`bib.agency.env.load_grid`) and draws the agent's randomness from a
generator named after the seed and the job, so results do not depend on the worker count. A job
returns plain data (dicts and episodes) and the CPU seconds each instrument took.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bib.agency.suite import KEY_TASKS
from bib.episode import Episode, Trial
from bib.errors import BibInputError
from bib.profile.agents import AGENCY_GOALS, BIB_GOALS, AgentSpec, agent_rng
from bib.reflection.gridworld import (
    MAX_MOVES,
    Codec,
    MarkovAgent,
    describe_state,
    goal_at,
    goal_of,
    grid_battery,
    history_agent,
    own_episode,
    reality_checked,
    run_grid_battery,
)
from bib.reflection.policy import IllegalActionError
from bib.tasks import conditions
from bib.world.dynamics import ACTION_NAMES, ACTIONS, AgentState, move_legal
from bib.world.grid import Layout

INSTRUMENTS = ("actor", "meg", "surprise", "self_reflection", "agency")
"""The instruments, in report order (actor, MEG and surprise share one job per seed)."""
OBSERVERS = ("inverse-planner", "closest-object")
"""VOE observers that need no training, whose surprise at the agent's own test trials is reported."""


@dataclass(frozen=True)
class Settings:
    """What one profile measures (part of ``profile.json``).

    Attributes:
        seeds: the base seeds (one BIB unit set, agent stream and agency grid set per seed).
        units: units (pairs) per evaluation condition and seed.
        max_moves: moves per trial before a trial is cut off (actor and battery).
        observers: observer names for the surprise instrument.
        navigation_grids: agency navigation grids per seed (grid ``i`` is design cell ``i mod 30``).
        key_grids: agency grids per key task and seed.
        rollouts: agency rollouts per grid.
        conditions: evaluation conditions to act in (empty: all of them).
        classic_steps: steps per environment of the classic integer battery (for agents with a history face).
        strict: refuse an illegal move (IllegalActionError) instead of counting it as a bump (the
            agent stays where it is and the move counts as a step).
    """

    seeds: tuple[int, ...] = (0, 1, 2)
    units: int = 1
    max_moves: int = MAX_MOVES
    observers: tuple[str, ...] = OBSERVERS
    navigation_grids: int = 30
    key_grids: int = 3
    rollouts: int = 2
    conditions: tuple[str, ...] = ()
    classic_steps: int = 1000
    strict: bool = False

    @property
    def chosen(self) -> tuple[str, ...]:
        """The conditions acted in, in registry order."""
        return tuple(c for c in conditions() if not self.conditions or c in self.conditions)

    def to_json(self) -> dict[str, Any]:
        """The settings as JSON, with the conditions and battery environments they imply."""
        return {
            "seeds": list(self.seeds), "units": self.units, "max_moves": self.max_moves,
            "conditions": list(self.chosen), "observers": list(self.observers),
            "agency": {"navigation_grids": self.navigation_grids, "key_grids": self.key_grids,
                       "rollouts": self.rollouts},
            "battery": [s.name for s in grid_battery()],
            "classic_steps": self.classic_steps,
            "strict": self.strict,
        }


@dataclass(frozen=True)
class Job:
    """One instrument for one seed: ``bib`` (actor, MEG, surprise; for the conditions in ``part``),
    ``self_reflection`` or ``agency``."""

    kind: str
    spec: AgentSpec
    seed: int
    settings: Settings
    keep_battery: bool = False
    part: tuple[str, ...] = ()


# ---------------------------------------------------------------- the agent in the BIB tasks


class Checked:
    """Holds an agent to the gridworld protocol: an integer action 0-8.

    An illegal move where it stands is passed on (the environment counts it as a bump: the agent
    stays, the move counts as a step); with ``strict`` it is refused like anything that is no
    action. A refusal, or an exception from the agent, raises BibInputError (IllegalActionError
    for bad actions) naming the agent, what it returned and the state, plus :attr:`where`.
    """

    def __init__(self, agent: Any, label: str, strict: bool = False) -> None:
        self.agent = agent
        self.label = label
        self.strict = strict
        self.where = ""

    def act(self, layout: Layout, state: AgentState) -> int:
        """The agent's action, checked."""
        at = f"{describe_state(layout, state)} of {self.where}" if self.where else describe_state(layout, state)
        try:
            action = self.agent.act(layout, state)
        except BibInputError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing agent is reported as one line
            raise BibInputError(f"agent {self.label!r} raised {type(exc).__name__}: {exc} at {at}") from None
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)) \
                or not 0 <= int(action) < len(ACTIONS):
            raise IllegalActionError(f"agent {self.label!r} returned {action!r}, not an action 0-{len(ACTIONS) - 1}, at {at}")
        if self.strict and not move_legal(layout, state.cell, int(action), state.unlocked):
            raise IllegalActionError(f"agent {self.label!r} returned the illegal move {ACTION_NAMES[int(action)]} at {at} "
                                     "(--strict)")
        return int(action)


def base_pairs(seed: int, units: int, only: Sequence[str] = ()) -> list[tuple[Episode, Episode]]:
    """The stimulus pairs (expected, unexpected) of every evaluation condition (or those in ``only``) for one seed."""
    from bib.tasks import make_unit

    out = []
    for cond in conditions():
        if only and cond not in only:
            continue
        for i in range(units):
            expected, unexpected = make_unit(cond, i, seed)
            out.append((expected, unexpected))
    return out


def act_episode(base: Episode, agent: Checked, max_moves: int = MAX_MOVES) -> Episode:
    """The agent acting in every trial of ``base`` (same layouts, its own paths): a ``bib.episode/1`` episode
    with condition ``actor`` and outcome ``none``; a trial ends when the agent stays or after ``max_moves``
    (an illegal move is a bump: the path repeats the cell, see :func:`bib.tasks.agents.rollout`)."""
    from bib.tasks.agents import rollout

    trials = []
    for k, trial in enumerate(base.trials):
        agent.where = f"{base.id} trial {k}"
        path, events = rollout(agent, trial.layout, max_steps=max_moves)
        trials.append(Trial(trial.phase, trial.layout, tuple(path), events, goal_at(trial.layout, path[-1])))
    return own_episode(base, f"{base.id}-actor", "actor", trials)


def trial_goal(trial: Trial) -> str | None:
    """The goal the task sets in a trial: the stimulus agent's preferred reachable object from the home."""
    return goal_of(trial.layout, AgentState(trial.layout.agent.home), BIB_GOALS)


def trial_bumps(trial: Trial) -> int:
    """The bumps of an actor trial: its illegal moves, the steps whose path repeats the cell (staying ends a trial)."""
    return sum(a == b for a, b in zip(trial.path, trial.path[1:]))


def trial_stats(trial: Trial) -> dict[str, Any]:
    """Steps, bumps (illegal moves; each costs a step), whether the path ends on the task's goal, and whether
    it is optimal towards it (no bumps, and an optimal key/lock-aware path)."""
    from bib.world.keylock import is_optimal_path

    goal = trial_goal(trial)
    reached = goal is not None and trial.path[-1] == trial.layout.goal_cell(goal)
    bumps = trial_bumps(trial)
    return {"steps": trial.n_steps, "bumps": bumps, "goal": goal, "reached": reached,
            "optimal": bool(reached and not bumps and is_optimal_path(trial.layout, trial.path))}


def trial_meg_rows(trials: Sequence[Trial]) -> list[dict[str, Any]]:
    """Known-utility MEG towards the task's goal and unknown-utility MEG (over the objects) of each trial's path
    (:func:`bib.meg.episodes.trials_meg`: the fits of all the trials in lockstep)."""
    from bib.meg.episodes import trials_meg

    goals = [trial_goal(trial) for trial in trials]
    rows = trials_meg(trials, [() if goal is None else (goal,) for goal in goals])
    return [{"known": row["meg"].get(goal) if goal is not None else None, "unknown": row["unknown_objects"],
             "upper_bound": row["upper_bound"], "goal": goal} for row, goal in zip(rows, goals)]


def bib_job(job: Job) -> dict[str, Any]:
    """Actor, MEG and surprise for one seed."""
    from bib.evaluation import readout
    from bib.observers import make_observer

    s = job.settings
    timings: dict[str, float] = {}
    t0 = time.process_time()
    pairs = base_pairs(job.seed, s.units, job.part or s.chosen)
    episodes, rows = [], []
    for expected, _ in pairs:
        rng = agent_rng(job.seed, "bib", expected.id)
        agent = Checked(job.spec.make(BIB_GOALS, rng, tag=expected.id), job.spec.label, s.strict)
        ep = act_episode(expected, agent, s.max_moves)
        episodes.append(ep)
        for k, trial in enumerate(ep.trials):
            rows.append({"condition": expected.condition, "episode": ep.id, "trial": k, "phase": trial.phase,
                         **trial_stats(trial)})
    timings["actor"] = time.process_time() - t0

    t0 = time.process_time()
    import torch  # unknown-utility MEG optimises with it: one thread (tiny tensors; the workers are the parallelism)

    torch.set_num_threads(1)
    for row, meg in zip(rows, trial_meg_rows([t for ep in episodes for t in ep.trials])):
        row.update({f"meg_{k}": v for k, v in meg.items() if k != "goal"})
    timings["meg"] = time.process_time() - t0

    t0 = time.process_time()
    surprise: list[dict[str, Any]] = []
    for name in s.observers:
        observer = make_observer(name)
        for ep, (expected, unexpected) in zip(episodes, pairs):
            surprise.append({
                "observer": name, "condition": expected.condition, "pair": expected.pair_id,
                "agent": readout(observer.surprise(ep)),
                "expected": readout(observer.surprise(expected)),
                "unexpected": readout(observer.surprise(unexpected)),
            })
    timings["surprise"] = time.process_time() - t0
    return {"kind": "bib", "seed": job.seed, "episodes": episodes, "trials": rows, "surprise": surprise,
            "timings": timings}


# ---------------------------------------------------------------- the extended gridworld battery


def battery_job(job: Job) -> dict[str, Any]:
    """The agent and its reality check on every gridworld rule and its opposite, in this seed's BIB layouts."""
    t0 = time.process_time()
    bases = [expected for expected, _ in base_pairs(job.seed, job.settings.units, job.settings.chosen)]
    codec = Codec()
    gridworld_agent = job.spec.make(BIB_GOALS, agent_rng(job.seed, "battery"), tag=f"battery/{job.seed}")
    agent = history_agent(gridworld_agent, codec, job.spec.label)
    keep = job.keep_battery
    plain = run_grid_battery(agent, bases, codec, job.seed, max_moves=job.settings.max_moves, keep=keep)
    rc = run_grid_battery(reality_checked(agent), bases, codec, job.seed, stream=2,
                          max_moves=job.settings.max_moves, keep=keep)
    out: dict[str, Any] = {
        "kind": "self_reflection", "seed": job.seed,
        "plain": [(r.environment, r.score, r.steps) for r in plain],
        "reality_check": [(r.environment, r.score, r.steps) for r in rc],
        "timings": {"self_reflection": time.process_time() - t0},
        "calls": {"steps": sum(r.steps for r in plain) + sum(r.steps for r in rc),
                  "policy_calls": getattr(agent, "calls", None), "agent_queries": getattr(agent, "queries", None)},
    }
    out["classic"] = None
    if not isinstance(agent, MarkovAgent):
        # a history agent (a learner) also has an integer face: V1's 50 environments, as `bib reflect`
        from bib.reflection.harness import run_battery

        out["classic"] = {
            "plain": [(c.environment, c.score, job.settings.classic_steps) for c in
                      run_battery(agent, job.settings.classic_steps, job.seed)],
            "reality_check": [(c.environment, c.score, job.settings.classic_steps) for c in
                              run_battery(reality_checked(agent), job.settings.classic_steps, job.seed, stream=2)],
        }
        out["timings"]["self_reflection"] = time.process_time() - t0
    if keep:
        out["episodes"] = {f"{which}/{r.environment}": r.episodes()
                           for which, runs in (("plain", plain), ("rc", rc)) for r in runs}
    return out


# ---------------------------------------------------------------- the agency suite


AGENCY_METRICS = ("accuracy", "success", "spl", "entropy", "jsd", "meg", "bumps", "invalid")


def agency_job(job: Job) -> dict[str, Any]:
    """The agency suite's behavioural metrics (with MEG) on this seed's navigation and key grids."""
    from bib.agency.env import load_grid, run_rollouts
    from bib.agency.metrics import grid_metrics

    t0 = time.process_time()
    s = job.settings
    grids = [("navigation", i) for i in range(s.navigation_grids)]
    grids += [(task, i) for task in KEY_TASKS for i in range(s.key_grids)]
    rows = []
    for task, index in grids:
        grid = load_grid(task, index, job.seed)
        rng = agent_rng(job.seed, "agency", task, index)
        agents = [Checked(job.spec.make(AGENCY_GOALS, r, tag=f"{grid.id}/{k}"), job.spec.label, s.strict)
                  for k, r in enumerate(rng.spawn(s.rollouts))]
        for a in agents:
            a.where = grid.id
        rollouts = run_rollouts(agents, grid)
        row = grid_metrics(grid, rollouts, meg=True)
        rows.append({k: row[k] for k in ("grid", "task", *AGENCY_METRICS)})
    return {"kind": "agency", "seed": job.seed, "grids": rows,
            "timings": {"agency": time.process_time() - t0}}


def run_job(job: Job) -> dict[str, Any]:
    """Run one job (module-level, so worker processes can run it); torch, when an agent or MEG loads it,
    runs on one thread (the models are small; parallelism comes from the workers)."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    if job.kind == "bib":
        return bib_job(job)
    if job.kind == "self_reflection":
        return battery_job(job)
    if job.kind == "agency":
        return agency_job(job)
    raise ValueError(f"unknown job kind {job.kind!r}")


BIB_PARTS = 3
"""The BIB conditions are split into this many jobs per seed (MEG is the costliest instrument)."""


def jobs_for(spec: AgentSpec, settings: Settings, keep_battery: bool = False) -> list[Job]:
    """Every job of one profile: per seed, the battery, the BIB tasks (actor, MEG, surprise) in
    :data:`BIB_PARTS` parts, and agency."""
    conds = settings.chosen
    parts = [tuple(conds[i::BIB_PARTS]) for i in range(BIB_PARTS)]
    jobs = []
    for seed in settings.seeds:
        jobs.append(Job("self_reflection", spec, seed, settings, keep_battery))
        jobs += [Job("bib", spec, seed, settings, keep_battery, part) for part in parts if part]
        jobs.append(Job("agency", spec, seed, settings, keep_battery))
    return jobs


def finite(values: list[float | None]) -> list[float]:
    """The finite values of a list (None and NaN dropped)."""
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]
