"""Video writers: H.264 MP4 through ffmpeg's libx264 fed raw YUV (default), VP9 WebM and MP4V through OpenCV; contact sheets.

H.264 output is ``yuv420p`` (BT.601, limited range, tagged so) with ``+faststart`` so browsers and
lab software (PsychoPy, PyHab) play it; OpenCV's pip wheels cannot encode H.264, so OpenCV only
serves the fallbacks. Episodes are encoded from frames drawn straight in the encoder's pixel format
(:mod:`bib.render.yuv`) and piped in large writes: half the bytes of RGB, and nothing converts them
again. libx264 runs on one thread with bit-exact flags, so the same episode and settings give the
same bytes.
Every writer checks each frame's size (OpenCV would silently drop a wrong-sized frame) and writes to
a temporary file that is renamed into place only when the video is complete.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from pathlib import Path

import numpy as np

from bib.episode import Episode, Trial
from bib.errors import BibInputError
from bib.io import atomic_write_bytes
from bib.registry import Registry
from bib.render.frames import RenderSettings, episode_frames, frame_count, trial_frames
from bib.render.yuv import episode_yuv, frame_bytes, rgb_to_yuv, trial_yuv

CODECS: Registry[str] = Registry("codec")
"""Codec name -> file extension (a :class:`bib.registry.Registry`). ``h264`` is the browser-playable default."""
CODECS.register("h264", ".mp4")
CODECS.register("vp9", ".webm")
CODECS.register("mp4v", ".mp4")


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
        return _atomically(target, codec, lambda tmp: encode_h264((rgb_to_yuv(f) for f in stream), tmp, (w, h), fps, crf, preset))
    return _atomically(target, codec, lambda tmp: _write_cv2(stream, tmp, (w, h), fps, codec))


def _atomically(target: Path, codec: str, write: Callable[[Path], int]) -> int:
    """``write(tmp)`` to a temporary file next to ``target``, renamed into place only when it returns."""
    tmp = target.with_name(f".{target.stem}.tmp{CODECS[codec]}")
    try:
        n = write(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return n


def h264_command(source: str, path: str | os.PathLike[str], size: tuple[int, int], fps: int, crf: int, preset: str,
                 pix_fmt: str) -> list[str]:
    """The ffmpeg command that encodes raw planar frames from ``source`` (a file, or ``pipe:0``) to ``path``."""
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


PIPE_CHUNK = 1 << 20
"""Bytes of frames written to ffmpeg's stdin at once (few, large writes), and the pipe's size asked for
(the most Linux lets a pipe hold without privileges, by default)."""


def encode_h264(frames: Iterable[np.ndarray], path: str | os.PathLike[str], size: tuple[int, int], fps: int,
                crf: int = RenderSettings.crf, preset: str = RenderSettings.preset,
                pix_fmt: str = RenderSettings.pix_fmt) -> int:
    """Encode planar frames (flat buffers of :mod:`bib.render.yuv`; a buffer may be yielded again, but
    must not change once yielded) to an H.264 MP4 at ``path``; return the frame count.

    libx264 in imageio-ffmpeg's bundled ffmpeg reads the frames as raw video from a pipe of
    :data:`PIPE_CHUNK` bytes, written about that many bytes of frames at a time with one ``writev`` (the
    frames are not copied into a buffer first); it converts nothing. One thread, no metadata and bit-exact
    flags: the bytes depend only on the frames and the settings. The stream is tagged BT.601 limited
    range, the matrix :mod:`bib.render.yuv` uses. ffmpeg dies with this process (issue 17).
    """
    import subprocess
    import tempfile

    from bib.parallel import die_with_parent

    cmd = h264_command("pipe:0", path, size, fps, crf, preset, pix_fmt)
    n = 0
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err,
                                preexec_fn=die_with_parent)  # noqa: PLW1509 (no threads start ffmpeg)
        with contextlib.suppress(OSError, AttributeError):  # Linux: a larger pipe, fewer wake-ups of ffmpeg
            import fcntl

            fcntl.fcntl(proc.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_CHUNK)  # type: ignore[union-attr]
        try:
            fd = proc.stdin.fileno()  # type: ignore[union-attr]
            one = frame_bytes(*size, pix_fmt)
            per_write = min(max(PIPE_CHUNK // one, 1), 512)  # writev takes at most IOV_MAX (1024) buffers
            pending: list[np.ndarray] = []
            try:
                for buf in frames:
                    if buf.nbytes != one:
                        raise ValueError(f"{path}: frame {n} has {buf.nbytes} bytes, expected {one}")
                    pending.append(buf)
                    n += 1
                    if len(pending) == per_write:
                        _write_all(fd, pending)
                        pending = []
                _write_all(fd, pending)
                proc.stdin.close()  # type: ignore[union-attr]
            except BrokenPipeError:  # ffmpeg stopped reading: its exit code and message say why
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.close()  # type: ignore[union-attr]
                code = proc.wait() or -1
            else:
                code = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        if code:
            err.seek(0)
            raise RuntimeError(f"{path}: ffmpeg failed ({code}): {err.read().decode(errors='replace').strip()[-500:]}")
    return n


def _write_all(fd: int, buffers: list[np.ndarray]) -> None:
    """Write ``buffers`` to ``fd`` in order with as few system calls as the kernel allows (no copy here)."""
    views = [memoryview(b).cast("B") for b in buffers]
    while views:
        done = os.writev(fd, views)
        while views and done >= len(views[0]):
            done -= len(views[0])
            views.pop(0)
        if done:
            views[0] = views[0][done:]


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
    chosen = codec_for(path, codec)
    n = _render(episode, episode_frames(episode, s), lambda: episode_yuv(episode, s, s.pix_fmt), Path(path), s, chosen)
    if per_trial_dir is not None:
        folder = Path(per_trial_dir)
        folder.mkdir(parents=True, exist_ok=True)
        for k, trial in enumerate(episode.trials):
            target = folder / f"{episode.id}-trial{k}{CODECS[chosen]}"
            _render(episode, trial_frames(trial, s), lambda t=trial: trial_yuv(t, s, s.pix_fmt), target, s, chosen)
    return n


def _render(episode: Episode, rgb: Iterable[np.ndarray], yuv: Callable[[], Iterable[np.ndarray]], target: Path,
            s: RenderSettings, codec: str) -> int:
    """H.264 from the planar frames ``yuv()`` (``rgb`` is then never drawn), other codecs from ``rgb``."""
    if codec != "h264":
        return write_video(rgb, target, s.fps, codec)
    w, h = s.frame_size(episode.width, episode.height)
    if w % 2 or h % 2:
        raise BibInputError(f"{target}: h264 needs even frame sizes, got {w} x {h}")
    return _atomically(target, codec, lambda tmp: encode_h264(yuv(), tmp, (w, h), s.fps, s.crf, s.preset, s.pix_fmt))


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
