"""Unobserved constraints (AGENT's scenario 3, Shu et al., ICML 2021, after Csibra et al. 2003) in bib's gridworld.

An occluder (:mod:`bib.world.occluder`), a grey rectangle of whole columns across the grid, hides what lies
under it in every familiarization trial: here a wall segment (the hidden obstacle) that stands between the
agent and its object. In each of the 8 trials the agent's home and the object are drawn anew on opposite sides
of the occluder, within the obstacle's rows, so the straight route is blocked, and the agent walks around the
obstacle. The episode file holds the occluder and NOT the obstacle: the cells under the occluder are free in the
file (the schema refuses anything there), so neither the file, the blind view nor the frames tell a model what
is hidden. The agent is drawn over the occluder and its whole path is in the file: the bend inside the occluded
stretch is the evidence.

Test (AGENT: "the same video as familiarization but revealing a portion of the scene that was previously
occluded"): the layout and walk of familiarization trial ``k``, with the occluder removed. Both outcomes show
the same walk, so every cue of the path (length, novelty, familiarity) ties; they differ in what the removed
occluder reveals:

- expected: the hidden obstacle, which explains the bend (the walk is the agent's efficient walk around it);
- unexpected, by variant (``""`` is AGENT's type 3.2, the default):

  - ``""``: an obstacle of the SAME shape elsewhere under the occluder, off every walk (it could have been
    there), that does not explain the bend. Both outcomes reveal as many wall cells.
  - ``empty``: nothing (AGENT's type 3.1). The unexpected outcome shows fewer walls.
  - ``larger``: a longer obstacle (one cell more) elsewhere under the occluder, off every walk, that does not
    explain the bend. The unexpected outcome shows more walls; half ``empty``, half ``larger`` puts "more walls
    revealed = expected" at chance.

With a token ``bends-K`` (K of 1, 2 or 4; bib-ctrl draws 2 and 1, each half plain, half ``hug``) only K familiarization
trials, at positions drawn from the seed, are drawn across the obstacle (their route bends by :data:`MIN_BEND` or
more, the trial the test shows among them); the other trials' home and object are drawn anywhere on their sides
with a route the hidden obstacle does not lengthen (they still walk in the true layout). Fewer bends carry less
evidence for the obstacle: the harder pairs of the family (:func:`evidence`).

With the token ``touch`` (opt-in, with ``bends-K`` and the same-shape reveal: ``at-goal+bends-2+touch``) the
unexpected reveal touches as many familiarization path cells as the hidden obstacle (:func:`path_adjacency`: cells
within one king move), so "the wall the walks hug is the expected one" ties on every pair; the non-bending trials
are drawn anew (:data:`SAMPLES`, :data:`PASSES`) until some reveal does, and the walks must favour the hidden obstacle
(:func:`evidence` above 0 under the Boltzmann agent). With all 8 walks bending no reveal can (the walks hug the
hidden obstacle on 2-8 cells more than any other), so the token needs ``bends-K``. It ties one count of the cue
only: counted per walk, within two king moves or by the walks' turns, the walks still hug the hidden obstacle more
(90%, 78% and 82% of 400 pairs). The token ``hug`` (bib-ctrl's design: ``at-goal+bends-2+hug``,
``at-goal+bends-1+hug``, mixed half and half with ``at-goal+bends-2`` and ``at-goal+bends-1``) makes catch pairs
instead: the walks hug the unexpected reveal more, every way :func:`hugging` counts, so each count is wrong on them
and right on their plain partners, and near 50% over the mix.

With the token ``at-goal`` (``at-goal``, ``empty+at-goal``, ``larger+at-goal``; bib-ctrl uses ``at-goal``) the
test shows the agent already on its object (AGENT: the occluder falls after the agent reaches its goal): its
home moved there, one stay step, no revealed wall next to it. There is then no walk to read, and only an
observer that inferred the obstacle from the familiarization's bends tells the outcomes apart; under the walk
design the walk's efficiency in the revealed layout decides a pair alone (the audit exempts it, as in
efficiency path control).

Difficulty (cells): how much more the shown familiarization walk costs over optimal with the unexpected reveal
in place than with the hidden obstacle, i.e. the part of the bend the hidden obstacle explains and the
unexpected reveal does not.

Evidence (nats, :func:`evidence`; the manifest's ``evidence`` column, on which ``bib evaluate`` bins): the log
likelihood ratio of the eight familiarization walks, expected reveal against unexpected, under the generator's
Boltzmann agent with the unit's ``beta``: how strongly the walks imply the hidden obstacle over the other reveal.
It grows with the number of bends, their size and ``beta``.

No twins: the unexpected reveal is chosen off every walk of the familiarization, so none can swap the labels;
the controls are the equalized reveals (docs/tasks.md). The background task ``unobserved-constraints-background`` (expected outcomes only,
noise-free planner) hides an obstacle in half its episodes and nothing in the other half (the walks then go
straight through the occluded columns), and its test reveals the truth.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache

import numpy as np

from bib.episode import Episode, Problem, Trial
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
from bib.tasks.difficulty import walk_log_prob
from bib.tasks.efficiency import grid_symmetry, inner_walls, legal_path, shape_of, walk_excess
from bib.tasks.options import LEGACY, Controls, in_bin
from bib.tasks.registry import LayoutRejected, TaskSpec, UnitInfo, register
from bib.world.dynamics import action_between, cells_needed
from bib.world.grid import Cell, Layout, border_walls
from bib.world.occluder import Occluder
from bib.world.planning import TOL, cost_between, distance_list, path_cost

CONDITION = "unobserved-constraints"
BACKGROUND = "unobserved-constraints-background"
REVEALS = ("", "empty", "larger")
"""What the unexpected outcome reveals (the first token of a variant)."""
AT_GOAL = "at-goal"
"""The variant token of a test that shows the agent already at its object (one stay step) while the occluder is
gone: no walk to read, so the familiarization's walks are the only evidence (AGENT: the occluder falls after
the agent reaches the goal)."""
BENDS = (1, 2, 4)
"""The numbers of bending familiarization trials a ``bends-K`` token may ask for (the default: all 8)."""
TOUCH = "touch"
"""The variant token of the path-adjacency control (opt-in, with ``bends-K`` only): the unexpected reveal touches as
many familiarization path cells as the hidden obstacle (:func:`path_adjacency`), so "the revealed wall the walks hug
is the expected one" ties on every pair. The non-bending trials are drawn anew (:data:`SAMPLES`, :data:`PASSES`) until
some reveal does. With the same-shape reveal only: not with ``empty`` (nothing revealed touches no cell) nor
``larger`` (3 of 4 units found no pair), nor with all 8 walks bending (no trial to redraw: the hidden obstacle's
walks hug it on 2-8 cells more than any other reveal)."""
_BASE = (*REVEALS, *(f"{r}+{AT_GOAL}" if r else AT_GOAL for r in REVEALS))
_PLAIN = (*_BASE, *(f"{v}+bends-{k}" if v else f"bends-{k}" for v in _BASE for k in BENDS))
HUG = "hug"
"""The variant token of the path-adjacency catch pairs (bib-ctrl's design, with ``bends-2`` or ``bends-1`` and the
same-shape reveal): the walks hug the unexpected reveal MORE than the hidden obstacle, every way :func:`hugging` counts
it (distinct path cells within one and within two king moves, each walk's cells within one summed, turns within one),
so every such reading of "the wall the walks hug is the expected one" is wrong on these pairs. Mixed half and half with
the same designs without it (where the walks hug the hidden obstacle), it puts those readings near 50%. The
non-bending trials are drawn as under :data:`TOUCH`. Not with ``bends-4``: four bending walks hug the hidden obstacle
so much that a unit took 30 draws on average (up to 146 of the 200 :func:`bib.tasks.make_unit` allows)."""
_CONTROLLED = [v for v in _PLAIN if "bends-" in v and v.split("+")[0] not in REVEALS[1:]]
VARIANTS = (*_PLAIN, *(f"{v}+{TOUCH}" for v in _CONTROLLED),
            *(f"{v}+{HUG}" for v in _CONTROLLED if "bends-4" not in v.split("+")))
SAMPLES, PASSES = 6, 3
"""Under :data:`TOUCH`: each non-bending trial is drawn anew ``SAMPLES`` times a round, for ``PASSES`` rounds over them,
keeping the draws that bring the cue nearer a tie (:func:`_touching_options`), before the scene is given up.
Under :data:`HUG` a draw whose route passes no target is not walked."""
OCCLUDED_TASKS = (CONDITION, BACKGROUND)
"""The tasks whose familiarization shows an occluder (BIB JSON cannot hold one: their export is refused)."""
MIN_BEND = 0.4
"""The hidden obstacle lengthens every familiarization walk's shortest route by at least this much (cells):
the bend is evident (the walk costs this much over optimal in the layout as seen)."""
BENT, STRAIGHT = 1, 2
"""Classes of a route in :meth:`_Geometry.bends`: the hidden obstacle lengthens it by :data:`MIN_BEND` or more / not
at all."""
MARGIN = 0.05
"""The walk costs at least this much more over optimal in the unexpected test layout than in the expected one."""
MAX_EXPLAINED = 3.0
"""Explained: every familiarization walk costs at most this much over optimal with the revealed walls in place
(the Boltzmann stimulus agent's own bound, :class:`bib.tasks.options.AgentModel`'s ``max_excess``)."""
SPREAD = 2
"""Objects are drawn within the hidden segment's rows widened by this many rows on each side (homes within its
rows), so that a test object need not stand in line with the segment (:func:`placement`)."""
TRIES = 30
"""Layout draws per unit before it is rejected (each rejected draw is a fresh scene)."""


# ---------------------------------------------------------------- geometry


class _Scene:
    """Before the symmetry: the occluder is columns ``x0..x1`` of every interior row, the hidden obstacle a
    vertical segment of ``length`` cells in one of those columns, homes left of the occluder and objects right
    of it, both within the obstacle's rows. The cells a scene's draws decide (occluder, hidden segment, the
    segments under the occluder and how they sit to each object) are those of its :class:`_Geometry`, shared by
    every scene of the same draws."""

    def __init__(self, rng: np.random.Generator) -> None:
        x0 = int(rng.integers(3, 5))
        x1 = x0 + int(rng.integers(1, 3))
        self.columns = range(x0, x1 + 1)
        self.length = int(rng.integers(3, 6))
        self.column = int(rng.integers(x0, x1 + 1))
        y0 = int(rng.integers(1, GRID - self.length))
        self.rows = range(y0, y0 + self.length)
        self.reach = range(max(1, y0 - SPREAD), min(GRID - 2, self.rows[-1] + SPREAD) + 1)
        self.f = grid_symmetry(rng)
        self.symmetry = (self.f((0, 0)), self.f((1, 0)))  # the images of two cells fix the symmetry
        key = (x0, x1, self.length, self.column, y0, self.symmetry)
        geometry = _GEOMETRIES.get(key)
        if geometry is None:
            geometry = _GEOMETRIES[key] = _Geometry(self)
        self.geometry = geometry
        self.occluder, self.hidden = geometry.occluder, geometry.hidden

    def sample(self, rng: np.random.Generator) -> tuple[Cell, Cell]:
        home = (int(rng.integers(1, self.columns[0])), pick(rng, self.rows))
        obj = (int(rng.integers(self.columns[-1] + 1, GRID - 1)), pick(rng, self.reach))
        return self.f(home), self.f(obj)

    def sample_free(self, rng: np.random.Generator) -> tuple[Cell, Cell]:
        """A home left of the occluder and an object right of it, in any rows (after the symmetry)."""
        home = (int(rng.integers(1, self.columns[0])), int(rng.integers(1, GRID - 1)))
        obj = (int(rng.integers(self.columns[-1] + 1, GRID - 1)), int(rng.integers(1, GRID - 1)))
        return self.f(home), self.f(obj)


class _Geometry:
    """What a scene's draws decide, computed once per distinct draw (1,200 exist) and kept in
    :data:`_GEOMETRIES`: the occluder, the hidden segment, the segments under the occluder (in the order the
    unexpected reveal is drawn from) and, per object cell, whether a reveal can sit like the hidden segment."""

    def __init__(self, scene: _Scene) -> None:
        f = scene.f
        self.f, self.columns, self.length, self.symmetry = f, scene.columns, scene.length, scene.symmetry
        self.occluder = _box(frozenset(f((x, y)) for x in scene.columns for y in range(1, GRID - 1)))
        self.hidden = frozenset(f((scene.column, y)) for y in scene.rows)
        self._apart: dict[int, list[frozenset[Cell]]] = {}
        self._fits: dict[tuple[str, bool, Cell], bool] = {}

    def segments(self, length: int) -> list[frozenset[Cell]]:
        """Every vertical segment of ``length`` cells under the occluder (after the symmetry); shared by the
        geometries of one occluder and symmetry (:data:`_SEGMENTS`)."""
        key = (self.columns, self.symmetry, length)
        segs = _SEGMENTS.get(key)
        if segs is None:
            f = self.f
            segs = _SEGMENTS[key] = [frozenset(f((x, y)) for y in range(y0, y0 + length))
                                     for x in self.columns for y0 in range(1, GRID - length)]
        return segs

    def apart(self, length: int) -> list[frozenset[Cell]]:
        """The segments of ``length`` cells under the occluder that share no cell with the hidden one, in order."""
        segs = self._apart.get(length)
        if segs is None:
            segs = self._apart[length] = [s for s in self.segments(length) if s != self.hidden and not (s & self.hidden)]
        return segs

    def fits(self, kind: str, goal: bool, obj: Cell) -> bool:
        """Whether a reveal of ``kind`` can sit like the hidden segment relative to ``obj`` (:func:`placement`; at
        the goal (``goal``), not next to it): the test of :func:`_viable` for one object cell."""
        key = (kind, goal, obj)
        found = self._fits.get(key)
        if found is None:
            if kind == "empty":
                found = True
            else:
                here = placement(self.hidden, obj)
                found = any(placement(s, obj) == here and not (goal and _near(obj, s))
                            for s in self.apart(self.length + (1 if kind == "larger" else 0)))
            self._fits[key] = found
        return found


@lru_cache(maxsize=8192)
def _bends(hidden: frozenset[Cell], obj: Cell) -> bytes:
    """Per home cell (flat, ``y * GRID + x``): :data:`BENT` when ``hidden`` lengthens the shortest route from there to
    ``obj`` by :data:`MIN_BEND` or more, :data:`STRAIGHT` when it does not lengthen it (within
    :data:`bib.world.planning.TOL`), else 0 (less, or a cost is infinite): the difference of the two cached cost
    fields (``optimal_cost`` of the true layout minus that of the layout as seen) for every home at once, kept as
    bytes (120 hidden segments exist, 64 objects: under 2 MB however long the run)."""
    border = border_walls(GRID, GRID)
    with np.errstate(invalid="ignore"):
        bend = np.array(distance_list(GRID, GRID, 8, _walled(hidden), obj)) - np.array(distance_list(GRID, GRID, 8, border, obj))
        ok = np.isfinite(bend)
        return np.where(ok & (bend >= MIN_BEND), BENT, np.where(ok & (bend <= TOL), STRAIGHT, 0)).astype(np.uint8).tobytes()


@lru_cache(maxsize=256)
def _walled(hidden: frozenset[Cell]) -> frozenset[Cell]:
    """The border and ``hidden``: one set object per hidden segment (120 exist), so that the cached fields keyed on it
    share their key instead of each holding a copy (a 41-cell set is about 2 kB)."""
    return border_walls(GRID, GRID) | hidden


_GEOMETRIES: dict[tuple, _Geometry] = {}
"""The :class:`_Geometry` of every scene drawn so far in this process, by its draws (at most 1,200)."""
_SEGMENTS: dict[tuple, list[frozenset[Cell]]] = {}
"""The segments under an occluder, by (its columns before the symmetry, the symmetry, length): at most 128 lists."""


def _box(cells: frozenset[Cell]) -> Occluder:
    xs, ys = [c[0] for c in cells], [c[1] for c in cells]
    return Occluder(min(xs), min(ys), max(xs), max(ys))


def with_walls(layout: Layout, cells: frozenset[Cell]) -> Layout:
    """``layout`` with its inner walls replaced by ``cells``."""
    return replace(layout, walls=border_walls(layout.width, layout.height) | cells)


# ---------------------------------------------------------------- generators


def _familiarization(rng: np.random.Generator, walker: Walker, scene: _Scene, hidden: frozenset[Cell],
                     bending: frozenset[int] | None = None,
                     viable: Callable[[dict[int, Cell]], bool] | None = None) -> list[Trial] | None:
    """Eight trials: fresh (home, object) draws whose shortest route ``hidden`` lengthens by :data:`MIN_BEND` or
    more (any draw when nothing is hidden), the agent's walk in the true layout, shown with the occluder and
    without what it hides. With ``bending``, only the trials of those indices are drawn so; the others anywhere on
    their sides with a route ``hidden`` does not lengthen; the bending trials' cells are then drawn first and None is
    returned, drawing nothing more, when ``viable({index: object cell})`` is false (a cheap test that the draw can
    give a pair), and the walks come after every trial's cells."""
    look = sample_looks(rng, 1)[0]
    agent = sample_agent(rng, "agent-0", (0, 0))
    border = border_walls(GRID, GRID)

    def trial(home: Cell, obj: Cell) -> Trial:
        seen = empty_layout(objects=(place(look, "A", obj),), agents=(replace(agent, home=home),))
        return _walked(walker, scene, hidden, seen)

    drawn: dict[int, tuple[Cell, Cell]] = {}
    trials = []
    order = range(N_FAMILIARIZATION) if bending is None else [*sorted(bending),
                                                               *(i for i in range(N_FAMILIARIZATION) if i not in bending)]
    for i in order:
        bends = bending is None or i in bending
        if bending is not None and i not in bending and len(drawn) == len(bending) and viable is not None \
                and not viable({k: obj for k, (_, obj) in drawn.items()}):
            return None
        cells = _route(rng, scene, hidden, bends, border)
        if cells is None:
            raise LayoutRejected("the hidden obstacle does not force a bend")
        home, obj = cells
        if bending is None:  # the design of every set before bends-K: walk as each trial is drawn
            trials.append(trial(home, obj))
        else:
            drawn[i] = (home, obj)
    if bending is None:
        return trials
    if len(bending) == N_FAMILIARIZATION and viable is not None \
            and not viable({k: obj for k, (_, obj) in drawn.items()}):
        return None
    return [trial(*drawn[i]) for i in range(N_FAMILIARIZATION)]


def _walked(walker: Walker, scene: _Scene, hidden: frozenset[Cell], seen: Layout) -> Trial:
    """A familiarization trial: the agent's walk in ``seen`` with ``hidden`` in place, shown with the occluder."""
    return make_trial(seen, _walk(walker, hidden, seen), "A", occluder=scene.occluder)


def _walk(walker: Walker, hidden: frozenset[Cell], seen: Layout) -> tuple[Cell, ...]:
    """The agent's walk to its object in ``seen`` with ``hidden`` in place."""
    true = replace(seen, walls=_walled(hidden))  # with_walls(seen, hidden), its walls one shared set
    return tuple(tuple(c) for c in walker.walk(true, "A"))  # type: ignore[misc]


def _route(rng: np.random.Generator, scene: _Scene, hidden: frozenset[Cell], bends: bool,
           border: frozenset[Cell]) -> tuple[Cell, Cell] | None:
    """A trial's (home, object), up to :data:`TRIES` draws: one whose shortest route ``hidden`` lengthens by
    :data:`MIN_BEND` or more (``bends``) or not at all (any reachable one when nothing is hidden); None when none."""
    for _ in range(TRIES):
        home, obj = scene.sample(rng) if bends else scene.sample_free(rng)
        if hidden:  # the route's bend, once per (hidden segment, object) for every home
            if _bends(hidden, obj)[home[1] * GRID + home[0]] == (BENT if bends else STRAIGHT):
                return home, obj
        elif np.isfinite(cost_between(GRID, GRID, 8, border, home, obj)):
            return home, obj
    return None


_SKIPPED = object()
"""What :func:`_redrawn` returns for a draw its ``keep`` turned down before the walk."""


def _redrawn(rng: np.random.Generator, walker: Walker, scene: _Scene, trial: Trial,
             keep: Callable[[Cell, Cell], bool] | None = None) -> tuple[Layout, tuple[Cell, ...]] | object | None:
    """A non-bending familiarization trial drawn anew (:func:`_route`; the same look and agent), for :data:`TOUCH` or
    :data:`HUG`: its layout as seen and its walk (the trial is built only for a draw that is kept); None when no route
    can be drawn, :data:`_SKIPPED` when ``keep(home, object)`` turns the draw down before its walk."""
    cells = _route(rng, scene, scene.hidden, False, border_walls(GRID, GRID))
    if cells is None:
        return None
    if keep is not None and not keep(*cells):
        return _SKIPPED
    lay = trial.layout
    seen = replace(lay, objects=(replace(lay.objects[0], cell=cells[1]),), agents=(replace(lay.agent, home=cells[0]),))
    return seen, _walk(walker, scene.hidden, seen)


def _walk_cells(path: tuple[Cell, ...]) -> tuple[frozenset[Cell], frozenset[Cell], tuple[Cell, ...]]:
    """What :func:`_gaps` reads of one walk: the cells it crosses (:func:`_crossed`), its cells and its turns."""
    crossed: set[Cell] = set()
    for a, b in zip(path, path[1:]):
        crossed.update(cells_needed(a, action_between(a, b)))  # type: ignore[arg-type]
    return frozenset(crossed), frozenset(path), _turns(path)


def _targets(scene: _Scene, variant: str, fam: list[Trial], bending: frozenset[int],
             bin_: tuple[float, float] | None) -> list[frozenset[Cell]]:
    """Under :data:`TOUCH` or :data:`HUG`: the reveals of the variant (:func:`_alternatives`) off the bending walks that could make a
    pair with some bending trial shown (sitting alike relative to its object, not next to it at the goal, the part of
    the bend left unexplained at least :data:`MARGIN` and in ``bin_``): what :func:`_draft` accepts, before the
    non-bending trials are drawn to tie the cue."""
    goal = at_goal(variant)
    out = []
    for o in _alternatives(scene, variant, _crossed([fam[i] for i in sorted(bending)])):
        for k in sorted(bending):
            shown = fam[k]
            obj = shown.layout.objects[0].cell
            if goal and (_near(obj, scene.hidden) or _near(obj, o)):
                continue
            if placement(o, obj) != placement(scene.hidden, obj):
                continue
            d = _optimal(shown, scene.hidden) - _optimal(shown, o)  # cost - optimal(o) - (cost - optimal(hidden))
            if d >= MARGIN and in_bin(d, bin_):
                out.append(o)
                break
    return out


def _gaps(scene: _Scene, walks: list[tuple[frozenset[Cell], frozenset[Cell], tuple[Cell, ...]]],
          targets: list[frozenset[Cell]], hug: bool = False) -> list[int] | None:
    """Per target reveal, how far the familiarization (``walks``: each trial's :func:`_crossed`, path cells and turns)
    is from a pair with it: ``GRID * GRID`` per walk that crosses it plus, under :data:`TOUCH`, how many more path cells
    touch the hidden obstacle than it (:func:`touching`, absolute), under :data:`HUG` how far each hugging count
    (:func:`hugging`) is from exceeding the hidden obstacle's; so 0 when it is legal and meets the control. None when a
    walk crosses the hidden obstacle."""
    if any(not crossed.isdisjoint(scene.hidden) for crossed, _, _ in walks):
        return None
    cells = frozenset().union(*(c for _, c, _ in walks))
    crossings = [GRID * GRID * sum(1 for crossed, _, _ in walks if not crossed.isdisjoint(o)) for o in targets]
    if not hug:
        hugged = touching(cells, scene.hidden)
        return [n + abs(hugged - touching(cells, o)) for n, o in zip(crossings, targets)]
    mine = _hugging(cells, walks, scene.hidden)
    return [n + sum(max(0, h - x + 1) for h, x in zip(mine, _hugging(cells, walks, o))) for n, o in zip(crossings, targets)]


def _hugging(cells: frozenset[Cell], walks: list[tuple[frozenset[Cell], frozenset[Cell], tuple[Cell, ...]]],
             walls: frozenset[Cell]) -> tuple[int, int, int, int]:
    """The four counts of :func:`hugging` for ``walls``, from the walks' :func:`_walk_cells` and their union ``cells``."""
    return (touching(cells, walls), sum(touching(c, walls) for _, c, _ in walks), touching(cells, walls, 2),
            sum(1 for _, _, turns in walks for t in turns if _near(t, walls)))


def _turns(path: list[Cell] | tuple[Cell, ...]) -> tuple[Cell, ...]:
    """The cells where a walk changes direction (one per change)."""
    p = [tuple(c) for c in path]
    return tuple(b for a, b, c in zip(p, p[1:], p[2:]) if (b[0] - a[0], b[1] - a[1]) != (c[0] - b[0], c[1] - b[1]))  # type: ignore[misc]


def hugging(ep: Episode) -> tuple[int, int, int, int]:
    """How much the familiarization walks hug the walls the episode's test reveals, four ways: distinct path cells within
    one king move (:func:`path_adjacency`), each walk's such cells summed over the walks, distinct path cells within two
    king moves, and the walks' turns within one king move. :data:`HUG` makes each larger for the unexpected reveal."""
    revealed = revealed_walls(ep)
    if not revealed:  # every episode without an occluder (the audit asks every episode of a set)
        return (0, 0, 0, 0)
    walks = [_walk_cells(t.path) for t in ep.familiarization]
    return _hugging(frozenset().union(*(c for _, c, _ in walks)), walks, revealed)


def _passing(targets: list[frozenset[Cell]]) -> Callable[[Cell, Cell], bool]:
    """Under :data:`HUG`: whether a route's box (its home and object's rectangle, one cell wider) meets the cells next to
    some target: a walk that stays in it (the agent walks near-optimally) could hug one only then."""
    zones = [_zone(o, 1) for o in targets]

    def passing(home: Cell, obj: Cell) -> bool:
        x0, x1 = min(home[0], obj[0]) - 1, max(home[0], obj[0]) + 1
        y0, y1 = min(home[1], obj[1]) - 1, max(home[1], obj[1]) + 1
        return any(x0 <= x <= x1 and y0 <= y <= y1 for zone in zones for x, y in zone)

    return passing


def _touching_options(rng: np.random.Generator, walker: Walker, scene: _Scene, variant: str, fam: list[Trial],
                      bending: frozenset[int], bin_: tuple[float, float] | None) -> tuple[list[Trial], list[frozenset[Cell]]]:
    """Under :data:`TOUCH` or :data:`HUG`: the familiarization, its non-bending trials drawn anew, and the reveals of the
    variant (:func:`_targets`) that meet the control (touched as much as the hidden obstacle / hugged more). A coordinate search: each
    non-bending trial in turn is drawn anew :data:`SAMPLES` times, and a draw is kept when it brings the familiarization
    nearer a pair with some target (:func:`_gaps`), for :data:`PASSES` rounds or until one ties (no reveal when none
    does)."""
    targets = _targets(scene, variant, fam, bending, bin_)
    if not targets:
        return fam, []
    hug = adjacency_control(variant) == HUG
    passing = _passing(targets) if hug else None
    walks = [_walk_cells(t.path) for t in fam]
    gaps = _gaps(scene, walks, targets, hug)
    if gaps is None:
        return fam, []
    for _ in range(PASSES):
        for i in range(N_FAMILIARIZATION):
            if i in bending or min(gaps) == 0:
                continue
            for _ in range(SAMPLES):
                drawn = _redrawn(rng, walker, scene, fam[i], passing)
                if drawn is None:
                    return fam, []
                if drawn is _SKIPPED:
                    continue  # its route passes no target it could help (not walked)
                seen, path = drawn  # type: ignore[misc]
                trying = [*walks[:i], _walk_cells(path), *walks[i + 1:]]
                tried = _gaps(scene, trying, targets, hug)
                if tried is not None and min(tried) < min(gaps):
                    trial = make_trial(seen, path, "A", occluder=scene.occluder)
                    fam, walks, gaps = [*fam[:i], trial, *fam[i + 1:]], trying, tried
                    if min(gaps) == 0:
                        break
    return fam, [o for o, g in zip(targets, gaps) if g == 0]


def _viable(scene: _Scene, variant: str, bending: frozenset[int]) -> Callable[[dict[int, Cell]], bool]:
    """Whether some bending trial's object could be the test's (at the goal: one trial per object cell, no hidden wall
    next to it) with some reveal of the variant sitting like the hidden segment: the conditions of :func:`_draft` that
    need no walk (:meth:`_Geometry.fits`)."""
    kind, goal = reveal_kind(variant), at_goal(variant)

    def viable(objs: dict[int, Cell]) -> bool:
        cells = list(objs.values())
        for k in bending:
            obj = objs[k]
            if goal and (_near(obj, scene.hidden) or cells.count(obj) > 1):
                continue
            if scene.geometry.fits(kind, goal, obj):
                return True
        return False

    return viable


def reveal_kind(variant: str) -> str:
    """What a variant's unexpected outcome reveals (:data:`REVEALS`)."""
    first = variant.split("+")[0]
    return first if first in REVEALS else ""  # at-goal, bends-K or touch first: the default reveal


def n_bends(variant: str) -> int:
    """How many familiarization trials a variant draws across the hidden obstacle (its ``bends-K`` token, else all)."""
    ks = [int(t.split("-")[1]) for t in variant.split("+") if t.startswith("bends-")]
    return ks[0] if ks else N_FAMILIARIZATION


def adjacency_control(variant: str) -> str:
    """The control of the path-adjacency cue a variant asks for: :data:`TOUCH` (the unexpected reveal touches as many
    path cells as the hidden obstacle), :data:`HUG` (it is hugged more), or ``""`` (none)."""
    return next((t for t in variant.split("+") if t in (TOUCH, HUG)), "")


def touching(cells: frozenset[Cell], walls: frozenset[Cell], reach: int = 1) -> int:
    """How many of ``cells`` (familiarization path cells) lie within ``reach`` king moves of a cell of ``walls``."""
    return len(cells & _zone(walls, reach))


@lru_cache(maxsize=4096)
def _zone(walls: frozenset[Cell], reach: int) -> frozenset[Cell]:
    """Every cell within ``reach`` king moves of a cell of ``walls`` (the reveals are a few hundred segments)."""
    return frozenset((x + dx, y + dy) for x, y in walls for dx in range(-reach, reach + 1) for dy in range(-reach, reach + 1))


def revealed_walls(ep: Episode) -> frozenset[Cell]:
    """The walls an episode's test reveals: test walls where a familiarization occluder stood."""
    hidden = frozenset().union(*(t.occluder.cells for t in ep.familiarization if t.occluder is not None))
    return frozenset(ep.test.layout.walls) & hidden


def path_adjacency(ep: Episode) -> int:
    """The path-adjacency cue of an episode: how many distinct familiarization path cells lie within one king move of
    a wall its test reveals (a test wall where a familiarization occluder stood; 0 when there is none, as in every
    episode without an occluder). The hidden obstacle is where the walks bend, so they hug it; :data:`TOUCH` makes
    the unexpected reveal touch as many. The first count of :func:`hugging` (the audit's ``path-hugs-reveal``), read by
    the ``touch`` pair rule."""
    return hugging(ep)[0]


def at_goal(variant: str) -> bool:
    """Whether a variant's test shows the agent at its object (:data:`AT_GOAL`) instead of its walk."""
    return AT_GOAL in variant.split("+")


@lru_cache(maxsize=65536)
def placement(walls: frozenset[Cell], obj: Cell) -> tuple[bool, int]:
    """How a revealed segment sits relative to the object, as a picture shows it: whether its span along its own
    axis covers the object's row (or column), and its king-move distance to the object. Both reveals of a pair
    sit alike (:func:`_draft`), so neither "the wall in line with the object" nor "the wall nearer the object"
    tells the expected one (the hidden segment always spans the rows of the homes and objects it stood between).
    Cached: the generator asks it of the same few hundred segments over and over."""
    if not walls:
        return (False, 0)
    xs, ys = {c[0] for c in walls}, {c[1] for c in walls}
    spans = (min(ys) <= obj[1] <= max(ys)) if len(xs) == 1 else (min(xs) <= obj[0] <= max(xs))
    return spans, min(max(abs(c[0] - obj[0]), abs(c[1] - obj[1])) for c in walls)


def _near(cell: Cell, cells: frozenset[Cell]) -> bool:
    """Whether ``cell`` lies within one king move of a cell of ``cells`` (:func:`_zone`)."""
    return cell in _zone(cells, 1)


def _test(shown: Trial, walls: frozenset[Cell], variant: str) -> Trial:
    """The test trial: ``shown``'s layout with ``walls`` revealed, and its walk (or, at goal, one stay step on the
    object, the agent's home moved there)."""
    if not at_goal(variant):
        return make_trial(with_walls(shown.layout, walls), shown.path, "A", "test")
    obj = shown.layout.objects[0].cell
    lay = replace(with_walls(shown.layout, walls), agents=(replace(shown.layout.agent, home=obj),))
    return make_trial(lay, [obj, obj], "A", "test")


def _alternatives(scene: _Scene, variant: str, crossed: frozenset[Cell]) -> list[frozenset[Cell]]:
    """What the unexpected outcome may reveal: nothing (``empty``), or segments of the hidden obstacle's length
    (``""``) or one cell longer (``larger``) under the occluder, off the hidden obstacle and legal for every walk
    (clear of ``crossed``, :func:`_crossed` of the familiarization)."""
    kind = reveal_kind(variant)
    if kind == "empty":
        return [frozenset()]
    return [s for s in scene.geometry.apart(scene.length + (1 if kind == "larger" else 0)) if crossed.isdisjoint(s)]


def _crossed(fam: list[Trial]) -> frozenset[Cell]:
    """The cells the walks of ``fam`` step onto or pass diagonally beside: walls added to a familiarization layout
    (border only) keep every walk legal (:func:`bib.tasks.efficiency.legal_path`) exactly when they avoid these
    cells, since each walk is legal in its own layout (:func:`bib.tasks.common.make_trial` refuses it otherwise)."""
    return frozenset().union(*(_walk_cells(t.path)[0] for t in fam))


def _draft(rng: np.random.Generator, unit: UnitInfo, walker: Walker) -> PairDraft:
    opts = unit.options
    variant = opts.variant(unit.design)
    bin_ = opts.bin(unit.design)
    k_bends = n_bends(variant)
    for _ in range(TRIES * N_FAMILIARIZATION // k_bends):  # as many candidate shown trials as the all-8 design
        scene = _Scene(rng)
        bending = None if k_bends == N_FAMILIARIZATION else frozenset(
            int(i) for i in rng.choice(N_FAMILIARIZATION, k_bends, replace=False))
        fam = _familiarization(rng, walker, scene, scene.hidden, bending,
                               None if bending is None else _viable(scene, variant, bending))
        if fam is None:
            continue
        crossed = _crossed(fam)
        if not crossed.isdisjoint(scene.hidden):
            continue  # some walk is illegal with the hidden obstacle in place
        if adjacency_control(variant) and bending is not None:  # only reveals that meet the control
            fam, options = _touching_options(rng, walker, scene, variant, fam, bending, bin_)
        else:
            options = _alternatives(scene, variant, crossed)
        for k in rng.permutation(N_FAMILIARIZATION):
            if bending is not None and int(k) not in bending:
                continue  # the test shows a trial that bends
            shown = fam[int(k)]
            obj = shown.layout.objects[0].cell
            if at_goal(variant) and (_near(obj, scene.hidden) or [t.layout.objects[0].cell for t in fam].count(obj) > 1):
                continue  # at goal: no revealed wall next to the agent (its legal moves tie) and one trial per object cell
            cost = path_cost(shown.path)
            e_excess = cost - _optimal(shown, scene.hidden)  # walk_excess(with_walls(shown.layout, hidden), path)
            for j in rng.permutation(len(options)):
                if at_goal(variant) and _near(obj, options[int(j)]):
                    continue
                if options[int(j)] and placement(options[int(j)], obj) != placement(scene.hidden, obj):
                    continue
                d = cost - _optimal(shown, options[int(j)]) - e_excess
                if d >= MARGIN and in_bin(d, bin_):
                    if (adjacency_control(variant) or at_goal(variant)) and walker.beta is not None \
                            and walks_evidence(fam, scene.hidden, options[int(j)], walker.beta) <= 0:
                        continue  # walks that favour the other reveal: at the goal they are all the evidence there is
                    return PairDraft(fam, _test(shown, scene.hidden, variant), fam, _test(shown, options[int(j)], variant),
                                     variant, difficulty=d)
    raise LayoutRejected(f"no {variant or 'same-shape'} reveal in the difficulty bin {bin_}")


def _optimal(trial: Trial, walls: frozenset[Cell]) -> float:
    """The optimal cost of ``trial``'s route (its walk's ends) with ``walls`` as its inner walls: what
    :func:`bib.tasks.efficiency.walk_excess` subtracts for ``with_walls(trial.layout, walls)``, from the cached field
    without building that layout (a familiarization layout has no key, lock or barrier)."""
    lay = trial.layout
    return cost_between(lay.width, lay.height, lay.moves, border_walls(lay.width, lay.height) | walls,
                        trial.path[0], trial.path[-1])


def _unobserved(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    walker = Walker(unit.options, rng)
    return finish_group(unit, [_draft(rng, unit, walker)], walker.beta)


def _background(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    walker = Walker(LEGACY, rng)
    scene = _Scene(rng)
    hidden = scene.hidden if rng.random() < 0.5 else frozenset()
    fam = _familiarization(rng, walker, scene, hidden)
    assert fam is not None
    shown = fam[int(rng.integers(N_FAMILIARIZATION))]
    test = make_trial(with_walls(shown.layout, hidden), shown.path, "A", "test")
    return [make_episode(unit, [*fam, test])]


# ---------------------------------------------------------------- rules


def shown_trial(ep: Episode) -> Trial | None:
    """The familiarization trial the test shows again: the one whose walk the test repeats, or, for a test at the
    goal, the only one whose object stands where the test's does; None when there is none."""
    test = ep.test
    found = [t for t in ep.familiarization if t.path == test.path]
    if not found and len(test.path) == 2 and test.path[0] == test.path[1] and test.layout.objects:
        found = [t for t in ep.familiarization if t.layout.objects and t.layout.objects[0].cell == test.path[0]]
        found = found if len(found) == 1 else []
    return found[0] if found else None


def difficulty(e: Episode, u: Episode) -> float:
    """The part of the bend the hidden obstacle explains and the unexpected reveal does not (cells): the shown
    familiarization walk's excess over optimal with the unexpected reveal in place minus that with the expected one."""
    shown = shown_trial(e)
    if shown is None:
        return 0.0
    return (walk_excess(with_walls(shown.layout, inner_walls(u.test.layout)), shown.path)
            - walk_excess(with_walls(shown.layout, inner_walls(e.test.layout)), shown.path))


def evidence(e: Episode, u: Episode) -> float:
    """How strongly the familiarization walks imply the expected reveal over the unexpected one (nats): the sum over
    the trials of ``log pi(walk | expected walls) - log pi(walk | unexpected walls)`` under the generator's Boltzmann
    agent with the episode's ``beta`` (0 without one), after the trial's object
    (:func:`bib.tasks.difficulty.walk_log_prob`). ``pair_evidence`` adds it to the test moves' evidence."""
    if e.beta is None:
        return 0.0
    return walks_evidence(e.familiarization, inner_walls(e.test.layout), inner_walls(u.test.layout), e.beta)


def walks_evidence(fam: list[Trial] | tuple[Trial, ...], a: frozenset[Cell], b: frozenset[Cell], beta: float) -> float:
    """``sum_t log pi(walk t | walls a) - log pi(walk t | walls b)`` over the familiarization ``fam`` (nats)."""
    return sum(walk_log_prob(t, with_walls(t.layout, a), "A", beta) - walk_log_prob(t, with_walls(t.layout, b), "A", beta)
               for t in fam)


def _rule(ep: Episode) -> list[Problem]:
    """One occluder over every familiarization trial and none at test; familiarization layouts hold the border,
    one object and the agent; the test is a familiarization trial's layout and walk with the occluded cells
    revealed; the revealed walls lie under the occluder and every walk is legal with them in place; in an
    expected (or background) episode they explain every walk (at most :data:`MAX_EXPLAINED` over optimal), and
    a revealed obstacle forces a bend of :data:`MIN_BEND` or more in the test walk."""
    fam, test = ep.familiarization, ep.test
    if not fam:
        return [Problem(ep.id, "no familiarization trial")]
    occ = fam[0].occluder
    for i, t in enumerate(fam):
        lay = t.layout
        if t.occluder is None or t.occluder != occ:
            return [Problem(ep.id, "every familiarization trial must show the same occluder", i)]
        if inner_walls(lay) or lay.barriers or lay.key is not None or lay.lock is not None or len(lay.objects) != 1:
            return [Problem(ep.id, "a familiarization layout holds only the border, one object and the agent", i)]
    assert occ is not None
    if test.occluder is not None:
        return [Problem(ep.id, "the test trial must show the occluder removed", len(ep.trials) - 1)]
    shown = shown_trial(ep)
    if shown is None:
        return [Problem(ep.id, "the test neither repeats a familiarization walk nor shows the agent at the object of "
                               "exactly one familiarization trial", len(ep.trials) - 1)]
    revealed = inner_walls(test.layout)
    seen = shown.layout if test.path == shown.path else replace(shown.layout, agents=(replace(
        shown.layout.agent, home=test.path[0]),))
    if test.path != shown.path and _near(test.path[0], revealed):
        return [Problem(ep.id, "a test at the goal reveals a wall next to the agent", len(ep.trials) - 1)]
    if with_walls(test.layout, frozenset()) != seen:
        return [Problem(ep.id, "the test layout differs from its familiarization trial's in more than the revealed cells",
                        len(ep.trials) - 1)]
    outside = sorted(c for c in revealed if c not in occ)
    if outside:
        return [Problem(ep.id, "a revealed wall lies outside the occluder", len(ep.trials) - 1, cell=outside[0])]
    for i, t in enumerate(fam):
        if not legal_path(with_walls(t.layout, revealed), t.path):
            return [Problem(ep.id, "the revealed walls cross this familiarization walk (they cannot have been hidden there)", i)]
    if ep.outcome in ("expected", "none"):
        for i, t in enumerate(fam):
            if walk_excess(with_walls(t.layout, revealed), t.path) > MAX_EXPLAINED + TOL:
                return [Problem(ep.id, "the revealed walls do not explain this familiarization walk", i)]
        if revealed and walk_excess(shown.layout, shown.path) < MIN_BEND - TOL:
            return [Problem(ep.id, f"the revealed obstacle forces no bend of {MIN_BEND} cell or more in the test walk",
                            len(ep.trials) - 1)]
        if ep.outcome == "expected" and not revealed:
            return [Problem(ep.id, "the expected outcome must reveal the hidden obstacle", len(ep.trials) - 1)]
    return []


def _pair_rule(e: Episode, u: Episode) -> list[Problem]:
    """Shared familiarization and test walk; the unexpected reveal leaves at least :data:`MARGIN` cell of the bend
    unexplained; by variant: an obstacle of the expected one's shape elsewhere (``""``), nothing (``empty``), more
    wall cells than the expected one (``larger``); with :data:`TOUCH`, as many path cells touching each reveal; with
    :data:`HUG`, more by every count of :func:`hugging` for the unexpected one; at the goal or with either token (and
    a Boltzmann agent), walks that favour the expected reveal (:func:`evidence` above 0)."""
    if e.familiarization != u.familiarization:
        return [Problem(u.id, "familiarization differs from the expected episode's")]
    if e.test.path != u.test.path or (e.test.layout.agent != u.test.layout.agent):
        return [Problem(u.id, "the test walk differs from the expected episode's", len(u.trials) - 1)]
    a, b = inner_walls(e.test.layout), inner_walls(u.test.layout)
    variant = reveal_kind(e.variant)
    if variant == "" and (b == a or shape_of(b) != shape_of(a)):
        return [Problem(u.id, "the unexpected outcome must reveal an obstacle of the expected one's shape elsewhere")]
    obj = u.test.layout.objects[0].cell if u.test.layout.objects else None
    if b and obj is not None and placement(b, obj) != placement(a, obj):
        return [Problem(u.id, "the two reveals must sit alike relative to the object (in line with it or not, as near)")]
    if variant == "empty" and b:
        return [Problem(u.id, "the unexpected outcome of an 'empty' pair must reveal nothing")]
    if variant == "larger" and (len(b) <= len(a) or b & a):
        return [Problem(u.id, "the unexpected outcome of a 'larger' pair must reveal a larger obstacle elsewhere")]
    control = adjacency_control(e.variant)
    if control == HUG:
        hug_e, hug_u = hugging(e), hugging(u)
        if any(x <= h for h, x in zip(hug_e, hug_u)):
            return [Problem(u.id, f"the walks hug the unexpected reveal {hug_u} (cells within 1, per walk, within 2, turns "
                                  f"within 1), the expected one {hug_e}: a '{HUG}' pair's must be more each")]
    elif control == TOUCH:
        touched_e, touched_u = path_adjacency(e), path_adjacency(u)
        if touched_e != touched_u:
            return [Problem(u.id, f"the unexpected reveal touches {touched_u} familiarization path cells, the "
                                  f"expected one {touched_e} (a '{TOUCH}' pair must tie)")]
    if (control or at_goal(e.variant)) and e.beta is not None and evidence(e, u) <= 0:
        return [Problem(u.id, f"the familiarization walks favour the unexpected reveal ({evidence(e, u):.2f} nats under "
                              "the agent's beta): at the goal, or with redrawn walks, they must favour the hidden obstacle")]
    if difficulty(e, u) < MARGIN - TOL:
        return [Problem(u.id, f"the unexpected reveal explains the bend as well as the hidden obstacle (within {MARGIN} cell)")]
    return []


def _background_rule(ep: Episode) -> list[Problem]:
    return _rule(ep)


register(TaskSpec(CONDITION, CONDITION, "evaluation", _unobserved, rule=_rule, pair_rule=_pair_rule,
                  expected="the occluder removed reveals an obstacle that explains the agent's bend",
                  unexpected="the occluder removed reveals nothing, or an obstacle that does not explain the bend",
                  order=100, shortcut_exempt=(("efficiency", "the revealed layout explains the walk or not: the "
                                                              "efficiency principle is the condition's test"),),
                  controls=Controls(variants=VARIANTS, graded=True, boltzmann=True),
                  difficulty=difficulty, evidence=evidence))
register(TaskSpec(BACKGROUND, CONDITION, "background", _background, rule=_background_rule,
                  expected="an occluder hides an obstacle (half the episodes) or nothing; the test reveals it",
                  order=100))
