"""Efficiency family: `efficiency-path`, `efficiency-time` and `efficiency-irrational` (BIB §2).

Familiarization (rational): a fixed black barrier (interior wall cells) stands between the
agent and the object; in each of the 8 trials the agent's home and the object are drawn anew on
opposite sides of it and the agent takes a shortest, hence curved, path around it.
Familiarization (irrational): the same layouts without the barrier and the same curved paths.

Tests (the barrier is gone in every test):
- ``efficiency-path``: a familiarization layout of trial k; expected = a shortest (straight)
  path, unexpected = the familiar curved path of trial k.
- ``efficiency-time``: expected as above; unexpected = the first ``n`` steps of the curved path of
  trial k, with the object placed at its end (closer), where ``n`` is the expected path's step
  count, and the prefix's length (hence its rendered duration) equals the straight path's.
- ``efficiency-irrational``: one curved test path on a fresh layout, shared by both episodes;
  expected after irrational familiarization, unexpected after rational familiarization.

The controlled set (:func:`_controlled`) adds path control's ``barrier-kept`` / ``barrier-added``
pairs, whose two outcomes differ in the test barrier: with the same home and object, a path's cost
is the layout's optimal cost plus its excess, so when both outcomes share one layout the unexpected
(less efficient) path is always the longer and path length decides. Keeping the barrier in the
expected outcome only (``barrier-kept``: the expected walk around it is the longer path, the
unexpected one, barrier removed, shorter but inefficient) on half the pairs puts path length at
chance; ``barrier-added`` (the barrier in the unexpected outcome only) balances "a barrier in the
test". Excess cost over optimal, the efficiency principle, still decides every pair.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from bib.episode import Episode, Problem, Trial
from bib.tasks.agents import IrrationalAgent, RationalAgent, rollout
from bib.tasks.common import (
    GRID,
    N_FAMILIARIZATION,
    PairDraft,
    Walker,
    empty_layout,
    finish_group,
    make_episode,
    make_trial,
    pick,
    place,
    sample_agent,
    sample_looks,
)
from bib.tasks.difficulty import excess_cost
from bib.tasks.options import Controls, in_bin
from bib.tasks.registry import LayoutRejected, TaskSpec, UnitInfo, register
from bib.world.dynamics import AgentState, action_between, move_legal
from bib.world.grid import Cell, Layout, border_walls
from bib.world.keylock import is_optimal_path, optimal_cost
from bib.world.planning import TOL, distance_field, path_cost, shortest_path

MIN_DETOUR = 0.5
"""A familiarization barrier must lengthen the shortest path by at least this much."""


# ---------------------------------------------------------------- layouts


def inner_walls(layout: Layout) -> frozenset[Cell]:
    """The walls of a layout that are not its border ring (here: the efficiency barrier)."""
    return layout.walls - border_walls(layout.width, layout.height)


def without_inner_walls(layout: Layout) -> Layout:
    """``layout`` with only its border walls (the barrier removed)."""
    return Layout(layout.width, layout.height, border_walls(layout.width, layout.height), layout.barriers,
                  layout.lock, layout.key, layout.objects, layout.agents, layout.moves)


def grid_symmetry(rng: np.random.Generator, size: int = GRID) -> Callable[[Cell], Cell]:
    """A random symmetry of the square grid (transpose, then flips), as a map on cells."""
    transpose, fx, fy = (bool(b) for b in rng.integers(0, 2, size=3))

    def f(c: Cell) -> Cell:
        x, y = (c[1], c[0]) if transpose else c
        return (size - 1 - x if fx else x, size - 1 - y if fy else y)

    return f


class _Scene:
    """One episode's barrier and how to draw a (home, object) pair on its two sides."""

    def __init__(self, rng: np.random.Generator) -> None:
        bw = int(rng.integers(1, 3))
        bx = int(rng.integers(3, 8 - bw))
        length = int(rng.integers(3, 6))
        y0 = int(rng.integers(1, GRID - length))
        self.rows = range(y0, y0 + length)
        self.left = range(1, bx)
        self.right = range(bx + bw, GRID - 1)
        self.f = grid_symmetry(rng)
        self.barrier = frozenset(self.f((x, y)) for x in range(bx, bx + bw) for y in self.rows)

    def sample(self, rng: np.random.Generator) -> tuple[Cell, Cell]:
        """A home left of the barrier and an object right of it, both within its rows."""
        home = (pick(rng, self.left), pick(rng, self.rows))
        obj = (pick(rng, self.right), pick(rng, self.rows))
        return self.f(home), self.f(obj)


def _efficiency_layouts(rng: np.random.Generator, min_detour: float = MIN_DETOUR) -> tuple[list[Layout], Layout]:
    """Eight familiarization layouts with the barrier, plus a fresh one (the irrational test)."""
    scene = _Scene(rng)
    look = sample_looks(rng, 1)[0]
    agent = sample_agent(rng, "agent-0", (0, 0))
    layouts = [_scene_layout(rng, scene, look, agent, min_detour) for _ in range(N_FAMILIARIZATION + 1)]
    return layouts[:-1], layouts[-1]


def _scene_layout(rng: np.random.Generator, scene: _Scene, look, agent, min_detour: float) -> Layout:
    """A (home, object) draw of the scene whose barrier lengthens the shortest path by ``min_detour`` or more."""
    for _ in range(30):
        home, obj = scene.sample(rng)
        lay = empty_layout(walls=scene.barrier, objects=(place(look, "A", obj),),
                           agents=(replace(agent, home=home),))
        detour = optimal_cost(lay, obj) - optimal_cost(without_inner_walls(lay), obj)
        if np.isfinite(detour) and detour >= min_detour:
            return lay
    raise LayoutRejected("the barrier does not force a detour")


def _rational_familiarization(rng: np.random.Generator, layouts: list[Layout]) -> list[Trial]:
    return [make_trial(lay, rollout(RationalAgent(["A"], rng), lay)[0], "A") for lay in layouts]


def _irrational_familiarization(rational: list[Trial]) -> list[Trial]:
    """The rational trials' curved paths replayed by an irrational agent with the barrier gone."""
    out = []
    for t in rational:
        lay = without_inner_walls(t.layout)
        out.append(make_trial(lay, rollout(IrrationalAgent(t.path), lay)[0], "A"))
    return out


def _pair(unit: UnitInfo, fam_e: list[Trial], test_e: Trial, fam_u: list[Trial], test_u: Trial) -> list[Episode]:
    return [make_episode(unit, [*fam_e, test_e], outcome="expected", paired=True),
            make_episode(unit, [*fam_u, test_u], outcome="unexpected", paired=True)]


# ---------------------------------------------------------------- generators


def _efficiency_path(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    if not unit.options.legacy:
        return _controlled("efficiency-path", rng, unit)
    layouts, _ = _efficiency_layouts(rng)
    fam = _rational_familiarization(rng, layouts)
    k = int(rng.integers(N_FAMILIARIZATION))
    lay = without_inner_walls(fam[k].layout)
    straight = make_trial(lay, rollout(RationalAgent(["A"], rng), lay)[0], "A", "test")
    curved = make_trial(lay, rollout(IrrationalAgent(fam[k].path), lay)[0], "A", "test")
    return _pair(unit, fam, straight, fam, curved)


def _efficiency_time(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    if not unit.options.legacy:
        return _controlled("efficiency-time", rng, unit)
    layouts, _ = _efficiency_layouts(rng)
    fam = _rational_familiarization(rng, layouts)
    for k in rng.permutation(N_FAMILIARIZATION):
        lay = without_inner_walls(fam[int(k)].layout)
        straight = rollout(RationalAgent(["A"], rng), lay)[0]
        n = len(straight) - 1
        prefix = list(fam[int(k)].path[: n + 1])
        if len(prefix) == len(fam[int(k)].path) or abs(path_cost(prefix) - path_cost(straight)) > TOL:
            continue
        closer = Layout(lay.width, lay.height, lay.walls, objects=(place(_look(lay), "A", prefix[-1]),),
                        agents=lay.agents)
        if is_optimal_path(closer, prefix):
            continue
        curved = rollout(IrrationalAgent(prefix), closer)[0]
        test_e = make_trial(lay, straight, "A", "test")
        test_u = make_trial(closer, curved, "A", "test")
        return _pair(unit, fam, test_e, fam, test_u)
    raise LayoutRejected("no familiarization path has an inefficient prefix as long as the straight path")


def _look(lay: Layout) -> tuple[str, tuple[int, int, int]]:
    obj = lay.object("A")
    return obj.shape, obj.color


def _efficiency_irrational(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    if not unit.options.legacy:
        return _controlled("efficiency-irrational", rng, unit)
    layouts, fresh = _efficiency_layouts(rng)
    rational = _rational_familiarization(rng, layouts)
    irrational = _irrational_familiarization(rational)
    curved = _irrational_familiarization(_rational_familiarization(rng, [fresh]))[0]
    test = make_trial(curved.layout, curved.path, "A", "test")
    return _pair(unit, irrational, test, rational, test)


# ---------------------------------------------------------------- controlled set

CTRL_MIN_DETOUR = 0.4
"""In the controlled set a familiarization barrier lengthens the shortest path by this much or more
(down from :data:`MIN_DETOUR`, so that familiar paths can deviate by as little as sqrt 2 - 1)."""
MARGIN = 0.05
"""A noisy expected path costs at least this much less over optimal than the unexpected deviation."""
SHIFT_TRIES = 400
"""(trial, shift) candidates a moved barrier tries before the unit is rejected."""
WAYPOINT_TRIES = 12
"""Waypoints a catch pair's novel path tries per familiarization trial."""


def walk_excess(layout: Layout, path) -> float:
    """How much ``path`` costs over an optimal path from its first cell to its last in ``layout`` (cells)."""
    return path_cost(path) - optimal_cost(layout, tuple(path[-1]), AgentState(tuple(path[0])))


def _counts(path) -> tuple[int, int]:
    """(orthogonal, diagonal) moves of a path: two paths last equally long when these agree."""
    diag = sum(1 for a, b in zip(path, path[1:]) if a[0] != b[0] and a[1] != b[1])
    return len(path) - 1 - diag, diag


def _controlled(condition: str, rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """A pair of the controlled set (efficiency has no twin: efficiency-irrational is its control).

    Familiarization paths come from the unit's stimulus agent; barriers force a detour of at least
    :data:`CTRL_MIN_DETOUR`; the pair's difficulty (the unexpected deviation's excess cost) falls in
    the group's bin. Variants: path ``""`` (barrier removed), ``moved-barrier``, ``catch``,
    ``barrier-kept``, ``barrier-added``; time ``""``, ``catch``, ``new-goal``; irrational ``""``. See
    :func:`_path_tests`, :func:`_moved_tests`, :func:`_catch_tests`, :func:`_kept_tests`,
    :func:`_added_tests`, :func:`_time_tests`, :func:`_time_catch_tests`.
    """
    opts = unit.options
    walker = Walker(opts, rng)
    bin_ = opts.bin(unit.design)
    variant = opts.variant(unit.design)
    scene = _Scene(rng)
    look = sample_looks(rng, 1)[0]
    agent = sample_agent(rng, "agent-0", (0, 0))
    detour = CTRL_MIN_DETOUR
    if condition == "efficiency-path" and variant == "barrier-kept" and bin_ is not None:
        detour = max(detour, bin_[0])  # the kept barrier must cost more than the deviation walked without it
    layouts = [_scene_layout(rng, scene, look, agent, detour) for _ in range(N_FAMILIARIZATION)]
    fam = [make_trial(lay, walker.walk(lay, "A"), "A") for lay in layouts]
    if condition == "efficiency-irrational":
        for _ in range(30):
            fresh = _scene_layout(rng, scene, look, agent, CTRL_MIN_DETOUR)
            path = walker.walk(fresh, "A")
            open_ = without_inner_walls(fresh)
            d = walk_excess(open_, path)
            if d > TOL and in_bin(d, bin_):
                break
        else:
            raise LayoutRejected("no irrational test path in the difficulty bin")
        test = make_trial(open_, path, "A", "test")
        if variant == "barrier-elsewhere":
            return finish_group(unit, [_elsewhere_draft(rng, walker, fam, test)], walker.beta)
        if variant == "barrier-aside":
            return finish_group(unit, [PairDraft(_aside(rng, fam, test), test, fam, test, variant)], walker.beta)
        irrational = [make_trial(without_inner_walls(t.layout), t.path, "A") for t in fam]
        return finish_group(unit, [PairDraft(irrational, test, fam, test, variant)], walker.beta)
    if condition == "efficiency-path":
        make = {"": _path_tests, "moved-barrier": _moved_tests, "catch": _catch_tests,
                "barrier-kept": _kept_tests, "barrier-added": _added_tests}[variant]
    else:
        make = {"": _time_tests, "catch": _time_catch_tests,
                "new-goal": lambda *a: _time_tests(*a, new_goal=True)}[variant]
    test_e, test_u = make(rng, walker, fam, bin_)
    return finish_group(unit, [PairDraft(fam, test_e, fam, test_u, variant)], walker.beta)


def _aside(rng, fam: list[Trial], test: Trial | None = None) -> list[Trial]:
    """The trials ``fam`` (curved walks around their barrier) with the barrier translated out of the way: the
    same cells shifted, in every trial; off every path, home and object; the shortest route to the object
    costing what it costs with no barrier at all; so every walk is a detour nothing needed.

    With ``test`` (``barrier-aside``) the moved barrier also leaves the test's path and objects uncovered, so a
    test picture differs from either familiarization's pictures in as many cells (novelty ties).

    Raises:
        LayoutRejected: no shift of the barrier does all that.
    """
    barrier = inner_walls(fam[0].layout)
    inside = frozenset(interior_cells(fam[0].layout))
    taken = {c for t in fam for c in t.path}
    if test is not None:
        taken |= set(test.path) | {o.cell for o in test.layout.objects}
    shifts = [(dx, dy) for dx in range(-7, 8) for dy in range(-7, 8) if (dx, dy) != (0, 0)]
    for c in rng.permutation(len(shifts)):
        dx, dy = shifts[int(c)]
        moved = frozenset((x + dx, y + dy) for x, y in barrier)
        if not moved <= inside or moved & taken:
            continue
        walls = border_walls(GRID, GRID) | moved
        layouts = [replace(t.layout, walls=walls) for t in fam]
        if all(legal_path(lay, t.path) and abs(optimal_cost(lay, lay.object("A").cell) - optimal_cost(without_inner_walls(lay), lay.object("A").cell))
               < TOL and not is_optimal_path(lay, t.path) for lay, t in zip(layouts, fam)):
            return [make_trial(lay, t.path, "A") for lay, t in zip(layouts, fam)]
    raise LayoutRejected("no place for the barrier out of the irrational agent's way")


def _elsewhere_draft(rng, walker: Walker, fam: list[Trial], test: Trial) -> PairDraft:
    """efficiency-irrational's ``barrier-elsewhere`` pair: barrier presence and rationality come apart.

    The expected (irrational) familiarization keeps the rational agent's curved paths ``fam`` but shows
    the barrier translated out of their way (the same cells, in every trial; off every path, home and
    object; the shortest route to the object costs what it costs with no barrier at all), so every
    curve is a detour nothing needed. The unexpected (rational) familiarization shows the same
    (home, object) layouts with no barrier and the agent's own walks. So the familiarization with the
    barrier is the expected one here and the unexpected one in BIB's design: counting walls decides
    nothing once both designs are in a set, while "was that detour needed?" still does.
    """
    irrational = _aside(rng, fam)
    open_ = [without_inner_walls(t.layout) for t in fam]
    rational = [make_trial(lay, walker.walk(lay, "A", fallback=True), "A") for lay in open_]
    return PairDraft(irrational, test, rational, test, "barrier-elsewhere")


def interior_cells(layout: Layout) -> list[Cell]:
    """The cells inside the border ring."""
    return [(x, y) for y in range(1, layout.height - 1) for x in range(1, layout.width - 1)]


def _expected_walk(walker: Walker, layout: Layout, d: float) -> list[Cell]:
    """The expected test path: the agent's own walk, costing at least :data:`MARGIN` less over optimal than ``d``."""
    return walker.walk(layout, "A", bound=min(walker.model.max_excess, d - MARGIN), fallback=True)


def _path_tests(rng, walker, fam, bin_):
    """Barrier removed: expected = the agent's own walk; unexpected = a familiar path, its excess in the bin."""
    for k in rng.permutation(N_FAMILIARIZATION):
        t = fam[int(k)]
        open_ = without_inner_walls(t.layout)
        d = walk_excess(open_, t.path)
        if d > MARGIN and in_bin(d, bin_):
            return (make_trial(open_, _expected_walk(walker, open_, d), "A", "test"),
                    make_trial(open_, t.path, "A", "test"))
    raise LayoutRejected("no familiar path deviates by an excess cost in the bin")


def _moved_tests(rng, walker, fam, bin_):
    """Barrier moved: a curved path is still required (the moved barrier lengthens the shortest path by
    :data:`CTRL_MIN_DETOUR` or more), the familiar path stays legal and now costs more than optimal
    (by an excess in the bin); expected = the agent's own walk around the moved barrier."""
    barrier = inner_walls(fam[0].layout)
    inside = frozenset(interior_cells(fam[0].layout))
    shifts = [(dx, dy) for dx in range(-7, 8) for dy in range(-7, 8) if (dx, dy) != (0, 0)]
    order = rng.permutation(N_FAMILIARIZATION * len(shifts))[:SHIFT_TRIES]
    for c in order:
        t = fam[int(c) // len(shifts)]
        dx, dy = shifts[int(c) % len(shifts)]
        moved = frozenset((x + dx, y + dy) for x, y in barrier)
        if not moved <= inside or moved & set(t.path):
            continue
        lay = replace(t.layout, walls=border_walls(t.layout.width, t.layout.height) | moved)
        if not legal_path(lay, t.path):
            continue
        obj = lay.object("A").cell
        if optimal_cost(lay, obj) - optimal_cost(without_inner_walls(lay), obj) < CTRL_MIN_DETOUR:
            continue
        d = walk_excess(lay, t.path)
        if d > MARGIN and in_bin(d, bin_):
            return make_trial(lay, _expected_walk(walker, lay, d), "A", "test"), make_trial(lay, t.path, "A", "test")
    raise LayoutRejected("no moved barrier keeps a curve required and the familiar path in the bin")


def legal_path(layout: Layout, path) -> bool:
    """Every move of ``path`` is legal in ``layout`` (no wall entered, no corner cut)."""
    for a, b in zip(path, path[1:]):
        action = action_between(tuple(a), tuple(b))
        if action is None or not move_legal(layout, tuple(a), action):
            return False
    return True


def _waypoint_paths(rng, layout: Layout, avoid: set, excess_ok):
    """Novel paths home -> waypoint -> object (shortest legs, random tie-breaks) without revisits, whose
    excess ``excess_ok`` accepts; ``avoid`` holds familiar paths (as tuples) they must not repeat."""
    home, obj = layout.agent.home, layout.object("A").cell
    from_home, to_obj = distance_field(layout, home), distance_field(layout, obj)
    best = from_home[obj[1], obj[0]]
    cells = [w for w in interior_cells(layout) if w not in (home, obj) and np.isfinite(from_home[w[1], w[0]])
             and excess_ok(from_home[w[1], w[0]] + to_obj[w[1], w[0]] - best)]
    for i in rng.permutation(len(cells))[:WAYPOINT_TRIES]:
        w = cells[int(i)]
        path = shortest_path(layout, home, w, rng=rng) + shortest_path(layout, w, obj, rng=rng)[1:]  # type: ignore[operator]
        if len(set(path)) == len(path) and tuple(path) not in avoid:
            yield path


def _catch_tests(rng, walker, fam, bin_):
    """Barrier in place (a familiarization layout unchanged): expected = the familiar path; unexpected =
    a novel detour whose excess is in the bin (and above the familiar path's own)."""
    avoid = {tuple(t.path) for t in fam}
    for k in rng.permutation(N_FAMILIARIZATION):
        t = fam[int(k)]
        e_k = walk_excess(t.layout, t.path)
        for path in _waypoint_paths(rng, t.layout, avoid, lambda x: x > e_k + MARGIN and in_bin(x, bin_)):
            return make_trial(t.layout, t.path, "A", "test"), make_trial(t.layout, path, "A", "test")
    raise LayoutRejected("no novel detour in the bin")


def _kept_tests(rng, walker, fam, bin_):
    """Barrier kept in the expected outcome, removed in the unexpected one (so that the expected path is
    the longer one; ``barrier-added`` is the reverse, see :func:`_path_pair_rule`): expected = the agent's own walk around the barrier in a familiarization
    layout (not a familiar path); unexpected = the same layout without the barrier and a novel path whose
    excess is in the bin, SHORTER (cost and moves) than the expected walk."""
    avoid = {tuple(t.path) for t in fam}
    for k in rng.permutation(N_FAMILIARIZATION):
        t = fam[int(k)]
        open_ = without_inner_walls(t.layout)
        walk = _fresh_walk(rng, walker, t.layout, avoid)
        if walk is None:
            continue
        e_k, cost, steps = walk_excess(t.layout, walk), path_cost(walk), len(walk)

        def ok(x, e_k=e_k):
            return x > e_k + MARGIN and in_bin(x, bin_)

        for path in _waypoint_paths(rng, open_, avoid, ok):
            if path_cost(path) < cost - TOL and len(path) <= steps:
                return make_trial(t.layout, walk, "A", "test"), make_trial(open_, path, "A", "test")
    raise LayoutRejected("no novel path without the barrier in the bin is shorter than the walk around it")


def _fresh_walk(rng, walker, layout: Layout, avoid: set) -> list[Cell] | None:
    """The agent's walk in ``layout`` that repeats no familiar path (its own draws, then optimal paths with
    random tie-breaks; None when every try repeats one)."""
    for _ in range(WAYPOINT_TRIES):
        walk = walker.walk(layout, "A", fallback=True)
        if tuple(walk) not in avoid:
            return walk
        walk = rollout(RationalAgent(["A"], rng), layout)[0]
        if tuple(walk) not in avoid:
            return walk
    return None


def _added_tests(rng, walker, fam, bin_):
    """Barrier removed in the expected outcome, kept in the unexpected one (the reverse of
    :func:`_kept_tests`): expected = the agent's own walk without the barrier; unexpected = a
    familiarization layout with its barrier and a novel path around it whose excess is in the bin."""
    avoid = {tuple(t.path) for t in fam}
    for k in rng.permutation(N_FAMILIARIZATION):
        t = fam[int(k)]
        for path in _waypoint_paths(rng, t.layout, avoid, lambda x: x > MARGIN and in_bin(x, bin_)):
            open_ = without_inner_walls(t.layout)
            d = walk_excess(t.layout, path)
            return make_trial(open_, _expected_walk(walker, open_, d), "A", "test"), make_trial(t.layout, path, "A", "test")
    raise LayoutRejected("no novel detour around the barrier in the bin")


def _time_tests(rng, walker, fam, bin_, new_goal: bool = False):
    """BIB's time control: expected = an optimal path in the familiar layout without the barrier;
    unexpected = the start of the familiar path lasting as long (same moves), the object placed at its
    end (closer), its excess in the bin.

    With ``new_goal`` (variant ``new-goal``) the expected outcome's object is also placed anew (at a
    cell no familiarization object used, reached by an optimal path of the same moves), so that both
    outcomes show the object somewhere new and only the path tells them apart: the unexpected one
    stays the more familiar-looking, as BIB's design rule asks.
    """
    used = {t.layout.object("A").cell for t in fam}
    for k in rng.permutation(N_FAMILIARIZATION):
        t = fam[int(k)]
        lay = without_inner_walls(t.layout)
        straight = rollout(RationalAgent(["A"], rng), lay)[0]
        n = len(straight) - 1
        prefix = list(t.path[: n + 1])
        if len(prefix) == len(t.path) or _counts(prefix) != _counts(straight) or prefix[-1] in prefix[:-1]:
            continue
        closer = replace(lay, objects=(replace(lay.object("A"), cell=prefix[-1]),))
        d = walk_excess(closer, prefix)
        if not (d > MARGIN and in_bin(d, bin_)):
            continue
        if new_goal:
            moved = _same_moves_goal(rng, lay, _counts(straight), used | {prefix[-1]})
            if moved is None:
                continue
            lay, straight = moved
        return make_trial(lay, straight, "A", "test"), make_trial(closer, prefix, "A", "test")
    raise LayoutRejected("no familiar path has an inefficient prefix in the bin as long as the straight path")


def _same_moves_goal(rng, lay: Layout, counts: tuple[int, int], avoid: set) -> tuple[Layout, list[Cell]] | None:
    """``lay`` with object ``A`` moved to a cell outside ``avoid`` whose optimal path from home has
    exactly ``counts`` moves, and that path (None when no cell qualifies)."""
    home = lay.agent.home
    from_home = distance_field(lay, home)
    cost = counts[0] + counts[1] * 2 ** 0.5
    cells = [c for c in interior_cells(lay) if c not in avoid and c != home
             and abs(from_home[c[1], c[0]] - cost) < TOL]
    for i in rng.permutation(len(cells)):
        moved = replace(lay, objects=(replace(lay.object("A"), cell=cells[int(i)]),))
        path = rollout(RationalAgent(["A"], rng), moved)[0]
        if _counts(path) == counts:
            return moved, path
    return None


def _time_catch_tests(rng, walker, fam, bin_):
    """Barrier in place: expected = the familiar path; unexpected = a novel path lasting as long (same
    moves) that ends on the object placed closer (nearer home than its familiar place), its excess in the bin."""
    prefixes = {tuple(t.path[:m]) for t in fam for m in range(2, len(t.path) + 1)}
    for k in rng.permutation(N_FAMILIARIZATION):
        t = fam[int(k)]
        counts, cost = _counts(t.path), path_cost(t.path)
        e_k = walk_excess(t.layout, t.path)
        home = t.agent.home
        from_home = distance_field(t.layout, home)
        here = from_home[t.path[-1][1], t.path[-1][0]]
        for path in _waypoint_paths(rng, t.layout, set(), lambda x: True):
            cut = next((m for m in range(1, len(path)) if _counts(path[: m + 1]) == counts), None)
            if cut is None or cut == len(path) - 1:
                continue
            prefix = path[: cut + 1]
            g = prefix[-1]
            d = cost - from_home[g[1], g[0]]
            if tuple(prefix) in prefixes or not from_home[g[1], g[0]] < here - TOL:
                continue
            if d > e_k + MARGIN and in_bin(d, bin_):
                closer = replace(t.layout, objects=(replace(t.layout.object("A"), cell=g),))
                return make_trial(t.layout, t.path, "A", "test"), make_trial(closer, prefix, "A", "test")
    raise LayoutRejected("no novel path as long as a familiar one ends closer with an excess in the bin")


# ---------------------------------------------------------------- rules


def _check_rational_familiarization(ep: Episode) -> list[Problem]:
    """Same non-empty barrier in every trial; shortest paths to A that the barrier makes curved."""
    out = []
    barrier = inner_walls(ep.trials[0].layout)
    for i, t in enumerate(ep.familiarization):
        if not inner_walls(t.layout) or inner_walls(t.layout) != barrier:
            out.append(Problem(ep.id, "rational familiarization needs the same barrier in every trial", i))
        elif t.goal != "A":
            out.append(Problem(ep.id, f"goal is {t.goal!r}, expected 'A'", i))
        elif ep.beta is None and not is_optimal_path(t.layout, t.path):
            out.append(Problem(ep.id, "familiarization path is not a shortest path around the barrier", i))
        elif is_optimal_path(without_inner_walls(t.layout), t.path):
            out.append(Problem(ep.id, "the barrier does not make the familiarization path curved", i))
    return out


def _check_irrational_familiarization(ep: Episode) -> list[Problem]:
    """No barrier; curved (not shortest) paths to A."""
    return _check_open_familiarization(ep, rational=False)


def _check_open_familiarization(ep: Episode, rational: bool) -> list[Problem]:
    """No barrier and paths to A: not shortest (``rational`` False: BIB's irrational familiarization), or shortest
    for the noise-free agent (``rational``: ``barrier-elsewhere``'s rational familiarization)."""
    out = []
    for i, t in enumerate(ep.familiarization):
        if inner_walls(t.layout):
            what = "barrier-elsewhere: the rational familiarization shows" if rational else "irrational familiarization has"
            out.append(Problem(ep.id, f"{what} a barrier", i))
        elif t.goal != "A":
            out.append(Problem(ep.id, f"goal is {t.goal!r}, expected 'A'", i))
        elif not rational and is_optimal_path(t.layout, t.path):
            out.append(Problem(ep.id, "irrational familiarization path is a shortest path", i))
        elif rational and ep.beta is None and not is_optimal_path(t.layout, t.path):
            out.append(Problem(ep.id, "familiarization path is not a shortest path", i))
    return out


def _check_open_test(ep: Episode) -> list[Problem]:
    """The test shows no barrier and its path goes to A."""
    i, t = len(ep.trials) - 1, ep.test
    if inner_walls(t.layout):
        return [Problem(ep.id, "the barrier is still present in the test", i)]
    if t.goal != "A":
        return [Problem(ep.id, f"test goal is {t.goal!r}, expected 'A'", i)]
    return []


def _familiar_layout(ep: Episode, home: Cell, obj: Cell) -> bool:
    return any((t.agent.home, t.layout.object("A").cell) == (home, obj) for t in ep.familiarization)


def _variant(ep: Episode) -> str:
    return ep.variant.split("+")[0]


def _catch_rule(ep: Episode) -> list[Problem]:
    """Catch pairs: the test is a familiarization layout with its barrier (time: the unexpected
    outcome's object placed closer); expected = that trial's familiar path; unexpected = a novel path
    (not a familiar path or, in time, the start of one) that is not a shortest path."""
    out = _check_rational_familiarization(ep)
    if out:
        return out
    i, t = len(ep.trials) - 1, ep.test
    fam = ep.familiarization
    if t.goal != "A" or inner_walls(t.layout) != inner_walls(fam[0].layout):
        return [Problem(ep.id, "a catch test keeps the familiarization barrier and goes to A", i)]
    if ep.outcome == "expected":
        if not any(f.layout == t.layout and f.path == t.path for f in fam):
            return [Problem(ep.id, "expected catch test does not repeat a familiarization trial", i)]
        return []
    n = len(t.path)
    if is_optimal_path(t.layout, t.path):
        return [Problem(ep.id, "unexpected test path is a shortest path", i)]
    if any(f.path[:n] == t.path for f in fam):
        return [Problem(ep.id, "unexpected catch test path repeats a familiar path", i)]
    if not any(f.agent.home == t.agent.home for f in fam):
        return [Problem(ep.id, "unexpected catch test starts from no familiar home", i)]
    return []


def _moved_rule(ep: Episode) -> list[Problem]:
    """Barrier moved: the familiarization barrier translated (same shape, another place) in a familiar
    (home, object) layout, still forcing a detour; unexpected = a familiar path, not a shortest path."""
    out = _check_rational_familiarization(ep)
    if out:
        return out
    i, t = len(ep.trials) - 1, ep.test
    old, new = inner_walls(ep.familiarization[0].layout), inner_walls(t.layout)
    shift = (min(new)[0] - min(old)[0], min(new)[1] - min(old)[1]) if new and old else (0, 0)
    if not new or new == old or frozenset((x + shift[0], y + shift[1]) for x, y in old) != new:
        return [Problem(ep.id, "test barrier is not the familiarization barrier moved", i)]
    if t.goal != "A" or not _familiar_layout(ep, t.agent.home, t.layout.object("A").cell):
        return [Problem(ep.id, "test is not a familiar (home, object) layout going to A", i)]
    obj = t.layout.object("A").cell
    if optimal_cost(t.layout, obj) - optimal_cost(without_inner_walls(t.layout), obj) < CTRL_MIN_DETOUR - TOL:
        return [Problem(ep.id, "the moved barrier does not require a curved path", i)]
    if ep.outcome == "unexpected":
        if is_optimal_path(t.layout, t.path):
            return [Problem(ep.id, "unexpected test path is a shortest path", i)]
        if t.path not in {f.path for f in ep.familiarization}:
            return [Problem(ep.id, "unexpected test path is not a familiar path", i)]
    elif ep.beta is None and not is_optimal_path(t.layout, t.path):
        return [Problem(ep.id, "expected test path is not a shortest path", i)]
    return []


def _kept_added_rule(ep: Episode) -> list[Problem]:
    """``barrier-kept`` / ``barrier-added``: a familiar (home, object) layout; the outcome that walks with
    the barrier (expected in kept, unexpected in added) keeps the familiarization barrier in place, the
    other shows none; paths go to A and repeat no familiar path; the unexpected path is not a shortest path."""
    out = _check_rational_familiarization(ep)
    if out:
        return out
    i, t = len(ep.trials) - 1, ep.test
    with_barrier = (_variant(ep) == "barrier-kept") == (ep.outcome == "expected")
    barrier = inner_walls(ep.familiarization[0].layout)
    if t.goal != "A" or not _familiar_layout(ep, t.agent.home, t.layout.object("A").cell):
        return [Problem(ep.id, "test is not a familiar (home, object) layout going to A", i)]
    if inner_walls(t.layout) != (barrier if with_barrier else frozenset()):
        where = "keeps the familiarization barrier" if with_barrier else "shows no barrier"
        return [Problem(ep.id, f"the {ep.outcome} test of {_variant(ep)} {where}", i)]
    if t.path in {f.path for f in ep.familiarization}:
        return [Problem(ep.id, f"{ep.outcome} test path repeats a familiar path", i)]
    if ep.outcome == "unexpected" and is_optimal_path(t.layout, t.path):
        return [Problem(ep.id, "unexpected test path is a shortest path", i)]
    if ep.outcome == "expected" and ep.beta is None and not is_optimal_path(t.layout, t.path):
        return [Problem(ep.id, "expected test path is not a shortest path", i)]
    return []


def _efficiency_path_rule(ep: Episode) -> list[Problem]:
    """Rational familiarization; test = a familiarization layout without the barrier; expected
    shortest path (any path of a noisy agent), unexpected the familiar curved path (not shortest).
    Variants ``moved-barrier`` and ``catch``: :func:`_moved_rule`, :func:`_catch_rule`."""
    if _variant(ep) == "moved-barrier":
        return _moved_rule(ep)
    if _variant(ep) == "catch":
        return _catch_rule(ep)
    if _variant(ep) in ("barrier-kept", "barrier-added"):
        return _kept_added_rule(ep)
    out = _check_rational_familiarization(ep) + _check_open_test(ep)
    if out:
        return out
    i, t = len(ep.trials) - 1, ep.test
    if not _familiar_layout(ep, t.agent.home, t.layout.object("A").cell):
        return [Problem(ep.id, "test layout is not a familiarization layout without the barrier", i)]
    if ep.outcome == "expected" and ep.beta is None and not is_optimal_path(t.layout, t.path):
        return [Problem(ep.id, "expected test path is not a shortest path", i)]
    if ep.outcome == "unexpected":
        if is_optimal_path(t.layout, t.path):
            return [Problem(ep.id, "unexpected test path is a shortest path", i)]
        if t.path not in {f.path for f in ep.familiarization}:
            return [Problem(ep.id, "unexpected test path is not a familiar curved path", i)]
    return []


def _efficiency_time_rule(ep: Episode) -> list[Problem]:
    """Rational familiarization; expected = shortest path in a familiarization layout without the
    barrier; unexpected = a strict prefix of a familiar curved path, not shortest (``catch``: :func:`_catch_rule`)."""
    if _variant(ep) == "catch":
        return _catch_rule(ep)
    out = _check_rational_familiarization(ep) + _check_open_test(ep)
    if out:
        return out
    i, t = len(ep.trials) - 1, ep.test
    if ep.outcome == "expected" and _variant(ep) == "new-goal":
        fam = ep.familiarization
        if not any(f.agent.home == t.agent.home for f in fam) or \
                t.layout.object("A").cell in {f.layout.object("A").cell for f in fam}:
            return [Problem(ep.id, "new-goal test: a familiar home, the object at a cell no familiarization used", i)]
        if not is_optimal_path(t.layout, t.path):
            return [Problem(ep.id, "expected test path is not a shortest path", i)]
    elif ep.outcome == "expected":
        if not _familiar_layout(ep, t.agent.home, t.layout.object("A").cell):
            return [Problem(ep.id, "test layout is not a familiarization layout without the barrier", i)]
        if not is_optimal_path(t.layout, t.path):
            return [Problem(ep.id, "expected test path is not a shortest path", i)]
    if ep.outcome == "unexpected":
        if is_optimal_path(t.layout, t.path):
            return [Problem(ep.id, "unexpected test path is a shortest path", i)]
        n = len(t.path)
        if not any(len(f.path) > n and f.path[:n] == t.path for f in ep.familiarization):
            return [Problem(ep.id, "unexpected test path is not the start of a familiar curved path", i)]
    return []


def _check_barrier_elsewhere(ep: Episode) -> list[Problem]:
    """``barrier-elsewhere``'s and ``barrier-aside``'s irrational familiarization: the same barrier in every
    trial, out of the agent's way (the shortest route costs what it costs without it), and paths to A that
    are not shortest."""
    out = []
    name = _variant(ep)
    barrier = inner_walls(ep.trials[0].layout)
    for i, t in enumerate(ep.familiarization):
        obj = t.layout.object("A").cell if t.goal == "A" else None
        if not barrier or inner_walls(t.layout) != barrier:
            out.append(Problem(ep.id, f"{name}: the same barrier in every familiarization trial", i))
        elif obj is None:
            out.append(Problem(ep.id, f"goal is {t.goal!r}, expected 'A'", i))
        elif optimal_cost(t.layout, obj) > optimal_cost(without_inner_walls(t.layout), obj) + TOL:
            out.append(Problem(ep.id, f"{name}: the barrier stands in the agent's way", i))
        elif is_optimal_path(t.layout, t.path):
            out.append(Problem(ep.id, "irrational familiarization path is a shortest path", i))
    return out


def _efficiency_irrational_rule(ep: Episode) -> list[Problem]:
    """Expected: irrational familiarization; unexpected: rational; both: a curved test path.
    ``barrier-elsewhere``: the barrier out of the irrational agent's way, none in the rational familiarization.
    ``barrier-aside``: the barrier out of the irrational agent's way, in the rational agent's way."""
    if _variant(ep) == "barrier-elsewhere":
        check = _check_barrier_elsewhere if ep.outcome == "expected" else partial(_check_open_familiarization,
                                                                                  rational=True)
    elif _variant(ep) == "barrier-aside":
        check = _check_barrier_elsewhere if ep.outcome == "expected" else _check_rational_familiarization
    else:
        check = _check_irrational_familiarization if ep.outcome == "expected" else _check_rational_familiarization
    out = check(ep) + _check_open_test(ep)
    if not out and is_optimal_path(ep.test.layout, ep.test.path):
        out.append(Problem(ep.id, "test path is a shortest path, expected a curved one", len(ep.trials) - 1))
    return out


def _shared_familiarization(e: Episode, u: Episode) -> list[Problem]:
    for i, (a, b) in enumerate(zip(e.familiarization, u.familiarization)):
        if a != b:
            return [Problem(u.id, "familiarization differs from the expected episode's", i)]
    if len(e.familiarization) != len(u.familiarization):
        return [Problem(u.id, "familiarization length differs from the expected episode's")]
    return []


def _path_pair_rule(e: Episode, u: Episode) -> list[Problem]:
    """Shared familiarization and the same test layout; the expected path costs less over optimal
    than the unexpected one (by :data:`MARGIN` when the agent is noisy).

    ``barrier-kept`` and ``barrier-added`` (which balance path length, docs/tasks.md): the two test
    layouts are the same but for the barrier, which only the expected (kept) or only the unexpected
    (added) outcome shows; in ``barrier-kept`` the unexpected path is also shorter than the expected
    one (cost, and moves at most as many).
    """
    out = _shared_familiarization(e, u)
    i = len(u.trials) - 1
    split = _variant(u) in ("barrier-kept", "barrier-added")
    if not out and split and without_inner_walls(e.test.layout) != without_inner_walls(u.test.layout):
        out.append(Problem(u.id, "test layouts differ in more than the barrier", i))
    elif not out and split and _variant(u) == "barrier-kept" and not (
            path_cost(u.test.path) < path_cost(e.test.path) - TOL and u.test.n_steps <= e.test.n_steps):
        out.append(Problem(u.id, "barrier-kept: the unexpected test path is not shorter than the expected one", i))
    elif not out and not split and e.test.layout != u.test.layout:
        out.append(Problem(u.id, "test layout differs from the expected episode's", i))
    elif not out and walk_excess(e.test.layout, e.test.path) > walk_excess(u.test.layout, u.test.path) - MARGIN + TOL:
        out.append(Problem(u.id, "the expected test path is not clearly more efficient than the unexpected one", i))
    return out


def _time_pair_rule(e: Episode, u: Episode) -> list[Problem]:
    """Shared familiarization; same home; unexpected lasts as long (steps and length), goal closer."""
    out = _shared_familiarization(e, u)
    if out:
        return out
    i, te, tu = len(u.trials) - 1, e.test, u.test
    home = te.agent.home
    if tu.agent.home != home:
        return [Problem(u.id, "test home differs from the expected episode's", i)]
    if tu.n_steps != te.n_steps or abs(path_cost(tu.path) - path_cost(te.path)) > TOL:
        return [Problem(u.id, f"unexpected test lasts {tu.n_steps} steps ({path_cost(tu.path):.3f}), "
                              f"expected {te.n_steps} ({path_cost(te.path):.3f})", i)]
    if not optimal_cost(tu.layout, tu.path[-1]) < optimal_cost(te.layout, te.path[-1]) - TOL:
        return [Problem(u.id, "unexpected goal is not placed closer than the expected one", i)]
    return []


def _irrational_pair_rule(e: Episode, u: Episode) -> list[Problem]:
    """Same test trial; familiarization = the same paths, with (unexpected) and without (expected) the barrier.
    ``barrier-elsewhere``: the same (home, object) layouts, the barrier (out of the way) only in the expected one.
    ``barrier-aside``: the same paths and (home, object) layouts, the same barrier in both, translated out of
    the way in the expected one."""
    if e.test != u.test:
        return [Problem(u.id, "test trial differs from the expected episode's", len(u.trials) - 1)]
    if _variant(e) == "barrier-elsewhere":
        for i, (a, b) in enumerate(zip(e.familiarization, u.familiarization)):
            if without_inner_walls(a.layout) != b.layout:
                return [Problem(u.id, "familiarization layouts differ in more than the expected one's barrier", i)]
        return []
    if _variant(e) == "barrier-aside":
        shape = shape_of(inner_walls(u.familiarization[0].layout))
        for i, (a, b) in enumerate(zip(e.familiarization, u.familiarization)):
            if a.path != b.path or without_inner_walls(a.layout) != without_inner_walls(b.layout):
                return [Problem(u.id, "barrier-aside: the familiarizations differ in more than where the barrier is", i)]
            if shape_of(inner_walls(a.layout)) != shape:
                return [Problem(u.id, "barrier-aside: the expected familiarization's barrier is not the unexpected "
                                      "one's, translated", i)]
        return []
    for i, (a, b) in enumerate(zip(e.familiarization, u.familiarization)):
        if a.path != b.path or a.layout != without_inner_walls(b.layout):
            return [Problem(u.id, "familiarization is not the expected one's with the barrier added", i)]
    return []


def shape_of(cells: frozenset[Cell]) -> frozenset[Cell]:
    """``cells`` translated so that their smallest x and y are 0 (two barriers of one shape compare equal)."""
    if not cells:
        return cells
    x0, y0 = min(x for x, _ in cells), min(y for _, y in cells)
    return frozenset((x - x0, y - y0) for x, y in cells)


EFFICIENCY_EXEMPT = ("efficiency", "tests the efficiency principle itself")
"""The shortcut audit lets the test path's own efficiency decide path and time control (issue 12)."""

register(TaskSpec("efficiency-path", "efficiency", "evaluation", _efficiency_path, rule=_efficiency_path_rule,
                  pair_rule=_path_pair_rule, bib_folder="efficiency_path",
                  expected="straight (shortest) path, obstacle gone",
                  unexpected="the familiar curved path, obstacle gone", order=40,
                  shortcut_exempt=(EFFICIENCY_EXEMPT,),
                  controls=Controls(variants=("", "moved-barrier", "catch", "barrier-kept", "barrier-added"), graded=True, boltzmann=True),
                  difficulty=lambda e, u: excess_cost(u.test)))
register(TaskSpec("efficiency-time", "efficiency", "evaluation", _efficiency_time, rule=_efficiency_time_rule,
                  pair_rule=_time_pair_rule, bib_folder="efficiency_time",
                  expected="straight path",
                  unexpected="curved path of equal duration, goal placed closer", order=50,
                  shortcut_exempt=(EFFICIENCY_EXEMPT,),
                  controls=Controls(variants=("", "catch", "new-goal"), graded=True, boltzmann=True),
                  difficulty=lambda e, u: excess_cost(u.test)))
register(TaskSpec("efficiency-irrational", "efficiency", "evaluation", _efficiency_irrational,
                  rule=_efficiency_irrational_rule, pair_rule=_irrational_pair_rule, bib_folder="efficiency_irrational",
                  expected="irrational familiarization, then the curved test path",
                  unexpected="rational familiarization, then the same curved test path", order=60,
                  shortcut_exempt=(
                      ("familiarization-barrier", "the familiarization's barrier is the condition's manipulation"),
                      ("novelty", "the familiarization's barrier (what the test looks unlike) is the condition's "
                                  "manipulation"),
                  ),
                  controls=Controls(variants=("", "barrier-elsewhere", "barrier-aside"), graded=True, boltzmann=True),
                  exempt_lapses=("barrier-aside",),
                  difficulty=lambda e, u: excess_cost(u.test)))
