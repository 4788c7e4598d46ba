"""Video files decode back with the right codec, size and frame count; contact sheets."""

from __future__ import annotations

import imageio_ffmpeg
import numpy as np
import pytest

from bib.errors import BibInputError
from bib.render.frames import RenderSettings, episode_frame_count, episode_frames, frame_count, trial_frames
from bib.render.video import contact_sheet, render_episode, write_video
from bib.render.yuv import episode_yuv, planes, rgb_to_yuv
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


@pytest.mark.parametrize("task", ["key-door", "instrumental-blocking", "multi-agent"])
@pytest.mark.parametrize("settings", [RenderSettings(), RenderSettings(cell_px=8, canvas=(84, 84)),
                                      RenderSettings(cell_px=8, canvas=(86, 90))], ids=["200", "84", "odd-offset"])
@pytest.mark.parametrize("pix_fmt", ["yuv420p", "yuv444p"])
def test_planar_frames_are_the_rgb_frames_converted_whole(task, settings, pix_fmt):
    """episode_yuv converts only the boxes that change (the agent's boxes cut, drawn and converted in
    batches and shared by the trials of an episode; fading frames in one batch); every frame equals
    converting the whole RGB frame. The odd letterbox offset puts the agent at odd pixels."""
    ep = make_unit(task, 1, 0)[0]
    rgb = list(episode_frames(ep, settings))
    planar = [f.copy() for f in episode_yuv(ep, settings, pix_fmt)]
    assert len(planar) == len(rgb) == episode_frame_count(ep, settings)
    for i, (a, b) in enumerate(zip(rgb, planar)):
        assert np.array_equal(rgb_to_yuv(a, pix_fmt), b), i


def test_agent_boxes_where_the_agent_overhangs_the_box():
    """A box the agent does not fit in (clipped at a frame's edge) is drawn one at a time, clipped like a
    whole frame; boxes over the same background are drawn once and shared through the cache."""
    from bib.render.frames import _Painter
    from bib.render.yuv import _agent_boxes

    trial = make_unit("key-door", 1, 0)[0].trials[0]
    p = _Painter(trial, RenderSettings(cell_px=8))
    right = p.open.shape[1] - 8
    y0, x0 = np.array([0, 40, 40, 0]), np.array([0, 40, 40, right])  # the last overhangs the frame too
    cache: dict = {}
    got = _agent_boxes(p, p.open, y0, x0, 2, 3, 8, 8, False, cache, "yuv444p")  # agent at (3, 2) in an 8 x 8 box
    assert len(cache) == len({p.open[y : y + 8, x : x + 8].tobytes() for y, x in zip(y0, x0)}) < 4  # shared
    for j in range(4):
        img = p.open.copy()
        p.draw_agent(img, int(x0[j]) + 3, int(y0[j]) + 2, False)
        box = img[y0[j] : y0[j] + 8, x0[j] : x0[j] + 8]
        assert np.array_equal(got[j], rgb_to_yuv(np.ascontiguousarray(box), "yuv444p"))


def test_conversion_is_the_integer_matrix_product():
    """rgb_to_yuv (one channel at a time, 2 x 2 chroma from the block's channel sums) gives the bytes of the
    integer matrix product it replaced, rounding each pixel's (or block's) sums once."""
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (6, 32, 48, 3), dtype=np.uint8)
    rgb[0] = 0
    rgb[1] = 255
    coeffs = np.array([[66, -38, 112], [129, -74, -94], [25, 112, -18]])
    for frame in rgb:
        p = frame.astype(np.int64) @ coeffs
        y = ((p[..., 0] + 128) >> 8) + 16
        c4 = p[0::2, 0::2, 1:] + p[1::2, 0::2, 1:] + p[0::2, 1::2, 1:] + p[1::2, 1::2, 1:]
        want420 = [y, *(((c4[..., k] + 512) >> 10) + 128 for k in range(2))]
        want444 = [y, *(((p[..., k] + 128) >> 8) + 128 for k in (1, 2))]
        assert np.array_equal(rgb_to_yuv(frame), np.concatenate([a.ravel() for a in want420]).astype(np.uint8))
        assert np.array_equal(rgb_to_yuv(frame, "yuv444p"), np.concatenate([a.ravel() for a in want444]).astype(np.uint8))


def test_fade_blends_only_changed_pixels_with_the_bytes_of_a_whole_frame_blend():
    from bib.render.frames import _Painter

    trial = next(t for t in make_unit("key-door", 1, 0)[0].trials if t.unlock_step() is not None)
    p = _Painter(trial, RenderSettings())
    assert 0 < len(p.fade_pixels) < p.open.shape[0] * p.open.shape[1] // 4
    fades = (0.05, 0.3, 0.5, 0.77, 0.99)
    for fade in fades:
        whole = (p.no_key * fade + p.open * (1.0 - fade) + 0.5).astype(np.uint8)
        assert np.array_equal(p.background(False, fade), whole)
    assert np.array_equal(p.fade_values(np.array(fades)), np.stack([p.fade_values(f) for f in fades]))  # batched


def test_bt601_conversion_matches_the_float_formula():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
    y, u, v = planes(rgb_to_yuv(rgb, "yuv444p"), 16, 16, "yuv444p")
    r, g, b = (rgb[..., k].astype(float) for k in range(3))
    assert np.abs(y - (16 + 0.2568 * r + 0.5041 * g + 0.0979 * b)).max() <= 1
    assert np.abs(u - (128 - 0.1482 * r - 0.2910 * g + 0.4392 * b)).max() <= 1
    assert np.abs(v - (128 + 0.4392 * r - 0.3678 * g - 0.0714 * b)).max() <= 1
    y2, u2, _ = planes(rgb_to_yuv(rgb), 16, 16, "yuv420p")
    assert np.array_equal(y2, y)
    block = u.astype(float).reshape(8, 2, 8, 2).mean(axis=(1, 3))
    assert np.abs(u2 - block).max() <= 1  # chroma of each 2 x 2 block


def test_videos_are_identical_for_any_worker_count(tmp_path):
    from bib.stimuli.build import build

    units = [("key-door", 1), ("single-object", 2)]
    small = RenderSettings(cell_px=8)
    a = build(units, 3, tmp_path / "a", video=True, settings=small, workers=1)
    b = build(units, 3, tmp_path / "b", video=True, settings=small, workers=2)
    va, vb = sorted((a.out / "videos").glob("*.mp4")), sorted((b.out / "videos").glob("*.mp4"))
    assert len(va) == a.episodes >= 3 and [p.name for p in va] == [p.name for p in vb]
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(va, vb))


def _x264_options(path) -> str:
    """The option string libx264 writes into its SEI."""
    data = path.read_bytes()
    start = data.index(b"options: ")
    return data[start : data.index(b"\x00", start)].decode()


def test_preset_and_crf_from_the_spec_and_the_cli_reach_the_encoder(tmp_path, monkeypatch):
    from bib.cli import main

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\n[render]\ncell_px = 8\nvideo = true\npreset = "ultrafast"\ncrf = 30\n'
                    '[[tasks]]\nid = "single-object"\nn = 1\n')
    with pytest.raises(SystemExit) as info:
        main(["generate", str(spec), "--out", str(tmp_path / "a")])
    assert info.value.code == 0
    opts = _x264_options(next((tmp_path / "a" / "videos").glob("*.mp4")))
    assert "crf=30.0" in opts and "subme=0" in opts  # ultrafast: no subpixel refinement
    with pytest.raises(SystemExit) as info:
        main(["generate", str(spec), "--out", str(tmp_path / "b"), "--preset", "medium", "--crf", "12"])
    assert info.value.code == 0
    opts = _x264_options(next((tmp_path / "b" / "videos").glob("*.mp4")))
    assert "crf=12.0" in opts and "subme=7" in opts  # medium
    ep = next((tmp_path / "b" / "episodes").glob("*.json"))
    with pytest.raises(SystemExit) as info:
        main(["render", str(ep), "--out", str(tmp_path / "c"), "--preset", "superfast", "--crf", "40"])
    assert info.value.code == 0
    opts = _x264_options(next((tmp_path / "c").glob("*.mp4")))
    assert "crf=40.0" in opts and "subme=1" in opts  # superfast


@pytest.mark.parametrize("args, words", [
    (["--preset", "bogus"], ["'--preset'", "'bogus'", "ultrafast", "veryslow"]),
    (["--crf", "52"], ["'--crf'", "51"]),
    (["--crf", "-1"], ["'--crf'", "0"]),
])
def test_bad_encoder_options_are_one_line_before_any_work(tmp_path, capsys, args, words):
    from bib.cli import main

    for command in (["generate", "--task", "single-object", "--n", "1", "--video"], ["render", "nothing.json"]):
        with pytest.raises(SystemExit) as info:
            main([*command, "--out", str(tmp_path / "o"), *args])
        assert info.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("bib: error: ") and "\n" not in err and all(w in err for w in words), err
        assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("render, words", [
    ({"preset": "placebo"}, ["render.preset", "'placebo'", "ultrafast", "veryslow"]),
    ({"crf": 52}, ["render.crf", "51", "52"]),
    ({"pix_fmt": "rgb24"}, ["render.pix_fmt", "'rgb24'", "yuv420p", "yuv444p"]),
])
def test_bad_encoder_settings_in_a_spec_name_the_value_and_the_allowed_ones(render, words):
    from bib.stimuli.spec import parse_spec

    with pytest.raises(BibInputError) as info:
        parse_spec({"name": "x", "render": render, "tasks": [{"id": "single-object", "n": 1}]}, "x.toml")
    assert all(w in str(info.value) for w in words) and "\n" not in str(info.value), str(info.value)
    with pytest.raises(BibInputError, match="allowed"):
        RenderSettings(**render)


def test_render_spec_is_declared_by_render_settings():
    import dataclasses

    from bib.stimuli.spec import RenderSpec

    fields = [f.name for f in dataclasses.fields(RenderSettings)]
    assert list(RenderSpec.model_fields)[: len(fields)] == fields
    assert RenderSpec().settings() == RenderSettings()
