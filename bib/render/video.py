"""Video writers: H.264 MP4 through libx264 in-process (PyAV, default), VP9 WebM and MP4V through OpenCV; contact sheets.

H.264 output is ``yuv420p`` (BT.601, limited range, tagged so) with ``+faststart`` so browsers and
lab software (PsychoPy, PyHab) play it; OpenCV's pip wheels cannot encode H.264, so OpenCV only
serves the fallbacks. Episodes are encoded (:mod:`bib.render.h264`) from frames drawn straight in the
encoder's pixel format (:mod:`bib.render.yuv`), handed over without a copy; nothing converts them
again. The episodes of one call to :func:`render_episodes` that share leading trials (a pair's
familiarization) share one encode of them, and every episode's test trial starts on a keyframe.
libx264 runs on one thread with bit-exact flags, so the same episodes and settings give the same
bytes.
Every writer checks each frame's size (OpenCV would silently drop a wrong-sized frame) and writes to
a temporary file that is renamed into place only when the video is complete.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from pathlib import Path

import numpy as np

from bib.episode import Episode, Trial
from bib.errors import BibInputError
from bib.guard import output_path
from bib.io import atomic_write_bytes, no_space
from bib.registry import Registry
from bib.render.frames import RenderSettings, episode_frames, frame_count, trial_frames
from bib.render.h264 import (
    ENCODER,
    Encoding,
    HeadersDiffer,
    Segment,
    check_encoder,
    encode_h264,
    encode_segment,
    write_mp4,
)
from bib.render.yuv import episode_yuv, rgb_to_yuv, trial_yuv

CODECS: Registry[str] = Registry("codec")
"""Codec name -> file extension (a :class:`bib.registry.Registry`). ``h264`` is the browser-playable default."""
CODECS.register("h264", ".mp4")
CODECS.register("vp9", ".webm")
CODECS.register("mp4v", ".mp4")


def available_codecs() -> list[str]:
    """Codecs this installation can write."""
    out = []
    with contextlib.suppress(ImportError):
        import av

        if ENCODER in av.codecs_available:
            out.append("h264")
    with contextlib.suppress(ImportError):
        import cv2  # noqa: F401

        out += ["vp9", "mp4v"]
    return out


def check_video(codec: str, settings: RenderSettings) -> None:
    """Refuse (:class:`~bib.errors.BibInputError`, one line naming the value and the allowed ones) settings
    the installed encoder of ``codec`` cannot encode: for H.264, a preset or pixel format PyAV's libx264
    lacks (:func:`bib.render.h264.check_encoder`). Call it before any work."""
    if codec == "h264":
        check_encoder(settings.preset, settings.pix_fmt)


def codec_for(path: str | os.PathLike[str], codec: str | None = None) -> str:
    """The codec to use for ``path``: the one asked for, else by extension (.mp4 -> h264, .webm -> vp9)."""
    if codec is not None:
        CODECS.lookup(codec)  # unknown: BibInputError listing the known codecs
        return codec
    ext = Path(path).suffix.lower()
    if ext == ".webm":
        return "vp9"
    if ext == ".mp4":
        return "h264" if "h264" in available_codecs() else "mp4v"
    raise BibInputError(f"{path}: unknown video extension {ext!r}; use .mp4 or .webm")


def _checked(frames: Iterator[np.ndarray], shape: tuple[int, ...], path: Path) -> Iterator[np.ndarray]:
    for i, frame in enumerate(frames):
        if frame.shape != shape or frame.dtype != np.uint8:
            raise ValueError(f"{path}: frame {i} has shape {frame.shape} {frame.dtype}, expected {shape} uint8")
        yield np.ascontiguousarray(frame)


def write_video(
    frames: Iterable[np.ndarray],
    path: str | os.PathLike[str],
    fps: int,
    codec: str | None = None,
    crf: int = RenderSettings.crf,
    preset: str = RenderSettings.preset,
) -> int:
    """Encode ``frames`` (uint8 H x W x 3, RGB, all the same size) to ``path``; return the frame count.

    Args:
        frames: any iterable; it is consumed once, so memory does not grow with video length.
        path: output file; written atomically.
        fps: frames per second.
        codec: ``h264`` (default for .mp4), ``vp9`` (.webm) or ``mp4v``; None picks by extension.
        crf: H.264 constant rate factor (lower is better quality; 18 is visually lossless).
        preset: x264 speed preset.
    """
    target = Path(path)
    codec = codec_for(target, codec)
    it = iter(frames)
    try:
        first = next(it)
    except StopIteration:
        raise ValueError(f"{target}: no frames to write") from None
    h, w = first.shape[:2]
    if first.ndim != 3 or first.shape[2] != 3:
        raise ValueError(f"{target}: frames must be H x W x 3, got {first.shape}")
    if codec in ("h264", "vp9") and (h % 2 or w % 2):
        raise BibInputError(f"{target}: {codec} needs even frame sizes, got {w} x {h}")
    stream = _checked(chain([first], it), first.shape, target)
    if codec == "h264":
        return _atomically(target, codec, lambda tmp: encode_h264((rgb_to_yuv(f) for f in stream), tmp, (w, h), fps, crf, preset,
                                                                  "yuv420p"))
    return _atomically(target, codec, lambda tmp: _write_cv2(stream, tmp, (w, h), fps, codec))


def _atomically(target: Path, codec: str, write: Callable[[Path], int]) -> int:
    """``write(tmp)`` to a temporary file next to ``target``, renamed into place only when it returns."""
    tmp = target.with_name(f".{target.stem}.tmp{CODECS[codec]}")
    try:
        n = write(tmp)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        full = no_space(exc, target)
        if full is not None:
            raise full from None
        raise
    return n


def h264_command(source: str, path: str | os.PathLike[str], size: tuple[int, int], fps: int, crf: int, preset: str,
                 pix_fmt: str) -> list[str]:
    """The ffmpeg command (imageio-ffmpeg's bundled ffmpeg) that encodes raw planar frames from ``source`` (a
    file, or ``pipe:0``) to ``path`` with libx264 at the pipeline's settings: the benchmarks' reference."""
    import imageio_ffmpeg

    w, h = size
    bt601 = ["-color_range", "tv", "-colorspace", "smpte170m", "-color_primaries", "smpte170m", "-color_trc", "smpte170m"]
    return [
        imageio_ffmpeg.get_ffmpeg_exe(), "-nostdin", "-hide_banner", "-loglevel", "error",
        "-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", f"{w}x{h}", "-r", str(fps), *bt601, "-i", source,
        "-c:v", "libx264", "-pix_fmt", pix_fmt, "-crf", str(crf), "-preset", preset, "-threads", "1", *bt601,
        "-movflags", "+faststart", "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:v", "+bitexact",
        "-f", "mp4", "-y", str(path),
    ]


def _write_cv2(frames: Iterator[np.ndarray], path: Path, size: tuple[int, int], fps: int, codec: str) -> int:
    import cv2

    fourcc = cv2.VideoWriter_fourcc(*("VP90" if codec == "vp9" else "mp4v"))
    writer = cv2.VideoWriter(str(path), fourcc, float(fps), size)
    if not writer.isOpened():
        raise RuntimeError(f"{path}: OpenCV cannot open a {codec} writer on this installation")
    n = 0
    try:
        for frame in frames:
            writer.write(frame[:, :, ::-1])
            n += 1
    finally:
        writer.release()
    return n


def render_episode(
    episode: Episode,
    path: str | os.PathLike[str],
    settings: RenderSettings | None = None,
    codec: str | None = None,
    per_trial_dir: str | os.PathLike[str] | None = None,
) -> int:
    """Write one video of the whole episode (trials in order, a short blank between them).

    With ``per_trial_dir``, also write ``<episode id>-trial<k>.<ext>`` for every trial.
    Returns the number of frames of the episode video.
    """
    return render_episodes([episode], [path], settings, codec, per_trial_dir)[0]


def render_episodes(
    episodes: Sequence[Episode],
    paths: Sequence[str | os.PathLike[str]],
    settings: RenderSettings | None = None,
    codec: str | None = None,
    per_trial_dir: str | os.PathLike[str] | None = None,
) -> list[int]:
    """Write the video of each episode to the path at the same place (as :func:`render_episode`); return
    their frame counts.

    H.264 videos are encoded in segments (:mod:`bib.render.h264`), cut at :func:`segment_bounds`: before
    the last (test) trial, so it starts on a keyframe, and where an episode stops sharing its leading
    trials with another of ``episodes``. A segment of the same trials in several episodes (a pair's
    familiarization) is drawn and encoded once and muxed into each of their videos. Other codecs encode
    each episode whole.
    """
    s = settings or RenderSettings()
    segments: dict[tuple[object, ...], Segment] = {}
    counts = []
    for episode, path in zip(episodes, paths, strict=True):
        chosen = codec_for(path, codec)
        if chosen == "h264":
            counts.append(_render_h264(episode, Path(path), s, segment_bounds(episode, episodes), segments))
        else:
            counts.append(write_video(episode_frames(episode, s), path, s.fps, chosen))
        if per_trial_dir is not None:
            _render_trials(episode, Path(per_trial_dir), s, chosen)
    return counts


def _leading(a: Sequence[Trial], b: Sequence[Trial]) -> int:
    """How many leading trials ``a`` and ``b`` have in common."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def segment_bounds(episode: Episode, others: Iterable[Episode] = ()) -> list[int]:
    """Trial indices where the H.264 segments of ``episode``'s video start, then its trial count: 0, each
    count of leading trials it shares with an episode of ``others`` (while that leaves it at least its last
    trial), and its last trial. A segment of trials ``a`` to ``b - 1`` is their frames, each trial followed
    by the blank between trials (:func:`bib.render.yuv.episode_yuv`)."""
    n = len(episode.trials)
    cuts = {0, max(n - 1, 0), n}
    cuts.update(k for other in others if other is not episode for k in [_leading(episode.trials, other.trials)] if k < n)
    return sorted(cuts)


def segment_key(episode: Episode, a: int, b: int) -> tuple[object, ...]:
    """What the frames of the segment of trials ``a`` to ``b - 1`` depend on (besides the render settings):
    segments of equal keys are encoded once."""
    return (episode.width, episode.height, episode.trials[a:b], b < len(episode.trials))


def _encoding(episode: Episode, s: RenderSettings, target: Path) -> Encoding:
    w, h = s.frame_size(episode.width, episode.height)
    if w % 2 or h % 2:
        raise BibInputError(f"{target}: h264 needs even frame sizes, got {w} x {h}")
    return Encoding((w, h), s.fps, s.crf, s.preset, s.pix_fmt)


def _render_h264(episode: Episode, target: Path, s: RenderSettings, bounds: list[int],
                 segments: dict[tuple[object, ...], Segment]) -> int:
    """The episode's H.264 video: the segments before its last one from ``segments`` (encoded and added
    when missing), the last encoded by the video's own encoder; the whole episode by one encoder should a
    segment's SPS/PPS differ from it."""
    enc = _encoding(episode, s, target)
    head = []
    for a, b in zip(bounds, bounds[1:-1]):
        key = segment_key(episode, a, b)
        if key not in segments:
            segments[key] = encode_segment(episode_yuv(episode, s, s.pix_fmt, a, b), enc)
        head.append(segments[key])

    def write(tmp: Path) -> int:
        try:
            return write_mp4(tmp, enc, head, episode_yuv(episode, s, s.pix_fmt, bounds[-2], bounds[-1]))
        except HeadersDiffer:
            return write_mp4(tmp, enc, (), episode_yuv(episode, s, s.pix_fmt))

    return _atomically(target, "h264", write)


def _render_trials(episode: Episode, folder: Path, s: RenderSettings, codec: str) -> None:
    """``<episode id>-trial<k>.<ext>`` in ``folder`` for every trial, each encoded on its own."""
    folder.mkdir(parents=True, exist_ok=True)
    for k, trial in enumerate(episode.trials):
        target = output_path(folder, f"{episode.id}-trial{k}{CODECS[codec]}")
        if codec == "h264":
            enc = _encoding(episode, s, target)
            _atomically(target, codec, lambda tmp: write_mp4(tmp, enc, (), trial_yuv(trial, s, s.pix_fmt)))
        else:
            write_video(trial_frames(trial, s), target, s.fps, codec)


def contact_sheet(
    trial: Trial,
    path: str | os.PathLike[str],
    settings: RenderSettings | None = None,
    n: int = 8,
    columns: int = 4,
    spacing: int = 4,
) -> np.ndarray:
    """Write a PNG of ``n`` frames of a trial, evenly spaced in time, in a grid; return the image."""
    import cv2

    s = settings or RenderSettings()
    total = frame_count(trial, s)
    picks = set(np.linspace(0, total - 1, num=min(n, total)).round().astype(int).tolist())
    chosen = list(trial_frames(trial, s, only=picks))
    h, w = chosen[0].shape[:2]
    rows = -(-len(chosen) // columns)
    sheet = np.full((rows * h + (rows + 1) * spacing, columns * w + (columns + 1) * spacing, 3), 200, dtype=np.uint8)
    for k, frame in enumerate(chosen):
        r, c = divmod(k, columns)
        y, x = spacing + r * (h + spacing), spacing + c * (w + spacing)
        sheet[y : y + h, x : x + w] = frame
    ok, buf = cv2.imencode(".png", sheet[:, :, ::-1], [cv2.IMWRITE_PNG_COMPRESSION, 1])
    if not ok:
        raise RuntimeError(f"{path}: PNG encoding failed")
    atomic_write_bytes(path, buf.tobytes(), durable=False)  # a picture that can be drawn again: no fsync
    return sheet
