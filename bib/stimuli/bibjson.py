"""The original BIB per-frame JSON format: export our episodes to it, import BIB v1.1 episodes from it.

Format (reference/bib.md section 1b): an episode file is a list of trials, each a list of frame
dicts with ``size`` ([w, h] px), ``walls`` and ``fuse_walls`` (rects ``[[x, y], [w, h]]``),
``agent`` and ``home`` (``[[x, y], r, "dir/icon.png", [R, G, B]]``, centre ``(x + r, y + r)``),
``objects`` (a list of such tuples), ``key`` and ``lock`` (lists of 0 or 1 such tuples). Pixel
coordinates are integers with the origin at the BOTTOM LEFT and 20 px cells, so cell ``(cx, cy)``
(``cy`` counted from the top, as in ``bib.episode/1``) has its lower-left corner at
``(20 cx, 20 (H - 1 - cy))``.

Export places the agent in every frame exactly where :func:`bib.render.frames.trial_frames` draws
it (same timing), so ``--video`` writes MP4s that match the JSON frame for frame (no blank between
trials). The default export timing holds the first frame 30 frames and the last 85 frames, so
bib-baselines' loader (which skips the first 30 and last 83 frames of a trial) keeps every moving
frame. Files are ``<folder>/<index:06d>e.json`` / ``...u.json`` with BIB's folder names, so sorted
order alternates expected and unexpected as BIB's tools assume.

Import snaps every position to the cell holding the sprite's centre and derives each trial's path
from the agent's cells over the frames (consecutive repeats merged, skipped cells filled in,
one-frame zig-zags through a corner smoothed into the diagonal, corner cuts made legal). It
tolerates the quirks of the v1.1 release: duplicate walls, off-grid ``fuse_walls`` during the
fade, fields wrapped in an extra list, and the older ``pin`` (key) / ``key`` (lock) naming.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bib.episode import Episode, Trial, load_episode, save_episode
from bib.errors import BibInputError
from bib.io import atomic_write_text, ensure_dir
from bib.parallel import map_ordered
from bib.progress import track
from bib.render.frames import RenderSettings, agent_timeline, motion_frames
from bib.tasks import bib_folders, unit_id
from bib.world.dynamics import AgentState, action_between, move_legal, step
from bib.world.grid import Agent, Cell, GridObject, Layout

CELL_PX = 20
"""Pixels per cell in BIB's JSON."""

EXPORT_SETTINGS = RenderSettings(cell_px=CELL_PX, fps=25, pause_start=1.2, pause_end=3.4, gap=0.0)
"""Timing of exported frames (and videos): BIB's 20 px / 25 fps; 30 still frames first, 85 last."""

EVALUATION_FOLDERS = bib_folders("evaluation")
"""Evaluation condition id -> BIB v1.1 folder name (from the task registry)."""

BACKGROUND_FOLDERS = bib_folders("background")
"""Background task id -> bib-baselines' training folder name (two collide with evaluation names)."""

KEY_ICON = "key/triangle0.png"
LOCK_ICON = "lock/triangle_slot0.png"
HOME_ICON = "home/home.png"

Json = Any


# ---------------------------------------------------------------- export


def _corner(x: float, y: float, height: int) -> list[int]:
    """Bottom-left pixel corner of a cell-sized sprite at cell coordinates ``(x, y)`` (y from the top)."""
    return [int(round(x * CELL_PX)), int(round((height - 1 - y) * CELL_PX))]


def _rect(cell: Cell, height: int) -> list[list[int]]:
    return [_corner(cell[0], cell[1], height), [CELL_PX, CELL_PX]]


def _sprite(x: float, y: float, height: int, icon: str, color: Sequence[int]) -> list[Json]:
    return [_corner(x, y, height), CELL_PX // 2, icon, [int(c) for c in color]]


@dataclass(frozen=True)
class FrameState:
    """What changes from frame to frame: the agent's position (cells) and the key/barrier state."""

    x: float
    y: float
    before_pickup: bool
    fade: float


def frame_states(trial: Trial, settings: RenderSettings = EXPORT_SETTINGS) -> Iterator[FrameState]:
    """One state per frame of :func:`bib.render.frames.trial_frames` (same count, same timing)."""
    s = settings
    times, cells, t_pickup, t_unlock = agent_timeline(trial, s)
    n = motion_frames(trial, s)
    ts = np.minimum(np.arange(n) / s.fps, times[-1])
    xs = np.interp(ts, times, cells[:, 0])
    ys = np.interp(ts, times, cells[:, 1])
    idx = np.concatenate([np.zeros(round(s.pause_start * s.fps), dtype=int), np.arange(n),
                          np.full(round(s.pause_end * s.fps), n - 1)])
    for k in idx:
        t = float(ts[k])
        if t_unlock is None or t < t_unlock:
            fade = 1.0
        else:
            fade = max(0.0, 1.0 - (t - t_unlock) / s.unlock_pause) if s.unlock_pause > 0 else 0.0
        yield FrameState(float(xs[k]), float(ys[k]), t_pickup is None or t < t_pickup, fade)


def trial_to_bib(trial: Trial, settings: RenderSettings = EXPORT_SETTINGS) -> list[dict[str, Json]]:
    """A trial as BIB frame dicts."""
    lay = trial.layout
    h = lay.height
    agent = lay.agent
    size = [lay.width * CELL_PX, h * CELL_PX]
    walls = [_rect(c, h) for c in sorted(lay.walls)]
    barriers = [_rect(c, h) for c in sorted(lay.barriers)]
    objects = [_sprite(*o.cell, h, f"objects/{o.shape}.png", o.color) for o in lay.objects]
    home = _sprite(*agent.home, h, HOME_ICON, agent.color)
    lock = [_sprite(*lay.lock, h, LOCK_ICON, (28, 64, 20))] if lay.lock is not None else []
    key_at_rest = [_sprite(*lay.key, h, KEY_ICON, (230, 170, 20))] if lay.key is not None else []
    frames = []
    for st in frame_states(trial, settings):
        if lay.key is None or not st.before_pickup and st.fade < 1.0:
            key: list[Json] = []
        elif st.before_pickup:
            key = key_at_rest
        else:
            key = [_sprite(st.x, st.y, h, KEY_ICON, (230, 170, 20))]  # carried
        present = st.fade > 0.0
        frames.append({
            "size": size,
            "walls": walls,
            "fuse_walls": barriers if present else [],
            "agent": _sprite(st.x, st.y, h, f"agents/{agent.shape}.png", agent.color),
            "home": home,
            "objects": objects,
            "key": key,
            "lock": lock if present else [],
        })
    return frames


def episode_to_bib(ep: Episode, settings: RenderSettings = EXPORT_SETTINGS) -> list[list[dict[str, Json]]]:
    """An episode as BIB's list of trials of frame dicts."""
    return [trial_to_bib(t, settings) for t in ep.trials]


def folder_of(task: str) -> str:
    """BIB folder name of one of our task ids."""
    name = EVALUATION_FOLDERS.get(task) or BACKGROUND_FOLDERS.get(task)
    if name is None:
        raise BibInputError(f"task {task!r} has no BIB folder name (known: {', '.join(sorted({**EVALUATION_FOLDERS, **BACKGROUND_FOLDERS}))})")
    return name


@dataclass(frozen=True)
class ExportJob:
    """One episode to export (picklable)."""

    source: str
    target: str
    video: bool
    settings: RenderSettings


def _export_one(job: ExportJob) -> int:
    ep = load_episode(job.source)
    frames = episode_to_bib(ep, job.settings)
    atomic_write_text(job.target, json.dumps(frames, separators=(",", ":")))
    if job.video:
        from bib.render.video import render_episode

        render_episode(ep, Path(job.target).with_suffix(".mp4"), job.settings, "h264")
    return sum(len(t) for t in frames)


def _episodes_of(directory: Path) -> list[tuple[Path, str, str, str, str]]:
    """``(file, task, unit, outcome, episode id)`` of every episode of a set (manifest first)."""
    from bib.stimuli.check import episode_files
    from bib.stimuli.manifest import read_manifest

    rows = read_manifest(directory)
    if rows:
        return [(directory / r["episode_path"], r["task"], r["pair_id"] or r["episode_id"], r["outcome"], r["episode_id"])
                for r in rows]
    out = []
    for f in episode_files(directory):
        ep = load_episode(f)
        out.append((f, ep.task, ep.pair_id or ep.id, ep.outcome, ep.id))
    if not out:
        raise BibInputError(f"{directory}: no episodes found")
    return out


def export_bib_json(
    directory: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    video: bool = False,
    settings: RenderSettings = EXPORT_SETTINGS,
    workers: int = 1,
) -> list[dict[str, str]]:
    """Export every episode of a set (``manifest.csv`` or ``*.json`` below ``directory``) to BIB JSON.

    Writes ``out/<folder>/<index:06d>{e,u}.json`` (and ``.mp4`` with ``video``) plus
    ``out/export.csv`` mapping each file to its episode; returns those rows.

    Raises:
        BibInputError: two exported tasks share a BIB folder name (export them separately), a pair
            lacks one of its episodes, or the settings' cells are not 20 px.
    """
    if settings.cell_px != CELL_PX or settings.canvas is not None:
        raise BibInputError(f"BIB JSON needs {CELL_PX} px cells and no canvas")
    src = Path(directory)
    episodes = _episodes_of(src)
    by_task: dict[str, dict[str, dict[str, tuple[Path, str]]]] = {}
    for path, task, unit, outcome, episode_id in episodes:
        by_task.setdefault(task, {}).setdefault(unit, {})[outcome] = (path, episode_id)
    folders: dict[str, str] = {}
    for task in sorted(by_task):
        name = folder_of(task)
        if name in folders:
            raise BibInputError(f"tasks {folders[name]!r} and {task!r} both export to folder {name!r}; export them separately")
        folders[name] = task
    root = ensure_dir(out)
    jobs: list[ExportJob] = []
    index: list[dict[str, str]] = []
    for name, task in sorted(folders.items()):
        ensure_dir(root / name)
        for i, unit in enumerate(sorted(by_task[task])):
            members = by_task[task][unit]
            wanted = ("expected", "unexpected") if "none" not in members else ("none",)
            for outcome in wanted:
                if outcome not in members:
                    raise BibInputError(f"{src}: pair {unit} has no {outcome} episode")
                suffix = "u" if outcome == "unexpected" else "e"
                rel = f"{name}/{i:06d}{suffix}.json"
                path, episode_id = members[outcome]
                jobs.append(ExportJob(str(path), str(root / rel), video, settings))
                index.append({"file": rel, "episode_id": episode_id, "task": task, "outcome": outcome})
    for _ in track(map_ordered(_export_one, jobs, workers=workers), total=len(jobs), description="exporting"):
        pass
    lines = ["file,episode_id,task,outcome"] + [f"{r['file']},{r['episode_id']},{r['task']},{r['outcome']}" for r in index]
    atomic_write_text(root / "export.csv", "\n".join(lines) + "\n")
    return index


# ---------------------------------------------------------------- import


class _Frame:
    """Typed access to one BIB frame dict, tolerant of the v1.1 quirks; errors name file/trial/frame."""

    def __init__(self, d: Json, where: str) -> None:
        self.where = where
        while isinstance(d, list) and len(d) == 1:
            d = d[0]
        if not isinstance(d, dict):
            raise BibInputError(f"{where}: expected a frame object")
        self.d = d
        size = self._unwrap(d.get("size"), lambda v: _is_pair(v))
        if not _is_pair(size) or size[0] < CELL_PX or size[1] < CELL_PX:
            raise BibInputError(f"{where}: field 'size': expected [width, height] in px, got {json.dumps(d.get('size'))[:40]}")
        self.width = int(round(size[0] / CELL_PX))
        self.height = int(round(size[1] / CELL_PX))
        # The older release names the key "pin" and the lock "key".
        self.key_field, self.lock_field = ("pin", "key") if "pin" in d else ("key", "lock")

    @staticmethod
    def _unwrap(v: Json, ok) -> Json:
        while not ok(v) and isinstance(v, list) and len(v) == 1:
            v = v[0]
        return v

    def fail(self, field: str, msg: str) -> BibInputError:
        return BibInputError(f"{self.where}: field '{field}': {msg}")

    def cell_of(self, cx: float, cy: float) -> Cell:
        return (int(math.floor(cx / CELL_PX)), self.height - 1 - int(math.floor(cy / CELL_PX)))

    def sprite(self, v: Json, field: str) -> tuple[Cell, str, tuple[int, int, int]]:
        v = self._unwrap(v, _is_sprite)
        if not _is_sprite(v):
            raise self.fail(field, f"expected [[x, y], r, icon, [R, G, B]], got {json.dumps(v)[:60]}")
        (x, y), r, icon, color = v
        rgb = tuple(int(c) for c in color[:3]) if isinstance(color, list) and len(color) >= 3 else (0, 0, 0)
        return self.cell_of(x + r, y + r), icon, rgb  # type: ignore[return-value]

    def sprites(self, field: str) -> list[tuple[Cell, str, tuple[int, int, int]]]:
        v = self.d.get(field) or []
        v = self._unwrap(v, lambda u: isinstance(u, list) and (not u or _is_sprite(u[0]) or _is_sprite(u)))
        if _is_sprite(v):
            v = [v]
        if not isinstance(v, list):
            raise self.fail(field, "expected a list of sprites")
        return [self.sprite(s, f"{field}[{i}]") for i, s in enumerate(v)]

    def rect_cells(self, field: str, on_grid_only: bool) -> set[Cell]:
        v = self.d.get(field) or []
        v = self._unwrap(v, lambda u: isinstance(u, list) and (not u or _is_rect(u[0])))
        if not isinstance(v, list):
            raise self.fail(field, "expected a list of rects")
        cells: set[Cell] = set()
        for i, rect in enumerate(v):
            rect = self._unwrap(rect, _is_rect)
            if not _is_rect(rect):
                raise self.fail(f"{field}[{i}]", f"expected [[x, y], [w, h]], got {json.dumps(rect)[:60]}")
            (x, y), (w, h) = rect
            if on_grid_only and (x % CELL_PX or y % CELL_PX):
                continue  # a barrier piece mid-fade
            x0, y0 = int(round(x / CELL_PX)), int(round(y / CELL_PX))
            nx, ny = max(1, int(round(w / CELL_PX))), max(1, int(round(h / CELL_PX)))
            for gx in range(x0, x0 + nx):
                for gy in range(y0, y0 + ny):
                    cells.add((gx, self.height - 1 - gy))
        return cells


def _is_num(v: Json) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_pair(v: Json) -> bool:
    return isinstance(v, list) and len(v) == 2 and all(_is_num(u) for u in v)


def _is_rect(v: Json) -> bool:
    return isinstance(v, list) and len(v) == 2 and all(_is_pair(u) for u in v)


def _is_sprite(v: Json) -> bool:
    return isinstance(v, list) and len(v) >= 3 and _is_pair(v[0]) and _is_num(v[1]) and isinstance(v[2], str)


def icon_shape(icon: str) -> str:
    """Sprite shape named by an icon path: ``"shapes/heart.png"`` -> ``"heart"``."""
    return re.sub(r"\.[A-Za-z0-9]+$", "", icon.replace("\\", "/").rsplit("/", 1)[-1])


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


def _agent_cells(frames: Sequence[_Frame]) -> list[tuple[Cell, int]]:
    """The agent's cell over the frames as ``(cell, frames spent)`` visits."""
    visits: list[tuple[Cell, int]] = []
    for f in frames:
        cell = f.sprite(f.d.get("agent"), "agent")[0]
        if visits and visits[-1][0] == cell:
            visits[-1] = (cell, visits[-1][1] + 1)
        else:
            visits.append((cell, 1))
    return visits


def _toward(a: Cell, b: Cell) -> Cell:
    return (a[0] + (b[0] > a[0]) - (b[0] < a[0]), a[1] + (b[1] > a[1]) - (b[1] < a[1]))


def derive_path(layout: Layout, visits: Sequence[tuple[Cell, int]], min_dwell: int = 2, where: str = "?") -> tuple[Cell, ...]:
    """A legal grid path through the agent's cell visits (see the module docstring)."""
    cells = [c for c, _ in visits]
    dwell = [n for _, n in visits]
    # one-frame detours through a corner cell -> the diagonal
    keep = [True] * len(cells)
    for i in range(1, len(cells) - 1):
        a, b = cells[i - 1], cells[i + 1]
        if dwell[i] <= min_dwell and keep[i - 1] and abs(a[0] - b[0]) == 1 and abs(a[1] - b[1]) == 1:
            keep[i] = False
    cells = [c for c, k in zip(cells, keep) if k]
    path = [cells[0]]
    state = AgentState(cells[0])
    for target in cells[1:]:
        while path[-1] != target:
            here = path[-1]
            nxt = _toward(here, target)
            action = action_between(here, nxt)
            if not move_legal(layout, here, action, state.unlocked):
                # corner cut (continuous motion) or a skipped cell: go orthogonally first
                options = [(nxt[0], here[1]), (here[0], nxt[1])]
                legal = [c for c in options if c != here and move_legal(layout, here, action_between(here, c), state.unlocked)]
                if not legal:
                    raise BibInputError(f"{where}: the agent's motion from {list(here)} to {list(nxt)} crosses a wall")
                nxt = legal[0]
                action = action_between(here, nxt)
            state, _ = step(layout, state, action)
            path.append(nxt)
    return tuple(path)


def trial_from_bib(raw: Json, phase: str, objects: _Ids, agents: _Ids, where: str) -> Trial:
    """One BIB trial (list of frames) as a :class:`Trial`."""
    from bib.tasks.common import events_of

    while isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], list):
        raw = raw[0]
    if not isinstance(raw, list) or not raw:
        raise BibInputError(f"{where}: expected a non-empty list of frames")
    frames = [_Frame(d, f"{where} frame {k}") for k, d in enumerate(raw)]
    first = frames[0]
    walls = frozenset(first.rect_cells("walls", on_grid_only=False))
    lock_list = first.sprites(first.lock_field)
    lock = lock_list[0][0] if lock_list else None
    barriers = frozenset(first.rect_cells("fuse_walls", on_grid_only=True) - walls - ({lock} if lock else set()))
    key_list = first.sprites(first.key_field)
    key = key_list[0][0] if key_list else None
    objs = tuple(
        GridObject(objects(icon, color), icon_shape(icon), color, cell) for cell, icon, color in first.sprites("objects")
    )
    a_cell, a_icon, a_color = first.sprite(first.d.get("agent"), "agent")
    home_raw = first.d.get("home")
    home = first.sprite(home_raw, "home")[0] if home_raw else a_cell
    agent = Agent(agents(a_icon, a_color), icon_shape(a_icon), a_color, home)
    layout = Layout(width=first.width, height=first.height, walls=walls, barriers=barriers, lock=lock, key=key,
                    objects=objs, agents=(agent,))
    visits = _agent_cells(frames)
    if visits[0][0] != home:
        visits.insert(0, (home, 1))
    path = derive_path(layout, visits, where=where)
    end = path[-1]
    goal = next((o.id for o in objs if o.cell == end), None)
    if goal is None and key is not None and end == key:
        goal = "key"
    try:
        events = events_of(layout, path)
    except Exception as exc:  # LayoutRejected / ValueError from an illegal move
        raise BibInputError(f"{where}: cannot replay the agent's path ({exc})") from None
    return Trial(phase=phase, layout=layout, path=path, events=events, goal=goal)


def episode_from_bib(raw: Json, *, episode_id: str, pair_id: str | None, task: str, outcome: str, source: str) -> Episode:
    """A BIB episode (list of trials) as an :class:`Episode` (the last trial is the test)."""
    while isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], list) and raw[0] and isinstance(raw[0][0], list):
        raw = raw[0]
    if not isinstance(raw, list) or len(raw) < 2:
        raise BibInputError(f"{source}: expected a list of at least 2 trials")
    objects, agents = _Ids(OBJECT_IDS), _Ids(None, "agent-")
    trials = tuple(
        trial_from_bib(t, "test" if i == len(raw) - 1 else "familiarization", objects, agents, f"{source} trial {i}")
        for i, t in enumerate(raw)
    )
    lay = trials[0].layout
    return Episode(id=episode_id, pair_id=pair_id, task=task, condition=task, outcome=outcome, seed=0,
                   width=lay.width, height=lay.height, trials=trials,
                   generator={"name": "bib-json-import", "version": "1"})


def _task_of_folder(name: str, files: Sequence[Path]) -> tuple[str, str]:
    """(task id, kind) of a BIB folder: evaluation when it holds ``u`` files, background otherwise."""
    has_u = any(f.stem.endswith("u") for f in files)
    eval_ids = {v: k for k, v in EVALUATION_FOLDERS.items()}
    back_ids = {v: k for k, v in BACKGROUND_FOLDERS.items()}
    if has_u and name in eval_ids:
        return eval_ids[name], "evaluation"
    if not has_u and name in back_ids:
        return back_ids[name], "background"
    if name in eval_ids:
        return eval_ids[name], "evaluation"
    raise BibInputError(f"{name}: not a BIB folder name (known: {', '.join(sorted({*eval_ids, *back_ids}))})")


@dataclass(frozen=True)
class ImportJob:
    """One BIB file to import (picklable)."""

    source: str
    target: str
    episode_id: str
    pair_id: str | None
    task: str
    outcome: str


def _import_one(job: ImportJob) -> dict[str, object]:
    import hashlib

    from bib.tasks import validate_episode

    try:
        raw = json.loads(Path(job.source).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise BibInputError(f"{job.source}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise BibInputError(f"{job.source}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    ep = episode_from_bib(raw, episode_id=job.episode_id, pair_id=job.pair_id, task=job.task, outcome=job.outcome,
                          source=job.source)
    text = save_episode(ep, job.target)
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


def import_bib_json(src: str | os.PathLike[str], out: str | os.PathLike[str], *, workers: int = 1) -> ImportSummary:
    """Import BIB JSON episodes (a BIB root with task folders, or one task folder) into ``out``.

    Writes ``out/episodes/<id>.json`` (``bib.episode/1``) and ``out/manifest.csv``. Files of a
    folder are taken in sorted order; in evaluation folders they alternate ``…e.json`` /
    ``…u.json`` (pair k = files 2k, 2k + 1). Episodes that break a rule of their condition are
    still written; their first problem is returned.
    """
    from bib.stimuli.manifest import write_manifest

    root = Path(src)
    if not root.is_dir():
        raise BibInputError(f"{root}: no such folder")
    known = {*EVALUATION_FOLDERS.values(), *BACKGROUND_FOLDERS.values()}
    folders = [root] if root.name in known else sorted(d for d in root.iterdir() if d.is_dir() and d.name in known)
    if not folders:
        raise BibInputError(f"{root}: no BIB task folders ({', '.join(sorted(known))})")
    dest = ensure_dir(out)
    ensure_dir(dest / "episodes")
    jobs: list[ImportJob] = []
    for folder in folders:
        files = sorted(f for f in folder.glob("*.json") if not f.name.startswith("."))
        task, kind = _task_of_folder(folder.name, files)
        for k, f in enumerate(files):
            label = f.stem[-1:]
            if label not in ("e", "u"):
                raise BibInputError(f"{f}: file name must end in 'e' or 'u' before .json")
            if kind == "background":
                unit = unit_id(task, k)
                jobs.append(ImportJob(str(f), str(dest / "episodes" / f"{unit}.json"), unit, None, task, "none"))
                continue
            want = "e" if k % 2 == 0 else "u"
            if label != want:
                raise BibInputError(f"{f}: expected an '{want}' file at position {k} (pairs alternate e/u in sorted order)")
            pair = unit_id(task, k // 2)
            outcome = "expected" if want == "e" else "unexpected"
            ep_id = f"{pair}-{outcome}"
            jobs.append(ImportJob(str(f), str(dest / "episodes" / f"{ep_id}.json"), ep_id, pair, task, outcome))
        if kind == "evaluation" and len(files) % 2:
            raise BibInputError(f"{folder}: odd number of files; pairs need an 'e' and a 'u' file each")
    rows, problems = [], []
    for res in track(map_ordered(_import_one, jobs, workers=workers), total=len(jobs), description="importing"):
        rows.append(res["row"])
        if res["problem"]:
            problems.append(res["problem"])
    write_manifest(dest, rows)
    return ImportSummary(out=dest, episodes=len(rows), problems=problems)


def strip_provenance(ep: Episode) -> Episode:
    """``ep`` without what BIB JSON cannot carry (seed, generator), for round-trip comparisons."""
    return replace(ep, seed=0, generator={})

