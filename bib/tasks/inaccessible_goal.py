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
from bib.tasks.common import (
    N_FAMILIARIZATION,
    PairDraft,
    Walker,
    empty_layout,
    finish_group,
    interior,
    make_trial,
    place,
    sample_agent,
    sample_cells,
    sample_looks,
    twin_of,
)
from bib.tasks.options import Controls
from bib.tasks.preference import (
    MAX_TRIES,
    MIN_GAP,
    OTHER,
    PREFERRED,
    all_reachable,
    anywhere,
    chebyshev,
    closer_object,
    familiarization,
    goal_problems,
    home_cost,
    last_trial,
    looks_of,
    make_pair,
    preferred,
    sample_goal_layout,
    sample_walls,
    shared_familiarization_problems,
    start_unit,
    to_other,
    walk,
)
from bib.tasks.registry import LayoutRejected, TaskSpec, UnitInfo, register
from bib.world.dynamics import ACTIONS, STAY
from bib.world.grid import Agent, Cell, Layout
from bib.world.planning import TOL, path_cost

_INTERIOR = frozenset(interior())


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
    if not unit.options.legacy:
        return (_distractor if unit.options.variant(unit.design) == "distractor" else _noisy_bib)(rng, unit)
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


# ---------------------------------------------------------------- controlled set: the distractor design

DISTRACTOR = "C"
"""Id of the third object of the ``distractor`` design."""
IDS = (PREFERRED, OTHER, DISTRACTOR)


def _three_layout(agent: Agent, looks: list, cells: list[Cell], walls: frozenset[Cell]) -> Layout:
    return empty_layout(walls=walls, objects=tuple(place(lk, i, c) for lk, i, c in zip(looks, IDS, cells)),
                        agents=(agent,))


def _sample_three(rng: np.random.Generator, agent: Agent, looks: list, accept=None, what: str = "layout") -> Layout:
    """Three objects anywhere (two king moves from the home and each other), random walls, all reachable."""
    home = agent.home
    for _ in range(MAX_TRIES):
        cells = sample_cells(rng, interior(), 3, exclude=[home])
        if min(chebyshev(a, b) for a, b in zip([home, *cells], [*cells, home]) if a != b) < MIN_GAP:
            continue
        if min(chebyshev(cells[i], cells[j]) for i in range(3) for j in range(i + 1, 3)) < MIN_GAP:
            continue
        layout = _three_layout(agent, looks, cells, sample_walls(rng, [home, *cells]))
        if all_reachable(layout) and (accept is None or accept(layout)):
            return layout
    raise LayoutRejected(f"no acceptable {what} in {MAX_TRIES} draws")


def _ring_fits(layout: Layout, object_id: str) -> bool:
    """The 8 cells around the object are interior, free and hold no home or object (the ring adds 8 walls)."""
    ring = neighbours(layout.object(object_id).cell)
    taken = {layout.agent.home, *(o.cell for o in layout.objects)}
    return ring <= _INTERIOR and not ring & (layout.walls | taken)


def _distractor_test(layout: Layout, used: set[Cell]) -> bool:
    """New cells for all three objects, and a full ring fits around ``A`` and around ``C`` with ``B``
    still reachable either way."""
    if any(o.cell in used for o in layout.objects) or not (_ring_fits(layout, PREFERRED) and _ring_fits(layout, DISTRACTOR)):
        return False
    b = layout.object(OTHER).cell
    return all(np.isfinite(home_cost(enclose(layout, i), b)) and np.isfinite(home_cost(enclose(layout, i), c))
               for i, c in ((PREFERRED, layout.object(DISTRACTOR).cell), (DISTRACTOR, layout.object(PREFERRED).cell)))


def _distractor(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """An inaccessible-goal group of the controlled set (variant ``distractor``) and its twin.

    Familiarization: three objects ``A``, ``B``, ``C`` at varying places; the agent always goes to
    ``A``. Test (all three at new cells): the agent goes to ``B``. Expected: ``A`` is walled in on
    all 8 sides. Unexpected: ``C`` (a distractor) is walled in instead, so ``A`` is reachable. Both
    outcomes show one ring of 8 walls and two reachable objects. The twin's familiarization shows the
    same layouts with the agent going to ``C``: walling in ``C`` is then what makes going to ``B``
    expected.
    """
    opts = unit.options
    walker = Walker(opts, rng)
    home = sample_cells(rng, interior(), 1)[0]
    agent = sample_agent(rng, "agent-0", home)
    looks = sample_looks(rng, 3)
    layouts = [_sample_three(rng, agent, looks, what="familiarization layout") for _ in range(N_FAMILIARIZATION)]
    used = {o.cell for lay in layouts for o in lay.objects}
    open_layout = _sample_three(rng, agent, looks, accept=lambda lay: _distractor_test(lay, used),
                                what="distractor test layout")
    walled_a, walled_c = enclose(open_layout, PREFERRED), enclose(open_layout, DISTRACTOR)
    test_e = make_trial(walled_a, walker.walk(walled_a, OTHER), OTHER, "test")
    test_u = make_trial(walled_c, walker.walk(walled_c, OTHER), OTHER, "test")
    fam = [make_trial(lay, walker.walk(lay, PREFERRED), PREFERRED) for lay in layouts]
    draft = PairDraft(fam, test_e, fam, test_u, "distractor")
    drafts = [draft]
    if opts.twins:
        twin_fam = [make_trial(lay, walker.walk(lay, DISTRACTOR), DISTRACTOR) for lay in layouts]
        drafts = [replace(draft, twin=1), twin_of(draft, twin_fam, 0)]
    return finish_group(unit, drafts, walker.beta)


def _noisy_bib(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """BIB's design (variant ``""``) with the unit's stimulus agent; it has no twin."""
    walker = Walker(unit.options, rng)
    agent, looks = start_unit(rng)
    layouts = [sample_goal_layout(rng, agent, looks, anywhere(agent.home), what="familiarization layout")
               for _ in range(N_FAMILIARIZATION)]
    used = {o.cell for lay in layouts for o in lay.objects}
    open_layout = sample_goal_layout(rng, agent, looks, anywhere(agent.home),
                                     accept=lambda lay: _enclosable(lay, used), what="inaccessible-goal test layout")
    walled = enclose(open_layout, PREFERRED)
    fam = [make_trial(lay, walker.walk(lay, PREFERRED), PREFERRED) for lay in layouts]
    test_e = make_trial(walled, walker.walk(walled, OTHER), OTHER, "test")
    test_u = make_trial(open_layout, walker.walk(open_layout, OTHER), OTHER, "test")
    return finish_group(unit, [PairDraft(fam, test_e, fam, test_u)], walker.beta)


def _walled_in(layout: Layout, object_id: str) -> bool:
    """All 8 cells around the object are walls."""
    return neighbours(layout.object(object_id).cell) <= layout.walls


def _distractor_rule(ep: Episode) -> list[Problem]:
    """Three objects whose looks never change; familiarization goals agree (the preferred object), all
    reachable; test objects at new cells, the agent goes to an object that is neither the preferred
    one nor walled in; expected: the preferred object walled in; unexpected: it is reachable and
    another object is walled in instead (one ring in both)."""
    fam, ti, test = ep.familiarization, last_trial(ep), ep.test
    if len(fam) != N_FAMILIARIZATION:
        return [Problem(ep.id, f"{len(fam)} familiarization trials, expected {N_FAMILIARIZATION}")]
    looks = looks_of(fam[0].layout)
    if set(looks) != set(IDS):
        return [Problem(ep.id, f"objects {sorted(looks)}, expected {list(IDS)}", 0)]
    pref = preferred(ep)
    for i, t in enumerate(ep.trials):
        if looks_of(t.layout) != looks:
            return [Problem(ep.id, "objects differ from trial 0's (ids, shapes and colours must stay)", i)]
        if t.phase == "familiarization" and (t.goal != pref or t.agent != fam[0].agent or not all_reachable(t.layout)):
            return [Problem(ep.id, "familiarization trials must show the same agent going to the same object, "
                                   "every object reachable", i)]
    used = {o.cell for t in fam for o in t.layout.objects}
    if any(o.cell in used for o in test.layout.objects):
        return [Problem(ep.id, "a test object is not at a new location", ti)]
    if test.agent != fam[0].agent or test.goal in (pref, None):
        return [Problem(ep.id, f"the familiar agent must go to an object other than the preferred {pref!r}", ti)]
    walled = [o.id for o in test.layout.objects if _walled_in(test.layout, o.id)]
    want = [pref] if ep.outcome == "expected" else [i for i in IDS if i not in (pref, test.goal)]
    if walled != want:
        return [Problem(ep.id, f"walled-in objects are {walled}, expected {want}", ti)]
    return []


def _inaccessible_goal_rule(ep: Episode) -> list[Problem]:
    """Test goal is the other object at new cells; the preferred one walled in (expected) or reachable."""
    if "distractor" in ep.variant.split("+"):
        return _distractor_rule(ep)
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
    """Identical familiarization; the expected test only adds the enclosure's walls (the distractor
    design: the two tests differ only in which object the ring of 8 walls surrounds)."""
    out = shared_familiarization_problems(expected, unexpected)
    le, lu = expected.test.layout, unexpected.test.layout
    if "distractor" in expected.variant.split("+"):
        rings = [neighbours(o.cell) for o in le.objects if _walled_in(le, o.id) or _walled_in(lu, o.id)]
        base = le.walls - frozenset().union(*rings) if len(rings) == 2 else None
        if (le.objects, le.agents) != (lu.objects, lu.agents) or base is None or base != lu.walls - frozenset().union(*rings) \
                or len(le.walls) != len(lu.walls):
            out.append(Problem(unexpected.id, "test layouts differ in more than which object the ring of walls "
                                              "surrounds", last_trial(unexpected)))
        return out
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
                  unexpected="both reachable; agent goes to the other", order=30,
                  controls=Controls(twins=True, variants=("", "distractor"), untwinned=("",), boltzmann=True)))
