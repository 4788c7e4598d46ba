"""Multi-agent condition: a preference is the agent's own, so a new agent carries no expectation.

Familiarization as in ``preference`` but with both objects at widely varying locations (anywhere
in the interior, every trial). The test shows two new object cells; the agent walks a shortest
path to the non-preferred object ``B``. Expected: a NEW agent (different id, shape and colour,
same home) does so. Unexpected: the familiar agent does so (perceptually closer to
familiarization). Both test trials share their layout and path; only the agent differs.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bib.episode import Episode, Problem
from bib.tasks.common import AGENT_COLORS
from bib.tasks.preference import (
    OTHER,
    PREFERRED,
    anywhere,
    closer_object,
    familiarization,
    goal_problems,
    last_trial,
    make_pair,
    sample_goal_layout,
    shared_familiarization_problems,
    start_unit,
    to_other,
    walk,
)
from bib.tasks.registry import TaskSpec, UnitInfo, register
from bib.vocabulary import AGENT_SHAPES
from bib.world.grid import Agent


def new_agent(rng: np.random.Generator, old: Agent) -> Agent:
    """An agent at ``old``'s home that differs from it in id, shape and colour."""
    shapes = [s for s in AGENT_SHAPES if s != old.shape]
    colors = [c for c in AGENT_COLORS if c != old.color]
    return Agent("agent-1", shapes[int(rng.integers(len(shapes)))], colors[int(rng.integers(len(colors)))], old.home)


def _multi_agent(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """A multi-agent pair; ``B`` is the closer object in the test with p = 1/2."""
    agent, looks = start_unit(rng)
    fam = familiarization(rng, agent, looks, anywhere(agent.home))
    want = OTHER if rng.integers(2) else PREFERRED
    layout = sample_goal_layout(rng, agent, looks, anywhere(agent.home),
                                accept=lambda lay: closer_object(lay) == want, what="multi-agent test layout")
    path = walk(layout, layout.object(OTHER).cell, rng)
    stranger = replace(layout, agents=(new_agent(rng, agent),))
    return make_pair(unit, fam, to_other(stranger, path), to_other(layout, path))


def _multi_agent_rule(ep: Episode) -> list[Problem]:
    """The test goal is the non-preferred object; a new agent (expected) or the same one (unexpected)."""
    out = goal_problems(ep, test_to_other=True)
    if out:
        return out
    ti, test = last_trial(ep), ep.test
    old = ep.familiarization[0].agent
    if ep.outcome == "expected":
        same = [f for f in ("id", "shape", "color") if getattr(test.agent, f) == getattr(old, f)]
        if same:
            out.append(Problem(ep.id, f"expected test agent has the familiarization agent's {', '.join(same)}; "
                                      "it must be a new agent", ti))
    elif test.agent != old:
        out.append(Problem(ep.id, "unexpected test agent is not the familiarization agent", ti))
    return out


def _multi_agent_pair_rule(expected: Episode, unexpected: Episode) -> list[Problem]:
    """Identical familiarization; the test trials differ only in the agent."""
    out = shared_familiarization_problems(expected, unexpected)
    te, tu = expected.test, unexpected.test
    if replace(te.layout, agents=tu.layout.agents) != tu.layout or te.path != tu.path or te.goal != tu.goal:
        out.append(Problem(unexpected.id, "test trial differs from the expected episode's in more than the agent",
                           last_trial(unexpected)))
    return out


register(TaskSpec("multi-agent", "multi_agent", "evaluation", _multi_agent,
                  rule=_multi_agent_rule, pair_rule=_multi_agent_pair_rule, bib_folder="multi_agent",
                  expected="a new agent goes to the non-preferred object",
                  unexpected="the same agent goes to the non-preferred object", order=20,
                  shortcut_exempt=(("agent-identity", "same vs new agent is the condition's manipulation"),)))
