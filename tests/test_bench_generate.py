"""benchmarks/generate.py's frame count for its projection of a full set with videos: counted without rendering."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from bib.episode import load_episode
from bib.render.frames import RenderSettings, episode_frame_count
from bib.stimuli.build import build_spec
from bib.stimuli.spec import parse_spec

SPEC = importlib.util.spec_from_file_location("bench_generate", Path(__file__).resolve().parents[1] / "benchmarks" / "generate.py")
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)


def test_set_frames_counts_every_episode_of_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """set_frames gives the frames of every episode the build writes (twins, a background task, the spec's
    seed and options), and with a limit counts only those units and scales each task to its size."""
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    spec = parse_spec({"name": "small", "seed": 7, "tasks": [
        {"id": "preference", "n": 4, "twins": True}, {"id": "efficiency-time", "n": 3}, {"id": "single-object", "n": 2},
    ]}, "t")
    settings = RenderSettings(fps=10)
    build_spec(spec, tmp_path / "set")
    episodes = [load_episode(p) for p in sorted((tmp_path / "set" / "episodes").glob("*.json"))]
    frames = {t: sum(episode_frame_count(ep, settings) for ep in episodes if ep.task == t) for t, _ in spec.units}
    assert len(episodes) == 4 * 2 + 3 * 2 + 2
    assert bench.set_frames(spec, settings) == (len(episodes), sum(frames.values()), len(episodes))
    n, scaled, counted = bench.set_frames(spec, settings, limit=1)  # a twin group, a pair, an episode
    first = {t: sum(episode_frame_count(ep, settings) for ep in episodes if ep.task == t and ep.id in ids)
             for t, ids in {"preference": {f"preference-00000{i}-{o}" for i in (0, 1) for o in ("expected", "unexpected")},
                            "efficiency-time": {"efficiency-time-000000-expected", "efficiency-time-000000-unexpected"},
                            "single-object": {"single-object-000000"}}.items()}
    assert (n, counted) == (len(episodes), 4 + 2 + 1)
    assert scaled == pytest.approx(first["preference"] * 8 / 4 + first["efficiency-time"] * 6 / 2 + first["single-object"] * 2)
