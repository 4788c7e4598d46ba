"""The sprite vocabulary: every sprite shape an episode may use, BIB's name for it, BIB's sprite sizes and colours.

This module is the one source of these facts (it imports nothing from ``bib``, so any layer may
read it, and it needs no pygame):

- the episode schema check (:func:`bib.episode.validate_trial` refuses a shape not listed here);
- the renderer (:mod:`bib.render.sprites` draws exactly these shapes; the home pad is
  :data:`HOME_COLOR`, mud cells :data:`TERRAIN_COLOR`);
- the task generators' palettes (:mod:`bib.tasks.common`);
- the learned observers' symbolic encoders (:mod:`bib.observers.encoders`: one one-hot channel
  per shape, in the order given here), and their checkpoints, which store
  :func:`checkpoint_vocabulary` and are refused when it differs from the current one;
- the BIB JSON exporter and importer (:mod:`bib.stimuli.bibjson`: icon names, radii, colours).

BIB's own sprite names come from the IRENE-derived parser (reference/bib.md section 1b) and the
public recordings: objects ``heart, clove_tree, moon, wine, double_dia, flag, capsule, vase,
curved_triangle, spoon`` (``medal`` marks the inaccessible goal), agents ``pentagon, clove,
kite``. Four of our object shapes (``star``, ``cross``, ``ring``, ``hexagon``) have no BIB
counterpart; an export gives each of them a BIB object name that the episode does not otherwise
use (:func:`bib_names_for`).

Changing the order or the set of :data:`OBJECT_SHAPES` / :data:`AGENT_SHAPES` changes the
learned observers' input channels: their checkpoints then stop loading (retrain), and generated
sets change, because the generators draw shapes by index.
"""

from __future__ import annotations

from collections.abc import Iterable

OBJECT_SHAPES: tuple[str, ...] = (
    "heart", "moon", "double_diamond", "flag", "capsule", "vase", "star", "cross", "ring", "spoon",
    "wine", "clove_tree", "curved_triangle", "hexagon", "medal",
)
"""Object (goal item) shapes, in channel order."""

AGENT_SHAPES: tuple[str, ...] = ("pentagon", "clove", "kite")
"""Agent shapes, in channel order."""

OTHER_SHAPES: tuple[str, ...] = ("key", "lock_slot", "home_pad")
"""Sprites that are not objects or agents: the key, the lock's slot and the agent's home pad."""

RESERVED_OBJECT_SHAPES: tuple[str, ...] = ("medal",)
"""Object shapes kept out of the generators' random palettes (BIB: the medal marks the inaccessible goal)."""

ITEM_SHAPES: tuple[str, ...] = tuple(s for s in OBJECT_SHAPES if s not in RESERVED_OBJECT_SHAPES)
"""Object shapes the task generators draw from (by index, in this order)."""

BIB_OBJECT_SHAPES: tuple[str, ...] = (
    "heart", "clove_tree", "moon", "wine", "double_dia", "flag", "capsule", "vase", "curved_triangle", "spoon", "medal",
)
"""BIB's object sprite names."""

BIB_AGENT_SHAPES: tuple[str, ...] = ("pentagon", "clove", "kite")
"""BIB's agent sprite names."""

BIB_NAME: dict[str, str] = {
    **{s: s for s in OBJECT_SHAPES if s in BIB_OBJECT_SHAPES},
    "double_diamond": "double_dia",
    **{s: s for s in AGENT_SHAPES},
}
"""Our shape name -> BIB's sprite name, for every shape BIB has."""

OUR_NAME: dict[str, str] = {bib: ours for ours, bib in BIB_NAME.items()}
"""BIB's sprite name -> our shape name."""

CELL_PX = 20
"""BIB's cell size in pixels (a 10 x 10 grid is 200 x 200)."""

AGENT_RADIUS_PX = 6
"""BIB's agent sprite radius at 20 px cells (the public recordings)."""

OBJECT_RADIUS_PX = 9
"""BIB's object sprite radius at 20 px cells (the public recordings)."""

HOME_RADIUS_PX = 6
"""BIB's home pad radius at 20 px cells (the public recordings: the agent's own radius)."""

HOME_COLOR: tuple[int, int, int] = (255, 105, 180)
"""BIB's home pad colour (pink)."""

BARRIER_COLOR: tuple[int, int, int] = (80, 146, 56)
"""BIB's removable (green) barrier colour."""

WALL_COLOR: tuple[int, int, int] = (0, 0, 0)
"""Wall colour (black)."""

KEY_COLOR: tuple[int, int, int] = (230, 170, 20)
"""Key colour."""

SLOT_COLOR: tuple[int, int, int] = (28, 64, 20)
"""Lock slot colour (drawn on a barrier cell)."""

OCCLUDER_COLOR: tuple[int, int, int] = (150, 150, 160)
"""Occluder colour (an opaque grey rectangle over the cells it hides, :mod:`bib.world.occluder`): unlike any
wall (black), barrier (green), free cell (white) or sprite colour."""

TERRAIN_COLOR: tuple[int, int, int] = (139, 94, 52)
"""Costly terrain (mud) colour, brown: a whole cell, drawn under the sprites (:mod:`bib.world.terrain`)."""

SHAPES: frozenset[str] = frozenset(OBJECT_SHAPES + AGENT_SHAPES + OTHER_SHAPES)
"""Every sprite name."""

for _name in OBJECT_SHAPES + AGENT_SHAPES:  # one name space: a shape is an object or an agent, never both
    assert (_name in OBJECT_SHAPES) != (_name in AGENT_SHAPES), _name
assert set(BIB_NAME.values()) <= set(BIB_OBJECT_SHAPES + BIB_AGENT_SHAPES)


def is_object_shape(name: str) -> bool:
    """True when ``name`` is an object shape of the vocabulary."""
    return name in OBJECT_SHAPES


def is_agent_shape(name: str) -> bool:
    """True when ``name`` is an agent shape of the vocabulary."""
    return name in AGENT_SHAPES


def bib_names_for(object_shapes: Iterable[str]) -> dict[str, str]:
    """BIB sprite names for the object shapes of one episode, distinct from each other.

    A shape BIB has keeps BIB's name (``double_diamond`` -> ``double_dia``). A shape BIB lacks
    (``star``, ``cross``, ``ring``, ``hexagon``) takes the first BIB item name (in
    :data:`BIB_OBJECT_SHAPES` order, ``medal`` excluded) that no shape of the episode uses, so
    objects that look different in the episode still look different in the export.

    Raises:
        ValueError: a shape that is not in the vocabulary, or more shapes than BIB has names.
    """
    shapes = list(dict.fromkeys(object_shapes))
    for s in shapes:
        if s not in OBJECT_SHAPES:
            raise ValueError(f"unknown object shape {s!r}")
    out = {s: BIB_NAME[s] for s in shapes if s in BIB_NAME}
    free = [b for b in BIB_OBJECT_SHAPES if b not in out.values() and OUR_NAME.get(b) not in RESERVED_OBJECT_SHAPES]
    for s in shapes:
        if s not in out:
            if not free:
                raise ValueError(f"more object shapes than BIB has sprite names: {shapes}")
            out[s] = free.pop(0)
    return out


def checkpoint_vocabulary() -> dict[str, list[str]]:
    """What a learned observer's checkpoint stores: the object and agent shapes, in channel order."""
    return {"objects": list(OBJECT_SHAPES), "agents": list(AGENT_SHAPES)}


LEGACY_VOCABULARY: dict[str, list[str]] = {
    "objects": ["heart", "moon", "double_diamond", "flag", "capsule", "vase", "star", "cross", "ring", "spoon",
                "wine", "clove_tree", "curved_triangle", "hexagon", "medal"],
    "agents": ["pentagon", "clove", "kite"],
}
"""The vocabulary of checkpoints written before checkpoints recorded one (frozen: a historical fact)."""


def vocabulary_difference(stored: dict[str, list[str]]) -> str:
    """A short description of how ``stored`` differs from the current vocabulary ('' when equal)."""
    current = checkpoint_vocabulary()
    parts = []
    for kind in ("objects", "agents"):
        old, new = list(stored.get(kind, [])), current[kind]
        if old == new:
            continue
        added = [s for s in new if s not in old]
        removed = [s for s in old if s not in new]
        bits = []
        if added:
            bits.append(f"added {', '.join(added)}")
        if removed:
            bits.append(f"removed {', '.join(removed)}")
        if not added and not removed:
            bits.append("reordered")
        parts.append(f"{kind}: {'; '.join(bits)}")
    return "; ".join(parts)
