"""Building stimulus sets: determinism across workers, resuming, seeds, limits, orders.csv, Dask."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from bib.cli import main
from bib.errors import BibInputError
from bib.stimuli.build import build, build_spec
from bib.stimuli.manifest import read_manifest
from bib.stimuli.spec import load_spec, override, parse_spec
from bib.tasks import REGISTRY

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch) -> None:
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")


def _run(args: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 0


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _all_tasks_spec(n: int = 1) -> dict:
    return {"name": "all", "seed": 5, "tasks": [{"id": t, "n": n} for t in sorted(REGISTRY)]}


def test_every_registered_task_builds_identically_with_1_and_2_workers(tmp_path: Path) -> None:
    spec = parse_spec(_all_tasks_spec(), "t")
    a = build_spec(spec, tmp_path / "a", workers=1)
    b = build_spec(spec, tmp_path / "b", workers=2)
    fa, fb = _files(a.out), _files(b.out)
    assert fa == fb
    rows = read_manifest(a.out)
    want = sum(2 if REGISTRY[t].kind == "evaluation" else 1 for t in REGISTRY)
    assert len(rows) == a.episodes == want
    assert {r["task"] for r in rows} == set(REGISTRY)
    assert load_spec(a.out / "spec.toml") == spec


def test_resume_keeps_intact_units_and_rebuilds_missing_ones(tmp_path: Path) -> None:
    out = tmp_path / "set"
    first = build([("single-object", 4)], 3, out)
    before = _files(out)
    again = build([("single-object", 4)], 3, out)
    assert (again.built, again.kept) == (0, 4)
    (out / "episodes" / "single-object-000002.json").unlink()
    (out / "episodes" / "single-object-000001.json").write_text("tampered")
    third = build([("single-object", 4)], 3, out)
    assert (third.built, third.kept) == (2, 2)
    assert _files(out) == before
    assert first.episodes == third.episodes == 4


def test_a_new_seed_rebuilds_everything(tmp_path: Path) -> None:
    out = tmp_path / "set"
    build([("single-object", 3)], 1, out)
    old = _files(out)
    second = build([("single-object", 3)], 2, out)
    assert (second.built, second.kept) == (3, 0)
    fresh = build([("single-object", 3)], 2, tmp_path / "fresh")
    assert _files(out)["manifest.csv"] == _files(fresh.out)["manifest.csv"] != old["manifest.csv"]


def test_videos_are_rebuilt_when_render_settings_change(tmp_path: Path) -> None:
    from bib.render.frames import RenderSettings

    out = tmp_path / "set"
    small = RenderSettings(cell_px=4, fps=5)
    build([("single-object", 1)], 0, out, video=True, settings=small)
    assert build([("single-object", 1)], 0, out, video=True, settings=small).built == 0
    assert build([("single-object", 1)], 0, out, video=True, settings=RenderSettings(cell_px=4, fps=6)).built == 1
    assert build([("single-object", 1)], 0, out, video=False).built == 0  # episodes are still intact


def test_videos_are_rebuilt_when_an_encoder_setting_changes(tmp_path: Path) -> None:
    """A preset, crf or colour change leaves size, frame rate and frame count alone: the render stamp
    (render.json, per task) shows it, and only the tasks it concerns are re-rendered."""
    import json
    from dataclasses import replace

    from bib.render.frames import RenderSettings

    out = tmp_path / "set"
    small = RenderSettings(cell_px=4, fps=5)
    units = [("single-object", 1), ("preference", 1)]
    first = build(units, 0, out, video=True, settings=small)
    video = next((out / "videos").glob("single-object-*.mp4"))
    before = video.read_bytes()
    for change in ({"crf": 30}, {"preset": "veryfast"}, {"background": (250, 250, 250)}):
        again = build(units, 0, out, video=True, settings=replace(small, **change))
        assert (again.built, again.kept) == (2, 0), change
        assert video.read_bytes() != before
        before = video.read_bytes()
    assert build(units, 0, out, video=True, settings=replace(small, background=(250, 250, 250))).built == 0
    stamps = json.loads((out / "render.json").read_text())
    assert set(stamps) == {"single-object", "preference"} and stamps["preference"]["background"] == [250, 250, 250]
    from bib.stimuli.check import check_path

    assert check_path(out, progress=False).problems == []  # the stamp is not a stray file of the set
    # another set's task in the same folder keeps its own stamp and videos
    other = build([("single-object", 1)], 0, out, video=True, settings=small)
    assert other.built == 1 and build(units[1:], 0, out, video=True, settings=replace(small, background=(250, 250, 250))).built == 0
    assert first.episodes == 3


def test_limit_caps_units_per_task(tmp_path: Path) -> None:
    spec = parse_spec({"name": "l", "tasks": [{"id": "single-object", "n": 50}]}, "t")
    summary = build_spec(spec, tmp_path / "l", limit=2)
    assert summary.episodes == 2
    with pytest.raises(ValueError, match="negative limit"):
        build([("single-object", 1)], 0, tmp_path / "x", limit=-1)


def test_generate_task_cli_still_works(tmp_path: Path) -> None:
    _run(["generate", "--task", "single-object", "--n", "2", "--seed", "4", "--out", str(tmp_path / "t")])
    rows = read_manifest(tmp_path / "t")
    assert [r["episode_id"] for r in rows] == ["single-object-000000", "single-object-000001"]
    direct = build([("single-object", 2)], 4, tmp_path / "d")
    assert (tmp_path / "t" / "manifest.csv").read_bytes() == (direct.out / "manifest.csv").read_bytes()


def test_generate_spec_cli_with_limit_and_seed_override(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\nseed = 1\n[[tasks]]\nid = "single-object"\nn = 9\n')
    _run(["generate", str(spec), "--out", str(tmp_path / "o"), "--limit", "3", "--seed", "8"])
    assert len(read_manifest(tmp_path / "o")) == 3
    saved = load_spec(tmp_path / "o" / "spec.toml")
    assert saved.seed == 8 and saved.units == [("single-object", 9)]
    assert (tmp_path / "o" / "spec.toml").read_text().startswith("# built with --limit 3")
    direct = build([("single-object", 3)], 8, tmp_path / "d")
    assert (tmp_path / "o" / "manifest.csv").read_bytes() == (direct.out / "manifest.csv").read_bytes()


def _need(ids: list[str]) -> None:
    missing = [i for i in ids if i not in REGISTRY]
    if missing:
        pytest.skip(f"tasks not registered yet: {', '.join(missing)}")


def _orders(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_orders_csv_is_counterbalanced(tmp_path: Path) -> None:
    _need(["preference", "efficiency-path"])
    spec = load_spec(ROOT / "stimuli" / "infant-pilot.toml")
    quick = override(spec, "t", video=False, per_trial=False, cell_px=8, canvas=None)
    summary = build_spec(quick, tmp_path / "pilot", limit=2)
    rows = _orders(summary.out / "orders.csv")
    n_orders = quick.orders.n_orders
    assert list(rows[0]) == ["order", "position", "task", "pair_id", "phase", "trial", "outcome", "test_position",
                             "episode_id", "video_path", "fps", "video_frames", "outcome_frame"]
    assert {r["fps"] + r["video_frames"] + r["outcome_frame"] for r in rows} == {""}  # no per-trial videos: no timing
    tests = [r for r in rows if r["phase"] == "test"]
    pairs = sorted({r["pair_id"] for r in tests})
    assert len(pairs) == 4
    # every order shows every pair: 8 familiarization trials then the two outcomes
    for o in range(1, n_orders + 1):
        mine = [r for r in rows if r["order"] == str(o)]
        assert [int(r["position"]) for r in mine] == list(range(1, len(mine) + 1))
        assert len(mine) == 4 * 10
        for p in pairs:
            seq = [r for r in mine if r["pair_id"] == p]
            assert [r["phase"] for r in seq] == ["familiarization"] * 8 + ["test"] * 2
            assert {seq[8]["outcome"], seq[9]["outcome"]} == {"expected", "unexpected"}
            assert [seq[8]["test_position"], seq[9]["test_position"]] == ["1", "2"]
    # each pair is shown expected-first in exactly half the orders
    first = Counter(r["pair_id"] for r in tests if r["test_position"] == "1" and r["outcome"] == "expected")
    assert first == {p: n_orders // 2 for p in pairs}
    # each task leads in half the orders
    leads = Counter(next(r["task"] for r in rows if r["order"] == str(o)) for o in range(1, n_orders + 1))
    assert leads == {"preference": n_orders // 2, "efficiency-path": n_orders // 2}
    # episode ids point at real episodes with the stated outcome; no videos were rendered
    manifest = {r["episode_id"]: r for r in read_manifest(summary.out)}
    assert all(manifest[r["episode_id"]]["outcome"] == r["outcome"] for r in tests)
    assert all(r["video_path"] == "" for r in rows)


def test_orders_need_shared_familiarization(tmp_path: Path) -> None:
    _need(["efficiency-irrational"])
    spec = parse_spec({"name": "irr", "tasks": [{"id": "efficiency-irrational", "n": 1}], "orders": {"n_orders": 2}}, "t")
    with pytest.raises(BibInputError, match=r"shows its expected and unexpected outcomes after different familiarizations"):
        build_spec(spec, tmp_path / "irr")
    assert not (tmp_path / "irr").exists()  # refused before anything is written


def test_the_three_specs_run_with_a_limit(tmp_path: Path) -> None:
    for name in ("bib-eval", "bib-background", "infant-pilot"):
        spec = load_spec_or_skip(ROOT / "stimuli" / f"{name}.toml")
        if spec is None:
            continue
        summary = build_spec(spec, tmp_path / name, video=False, limit=1)
        kinds = [REGISTRY[t.id].kind for t in spec.tasks]
        assert summary.episodes == sum(2 if k == "evaluation" else 1 for k in kinds)


def load_spec_or_skip(path: Path):
    try:
        return load_spec(path)
    except BibInputError as exc:
        if "unknown task id" in str(exc):
            return None
        raise


@pytest.mark.slow
def test_infant_pilot_with_videos(tmp_path: Path) -> None:
    _need(["preference", "efficiency-path"])
    import cv2

    spec = load_spec(ROOT / "stimuli" / "infant-pilot.toml")
    summary = build_spec(spec, tmp_path / "pilot", limit=1)
    rows = _orders(summary.out / "orders.csv")
    for r in rows:
        assert (summary.out / r["video_path"]).is_file()
    cap = cv2.VideoCapture(str(summary.out / rows[0]["video_path"]))
    assert (cap.get(cv2.CAP_PROP_FRAME_WIDTH), cap.get(cv2.CAP_PROP_FRAME_HEIGHT), round(cap.get(cv2.CAP_PROP_FPS))) == (1280, 720, 30)


def test_orders_record_each_trial_videos_outcome_frame(tmp_path_factory: pytest.TempPathFactory) -> None:
    """orders.csv's fps, video_frames and outcome_frame describe the per-trial videos: the video has
    that many frames, and outcome_frame is the first with the final picture (the agent at its goal)."""
    import cv2
    import numpy as np
    from browser_sets import tiny_set

    from bib.episode import load_episode
    from bib.render.frames import trial_frames

    root = tiny_set(tmp_path_factory)
    settings = load_spec(root / "spec.toml").render.settings()
    rows = _orders(root / "orders.csv")
    seen = set()
    for r in rows:
        if r["video_path"] in seen:
            continue
        seen.add(r["video_path"])
        k = int(r["outcome_frame"])
        drawn = list(trial_frames(load_episode(root / "episodes" / f"{r['episode_id']}.json").trials[int(r["trial"])], settings))
        assert len(drawn) == int(r["video_frames"])
        assert all(np.array_equal(f, drawn[-1]) for f in drawn[k:]) and not np.array_equal(drawn[k - 1], drawn[-1]), r
        cap = cv2.VideoCapture(str(root / r["video_path"]))
        frames = []
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            frames.append(frame.astype(np.int16))
        assert int(r["fps"]) == 10 and len(frames) == int(r["video_frames"]), r
        assert np.abs(frames[k] - frames[-1]).mean() < 0.5, r  # the outcome picture, held to the end (H.264: near-equal)
    assert len(seen) == 20


def test_dask_scheduler_gives_the_same_bytes(tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed", reason="the dask extra is not installed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = build([("single-object", 3)], 2, tmp_path / "dask", workers=2, scheduler=cluster.scheduler_address)
    local = build([("single-object", 3)], 2, tmp_path / "local")
    assert _files(remote.out) == _files(local.out)


def test_resume_of_an_interrupted_manifest_lists_units_in_order(tmp_path: Path) -> None:
    """An interrupted run leaves its manifest as kept units, then the units it built (two runs of
    ascending unit order); a rerun keeps them all and writes the manifest in unit order."""
    fresh = build([("single-object", 6), ("preference", 3)], 5, tmp_path / "fresh")
    out = tmp_path / "out"
    build([("single-object", 6), ("preference", 3)], 5, out)
    lines = (out / "manifest.csv").read_text().splitlines(keepends=True)
    header, rows = lines[0], lines[1:]
    first = [r for i, r in enumerate(rows) if i not in (1, 4, 8, 9)]
    later = [r for i, r in enumerate(rows) if i in (1, 4, 8, 9)]
    (out / "manifest.csv").write_text(header + "".join(first + later))
    summary = build([("single-object", 6), ("preference", 3)], 5, out)
    assert (summary.built, summary.kept, summary.episodes) == (0, 9, 12)
    assert (out / "manifest.csv").read_bytes() == (fresh.out / "manifest.csv").read_bytes()
    (out / "episodes" / "single-object-000003.json").unlink()
    (out / "episodes" / "preference-000001-unexpected.json").write_text("{}")
    summary = build([("single-object", 6), ("preference", 3)], 5, out)
    assert (summary.built, summary.kept) == (2, 7)
    assert (out / "manifest.csv").read_bytes() == (fresh.out / "manifest.csv").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["complete.json", "episodes", "manifest.csv"]  # no part files left


def test_williams_square_is_a_balanced_latin_square() -> None:
    from bib.stimuli.orders import williams

    for n in range(2, 8):
        square = williams(n)
        assert len(square) == (n if n % 2 == 0 else 2 * n)
        for row in square:
            assert sorted(row) == list(range(n))
        for col in range(n):  # every condition in every position equally often
            assert Counter(row[col] for row in square) == {c: len(square) // n for c in range(n)}
        follows = Counter((row[i], row[i + 1]) for row in square for i in range(n - 1))
        assert set(follows.values()) == {len(square) // n}  # every ordered pair equally often
        assert len(follows) == n * (n - 1)


@pytest.mark.parametrize("scheme", ["latin", "random"])
def test_orders_schemes_latin_and_random(tmp_path: Path, scheme: str) -> None:
    """Three tasks: a balanced Latin square of task blocks (12 orders: 2 x the 6 rows of the odd
    square), or task blocks and pairs shuffled by the spec's seed (reproducibly); both keep every pair
    expected-first in half the orders."""
    from bib.stimuli.orders import williams
    from bib.stimuli.spec import parse_spec

    tasks = ["preference", "efficiency-path", "efficiency-time"]
    _need(tasks)
    spec = parse_spec({"name": "s", "seed": 3, "tasks": [{"id": t, "n": 2} for t in tasks],
                       "orders": {"n_orders": 12, "scheme": scheme}}, "s.toml")
    rows = _orders(build_spec(spec, tmp_path / "a").out / "orders.csv")
    blocks = []
    for o in range(1, 13):
        seq = [r["task"] for r in rows if r["order"] == str(o)]
        blocks.append(list(dict.fromkeys(seq)))
    if scheme == "latin":
        assert blocks == [[tasks[i] for i in williams(3)[o // 2]] for o in range(12)]
        assert all(Counter(b[k] for b in blocks) == {t: 4 for t in tasks} for k in range(3))
    else:
        assert len({tuple(b) for b in blocks}) > 1 and all(sorted(b) == sorted(tasks) for b in blocks)
        again = _orders(build_spec(spec, tmp_path / "b").out / "orders.csv")
        assert again == rows
        other = parse_spec({"name": "s", "seed": 4, "tasks": [{"id": t, "n": 2} for t in tasks],
                            "orders": {"n_orders": 12, "scheme": scheme}}, "s.toml")
        shown = [(r["order"], r["task"], r["pair_id"]) for r in rows if r["phase"] == "test"]
        theirs = [(r["order"], r["task"], r["pair_id"]) for r in _orders(build_spec(other, tmp_path / "c").out / "orders.csv")
                  if r["phase"] == "test"]
        assert sorted(theirs) == sorted(shown) and theirs != shown  # the same pairs, shown in another order
    tests = [r for r in rows if r["phase"] == "test"]
    first = Counter(r["pair_id"] for r in tests if r["test_position"] == "1" and r["outcome"] == "expected")
    assert first == {p: 6 for p in {r["pair_id"] for r in tests}}
