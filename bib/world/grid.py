"""Layout: the static content of one trial's grid (walls, barriers, lock, key, objects, agents, costly terrain)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache

Cell = tuple[int, int]
"""A grid cell ``(x, y)``: x is the column from the left, y the row from the top, both from 0."""

Color = tuple[int, int, int]


@dataclass(frozen=True)
class GridObject:
    """A goal item: ``id`` (e.g. ``"A"``), sprite ``shape``, RGB ``color`` and its ``cell``."""

    id: str
    shape: str
    color: Color
    cell: Cell


@dataclass(frozen=True)
class Agent:
    """An agent: ``id``, sprite ``shape``, RGB ``color`` and its ``home`` cell (drawn as a pad)."""

    id: str
    shape: str
    color: Color
    home: Cell


@lru_cache(maxsize=64)
def border_walls(width: int, height: int) -> frozenset[Cell]:
    """The ring of wall cells around a ``width x height`` grid (BIB: 10 x 10 with 8 x 8 free).

    Cached: every generated layout asks for it, and the frozenset is immutable.
    """
    ring = {(x, y) for x in range(width) for y in (0, height - 1)}
    ring |= {(x, y) for y in range(height) for x in (0, width - 1)}
    return frozenset(ring)


@dataclass(frozen=True)
class Layout:
    """The static world of one trial.

    Walls are fixed. Barriers (green) and the lock are removable: after an ``unlock`` they are
    gone. Objects and the key are walkable (an agent reaches an object by stepping onto it).

    Attributes:
        width: number of columns.
        height: number of rows.
        walls: wall cells (the border ring included).
        barriers: removable barrier cells.
        lock: the lock (slot) cell, part of the barrier, or None.
        key: the key cell, or None.
        objects: goal objects.
        agents: agents (BIB trials show one).
        moves: 8 (BIB: king moves, no corner cutting) or 4 (agent-evaluation grids).
        terrain: costly cells (mud, drawn brown): walkable, but an agent that steps onto one stays
            there :data:`bib.world.terrain.MUD_STAYS` more steps (:mod:`bib.world.terrain`); empty in
            every BIB task.
    """

    width: int
    height: int
    walls: frozenset[Cell] = field(default_factory=frozenset)
    barriers: frozenset[Cell] = field(default_factory=frozenset)
    lock: Cell | None = None
    key: Cell | None = None
    objects: tuple[GridObject, ...] = ()
    agents: tuple[Agent, ...] = ()
    moves: int = 8
    terrain: frozenset[Cell] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.moves not in (4, 8):
            raise ValueError(f"Layout.moves must be 4 or 8, got {self.moves}")

    @cached_property
    def blocked_locked(self) -> frozenset[Cell]:
        """Cells an agent cannot enter while the lock is closed: walls, barriers and the lock."""
        extra = {self.lock} if self.lock is not None else set()
        return frozenset(self.walls | self.barriers | extra)

    def blocked(self, unlocked: bool = False) -> frozenset[Cell]:
        """Cells an agent cannot enter (only walls once ``unlocked``)."""
        return self.walls if unlocked else self.blocked_locked

    def in_bounds(self, cell: Cell) -> bool:
        """True when ``cell`` lies on the grid."""
        return 0 <= cell[0] < self.width and 0 <= cell[1] < self.height

    def is_free(self, cell: Cell, unlocked: bool = False) -> bool:
        """True when an agent may stand on ``cell``."""
        return self.in_bounds(cell) and cell not in self.blocked(unlocked)

    def free_cells(self, unlocked: bool = False) -> list[Cell]:
        """All cells an agent may stand on, row by row."""
        return [(x, y) for y in range(self.height) for x in range(self.width) if self.is_free((x, y), unlocked)]

    def object(self, object_id: str) -> GridObject:
        """The object with ``object_id``; KeyError if absent."""
        for obj in self.objects:
            if obj.id == object_id:
                return obj
        raise KeyError(object_id)

    def goal_cell(self, goal: str) -> Cell:
        """The cell of a trial goal: an object id, or ``"key"`` for the key."""
        if goal == "key":
            if self.key is None:
                raise KeyError("key")
            return self.key
        return self.object(goal).cell

    @property
    def agent(self) -> Agent:
        """The (first) agent of the layout."""
        return self.agents[0]
