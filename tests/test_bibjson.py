"""BIB per-frame JSON: export format (v1.1 naming, BIB's sprites), round trips, real recordings, their quirks, errors."""

from __future__ import annotations

import csv
import gzip
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from bibreal import ALL_QUIRKS, Quirks, episode_recording, path_cost, shapes_column

from bib.cli import main
from bib.episode import dumps, load_episode
from bib.errors import BibInputError
from bib.render.frames import RenderSettings, frame_count
from bib.stimuli.bibjson import (
    BACKGROUND_FOLDERS,
    EVALUATION_FOLDERS,
    EXPORT_SETTINGS,
    episode_from_bib,
    episode_to_bib,
    export_bib_json,
    folder_of,
    import_bib_json,
    read_bib_file,
    strip_provenance,
)
from bib.stimuli.build import build
from bib.tasks import REGISTRY, make_unit, validate_episode, validate_pair
from bib.vocabulary import BIB_AGENT_SHAPES, BIB_OBJECT_SHAPES, HOME_COLOR

BIB_TASKS = sorted(t for t in REGISTRY if t in EVALUATION_FOLDERS or t in BACKGROUND_FOLDERS)
"""Registered tasks that have a BIB folder (the agent-evaluation grids do not)."""
V11_KEYS = ["size", "walls", "fuse_walls", "pin", "key", "objects", "blocking", "home", "agent"]
"""The public recordings' frame keys, in their order."""
REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "bib-real"
REAL_FILES = ["000010loe", "000010lou", "000011loe", "000011lou"]
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"the public BIB recordings are not at {REAL} (../shared/data/bib-real)")


@pytest.fixture(autouse=True)
def _quiet(monkeypatch) -> None:
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """Two units of every registered task, built once."""
    out = tmp_path_factory.mktemp("set")
    build([(t, 2) for t in BIB_TASKS], 11, out, workers=2)
    return out


LIGHT = RenderSettings(cell_px=20, fps=10, pause_start=0.0, pause_end=0.0, gap=0.0)
"""Fewer frames per trial (4 per step instead of 10) to keep the round trip over every task quick."""


def cli(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code


def _copy(made: Path, dest: Path, episodes) -> Path:
    (dest / "episodes").mkdir(parents=True)
    for ep in episodes:
        (dest / "episodes" / f"{ep.id}.json").write_bytes((made / "episodes" / f"{ep.id}.json").read_bytes())
    return dest


def _episodes(root: Path, task: str):
    return [load_episode(p) for p in sorted((root / "episodes").glob(f"{task}-0*.json"))]


def _unit(made: Path, task: str):
    eps = _episodes(made, task)
    if REGISTRY[task].kind == "background":
        return eps[:2]
    return [ep for ep in eps if ep.pair_id == eps[0].pair_id]


# ---------------------------------------------------------------- export


@pytest.mark.parametrize("task", BIB_TASKS)
def test_export_then_import_gives_back_the_episodes(made: Path, tmp_path: Path, task: str) -> None:
    originals = _unit(made, task)
    src = _copy(made, tmp_path / "src", originals)
    export_bib_json(src, tmp_path / "bib", settings=LIGHT if task != "single-object" else EXPORT_SETTINGS)
    summary = import_bib_json(tmp_path / "bib", tmp_path / "back")
    assert summary.problems == []
    assert summary.episodes == len(originals)
    for ep in originals:
        back = load_episode(tmp_path / "back" / "episodes" / f"{ep.id}.json")
        for a, b in zip(ep.trials, back.trials, strict=True):
            assert a.layout == b.layout  # shapes BIB lacks come back through export.csv
            assert a.path == b.path and a.events == b.events and a.goal == b.goal and a.phase == b.phase
            # our agent walks through cell centres; frames 5 px apart (LIGHT) cut a turn's corner by < 2.5 px
            assert b.recording is not None and max(b.recording.offsets) < 2.5
        assert strip_provenance(back) == strip_provenance(ep)


def test_export_writes_v11_naming_and_bibs_sprites(made: Path, tmp_path: Path) -> None:
    task = "instrumental-no-barrier"
    src = _copy(made, tmp_path / "src", _episodes(made, task))
    index = export_bib_json(src, tmp_path / "bib")
    folder = tmp_path / "bib" / folder_of(task)
    assert sorted(p.name for p in folder.glob("*.json")) == ["000000e.json", "000000u.json", "000001e.json", "000001u.json"]
    assert [r["outcome"] for r in index] == ["expected", "unexpected", "expected", "unexpected"]
    ep = load_episode(src / "episodes" / f"{task}-000000-unexpected.json")
    data = json.loads((folder / "000000u.json").read_text())
    assert len(data) == len(ep.trials) == 9
    for trial, frames in zip(ep.trials, data):
        assert len(frames) == frame_count(trial, EXPORT_SETTINGS)
        assert len(frames) >= 30 + 83 + 1  # bib-baselines skips the first 30 and last 83 frames
        h = trial.layout.height
        first, last = frames[0], frames[-1]
        assert all(list(f) == V11_KEYS for f in frames)
        hx, hy = trial.path[0]
        # origin at the bottom left, centre = corner + r: agent r 6, objects r 9 on their cells' centres
        assert first["agent"][:2] == [[20 * hx + 4, 20 * (h - 1 - hy) + 4], 6]
        assert first["home"] == [[20 * hx + 4, 20 * (h - 1 - hy) + 4], 6, "./shapes/home.png", list(HOME_COLOR)]
        ex, ey = trial.path[-1]
        assert last["agent"][0] == [20 * ex + 4, 20 * (h - 1 - ey) + 4]
        for o, s in zip(trial.layout.objects, first["objects"]):
            assert s[:2] == [[20 * o.cell[0] + 1, 20 * (h - 1 - o.cell[1]) + 1], 9] and s[3] == list(o.color)
        if trial.layout.key is not None:
            kx, ky = trial.layout.key
            assert first["pin"][0][:2] == [[20 * kx + 1, 20 * (h - 1 - ky) + 1], 9]  # v1.1: the key is "pin"
        if trial.layout.lock is not None:
            lx, ly = trial.layout.lock
            assert first["key"][0][:2] == [[20 * lx, 20 * (h - 1 - ly)], 10]  # ... and the lock is "key"
        assert first["size"] == [20 * trial.layout.width, 20 * h] and first["blocking"] == []
        assert [[0, 0], [20, 20]] in first["walls"]  # the bottom-left border cell
        assert all(isinstance(v, int) for f in frames for v in f["agent"][0])
    old = export_bib_json(src, tmp_path / "old", naming="old")
    frame = json.loads((tmp_path / "old" / old[0]["file"]).read_text())[0][0]
    assert "pin" not in frame and "blocking" not in frame and frame["key"][0][2].endswith("triangle0.png")
    assert frame["lock"][0][2].endswith("triangle_slot0.png")


def _solvingbib_cells(frame: dict, scale: int = 2):
    """Key and lock cells as probcomp/SolvingBIB.jl src/conversion.jl reads them (its json_to_pddl, 0-indexed, y from the top).

    ``pin`` is the key: its centre (pos + size) discretized on the 2x magnified grid; ``key`` is the
    lock: its corner discretized like a wall's; objects: centre on the magnified grid. Julia's
    ``round`` rounds half to even, as Python's does.
    """
    w, h = frame["size"]

    def grid(x, y, cw, gh):  # discretize_to_grid(:bottomleft, ...): 1-indexed (col, row from the top)
        return round(x / cw) + 1, round((gh * cw - y) / cw)

    lock = [grid(*pos, 20, h // 20) for pos, *_ in frame["key"]]
    key = [grid(pos[0] + r, pos[1] + r, 20 / scale, h // 20 * scale) for pos, r, *_ in frame["pin"]]
    objects = [grid(pos[0] + r, pos[1] + r, 20 / scale, h // 20 * scale) for pos, r, *_ in frame["objects"]]
    walls = {grid(*pos, 20, h // 20) for pos, _ in frame["walls"]}
    to_cell = lambda c: ((c[0] - 1) // scale, (c[1] - 1) // scale)  # noqa: E731 - magnified 1-indexed -> our cell
    return ([(c - 1, r - 1) for c, r in lock], [to_cell(c) for c in key], [to_cell(c) for c in objects],
            {(c - 1, r - 1) for c, r in walls})


@pytest.mark.parametrize("task", ["instrumental-no-barrier", "agent-blocked-instrumental", "preference"])
def test_a_solvingbib_style_reader_sees_our_key_lock_objects_and_walls(made: Path, tmp_path: Path, task: str) -> None:
    eps = _unit(made, task)
    for ep in eps:
        for trial, frames in zip(ep.trials, episode_to_bib(ep, LIGHT)):
            lay = trial.layout
            lock, key, objects, walls = _solvingbib_cells(frames[0])
            assert lock == ([lay.lock] if lay.lock else []) and key == ([lay.key] if lay.key else [])
            assert objects == [o.cell for o in lay.objects] and walls == set(lay.walls)


def test_exported_frames_follow_the_renderers_timing(made: Path) -> None:
    """Export reads the renderer's per-frame states (bib.render.frames.trial_state_arrays, the one timing
    source): odd speed, fps and unlock pause give the renderer's frame count, agent position, key and barrier."""
    from bib.render.frames import trial_state_arrays

    s = RenderSettings(fps=7, speed=3.3, unlock_pause=1.3, pause_start=0.3, pause_end=0.5)
    unlocked = 0
    for ep in _unit(made, "instrumental-blocking"):
        for trial, frames in zip(ep.trials, episode_to_bib(ep, s), strict=True):
            st = trial_state_arrays(trial, s)
            assert len(frames) == len(st.index) == frame_count(trial, s)
            h = trial.layout.height
            for f, k in zip(frames, st.index, strict=True):
                x, y = (st.x[k] + 0.5) * 20, (h - 0.5 - st.y[k]) * 20
                assert f["agent"][0] == [round(x - 6), round(y - 6)]
                assert (f["fuse_walls"] == []) == (st.fade[k] == 0.0 or not trial.layout.barriers)
                if trial.layout.key is not None and st.carrying[k]:
                    assert f["pin"][0][0] == [round(x - 9), round(y - 9)]  # carried with the agent
                elif trial.layout.key is not None and st.before_pickup[k]:
                    kx, ky = trial.layout.key
                    assert f["pin"][0][0] == [20 * kx + 1, 20 * (h - 1 - ky) + 1]
                else:
                    assert f["pin"] == []
            unlocked += trial.unlock_step() is not None
    assert unlocked > 0  # the barrier's fade was exercised


def test_every_exported_icon_is_in_bibs_sprite_vocabulary(made: Path, tmp_path: Path) -> None:
    """An IRENE-style parser asserts every icon is one of BIB's sprites; every exported episode passes."""
    allowed_objects = set(BIB_OBJECT_SHAPES)
    allowed_agents = set(BIB_AGENT_SHAPES)
    other = {"home", "triangle0", "triangle90", "triangle180", "triangle270",
             "triangle_slot0", "triangle_slot90", "triangle_slot180", "triangle_slot270"}
    n = 0
    for task in BIB_TASKS:
        for ep in _episodes(made, task):
            n += 1
            names = set()
            for frames in episode_to_bib(ep, LIGHT):
                for f in frames:
                    stem = lambda s: s[2].rsplit("/", 1)[-1].removesuffix(".png")  # noqa: E731
                    assert {stem(o) for o in f["objects"]} <= allowed_objects
                    assert stem(f["agent"]) in allowed_agents and stem(f["home"]) in other
                    assert {stem(s) for s in f["pin"] + f["key"]} <= other
                    names |= {(stem(o), tuple(o[3])) for o in f["objects"]}
            looks = {(o.shape, o.color) for t in ep.trials for o in t.layout.objects}
            assert len(names) == len(looks)  # objects that differ still differ
    assert n == 2 * 2 * 9 + 2 * 4  # two pairs of every condition, two episodes of every background task


def test_exported_video_matches_the_json_frames(made: Path, tmp_path: Path) -> None:
    import cv2

    src = _copy(made, tmp_path / "src", _episodes(made, "single-object")[:1])
    export_bib_json(src, tmp_path / "bib", video=True)
    data = json.loads((tmp_path / "bib" / "single_object" / "000000e.json").read_text())
    cap = cv2.VideoCapture(str(tmp_path / "bib" / "single_object" / "000000e.mp4"))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == sum(len(t) for t in data)
    assert (cap.get(cv2.CAP_PROP_FRAME_WIDTH), cap.get(cv2.CAP_PROP_FRAME_HEIGHT), cap.get(cv2.CAP_PROP_FPS)) == (200, 200, 25)


def test_export_refuses_two_tasks_in_one_bib_folder(made: Path, tmp_path: Path) -> None:
    src = tmp_path / "src" / "episodes"
    src.mkdir(parents=True)
    for i, ep in enumerate(_episodes(made, "single-object")):
        text = (made / "episodes" / f"{ep.id}.json").read_text()
        if i == 0:  # pretend one is a multi-agent-background episode, the other a multi-agent pair member
            text = text.replace('"task": "single-object"', '"task": "multi-agent-background"')
        else:
            text = text.replace('"task": "single-object"', '"task": "multi-agent"')
        (src / f"{ep.id}.json").write_text(text)
    with pytest.raises(BibInputError, match=r"both export to folder 'multi_agent'; export them separately"):
        export_bib_json(tmp_path / "src", tmp_path / "bib")
    assert not (tmp_path / "bib").exists()


def test_export_and_import_keep_to_their_out_folder(made: Path, tmp_path: Path, capsys) -> None:
    src = _copy(made, tmp_path / "src", _unit(made, "preference"))
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert cli(["export", str(src), "--out", str(other)]) == 2
    assert "folder holds files not written by bib" in capsys.readouterr().err and (other / "notes.txt").exists()
    assert cli(["export", str(src), "--out", str(tmp_path / "bib")]) == 0
    assert cli(["export", str(src), "--out", str(tmp_path / "bib")]) == 0  # its own earlier output: replaced
    assert cli(["import", str(tmp_path / "bib"), "--out", str(other)]) == 2
    assert cli(["import", str(tmp_path / "bib"), "--out", str(other), "--force"]) == 0
    assert not (other / "notes.txt").exists() and (other / "manifest.csv").exists()
    assert cli(["import", str(tmp_path / "bib"), "--out", str(other)]) == 0  # rerun into its own folder


# ---------------------------------------------------------------- the public recordings


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Path:
    """The shared recordings imported with `bib import DIR --task preference --out OUT`."""
    if not REAL.is_dir():
        pytest.skip(f"the public BIB recordings are not at {REAL}")
    out = tmp_path_factory.mktemp("real") / "imported"
    assert cli(["import", str(REAL), "--task", "preference", "--out", str(out)]) == 0
    return out


@needs_real
def test_public_recordings_import_with_their_goals(real: Path) -> None:
    rows = list(csv.DictReader(open(real / "manifest.csv")))
    assert len(rows) == 4
    for name in REAL_FILES:
        raw = read_bib_file(REAL / f"{name}.json.gz")
        outcome = "expected" if name.endswith("e") else "unexpected"
        pair = "preference-000000" if name.startswith("000010") else "preference-000001"
        ep = load_episode(real / "episodes" / f"{pair}-{outcome}.json")
        assert validate_episode(ep) == []  # generic rules (legal, shortest-length moves) and the preference rule
        assert len(ep.trials) == len(raw) == 9
        for trial, frames in zip(ep.trials, raw, strict=True):
            rec = trial.recording
            # nothing lost: the agent's centre at every frame, the objects' centres
            assert rec.agent == tuple((f["agent"][0][0] + 6, f["agent"][0][1] + 6) for f in frames)
            assert rec.objects == tuple((o[0][0] + 9, o[0][1] + 9) for o in frames[0]["objects"])
            assert len(rec.offsets) == len(trial.path) and max(rec.offsets) < 20.0
            # the goal is the nearest object at the end: 7-12.5 px away, the other one >= 36.8 px
            end = rec.agent[-1]
            d = sorted((math.dist(end, c), o.id) for o, c in zip(trial.layout.objects, rec.objects))
            assert d[0][1] == trial.goal and 7.0 <= d[0][0] <= 12.5 and d[1][0] >= 36.8
        # the agent prefers one object in familiarization; the test shows it going to it (e) or to the other (u)
        fam = {t.goal for t in ep.familiarization}
        assert len(fam) == 1
        assert (ep.test.goal in fam) == (outcome == "expected")


@needs_real
def test_public_recordings_paths_are_king_move_paths(real: Path) -> None:
    ep = load_episode(real / "episodes" / "preference-000000-expected.json")
    # trial 8 of 000010loe: a diagonal from home, then straight down to the object (no staircase)
    assert ep.trials[8].path == ((7, 2), (6, 3), (5, 4), (5, 5), (5, 6), (5, 7))
    # trial 0: a shallow line from (7, 2) to the flag at (8, 6) takes 4 moves, one diagonal
    assert ep.trials[0].path[0] == (7, 2) and ep.trials[0].path[-1] == (8, 6) and len(ep.trials[0].path) == 5


@needs_real
def test_inverse_planner_gets_the_public_pairs_right(real: Path) -> None:
    from bib.observers.registry import make_observer

    obs = make_observer("inverse-planner")
    for pair in ("preference-000000", "preference-000001"):
        e = load_episode(real / "episodes" / f"{pair}-expected.json")
        u = load_episode(real / "episodes" / f"{pair}-unexpected.json")
        assert validate_pair(e, u) == []
        assert obs.surprise(e).max() < obs.surprise(u).max()


@needs_real
def test_public_recordings_import_export_import_is_stable(real: Path, tmp_path: Path) -> None:
    assert cli(["export", str(real), "--out", str(tmp_path / "bib")]) == 0
    assert cli(["import", str(tmp_path / "bib"), "--out", str(tmp_path / "again")]) == 0
    for f in sorted((real / "episodes").glob("*.json")):
        a, b = load_episode(f), load_episode(tmp_path / "again" / "episodes" / f.name)
        assert replace(a, generator={}) == replace(b, generator={})  # recordings, paths, goals: identical


def test_fast_parse_equals_json_loads() -> None:
    from bib.stimuli.bibjson import loads_bib

    text = (b'[[{"size": [200, 200], "walls" : [ [[0, 0], [20, 20]] , [[20,0],[20,20]] ], "agent": [[4, 4], 6, "a.png", [1, 2, 3]]},'
            b' [{"walls": [[[0,0],[20,20]],[[20,0],[20,20]]]}, {"walls": [[[[0, 0], [20, 20]]]]}]], {"walls": []}]')
    assert loads_bib(text) == json.loads(text)
    odd = b'[[{"walls": [[[0,0],[20,20]], null], "k": [1]}, {"walls": [[[0,0],[20,20]]]}], [{"walls":[]}]]'
    assert loads_bib(odd) == json.loads(odd)  # not numbers only: read as json.loads reads it
    with pytest.raises(json.JSONDecodeError, match="line 1 column 40"):
        loads_bib(b'[[{"walls": [[[0,0],[20,20]]], "x": 1, }]]')
    if REAL.is_dir():
        for name in REAL_FILES[:2]:
            data = gzip.decompress((REAL / f"{name}.json.gz").read_bytes())
            assert loads_bib(data) == json.loads(data)


# ---------------------------------------------------------------- real-style recordings of our episodes


def _write_real_style(eps, folder: Path, quirks: Quirks, seed: int = 1, gz: bool = False, start: int = 0) -> None:
    """``eps`` as real-style recordings named like the public files, with an export.csv for shapes BIB lacks."""
    folder.mkdir(parents=True, exist_ok=True)
    index = folder / "export.csv"
    rows = index.read_text().splitlines() if index.exists() else ["file,episode_id,task,outcome,shapes"]
    for k, ep in enumerate(eps, start=start):
        name = f"{k // 2 if ep.outcome != 'none' else k:06d}lo{'u' if ep.outcome == 'unexpected' else 'e'}.json"
        text = json.dumps(episode_recording(ep, seed, quirks), separators=(",", ":"))
        if gz:
            (folder / f"{name}.gz").write_bytes(gzip.compress(text.encode()))
            name += ".gz"
        else:
            (folder / name).write_text(text)
        rows.append(f"{name},{ep.id},{ep.task},{ep.outcome},{shapes_column(ep)}")
    index.write_text("\n".join(rows) + "\n")


def _units(task: str, n: int, seed: int = 7):
    return [ep for u in range(n) for ep in make_unit(task, u, seed)]


REAL_STYLE_TASKS = [*sorted(EVALUATION_FOLDERS), *sorted(BACKGROUND_FOLDERS)]


@pytest.mark.parametrize("task", REAL_STYLE_TASKS)
def test_real_style_recordings_import_to_the_native_goals_costs_and_events(tmp_path: Path, task: str) -> None:
    eps = _units(task, 2)
    folder = tmp_path / "recordings"
    _write_real_style(eps[: len(eps) // 2], folder, Quirks())
    _write_real_style(eps[len(eps) // 2 :], folder, ALL_QUIRKS, gz=True, start=len(eps) // 2)
    summary = import_bib_json(folder, tmp_path / "imported", task=task)
    assert summary.problems == []  # every rule of the condition holds, as for the native episodes
    for ep in eps:
        # make_unit names units <task>-<index:06d>, as the importer names files in sorted order
        back = load_episode(tmp_path / "imported" / "episodes" / f"{ep.id}.json")
        for a, b in zip(ep.trials, back.trials, strict=True):
            assert a.layout == b.layout
            assert b.goal == a.goal
            assert [e.type for e in b.events] == [e.type for e in a.events]
            assert path_cost(b.path) == pytest.approx(path_cost(a.path))  # the same moves, maybe in another order


def test_each_quirk_alone_imports_like_a_clean_recording() -> None:
    ep = make_unit("instrumental-no-barrier", 1, 7)[0]  # key, lock, barrier fade
    clean = None
    for name in ("none", "duplicate_walls", "fade", "wrapped_fields", "wrapped_frames", "spliced_test", "wrapped_episode"):
        q = Quirks(duplicate_walls=False, fade=False)
        if name != "none":
            q = replace(q, **{name: True})
        raw = episode_recording(ep, 3, q)
        if name == "spliced_test":
            assert len(raw) > 9 and isinstance(raw[8], dict)
        got = episode_from_bib(raw, episode_id=ep.id, pair_id=ep.pair_id, task=ep.task, outcome=ep.outcome, source="x")
        clean = clean or got
        assert got == clean, name
    assert [e.type for e in clean.trials[0].events] == ["pickup-key", "unlock"]


def test_inverse_planner_scores_real_style_pairs_as_the_native_ones(tmp_path: Path) -> None:
    """One pair of every condition; `-m slow` runs 20 per condition."""
    _inverse_planner_parity(tmp_path, 1)


@pytest.mark.slow
def test_inverse_planner_scores_many_real_style_pairs_as_the_native_ones(tmp_path: Path) -> None:
    _inverse_planner_parity(tmp_path, 20)


def _inverse_planner_parity(tmp_path: Path, n: int) -> None:
    from bib.observers.registry import make_observer

    obs = make_observer("inverse-planner")
    report = {}
    for task in sorted(EVALUATION_FOLDERS):
        eps = _units(task, n, seed=13)
        _write_real_style(eps, tmp_path / task / "rec", ALL_QUIRKS)
        import_bib_json(tmp_path / task / "rec", tmp_path / task / "imp", task=task)
        right = [0, 0]
        for e, u in zip(eps[::2], eps[1::2]):
            native = obs.surprise(e).max() < obs.surprise(u).max()
            be = load_episode(tmp_path / task / "imp" / "episodes" / f"{e.id}.json")
            bu = load_episode(tmp_path / task / "imp" / "episodes" / f"{u.id}.json")
            imported = obs.surprise(be).max() < obs.surprise(bu).max()
            assert imported == native, e.pair_id
            right[0] += native
            right[1] += imported
        report[task] = right
    print("inverse-planner pairs right (native, real-style imported):", report)


def test_real_style_import_export_import_is_stable(tmp_path: Path) -> None:
    eps = make_unit("instrumental-inconsequential", 0, 7) + make_unit("efficiency-irrational", 0, 7)
    for task in ("instrumental-inconsequential", "efficiency-irrational"):
        _write_real_style([ep for ep in eps if ep.task == task], tmp_path / task / "rec", ALL_QUIRKS)
        assert cli(["import", str(tmp_path / task / "rec"), "--task", task, "--out", str(tmp_path / task / "a")]) == 0
        assert cli(["export", str(tmp_path / task / "a"), "--out", str(tmp_path / task / "bib")]) == 0
        assert cli(["import", str(tmp_path / task / "bib"), "--out", str(tmp_path / task / "b")]) == 0
        for f in sorted((tmp_path / task / "a" / "episodes").glob("*.json")):
            a, b = load_episode(f), load_episode(tmp_path / task / "b" / "episodes" / f.name)
            assert replace(a, generator={}) == replace(b, generator={})
            assert dumps(replace(a, generator={})) == dumps(replace(b, generator={}))


# ---------------------------------------------------------------- path geometry


def test_line_cells_take_king_moves_at_any_angle() -> None:
    from bib.stimuli.trajectory import line_cells

    rng = np.random.default_rng(0)
    for _ in range(2000):
        p = tuple(rng.uniform(1, 9, 2))
        q = tuple(rng.uniform(1, 9, 2))
        cells = line_cells(p, q)
        c0, c1 = (int(p[0]), int(p[1])), (int(q[0]), int(q[1]))
        assert cells[0] == c0 and cells[-1] == c1
        assert len(cells) - 1 == max(abs(c1[0] - c0[0]), abs(c1[1] - c0[1]))  # as many moves as a king needs
        assert all(max(abs(a[0] - b[0]), abs(a[1] - b[1])) == 1 for a, b in zip(cells, cells[1:]))
    # trial 0 of 000010loe: home (157, 145) px to the flag (163, 70) px is 4 rows down and 1 column across:
    # 4 moves, one diagonal, where the line crosses the column (snapping frames gives a 5-move staircase)
    assert line_cells((7.85, 2.75), (8.15, 6.5)) == [(7, 2), (7, 3), (7, 4), (8, 5), (8, 6)]
    assert line_cells((7.85, 2.75), (8.15, 5.5)) == [(7, 2), (7, 3), (8, 4), (8, 5)]


def test_runs_go_round_wall_corners_and_keep_king_move_length() -> None:
    from bib.stimuli.trajectory import PathBuilder
    from bib.tasks.common import empty_layout
    from bib.world.grid import Agent

    agent = (Agent("a", "kite", (0, 0, 0), (1, 1)),)
    free = empty_layout(agents=agent)
    b = PathBuilder(free, (1, 1))
    assert b.run((1.5, 1.5), (4.5, 2.5)) and b.path == [(1, 1), (2, 1), (3, 2), (4, 2)]
    # a diagonal across a wall's corner is not a move: the run goes round through the free neighbour
    walled = empty_layout(walls=frozenset({(2, 1)}), agents=agent)
    b = PathBuilder(walled, (1, 1))
    assert b.run((1.5, 1.5), (2.5, 2.5)) and b.path == [(1, 1), (1, 2), (2, 2)]
    # where another cell of the line's corridor keeps the king-move length, it is taken instead of a detour
    b = PathBuilder(empty_layout(walls=frozenset({(3, 1)}), agents=agent), (1, 1))
    assert b.run((1.5, 1.5), (4.5, 2.6)) and b.path == [(1, 1), (2, 2), (3, 2), (4, 2)]
    boxed = empty_layout(walls=frozenset({(2, 1), (1, 2), (2, 2)}), agents=agent)
    assert not PathBuilder(boxed, (1, 1)).run((1.5, 1.5), (3.5, 3.5))


# ---------------------------------------------------------------- bad input


def _frames_of(ep):
    return json.loads(json.dumps(episode_recording(ep, 0, Quirks())))


@pytest.mark.parametrize("case", ["not-bib", "episode-json", "malformed", "no-frames", "never-near", "no-json", "bad-agent"])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path: Path, capsys, case: str) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    ep = make_unit("single-object", 0, 5)[0]
    raw = _frames_of(ep)
    expect = ""
    if case == "not-bib":
        (folder / "000000e.json").write_text(json.dumps({"hello": 1}))
        expect = r"in/000000e\.json: not BIB JSON \(expected a list of trials"
    elif case == "episode-json":
        (folder / "000000e.json").write_text(dumps(ep))
        expect = r"000000e\.json: not BIB JSON"
    elif case == "malformed":
        (folder / "000000e.json").write_text("[[{")
        expect = r"000000e\.json: not BIB JSON \(malformed JSON at line 1 column"
    elif case == "no-frames":
        raw[3] = []
        (folder / "000000e.json").write_text(json.dumps(raw))
        expect = r"000000e\.json trial 3: no frames"
    elif case == "never-near":
        for f in raw[5]:
            f["agent"] = [[30, 30], 6, f["agent"][2], f["agent"][3]]
        (folder / "000000e.json").write_text(json.dumps(raw))
        expect = (r"000000e\.json trial 5 frame \d+: the agent ends at \(36, 36\) px, [\d.]+ px from the nearest object; "
                  r"no object within one cell \(20 px\)")
    elif case == "no-json":
        (folder / "notes.txt").write_text("x")
        expect = r"in: no BIB JSON files"
    elif case == "bad-agent":
        raw[2][7]["agent"] = [["a", 3], 6, "x.png", [0, 0, 0]]
        (folder / "000000e.json").write_text(json.dumps(raw))
        expect = r"000000e\.json trial 2 frame 7: field 'agent': expected \[\[x, y\], r, icon, \[R, G, B\]\]"
    out = tmp_path / "out"
    assert cli(["import", str(folder), "--task", "single-object", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("bib: error: "), err
    import re

    assert re.search(expect, err), err
    assert not out.exists() and not any(p.name.startswith(".out") for p in tmp_path.iterdir())


def test_folder_names_and_pairing_are_checked(tmp_path: Path) -> None:
    anyname = tmp_path / "recordings"
    anyname.mkdir()
    (anyname / "000000e.json").write_text("[]")
    with pytest.raises(BibInputError, match=r"folder name 'recordings' is not a BIB task folder .*; pass --task ID"):
        import_bib_json(anyname, tmp_path / "o")
    pref = tmp_path / "bib2" / "preference"
    pref.mkdir(parents=True)
    for name in ("000000e.json", "000001u.json", "000002u.json", "000003e.json"):
        (pref / name).write_text("[]")
    with pytest.raises(BibInputError, match=r"000002u.json: expected an 'e' file at position 2"):
        import_bib_json(tmp_path / "bib2", tmp_path / "o2")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(BibInputError, match=r"empty: no BIB JSON files \(\*\.json\) in it or in BIB task folders inside it"):
        import_bib_json(empty, tmp_path / "o4")
