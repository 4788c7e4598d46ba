"""`bib render` of a set's episode uses the set's render settings (issue 30, item 5): "look before you
show" shows the video the set holds, byte for byte; options override; a loose episode gets the defaults."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bib.cli import main


def _render(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main(["render", *argv])
    assert done.value.code in (None, 0)
    return capsys.readouterr().out


def test_render_of_a_set_episode_is_the_sets_video(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from browser_sets import tiny_set

    root = tiny_set(tmp_path_factory)
    episode = root / "episodes" / "preference-000000-expected.json"
    out = _render(capsys, str(episode), "--out", str(tmp_path / "a"))
    video = tmp_path / "a" / "preference-000000-expected.mp4"
    assert video.read_bytes() == (root / "videos" / "preference-000000-expected.mp4").read_bytes()
    assert "at 10 fps" in out and f"rendered with the set's render settings ({root / 'render.json'})" in out
    out = _render(capsys, str(episode), "--out", str(tmp_path / "b"), "--fps", "5")
    assert "at 5 fps" in out and "overridden: fps 5" in out
    assert (tmp_path / "b" / video.name).read_bytes() != video.read_bytes()
    loose = tmp_path / "loose" / "preference-000000-expected.json"
    loose.parent.mkdir()
    shutil.copyfile(episode, loose)
    out = _render(capsys, str(loose), "--out", str(tmp_path / "c"))
    assert "at 25 fps" in out and "20 px cells" in out and "rendered with the default render settings" in out
