"""Rendering and encoding speed: the encoder table (preset x crf), frames/s at 84 x 84 and 200 x 200, H.264 encode frames/s.

First the encoder table of docs/stimuli.md: per libx264 preset and crf, the pipeline's encoder (in-process,
PyAV) CPU per frame, file size and PSNR of the decoded frames against the rendered ones, on a fixed set
of episodes (``--presets``, ``--crfs``; ``--only-table`` stops there).

References run in the same process: a naive renderer that redraws every sprite with pygame for
each frame (what the cached numpy renderer replaces) and OpenCV's MP4V writer (the fallback
codec). Usage: ``python benchmarks/render.py [--episodes N] [--smoke]``. Single process (one core).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import numpy as np  # noqa: E402

from bib.render.frames import RenderSettings, episode_frame_count, episode_frames  # noqa: E402
from bib.render.sprites import alpha_mask  # noqa: E402
from bib.render.video import write_video  # noqa: E402
from bib.tasks import make_unit  # noqa: E402


def naive_frames(episode, settings):
    """Reference: redraw walls, objects and agent from scratch with pygame every frame."""
    import pygame

    px = settings.cell_px
    size = (episode.width * px, episode.height * px)
    for frame in episode_frames(episode, settings):  # same positions, re-drawn the slow way
        surf = pygame.Surface(size)
        surf.fill((255, 255, 255))
        trial = episode.trials[0]
        for x, y in trial.layout.walls:
            pygame.draw.rect(surf, (0, 0, 0), pygame.Rect(x * px, y * px, px, px))
        for obj in trial.layout.objects:
            mask = alpha_mask.__wrapped__(obj.shape, px)  # uncached: draw the shape again
            sub = pygame.surfarray.make_surface((np.dstack([mask] * 3) * 255).astype(np.uint8).transpose(1, 0, 2))
            surf.blit(sub, (obj.cell[0] * px, obj.cell[1] * px))
        mask = alpha_mask.__wrapped__(trial.agent.shape, px)
        sub = pygame.surfarray.make_surface((np.dstack([mask] * 3) * 255).astype(np.uint8).transpose(1, 0, 2))
        surf.blit(sub, (trial.agent.home[0] * px, trial.agent.home[1] * px))
        yield pygame.surfarray.array3d(surf).transpose(1, 0, 2)
        del frame


def timed(frames):
    t = time.perf_counter()
    n = sum(1 for _ in frames)
    return n, time.perf_counter() - t


TABLE_TASKS = ("preference", "efficiency-path", "instrumental-blocking", "multi-agent")
"""The fixed episodes of the encoder table: both episodes of pair 0 of each (seed 0)."""


def encoder_table(presets: list[str], crfs: list[int]) -> None:
    """Per preset and crf: the pipeline's encoder (libx264 in-process through PyAV, :func:`encode_h264`, one
    encoder per episode) CPU per frame on frames drawn beforehand (not timed), file size, and PSNR of the
    decoded RGB frames against the rendered source frames."""
    import av

    from bib.render.h264 import encode_h264
    from bib.render.yuv import episode_yuv

    s = RenderSettings()
    episodes = [ep for task in TABLE_TASKS for ep in make_unit(task, 0, 0)]
    size = s.frame_size(episodes[0].width, episodes[0].height)
    n = sum(episode_frame_count(ep, s) for ep in episodes)
    print(f"encoder table: {n} frames of {len(episodes)} episodes ({', '.join(TABLE_TASKS)}, pair 0, seed 0), "
          f"{size[0]} x {size[1]}, {s.fps} fps, yuv420p, libx264 in-process (PyAV {av.__version__}), one thread, "
          f"one encoder per episode; load average {os.getloadavg()[0]:.1f}")
    print(f"  {'preset':10s} {'crf':>4s} {'CPU us/frame':>13s} {'size kB':>9s} {'kB/episode':>11s} {'PSNR dB':>8s}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.mp4"
        for preset in presets:
            for crf in crfs:
                cpu, sq, count, kb = 0.0, 0.0, 0, 0.0
                for ep in episodes:
                    frames = list(episode_yuv(ep, s))  # a pause is the same array again, as in the pipeline
                    t0 = time.process_time()
                    encode_h264(frames, out, size, s.fps, crf, preset, "yuv420p")
                    cpu += time.process_time() - t0
                    kb += out.stat().st_size / 1000
                    with av.open(str(out)) as c:
                        for frame, ref in zip(c.decode(video=0), episode_frames(ep, s)):
                            sq += float(((frame.to_ndarray(format="rgb24").astype(np.int32) - ref) ** 2).sum())
                            count += ref.size
                psnr = 10 * np.log10(255.0**2 / (sq / count)) if sq else float("inf")
                mark = "  <- default" if (preset, crf) == (s.preset, s.crf) else ""
                print(f"  {preset:10s} {crf:4d} {1e6 * cpu / n:13.0f} {kb:9.0f} {kb / len(episodes):11.1f} {psnr:8.2f}{mark}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--presets", default="ultrafast,superfast,veryfast,faster,fast,medium")
    ap.add_argument("--crfs", default="18,23,28")
    ap.add_argument("--only-table", action="store_true", help="print only the encoder table")
    ap.add_argument("--smoke", action="store_true", help="2 episodes, one preset and CRF: CI's check that the script runs")
    args = ap.parse_args()
    if args.smoke:
        args.episodes, args.presets, args.crfs = 2, "ultrafast", "23"
    encoder_table(args.presets.split(","), [int(c) for c in args.crfs.split(",")])
    if args.only_table:
        return
    episodes = [make_unit("single-object", i, 0)[0] for i in range(args.episodes)]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"{args.episodes} single-object episodes")
    configs = {
        "200x200": RenderSettings(),
        "84x84": RenderSettings(cell_px=8, canvas=(84, 84)),
    }
    for name, s in configs.items():
        for ep in episodes[:1]:
            sum(1 for _ in episode_frames(ep, s))  # warm the sprite cache
        n, dt = timed(f for ep in episodes for f in episode_frames(ep, s))
        assert n == sum(episode_frame_count(ep, s) for ep in episodes)
        ref_eps = episodes[:2]
        rn, rdt = timed(f for ep in ref_eps for f in naive_frames(ep, s))
        print(f"render {name}: {n / dt:9.0f} frames/s   (reference naive pygame redraw: {rn / rdt:7.0f} frames/s, "
              f"ratio {(n / dt) / (rn / rdt):5.1f}x)")
    from bib.render.yuv import episode_yuv

    for name, s in configs.items():  # what the H.264 pipeline draws: frames already in yuv420p
        n, dt = timed(f for ep in episodes for f in episode_yuv(ep, s))
        print(f"render {name} planar yuv420p (the H.264 pipeline's frames): {n / dt:9.0f} frames/s "
              f"({1e6 * dt / n:.0f} us per frame, wall clock)")
    s = configs["200x200"]
    frames = [f for ep in episodes[:4] for f in episode_frames(ep, s)]
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        write_video(frames, Path(tmp) / "a.mp4", s.fps, codec="h264")
        h264 = len(frames) / (time.perf_counter() - t)
        t = time.perf_counter()
        write_video(frames, Path(tmp) / "b.mp4", s.fps, codec="mp4v")
        mp4v = len(frames) / (time.perf_counter() - t)
        t = time.perf_counter()
        write_video((f for ep in episodes[:4] for f in episode_frames(ep, s)), Path(tmp) / "c.mp4", s.fps)
        both = len(frames) / (time.perf_counter() - t)
    print(f"encode H.264 200x200: {h264:9.0f} frames/s   (reference OpenCV MP4V: {mp4v:7.0f} frames/s, "
          f"ratio {h264 / mp4v:5.2f}x)")
    print(f"render + encode H.264 200x200: {both:9.0f} frames/s ({both / s.fps:.0f}x real time)")
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
