"""BIB per-frame JSON: export format, export -> import round trip for every task, v1.1 quirks, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bib.episode import load_episode
from bib.errors import BibInputError
from bib.render.frames import RenderSettings, frame_count
from bib.stimuli.bibjson import (
    BACKGROUND_FOLDERS,
    EVALUATION_FOLDERS,
    EXPORT_SETTINGS,
    derive_path,
    episode_to_bib,
    export_bib_json,
    folder_of,
    import_bib_json,
    strip_provenance,
)
from bib.stimuli.build import build
from bib.tasks import REGISTRY
from bib.tasks.common import empty_layout
from bib.world.grid import Agent

BIB_TASKS = sorted(t for t in REGISTRY if t in EVALUATION_FOLDERS or t in BACKGROUND_FOLDERS)
"""Registered tasks that have a BIB folder (the agent-evaluation grids do not)."""
KEYS = {"size", "walls", "fuse_walls", "agent", "home", "objects", "key", "lock"}


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


def _copy(made: Path, dest: Path, episodes) -> Path:
    (dest / "episodes").mkdir(parents=True)
    for ep in episodes:
        (dest / "episodes" / f"{ep.id}.json").write_bytes((made / "episodes" / f"{ep.id}.json").read_bytes())
    return dest


def _episodes(root: Path, task: str):
    return [load_episode(p) for p in sorted((root / "episodes").glob(f"{task}-0*.json"))]


@pytest.mark.parametrize("task", BIB_TASKS)
def test_export_then_import_gives_back_the_episodes(made: Path, tmp_path: Path, task: str) -> None:
    originals = _episodes(made, task)[:2 if REGISTRY[task].kind == "background" else 1]
    if REGISTRY[task].kind == "evaluation":
        originals = [ep for ep in _episodes(made, task) if ep.pair_id == originals[0].pair_id]
    src = _copy(made, tmp_path / "src", originals)
    export_bib_json(src, tmp_path / "bib", settings=LIGHT if task != "single-object" else EXPORT_SETTINGS)
    summary = import_bib_json(tmp_path / "bib", tmp_path / "back")
    assert summary.problems == []
    assert summary.episodes == len(originals)
    for ep in originals:
        back = load_episode(tmp_path / "back" / "episodes" / f"{ep.id}.json")
        for a, b in zip(ep.trials, back.trials, strict=True):
            assert a.layout == b.layout
            assert a.path == b.path and a.events == b.events and a.goal == b.goal and a.phase == b.phase
        assert strip_provenance(back) == strip_provenance(ep)


def test_export_layout_naming_and_frames(made: Path, tmp_path: Path) -> None:
    task = next(t for t in BIB_TASKS if REGISTRY[t].kind == "evaluation")
    src = _copy(made, tmp_path / "src", _episodes(made, task))
    index = export_bib_json(src, tmp_path / "bib")
    folder = tmp_path / "bib" / folder_of(task)
    names = sorted(p.name for p in folder.glob("*.json"))
    assert names == ["000000e.json", "000000u.json", "000001e.json", "000001u.json"]
    assert [r["outcome"] for r in index] == ["expected", "unexpected", "expected", "unexpected"]
    ep = load_episode(src / "episodes" / f"{task}-000000-unexpected.json")
    data = json.loads((folder / "000000u.json").read_text())
    assert len(data) == len(ep.trials) == 9
    for trial, frames in zip(ep.trials, data):
        assert len(frames) == frame_count(trial, EXPORT_SETTINGS)
        assert len(frames) >= 30 + 83 + 1  # bib-baselines skips the first 30 and last 83 frames
        for f in frames:
            assert set(f) == KEYS
        h = trial.layout.height
        first, last = frames[0], frames[-1]
        hx, hy = trial.path[0]
        # origin at the bottom left: cell (x, y from the top) -> corner (20 x, 20 (H - 1 - y))
        assert first["agent"][0] == [20 * hx, 20 * (h - 1 - hy)] and first["agent"][1] == 10
        assert first["home"][0] == first["agent"][0]
        ex, ey = trial.path[-1]
        assert last["agent"][0] == [20 * ex, 20 * (h - 1 - ey)]
        assert first["size"] == [20 * trial.layout.width, 20 * h]
        assert [[0, 0], [20, 20]] in first["walls"]  # the bottom-left border cell
        assert all(isinstance(v, int) for f in frames for v in f["agent"][0])
        assert first["agent"][2] == f"agents/{trial.agent.shape}.png" and first["agent"][3] == list(trial.agent.color)


def test_exported_video_matches_the_json_frames(made: Path, tmp_path: Path) -> None:
    import cv2

    src = _copy(made, tmp_path / "src", _episodes(made, "single-object")[:1])
    export_bib_json(src, tmp_path / "bib", video=True)
    data = json.loads((tmp_path / "bib" / "single_object" / "000000e.json").read_text())
    cap = cv2.VideoCapture(str(tmp_path / "bib" / "single_object" / "000000e.mp4"))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == sum(len(t) for t in data)
    assert (cap.get(cv2.CAP_PROP_FRAME_WIDTH), cap.get(cv2.CAP_PROP_FRAME_HEIGHT), cap.get(cv2.CAP_PROP_FPS)) == (200, 200, 25)


def _quirky(trials: list) -> list:
    """Apply every v1.1 quirk of reference/bib.md 1b to exported trials."""
    out = []
    for frames in trials:
        new = []
        for k, f in enumerate(frames):
            g = dict(f)
            g["walls"] = f["walls"] + f["walls"][:5]  # duplicate walls
            if f["fuse_walls"]:
                g["fuse_walls"] = f["fuse_walls"] + [[[x + 7, y + 3], s] for (x, y), s in f["fuse_walls"]]  # off-grid
            g["agent"] = [f["agent"]]  # extra list wrapping
            g["objects"] = [f["objects"]]
            g["pin"], g["key"] = f["key"], f["lock"]  # older naming: pin = key, key = lock
            del g["lock"]
            new.append(g)
        out.append(new)
    return [out]  # the whole episode wrapped once more


def test_import_tolerates_the_v11_quirks(made: Path, tmp_path: Path) -> None:
    task = next((t for t in BIB_TASKS if "instrumental" in t), "single-object")
    ep = _episodes(made, task)[0]
    folder = tmp_path / "bib" / folder_of(task)
    folder.mkdir(parents=True)
    quirky = _quirky(episode_to_bib(ep, LIGHT))
    if ep.outcome == "none":
        (folder / "000000e.json").write_text(json.dumps(quirky))
    else:
        other = _episodes(made, task)[1]
        (folder / "000000e.json").write_text(json.dumps(quirky))
        (folder / "000000u.json").write_text(json.dumps(_quirky(episode_to_bib(other, LIGHT))))
    summary = import_bib_json(folder, tmp_path / "back")
    back = load_episode(next(iter(sorted((tmp_path / "back" / "episodes").glob("*.json")))))
    assert summary.episodes >= 1
    for a, b in zip(ep.trials, back.trials, strict=True):
        assert a.layout == b.layout and a.path == b.path and a.events == b.events


def test_derive_path_smooths_zigzags_and_fills_jumps() -> None:
    lay = empty_layout(agents=(Agent("a", "kite", (0, 0, 0), (1, 1)),))
    # a one-frame visit to a corner cell between two diagonal neighbours is motion noise
    assert derive_path(lay, [((1, 1), 10), ((2, 1), 1), ((2, 2), 10)]) == ((1, 1), (2, 2))
    # a long visit is a real orthogonal detour
    assert derive_path(lay, [((1, 1), 10), ((2, 1), 10), ((2, 2), 10)]) == ((1, 1), (2, 1), (2, 2))
    # skipped cells are filled with king moves
    assert derive_path(lay, [((1, 1), 5), ((4, 2), 5)]) == ((1, 1), (2, 2), (3, 2), (4, 2))
    # a diagonal that would cut a wall corner goes round it
    walled = empty_layout(walls=frozenset({(2, 1)}), agents=lay.agents)
    assert derive_path(walled, [((1, 1), 5), ((2, 2), 5)]) == ((1, 1), (1, 2), (2, 2))
    boxed = empty_layout(walls=frozenset({(2, 1), (1, 2), (2, 2)}), agents=lay.agents)
    with pytest.raises(BibInputError, match="crosses a wall"):
        derive_path(boxed, [((1, 1), 5), ((3, 3), 5)], where="f.json trial 0")


def test_import_errors_are_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "bib" / "single_object"
    folder.mkdir(parents=True)
    (folder / "000000e.json").write_text("[[{")
    with pytest.raises(BibInputError, match=r"000000e.json: malformed JSON at line 1"):
        import_bib_json(tmp_path / "bib", tmp_path / "o")
    (folder / "000000e.json").write_text(json.dumps([[{"size": "big"}], [{"size": "big"}]]))
    with pytest.raises(BibInputError, match=r"000000e.json trial 0 frame 0: field 'size'"):
        import_bib_json(tmp_path / "bib", tmp_path / "o")
    pref = tmp_path / "bib2" / "preference"
    pref.mkdir(parents=True)
    for name in ("000000e.json", "000001u.json", "000002u.json"):
        (pref / name).write_text("[]")
    with pytest.raises(BibInputError, match=r"000002u.json: expected an 'e' file at position 2"):
        import_bib_json(tmp_path / "bib2", tmp_path / "o2")
    with pytest.raises(BibInputError, match=r"no BIB task folders"):
        import_bib_json(tmp_path, tmp_path / "o3")


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
