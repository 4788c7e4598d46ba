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
from bib.tasks.common import (
    AGENT_COLORS,
    N_FAMILIARIZATION,
    PairDraft,
    Walker,
    finish_group,
    interior,
    make_trial,
    twin_of,
)
from bib.tasks.options import Controls
from bib.tasks.preference import (
    MIN_GAP,
    OTHER,
    PREFERRED,
    all_reachable,
    anywhere,
    chebyshev,
    closer_object,
    familiarization,
    goal_problems,
    last_trial,
    make_pair,
    preferred,
    sample_goal_layout,
    shared_familiarization_problems,
    start_unit,
    to_other,
    walk,
)
from bib.tasks.registry import LayoutRejected, TaskSpec, UnitInfo, register
from bib.vocabulary import AGENT_SHAPES
from bib.world.grid import Agent, Cell, Layout


def new_agent(rng: np.random.Generator, old: Agent) -> Agent:
    """An agent at ``old``'s home that differs from it in id, shape and colour."""
    shapes = [s for s in AGENT_SHAPES if s != old.shape]
    colors = [c for c in AGENT_COLORS if c != old.color]
    return Agent("agent-1", shapes[int(rng.integers(len(shapes)))], colors[int(rng.integers(len(colors)))], old.home)


def _multi_agent(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """A multi-agent pair; ``B`` is the closer object in the test with p = 1/2."""
    if not unit.options.legacy:
        return _multi_agent_controlled(rng, unit)
    agent, looks = start_unit(rng)
    fam = familiarization(rng, agent, looks, anywhere(agent.home))
    want = OTHER if rng.integers(2) else PREFERRED
    layout = sample_goal_layout(rng, agent, looks, anywhere(agent.home),
                                accept=lambda lay: closer_object(lay) == want, what="multi-agent test layout")
    path = walk(layout, layout.object(OTHER).cell, rng)
    stranger = replace(layout, agents=(new_agent(rng, agent),))
    return make_pair(unit, fam, to_other(stranger, path), to_other(layout, path))


def _other_home(rng: np.random.Generator, layout: Layout) -> Cell:
    """A home for the new agent away from the familiar one: a free cell two or more king moves from
    the familiar home and both objects, from which both objects are reachable."""
    home = layout.agent.home
    taken = [home, *(o.cell for o in layout.objects)]
    cells = [c for c in interior() if c not in layout.walls and min(chebyshev(c, t) for t in taken) >= MIN_GAP]
    while cells:
        c = cells.pop(int(rng.integers(len(cells))))
        moved = replace(layout, agents=(replace(layout.agent, home=c),))
        if all_reachable(moved):
            return c
    raise LayoutRejected("no other home for the new agent")


def _multi_agent_controlled(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """A multi-agent group of the controlled set: one of the four test outcomes against another, and its twin.

    Outcomes (after a familiarization where the agent always goes to ``A``): the same agent -> ``A``
    (expected), a new agent -> ``A`` or -> ``B`` (no expectation), the same agent -> ``B``
    (unexpected). Variants: ``""`` (BIB: new -> ``B`` vs same -> ``B``), ``new-agent-A`` (new -> ``A``
    vs same -> ``B``), ``same-agent`` (same -> ``A`` vs same -> ``B``); with the token
    ``other-home`` the new agent starts from another home. The twin's familiarization shows the same
    layouts with the agent going to ``B``, which turns every pair around (same -> ``B`` becomes the
    expected outcome).
    """
    opts = unit.options
    walker = Walker(opts, rng)
    tokens = opts.variant(unit.design).split("+")
    agent, looks = start_unit(rng)
    layouts = [sample_goal_layout(rng, agent, looks, anywhere(agent.home), what="familiarization layout")
               for _ in range(N_FAMILIARIZATION)]
    want = OTHER if rng.integers(2) else PREFERRED
    layout = sample_goal_layout(rng, agent, looks, anywhere(agent.home),
                                accept=lambda lay: closer_object(lay) == want, what="multi-agent test layout")
    stranger = new_agent(rng, agent)
    if "other-home" in tokens:
        stranger = replace(stranger, home=_other_home(rng, layout))
    strange = replace(layout, agents=(stranger,))
    same_b = make_trial(layout, walker.walk(layout, OTHER), OTHER, "test")
    if "same-agent" in tokens:
        test_e = make_trial(layout, walker.walk(layout, PREFERRED), PREFERRED, "test")
    else:
        goal = PREFERRED if "new-agent-A" in tokens else OTHER
        path = same_b.path if goal == OTHER and stranger.home == agent.home else walker.walk(strange, goal)
        test_e = make_trial(strange, path, goal, "test")
    fam = [make_trial(lay, walker.walk(lay, PREFERRED), PREFERRED) for lay in layouts]
    draft = PairDraft(fam, test_e, fam, same_b, "+".join(tokens) if tokens != [""] else "")
    drafts = [draft]
    if opts.twins:
        twin_fam = [make_trial(lay, walker.walk(lay, OTHER), OTHER) for lay in layouts]
        drafts = [replace(draft, twin=1), twin_of(draft, twin_fam, 0)]
    return finish_group(unit, drafts, walker.beta)


def surprise_rank(ep: Episode) -> int:
    """How surprising the test is after the familiarization: 0 the familiar agent goes to its preferred
    object, 1 a new agent goes anywhere (no expectation), 2 the familiar agent goes to the other object."""
    if ep.test.agent != ep.familiarization[0].agent:
        return 1
    return 0 if ep.test.goal == preferred(ep) else 2


def _new_agent_problems(ep: Episode) -> list[Problem]:
    """A test agent that is not the familiar one must differ from it in id, shape and colour."""
    test, old = ep.test.agent, ep.familiarization[0].agent
    if test == old:
        return []
    same = [f for f in ("id", "shape", "color") if getattr(test, f) == getattr(old, f)]
    if same:
        return [Problem(ep.id, f"test agent has the familiarization agent's {', '.join(same)}; it must be a new agent",
                        last_trial(ep))]
    return []


def _multi_agent_rule(ep: Episode) -> list[Problem]:
    """BIB's pair (variant ``""``): see :func:`_bib_rule`. Other variants and twins: the expected test is no more
    surprising than "a new agent" and the unexpected one no less (:func:`surprise_rank`)."""
    if ep.variant == "":
        return _bib_rule(ep)
    out = goal_problems(ep) or _new_agent_problems(ep)
    if out:
        return out
    rank = surprise_rank(ep)
    if (ep.outcome == "expected" and rank > 1) or (ep.outcome == "unexpected" and rank < 1):
        what = ("the familiar agent goes to the other object", "a new agent", "the familiar agent goes to its "
                "preferred object")[2 - rank]
        return [Problem(ep.id, f"{ep.outcome} test shows {what}", last_trial(ep))]
    return []


def _bib_rule(ep: Episode) -> list[Problem]:
    """BIB's pair: the test goal is the non-preferred object; a new agent (expected) or the same one (unexpected)."""
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
    """Identical familiarization; the test trials differ only in the agent (BIB's pair), or show the same
    layout with the expected outcome less surprising than the unexpected one (other variants, twins)."""
    out = shared_familiarization_problems(expected, unexpected)
    te, tu = expected.test, unexpected.test
    i = last_trial(unexpected)
    same_layout = replace(te.layout, agents=tu.layout.agents) == tu.layout
    if expected.variant == "":
        if not same_layout or te.path != tu.path or te.goal != tu.goal:
            out.append(Problem(unexpected.id, "test trial differs from the expected episode's in more than the agent", i))
    elif not same_layout:
        out.append(Problem(unexpected.id, "test layout differs from the expected episode's in more than the agent", i))
    elif not out and surprise_rank(expected) >= surprise_rank(unexpected):
        out.append(Problem(unexpected.id, "the expected test is not less surprising than the unexpected one", i))
    return out


register(TaskSpec("multi-agent", "multi_agent", "evaluation", _multi_agent,
                  rule=_multi_agent_rule, pair_rule=_multi_agent_pair_rule, bib_folder="multi_agent",
                  expected="a new agent goes to the non-preferred object",
                  unexpected="the same agent goes to the non-preferred object", order=20,
                  shortcut_exempt=(("agent-identity", "same vs new agent is the condition's manipulation"),),
                  controls=Controls(twins=True, boltzmann=True, variants=(
                      "", "other-home", "new-agent-A", "new-agent-A+other-home", "same-agent"))))
