"""Trial and Episode (schema ``bib.episode/1``): dataclasses, JSON load/save, generic validation."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from pathlib import Path
from typing import Any

from bib import __version__
from bib.errors import BibInputError
from bib.guard import check_name, decode, load_json, read_bytes
from bib.io import atomic_write_text
from bib.vocabulary import is_agent_shape, is_object_shape
from bib.world.dynamics import ACTION_NAMES, AgentState, action_between, step
from bib.world.grid import Agent, Cell, GridObject, Layout
from bib.world.occluder import Occluder
from bib.world.terrain import stay_problems

SCHEMA = "bib.episode/1"
PHASES = ("familiarization", "test")
OUTCOMES = ("expected", "unexpected", "none")
EVENT_TYPES = ("pickup-key", "unlock")
GRID_MAX = 100
"""Most cells a side of an episode's grid (BIB's are 10): larger grids are refused before anything is allocated."""
SEED_END = 1 << 64
"""Seeds are integers from 0 to ``SEED_END - 1`` (what numpy's generators take; a unit seed is 63 bits)."""
_second = itemgetter(1)


@dataclass(frozen=True)
class Event:
    """Something that happens at ``path[step]``: ``pickup-key`` or ``unlock``."""

    step: int
    type: str


@dataclass(frozen=True)
class Recording:
    """What an imported trial's source recorded, kept beside the grid version so nothing is lost.

    Positions are the sprites' centres in the source's pixels, with the source's origin at the
    BOTTOM LEFT (BIB JSON: 20 px cells, centre = corner + radius).

    Attributes:
        cell_px: pixels per cell of the source.
        agent: the agent's centre at every frame.
        objects: each object's centre, in ``layout.objects`` order.
        home: the home pad's centre.
        key: the key's centre before it is picked up, or None.
        lock: the lock's centre, or None.
        pickup_frame: the frame at which the agent touched the key (None if it never did).
        unlock_frame: the frame at which the lock opened (None if it never did).
        offsets: for each cell of the trial's path, the distance (px) from the cell's centre to
            the recorded track of the agent (how far the grid path strays from the recording).
    """

    cell_px: int
    agent: tuple[tuple[float, float], ...]
    objects: tuple[tuple[float, float], ...]
    home: tuple[float, float]
    key: tuple[float, float] | None = None
    lock: tuple[float, float] | None = None
    pickup_frame: int | None = None
    unlock_frame: int | None = None
    offsets: tuple[float, ...] = ()


@dataclass(frozen=True)
class Trial:
    """One trial: the layout it shows, the agent's path (a cell per step) and its goal.

    Attributes:
        phase: ``familiarization`` or ``test``.
        layout: walls, barriers, lock, key, objects and the (single) agent.
        path: the agent's cell at every step, starting at its home.
        events: key pickup / unlock events, in step order.
        goal: the object id the path ends on, ``"key"``, or None.
        excess_cost: how much the path costs more than an optimal path (key/lock space) from the
            agent's home to the path's last cell, in cells; recorded by the controlled-set
            generator (None: not recorded, as in sets built without its options).
        recording: for a trial imported from a recording (BIB JSON), the continuous positions
            it was read from; None for generated trials.
        occluder: an opaque rectangle over some cells (:mod:`bib.world.occluder`; the cells under it hold
            nothing in the file), or None (written only when set).
    """

    phase: str
    layout: Layout
    path: tuple[Cell, ...]
    events: tuple[Event, ...] = ()
    goal: str | None = None
    excess_cost: float | None = None
    recording: Recording | None = None
    occluder: Occluder | None = None

    @property
    def agent(self) -> Agent:
        """The trial's agent."""
        return self.layout.agent

    @property
    def n_steps(self) -> int:
        """Number of moves (path length minus one)."""
        return len(self.path) - 1

    def unlock_step(self) -> int | None:
        """The step of the ``unlock`` event, if any."""
        return next((e.step for e in self.events if e.type == "unlock"), None)

    def pickup_step(self) -> int | None:
        """The step of the ``pickup-key`` event, if any."""
        return next((e.step for e in self.events if e.type == "pickup-key"), None)


@dataclass(frozen=True)
class Episode:
    """Familiarization trials then the test trial, with identifiers and provenance.

    The last four fields describe a pair of the controlled set (``docs/tasks.md``); they are
    optional in ``bib.episode/1`` and written only when set, so sets built without those options
    keep their bytes.

    Attributes:
        variant: the pair's design within its condition (``""`` for a plain BIB pair; see
            :data:`bib.tasks.variants.VARIANTS`).
        twin_id: pair id of this pair's label-flipping twin (same two test trials, another
            familiarization), or None.
        difficulty: the pair's graded difficulty (the excess cost in cells of the deviation the
            unexpected outcome shows; see :mod:`bib.tasks.difficulty`), or None.
        beta: the stimulus agent's rationality in this episode (Boltzmann policy), or None when
            the agent is the noise-free planner.
    """

    id: str
    pair_id: str | None
    task: str
    condition: str
    outcome: str
    seed: int
    width: int
    height: int
    trials: tuple[Trial, ...]
    moves: int = 8
    generator: dict[str, str] = field(default_factory=lambda: {"name": "bib", "version": __version__})
    variant: str = ""
    twin_id: str | None = None
    difficulty: float | None = None
    beta: float | None = None

    @property
    def familiarization(self) -> tuple[Trial, ...]:
        """The familiarization trials."""
        return tuple(t for t in self.trials if t.phase == "familiarization")

    @property
    def test(self) -> Trial:
        """The test trial (the last one)."""
        return self.trials[-1]

    @property
    def n_steps(self) -> int:
        """Total moves over all trials."""
        return sum(t.n_steps for t in self.trials)


# ---------------------------------------------------------------- serialisation


def _cell(c: Cell | None) -> list[int] | None:
    return None if c is None else [int(c[0]), int(c[1])]


def trial_to_dict(trial: Trial) -> dict[str, Any]:
    """A trial as its ``bib.episode/1`` JSON object."""
    lay = trial.layout
    agent = lay.agent
    return {
        "phase": trial.phase,
        "walls": sorted(_cell(c) for c in lay.walls),
        "barriers": sorted(_cell(c) for c in lay.barriers),
        **({"terrain": sorted(_cell(c) for c in lay.terrain)} if lay.terrain else {}),
        "lock": _cell(lay.lock),
        "key": _cell(lay.key),
        "objects": [
            {"id": o.id, "shape": o.shape, "color": list(o.color), "cell": _cell(o.cell)} for o in lay.objects
        ],
        "agent": {"id": agent.id, "shape": agent.shape, "color": list(agent.color), "home": _cell(agent.home)},
        "path": [_cell(c) for c in trial.path],
        "events": [{"step": e.step, "type": e.type} for e in trial.events],
        "goal": trial.goal,
        **({} if trial.excess_cost is None else {"excess_cost": trial.excess_cost}),
        **({"recording": recording_to_dict(trial.recording)} if trial.recording is not None else {}),
        **({"occluder": [list(c) for c in trial.occluder.corners]} if trial.occluder is not None else {}),
    }


def _num(v: float) -> float | int:
    """A coordinate as written: an int when whole (keeps files short and exact)."""
    return int(v) if float(v).is_integer() else float(v)


def _pt(p: tuple[float, float] | None) -> list[float | int] | None:
    return None if p is None else [_num(p[0]), _num(p[1])]


def recording_to_dict(rec: Recording) -> dict[str, Any]:
    """A :class:`Recording` as its JSON object."""
    return {
        "cell_px": rec.cell_px,
        "origin": "bottom-left",
        "agent": [_pt(p) for p in rec.agent],
        "objects": [_pt(p) for p in rec.objects],
        "home": _pt(rec.home),
        "key": _pt(rec.key),
        "lock": _pt(rec.lock),
        "pickup_frame": rec.pickup_frame,
        "unlock_frame": rec.unlock_frame,
        "offsets": [round(float(v), 2) for v in rec.offsets],
    }


def episode_to_dict(ep: Episode) -> dict[str, Any]:
    """An episode as its ``bib.episode/1`` JSON object (field order fixed)."""
    grid: dict[str, int] = {"width": ep.width, "height": ep.height}
    if ep.moves != 8:
        grid["moves"] = ep.moves
    design = {k: v for k, v in (("variant", ep.variant or None), ("twin_id", ep.twin_id),
                                ("difficulty", ep.difficulty), ("beta", ep.beta)) if v is not None}
    return {
        "schema": SCHEMA,
        "id": ep.id,
        "pair_id": ep.pair_id,
        "task": ep.task,
        "condition": ep.condition,
        "outcome": ep.outcome,
        "seed": ep.seed,
        **design,
        "generator": dict(ep.generator),
        "grid": grid,
        "trials": [trial_to_dict(t) for t in ep.trials],
    }


def dumps(ep: Episode, omit: tuple[str, ...] = ()) -> str:
    """Canonical JSON text of an episode: one trial per line, so diffs stay readable.

    The same episode always gives the same bytes. ``omit``: top-level fields left out (a blind
    episode, :mod:`bib.stimuli.blind`, omits ``pair_id``, ``outcome``, ``seed`` and ``generator``;
    they read back as None, ``none``, 0 and ``unknown``).
    """
    d = episode_to_dict(ep)
    for key in omit:
        d.pop(key, None)
    trials = d.pop("trials")
    head = json.dumps(d, separators=(", ", ": "))[:-1]
    body = ",\n  ".join(json.dumps(t, separators=(",", ":")) for t in trials)
    return f'{head}, "trials": [\n  {body}\n]}}\n'


def save_episode(ep: Episode, path: str | os.PathLike[str], durable: bool = True) -> str:
    """Write ``ep`` to ``path`` atomically; return the text written.

    ``durable=False`` skips the fsync (for bulk builds that verify files by hash on resume).
    """
    text = dumps(ep)
    atomic_write_text(path, text, durable=durable)
    return text


class _Reader:
    """Typed field access that raises BibInputError naming the file and the field path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, msg: str) -> BibInputError:
        return BibInputError(f"{self.source}: field '{where}': {msg}")

    def get(self, d: Any, key: str, where: str, kinds: type | tuple[type, ...], optional: bool = False) -> Any:
        if type(d) is dict and key in d:  # the common case: a present value of an expected type (not a bool)
            value = d[key]
            if type(value) is not bool and isinstance(value, kinds):
                return value
        if not isinstance(d, dict):
            raise self.fail(where.rsplit(".", 1)[0] or where, "expected an object")
        full = f"{where}.{key}" if where else key
        if key not in d:
            if optional:
                return None
            raise self.fail(full, "missing")
        value = d[key]
        if value is None and optional:
            return None
        if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
            raise self.fail(full, f"expected {_kind_name(kinds)}, got {json.dumps(value)}")
        if not isinstance(value, kinds):
            raise self.fail(full, f"expected {_kind_name(kinds)}, got {json.dumps(value)[:40]}")
        return value

    def cell(self, value: Any, where: str) -> Cell:
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        ):
            raise self.fail(where, f"expected a cell [x, y] of two integers, got {json.dumps(value)[:40]}")
        return (value[0], value[1])

    def cells(self, value: Any, where: str) -> list[Cell]:
        if not isinstance(value, list):
            raise self.fail(where, "expected a list of cells")
        # The common case checked inline, in one loop (a path has dozens of cells; loading is part of every
        # score): JSON gives exact ints (``type(x) is int`` also refuses bools); anything else goes through
        # :meth:`cell`, which names the first bad entry.
        out = []
        for v in value:
            if type(v) is list and len(v) == 2:
                x, y = v
                if type(x) is int and type(y) is int:
                    out.append((x, y))
                    continue
            return [self.cell(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return out

    def color(self, value: Any, where: str) -> tuple[int, int, int]:
        if not (
            isinstance(value, list)
            and len(value) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in value)
        ):
            raise self.fail(where, f"expected [R, G, B] integers 0-255, got {json.dumps(value)[:40]}")
        return (value[0], value[1], value[2])


def _kind_name(kinds: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", list: "a list", dict: "an object", float: "a number"}
    ks = kinds if isinstance(kinds, tuple) else (kinds,)
    return " or ".join(names.get(k, k.__name__) for k in ks)


def trial_from_dict(d: Any, width: int, height: int, moves: int, r: _Reader, where: str) -> Trial:
    """Parse one trial object (``where`` names it in errors, e.g. ``trials[3]``)."""
    phase = r.get(d, "phase", where, str)
    if phase not in PHASES:
        raise r.fail(f"{where}.phase", f"expected one of {', '.join(PHASES)}, got {phase!r}")
    walls = r.cells(r.get(d, "walls", where, list), f"{where}.walls")
    barriers = r.cells(r.get(d, "barriers", where, list, optional=True) or [], f"{where}.barriers")
    terrain = r.cells(r.get(d, "terrain", where, list, optional=True) or [], f"{where}.terrain")
    lock_raw = r.get(d, "lock", where, list, optional=True)
    key_raw = r.get(d, "key", where, list, optional=True)
    lock = None if lock_raw is None else r.cell(lock_raw, f"{where}.lock")
    key = None if key_raw is None else r.cell(key_raw, f"{where}.key")
    objects = []
    for i, o in enumerate(r.get(d, "objects", where, list)):
        w = f"{where}.objects[{i}]"
        objects.append(
            GridObject(
                id=r.get(o, "id", w, str),
                shape=r.get(o, "shape", w, str),
                color=r.color(r.get(o, "color", w, list), f"{w}.color"),
                cell=r.cell(r.get(o, "cell", w, list), f"{w}.cell"),
            )
        )
    a = r.get(d, "agent", where, dict)
    w = f"{where}.agent"
    agent = Agent(
        id=r.get(a, "id", w, str),
        shape=r.get(a, "shape", w, str),
        color=r.color(r.get(a, "color", w, list), f"{w}.color"),
        home=r.cell(r.get(a, "home", w, list), f"{w}.home"),
    )
    path = r.cells(r.get(d, "path", where, list), f"{where}.path")
    if not path:
        raise r.fail(f"{where}.path", "empty")
    events = []
    for i, e in enumerate(r.get(d, "events", where, list, optional=True) or []):
        w = f"{where}.events[{i}]"
        etype = r.get(e, "type", w, str)
        if etype not in EVENT_TYPES:
            raise r.fail(f"{w}.type", f"expected one of {', '.join(EVENT_TYPES)}, got {etype!r}")
        events.append(Event(step=r.get(e, "step", w, int), type=etype))
    goal = r.get(d, "goal", where, str, optional=True)
    excess = r.get(d, "excess_cost", where, (int, float), optional=True)
    if excess is not None and not (math.isfinite(excess) and excess >= 0):
        raise r.fail(f"{where}.excess_cost", f"expected a finite number >= 0, got {excess!r}")
    rec_raw = r.get(d, "recording", where, dict, optional=True)
    recording = None if rec_raw is None else _recording_from_dict(rec_raw, r, f"{where}.recording")
    occ_raw = r.get(d, "occluder", where, list, optional=True)
    occluder = None if occ_raw is None else _occluder_from_list(occ_raw, width, height, r, f"{where}.occluder")
    for name, cells in (("walls", walls), ("barriers", barriers), ("terrain", terrain), ("path", path)):
        if cells and not (min(cells)[0] >= 0 and max(cells)[0] < width  # x: the tuples' order; y: a C-level map
                          and min(map(_second, cells)) >= 0 and max(map(_second, cells)) < height):
            for i, c in enumerate(cells):  # name the first cell outside
                if not (0 <= c[0] < width and 0 <= c[1] < height):
                    raise r.fail(f"{where}.{name}[{i}]", f"cell {list(c)} is outside the {width} x {height} grid")
    layout = Layout(
        width=width,
        height=height,
        walls=frozenset(walls),
        barriers=frozenset(barriers),
        lock=lock,
        key=key,
        objects=tuple(objects),
        agents=(agent,),
        moves=moves,
        terrain=frozenset(terrain),
    )
    return Trial(phase=phase, layout=layout, path=tuple(path), events=tuple(events), goal=goal,
                 excess_cost=None if excess is None else float(excess), recording=recording, occluder=occluder)


def _occluder_from_list(value: list[Any], width: int, height: int, r: _Reader, where: str) -> Occluder:
    """An occluder's ``[[x0, y0], [x1, y1]]`` (inclusive corners, low then high, inside the border ring)."""
    if len(value) != 2:
        raise r.fail(where, f"expected two corners [[x0, y0], [x1, y1]], got {json.dumps(value)[:40]}")
    (x0, y0), (x1, y1) = r.cell(value[0], f"{where}[0]"), r.cell(value[1], f"{where}[1]")
    if x0 > x1 or y0 > y1:
        raise r.fail(where, f"corners {json.dumps(value)} are not [low, high]")
    occ = Occluder(x0, y0, x1, y1)
    if not occ.inside(width, height):
        raise r.fail(where, f"rectangle {json.dumps(value)} is not inside the border ring of the {width} x {height} grid")
    return occ


def _recording_from_dict(d: dict[str, Any], r: _Reader, where: str) -> Recording:
    def point(v: Any, w: str) -> tuple[float, float]:
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(u, int | float) and not isinstance(u, bool) for u in v)):
            raise r.fail(w, f"expected a point [x, y], got {json.dumps(v)[:40]}")
        return (v[0], v[1])

    def points(key: str) -> tuple[tuple[float, float], ...]:
        return tuple(point(v, f"{where}.{key}[{i}]") for i, v in enumerate(r.get(d, key, where, list)))

    def maybe(key: str) -> tuple[float, float] | None:
        v = r.get(d, key, where, list, optional=True)
        return None if v is None else point(v, f"{where}.{key}")

    offsets = r.get(d, "offsets", where, list, optional=True) or []
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in offsets):
        raise r.fail(f"{where}.offsets", "expected a list of numbers")
    return Recording(
        cell_px=r.get(d, "cell_px", where, int),
        agent=points("agent"),
        objects=points("objects"),
        home=point(r.get(d, "home", where, list), f"{where}.home"),
        key=maybe("key"),
        lock=maybe("lock"),
        pickup_frame=r.get(d, "pickup_frame", where, int, optional=True),
        unlock_frame=r.get(d, "unlock_frame", where, int, optional=True),
        offsets=tuple(offsets),
    )


def episode_from_dict(d: Any, source: str = "<episode>", trial_texts: list[str] | None = None) -> Episode:
    """Parse a ``bib.episode/1`` object; errors name ``source`` and the field.

    ``trial_texts`` (from :func:`loads`): the JSON text of each trial, under which its parsed trial is
    remembered (:func:`_trial_from_text`); ``d["trials"]`` then holds None for a trial read before.
    """
    r = _Reader(source)
    if not isinstance(d, dict):
        raise BibInputError(f"{source}: expected a JSON object at the top level")
    schema = r.get(d, "schema", "", str)
    if schema != SCHEMA:
        raise r.fail("schema", f"expected {SCHEMA!r}, got {schema!r}")
    grid = r.get(d, "grid", "", dict)
    width = r.get(grid, "width", "grid", int)
    height = r.get(grid, "height", "grid", int)
    moves = r.get(grid, "moves", "grid", int, optional=True) or 8
    if not (1 <= width <= GRID_MAX and 1 <= height <= GRID_MAX):
        raise r.fail("grid", f"size must be 1 to {GRID_MAX} cells a side, got {width} x {height}")
    if moves not in (4, 8):
        raise r.fail("grid.moves", f"expected 4 or 8, got {moves}")
    outcome = r.get(d, "outcome", "", str, optional=True) or "none"
    if outcome not in OUTCOMES:
        raise r.fail("outcome", f"expected one of {', '.join(OUTCOMES)}, got {outcome!r}")
    trials_raw = r.get(d, "trials", "", list)
    if not trials_raw:
        raise r.fail("trials", "empty")
    if trial_texts is None:
        trials = tuple(trial_from_dict(t, width, height, moves, r, f"trials[{i}]") for i, t in enumerate(trials_raw))
    else:
        trials = tuple(_trial_from_text(text, t, width, height, moves, r, f"trials[{i}]")
                       for i, (text, t) in enumerate(zip(trial_texts, trials_raw)))
    generator = r.get(d, "generator", "", dict, optional=True) or {"name": "unknown", "version": "unknown"}
    difficulty = r.get(d, "difficulty", "", (int, float), optional=True)
    beta = r.get(d, "beta", "", (int, float), optional=True)
    if difficulty is not None and not math.isfinite(difficulty):
        raise r.fail("difficulty", f"expected a finite number, got {difficulty!r}")
    if beta is not None and not (math.isfinite(beta) and beta > 0):
        raise r.fail("beta", f"expected a finite number > 0, got {beta!r}")
    seed = r.get(d, "seed", "", int, optional=True) or 0
    if not 0 <= seed < SEED_END:
        shown = seed if abs(seed) < 10**30 else f"an integer of {len(str(abs(seed)))} digits"
        raise r.fail("seed", f"expected an integer from 0 to 2**64 - 1, got {shown}")
    pair_id = r.get(d, "pair_id", "", str, optional=True)
    twin_id = r.get(d, "twin_id", "", str, optional=True)
    return Episode(
        id=check_name(r.get(d, "id", "", str), f"{source}: field 'id'"),
        pair_id=pair_id if pair_id is None else check_name(pair_id, f"{source}: field 'pair_id'"),
        task=r.get(d, "task", "", str),
        condition=r.get(d, "condition", "", str),
        outcome=outcome,
        seed=seed,
        width=width,
        height=height,
        trials=trials,
        moves=moves,
        generator={str(k): str(v) for k, v in generator.items()},
        variant=r.get(d, "variant", "", str, optional=True) or "",
        twin_id=twin_id if not twin_id else check_name(twin_id, f"{source}: field 'twin_id'"),
        difficulty=None if difficulty is None else float(difficulty),
        beta=None if beta is None else float(beta),
    )


def loads(text: str, source: str = "<episode>") -> Episode:
    """Parse episode JSON text."""
    try:
        split = _split_trials(text)
    except RecursionError:
        split = None  # read whole below, with load_json's message
    if split is not None:
        return episode_from_dict(split[0], source, split[1])
    return episode_from_dict(load_json(text, source), source)


_TRIALS_OPEN, _TRIALS_SEP, _TRIALS_CLOSE = '"trials": [\n  ', ",\n  ", "\n]}"
"""How :func:`dumps` lays out the trials: one per line, last in the object."""
_TRIAL_TEXTS: dict[str, dict[tuple[int, int, int], Trial]] = {}
"""Trial JSON text -> (grid width, height, moves) -> the trial parsed from it (the most recent texts)."""
_TRIAL_TEXTS_MAX = 64
"""Texts remembered: a pair's two files are read one after the other, so a few episodes' trials are enough
(512 held about 20 MB more at the peak of a scoring process, for no more trials found)."""


def _split_trials(text: str) -> tuple[dict[str, Any], list[str]] | None:
    """``(document, trial texts)`` of an episode laid out as :func:`dumps` writes it, else None.

    The document is what ``json.loads(text)`` gives, except that a trial whose text was read before is
    None (:func:`_trial_from_text` has it). The text splits there only when the head (everything before
    the trials, closed) parses with ``trials`` as its last key and every trial text not read before parses
    alone: then they are exactly the array's elements (JSON strings hold no raw newline). Anything else
    (another layout, malformed JSON) returns None and is read whole, with the usual errors.
    """
    start, end = text.find(_TRIALS_OPEN), text.rfind(_TRIALS_CLOSE)
    if start < 0 or end < start + len(_TRIALS_OPEN) or text[end + len(_TRIALS_CLOSE) :].strip():
        return None
    try:
        d = json.loads(text[:start] + '"trials": []}')
    except json.JSONDecodeError:
        return None
    if not isinstance(d, dict) or next(reversed(d), None) != "trials" or d["trials"] != []:
        return None
    texts = text[start + len(_TRIALS_OPEN) : end].split(_TRIALS_SEP)
    trials = []
    for t in texts:
        if t in _TRIAL_TEXTS:  # parsed before, so valid JSON
            trials.append(None)
            continue
        try:
            trials.append(json.loads(t))
        except json.JSONDecodeError:
            return None
    d["trials"] = trials
    return d, texts


def _trial_from_text(text: str, d: Any, width: int, height: int, moves: int, r: _Reader, where: str) -> Trial:
    """:func:`trial_from_dict` of the trial whose JSON text is ``text`` (``d`` its parsed object, or None
    when that text was read before), once per text and grid: a pair's two episode files hold the same
    familiarization trials. Only trials that parsed are remembered, so every error is raised as before."""
    known = _TRIAL_TEXTS.get(text)
    grid = (width, height, moves)
    if known is not None and grid in known:
        return known[grid]
    trial = trial_from_dict(json.loads(text) if d is None else d, width, height, moves, r, where)
    if known is None:
        while len(_TRIAL_TEXTS) >= _TRIAL_TEXTS_MAX:
            del _TRIAL_TEXTS[next(iter(_TRIAL_TEXTS))]
        known = _TRIAL_TEXTS[text] = {}
    known[grid] = trial
    return trial


EPISODE_MAX = 16 << 20
"""Largest episode file read (bytes): a BIB episode is tens of kB; a file of hundreds of MB is refused unread."""


def load_episode(path: str | os.PathLike[str]) -> Episode:
    """Read an episode file (a regular file of at most :data:`EPISODE_MAX` bytes, UTF-8); BibInputError
    names the file and field on any problem."""
    p = Path(path)
    return loads(decode(read_bytes(p, EPISODE_MAX), p), str(p))


# ---------------------------------------------------------------- validation


@dataclass(frozen=True)
class Problem:
    """A rule an episode breaks, located as precisely as possible."""

    episode: str
    message: str
    trial: int | None = None
    step: int | None = None
    cell: Cell | None = None

    def __str__(self) -> str:
        where = [f"episode {self.episode}"]
        if self.trial is not None:
            where.append(f"trial {self.trial}")
        if self.step is not None:
            where.append(f"step {self.step}")
        if self.cell is not None:
            where.append(f"cell {list(self.cell)}")
        return f"{', '.join(where)}: {self.message}"


def validate_trial(trial: Trial, episode_id: str = "?", index: int = 0) -> list[Problem]:
    """Generic rules of one trial: shapes of :mod:`bib.vocabulary`, entities on free cells, legal moves,
    events, path ends on its goal."""
    try:
        found = _trial_problems_cached(trial)
    except TypeError:  # unhashable content (not from a file): checked directly
        found = _trial_problems(trial)
    return [Problem(episode_id, msg, index, step, cell) for msg, step, cell in found]


@lru_cache(maxsize=64)
def _trial_problems_cached(trial: Trial) -> tuple[tuple[str, int | None, Cell | None], ...]:
    """:func:`_trial_problems` once per distinct trial: a pair's two episodes show the same familiarization
    trials, read and checked again from each file (the checks depend on nothing but the trial)."""
    return tuple(_trial_problems(trial))


def _trial_problems(trial: Trial) -> list[tuple[str, int | None, Cell | None]]:
    """What :func:`validate_trial` finds, as ``(message, step, cell)``."""
    lay = trial.layout

    def problem(msg: str, step: int | None = None, cell: Cell | None = None) -> tuple[str, int | None, Cell | None]:
        return (msg, step, cell)

    out: list[tuple[str, int | None, Cell | None]] = []
    for obj in lay.objects:
        if not is_object_shape(obj.shape):
            out.append(problem(f"object {obj.id} has shape {obj.shape!r}, not an object shape of bib.vocabulary", cell=obj.cell))
        if obj.cell in lay.walls or obj.cell in lay.barriers or obj.cell == lay.lock:
            out.append(problem(f"object {obj.id} sits on a wall, barrier or lock", cell=obj.cell))
    if len({o.id for o in lay.objects}) != len(lay.objects):
        out.append(problem("duplicate object ids"))
    if lay.key is not None and lay.key in lay.blocked():
        out.append(problem("the key sits on a wall, barrier or lock", cell=lay.key))
    if lay.lock is not None and lay.lock in lay.walls:
        out.append(problem("the lock sits on a wall", cell=lay.lock))
    out += _terrain_placement(lay)
    home = lay.agent.home
    if not is_agent_shape(lay.agent.shape):
        out.append(problem(f"agent {lay.agent.id} has shape {lay.agent.shape!r}, not an agent shape of bib.vocabulary"))
    if trial.path[0] != home:
        out.append(problem(f"path starts at {list(trial.path[0])}, not at the agent's home", 0, trial.path[0]))
    if home in lay.blocked():
        out.append(problem("the agent's home is not free", 0, home))
    if trial.occluder is not None:
        out += _occluded_problems(trial.occluder, lay)
    if out:
        return out
    state = AgentState(home)
    expected_events: list[Event] = []
    for i, (a, b) in enumerate(zip(trial.path, trial.path[1:]), start=1):
        action = action_between(a, b)
        if action is None:
            return [problem(f"jump from {list(a)} to {list(b)} (cells are not adjacent)", i, b)]
        try:
            state, events = step(lay, state, action)  # checks the move (move_legal) once
        except ValueError:
            what = "a wall or barrier" if not lay.is_free(b, state.unlocked) else "the corner of a wall or barrier"
            return [problem(f"move {ACTION_NAMES[action]} from {list(a)} crosses {what}", i, b)]
        expected_events += [Event(i, e) for e in events]
    if lay.terrain:
        out += [problem(msg, i, c) for msg, i, c in stay_problems(lay, trial.path)]
    if tuple(expected_events) != trial.events:
        got = [(e.step, e.type) for e in trial.events]
        want = [(e.step, e.type) for e in expected_events]
        out.append(problem(f"events {got} do not match what the path does {want}"))
    if trial.goal is not None:
        try:
            goal_cell = lay.goal_cell(trial.goal)
        except KeyError:
            return out + [problem(f"goal {trial.goal!r} names no object in the trial")]
        if trial.path[-1] != goal_cell:
            out.append(problem(f"path ends at {list(trial.path[-1])}, not on its goal {trial.goal!r}",
                               trial.n_steps, trial.path[-1]))
    return out


def _occluded_problems(occ: Occluder, lay: Layout) -> list[tuple[str, int | None, Cell | None]]:
    """An occluded cell must hold nothing in the file (:mod:`bib.world.occluder`): what it hides is never written."""
    if not occ.inside(lay.width, lay.height):
        return [(f"the occluder {[list(c) for c in occ.corners]} is not inside the border ring", None, None)]
    things = [("wall", c) for c in lay.walls] + [("barrier", c) for c in lay.barriers]
    things += [(name, c) for name, c in (("lock", lay.lock), ("key", lay.key), ("home", lay.agent.home)) if c is not None]
    things += [(f"object {o.id}", o.cell) for o in lay.objects]
    return [(f"the occluder hides a {name}: an occluded cell must hold nothing in the file", None, c)
            for name, c in sorted(things, key=lambda t: (t[1], t[0])) if c in occ]


def _terrain_placement(lay: Layout) -> list[tuple[str, int | None, Cell | None]]:
    """Where mud may lie: on free cells, under no object and not on the home; never beside a key or lock
    (terrain planning, :mod:`bib.world.terrain`, has no key/lock states)."""
    if not lay.terrain:
        return []
    out: list[tuple[str, int | None, Cell | None]] = []
    for c in sorted(lay.terrain):
        if c in lay.walls or c in lay.barriers:
            out.append(("mud (terrain) sits on a wall or barrier", None, c))
        elif c in {o.cell for o in lay.objects} or c == lay.agent.home:
            out.append(("mud (terrain) sits under an object or on the agent's home", None, c))
    if lay.key is not None or lay.lock is not None:
        out.append(("mud (terrain) with a key or lock: terrain layouts have neither", None, None))
    return out


def validate(ep: Episode) -> list[Problem]:
    """Generic rules of ``bib.episode/1`` (phases in order, every trial valid); empty when valid.

    Condition-specific rules are added by :func:`bib.tasks.validate_episode`.
    """
    out: list[Problem] = []
    phases = [t.phase for t in ep.trials]
    if phases[-1] != "test" or phases.count("test") != 1:
        out.append(Problem(ep.id, "expected familiarization trials followed by exactly one test trial"))
    if ep.outcome not in OUTCOMES:
        out.append(Problem(ep.id, f"unknown outcome {ep.outcome!r}"))
    for i, trial in enumerate(ep.trials):
        if (trial.layout.width, trial.layout.height) != (ep.width, ep.height):
            out.append(Problem(ep.id, "trial grid size differs from the episode's", i))
        out += validate_trial(trial, ep.id, i)
    return out
