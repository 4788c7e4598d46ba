"""Rendering and encoding speed: frames/s at 84 x 84 and 200 x 200, and H.264 encode frames/s.

References run in the same process: a naive renderer that redraws every sprite with pygame for
each frame (what the cached numpy renderer replaces) and OpenCV's MP4V writer (the fallback
codec). Usage: ``python benchmarks/render.py [--episodes N]``. Single process (one core).
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=8)
    args = ap.parse_args()
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
