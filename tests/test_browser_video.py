"""A pair's H.264 videos (shared familiarization segment, test trial on its own keyframe) in headless
Chromium: metadata with the full duration, a seek to the test trial, and playing across the segments."""

from __future__ import annotations

import pytest

from bib.render.frames import RenderSettings, episode_frame_count
from bib.render.video import render_episodes
from bib.render.yuv import episode_yuv
from bib.report import browser
from bib.report.browser import wait_for
from bib.tasks import make_unit

pytestmark = pytest.mark.skipif(browser.missing() is not None, reason=f"no browser: {browser.missing()}")


def test_pair_videos_play_across_segments_and_seek_to_the_test_trial(tmp_path):
    s = RenderSettings(cell_px=8)
    eps = make_unit("preference", 0, 0)
    paths = [tmp_path / f"{ep.outcome}.mp4" for ep in eps]
    render_episodes(eps, paths, s)
    page = tmp_path / "page.html"
    page.write_text("<!doctype html><body>" + "".join(f'<video src="{p.name}" muted preload="auto"></video>' for p in paths)
                    + "</body>")
    test_start = sum(1 for _ in episode_yuv(eps[0], s, "yuv420p", 0, len(eps[0].trials) - 1)) / s.fps
    with browser.chromium(800, 400) as driver:
        driver.get(page.as_uri())
        meta = wait_for(driver, "var v = Array.from(document.querySelectorAll('video'));"
                            "return v.every(x => x.readyState >= 1 || x.error) ? v.map(x => [x.duration, !!x.error]) : null")
        assert meta is not None and not any(e for _, e in meta), meta
        for (duration, _), ep in zip(meta, eps):
            assert abs(duration - episode_frame_count(ep, s) / s.fps) < 0.1
        # play from just before the test trial: the player crosses from the shared segment into the test trial's
        driver.execute_script(f"document.querySelectorAll('video').forEach(v => {{ v.currentTime = {test_start - 0.3}; v.play(); }})")
        crossed = wait_for(driver, f"var v = Array.from(document.querySelectorAll('video'));"
                               f"return v.every(x => x.currentTime > {test_start + 0.3} && !x.error) ? v.map(x => x.currentTime) : null")
        assert crossed is not None
        assert browser.console_errors(driver) == []
