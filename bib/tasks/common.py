"""Helpers shared by task generators: palettes, sampling cells and entities, building trials."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from bib.episode import Episode, Event, Trial
from bib.tasks.options import TaskOptions
from bib.tasks.registry import LayoutRejected, UnitInfo
from bib.vocabulary import AGENT_SHAPES, ITEM_SHAPES
from bib.world.dynamics import AgentState, action_between, move_legal, step
from bib.world.grid import Agent, Cell, GridObject, Layout, border_walls
from bib.world.occluder import Occluder

GRID = 10
"""BIB grid size: 10 x 10 cells with a border ring of walls."""

N_FAMILIARIZATION = 8

OBJECT_COLORS: list[tuple[int, int, int]] = [
    (220, 40, 60), (240, 140, 30), (230, 200, 40), (150, 60, 200), (40, 170, 200),
    (230, 90, 170), (120, 80, 40), (20, 120, 120), (100, 100, 230), (200, 120, 120),
]
AGENT_COLORS: list[tuple[int, int, int]] = [(40, 90, 220), (200, 40, 40), (120, 60, 160), (30, 140, 90)]


def empty_layout(width: int = GRID, height: int = GRID, **kwargs) -> Layout:
    """A grid with only its border walls (plus any Layout fields given)."""
    walls = frozenset(kwargs.pop("walls", frozenset())) | border_walls(width, height)
    return Layout(width=width, height=height, walls=walls, **kwargs)


def interior(width: int = GRID, height: int = GRID) -> list[Cell]:
    """The cells inside the border ring, row by row."""
    return [(x, y) for y in range(1, height - 1) for x in range(1, width - 1)]


def sample_cells(rng: np.random.Generator, candidates: Sequence[Cell], n: int, exclude: Iterable[Cell] = ()) -> list[Cell]:
    """``n`` distinct cells drawn uniformly from ``candidates`` minus ``exclude``."""
    ex = set(exclude)
    pool = [c for c in candidates if c not in ex] if ex else candidates
    if len(pool) < n:
        raise LayoutRejected(f"need {n} free cells, have {len(pool)}")
    idx = rng.choice(len(pool), size=n, replace=False)
    return [pool[int(i)] for i in idx]


def pick(rng: np.random.Generator, options: range) -> int:
    """A uniform element of ``options``: the draw ``rng.choice(options)`` makes (one ``rng.integers``), without
    building an array."""
    return options[int(rng.integers(len(options)))]


def sample_agent(rng: np.random.Generator, agent_id: str, home: Cell, avoid_shape: str | None = None) -> Agent:
    """An agent with a random shape (different from ``avoid_shape``) and colour."""
    shapes = [s for s in AGENT_SHAPES if s != avoid_shape]
    shape = shapes[int(rng.integers(len(shapes)))]
    color = AGENT_COLORS[int(rng.integers(len(AGENT_COLORS)))]
    return Agent(agent_id, shape, color, home)


def sample_looks(rng: np.random.Generator, n: int) -> list[tuple[str, tuple[int, int, int]]]:
    """``n`` distinct (shape, colour) object looks, with distinct shapes and colours."""
    shapes = rng.choice(len(ITEM_SHAPES), size=n, replace=False)
    colors = rng.choice(len(OBJECT_COLORS), size=n, replace=False)
    return [(ITEM_SHAPES[int(s)], OBJECT_COLORS[int(c)]) for s, c in zip(shapes, colors)]


def place(look: tuple[str, tuple[int, int, int]], object_id: str, cell: Cell) -> GridObject:
    """An object with a given look at ``cell``."""
    return GridObject(object_id, look[0], look[1], cell)


def events_of(layout: Layout, path: Sequence[Cell]) -> tuple[Event, ...]:
    """The key/lock events a path causes, by replaying the dynamics."""
    if layout.key is None:  # nothing to pick up, so nothing unlocks: the replay only checks every move
        for a, b in zip(path, path[1:]):
            action = action_between(tuple(a), tuple(b))
            if action is None:
                raise LayoutRejected(f"path jumps from {a} to {b}")
            if not move_legal(layout, tuple(a), action):
                step(layout, AgentState(tuple(a)), action)  # raises the dynamics' own error
        return ()
    state = AgentState(tuple(path[0]))
    events: list[Event] = []
    for i, (a, b) in enumerate(zip(path, path[1:]), start=1):
        action = action_between(tuple(a), tuple(b))
        if action is None:
            raise LayoutRejected(f"path jumps from {a} to {b}")
        state, evs = step(layout, state, action)
        events += [Event(i, e) for e in evs]
    return tuple(events)


def make_trial(layout: Layout, path: Sequence[Cell], goal: str | None, phase: str = "familiarization",
               occluder: Occluder | None = None) -> Trial:
    """A trial whose events are derived from the path (which must be legal in ``layout``: an illegal move raises)."""
    cells = tuple(tuple(c) for c in path)
    return Trial(phase=phase, layout=layout, path=cells, events=events_of(layout, cells), goal=goal,  # type: ignore[arg-type]
                 occluder=occluder)


def make_episode(
    unit: UnitInfo,
    trials: Sequence[Trial],
    *,
    condition: str | None = None,
    outcome: str = "none",
    paired: bool = False,
) -> Episode:
    """Wrap trials into an Episode named after the unit (``<pair_id>-<outcome>`` when paired)."""
    lay = trials[0].layout
    return Episode(
        id=f"{unit.pair_id}-{outcome}" if paired else unit.pair_id,
        pair_id=unit.pair_id if paired else None,
        task=unit.task,
        condition=condition or unit.task,
        outcome=outcome,
        seed=unit.seed,
        width=lay.width,
        height=lay.height,
        trials=tuple(trials),
        moves=lay.moves,
    )


# ---------------------------------------------------------------- controlled set (bib.tasks.options)

WALK_TRIES = 20
"""Boltzmann draws of one path before the layout is rejected (a draw must respect its excess bound)."""


class Walker:
    """The stimulus agent of one unit: walks to a goal optimally or, with the Boltzmann policy, noisily.

    Args:
        options: the task's options (their ``agent`` says which policy).
        rng: the unit's generator.

    Attributes:
        beta: the unit's rationality (drawn once per unit; None for the deterministic policy).
    """

    def __init__(self, options: TaskOptions, rng: np.random.Generator) -> None:
        self.model = options.agent
        self.rng = rng
        self.beta = self.model.draw_beta(rng)

    def walk(self, layout: Layout, goal: str, bound: float | None = None, fallback: bool = False) -> list[Cell]:
        """A path from the agent's home to ``goal`` (object id or ``"key"``).

        Deterministic: an optimal key/lock-space path, ties broken at random. Boltzmann: a draw
        whose excess cost over optimal is at most ``bound`` (default: the agent's ``max_excess``),
        redrawn up to :data:`WALK_TRIES` times; then, with ``fallback``, an optimal path.

        Raises:
            LayoutRejected: the goal is unreachable, or no draw met the bound (without ``fallback``).
        """
        from bib.tasks.agents import RationalAgent, rollout
        from bib.world.keylock import boltzmann_path, optimal_cost
        from bib.world.planning import path_cost

        cell = layout.goal_cell(goal)
        best = optimal_cost(layout, cell)
        if not np.isfinite(best):
            raise LayoutRejected(f"goal {goal!r} is unreachable")
        if self.beta is None:
            return rollout(RationalAgent([goal], self.rng), layout)[0]
        limit = self.model.max_excess if bound is None else bound
        for _ in range(WALK_TRIES):
            path = boltzmann_path(layout, cell, self.beta, self.rng)
            if path[-1] == cell and path_cost(path) - best <= limit + 1e-9:
                return path
        if fallback:
            return rollout(RationalAgent([goal], self.rng), layout)[0]
        raise LayoutRejected(f"no Boltzmann path to {goal!r} within {limit} cells of optimal in {WALK_TRIES} draws")


@dataclass(frozen=True)
class PairDraft:
    """One pair of a group before it is named: familiarizations and test trials of both outcomes.

    Attributes:
        fam_e, fam_u: familiarization trials of the expected and unexpected episodes (often the same).
        test_e, test_u: the two test trials.
        variant: the pair's variant (``""`` for BIB's design).
        twin: position in the group of this pair's twin, or None.
        difficulty: the pair's difficulty when the generator measured it (else it is measured
            with the task's :attr:`~bib.tasks.registry.TaskSpec.difficulty`, where there is one).
    """

    fam_e: Sequence[Trial]
    test_e: Trial
    fam_u: Sequence[Trial]
    test_u: Trial
    variant: str = ""
    twin: int | None = None
    difficulty: float | None = None


def is_twin(variant: str) -> bool:
    """Whether a variant names the twin (flipped familiarization) of a pair."""
    return "twin" in variant.split("+")


def twin_of(draft: PairDraft, fam: Sequence[Trial], position: int) -> PairDraft:
    """The label-flipping twin of ``draft`` (at ``position`` in the group): the same two test trials, swapped, after ``fam``.

    Its variant is ``draft``'s plus the token ``twin``.
    """
    return PairDraft(fam, draft.test_u, fam, draft.test_e, "+".join(t for t in (draft.variant, "twin") if t),
                     position, draft.difficulty)


def with_excess(trials: Sequence[Trial], cache: dict[int, Trial]) -> tuple[Trial, ...]:
    """``trials`` with their ``excess_cost`` recorded (rounded; each distinct trial object measured once)."""
    from dataclasses import replace

    from bib.tasks.difficulty import DECIMALS, excess_cost

    out = []
    for t in trials:
        if id(t) not in cache:
            cache[id(t)] = replace(t, excess_cost=round(excess_cost(t), DECIMALS))
        out.append(cache[id(t)])
    return tuple(out)


def finish_group(unit: UnitInfo, drafts: Sequence[PairDraft], beta: float | None) -> list[Episode]:
    """Name the pairs of a group (pair indices ``unit.index + position``) and record their design.

    Every episode records its variant, twin id, difficulty and ``beta``; every trial its excess cost.
    On the flipped half of the design slots (:meth:`bib.tasks.options.TaskOptions.flipped`) the pairs
    of a twinned group take their positions in reverse, so a twin is the group's first pair as often
    as its second.
    """
    from dataclasses import replace

    from bib.tasks.difficulty import DECIMALS
    from bib.tasks.registry import get_task, unit_id

    drafts = list(drafts)
    if len(drafts) == 2 and unit.slot is not None and unit.options.flipped(unit.slot):
        drafts = [replace(d, twin=None if d.twin is None else 1 - d.twin) for d in reversed(drafts)]
    measure = get_task(unit.task).difficulty
    measured: dict[int, float | None] = {}
    for j, d in enumerate(drafts):  # a twin shows its base pair's two test trials: the base pair's difficulty,
        if not (is_twin(d.variant) and d.twin is not None) or d.difficulty is not None:  # unless it has its own
            measured[j] = d.difficulty
    cache: dict[int, Trial] = {}
    out: list[Episode] = []
    for j, d in enumerate(drafts):
        pair = UnitInfo(unit.task, unit.index + j, unit.seed, unit.options)
        e = make_episode(pair, [*with_excess(d.fam_e, cache), *with_excess([d.test_e], cache)],
                         outcome="expected", paired=True)
        u = make_episode(pair, [*with_excess(d.fam_u, cache), *with_excess([d.test_u], cache)],
                         outcome="unexpected", paired=True)
        out += [e, u]
        if j in measured and measured[j] is None and measure is not None:
            measured[j] = measure(e, u)
    named: list[Episode] = []
    for j, d in enumerate(drafts):
        difficulty = measured[j] if j in measured else measured.get(d.twin)  # type: ignore[arg-type]
        difficulty = None if difficulty is None else round(difficulty, DECIMALS)
        twin_id = None if d.twin is None else unit_id(unit.task, unit.index + d.twin)
        named += [replace(ep, variant=d.variant, twin_id=twin_id, difficulty=difficulty, beta=beta)
                  for ep in out[2 * j: 2 * j + 2]]
    return named
