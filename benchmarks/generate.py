"""Benchmark: generate the full bib-eval spec without video (2 workers), then a subset with video.

Run: .venv/bin/python benchmarks/generate.py [--limit N] [--video-limit N] [--workers W] [--out DIR]

Prints the wall time of the full no-video build (target <= 60 s with 2 workers), episodes per
second per condition (one worker, from the same run's subset), episodes per second with H.264
video at 200 x 200 / 25 fps, and peak memory (this process and its worker processes).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class WorkerPeak(threading.Thread):
    """Samples the peak resident memory (VmHWM) of this process's descendants from /proc.

    Pool workers are started by a forkserver, so they are grandchildren and RUSAGE_CHILDREN
    never sees them; Linux only (reports 0 elsewhere).
    """

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_kb = 0
        self.stop = threading.Event()

    def _descendants(self) -> list[int]:
        parent: dict[int, int] = {}
        for d in Path("/proc").glob("[0-9]*"):
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
        mine, me = [], os.getpid()
        for pid in parent:
            p = pid
            while p in parent and p != me and p > 1:
                p = parent[p]
            if p == me and pid != me:
                mine.append(pid)
        return mine

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for pid in self._descendants():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))


def main() -> None:
    """Run the benchmark and print its figures."""
    os.environ.setdefault("BIB_NO_PROGRESS", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="units per condition for the no-video run (default: all)")
    parser.add_argument("--video-limit", type=int, default=3, help="pairs per condition for the video run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="output root (default: a temporary folder)")
    args = parser.parse_args()

    from bib.stimuli.build import build_spec
    from bib.stimuli.spec import load_spec, override
    from bib.tasks import REGISTRY

    spec = load_spec(ROOT / "stimuli" / "bib-eval.toml")
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; registered tasks: {len(REGISTRY)}")
    root = args.out or Path(tempfile.mkdtemp(prefix="bib-bench-"))
    sampler = WorkerPeak()
    sampler.start()
    try:
        per_condition = []
        for task in spec.tasks:
            one = override(spec.model_copy(update={"tasks": [task]}), "bench")
            t0 = time.perf_counter()
            s = build_spec(one, root / "per-condition" / task.id, workers=1, limit=20, record=False)
            per_condition.append((task.id, s.episodes / (time.perf_counter() - t0)))
        print("one worker, 20 pairs per condition (no video):")
        for task_id, rate in per_condition:
            print(f"  {task_id:30s} {rate:7.1f} episodes/s")

        t0 = time.perf_counter()
        full = build_spec(spec, root / "full", workers=args.workers, limit=args.limit)
        wall = time.perf_counter() - t0
        units = sum(n if args.limit is None else min(n, args.limit) for _, n in spec.units)
        print(f"bib-eval without video, {args.workers} workers: {full.episodes} episodes ({units} pairs) in {wall:.1f} s "
              f"= {full.episodes / wall:.0f} episodes/s (target <= 60 s for the full spec)")

        t0 = time.perf_counter()
        rerun = build_spec(spec, root / "full", workers=args.workers, limit=args.limit)
        print(f"resume (nothing to do, every file re-hashed): {time.perf_counter() - t0:.1f} s, kept {rerun.kept} units")

        vid = override(spec, "bench", video=True, cell_px=20, fps=25)
        t0 = time.perf_counter()
        v = build_spec(vid, root / "video", workers=args.workers, limit=args.video_limit)
        wall = time.perf_counter() - t0
        print(f"with H.264 video at 200 x 200 / 25 fps, {args.workers} workers: {v.episodes} episodes in {wall:.1f} s "
              f"= {v.episodes / wall:.2f} episodes/s")
        sampler.stop.set()
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak memory: main process {own:.0f} MB, largest worker process {sampler.peak_kb / 1024:.0f} MB")
    finally:
        if args.out is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
