"""Cost-reward trade-offs (AGENT's scenario 4, Shu et al., ICML 2021; Liu et al. 2017), in bib's gridworld.

What it asks: can an observer infer how much an agent values each of two goals from the costs it
pays for them, and predict a choice from that?

- Costs: every trial shows two objects, ``A`` and ``B``, and a ring of mud (:mod:`bib.world.terrain`):
  the 8 cells around ``A``, so reaching ``A`` means wading through one mud cell (the agent stays
  :data:`~bib.world.terrain.MUD_STAYS` steps there); in half of the familiarization trials (drawn apart
  from the goal) a second ring lies around ``B``. A trial's *margin* is ``cost(A) - cost(B)``: the
  cheapest time from the home to ``A`` minus that to ``B`` (mud and distance), so the mud moves a
  trial's margin by 2 or not at all: an observer blind to it misreads half the familiarization.
- The agent is a utility maximiser: it goes to ``A`` when its value gap ``R(A) - R(B)`` exceeds the
  margin, else to ``B``, on a cheapest path (noise-free, ties broken at random).
- Test (a new layout, margin ``T`` in :data:`TEST`, AGENT's type 4.2: the object the first agent
  likes more is the costlier one): the choice, drawn first.
- Familiarization (8 trials, in a random order, new layouts): the agent goes to ``A`` in 4 trials
  (through the mud) and to ``B`` in 4. Two designs show the same counts: *values A*
  (:data:`VALUES_A`, the pair's own): it pays for ``A`` at margins up to ``T + 1``, once at least
  ``T``, and gives ``A`` up when it costs more (AGENT's "gives up when the obstacle becomes too
  difficult"); *cost-sensitive* (:data:`COST_SENSITIVE`, the twin's, the mirror image about ``T``): it
  takes ``A`` only when it costs at most ``T - 1.2`` more, and gives it up once at no more than ``T``.
  After *values A*, expected = ``A`` (the agent paid at least this much for ``A`` before), unexpected = ``B``. The twin shows the SAME
  two test trials after the *cost-sensitive* familiarization, under which the labels swap (it gave
  ``A`` up at no more than this margin).

Controls (docs/tasks.md, "Cost-reward"): the twins make every test-only cue (closest object, path
length, mud on the path, novelty of the test) score exactly 50%; both familiarizations show 4 trips
to each object, the ring around ``A`` in every trial and the second ring around ``B`` in 4 (drawn apart
from the goal) and no inner walls, so goal frequency, mud, wade and wall counts say nothing about the
label. Only the margins paid and refused do; the designs' margins mirror each other about ``T``, so neither is the one where
``A`` is costlier on average. What a fixed goal count leaves (docs/tasks.md): the familiarization of
*values A* has at least 5 trials with a margin of ``T`` or more (its 4 refusals, the paid witness), the
cost-sensitive one at most 3: the margins, read against the test, decide, as the choices do. The
same layouts for both designs (the other twins' way) would let goal frequency decide instead: the
agent that values ``A`` more goes to ``A`` in more of any set of layouts.

Without controlled-set options (``bib generate --task cost-reward``) a unit is one pair: values-A
on even pair indices, cost-sensitive (labels swapped) on odd ones. With options, a unit is a pair
and, with ``twins``, its twin. Under a Boltzmann ``[agent]`` the walks stay noise-free (no ``beta``
is recorded): the planner's paths through mud are exact, and the choice is the manipulation.

The rule (:func:`cost_reward_problems`) checks the design from the episode alone: the margins of
the familiarization's ``A`` choices all lie below those of its ``B`` choices (one value gap explains
them), and the expected test choice is the one they determine: ``A`` when the test margin is at most
the largest margin paid for ``A``, ``B`` when it is at least the smallest margin at which ``A`` was
given up.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from bib.episode import Episode, Problem, Trial
from bib.tasks.common import (
    GRID,
    N_FAMILIARIZATION,
    PairDraft,
    empty_layout,
    finish_group,
    make_episode,
    make_trial,
    place,
    sample_agent,
    sample_cells,
    sample_looks,
    twin_of,
)
from bib.tasks.options import Controls
from bib.tasks.preference import chebyshev, shared_familiarization_problems
from bib.tasks.registry import LayoutRejected, TaskSpec, UnitInfo, register
from bib.world.grid import Agent, Cell, Layout, border_walls
from bib.world.planning import TOL, shortest_cost
from bib.world.terrain import terrain_cost, terrain_cost_between, terrain_path, time_cost

VALUED = "A"
"""The object whose value the familiarization reveals (ringed by mud at test)."""
OTHER = "B"
TEST = (1.5, 3.0)
"""The test's margin ``T`` (cells of time, ``cost(A) - cost(B)``: ``A`` the costlier)."""
VALUES_A = (((0.0, 0.8), (-5.5, 1.0)), ((1.2, 2.0), (1.2, 2.0)))
"""The values-A familiarization's margins, relative to ``T``: ``((witness, others) of the trips to A, (witness,
others) of the trips to B)``. It pays for ``A`` up to ``T + 1`` (once at least ``T``: the *paid* witness) and
gives ``A`` up from ``T + 1.2``. Each trial's margin is drawn uniformly in its band (:func:`sample_margin`), so
the mean margin is ``T`` on average: the low trips to ``A`` balance the refusals just above ``T``."""
COST_SENSITIVE = (((-2.0, -1.2), (-2.0, -1.2)), ((-0.8, 0.0), (-1.0, 5.5)))
"""The cost-sensitive familiarization's margins, relative to ``T``: the mirror image of :data:`VALUES_A` about
``T`` (it takes ``A`` only up to ``T - 1.2`` and gives it up from ``T - 1``, once at most at ``T``: the *refused*
witness), so the two designs' margins have the same spread and mean, and neither is the one where ``A`` is the
costlier on average."""
WINDOW = 0.5
"""Half-width (cells) of the window around a drawn target margin that a layout must fall in."""
MAX_TRIES = 200
"""Layout draws per trial before the unit is rejected (and redrawn by the registry)."""
N_PER_GOAL = N_FAMILIARIZATION // 2
"""Familiarization trials that end on each object (4 and 4, in both designs)."""
N_BOTH = N_FAMILIARIZATION // 2
"""Familiarization trials with mud around ``B`` too (4, whatever the goal, in both designs)."""

Look = tuple[str, tuple[int, int, int]]


def core() -> list[Cell]:
    """Cells whose 8 neighbours are all interior (an object there has a full ring of 8 mud cells)."""
    return [(x, y) for y in range(2, GRID - 2) for x in range(2, GRID - 2)]


@lru_cache(maxsize=256)
def ring(cell: Cell) -> frozenset[Cell]:
    """The 8 cells around ``cell``."""
    x, y = cell
    return frozenset((x + dx, y + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy)


def trade_layout(agent: Agent, looks: list[Look], a: Cell, b: Cell, both: bool = False) -> Layout:
    """The border, ``A`` (look 0) at ``a`` in a ring of mud, ``B`` (look 1) at ``b`` (in a ring too when ``both``)."""
    objects = (place(looks[0], VALUED, a), place(looks[1], OTHER, b))
    return empty_layout(objects=objects, agents=(agent,), terrain=_mud(a, b, both))


def muddy_both(layout: Layout) -> bool:
    """Whether ``layout`` has mud around both objects (else around ``A`` only)."""
    return layout.terrain == ring(layout.object(VALUED).cell) | ring(layout.object(OTHER).cell)


def margin(layout: Layout) -> float:
    """``cost(A) - cost(B)``: the cheapest time from the home to ``A`` minus that to ``B`` (mud included)."""
    home = layout.agent.home
    return terrain_cost(layout, home, layout.object(VALUED).cell) - terrain_cost(layout, home, layout.object(OTHER).cell)


@lru_cache(maxsize=4096)
def _mud(a: Cell, b: Cell, both: bool) -> frozenset[Cell]:
    """The terrain of :func:`trade_layout`: mud around ``a``, and around ``b`` too when ``both``."""
    return ring(a) | (ring(b) if both else frozenset())


def _margin(home: Cell, a: Cell, b: Cell, both: bool) -> float:
    """:func:`margin` of ``trade_layout(agent at home, looks, a, b, both)``, from the cached cost fields without
    building the layout (it has only the border for walls)."""
    mud, border = _mud(a, b, both), border_walls(GRID, GRID)
    return (terrain_cost_between(GRID, GRID, 8, border, mud, home, a)
            - terrain_cost_between(GRID, GRID, 8, border, mud, home, b))


def in_range(value: float, bounds: tuple[float, float]) -> bool:
    """``low <= value <= high`` (to :data:`~bib.world.planning.TOL`)."""
    return bounds[0] - TOL <= value <= bounds[1] + TOL


def sample_trade(rng: np.random.Generator, agent: Agent, looks: list[Look], bounds: tuple[float, float],
                 both: bool = False) -> Layout:
    """A layout (mud around ``A``, and around ``B`` too when ``both``) whose margin lies in ``bounds``.

    Both objects sit in :func:`core`, two cells or more from the home and from each other (so neither the
    home nor the other object is on the mud).

    Raises:
        LayoutRejected: after :data:`MAX_TRIES` draws.
    """
    home = agent.home
    cells = [c for c in core() if c != home]  # the pool sample_cells(rng, core(), 2, exclude=[home]) draws from
    for _ in range(MAX_TRIES):
        a, b = sample_cells(rng, cells, 2)
        if min(chebyshev(home, a), chebyshev(home, b), chebyshev(a, b)) < 2:
            continue
        if in_range(_margin(home, a, b, both), bounds):
            return trade_layout(agent, looks, a, b, both)
    raise LayoutRejected(f"no layout with a margin in {list(bounds)} in {MAX_TRIES} draws")


def sample_margin(rng: np.random.Generator, agent: Agent, looks: list[Look], bounds: tuple[float, float],
                  both: bool = False) -> Layout:
    """A layout whose margin is near a target drawn uniformly in ``bounds`` (within :data:`WINDOW`, inside
    ``bounds``): margins spread over the band rather than piling up where layouts are many."""
    target = float(rng.uniform(*bounds))
    return sample_trade(rng, agent, looks, (max(bounds[0], target - WINDOW), min(bounds[1], target + WINDOW)), both)


def walk(layout: Layout, goal: str, rng: np.random.Generator) -> list[Cell]:
    """A cheapest path (in time, the stays in the mud included) from the home to object ``goal``."""
    path = terrain_path(layout, layout.agent.home, layout.object(goal).cell, rng)
    if path is None:  # every object of a trade layout is reachable
        raise LayoutRejected(f"object {goal} is unreachable")
    return path


def familiarization(rng: np.random.Generator, agent: Agent, looks: list[Look], design: tuple, test: float) -> list[Trial]:
    """The 8 familiarization trials of one design (:data:`VALUES_A`, :data:`COST_SENSITIVE`) for a test margin
    ``test``, in a random order: 4 to ``A``, 4 to ``B``, each goal's first trip at its witness margin; mud
    around ``B`` too in :data:`N_BOTH` of them, drawn apart from the goal."""
    plan = []
    for goal, (witness, others) in zip((VALUED, OTHER), design):
        plan += [(goal, witness)] + [(goal, others)] * (N_PER_GOAL - 1)
    both = rng.permutation(N_FAMILIARIZATION) < N_BOTH
    trials = []
    for i, k in enumerate(rng.permutation(N_FAMILIARIZATION)):
        goal, (lo, hi) = plan[int(k)]
        layout = sample_margin(rng, agent, looks, (test + lo, test + hi), bool(both[i]))
        trials.append(make_trial(layout, walk(layout, goal, rng), goal))
    return trials


def _start(rng: np.random.Generator) -> tuple[Agent, list[Look]]:
    home = sample_cells(rng, [(x, y) for y in range(1, GRID - 1) for x in range(1, GRID - 1)], 1)[0]
    return sample_agent(rng, "agent-0", home), sample_looks(rng, 2)


def _draft(rng: np.random.Generator) -> tuple[list[Trial], list[Trial], Trial, Trial]:
    """Both familiarizations (values-A, cost-sensitive) and the test trials to ``A`` and to ``B``, consistent."""
    agent, looks = _start(rng)
    test_layout = sample_trade(rng, agent, looks, TEST)
    home = agent.home
    if abs(shortest_cost(test_layout, home, test_layout.object(VALUED).cell)
           - shortest_cost(test_layout, home, test_layout.object(OTHER).cell)) < TOL:
        # the nearer object (by distance, mud aside) must be one of them: a tie would leave "goes to the nearest
        # object" to the order the objects are listed in, which the blind view draws per episode
        raise LayoutRejected("the test's objects are equally far from the home")
    m = margin(test_layout)
    fam_a = familiarization(rng, agent, looks, VALUES_A, m)
    fam_c = familiarization(rng, agent, looks, COST_SENSITIVE, m)
    for fam, want in ((fam_a, VALUED), (fam_c, OTHER)):
        if predicted_choice(fam, test_layout) != want:
            raise LayoutRejected("the familiarization does not determine the test choice")
    to_a = make_trial(test_layout, walk(test_layout, VALUED, rng), VALUED, "test")
    to_b = make_trial(test_layout, walk(test_layout, OTHER, rng), OTHER, "test")
    familiar = {t.path for t in (*fam_a, *fam_c)}
    if to_a.path in familiar or to_b.path in familiar:
        raise LayoutRejected("a test path repeats a familiarization path")
    return fam_a, fam_c, to_a, to_b


def _cost_reward(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """A cost-reward pair (and, with twins, its twin); see the module docstring."""
    fam_a, fam_c, to_a, to_b = _draft(rng)
    if unit.options.legacy:
        if unit.index % 2 == 0:
            fam, expected, unexpected = fam_a, to_a, to_b
        else:
            fam, expected, unexpected = fam_c, to_b, to_a
        return [make_episode(unit, [*fam, expected], outcome="expected", paired=True),
                make_episode(unit, [*fam, unexpected], outcome="unexpected", paired=True)]
    draft = PairDraft(fam_a, to_a, fam_a, to_b)
    drafts = [draft]
    if unit.options.twins:  # the twin's difficulty is its own familiarization's, not the base pair's
        drafts = [replace(draft, twin=1), replace(twin_of(draft, fam_c, 0), difficulty=decisive_gap(fam_c, to_a.layout))]
    return finish_group(unit, drafts, None)


def _cost_reward_background(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """A training episode: one of the two familiarizations (a coin) and the test choice it predicts."""
    fam_a, fam_c, to_a, to_b = _draft(rng)
    fam, test = (fam_a, to_a) if rng.integers(2) == 0 else (fam_c, to_b)
    return [make_episode(unit, [*fam, test])]


# ---------------------------------------------------------------- rules


def predicted_choice(fam: list[Trial] | tuple[Trial, ...], test_layout: Layout) -> str | None:
    """The object the familiarization's costs predict at ``test_layout`` (None when they do not decide).

    ``A`` when the test margin is at most the largest margin the agent paid for ``A``; ``B`` when it is at
    least the smallest margin at which it went to ``B`` (the two cannot both hold when one value gap
    explains the familiarization).
    """
    paid = [margin(t.layout) for t in fam if t.goal == VALUED]
    refused = [margin(t.layout) for t in fam if t.goal == OTHER]
    m = margin(test_layout)
    if paid and m <= max(paid) + TOL:
        return VALUED
    if refused and m >= min(refused) - TOL:
        return OTHER
    return None


def decisive_gap(fam: list[Trial] | tuple[Trial, ...], test_layout: Layout) -> float:
    """How far inside the decided side the test margin lies (cells of time, >= 0; small is hard): after a
    familiarization that predicts ``A``, the largest margin paid for ``A`` minus the test's; after one that predicts
    ``B``, the test's margin minus the smallest at which ``A`` was given up. 0: the agent paid (or refused) exactly
    this margin before; the designs put it in [0, 1] (the witness bands and the other trials' edges).

    Raises:
        ValueError: the familiarization does not decide the test.
    """
    m = margin(test_layout)
    choice = predicted_choice(fam, test_layout)
    if choice == VALUED:
        return max(0.0, max(margin(t.layout) for t in fam if t.goal == VALUED) - m)
    if choice == OTHER:
        return max(0.0, m - min(margin(t.layout) for t in fam if t.goal == OTHER))
    raise ValueError("the familiarization does not decide the test")


def pair_gap(expected: Episode, unexpected: Episode) -> float:
    """The pair's difficulty (:attr:`~bib.tasks.registry.TaskSpec.difficulty`): :func:`decisive_gap` of its
    familiarization and test layout."""
    return decisive_gap(expected.familiarization, expected.test.layout)


def _trial_problems(ep: Episode, i: int, trial: Trial, looks: dict[str, Look]) -> list[Problem]:
    lay = trial.layout
    out = []
    if {o.id: (o.shape, o.color) for o in lay.objects} != looks:
        out.append(Problem(ep.id, "objects differ from trial 0's (ids A and B, shapes and colours must stay)", i))
        return out
    mud_ok = lay.terrain == ring(lay.object(VALUED).cell) or (trial.phase == "familiarization" and muddy_both(lay))
    if not mud_ok or lay.walls != empty_layout(lay.width, lay.height).walls:
        out.append(Problem(ep.id, "a trial shows the border, no inner walls and a ring of mud around A (in familiarization "
                                  "around B too, or not)", i))
    if trial.goal not in looks:
        out.append(Problem(ep.id, f"goal {trial.goal!r} is not A or B", i))
    elif abs(time_cost(trial.path) - terrain_cost(lay, lay.agent.home, lay.object(trial.goal).cell)) > TOL:
        out.append(Problem(ep.id, f"path to {trial.goal} is not a cheapest path (in time, mud included)", i))
    return out


def cost_reward_problems(ep: Episode) -> list[Problem]:
    """The condition's rule (see the module docstring); ``none`` outcomes (background) are checked as expected."""
    fam = ep.familiarization
    if len(fam) != N_FAMILIARIZATION:
        return [Problem(ep.id, f"{len(fam)} familiarization trials, expected {N_FAMILIARIZATION}")]
    first = fam[0].layout
    looks = {o.id: (o.shape, o.color) for o in first.objects}
    if set(looks) != {VALUED, OTHER}:
        return [Problem(ep.id, "objects are not A and B", 0)]
    out = [p for i, t in enumerate(ep.trials) for p in _trial_problems(ep, i, t, looks)]
    if any(t.agent != fam[0].agent for t in ep.trials):
        out.append(Problem(ep.id, "the agent differs between trials"))
    if out:
        return out
    paid = [margin(t.layout) for t in fam if t.goal == VALUED]
    refused = [margin(t.layout) for t in fam if t.goal == OTHER]
    if len(paid) != N_PER_GOAL or len(refused) != N_PER_GOAL:
        out.append(Problem(ep.id, f"familiarization goes to A {len(paid)} times and to B {len(refused)} times, "
                                  f"expected {N_PER_GOAL} and {N_PER_GOAL}"))
    elif sum(muddy_both(t.layout) for t in fam) != N_BOTH:
        out.append(Problem(ep.id, f"{sum(muddy_both(t.layout) for t in fam)} familiarization trials with mud around both "
                                  f"objects, expected {N_BOTH}"))
    elif max(paid) >= min(refused) - TOL:
        out.append(Problem(ep.id, f"no value gap explains the familiarization: it went to A at a margin of "
                                  f"{max(paid):.2f} and to B at {min(refused):.2f}"))
    if out:
        return out
    ti, test = len(ep.trials) - 1, ep.test
    want = predicted_choice(fam, test.layout)
    if want is None:
        return [Problem(ep.id, f"the familiarization's margins do not decide the test (margin {margin(test.layout):.2f})", ti)]
    if ep.outcome in ("expected", "none") and test.goal != want:
        out.append(Problem(ep.id, f"expected test goal is {test.goal!r}, not {want!r}, which the familiarization's "
                                  "costs predict", ti))
    if ep.outcome == "unexpected" and test.goal == want:
        out.append(Problem(ep.id, f"unexpected test goal is {want!r}, the choice the familiarization's costs predict", ti))
    return out


def _pair_rule(expected: Episode, unexpected: Episode) -> list[Problem]:
    """Identical familiarization and the same test layout."""
    out = shared_familiarization_problems(expected, unexpected)
    if expected.test.layout != unexpected.test.layout:
        out.append(Problem(unexpected.id, "test layout differs from the expected episode's", len(unexpected.trials) - 1))
    return out


register(TaskSpec("cost-reward", "cost-reward", "evaluation", _cost_reward,
                  rule=cost_reward_problems, pair_rule=_pair_rule,
                  controls=Controls(twins=True, boltzmann=True),
                  expected="the object the costs it paid and refused in familiarization say it values more",
                  unexpected="the other object", order=100, difficulty=pair_gap))
register(TaskSpec("cost-reward-background", "cost-reward", "background", _cost_reward_background,
                  rule=cost_reward_problems,
                  expected="one of cost-reward's familiarizations, then the choice its costs predict", order=50))
