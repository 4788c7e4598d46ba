"""Background (training) tasks: expected-only episodes drawn from familiarization-like distributions.

As in BIB §1c, familiarization and test trials come from one distribution, and each task is
systematically different from the evaluation conditions:

- ``single-object``: one object at a new place in every trial, reached by a shortest path.
- ``no-navigation``: two objects right next to the agent's start (a new start every trial); the
  agent always takes the same one, in one step.
- ``multi-agent-background``: as single-object, but a new agent replaces the first one from a
  random trial (1-8) on, through the test.
- ``agent-blocked-instrumental``: the *agent* is enclosed by a green barrier with the key inside
  its enclosure; it fetches the key, unlocks and goes to the object outside.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bib.episode import Episode, Problem, Trial
from bib.tasks.agents import InstrumentalAgent, RationalAgent, rollout
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
from bib.tasks.instrumental import check_key_needed, sample_enclosure
from bib.tasks.registry import LayoutRejected, TaskSpec, UnitInfo, register
from bib.world.grid import Agent
from bib.world.planning import is_shortest, reachable, shortest_path

N_TRIALS = N_FAMILIARIZATION + 1


def _phase(t: int) -> str:
    return "test" if t == N_FAMILIARIZATION else "familiarization"


def _navigation_trial(rng: np.random.Generator, agent: Agent, look, phase: str) -> Trial:
    """The agent walks a shortest path to object A, placed anew among 0-4 random wall cells.

    The object is at least two cells (king moves) from home; unreachable placements are redrawn.
    """
    free = interior()
    home = agent.home
    for _ in range(50):
        walls = sample_cells(rng, free, int(rng.integers(0, 5)), exclude=[home])
        goal_cell = sample_cells(rng, free, 1, exclude=[home, *walls])[0]
        if max(abs(goal_cell[0] - home[0]), abs(goal_cell[1] - home[1])) < 2:
            continue
        layout = empty_layout(walls=frozenset(walls), objects=(place(look, "A", goal_cell),), agents=(agent,))
        path = shortest_path(layout, home, goal_cell, rng=rng)
        if path is not None:
            return make_trial(layout, path, "A", phase)
    raise LayoutRejected("no reachable object placement")


def _single_object(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """One agent (fixed home) walks a shortest path to one object placed anew in every trial."""
    agent = sample_agent(rng, "agent-0", sample_cells(rng, interior(), 1)[0])
    look = sample_looks(rng, 1)[0]
    trials = [_navigation_trial(rng, agent, look, _phase(t)) for t in range(N_TRIALS)]
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


def _no_navigation(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """Two objects on cells next to a new home every trial; the agent always takes A, in one step."""
    looks = sample_looks(rng, 2)
    agent = sample_agent(rng, "agent-0", (1, 1))
    trials = []
    for t in range(N_TRIALS):
        home = sample_cells(rng, interior(), 1)[0]
        around = [(home[0] + dx, home[1] + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy]
        a, b = sample_cells(rng, [c for c in around if c in set(interior())], 2)
        lay = empty_layout(objects=(place(looks[0], "A", a), place(looks[1], "B", b)),
                           agents=(replace(agent, home=home),))
        trials.append(make_trial(lay, rollout(RationalAgent(["A", "B"], rng), lay)[0], "A", _phase(t)))
    return [make_episode(unit, trials, outcome="none")]


def _no_navigation_rule(ep: Episode) -> list[Problem]:
    """Two objects next to home in every trial; the agent always takes the same one (A) in one step."""
    out = []
    for i, t in enumerate(ep.trials):
        home = t.agent.home
        near = [max(abs(o.cell[0] - home[0]), abs(o.cell[1] - home[1])) == 1 for o in t.layout.objects]
        if len(near) != 2 or not all(near):
            out.append(Problem(ep.id, "trial needs exactly two objects right next to the agent's start", i))
        elif t.goal != "A" or t.n_steps != 1:
            out.append(Problem(ep.id, f"agent should take object A in one step (goal {t.goal!r}, {t.n_steps} steps)", i))
    return out


def _multi_agent_background(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """Single-object trials; from a random trial s in 1..8 on, a new agent (new look and home) acts."""
    first = sample_agent(rng, "agent-0", sample_cells(rng, interior(), 1)[0])
    second = sample_agent(rng, "agent-1", sample_cells(rng, interior(), 1)[0], avoid_shape=first.shape)
    look = sample_looks(rng, 1)[0]
    switch = int(rng.integers(1, N_TRIALS))
    trials = [_navigation_trial(rng, first if t < switch else second, look, _phase(t)) for t in range(N_TRIALS)]
    return [make_episode(unit, trials, outcome="none")]


def _multi_agent_background_rule(ep: Episode) -> list[Problem]:
    """Single-object rule; agent-0 acts first, then a differently shaped agent-1 through the test."""
    out = _single_object_rule(ep)
    ids = [t.agent.id for t in ep.trials]
    switch = ids.index("agent-1") if "agent-1" in ids else None
    if switch is None or switch == 0 or ids != ["agent-0"] * switch + ["agent-1"] * (len(ids) - switch):
        out.append(Problem(ep.id, f"agents {ids}: agent-0 should be replaced by agent-1 once, through the test"))
    else:
        looks = {(t.agent.id, t.agent.shape, t.agent.color, t.agent.home) for t in ep.trials}
        if len(looks) != 2 or ep.trials[0].agent.shape == ep.test.agent.shape:
            out.append(Problem(ep.id, "each agent keeps its look and home, and the two differ in shape", switch))
    return out


def _agent_blocked_instrumental(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """The agent (fixed home) is locked in with the key; it fetches it, unlocks and goes to the object."""
    agent = sample_agent(rng, "agent-0", sample_cells(rng, interior(), 1)[0])
    look = sample_looks(rng, 1)[0]
    trials = []
    for t in range(N_TRIALS):
        for _ in range(30):
            enc = sample_enclosure(rng, sizes=(2, 3), around=agent.home)
            key = sample_cells(rng, sorted(enc.inside), 1, exclude=[agent.home])[0]
            outside = [c for c in interior() if c not in enc.inside | enc.ring | {enc.lock}]
            obj = sample_cells(rng, outside, 1)[0]
            lay = empty_layout(barriers=enc.ring, lock=enc.lock, key=key, objects=(place(look, "A", obj),),
                               agents=(agent,))
            path, events = rollout(InstrumentalAgent("A", rng), lay)
            if [e.type for e in events] == ["pickup-key", "unlock"] and path[-1] == obj:
                trials.append(make_trial(lay, path, "A", _phase(t)))
                break
        else:
            raise LayoutRejected("no enclosure lets the agent fetch the key, unlock and reach the object")
    return [make_episode(unit, trials, outcome="none")]


def _agent_blocked_instrumental_rule(ep: Episode) -> list[Problem]:
    """Every trial needs the key (see :func:`check_key_needed`) and the agent is the one locked in:
    the key is reachable from home with the lock closed."""
    out = []
    for i, t in enumerate(ep.trials):
        problems = check_key_needed(ep, i)
        if not problems and t.layout.key not in reachable(t.layout, t.agent.home):
            problems = [Problem(ep.id, "the key is not inside the agent's enclosure", i)]
        out += problems
    return out


register(TaskSpec("single-object", "background", "background", _single_object, rule=_single_object_rule,
                  bib_folder="single_object", expected="one object at a new place in every trial, reached by a shortest path", order=10))
register(TaskSpec("no-navigation", "background", "background", _no_navigation, rule=_no_navigation_rule,
                  bib_folder="preference", expected="two objects next to the agent's start; it always takes the same one, in one step", order=20))
register(TaskSpec("multi-agent-background", "background", "background", _multi_agent_background,
                  rule=_multi_agent_background_rule, bib_folder="multi_agent",
                  expected="as single-object, but a new agent replaces the first from a random trial on", order=30))
register(TaskSpec("agent-blocked-instrumental", "background", "background", _agent_blocked_instrumental,
                  rule=_agent_blocked_instrumental_rule, bib_folder="instrumental_action",
                  expected="the agent is enclosed with the key; it fetches the key, unlocks and reaches the object outside", order=40))
