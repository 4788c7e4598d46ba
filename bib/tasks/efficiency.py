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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from bib.episode import Episode, Problem, Trial
from bib.tasks.agents import IrrationalAgent, RationalAgent, rollout
from bib.tasks.common import (
    GRID,
    N_FAMILIARIZATION,
    empty_layout,
    make_episode,
    make_trial,
    place,
    sample_agent,
    sample_looks,
)
from bib.tasks.registry import LayoutRejected, TaskSpec, UnitInfo, register
from bib.world.grid import Cell, Layout, border_walls
from bib.world.keylock import is_optimal_path, optimal_cost
from bib.world.planning import TOL, path_cost

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


def _symmetry(rng: np.random.Generator, size: int = GRID) -> Callable[[Cell], Cell]:
    """A random symmetry of the square grid (transpose, then flips), as a map on cells."""
    transpose, fx, fy = (bool(b) for b in rng.integers(0, 2, size=3))

    def f(c: Cell) -> Cell:
        x, y = (c[1], c[0]) if transpose else c
        return (size - 1 - x if fx else x, size - 1 - y if fy else y)

    return f


def _pick(rng: np.random.Generator, options: range) -> int:
    """A uniform element of ``options`` (the draw ``rng.choice`` makes, without building an array)."""
    return options[int(rng.integers(len(options)))]


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
        self.f = _symmetry(rng)
        self.barrier = frozenset(self.f((x, y)) for x in range(bx, bx + bw) for y in self.rows)

    def sample(self, rng: np.random.Generator) -> tuple[Cell, Cell]:
        """A home left of the barrier and an object right of it, both within its rows."""
        home = (_pick(rng, self.left), _pick(rng, self.rows))
        obj = (_pick(rng, self.right), _pick(rng, self.rows))
        return self.f(home), self.f(obj)


def _efficiency_layouts(rng: np.random.Generator) -> tuple[list[Layout], Layout]:
    """Eight familiarization layouts with the barrier, plus a fresh one (the irrational test)."""
    scene = _Scene(rng)
    look = sample_looks(rng, 1)[0]
    agent = sample_agent(rng, "agent-0", (0, 0))
    layouts = []
    for _ in range(N_FAMILIARIZATION + 1):
        for _ in range(30):
            home, obj = scene.sample(rng)
            lay = empty_layout(walls=scene.barrier, objects=(place(look, "A", obj),),
                               agents=(replace(agent, home=home),))
            detour = optimal_cost(lay, obj) - optimal_cost(without_inner_walls(lay), obj)
            if np.isfinite(detour) and detour >= MIN_DETOUR:
                layouts.append(lay)
                break
        else:
            raise LayoutRejected("the barrier does not force a detour")
    return layouts[:-1], layouts[-1]


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
    layouts, _ = _efficiency_layouts(rng)
    fam = _rational_familiarization(rng, layouts)
    k = int(rng.integers(N_FAMILIARIZATION))
    lay = without_inner_walls(fam[k].layout)
    straight = make_trial(lay, rollout(RationalAgent(["A"], rng), lay)[0], "A", "test")
    curved = make_trial(lay, rollout(IrrationalAgent(fam[k].path), lay)[0], "A", "test")
    return _pair(unit, fam, straight, fam, curved)


def _efficiency_time(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
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
    layouts, fresh = _efficiency_layouts(rng)
    rational = _rational_familiarization(rng, layouts)
    irrational = _irrational_familiarization(rational)
    curved = _irrational_familiarization(_rational_familiarization(rng, [fresh]))[0]
    test = make_trial(curved.layout, curved.path, "A", "test")
    return _pair(unit, irrational, test, rational, test)


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
        elif not is_optimal_path(t.layout, t.path):
            out.append(Problem(ep.id, "familiarization path is not a shortest path around the barrier", i))
        elif is_optimal_path(without_inner_walls(t.layout), t.path):
            out.append(Problem(ep.id, "the barrier does not make the familiarization path curved", i))
    return out


def _check_irrational_familiarization(ep: Episode) -> list[Problem]:
    """No barrier; curved (not shortest) paths to A."""
    out = []
    for i, t in enumerate(ep.familiarization):
        if inner_walls(t.layout):
            out.append(Problem(ep.id, "irrational familiarization has a barrier", i))
        elif t.goal != "A":
            out.append(Problem(ep.id, f"goal is {t.goal!r}, expected 'A'", i))
        elif is_optimal_path(t.layout, t.path):
            out.append(Problem(ep.id, "irrational familiarization path is a shortest path", i))
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


def _efficiency_path_rule(ep: Episode) -> list[Problem]:
    """Rational familiarization; test = a familiarization layout without the barrier; expected
    shortest path, unexpected the familiar curved path (not shortest)."""
    out = _check_rational_familiarization(ep) + _check_open_test(ep)
    if out:
        return out
    i, t = len(ep.trials) - 1, ep.test
    if not _familiar_layout(ep, t.agent.home, t.layout.object("A").cell):
        return [Problem(ep.id, "test layout is not a familiarization layout without the barrier", i)]
    if ep.outcome == "expected" and not is_optimal_path(t.layout, t.path):
        return [Problem(ep.id, "expected test path is not a shortest path", i)]
    if ep.outcome == "unexpected":
        if is_optimal_path(t.layout, t.path):
            return [Problem(ep.id, "unexpected test path is a shortest path", i)]
        if t.path not in {f.path for f in ep.familiarization}:
            return [Problem(ep.id, "unexpected test path is not a familiar curved path", i)]
    return []


def _efficiency_time_rule(ep: Episode) -> list[Problem]:
    """Rational familiarization; expected = shortest path in a familiarization layout without the
    barrier; unexpected = a strict prefix of a familiar curved path, not shortest."""
    out = _check_rational_familiarization(ep) + _check_open_test(ep)
    if out:
        return out
    i, t = len(ep.trials) - 1, ep.test
    if ep.outcome == "expected":
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


def _efficiency_irrational_rule(ep: Episode) -> list[Problem]:
    """Expected: irrational familiarization; unexpected: rational; both: a curved test path."""
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
    """Shared familiarization and the same test layout."""
    out = _shared_familiarization(e, u)
    if not out and e.test.layout != u.test.layout:
        out.append(Problem(u.id, "test layout differs from the expected episode's", len(u.trials) - 1))
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
    """Same test trial; familiarization = the same paths, with (unexpected) and without (expected) the barrier."""
    if e.test != u.test:
        return [Problem(u.id, "test trial differs from the expected episode's", len(u.trials) - 1)]
    for i, (a, b) in enumerate(zip(e.familiarization, u.familiarization)):
        if a.path != b.path or a.layout != without_inner_walls(b.layout):
            return [Problem(u.id, "familiarization is not the expected one's with the barrier added", i)]
    return []


EFFICIENCY_EXEMPT = ("efficiency", "tests the efficiency principle itself")
"""The shortcut audit lets the test path's own efficiency decide path and time control (issue 12)."""

register(TaskSpec("efficiency-path", "efficiency", "evaluation", _efficiency_path, rule=_efficiency_path_rule,
                  pair_rule=_path_pair_rule, bib_folder="efficiency_path",
                  expected="straight (shortest) path, obstacle gone",
                  unexpected="the familiar curved path, obstacle gone", order=40,
                  shortcut_exempt=(EFFICIENCY_EXEMPT,)))
register(TaskSpec("efficiency-time", "efficiency", "evaluation", _efficiency_time, rule=_efficiency_time_rule,
                  pair_rule=_time_pair_rule, bib_folder="efficiency_time",
                  expected="straight path",
                  unexpected="curved path of equal duration, goal placed closer", order=50,
                  shortcut_exempt=(EFFICIENCY_EXEMPT,)))
register(TaskSpec("efficiency-irrational", "efficiency", "evaluation", _efficiency_irrational,
                  rule=_efficiency_irrational_rule, pair_rule=_irrational_pair_rule, bib_folder="efficiency_irrational",
                  expected="irrational familiarization, then the curved test path",
                  unexpected="rational familiarization, then the same curved test path", order=60,
                  shortcut_exempt=(
                      ("familiarization-barrier", "the familiarization's barrier is the condition's manipulation"),
                      ("novelty", "the familiarization's barrier (what the test looks unlike) is the condition's "
                                  "manipulation"),
                  )))
