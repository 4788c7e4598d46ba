"""H.264 MP4 encoded in-process by libx264 through PyAV, from planar frames, in segments.

A video is a list of *segments*, each encoded by its own libx264 encoder, so each starts on an
IDR keyframe; their packets are muxed one after the other (timestamps continued, constant frame
rate) into one MP4. A segment that several videos share (the familiarization of a pair's two
episodes) is encoded once (:func:`encode_segment`) and its packets muxed into each of them. Two
encoders of the same settings and frame size write the same SPS/PPS (the MP4's ``avcC``); the
muxer compares them and refuses a segment whose headers differ (:class:`HeadersDiffer`).

Every encoder runs on one thread with bit-exact flags and the container is written without
metadata, so the bytes depend only on the frames and the settings, in any process. Streams are
tagged BT.601 limited range, the matrix :mod:`bib.render.yuv` uses; ``+faststart`` puts the index
first so browsers start playing before the whole file has arrived.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from bib.errors import BibInputError
from bib.render.yuv import frame_bytes, planes

if TYPE_CHECKING:
    import av

ENCODER = "libx264"
"""The H.264 encoder of PyAV's bundled FFmpeg."""
BT601_TAGS = {"color_range": 1, "colorspace": 6, "color_primaries": 6, "color_trc": 6}
"""The stream's colour tags: BT.601 (SMPTE 170M) matrix, primaries and transfer, limited ("tv") range, as
FFmpeg's enum values (``AVCOL_RANGE_MPEG``, ``AVCOL_SPC_``, ``AVCOL_PRI_``, ``AVCOL_TRC_SMPTE170M``; PyAV's
``Colorspace`` enum numbers swscale's matrices instead)."""


@dataclass(frozen=True)
class Encoding:
    """What determines an H.264 stream's bytes besides its frames."""

    size: tuple[int, int]
    """``(width, height)`` in pixels, both even."""
    fps: int
    crf: int
    preset: str
    pix_fmt: str

    @property
    def frame_bytes(self) -> int:
        return frame_bytes(*self.size, self.pix_fmt)


@dataclass(frozen=True)
class Segment:
    """A run of frames encoded by one encoder: its packets (data, pts, dts, keyframe, duration; times in
    frames from the segment's first), its frame count and its encoder's global headers (SPS/PPS)."""

    packets: tuple[tuple[bytes, int, int, bool, int], ...]
    frames: int
    extradata: bytes


class HeadersDiffer(RuntimeError):
    """A shared segment's SPS/PPS differ from those of the video's own encoder (never seen: same settings
    and size give the same headers); the caller encodes the whole video with one encoder instead."""


def encoder_problem(preset: str, pix_fmt: str) -> str | None:
    """Why the installed PyAV cannot encode H.264 with ``preset`` and ``pix_fmt`` (one line naming the value
    and the allowed ones), or None when it can."""
    try:
        import av
    except ImportError:
        return "H.264 videos need PyAV (pip install av), which is not installed"
    if ENCODER not in av.codecs_available:
        return f"the installed PyAV {av.__version__} has no {ENCODER} encoder; H.264 videos need a build with it"
    formats = [f.name for f in av.Codec(ENCODER, "w").video_formats or ()]
    if pix_fmt not in formats:
        return f"pixel format {pix_fmt!r} is not one {ENCODER} encodes; allowed: {', '.join(formats)}"
    from bib.render.frames import PRESETS

    if preset not in PRESETS:
        return f"preset {preset!r} is not a {ENCODER} preset; allowed: {', '.join(PRESETS)}"
    try:
        _context(Encoding((16, 16), 25, 23, preset, pix_fmt)).open()
    except av.FFmpegError as e:
        return f"{ENCODER} refuses preset {preset!r} with pixel format {pix_fmt!r} ({e}); allowed presets: {', '.join(PRESETS)}"
    return None


def check_encoder(preset: str, pix_fmt: str) -> None:
    """Raise :class:`~bib.errors.BibInputError` (one line) unless :func:`encoder_problem` finds nothing."""
    problem = encoder_problem(preset, pix_fmt)
    if problem is not None:
        raise BibInputError(problem)


def _context(enc: Encoding, ctx: av.VideoCodecContext | None = None) -> av.VideoCodecContext:
    """``ctx`` (a new standalone encoder if None) set up for ``enc``: one thread, bit-exact, global headers
    (SPS/PPS in the extradata, as MP4 keeps them), BT.601 limited range."""
    import av
    from av.codec.context import Flags

    if ctx is None:
        ctx = av.CodecContext.create(ENCODER, "w")
    ctx.width, ctx.height = enc.size
    ctx.pix_fmt = enc.pix_fmt
    ctx.time_base = Fraction(1, enc.fps)
    ctx.framerate = Fraction(enc.fps)
    ctx.thread_count = 1
    ctx.flags |= Flags.global_header | Flags.bitexact
    for name, tag in BT601_TAGS.items():
        setattr(ctx, name, tag)
    ctx.options = {"preset": enc.preset, "crf": str(enc.crf)}
    return ctx


def _av_frames(buffers: Iterable[np.ndarray], enc: Encoding, count: list[int]) -> Iterable[av.VideoFrame]:
    """Each flat planar buffer copied into one PyAV frame (its planes padded to PyAV's line size), with its
    pts (frames from the first; ``count[0]`` counts them). The same frame object serves every buffer: an
    encoder holds no reference to a frame once ``encode`` has returned (libx264 copies each picture in), so
    it can be overwritten; a buffer yielded again (a pause) is not copied again."""
    import av

    w, h = enc.size
    frame = av.VideoFrame(w, h, enc.pix_fmt)
    views = [np.frombuffer(p, np.uint8).reshape(-1, p.line_size)[: src.shape[0], : src.shape[1]]
             for p, src in zip(frame.planes, planes(np.empty(enc.frame_bytes, np.uint8), w, h, enc.pix_fmt))]
    last: np.ndarray | None = None
    for i, buf in enumerate(buffers):
        if buf is not last:
            if buf.nbytes != enc.frame_bytes:
                raise ValueError(f"frame {i} has {buf.nbytes} bytes, expected {enc.frame_bytes}")
            for view, src in zip(views, planes(buf, w, h, enc.pix_fmt)):
                np.copyto(view, src)
            last = buf
        frame.pts = i
        count[0] = i + 1
        yield frame


def _encode(ctx: av.VideoCodecContext, frames: Iterable[np.ndarray], enc: Encoding, count: list[int]) -> Iterable[av.Packet]:
    """The packets of ``frames`` through ``ctx``, the encoder flushed at the end (``count[0]``: frames sent)."""
    for frame in _av_frames(frames, enc, count):
        yield from ctx.encode(frame)
    yield from ctx.encode(None)


def encode_segment(frames: Iterable[np.ndarray], enc: Encoding) -> Segment:
    """Encode ``frames`` (flat planar buffers, :mod:`bib.render.yuv`) with a new encoder; keep the packets."""
    ctx = _context(enc)
    ctx.open()
    count = [0]
    packets = tuple((bytes(p), int(p.pts), int(p.dts), bool(p.is_keyframe), int(p.duration or 0))
                    for p in _encode(ctx, frames, enc, count))
    return Segment(packets, count[0], bytes(ctx.extradata or b""))


def write_mp4(path: str | os.PathLike[str], enc: Encoding, head: Sequence[Segment], tail: Iterable[np.ndarray]) -> int:
    """Write the MP4 of the segments ``head`` (already encoded) then the frames ``tail`` (encoded here by
    the stream's own encoder, so a keyframe starts them); return the frame count.

    Raises:
        HeadersDiffer: a segment of ``head`` was encoded with other SPS/PPS than the stream's.
    """
    import av

    tb = Fraction(1, enc.fps)
    with av.open(os.fspath(path), "w", format="mp4",
                 options={"movflags": "+faststart", "fflags": "+bitexact"}) as out:
        stream = out.add_stream(ENCODER, rate=enc.fps)
        ctx = _context(enc, stream.codec_context)
        ctx.open()
        if any(s.extradata != bytes(ctx.extradata or b"") for s in head):
            raise HeadersDiffer(f"{path}: a shared segment's SPS/PPS differ from the encoder's")
        offset = 0
        for segment in head:
            for data, pts, dts, key, duration in segment.packets:
                packet = av.Packet(data)
                packet.pts, packet.dts, packet.duration = pts + offset, dts + offset, duration
                packet.time_base = tb
                packet.is_keyframe = key
                packet.stream = stream
                out.mux(packet)
            offset += segment.frames
        count = [0]
        for packet in _encode(ctx, tail, enc, count):
            packet.pts += offset
            packet.dts += offset
            out.mux(packet)
        return offset + count[0]


def encode_h264(frames: Iterable[np.ndarray], path: str | os.PathLike[str], size: tuple[int, int], fps: int,
                crf: int, preset: str, pix_fmt: str) -> int:
    """Encode planar frames (flat buffers of :mod:`bib.render.yuv`; a buffer may be yielded again, but must
    not change once yielded) to an H.264 MP4 at ``path`` with one encoder; return the frame count."""
    return write_mp4(path, Encoding(size, fps, crf, preset, pix_fmt), (), frames)
