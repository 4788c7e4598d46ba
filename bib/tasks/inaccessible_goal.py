"""Inaccessible-goal condition: going to the other object is expected only when the preferred one is walled in.

Familiarization as in ``multi-agent``. The test puts both objects on two NEW cells (cells no
object used in familiarization); the agent walks a shortest path to the non-preferred object
``B``. Expected: the preferred object ``A`` is walled in on all sides (its 8 neighbours are
walls, so it is unreachable). Unexpected: the same layout without that enclosure, both objects
reachable (perceptually closer to familiarization).

In both outcomes ``B`` is the object closer to the agent's home (by shortest-path cost, without
the enclosure). Walled in, ``A`` can never be the closer reachable object in the expected
outcome; were ``B`` sometimes the farther one, "the agent goes to the closer object" would call
those pairs right. So the cue ties on every pair, and the unexpected outcome is the agent going
to the closer, non-preferred object, which only an inferred preference makes surprising.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bib.episode import Episode, Problem
from bib.tasks.preference import (
    OTHER,
    PREFERRED,
    anywhere,
    closer_object,
    familiarization,
    goal_problems,
    home_cost,
    last_trial,
    make_pair,
    preferred,
    sample_goal_layout,
    shared_familiarization_problems,
    start_unit,
    to_other,
    walk,
)
from bib.tasks.registry import TaskSpec, UnitInfo, register
from bib.world.dynamics import ACTIONS, STAY
from bib.world.grid import Cell, Layout
from bib.world.planning import TOL, path_cost


def neighbours(cell: Cell) -> frozenset[Cell]:
    """The 8 cells around ``cell``."""
    return frozenset((cell[0] + dx, cell[1] + dy) for dx, dy in ACTIONS[:STAY])


def enclose(layout: Layout, object_id: str) -> Layout:
    """``layout`` with walls on all 8 cells around object ``object_id``."""
    return replace(layout, walls=layout.walls | neighbours(layout.object(object_id).cell))


def _enclosable(layout: Layout, used: set[Cell]) -> bool:
    """Both cells new, ``B`` the closer object, and walling in ``A`` leaves ``B`` reachable."""
    a, b = layout.object(PREFERRED).cell, layout.object(OTHER).cell
    if a in used or b in used or closer_object(layout) != OTHER:
        return False
    ring = neighbours(a)
    if layout.agent.home in ring or b in ring:
        return False
    return bool(np.isfinite(home_cost(enclose(layout, PREFERRED), b)))


def _inaccessible_goal(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """An inaccessible-goal pair (see the module docstring for why ``B`` is always the closer object)."""
    agent, looks = start_unit(rng)
    fam = familiarization(rng, agent, looks, anywhere(agent.home))
    used = {o.cell for t in fam for o in t.layout.objects}
    open_layout = sample_goal_layout(rng, agent, looks, anywhere(agent.home),
                                     accept=lambda lay: _enclosable(lay, used),
                                     what="inaccessible-goal test layout")
    walled = enclose(open_layout, PREFERRED)
    b = open_layout.object(OTHER).cell
    walled_path = walk(walled, b, rng)
    # The same path for both outcomes whenever the enclosure does not lengthen it.
    same = abs(path_cost(walled_path) - home_cost(open_layout, b)) < TOL
    open_path = walled_path if same else walk(open_layout, b, rng)
    return make_pair(unit, fam, to_other(walled, walled_path), to_other(open_layout, open_path))


def _inaccessible_goal_rule(ep: Episode) -> list[Problem]:
    """Test goal is the other object at new cells; the preferred one walled in (expected) or reachable."""
    out = goal_problems(ep, test_to_other=True)
    if out:
        return out
    ti, test, pref = last_trial(ep), ep.test, preferred(ep)
    lay = test.layout
    fam = ep.familiarization
    if test.agent != fam[0].agent:
        out.append(Problem(ep.id, "test agent is not the familiarization agent", ti))
    used = {o.cell for t in fam for o in t.layout.objects}
    for o in lay.objects:
        if o.cell in used:
            out.append(Problem(ep.id, f"test object {o.id!r} is not at a new location", ti, cell=o.cell))
    target = lay.object(pref).cell  # type: ignore[arg-type]
    can_reach = bool(np.isfinite(home_cost(lay, target)))
    if ep.outcome == "expected":
        gaps = sorted(neighbours(target) - lay.walls)
        if gaps:
            out.append(Problem(ep.id, f"preferred object {pref!r} is not walled in on all sides", ti, cell=gaps[0]))
        elif can_reach:
            out.append(Problem(ep.id, f"preferred object {pref!r} is reachable", ti, cell=target))
    elif not can_reach:
        out.append(Problem(ep.id, f"preferred object {pref!r} is unreachable; both must be reachable", ti,
                           cell=target))
    return out


def _inaccessible_goal_pair_rule(expected: Episode, unexpected: Episode) -> list[Problem]:
    """Identical familiarization; the expected test only adds the enclosure's walls."""
    out = shared_familiarization_problems(expected, unexpected)
    le, lu = expected.test.layout, unexpected.test.layout
    pref = preferred(expected)
    extra = le.walls - lu.walls
    same = (le.objects, le.agents, le.barriers) == (lu.objects, lu.agents, lu.barriers)
    ring = neighbours(le.object(pref).cell) if pref in {o.id for o in le.objects} else frozenset()
    if not same or not lu.walls <= le.walls or not extra <= ring:
        out.append(Problem(unexpected.id, "test layout differs from the expected episode's in more than the walls "
                                          "around the preferred object", last_trial(unexpected)))
    return out


register(TaskSpec("inaccessible-goal", "inaccessible_goal", "evaluation", _inaccessible_goal,
                  rule=_inaccessible_goal_rule, pair_rule=_inaccessible_goal_pair_rule, bib_folder="inaccessible_goal",
                  expected="preferred object walled in; agent goes to the other",
                  unexpected="both reachable; agent goes to the other", order=30))
