"""In-process H.264 (PyAV): a pair's shared familiarization encoded once, a keyframe at the test trial,
fidelity to the source frames, the same bytes in any process, the fallback when headers differ."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import av
import numpy as np
import pytest

from bib.render import h264
from bib.render.frames import RenderSettings, episode_frame_count
from bib.render.video import render_episode, render_episodes, segment_bounds
from bib.render.yuv import episode_yuv
from bib.tasks import make_unit

SMALL = RenderSettings(cell_px=8)


def decode(path) -> tuple[list[np.ndarray], list[bool], tuple]:
    """Frames (flat yuv420p buffers, in display order), their keyframe flags, and the stream's
    (frame count, frame rate, pixel format)."""
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        cc = stream.codec_context
        facts = (stream.frames, stream.average_rate, cc.pix_fmt, (cc.color_range, cc.colorspace, cc.color_primaries, cc.color_trc))
        frames = [(f.to_ndarray().reshape(-1), bool(f.key_frame)) for f in c.decode(stream)]
    return [f for f, _ in frames], [k for _, k in frames], facts


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    eps = make_unit("preference", 0, 0)
    folder = tmp_path_factory.mktemp("pair")
    paths = [folder / f"{ep.outcome}.mp4" for ep in eps]
    counts = render_episodes(eps, paths, SMALL)
    return eps, paths, counts


def test_a_pair_shares_its_familiarization_and_its_test_trial_starts_on_a_keyframe(pair):
    eps, paths, counts = pair
    assert eps[0].trials[:-1] == eps[1].trials[:-1] and eps[0].test != eps[1].test
    fam = sum(1 for _ in episode_yuv(eps[0], SMALL, "yuv420p", 0, len(eps[0].trials) - 1))  # frames before the test
    (a, key_a, sa), (b, key_b, sb) = decode(paths[0]), decode(paths[1])
    for ep, frames, keys, stream, n in ((eps[0], a, key_a, sa, counts[0]), (eps[1], b, key_b, sb, counts[1])):
        assert len(frames) == n == episode_frame_count(ep, SMALL) == stream[0]
        assert stream[1:] == (SMALL.fps, "yuv420p", (1, 6, 6, 6))  # BT.601 limited range, tagged
        assert keys[0] and keys[fam]  # the test trial's first frame is a keyframe
    assert all(np.array_equal(x, y) for x, y in zip(a[:fam], b[:fam]))  # the same decoded familiarization
    assert not all(np.array_equal(x, y) for x, y in zip(a[fam:], b[fam:]))
    data = paths[0].read_bytes()
    assert data.index(b"moov") < data.index(b"mdat")  # +faststart


def psnr(got: list[np.ndarray], src: list[np.ndarray]) -> float:
    assert len(got) == len(src)
    mse = np.mean([np.mean((g.astype(np.float64) - s) ** 2) for g, s in zip(got, src)])
    return 10 * np.log10(255.0**2 / mse)


def test_decoded_frames_are_close_to_the_source_frames(pair):
    """PSNR of the decoded planes against the drawn ones: crf 18 keeps it far above 40 dB."""
    eps, paths, _ = pair
    for ep, path in zip(eps, paths):
        assert psnr(decode(path)[0], list(episode_yuv(ep, SMALL))) > 40


def test_a_preset_with_b_frames_and_lookahead_gives_the_frames_too(tmp_path):
    """medium: B-frames (negative first dts, timestamps continued across segments) and a lookahead that
    holds pictures: the frame handed to the encoder is reused, which is only right if it copies them."""
    eps = make_unit("preference", 0, 0)
    s = replace(SMALL, preset="medium")
    render_episodes(eps, [tmp_path / "a.mp4", tmp_path / "b.mp4"], s)
    fam = sum(1 for _ in episode_yuv(eps[1], s, "yuv420p", 0, len(eps[1].trials) - 1))
    got, keys, facts = decode(tmp_path / "b.mp4")
    assert len(got) == facts[0] == episode_frame_count(eps[1], s) and keys[fam]
    assert psnr(got, list(episode_yuv(eps[1], s))) > 40


def test_segment_bounds_cut_where_leading_trials_stop_matching_and_before_the_test():
    eps = make_unit("preference", 0, 0)
    n = len(eps[0].trials)
    assert segment_bounds(eps[0], eps) == segment_bounds(eps[0]) == [0, n - 1, n]
    other = replace(eps[1], trials=(*eps[1].trials[:3], eps[1].trials[5], *eps[1].trials[4:]))
    assert segment_bounds(eps[0], [eps[0], other]) == [0, 3, n - 1, n]
    assert segment_bounds(eps[0], [replace(eps[0], id="copy")]) == [0, n - 1, n]  # all shared: the test stays its own
    one = replace(eps[0], trials=eps[0].trials[-1:])
    assert segment_bounds(one, [one, eps[0]]) == [0, 1]


def test_a_partly_shared_familiarization_is_shared_up_to_the_first_differing_trial(tmp_path):
    eps = make_unit("preference", 0, 0)
    other = replace(eps[1], trials=(*eps[1].trials[:3], eps[1].trials[5], *eps[1].trials[4:]))
    render_episodes([eps[0], other], [tmp_path / "a.mp4", tmp_path / "b.mp4"], SMALL)
    shared = sum(1 for _ in episode_yuv(eps[0], SMALL, "yuv420p", 0, 3))
    (a, keys, _), (b, _, _) = decode(tmp_path / "a.mp4"), decode(tmp_path / "b.mp4")
    assert keys[shared] and all(np.array_equal(x, y) for x, y in zip(a[:shared], b[:shared]))
    assert len(a) == episode_frame_count(eps[0], SMALL)


SUBPROCESS = """
import sys
from bib.render.frames import RenderSettings
from bib.render.video import render_episodes
from bib.tasks import make_unit
if sys.argv[2] == "after-a-decode":  # reported once to change PyAV's output: decode something first
    import av, cv2
    with av.open(sys.argv[3]) as c:
        [f for f in c.decode(video=0)]
    cv2.VideoCapture(sys.argv[3]).read()
eps = make_unit("preference", 0, 0)
render_episodes(eps, [sys.argv[1] + "-e.mp4", sys.argv[1] + "-u.mp4"], RenderSettings(cell_px=8))
"""


@pytest.mark.parametrize("how", ["fresh", "after-a-decode"])
def test_same_bytes_in_another_process(pair, tmp_path, how):
    _, paths, _ = pair
    subprocess.run([sys.executable, "-c", SUBPROCESS, str(tmp_path / "x"), how, str(paths[0])], check=True)
    for path, outcome in zip(paths, ("e", "u")):
        assert (tmp_path / f"x-{outcome}.mp4").read_bytes() == path.read_bytes()


def test_headers_that_differ_fall_back_to_one_encoder(tmp_path, monkeypatch):
    ep = make_unit("preference", 0, 0)[0]
    whole = tmp_path / "whole.mp4"
    enc = h264.Encoding(SMALL.frame_size(ep.width, ep.height), SMALL.fps, SMALL.crf, SMALL.preset, SMALL.pix_fmt)
    h264.write_mp4(whole, enc, (), episode_yuv(ep, SMALL))
    real = h264.encode_segment
    monkeypatch.setattr("bib.render.video.encode_segment",
                        lambda frames, e: replace(real(frames, e), extradata=b"\x00\x00\x00\x01other"))
    n = render_episode(ep, tmp_path / "fallback.mp4", SMALL)
    assert n == episode_frame_count(ep, SMALL)
    assert (tmp_path / "fallback.mp4").read_bytes() == whole.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fallback.mp4", "whole.mp4"]  # no temporary left


def test_yuv444p_is_encoded_from_its_planes(tmp_path):
    ep = make_unit("preference", 0, 0)[0]
    s = replace(SMALL, pix_fmt="yuv444p")
    n = render_episode(ep, tmp_path / "x.mp4", s)
    with av.open(str(tmp_path / "x.mp4")) as c:
        frames = [f.to_ndarray() for f in c.decode(video=0)]
    assert len(frames) == n and frames[0].shape == (3, *s.frame_size(ep.width, ep.height)[::-1])
    assert psnr([f.reshape(-1) for f in frames], list(episode_yuv(ep, s, "yuv444p"))) > 40


@pytest.mark.parametrize("command", [["generate", "--task", "preference", "--n", "1", "--video"], ["render", "ep.json"]])
def test_an_encoder_the_installation_lacks_is_one_line_before_any_work(command, tmp_path, monkeypatch, capsys):
    from bib.cli import main

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    ep = make_unit("preference", 0, 0)[0]
    from bib.episode import save_episode

    save_episode(ep, tmp_path / "ep.json")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(av, "codecs_available", av.codecs_available - {"libx264"})
    with pytest.raises(SystemExit) as info:
        main([*command, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and "\n" not in err, err
    assert err.startswith("bib: error: the installed PyAV ") and "no libx264 encoder" in err, err
    assert not (tmp_path / "o").exists()


def test_a_pixel_format_or_preset_the_encoder_lacks_names_the_allowed_ones(monkeypatch):
    assert h264.encoder_problem("ultrafast", "yuv444p") is None

    class Only420:
        video_formats = [av.VideoFormat("yuv420p")]

        def __init__(self, *args):
            pass

    monkeypatch.setattr(av, "Codec", Only420)
    assert h264.encoder_problem("ultrafast", "yuv444p") == "pixel format 'yuv444p' is not one libx264 encodes; allowed: yuv420p"
    monkeypatch.undo()
    problem = h264.encoder_problem("placebo", "yuv420p")
    assert problem is not None and "'placebo'" in problem and "ultrafast, superfast" in problem
