"""Video files decode back with the right codec, size and frame count; contact sheets."""

from __future__ import annotations

import imageio_ffmpeg
import numpy as np
import pytest

from bib.errors import BibInputError
from bib.render.frames import RenderSettings, episode_frame_count, frame_count, trial_frames
from bib.render.video import contact_sheet, render_episode, write_video
from bib.tasks import make_unit


def decode(path):
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    frames = [np.frombuffer(f, dtype=np.uint8).reshape(meta["size"][1], meta["size"][0], 3) for f in reader]
    return meta, frames


@pytest.fixture(scope="module")
def episode():
    return make_unit("single-object", 2, 7)[0]


def test_h264_episode_video_decodes_back(episode, tmp_path):
    out = tmp_path / "ep.mp4"
    n = render_episode(episode, out, per_trial_dir=tmp_path / "trials")
    meta, frames = decode(out)
    assert meta["codec"] == "h264" and meta["pix_fmt"].startswith("yuv420p")
    assert meta["size"] == (200, 200) and meta["fps"] == 25
    assert len(frames) == n == episode_frame_count(episode)
    # Lossy, but close to the rendered frames.
    first = next(trial_frames(episode.trials[0]))
    assert np.abs(frames[0].astype(int) - first).mean() < 3
    # +faststart: the moov atom comes before the media data.
    data = out.read_bytes()
    assert data.index(b"moov") < data.index(b"mdat")
    trial_files = sorted((tmp_path / "trials").glob("*.mp4"))
    assert len(trial_files) == 9
    assert len(decode(trial_files[8])[1]) == frame_count(episode.test, RenderSettings())


@pytest.mark.parametrize("codec, name, expect", [("vp9", "v.webm", "vp9"), ("mp4v", "v.mp4", "mpeg4")])
def test_opencv_fallbacks_decode_back(episode, tmp_path, codec, name, expect):
    frames = list(trial_frames(episode.trials[0]))
    write_video(frames, tmp_path / name, 25, codec=codec)
    meta, decoded = decode(tmp_path / name)
    assert meta["codec"] == expect and meta["size"] == (200, 200) and len(decoded) == len(frames)


def test_writer_refuses_mismatched_frames_and_leaves_nothing(tmp_path):
    frames = [np.zeros((20, 20, 3), np.uint8), np.zeros((22, 20, 3), np.uint8)]
    with pytest.raises(ValueError, match="frame 1 has shape"):
        write_video(frames, tmp_path / "bad.mp4", 25)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(BibInputError, match="even frame sizes"):
        write_video([np.zeros((21, 20, 3), np.uint8)], tmp_path / "odd.mp4", 25)
    with pytest.raises(BibInputError, match="unknown video extension"):
        write_video([np.zeros((20, 20, 3), np.uint8)], tmp_path / "x.gif", 25)


def test_same_episode_gives_identical_video_bytes(episode, tmp_path):
    render_episode(episode, tmp_path / "a.mp4")
    render_episode(episode, tmp_path / "b.mp4")
    assert (tmp_path / "a.mp4").read_bytes() == (tmp_path / "b.mp4").read_bytes()


def test_contact_sheet(episode, tmp_path):
    import cv2

    sheet = contact_sheet(episode.test, tmp_path / "s.png", n=8, columns=4, spacing=4)
    assert sheet.shape == (2 * 200 + 3 * 4, 4 * 200 + 5 * 4, 3)
    back = cv2.imread(str(tmp_path / "s.png"))[:, :, ::-1]
    assert (back == sheet).all()
