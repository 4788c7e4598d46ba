"""Test fixtures: native episodes written the way BIB's real recordings look.

What the public recordings show (../shared/data/bib-real/README.md) and this writer reproduces:
continuous sprite positions (objects anywhere inside their cell, integer pixels), an agent that moves
in straight lines at any angle (runs of grid moves merged into one line wherever the line is a legal
king-move path of the same cost) at 2 px per frame, that stops touching the key and its goal (centres
7-12 px apart) and pauses touching the lock while the barrier fades, agent radius 6, object radius 9,
a pink home pad, v1.1 naming (``pin`` = key, ``key`` = lock), ``blocking`` present; and, on request,
the quirks of the releases: duplicate walls, off-grid ``fuse_walls`` during the fade, fields and
frames wrapped in extra lists, and test-trial frames spliced in at the top level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bib.episode import Episode, Trial
from bib.stimuli.bibjson import HOME_ICON, KEY_ICON, LOCK_ICON, agent_icon, episode_bib_names, object_icon
from bib.stimuli.trajectory import line_cells
from bib.vocabulary import AGENT_RADIUS_PX, BIB_NAME, HOME_COLOR, KEY_COLOR, OBJECT_RADIUS_PX, SLOT_COLOR
from bib.world.dynamics import AgentState, action_between, action_cost, move_legal, step

PX = 20
SPEED = 2.0
"""Pixels per frame (the recordings' agents move about 2 px per frame)."""


@dataclass(frozen=True)
class Quirks:
    """Which release quirks to put into a recording."""

    duplicate_walls: bool = True
    fade: bool = True
    wrapped_fields: bool = False
    wrapped_frames: bool = False
    spliced_test: bool = False
    wrapped_episode: bool = False


ALL_QUIRKS = Quirks(True, True, True, True, True, True)


ROLES = {"object": 1, "key": 2, "home": 3, "waypoint": 4, "stop": 5, "lock": 6}


def _rng(seed: int, role: str, cell) -> np.random.Generator:
    """Randomness tied to a role and a cell, so the same motion in the same place is recorded the same way
    (a test trial that repeats a familiarization path repeats its recording, as in BIB)."""
    return np.random.default_rng([seed, ROLES[role], int(cell[0]), int(cell[1])])


def _centre(cell, height, rng, jitter):
    x = (cell[0] + 0.5) * PX + rng.uniform(-jitter, jitter)
    y = (height - cell[1] - 0.5) * PX + rng.uniform(-jitter, jitter)
    return (x, y)


def _to_cells(p, height):
    return (p[0] / PX, height - p[1] / PX)


def _cost(path) -> float:
    return sum(action_cost(action_between(a, b)) for a, b in zip(path, path[1:]))


def _line_ok(trial: Trial, state: AgentState, cells, native) -> bool:
    """The line's cells are a legal path with the cost of the native stretch, meeting no other object or event."""
    lay = trial.layout
    if cells[0] != native[0] or cells[-1] != native[-1] or abs(_cost(cells) - _cost(native)) > 1e-9:
        return False
    objects = {o.cell for o in lay.objects} - set(native)
    extra = {lay.key} - set(native) if lay.key is not None else set()
    st = state
    for a, b in zip(cells, cells[1:]):
        act = action_between(a, b)
        if act is None or not move_legal(lay, a, act, st.unlocked) or b in objects or b in extra:
            return False
        before = (st.has_key, st.unlocked)
        st, events = step(lay, st, act)
        if events and b != native[-1]:
            return False
        del before
    return True


def _waypoints(trial: Trial, centres, height) -> list[tuple[int, tuple[float, float]]]:
    """(path index, position px) of the straight runs' ends: greedy, same-cost, contacts kept."""
    path = trial.path
    forced = {len(path) - 1}
    forced |= {e.step for e in trial.events}
    out = [(0, centres[0])]
    i = 0
    state = AgentState(path[0])
    while i < len(path) - 1:
        limit = min(k for k in forced if k > i)
        best = i + 1
        for j in range(limit, i, -1):
            p, q = _to_cells(centres[i], height), _to_cells(centres[j], height)
            if _line_ok(trial, state, line_cells(p, q), list(path[i : j + 1])):
                best = j
                break
        for a, b in zip(path[i:best], path[i + 1 : best + 1]):
            state, _ = step(trial.layout, state, action_between(a, b))
        out.append((best, centres[best]))
        i = best
    return out


def _walk(a, b, stop: float = 0.0) -> list[tuple[float, float]]:
    """Positions every SPEED px from ``a`` towards ``b``, ending ``stop`` px short of ``b`` (``a`` excluded)."""
    d = math.hypot(b[0] - a[0], b[1] - a[1])
    length = max(0.0, d - stop)
    n = max(1, math.ceil(length / SPEED)) if length > 0 else 0
    return [(a[0] + (b[0] - a[0]) * (length * k / n) / d, a[1] + (b[1] - a[1]) * (length * k / n) / d) for k in range(1, n + 1)]


def _sprite(c, r, icon, color, wrap=False):
    s = [[int(round(c[0] - r)), int(round(c[1] - r))], r, icon, list(color)]
    return [s] if wrap else s


def trial_recording(trial: Trial, seed: int, names: dict[str, str], quirks: Quirks, memo: dict | None = None) -> list:
    """The frames of one trial as a real recording would show them.

    ``memo`` (path -> straight runs) makes a path seen earlier in the episode move along the same
    runs, whatever this trial's layout allows (BIB's test agents repeat familiar motions exactly).
    """
    memo = {} if memo is None else memo
    lay = trial.layout
    h = lay.height
    path = trial.path
    pickup, unlock = trial.pickup_step(), trial.unlock_step()
    obj_c = {o.id: _centre(o.cell, h, _rng(seed, "object", o.cell), 5.0) for o in lay.objects}
    key_c = _centre(lay.key, h, _rng(seed, "key", lay.key), 4.0) if lay.key is not None else None
    lock_c = _centre(lay.lock, h, _rng(seed, "lock", lay.lock), 0.0) if lay.lock is not None else None
    home_c = _centre(lay.agent.home, h, _rng(seed, "home", lay.agent.home), 3.0)
    centres = []
    for i, c in enumerate(path):
        if i == 0:
            centres.append(home_c)
        elif i == len(path) - 1 and trial.goal is not None and trial.goal != "key":
            centres.append(obj_c[trial.goal])
        elif (i == pickup or (i == len(path) - 1 and trial.goal == "key")) and key_c is not None:
            centres.append(key_c)
        elif i == unlock and lock_c is not None:  # touching the lock: 16 px from its centre, on the side of c
            cc = ((c[0] + 0.5) * PX, (h - c[1] - 0.5) * PX)
            dx, dy = cc[0] - lock_c[0], cc[1] - lock_c[1]
            n = math.hypot(dx, dy)
            side = _rng(seed, "lock", c).uniform(-3, 3)
            centres.append((lock_c[0] + dx / n * 16 - dy / n * side, lock_c[1] + dy / n * 16 + dx / n * side))
        else:
            centres.append(_centre(c, h, _rng(seed, "waypoint", c), 4.0))
    key = (tuple(path), trial.goal, pickup, unlock)
    if key not in memo:
        # a path that starts like one seen before (BIB's time control: a familiar curved path cut short) starts
        # along the same runs
        longer = next((k for k in memo if len(k[0]) > len(path) and k[0][: len(path)] == tuple(path) and not trial.events), None)
        if longer is not None:
            memo[key] = [j for j in memo[longer] if j < len(path) - 1] + [len(path) - 1]
        else:
            memo[key] = [j for j, _ in _waypoints(trial, centres, h)]
    wps = [(j, centres[j]) for j in memo[key]]
    track = [home_c] * 30
    pos = home_c
    events_at: dict[str, int] = {}
    for (j, target) in wps[1:]:
        touching = j == len(path) - 1 or j == pickup
        stop = _rng(seed, "stop", path[j]).uniform(7.0, 12.0) if touching else 0.0
        pts = _walk(pos, target, stop)
        others = [c for oid, c in obj_c.items() if c != target]
        while touching and stop > 2.0 and pts and any(math.dist(pts[-1], c) < math.dist(pts[-1], target) + 3.0 for c in others):
            stop -= 1.0  # touch the goal, not a neighbour: come closer where objects crowd
            pts = _walk(pos, target, stop)
        track += pts
        if pts:
            pos = pts[-1]
        if j == pickup:
            events_at["pickup"] = len(track) - 1
        if j == unlock:
            events_at["unlock"] = len(track)  # first frame of the fade
            track += [pos] * 20
    track += [pos] * 25
    track = [(round(x), round(y)) for x, y in track]
    walls = [[[c[0] * PX, (h - 1 - c[1]) * PX], [PX, PX]] for c in sorted(lay.walls)]
    if quirks.duplicate_walls:
        walls += [w for w in walls if w[0][0] in (0, (lay.width - 1) * PX)][:10]
    barriers = [[[c[0] * PX, (h - 1 - c[1]) * PX], [PX, PX]] for c in sorted(lay.barriers)]
    agent_icon_name = agent_icon(BIB_NAME[lay.agent.shape])
    objects = [_sprite(obj_c[o.id], OBJECT_RADIUS_PX, object_icon(names[o.shape]), o.color) for o in lay.objects]
    home = _sprite(home_c, AGENT_RADIUS_PX, HOME_ICON, HOME_COLOR)
    frames = []
    for k, a in enumerate(track):
        fade = None if "unlock" not in events_at else k - events_at["unlock"]
        if key_c is None or (fade is not None and fade >= 0):
            pin = []
        elif "pickup" not in events_at or k <= events_at["pickup"]:
            pin = [_sprite(key_c, OBJECT_RADIUS_PX, KEY_ICON, KEY_COLOR)]
        else:
            pin = [_sprite((a[0] + 5, a[1] + 5), OBJECT_RADIUS_PX, KEY_ICON, KEY_COLOR)]
        if fade is None or fade < 0:
            fuse = barriers
        elif quirks.fade and fade < 6:  # pieces shrink off the grid while fading
            fuse = [[[x + fade + 1, y + fade + 1], [PX - 2 * fade - 2, PX - 2 * fade - 2]] for (x, y), _ in barriers]
        else:
            fuse = []
        lock = [_sprite(lock_c, PX // 2, LOCK_ICON, SLOT_COLOR)] if lock_c is not None and (fade is None or fade < 0) else []
        wrap = quirks.wrapped_fields and k % 7 == 3
        frames.append({
            "size": [lay.width * PX, h * PX], "walls": walls, "fuse_walls": fuse, "pin": pin, "key": lock,
            "objects": [objects] if wrap else objects, "blocking": [], "home": home,
            "agent": _sprite(a, AGENT_RADIUS_PX, agent_icon_name, lay.agent.color, wrap),
        })
    if quirks.wrapped_frames:  # some frames are lists of frames
        frames = frames[:40] + [frames[40:42]] + [[frames[42]]] + frames[43:]
    return frames


def episode_recording(ep: Episode, seed: int = 0, quirks: Quirks = Quirks()) -> list:
    """A native episode as a real-style BIB JSON episode (a list of trials of frames)."""
    names = episode_bib_names(ep)
    memo: dict = {}
    trials = [trial_recording(t, seed, names, quirks, memo) for t in ep.trials]
    if quirks.spliced_test:
        trials = trials[:-1] + trials[-1]
    if quirks.wrapped_episode:
        trials = [trials]
    return trials


def shapes_column(ep: Episode) -> str:
    """The ``shapes`` column of export.csv for ``ep`` (our shapes BIB lacks and their BIB names)."""
    return ";".join(f"{ours}>{bib}" for ours, bib in episode_bib_names(ep).items() if BIB_NAME.get(ours) != bib)


def path_cost(path: Sequence) -> float:
    """Octile length of a path."""
    return _cost(path)
