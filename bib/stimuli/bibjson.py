"""The original BIB per-frame JSON format: export our episodes to it, import real BIB recordings from it.

Format (docs/bib-json.md; reference/bib.md section 1b): an episode file is a list of 9 trials, each
a list of frame dicts with ``size`` ([w, h] px), ``walls`` and ``fuse_walls`` (rects
``[[x, y], [w, h]]``), ``agent`` and ``home`` (``[[x, y], r, "dir/icon.png", [R, G, B]]``, centre
``(x + r, y + r)``), ``objects`` (a list of such sprites) and the key and lock (lists of 0 or 1
sprite). Pixels have the origin at the BOTTOM LEFT and 20 px cells, so cell ``(cx, cy)`` (``cy``
counted from the top, as in ``bib.episode/1``) spans ``[20 cx, 20 cx + 20) x [20 (H - 1 - cy), ...)``.

Key/lock naming (:data:`NAMINGS`): BIB v1.1 (``bib_evaluation_v1.1``, read by SolvingBIB.jl's
``src/conversion.jl``; the public recordings) calls the key ``pin`` and the lock ``key``; the older
release (the MCS converter's "old" names) calls them ``key`` and ``lock``.

Export writes v1.1 naming by default, sprites under BIB's vocabulary (:mod:`bib.vocabulary`: BIB's
names, radii 6 for agents and 9 for objects, the pink home pad), the agent at every frame exactly
where :func:`bib.render.frames.trial_frames` draws it, and holds the first frame 30 frames and the
last 85 (bib-baselines skips the first 30 and last 83). A trial imported from a recording is
written back from its recording (positions as read).

Import reads recordings as they are: positions are continuous, the agent moves in straight lines at
any angle and stops touching its targets (:mod:`bib.stimuli.trajectory` recovers the 8-connected
moves); the goal is the nearest object within one cell of the agent's final position. It tolerates
duplicate walls, off-grid ``fuse_walls`` during the fade, fields and frames wrapped in extra lists,
test-trial frames spliced in at the top level, and either naming.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bib import __version__
from bib.episode import GRID_MAX, Episode, Event, Recording, Trial, dumps
from bib.errors import BibInputError
from bib.guard import INFLATED_MAX, gunzip, output_path, read_bytes
from bib.io import OutputFolder, atomic_write_text, check_space, csv_dict_writer, csv_writer
from bib.parallel import map_ordered
from bib.progress import track
from bib.registry import Registry
from bib.render.frames import RenderSettings, trial_state_arrays
from bib.stimuli.complete import mark_complete
from bib.stimuli.sets import find_episodes
from bib.stimuli.trajectory import STRAIGHT_TOL_PX, PathBuilder, distances_to_track, simplify
from bib.tasks import REGISTRY, bib_folders, unit_id
from bib.tasks.unobserved import OCCLUDED_TASKS
from bib.vocabulary import (
    AGENT_RADIUS_PX,
    BIB_NAME,
    CELL_PX,
    HOME_COLOR,
    HOME_RADIUS_PX,
    KEY_COLOR,
    OBJECT_RADIUS_PX,
    OUR_NAME,
    SLOT_COLOR,
    bib_names_for,
)
from bib.world.dynamics import adjacent_to_lock
from bib.world.grid import Agent, Cell, GridObject, Layout

EXPORT_SETTINGS = RenderSettings(cell_px=CELL_PX, fps=25, pause_start=1.2, pause_end=3.4, gap=0.0)
"""Timing of exported frames (and videos): BIB's 20 px / 25 fps; 30 still frames first, 85 last."""

N_TRIALS = 9
"""Trials of a BIB episode (8 familiarization + 1 test; bib-baselines' ``num_trials``)."""

NAMINGS: Registry[tuple[str, str]] = Registry("naming")
"""Naming -> (key field, lock field) of BIB JSON (a :class:`bib.registry.Registry`)."""
NAMINGS.register("v1.1", ("pin", "key"))
NAMINGS.register("old", ("key", "lock"))
"""Naming -> (field of the key, field of the lock)."""

DEFAULT_NAMING = "v1.1"

EVALUATION_FOLDERS = bib_folders("evaluation")
"""Evaluation condition id -> BIB v1.1 folder name (from the task registry)."""

BACKGROUND_FOLDERS = bib_folders("background")
"""Background task id -> bib-baselines' training folder name (two collide with evaluation names)."""

HOME_ICON = "./shapes/home.png"
KEY_ICON = "./shapes/triangle0.png"
LOCK_ICON = "./shapes/triangle_slot0.png"
LOCK_RADIUS_PX = CELL_PX // 2
"""The lock fills its cell (SolvingBIB.jl reads a lock's corner as its cell, like a wall's)."""

Json = Any


def object_icon(bib_name: str) -> str:
    """Icon path of an object sprite (the public recordings' folder)."""
    return f"./shapes/train/objects/{bib_name}.png"


def agent_icon(bib_name: str) -> str:
    """Icon path of an agent sprite (the public recordings' folder)."""
    return f"./shapes/train/agents/{bib_name}.png"


def icon_name(icon: str) -> str:
    """Sprite name of an icon path: ``"./shapes/train/objects/heart.png"`` -> ``"heart"``."""
    base = icon.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base else base


def folder_of(task: str) -> str:
    """BIB folder name of one of our task ids."""
    name = EVALUATION_FOLDERS.get(task) or BACKGROUND_FOLDERS.get(task)
    if name is None and task in REGISTRY:
        raise BibInputError(f"task {task!r} has no BIB JSON form (BIB has no such condition, and its format no costly "
                            "terrain); export the other tasks' episodes from a set without it")
    if name is None:
        raise BibInputError(f"task {task!r} has no BIB folder name (known: {', '.join(sorted({**EVALUATION_FOLDERS, **BACKGROUND_FOLDERS}))})")
    return name


def _check_naming(naming: str, auto: bool = False) -> None:
    """Refuse an unknown ``naming`` (``auto`` also allowed when reading)."""
    if not (auto and naming == "auto"):
        NAMINGS.lookup(naming)


# ---------------------------------------------------------------- export


def _centre_px(x: float, y: float, height: int) -> tuple[float, float]:
    """Pixel centre (origin bottom left) of a point at cell coordinates ``(x, y)`` (y from the top)."""
    return (x + 0.5) * CELL_PX, (height - 0.5 - y) * CELL_PX


def _sprite(centre: tuple[float, float], r: int, icon: str, color: Sequence[int]) -> list[Json]:
    return [[int(round(centre[0] - r)), int(round(centre[1] - r))], r, icon, [int(c) for c in color]]


def _rect(cell: Cell, height: int) -> list[list[int]]:
    return [[cell[0] * CELL_PX, (height - 1 - cell[1]) * CELL_PX], [CELL_PX, CELL_PX]]


def _frame(size, walls, barriers, key, lock, objects, home, agent, naming: str) -> dict[str, Json]:
    key_field, lock_field = NAMINGS[naming]
    if naming == "v1.1":  # the public recordings' field order
        return {"size": size, "walls": walls, "fuse_walls": barriers, key_field: key, lock_field: lock,
                "objects": objects, "blocking": [], "home": home, "agent": agent}
    return {"size": size, "walls": walls, "fuse_walls": barriers, key_field: key, lock_field: lock,
            "objects": objects, "home": home, "agent": agent}


def trial_to_bib(trial: Trial, settings: RenderSettings = EXPORT_SETTINGS, naming: str = DEFAULT_NAMING,
                 names: dict[str, str] | None = None) -> list[dict[str, Json]]:
    """A trial as BIB frame dicts (from its recording when it has one).

    ``names`` maps our object shapes to BIB sprite names (default :func:`bib.vocabulary.bib_names_for`
    over this trial's objects).
    """
    _check_naming(naming)
    if trial.occluder is not None:
        raise BibInputError(f"a {trial.phase} trial shows an occluder, which BIB JSON cannot hold (it has walls, "
                            "barriers, a key and a lock, nothing that hides cells); such sets are not exported")
    lay = trial.layout
    h = lay.height
    agent = lay.agent
    names = names or bib_names_for(o.shape for o in lay.objects)
    rec = trial.recording
    size = [lay.width * CELL_PX, h * CELL_PX]
    walls = [_rect(c, h) for c in sorted(lay.walls)]
    barriers = [_rect(c, h) for c in sorted(lay.barriers)]
    a_icon = agent_icon(BIB_NAME.get(agent.shape, agent.shape))

    def centre(cell: Cell, recorded: tuple[float, float] | None) -> tuple[float, float]:
        return recorded if recorded is not None else _centre_px(cell[0], cell[1], h)

    objects = [
        _sprite(centre(o.cell, rec.objects[i] if rec else None), OBJECT_RADIUS_PX, object_icon(names[o.shape]), o.color)
        for i, o in enumerate(lay.objects)
    ]
    home = _sprite(centre(agent.home, rec.home if rec else None), HOME_RADIUS_PX, HOME_ICON, HOME_COLOR)
    lock = [_sprite(centre(lay.lock, rec.lock if rec else None), LOCK_RADIUS_PX, LOCK_ICON, SLOT_COLOR)] if lay.lock is not None else []
    key_rest = [_sprite(centre(lay.key, rec.key if rec else None), OBJECT_RADIUS_PX, KEY_ICON, KEY_COLOR)] if lay.key is not None else []
    frames = []
    if rec is not None:
        for k, a in enumerate(rec.agent):
            opened = rec.unlock_frame is not None and k > rec.unlock_frame
            if not key_rest or opened:
                key: list[Json] = []
            elif rec.pickup_frame is None or k <= rec.pickup_frame:
                key = key_rest
            else:
                key = [_sprite(a, OBJECT_RADIUS_PX, KEY_ICON, KEY_COLOR)]  # carried
            frames.append(_frame(size, walls, [] if opened else barriers, key, [] if opened else lock, objects, home,
                                 _sprite(a, AGENT_RADIUS_PX, a_icon, agent.color), naming))
        return frames
    st = trial_state_arrays(trial, settings)  # the renderer's timing: one state per frame of trial_frames
    for k in st.index:
        pos = _centre_px(float(st.x[k]), float(st.y[k]), h)
        if not key_rest or not st.before_pickup[k] and st.fade[k] < 1.0:
            key = []
        elif st.before_pickup[k]:
            key = key_rest
        else:
            key = [_sprite(pos, OBJECT_RADIUS_PX, KEY_ICON, KEY_COLOR)]  # carried
        present = st.fade[k] > 0.0
        frames.append(_frame(size, walls, barriers if present else [], key, lock if present else [], objects, home,
                             _sprite(pos, AGENT_RADIUS_PX, a_icon, agent.color), naming))
    return frames


def episode_bib_names(ep: Episode) -> dict[str, str]:
    """BIB sprite names for the object shapes of a whole episode (one name per shape, all trials)."""
    return bib_names_for(o.shape for t in ep.trials for o in t.layout.objects)


def episode_to_bib(ep: Episode, settings: RenderSettings = EXPORT_SETTINGS, naming: str = DEFAULT_NAMING) -> list[list[dict[str, Json]]]:
    """An episode as BIB's list of trials of frame dicts.

    Raises:
        BibInputError: the episode shows costly terrain (mud), which BIB JSON cannot hold.
    """
    if any(t.layout.terrain for t in ep.trials):
        raise BibInputError(f"episode {ep.id}: BIB JSON has no costly terrain (mud); it cannot be exported")
    names = episode_bib_names(ep)
    return [trial_to_bib(t, settings, naming, names) for t in ep.trials]


@dataclass(frozen=True)
class ExportJob:
    """One episode to export (picklable)."""

    source: str
    target: str
    video: bool
    settings: RenderSettings
    naming: str


def _export_one(job: ExportJob) -> str:
    from bib.stimuli.check import load_checked

    ep = load_checked(job.source)
    frames = episode_to_bib(ep, job.settings, job.naming)
    atomic_write_text(job.target, json.dumps(frames, separators=(",", ":")), durable=False)
    if job.video:
        from bib.render.video import render_episode

        render_episode(ep, Path(job.target).with_suffix(".mp4"), job.settings, "h264")
    return ";".join(f"{ours}>{bib}" for ours, bib in episode_bib_names(ep).items() if BIB_NAME.get(ours) != bib)


EXPORT_BYTES = 1_400_000
"""About the bytes of one episode's BIB JSON (one record per frame; measured: 1.40-1.44 MB for
single-object episodes of about 1,100 frames): what `bib export` checks free space against."""

EXPORT_INDEX = "export.csv"
EXPORT_COLUMNS = ["file", "episode_id", "task", "outcome", "shapes"]


def export_bib_json(
    directory: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    video: bool = False,
    settings: RenderSettings = EXPORT_SETTINGS,
    workers: int = 1,
    naming: str = DEFAULT_NAMING,
    force: bool = False,
) -> list[dict[str, str]]:
    """Export every episode of a set (read by :func:`bib.stimuli.sets.find_episodes`) to BIB JSON.

    Writes ``out/<folder>/<index:06d>{e,u}.json`` (and ``.mp4`` with ``video``) plus
    ``out/export.csv`` (file, episode id, task, outcome, and ``shapes``: our shapes that BIB lacks
    and the BIB name each was written under, ``star>clove_tree;...``); returns those rows. The
    folder is built beside ``out`` and renamed at the end.

    Raises:
        BibInputError: two exported tasks share a BIB folder name (export them separately), a pair
            lacks one of its episodes, the settings' cells are not 20 px, or ``out`` holds other files.
    """
    _check_naming(naming)
    if settings.cell_px != CELL_PX or settings.canvas is not None:
        raise BibInputError(f"BIB JSON needs {CELL_PX} px cells and no canvas")
    src = Path(directory)
    by_task: dict[str, dict[str, dict[str, tuple[Path, str]]]] = {}
    for r in find_episodes(src).refs:
        by_task.setdefault(r.task, {}).setdefault(r.pair_id or r.id, {})[r.outcome] = (r.path, r.id)
    folders: dict[str, str] = {}
    for task in sorted(by_task):
        if task in OCCLUDED_TASKS:
            raise BibInputError(f"{src}: task {task!r} shows an occluder, which BIB JSON cannot hold (it has walls, "
                                "barriers, a key and a lock, nothing that hides cells); export the other tasks of the "
                                "set from a set without it")
        name = folder_of(task)
        if name in folders:
            raise BibInputError(f"tasks {folders[name]!r} and {task!r} both export to folder {name!r}; export them separately")
        folders[name] = task
    plan: list[tuple[str, Path, str, str, str]] = []
    for name, task in sorted(folders.items()):
        for i, unit in enumerate(sorted(by_task[task])):
            members = by_task[task][unit]
            wanted = ("expected", "unexpected") if "none" not in members else ("none",)
            for outcome in wanted:
                if outcome not in members:
                    raise BibInputError(f"{src}: pair {unit} has no {outcome} episode")
                path, episode_id = members[outcome]
                plan.append((f"{name}/{i:06d}{'u' if outcome == 'unexpected' else 'e'}.json", path, episode_id, task, outcome))
    job = {"command": "export", "set": str(src.resolve()), "format": "bib-json", "naming": naming, "video": video}
    folder = OutputFolder(out, job, force=force)
    from bib.stimuli.build import episode_bytes

    per_episode = EXPORT_BYTES + (episode_bytes(True, settings) - episode_bytes(False, settings) if video else 0)
    check_space(out, len(plan) * per_episode, f"exporting {len(plan)} episodes" + (" with videos" if video else ""))
    with folder as tmp:
        for name in folders:
            (tmp / name).mkdir()
        jobs = [ExportJob(str(path), str(tmp / rel), video, settings, naming) for rel, path, *_ in plan]
        shapes = list(track(map_ordered(_export_one, jobs, workers=workers), total=len(jobs), description="exporting"))
        index = [{"file": rel, "episode_id": eid, "task": task, "outcome": outcome, "shapes": sh}
                 for (rel, _, eid, task, outcome), sh in zip(plan, shapes)]
        buf = io.StringIO()
        writer = csv_dict_writer(buf, EXPORT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(index)
        atomic_write_text(tmp / EXPORT_INDEX, buf.getvalue())
    return index


# ---------------------------------------------------------------- import: reading the file


def _fail(where: str, msg: str) -> BibInputError:
    return BibInputError(f"{where}: {msg}")


def _is_num(v: Json) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_pair(v: Json) -> bool:
    return isinstance(v, list) and len(v) == 2 and _is_num(v[0]) and _is_num(v[1])


def _is_rect(v: Json) -> bool:
    return isinstance(v, list) and len(v) == 2 and _is_pair(v[0]) and _is_pair(v[1])


def _is_sprite(v: Json) -> bool:
    return isinstance(v, list) and len(v) >= 3 and _is_pair(v[0]) and _is_num(v[1]) and isinstance(v[2], str)


def _unwrap(v: Json, ok) -> Json:
    """Strip extra one-element list wrapping until ``ok(v)`` (a v1.1 quirk)."""
    while not ok(v) and isinstance(v, list) and len(v) == 1:
        v = v[0]
    return v


def _flatten_frames(raw: Json, where: str) -> list[dict[str, Json]]:
    """A trial's frames, with frames that are lists of frames spliced in (a v1.1 quirk)."""
    out: list[dict[str, Json]] = []
    stack = [iter(raw)]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
        elif isinstance(item, dict):
            out.append(item)
        elif isinstance(item, list):
            stack.append(iter(item))
        else:
            raise _fail(f"{where} frame {len(out)}", f"expected a frame object, got {json.dumps(item)[:40]}")
    return out


def split_trials(raw: Json, source: str) -> list[list[dict[str, Json]]]:
    """The trials of a BIB episode file as lists of frame dicts.

    Undoes the quirks of the releases: the whole list wrapped in extra lists, frames that are
    lists of frames, and a test trial whose frames are spliced in at the top level after the 8
    familiarization trials (a file with more than 9 entries).
    """
    while isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], list) and raw[0] and isinstance(raw[0][0], list):
        raw = raw[0]
    if not isinstance(raw, list) or not raw or not all(isinstance(t, list | dict) for t in raw):
        kind = type(raw).__name__ if not isinstance(raw, list) else "list"
        raise _fail(source, f"not BIB JSON (expected a list of trials, each a list of frame objects; got a {kind}"
                    f"{' of ' + type(raw[0]).__name__ if isinstance(raw, list) and raw else ''})")
    n_fam = N_TRIALS - 1
    if len(raw) > N_TRIALS or any(isinstance(t, dict) for t in raw):
        first_frame = next((i for i, t in enumerate(raw) if isinstance(t, dict)), len(raw))
        cut = n_fam if len(raw) > N_TRIALS and all(isinstance(t, list) for t in raw[:n_fam]) else first_frame
        if cut < len(raw):
            raw = [*raw[:cut], raw[cut:]]
    trials = [_flatten_frames(t, f"{source} trial {i}") for i, t in enumerate(raw)]
    for i, frames in enumerate(trials):
        if not frames:
            raise _fail(f"{source} trial {i}", "no frames")
    if len(trials) < 2:
        raise _fail(source, f"not BIB JSON (expected familiarization trials and a test trial, got {len(trials)} trial)")
    return trials


def detect_naming(trials: Sequence[Sequence[dict[str, Json]]], source: str) -> str:
    """``v1.1`` when frames have ``pin``, ``old`` when they have ``lock``; refuses to guess otherwise."""
    keys = {k for t in trials for k in t[0]}
    if "pin" in keys:
        return "v1.1"
    if "lock" in keys:
        return "old"
    if any(t[0].get("key") for t in trials):
        raise _fail(source, "cannot tell the key/lock naming ('key' present, neither 'pin' nor 'lock'); pass --naming v1.1 or old")
    return "v1.1"


class _Ids:
    """Identity by look (icon and colour), numbered in order of first appearance in the episode."""

    def __init__(self, names: Sequence[str] | None, prefix: str = "") -> None:
        self.names = names
        self.prefix = prefix
        self.seen: dict[tuple[str, tuple[int, int, int]], str] = {}

    def __call__(self, icon: str, color: tuple[int, int, int]) -> str:
        look = (icon, color)
        if look not in self.seen:
            n = len(self.seen)
            self.seen[look] = self.names[n] if self.names and n < len(self.names) else f"{self.prefix}{n}"
        return self.seen[look]


OBJECT_IDS = [chr(ord("A") + i) for i in range(26)]

Sprite = tuple[float, float, str, tuple[int, int, int]]
"""A parsed sprite: centre x, centre y (px, origin bottom left), icon, colour."""


def _sprite_of(v: Json, where: str, field: str) -> Sprite:
    v = _unwrap(v, _is_sprite)
    if not _is_sprite(v):
        raise _fail(where, f"field '{field}': expected [[x, y], r, icon, [R, G, B]], got {json.dumps(v)[:60]}")
    (x, y), r, icon = v[0], v[1], v[2]
    color = v[3] if len(v) > 3 else None
    rgb = tuple(int(c) for c in color[:3]) if isinstance(color, list) and len(color) >= 3 and all(_is_num(c) for c in color[:3]) else (0, 0, 0)
    return (x + r, y + r, icon, rgb)  # type: ignore[return-value]


def _sprites_of(v: Json, where: str, field: str) -> list[Sprite]:
    if v is None:
        return []
    v = _unwrap(v, lambda u: isinstance(u, list) and (not u or _is_sprite(u[0]) or _is_sprite(u)))
    if _is_sprite(v):
        v = [v]
    if not isinstance(v, list):
        raise _fail(where, f"field '{field}': expected a list of sprites")
    return [_sprite_of(s, where, f"{field}[{i}]") for i, s in enumerate(v)]


def _rect_cells(v: Json, where: str, field: str, height: int, on_grid_only: bool) -> set[Cell]:
    v = _unwrap(v or [], lambda u: isinstance(u, list) and (not u or _is_rect(u[0])))
    if not isinstance(v, list):
        raise _fail(where, f"field '{field}': expected a list of rects")
    cells: set[Cell] = set()
    for i, rect in enumerate(v):
        rect = _unwrap(rect, _is_rect)
        if not _is_rect(rect):
            raise _fail(where, f"field '{field}[{i}]': expected [[x, y], [w, h]], got {json.dumps(rect)[:60]}")
        (x, y), (w, hh) = rect
        if on_grid_only and (x % CELL_PX or y % CELL_PX):
            continue  # a barrier piece mid-fade
        x0, y0 = int(round(x / CELL_PX)), int(round(y / CELL_PX))
        for gx in range(x0, x0 + max(1, int(round(w / CELL_PX)))):
            for gy in range(y0, y0 + max(1, int(round(hh / CELL_PX)))):
                cells.add((gx, height - 1 - gy))
    return cells


# ---------------------------------------------------------------- import: one trial


@dataclass(frozen=True)
class _Look:
    """How an imported episode names things: object and agent ids, shapes (with the export's substitutions)."""

    objects: _Ids
    agents: _Ids
    shapes: dict[str, str]

    def shape(self, icon: str) -> str:
        name = icon_name(icon)
        return self.shapes.get(name) or OUR_NAME.get(name, name)


def _agent_track(frames: Sequence[dict[str, Json]], where: str) -> np.ndarray:
    """The agent's centre (px) at every frame, ``[N, 2]``."""
    out = np.empty((len(frames), 2), dtype=np.float64)
    for k, f in enumerate(frames):
        a = f.get("agent")
        try:  # the common case, without the checks
            (x, y), r = a[0], a[1]
            out[k, 0] = x + r
            out[k, 1] = y + r
            if isinstance(x, bool) or isinstance(r, bool) or not isinstance(a[2], str):
                raise TypeError
        except (TypeError, ValueError, IndexError, KeyError):
            if a is None:
                raise _fail(f"{where} frame {k}", "field 'agent': missing") from None
            cx, cy, _, _ = _sprite_of(a, f"{where} frame {k}", "agent")
            out[k] = (cx, cy)
    return out


def _first_change(frames: Sequence[dict[str, Json]], field: str, start: Json, where: str, moved) -> int | None:
    """First frame whose ``field`` differs from ``start`` by ``moved(start, now)``."""
    for k in range(1, len(frames)):
        v = frames[k].get(field)
        if v is start or v == start:
            continue
        if moved(v, f"{where} frame {k}"):
            return k
    return None


def trial_from_bib(frames: Sequence[dict[str, Json]], phase: str, look: _Look, naming: str, where: str) -> Trial:
    """One BIB trial (its frame dicts) as a :class:`Trial` with its :class:`Recording`."""
    key_field, lock_field = NAMINGS[naming]
    first = frames[0]
    w0 = f"{where} frame 0"
    size = _unwrap(first.get("size"), _is_pair)
    if not _is_pair(size) or not all(CELL_PX <= v <= GRID_MAX * CELL_PX for v in size):  # NaN fails too
        raise _fail(w0, f"field 'size': expected [width, height] in px, {CELL_PX} to {GRID_MAX * CELL_PX} each, "
                        f"got {json.dumps(first.get('size'))[:40]}")
    width, height = int(round(size[0] / CELL_PX)), int(round(size[1] / CELL_PX))

    def cell(cx: float, cy: float) -> Cell:
        return (int(math.floor(cx / CELL_PX)), height - 1 - int(math.floor(cy / CELL_PX)))

    walls = frozenset(_rect_cells(first.get("walls"), w0, "walls", height, on_grid_only=False))
    locks = _sprites_of(first.get(lock_field), w0, lock_field)
    lock = cell(*locks[0][:2]) if locks else None
    barriers = frozenset(_rect_cells(first.get("fuse_walls"), w0, "fuse_walls", height, on_grid_only=True) - walls - {lock})
    keys = _sprites_of(first.get(key_field), w0, key_field)
    key = cell(*keys[0][:2]) if keys else None
    objs_raw = _sprites_of(first.get("objects"), w0, "objects")
    objs = tuple(GridObject(look.objects(icon, rgb), look.shape(icon), rgb, cell(x, y)) for x, y, icon, rgb in objs_raw)
    if first.get("agent") is None:
        raise _fail(w0, "field 'agent': missing")
    ax, ay, a_icon, a_rgb = _sprite_of(first.get("agent"), w0, "agent")
    home_px = _sprite_of(first["home"], w0, "home")[:2] if first.get("home") else (ax, ay)
    home = cell(*home_px)
    agent = Agent(look.agents(a_icon, a_rgb), look.shape(a_icon), a_rgb, home)
    layout = Layout(width=width, height=height, walls=walls, barriers=barriers, lock=lock, key=key, objects=objs, agents=(agent,))

    track_px = _agent_track(frames, where)
    n = len(frames)

    # contacts: the key starts to move or vanishes (picked up); the lock vanishes or the barrier starts to fade (unlocked)
    pickup = None
    if keys:
        kx, ky = keys[0][0], keys[0][1]

        def key_moved(v: Json, w: str) -> bool:
            now = _sprites_of(v, w, key_field)
            return not now or abs(now[0][0] - kx) + abs(now[0][1] - ky) > 0.5

        k = _first_change(frames, key_field, first.get(key_field), where, key_moved)
        pickup = None if k is None else k - 1
    unlock = None
    if locks or barriers:
        ks = []
        if locks:
            k = _first_change(frames, lock_field, first.get(lock_field), where, lambda v, w: not _sprites_of(v, w, lock_field))
            ks.append(k)
        if barriers:
            ks.append(_first_change(frames, "fuse_walls", first.get("fuse_walls"), where, lambda v, w: True))
        ks = [k for k in ks if k is not None]
        unlock = min(ks) - 1 if ks else None

    # the goal: the nearest object (or the key, unless carried away) within one cell of the final position
    ex, ey = track_px[-1]
    if pickup is not None and (track_px[pickup:] == track_px[-1]).all():
        pickup = None  # touched at the very end: the key is where the agent stops, not a stop on the way
    candidates = [(o.id, x, y) for o, (x, y, _, _) in zip(objs, objs_raw)]
    if keys and pickup is None:
        candidates.append(("key", keys[0][0], keys[0][1]))
    dists = [(math.hypot(x - ex, y - ey), gid, x, y) for gid, x, y in candidates]
    if not dists:
        raise _fail(f"{where} frame {n - 1}", "no object to walk to (field 'objects' is empty)")
    d, goal, gx, gy = min(dists)
    if d > CELL_PX:
        raise _fail(f"{where} frame {n - 1}", f"the agent ends at ({ex:g}, {ey:g}) px, {d:.1f} px from the nearest object; "
                    f"no object within one cell ({CELL_PX} px)")

    # straight runs between turns; each stretch between contacts (start, key, lock, goal) is simplified
    # with its contact moved onto what was touched (the agent was heading there and stopped touching it)
    anchors: dict[int, list[tuple[float, float]]] = {0: [(float(home_px[0]), float(home_px[1]))]}
    if pickup is not None and keys:
        anchors.setdefault(pickup, []).append((float(keys[0][0]), float(keys[0][1])))
    if unlock is not None and lock is not None:  # after the key when both happen at one stop
        at = anchors[unlock][-1] if unlock in anchors else (float(track_px[unlock, 0]), float(track_px[unlock, 1]))
        beside = _beside_lock(layout, at, height)
        if beside != at or unlock not in anchors:
            anchors.setdefault(unlock, []).append(beside)
    anchors.setdefault(n - 1, []).append((float(gx), float(gy)))
    stops = sorted(anchors)
    vertices: list[int] = [0]
    points_px: list[tuple[float, float]] = list(anchors[0])
    for a, b in zip(stops, stops[1:]):
        stretch = np.vstack([track_px[a : b + 1], np.asarray(anchors[b][0])[None]])
        for i in simplify(stretch, STRAIGHT_TOL_PX)[1:-1]:
            if i < b - a:  # the contact frame itself gives way to what was touched
                vertices.append(a + i)
                points_px.append((float(stretch[i, 0]), float(stretch[i, 1])))
        for point in anchors[b]:
            vertices.append(b)
            points_px.append(point)
    points = [(x / CELL_PX, height - y / CELL_PX) for x, y in points_px]
    to_cells = np.empty_like(track_px)
    to_cells[:, 0] = track_px[:, 0] / CELL_PX
    to_cells[:, 1] = height - track_px[:, 1] / CELL_PX
    builder = PathBuilder(layout, home)
    for i in range(1, len(points)):
        if not builder.run(points[i - 1], points[i]):
            frame = vertices[i]
            raise _fail(f"{where} frame {frame}", f"the agent's motion to ({track_px[frame][0]:g}, {track_px[frame][1]:g}) px "
                        "cannot be followed on the grid (walls or barriers in the way)")
    path = tuple(builder.path)
    events = tuple(Event(s, e) for s, e in builder.events)
    offsets = distances_to_track(path, to_cells) * CELL_PX
    recording = Recording(
        cell_px=CELL_PX,
        agent=tuple((_n(x), _n(y)) for x, y in track_px.tolist()),
        objects=tuple((_n(x), _n(y)) for x, y, _, _ in objs_raw),
        home=(_n(home_px[0]), _n(home_px[1])),
        key=(_n(keys[0][0]), _n(keys[0][1])) if keys else None,
        lock=(_n(locks[0][0]), _n(locks[0][1])) if locks else None,
        pickup_frame=pickup,
        unlock_frame=unlock,
        offsets=tuple(round(float(v), 2) for v in offsets),
    )
    return Trial(phase=phase, layout=layout, path=path, events=events, goal=goal, recording=recording)


def _n(v: float) -> float | int:
    return int(v) if float(v).is_integer() else float(v)


def _beside_lock(layout: Layout, p: tuple[float, float], height: int) -> tuple[float, float]:
    """Where a key opens the lock, for an agent touching it at ``p`` (px, origin bottom left).

    ``p`` itself when its cell shares an edge with the lock; otherwise (touching a corner) the
    centre of the nearest free cell that does.
    """
    here = (int(math.floor(p[0] / CELL_PX)), height - 1 - int(math.floor(p[1] / CELL_PX)))
    if adjacent_to_lock(layout, here):
        return p
    lx, ly = layout.lock  # type: ignore[misc]
    options = [(lx + dx, ly + dy) for dx, dy in ((0, -1), (1, 0), (0, 1), (-1, 0))]
    free = [c for c in options if layout.is_free(c)] or options
    centres = [((c[0] + 0.5) * CELL_PX, (height - c[1] - 0.5) * CELL_PX) for c in free]
    return min(centres, key=lambda c: math.hypot(c[0] - p[0], c[1] - p[1]))


def episode_from_bib(raw: Json, *, episode_id: str, pair_id: str | None, task: str, outcome: str, source: str,
                     naming: str = "auto", shapes: dict[str, str] | None = None) -> Episode:
    """A BIB episode file's content as an :class:`Episode` (the last trial is the test)."""
    trials_raw = split_trials(raw, source)
    naming = detect_naming(trials_raw, source) if naming == "auto" else naming
    look = _Look(_Ids(OBJECT_IDS), _Ids(None, "agent-"), dict(shapes or {}))
    trials = tuple(
        trial_from_bib(frames, "test" if i == len(trials_raw) - 1 else "familiarization", look, naming, f"{source} trial {i}")
        for i, frames in enumerate(trials_raw)
    )
    lay = trials[0].layout
    return Episode(id=episode_id, pair_id=pair_id, task=task, condition=task, outcome=outcome, seed=0,
                   width=lay.width, height=lay.height, trials=trials,
                   generator={"name": "bib-json-import", "version": __version__, "source": Path(source).name})


_WALLS = re.compile(rb'"walls"\s*:\s*(\[[\[\]0-9,.\s+eE-]*\])')
"""A ``walls`` value made of numbers only, in JSON text (every frame repeats its trial's walls).

The run of brackets, digits, commas and spaces ends at the next key's quote or the frame's closing
brace, then gives back a trailing comma, so the group is exactly the value."""


def loads_bib(data: bytes) -> Json:
    """``json.loads`` of a BIB file, several times faster: every frame repeats its trial's ``walls``
    (most of the file), so each distinct walls list is parsed once and shared by the frames that
    repeat it. The result equals ``json.loads(data)``; anything unexpected falls back to it.

    Raises:
        json.JSONDecodeError: as ``json.loads(data)`` would (positions refer to ``data``).
    """
    cache: dict[bytes, int] = {}

    def sub(m: re.Match[bytes]) -> bytes:
        return b'"walls":"__bib_walls_%d__"' % cache.setdefault(m.group(1), len(cache))

    try:
        obj = json.loads(_WALLS.sub(sub, data))
        walls = {f"__bib_walls_{k}__": json.loads(text) for text, k in cache.items()}
    except json.JSONDecodeError:
        return json.loads(data)  # the error, located in the original text
    stack = [obj]
    while stack:  # put the shared lists back (frames are dicts inside nested lists)
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(u for u in v if isinstance(u, list | dict))
        elif isinstance(v, dict):
            w = v.get("walls")
            if isinstance(w, str) and w in walls:
                v["walls"] = walls[w]
    return obj


def read_bib_file(path: str | os.PathLike[str]) -> Json:
    """Parse a BIB JSON file (``.json`` or gzip-compressed ``.json.gz``); errors name the file."""
    p = Path(path)
    data: bytes | bytearray = read_bytes(p, INFLATED_MAX)
    if data[:2] == b"\x1f\x8b":
        data = gunzip(data, p)  # in chunks, up to INFLATED_MAX: a bomb is refused, not inflated
    try:
        return loads_bib(data)
    except UnicodeDecodeError:
        raise BibInputError(f"{p}: not BIB JSON (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise BibInputError(f"{p}: not BIB JSON (malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise BibInputError(f"{p}: not BIB JSON (nested too deeply)") from None


# ---------------------------------------------------------------- import: folders


def _bib_stem(f: Path) -> str:
    name = f.name
    for ext in (".json.gz", ".json"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return f.stem


def _json_files(folder: Path) -> list[Path]:
    """The BIB JSON files of a folder; one that is not a regular file (a FIFO, a device, a folder named
    ``x.json``) is refused, naming it, rather than skipped without a word (issue 39)."""
    found = sorted(f for f in folder.iterdir() if not f.name.startswith(".")
                   and (f.name.endswith(".json") or f.name.endswith(".json.gz")) and f.name != "provenance.json")
    for f in found:
        if not f.is_file():
            raise BibInputError(f"{f}: is not a regular file (a pipe, device, socket or folder); bib reads regular "
                                "files only")
    return found


def _task_of_folder(name: str, files: Sequence[Path]) -> str:
    """Task id of a BIB folder: evaluation when it holds ``u`` files, background otherwise. A name both
    kinds use holding a single ``e`` file could be either (an evaluation pair missing its ``u`` file):
    refused rather than guessed (two or more ``e`` files without a ``u`` can only be background)."""
    has_u = any(_bib_stem(f).endswith("u") for f in files)
    eval_ids = {v: k for k, v in EVALUATION_FOLDERS.items()}
    back_ids = {v: k for k, v in BACKGROUND_FOLDERS.items()}
    if not has_u and len(files) == 1 and name in eval_ids and name in back_ids:
        raise BibInputError(f"{files[0]}: one unpaired file in {name}/, a folder name both an evaluation task "
                            f"({eval_ids[name]}) and a background task ({back_ids[name]}) use; "
                            f"pass --task {eval_ids[name]} or --task {back_ids[name]}")
    if has_u and name in eval_ids:
        return eval_ids[name]
    if not has_u and name in back_ids:
        return back_ids[name]
    if name in eval_ids:
        return eval_ids[name]
    raise BibInputError(f"{name}: not a BIB folder name (known: {', '.join(sorted({*eval_ids, *back_ids}))}); pass --task ID")


def _export_shapes(root: Path) -> dict[str, dict[str, str]]:
    """Shape substitutions an export recorded in ``export.csv``: file name -> {BIB name: our shape}."""
    for folder in (root, root.parent):
        index = folder / EXPORT_INDEX
        if index.is_file():
            out: dict[str, dict[str, str]] = {}
            with open(index, newline="", encoding="utf-8") as fh:
                for row in csv.DictReader(fh):
                    pairs = [p.split(">", 1) for p in (row.get("shapes") or "").split(";") if ">" in p]
                    out[(folder / (row.get("file") or "")).resolve().as_posix()] = {bib: ours for ours, bib in pairs}
            return out
    return {}


@dataclass(frozen=True)
class ImportJob:
    """One BIB file to import (picklable)."""

    source: str
    target: str
    episode_id: str
    pair_id: str | None
    task: str
    outcome: str
    naming: str
    shapes: tuple[tuple[str, str], ...] = ()


def import_file(job: ImportJob) -> tuple[Episode, str]:
    """Read one BIB file into an episode and its canonical text (nothing written)."""
    raw = read_bib_file(job.source)
    ep = episode_from_bib(raw, episode_id=job.episode_id, pair_id=job.pair_id, task=job.task, outcome=job.outcome,
                          source=job.source, naming=job.naming, shapes=dict(job.shapes))
    return ep, dumps(ep)


def _import_one(job: ImportJob) -> dict[str, object]:
    from bib.tasks import validate_episode

    ep, text = import_file(job)
    atomic_write_text(job.target, text, durable=False)
    problems = validate_episode(ep)
    return {
        "row": {
            "episode_id": ep.id, "pair_id": ep.pair_id or "", "task": ep.task, "condition": ep.condition,
            "outcome": ep.outcome, "seed": ep.seed, "n_trials": len(ep.trials), "n_steps": ep.n_steps,
            "episode_path": f"episodes/{ep.id}.json", "video_path": "",
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        },
        "problem": str(problems[0]) if problems else "",
    }


@dataclass(frozen=True)
class ImportSummary:
    """What an import did: episodes written and the first problem of those that break a rule."""

    out: Path
    episodes: int
    problems: list[str]


IMPORT_INDEX = "import.csv"


def plan_import(src: Path, task: str | None, naming: str) -> list[tuple[Path, str, str | None, str, str]]:
    """``(file, episode id, pair id, task, outcome)`` for every file an import reads (checked, nothing read yet)."""
    from bib.tasks import REGISTRY

    if not src.is_dir():
        raise BibInputError(f"{src}: no such folder")
    if task is not None:
        if task not in REGISTRY or REGISTRY[task].kind not in ("evaluation", "background"):
            known = sorted(t for t, s in REGISTRY.items() if s.kind in ("evaluation", "background"))
            raise BibInputError(f"--task {task!r}: expected one of {', '.join(known)}")
        groups = [(src, task)]
    else:
        known = {*EVALUATION_FOLDERS.values(), *BACKGROUND_FOLDERS.values()}
        folders = [src] if src.name in known else sorted(d for d in src.iterdir() if d.is_dir() and d.name in known)
        if not folders:
            if _json_files(src):
                raise BibInputError(f"{src}: folder name {src.name!r} is not a BIB task folder ({', '.join(sorted(known))}); "
                                    "pass --task ID")
            raise BibInputError(f"{src}: no BIB JSON files (*.json) in it or in BIB task folders inside it")
        groups = [(f, _task_of_folder(f.name, _json_files(f))) for f in folders]
    plan = []
    for folder, t in groups:
        files = _json_files(folder)
        if not files:
            raise BibInputError(f"{folder}: no BIB JSON files (*.json)")
        kind = REGISTRY[t].kind
        if kind == "evaluation" and len(files) % 2:
            raise BibInputError(f"{folder}: odd number of files ({len(files)}); pairs need an 'e' and a 'u' file each")
        for k, f in enumerate(files):
            label = _bib_stem(f)[-1:]
            if label not in ("e", "u"):
                raise BibInputError(f"{f}: file name must end in 'e' or 'u' before .json")
            if kind == "background":
                unit = unit_id(t, k)
                plan.append((f, unit, None, t, "none"))
                continue
            want = "e" if k % 2 == 0 else "u"
            if label != want:
                raise BibInputError(f"{f}: expected an '{want}' file at position {k} (pairs alternate e/u in sorted order)")
            pair = unit_id(t, k // 2)
            outcome = "expected" if want == "e" else "unexpected"
            plan.append((f, f"{pair}-{outcome}", pair, t, outcome))
    return plan


def import_bib_json(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    task: str | None = None,
    naming: str = "auto",
    workers: int = 1,
    force: bool = False,
) -> ImportSummary:
    """Import BIB JSON episodes into ``out`` (``episodes/<id>.json``, ``manifest.csv``, ``import.csv``).

    ``src`` is a BIB root with task folders inside, one task folder (named as BIB names it), or,
    with ``task``, a folder of that task's files under any name. Files (``.json`` or
    ``.json.gz``) are taken in sorted order; in evaluation tasks they alternate ``…e.json`` /
    ``…u.json`` (pair k = files 2k, 2k + 1). Episodes that break a rule of their condition are
    still written; their first problem is returned. Any bad file stops the import with one line
    naming the file, trial and frame, and nothing is written (the output is built beside ``out``
    and renamed at the end).
    """
    from bib.stimuli.manifest import format_rows

    _check_naming(naming, auto=True)
    root = Path(src)
    plan = plan_import(root, task, naming)
    dest = Path(out)
    shape_maps = _export_shapes(root)
    source = str(root.resolve())
    job = {"command": "import", "source": source, "format": "bib-json", "task": task, "naming": naming}
    rows, problems = [], []
    with OutputFolder(dest, job, force=force) as tmp:
        (tmp / "episodes").mkdir()
        jobs = [ImportJob(str(f), str(output_path(tmp, "episodes", f"{eid}.json")), eid, pair, t, outcome, naming,
                          tuple(sorted(shape_maps.get(f.resolve().as_posix(), {}).items())))
                for f, eid, pair, t, outcome in plan]
        for res in track(map_ordered(_import_one, jobs, workers=workers), total=len(jobs), description="importing"):
            rows.append(res["row"])
            if res["problem"]:
                problems.append(res["problem"])
        atomic_write_text(tmp / "manifest.csv", format_rows(rows))
        buf = io.StringIO()
        writer = csv_writer(buf, lineterminator="\n")
        writer.writerow(["file", "episode_id", "task", "outcome"])
        writer.writerows([f.relative_to(root).as_posix(), eid, t, outcome] for f, eid, _, t, outcome in plan)
        atomic_write_text(tmp / IMPORT_INDEX, buf.getvalue())
        mark_complete(tmp)  # last, before the folder is renamed into place (bib.stimuli.complete)
    return ImportSummary(out=dest, episodes=len(rows), problems=problems)


def strip_provenance(ep: Episode) -> Episode:
    """``ep`` without what BIB JSON does not carry (seed, generator) nor the recording, for round-trip comparisons."""
    return replace(ep, seed=0, generator={}, trials=tuple(replace(t, recording=None) for t in ep.trials))
