"""The occluder: an opaque rectangle that hides what lies on some cells of a trial (issue 43).

AGENT's "unobserved constraints" scenario (Shu et al., ICML 2021) hides part of the familiarization scene
behind an occluder; bib's gridworld translation is a rectangle of cells drawn as one opaque grey block.

The contract, which the schema check (:func:`bib.episode.validate`) enforces for every episode:

- an occluder is a rectangle of whole cells inside the grid's border ring, given by its two inclusive
  corners ``(x0, y0)`` and ``(x1, y1)``;
- the cells under it hold NOTHING in the episode's file: no wall, barrier, lock, key, object or home.
  What the generator hid there (an obstacle, or nothing) is simply not written, so no reader of the file,
  and no view made from it (:mod:`bib.stimuli.blind`), can learn it: for planning the hidden cells read as
  free floor, which is what a viewer who cannot see them knows;
- the agent is not hidden: it is drawn over the occluder, and its path is in the file whole. Its
  detour through the occluded cells is the evidence an observer reads (the bend), and the frames and
  the file carry the same information.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from bib.world.grid import Cell


@dataclass(frozen=True)
class Occluder:
    """An opaque rectangle over the cells ``x0 <= x <= x1``, ``y0 <= y <= y1``."""

    x0: int
    y0: int
    x1: int
    y1: int

    def __post_init__(self) -> None:
        if self.x0 > self.x1 or self.y0 > self.y1:
            raise ValueError(f"occluder corners {self.corners} are not (low, high)")

    @property
    def corners(self) -> tuple[Cell, Cell]:
        """``((x0, y0), (x1, y1))``, both inclusive."""
        return (self.x0, self.y0), (self.x1, self.y1)

    @cached_property
    def cells(self) -> frozenset[Cell]:
        """Every cell under the occluder."""
        return frozenset((x, y) for x in range(self.x0, self.x1 + 1) for y in range(self.y0, self.y1 + 1))

    def __contains__(self, cell: object) -> bool:
        if not (isinstance(cell, tuple) and len(cell) == 2):
            return False
        x, y = cell
        return self.x0 <= x <= self.x1 and self.y0 <= y <= self.y1

    def inside(self, width: int, height: int) -> bool:
        """Whether the rectangle lies inside the border ring of a ``width`` x ``height`` grid."""
        return 1 <= self.x0 and 1 <= self.y0 and self.x1 <= width - 2 and self.y1 <= height - 2
