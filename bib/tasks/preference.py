"""Preference condition, plus the two-object goal-inference helpers multi-agent and inaccessible-goal share.

Familiarization (BIB [P §2]): one agent starts from a fixed home and always walks a shortest path
to its preferred object ``A`` rather than to object ``B``; both are always reachable. In
``preference`` the objects' locations correlate with their identity (each stays within one cell
of a base cell); the test shows one familiarization layout with the identities swapped.
Expected: the agent goes to ``A`` at its new location (a new path). Unexpected: it goes to ``B``
at ``A``'s old location, repeating that familiarization trial's path exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from bib.episode import Episode, Problem, Trial, trial_to_dict
from bib.tasks.common import (
    N_FAMILIARIZATION,
    PairDraft,
    Walker,
    empty_layout,
    finish_group,
    interior,
    make_episode,
    make_trial,
    place,
    sample_agent,
    sample_cells,
    sample_looks,
    twin_of,
)
from bib.tasks.options import Controls
from bib.tasks.registry import LayoutRejected, TaskSpec, UnitInfo, register
from bib.world.grid import Agent, Cell, Layout
from bib.world.planning import TOL, distance_field, path_cost, shortest_path

PREFERRED = "A"
"""Id of the object the agent goes to in every familiarization trial."""
OTHER = "B"
"""Id of the non-preferred object."""
MIN_GAP = 2
"""Chebyshev distance objects keep from the agent's home and from each other."""
MAX_WALLS = 3
"""At most this many random interior wall cells per trial."""
MAX_TRIES = 60
"""Layout draws per trial before the whole unit is rejected (and redrawn by the registry)."""

Look = tuple[str, tuple[int, int, int]]
Placer = Callable[[np.random.Generator], tuple[Cell, Cell]]


# ---------------------------------------------------------------- layouts


def chebyshev(a: Cell, b: Cell) -> int:
    """King-move distance between two cells, ignoring walls."""
    return max(abs(a[0] - b[0]), abs(a[1] - b[1]))


def well_spaced(home: Cell, a: Cell, b: Cell) -> bool:
    """True when both objects keep :data:`MIN_GAP` from the home and from each other."""
    return min(chebyshev(home, a), chebyshev(home, b), chebyshev(a, b)) >= MIN_GAP


def goal_layout(agent: Agent, looks: list[Look], a: Cell, b: Cell, walls: frozenset[Cell] = frozenset()) -> Layout:
    """A grid with the border, ``walls``, the agent, ``A`` (look 0) at ``a`` and ``B`` (look 1) at ``b``."""
    objects = (place(looks[0], PREFERRED, a), place(looks[1], OTHER, b))
    return empty_layout(walls=frozenset(walls), objects=objects, agents=(agent,))


def sample_walls(rng: np.random.Generator, keep_free: list[Cell]) -> frozenset[Cell]:
    """0 to :data:`MAX_WALLS` random interior wall cells, avoiding ``keep_free``."""
    return frozenset(sample_cells(rng, interior(), int(rng.integers(0, MAX_WALLS + 1)), exclude=keep_free))


def home_cost(layout: Layout, cell: Cell) -> float:
    """Shortest-path cost from the agent's home to ``cell`` (``inf`` when unreachable).

    Moves are symmetric, so this reads the (cached) distance field of the home.
    """
    home = layout.agent.home
    return float(distance_field(layout, home)[cell[1], cell[0]])


def walk(layout: Layout, goal: Cell, rng: np.random.Generator) -> list[Cell]:
    """A shortest path from the agent's home to ``goal``, ties broken by ``rng``.

    It is drawn backwards from ``goal`` so that it reads the home's distance field, which
    :func:`all_reachable` and the rules already need (one Dijkstra per layout, not two).

    Raises:
        LayoutRejected: when ``goal`` is unreachable.
    """
    path = shortest_path(layout, goal, layout.agent.home, rng=rng)
    if path is None:
        raise LayoutRejected(f"cell {list(goal)} is unreachable from the agent's home")
    return path[::-1]


def all_reachable(layout: Layout) -> bool:
    """True when the agent can reach every object of the layout."""
    return all(np.isfinite(home_cost(layout, o.cell)) for o in layout.objects)


def closer_object(layout: Layout) -> str | None:
    """Id of the object with the smaller shortest-path cost from the agent's home (None on a tie).

    An unreachable object (infinite cost) is never the closer one.
    """
    (i, ci), (j, cj) = [(o.id, home_cost(layout, o.cell)) for o in layout.objects]
    if abs(ci - cj) < TOL or (np.isinf(ci) and np.isinf(cj)):
        return None
    return i if ci < cj else j


def sample_goal_layout(
    rng: np.random.Generator,
    agent: Agent,
    looks: list[Look],
    placer: Placer,
    accept: Callable[[Layout], bool] = all_reachable,
    what: str = "layout",
) -> Layout:
    """Draw object cells with ``placer`` and random walls until ``accept`` holds.

    Raises:
        LayoutRejected: after :data:`MAX_TRIES` draws.
    """
    home = agent.home
    for _ in range(MAX_TRIES):
        a, b = placer(rng)
        if not well_spaced(home, a, b):
            continue
        layout = goal_layout(agent, looks, a, b, sample_walls(rng, [home, a, b]))
        if all_reachable(layout) and accept(layout):
            return layout
    raise LayoutRejected(f"no acceptable {what} in {MAX_TRIES} draws")


def anywhere(home: Cell) -> Placer:
    """A placer putting both objects anywhere in the interior except on ``home``."""
    return lambda rng: tuple(sample_cells(rng, interior(), 2, exclude=[home]))  # type: ignore[return-value]


def familiarization(rng: np.random.Generator, agent: Agent, looks: list[Look], placer: Placer) -> list[Trial]:
    """:data:`N_FAMILIARIZATION` trials in which the agent walks a shortest path to ``A``."""
    trials = []
    for _ in range(N_FAMILIARIZATION):
        layout = sample_goal_layout(rng, agent, looks, placer, what="familiarization layout")
        trials.append(make_trial(layout, walk(layout, layout.object(PREFERRED).cell, rng), PREFERRED))
    return trials


def start_unit(rng: np.random.Generator) -> tuple[Agent, list[Look]]:
    """The agent (random home, shape, colour) and the two object looks of a unit."""
    home = sample_cells(rng, interior(), 1)[0]
    return sample_agent(rng, "agent-0", home), sample_looks(rng, 2)


def to_other(layout: Layout, path: list[Cell] | tuple[Cell, ...]) -> Trial:
    """A test trial walking ``path`` to the non-preferred object ``B``."""
    return make_trial(layout, path, OTHER, "test")


def make_pair(unit: UnitInfo, fam: list[Trial], expected: Trial, unexpected: Trial) -> list[Episode]:
    """The expected and unexpected episodes of a unit; both share the familiarization trials."""
    return [
        make_episode(unit, [*fam, expected], outcome="expected", paired=True),
        make_episode(unit, [*fam, unexpected], outcome="unexpected", paired=True),
    ]


# ---------------------------------------------------------------- rules


def preferred(ep: Episode) -> str | None:
    """The preferred object of an episode: the goal of its first familiarization trial."""
    fam = ep.familiarization
    return fam[0].goal if fam else None


def looks_of(layout: Layout) -> dict[str, tuple[str, tuple[int, int, int]]]:
    """Object id -> (shape, colour) of a layout."""
    return {o.id: (o.shape, o.color) for o in layout.objects}


def goal_problems(ep: Episode, test_to_other: bool = False) -> list[Problem]:
    """Rules every two-object goal-inference episode obeys.

    An evaluation outcome; :data:`N_FAMILIARIZATION` familiarization trials whose goals agree
    (the preferred object), shown by the same agent, with both objects reachable; exactly two
    objects whose ids, shapes and colours never change; and every trial (test included) walks a
    shortest path to an object. With ``test_to_other`` the test goal must be the non-preferred
    object.
    """
    out: list[Problem] = []
    if ep.outcome not in ("expected", "unexpected"):
        out.append(Problem(ep.id, f"outcome is {ep.outcome!r}; an evaluation episode is expected or unexpected"))
    fam = ep.familiarization
    if len(fam) != N_FAMILIARIZATION:
        out.append(Problem(ep.id, f"{len(fam)} familiarization trials, expected {N_FAMILIARIZATION}"))
    if not fam:
        return out
    first = fam[0]
    looks = looks_of(first.layout)
    if len(looks) != 2:
        return out + [Problem(ep.id, f"{len(first.layout.objects)} objects, expected two", 0)]
    for i, trial in enumerate(ep.trials):
        if len(trial.layout.objects) != 2 or looks_of(trial.layout) != looks:
            out.append(Problem(ep.id, "objects differ from trial 0's (ids, shapes and colours must stay)", i))
        if trial.goal not in looks:
            out.append(Problem(ep.id, f"goal {trial.goal!r} is not one of the two objects", i))
        elif ep.beta is None and abs(path_cost(trial.path) - home_cost(trial.layout, trial.path[-1])) > TOL:
            out.append(Problem(ep.id, f"path to {trial.goal!r} is not a shortest path", i))
        if trial.phase != "familiarization":
            if test_to_other and trial.goal == first.goal:
                out.append(Problem(ep.id, f"test goal is the preferred object {first.goal!r}, not the other one", i))
            continue
        if trial.goal != first.goal:
            out.append(Problem(ep.id, f"familiarization goal {trial.goal!r} differs from trial 0's {first.goal!r}", i))
        if trial.agent != first.agent:
            out.append(Problem(ep.id, "familiarization agent differs from trial 0's", i))
        if not all_reachable(trial.layout):
            out.append(Problem(ep.id, "an object is unreachable in a familiarization trial", i))
    return out


def _trial_bytes(trial: Trial) -> str:
    return json.dumps(trial_to_dict(trial), separators=(",", ":"))


def shared_familiarization_problems(expected: Episode, unexpected: Episode) -> list[Problem]:
    """Pair rule common to every goal-inference condition: one pair, identical familiarization.

    Problems are reported on the unexpected episode, naming the first differing trial.
    """
    uid = unexpected.id
    out: list[Problem] = []
    if (expected.outcome, unexpected.outcome) != ("expected", "unexpected"):
        out.append(Problem(uid, f"pair outcomes are {expected.outcome!r}/{unexpected.outcome!r}, "
                                "expected 'expected'/'unexpected'"))
    if expected.pair_id is None or expected.pair_id != unexpected.pair_id:
        out.append(Problem(uid, f"pair ids differ: {expected.pair_id!r} vs {unexpected.pair_id!r}"))
    fe, fu = expected.familiarization, unexpected.familiarization
    if len(fe) != len(fu):
        return out + [Problem(uid, f"{len(fu)} familiarization trials, the expected episode has {len(fe)}")]
    for i, (te, tu) in enumerate(zip(fe, fu)):
        if te is not tu and _trial_bytes(te) != _trial_bytes(tu):  # generators share the trial objects
            out.append(Problem(uid, f"familiarization trial differs from the expected episode {expected.id}'s", i))
            break
    return out


def last_trial(ep: Episode) -> int:
    """Index of the test trial (the last one)."""
    return len(ep.trials) - 1


# ---------------------------------------------------------------- preference


def _near(base: Cell) -> list[Cell]:
    """Interior cells within one king move of ``base`` (``base`` included)."""
    return [c for c in interior() if chebyshev(c, base) <= 1]


def swapped(fam_layout: Layout, test_layout: Layout) -> bool:
    """True when ``test_layout`` is ``fam_layout`` with its two objects' cells exchanged."""
    if (fam_layout.walls, fam_layout.barriers, fam_layout.agents) != (test_layout.walls, test_layout.barriers,
                                                                       test_layout.agents):
        return False
    fam_cells = {o.id: o.cell for o in fam_layout.objects}
    test_cells = {o.id: o.cell for o in test_layout.objects}
    if len(fam_cells) != 2 or set(fam_cells) != set(test_cells):
        return False
    i, j = fam_cells
    return test_cells[i] == fam_cells[j] and test_cells[j] == fam_cells[i]


def _identity_placer(rng: np.random.Generator, home: Cell) -> Placer:
    """A placer keeping each object within one cell of its own base cell (locations correlate with identity)."""
    for _ in range(MAX_TRIES):
        a0, b0 = sample_cells(rng, interior(), 2, exclude=[home])
        if chebyshev(a0, b0) >= MIN_GAP + 2 and min(chebyshev(home, a0), chebyshev(home, b0)) >= MIN_GAP + 1:
            break
    else:
        raise LayoutRejected("no base cells for the two objects")
    near_a, near_b = _near(a0), _near(b0)

    def placer(g: np.random.Generator) -> tuple[Cell, Cell]:
        return near_a[int(g.integers(len(near_a)))], near_b[int(g.integers(len(near_b)))]

    return placer


def _preference(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """A preference pair; the test reuses a familiarization layout where ``A`` was closer with p = 1/2.

    Balancing that coin makes "the agent goes to the closer object" right on half of the pairs
    and wrong on the other half.
    """
    if not unit.options.legacy:
        return _preference_controlled(rng, unit)
    agent, looks = start_unit(rng)
    pref_closer = bool(rng.integers(2))
    placer = _identity_placer(rng, agent.home)
    fam = familiarization(rng, agent, looks, placer)
    want = PREFERRED if pref_closer else OTHER
    candidates = [i for i, t in enumerate(fam) if closer_object(t.layout) == want]
    if not candidates:
        raise LayoutRejected(f"no familiarization trial where {want} is the closer object")
    source = fam[candidates[int(rng.integers(len(candidates)))]]
    lay = source.layout
    old_a, old_b = lay.object(PREFERRED).cell, lay.object(OTHER).cell
    test_layout = replace(lay, objects=(replace(lay.objects[0], cell=old_b), replace(lay.objects[1], cell=old_a)))
    expected = make_trial(test_layout, walk(test_layout, old_b, rng), PREFERRED, "test")
    unexpected = make_trial(test_layout, source.path, OTHER, "test")
    return make_pair(unit, fam, expected, unexpected)


def _preference_controlled(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """A preference group of the controlled set: a pair (variant ``""`` or ``catch``) and, with twins, its twin.

    ``""``: as BIB (the source layout with the objects swapped; expected = ``A`` at its new place,
    unexpected = ``B`` on the familiar path). ``catch``: the source layout unchanged; expected =
    ``A`` along the familiar path, unexpected = ``B`` at its place (a novel path). The twin's
    familiarization shows the same layouts with the agent going to ``B``; in the source layout it
    walks exactly the test path that goes to ``B``'s cell, so in the twin the test path to ``B``
    is expected and the other one (familiar in ``""``, novel in ``catch``) unexpected.
    """
    opts = unit.options
    walker = Walker(opts, rng)
    catch = "catch" in opts.variant(unit.design).split("+")
    agent, looks = start_unit(rng)
    pref_closer = bool(rng.integers(2))
    placer = _identity_placer(rng, agent.home)
    layouts = [sample_goal_layout(rng, agent, looks, placer, what="familiarization layout")
               for _ in range(N_FAMILIARIZATION)]
    want = PREFERRED if pref_closer else OTHER
    candidates = [i for i, lay in enumerate(layouts) if closer_object(lay) == want]
    if not candidates:
        raise LayoutRejected(f"no familiarization layout where {want} is the closer object")
    k = candidates[int(rng.integers(len(candidates)))]
    to_a = [walker.walk(lay, PREFERRED) for lay in layouts]
    source = layouts[k]
    if catch:
        test_layout = source
        path_e, path_u = to_a[k], walker.walk(source, OTHER)
    else:
        old_a, old_b = source.object(PREFERRED).cell, source.object(OTHER).cell
        test_layout = replace(source, objects=(replace(source.objects[0], cell=old_b),
                                               replace(source.objects[1], cell=old_a)))
        path_e, path_u = walker.walk(test_layout, PREFERRED), to_a[k]
    fam = [make_trial(lay, p, PREFERRED) for lay, p in zip(layouts, to_a)]
    draft = PairDraft(fam, make_trial(test_layout, path_e, PREFERRED, "test"), fam,
                      make_trial(test_layout, path_u, OTHER, "test"), "catch" if catch else "")
    drafts = [draft]
    if opts.twins:
        # the path to B's cell in the source layout: the test path that goes to B (catch) or to A at B's old cell
        to_b = [path_u if (i == k and catch) else path_e if i == k else walker.walk(lay, OTHER)
                for i, lay in enumerate(layouts)]
        drafts = [replace(draft, twin=1), twin_of(draft, [make_trial(lay, p, OTHER) for lay, p in zip(layouts, to_b)], 0)]
    return finish_group(unit, drafts, walker.beta)


def _preference_rule(ep: Episode) -> list[Problem]:
    """The test is a familiarization layout with the objects swapped; the outcome decides the goal."""
    out = goal_problems(ep)
    if out:
        return out
    ti, test, pref = last_trial(ep), ep.test, preferred(ep)
    fam = ep.familiarization
    if "catch" in ep.variant.split("+"):
        return _catch_rule(ep)
    sources = [t for t in fam if swapped(t.layout, test.layout)]
    if not sources:
        return [Problem(ep.id, "test layout is not a familiarization layout with the two objects swapped", ti)]
    if ep.outcome == "expected" and test.goal != pref:
        out.append(Problem(ep.id, f"expected test goal is {test.goal!r}, not the preferred object {pref!r}", ti))
    if ep.outcome == "unexpected":
        if test.goal == pref:
            out.append(Problem(ep.id, f"unexpected test goal is the preferred object {pref!r}", ti))
        elif not any(t.path == test.path for t in sources):
            out.append(Problem(ep.id, "unexpected test path does not repeat the familiarization path to the "
                                      "preferred object's old location", ti))
    return out


def _catch_rule(ep: Episode) -> list[Problem]:
    """A catch pair: the test is a familiarization layout unchanged; expected = the preferred object along
    that trial's familiar path, unexpected = the other object."""
    ti, test, pref = last_trial(ep), ep.test, preferred(ep)
    sources = [t for t in ep.familiarization if t.layout == test.layout]
    if not sources:
        return [Problem(ep.id, "catch test layout is not a familiarization layout", ti)]
    if ep.outcome == "expected":
        if test.goal != pref:
            return [Problem(ep.id, f"expected test goal is {test.goal!r}, not the preferred object {pref!r}", ti)]
        if not any(t.path == test.path for t in sources):
            return [Problem(ep.id, "expected catch test path does not repeat the familiar path", ti)]
    elif test.goal == pref:
        return [Problem(ep.id, f"unexpected test goal is the preferred object {pref!r}", ti)]
    return []


def _preference_pair_rule(expected: Episode, unexpected: Episode) -> list[Problem]:
    """Identical familiarization and the same test layout."""
    out = shared_familiarization_problems(expected, unexpected)
    if expected.test.layout != unexpected.test.layout:
        out.append(Problem(unexpected.id, "test layout differs from the expected episode's", last_trial(unexpected)))
    return out


register(TaskSpec("preference", "preference", "evaluation", _preference,
                  rule=_preference_rule, pair_rule=_preference_pair_rule, bib_folder="preference",
                  controls=Controls(twins=True, variants=("", "catch"), boltzmann=True),
                  expected="preferred object at its new location",
                  unexpected="other object at the preferred object's old location", order=10))
