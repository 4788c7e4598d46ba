"""Video writers: H.264 MP4 through imageio-ffmpeg (default), VP9 WebM and MP4V through OpenCV; contact sheets.

H.264 output is ``yuv420p`` with ``+faststart`` so browsers and lab software (PsychoPy, PyHab)
play it; OpenCV's pip wheels cannot encode H.264, so OpenCV only serves the fallbacks. Every
writer checks each frame's size (OpenCV would silently drop a wrong-sized frame) and writes to a
temporary file that is renamed into place only when the video is complete.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path

import numpy as np

from bib.episode import Episode, Trial
from bib.errors import BibInputError
from bib.io import atomic_write_bytes
from bib.render.frames import RenderSettings, episode_frames, frame_count, trial_frames

CODECS = {"h264": ".mp4", "vp9": ".webm", "mp4v": ".mp4"}
"""Codec name -> file extension. ``h264`` is the browser-playable default."""


def available_codecs() -> list[str]:
    """Codecs this installation can write."""
    out = []
    with contextlib.suppress(ImportError):
        import imageio_ffmpeg  # noqa: F401

        out.append("h264")
    with contextlib.suppress(ImportError):
        import cv2  # noqa: F401

        out += ["vp9", "mp4v"]
    return out


def codec_for(path: str | os.PathLike[str], codec: str | None = None) -> str:
    """The codec to use for ``path``: the one asked for, else by extension (.mp4 -> h264, .webm -> vp9)."""
    if codec is not None:
        if codec not in CODECS:
            raise BibInputError(f"unknown codec {codec!r}; known: {', '.join(CODECS)}")
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
    crf: int = 18,
    preset: str = "veryfast",
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
    tmp = target.with_name(f".{target.stem}.tmp{CODECS[codec]}")
    try:
        n = _write_h264(stream, tmp, (w, h), fps, crf, preset) if codec == "h264" else _write_cv2(stream, tmp, (w, h), fps, codec)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return n


def _ffmpeg_dies_with_parent() -> None:
    """Make the ffmpeg children of imageio-ffmpeg die with this process (issue 17): its Popen keyword
    arguments get a ``preexec_fn`` that keeps its own (``setpgrp``) and adds ``PR_SET_PDEATHSIG``.
    """
    from imageio_ffmpeg import _io

    original = _io._popen_kwargs
    if getattr(original, "bib_dies_with_parent", False):
        return
    from bib.parallel import die_with_parent

    def popen_kwargs(prevent_sigint: bool = False) -> dict:
        kwargs = original(prevent_sigint=prevent_sigint)
        first = kwargs.get("preexec_fn")

        def preexec() -> None:
            if first is not None:
                first()
            die_with_parent()

        return {**kwargs, "preexec_fn": preexec}

    popen_kwargs.bib_dies_with_parent = True  # type: ignore[attr-defined]
    _io._popen_kwargs = popen_kwargs


def _write_h264(frames: Iterator[np.ndarray], path: Path, size: tuple[int, int], fps: int, crf: int, preset: str) -> int:
    import imageio_ffmpeg

    _ffmpeg_dies_with_parent()
    writer = imageio_ffmpeg.write_frames(
        str(path),
        size,
        fps=fps,
        codec="libx264",
        pix_fmt_in="rgb24",
        pix_fmt_out="yuv420p",
        quality=None,
        macro_block_size=2,
        ffmpeg_log_level="error",
        output_params=[
            "-crf", str(crf), "-preset", preset, "-threads", "1",
            "-movflags", "+faststart", "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:v", "+bitexact",
        ],
    )
    writer.send(None)
    n = 0
    try:
        for frame in frames:
            writer.send(frame)
            n += 1
    finally:
        writer.close()
    return n


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
    s = settings or RenderSettings()
    n = write_video(episode_frames(episode, s), path, s.fps, codec)
    if per_trial_dir is not None:
        chosen = codec_for(path, codec)
        folder = Path(per_trial_dir)
        folder.mkdir(parents=True, exist_ok=True)
        for k, trial in enumerate(episode.trials):
            write_video(trial_frames(trial, s), folder / f"{episode.id}-trial{k}{CODECS[chosen]}", s.fps, chosen)
    return n


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
