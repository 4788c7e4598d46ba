"""Helpers shared by task generators: palettes, sampling cells and entities, building trials."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from bib.episode import Episode, Event, Trial
from bib.render.sprites import AGENT_SHAPES, OBJECT_SHAPES
from bib.tasks.registry import LayoutRejected, UnitInfo
from bib.world.dynamics import AgentState, action_between, step
from bib.world.grid import Agent, Cell, GridObject, Layout, border_walls

GRID = 10
"""BIB grid size: 10 x 10 cells with a border ring of walls."""

N_FAMILIARIZATION = 8

OBJECT_COLORS: list[tuple[int, int, int]] = [
    (220, 40, 60), (240, 140, 30), (230, 200, 40), (150, 60, 200), (40, 170, 200),
    (230, 90, 170), (120, 80, 40), (20, 120, 120), (100, 100, 230), (200, 120, 120),
]
AGENT_COLORS: list[tuple[int, int, int]] = [(40, 90, 220), (200, 40, 40), (120, 60, 160), (30, 140, 90)]
ITEM_SHAPES = [s for s in OBJECT_SHAPES if s != "medal"]
"""Object shapes available to goals (``medal`` is kept out of the random palette)."""


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
    pool = [c for c in candidates if c not in ex]
    if len(pool) < n:
        raise LayoutRejected(f"need {n} free cells, have {len(pool)}")
    idx = rng.choice(len(pool), size=n, replace=False)
    return [pool[int(i)] for i in idx]


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
    state = AgentState(tuple(path[0]))
    events: list[Event] = []
    for i, (a, b) in enumerate(zip(path, path[1:]), start=1):
        action = action_between(tuple(a), tuple(b))
        if action is None:
            raise LayoutRejected(f"path jumps from {a} to {b}")
        state, evs = step(layout, state, action)
        events += [Event(i, e) for e in evs]
    return tuple(events)


def make_trial(layout: Layout, path: Sequence[Cell], goal: str | None, phase: str = "familiarization") -> Trial:
    """A trial whose events are derived from the path."""
    cells = tuple(tuple(c) for c in path)
    return Trial(phase=phase, layout=layout, path=cells, events=events_of(layout, cells), goal=goal)  # type: ignore[arg-type]


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
