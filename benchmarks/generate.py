"""Benchmark: generate the full bib-eval and bib-ctrl specs without video (2 workers), then a subset with video.

Run: .venv/bin/python benchmarks/generate.py [--limit N] [--video-limit N] [--workers W] [--out DIR] [--only-video]
     [--cpu-units N] [--baseline DIR] [--smoke]

bib-ctrl (the controlled set: noisy agents, twins, catch pairs, graded difficulty) is built right
after bib-eval in the same process with the same workers, and the ratio of the two builds' wall and
CPU times is printed (target: bib-ctrl <= 1.5x bib-eval, issue 26); its CPU time per pair is probed like
bib-eval's.

Prints, first, for the same episodes (``--overhead-pairs`` per condition, one process): the CPU time of
generation with video, without video, and of a raw libx264 encode (the ffmpeg CLI) of the same frames from a
file at the same settings, with the ratio (video - symbolic) / raw (target <= 1.2), both against every
video's frames (the issue's figure) and against only the frames the pipeline encodes (it encodes a
pair's shared familiarization once), and a projection of the full bib-eval with videos on ``--workers``
workers (target <= 30 min): the subset's CPU per video frame times the full set's frame count, counted from
every episode's timing (:func:`set_frames`: generated, not rendered; ``--frames-limit`` counts fewer units and
scales each condition up). Then the CPU time per unit (``time.process_time`` in a fresh single process, best of
``--repeats``) of ``bib.tasks.make_unit`` for every condition and the CPU time the whole spec
projects to: this is what to compare on a shared machine, where wall time depends on the other
jobs. With ``--baseline DIR`` (a source tree holding an older ``bib`` package, e.g.
``mkdir /tmp/base && git archive c723bcd bib | tar -x -C /tmp/base``) the same measurement runs on
that tree, interleaved with the current one, and the ratios are printed. Then the wall time and the
workers' CPU time of the full no-video build (target <= 60 s with 2 workers), the load average,
episodes per second with H.264 video at 200 x 200 / 25 fps, and peak memory (this process and its
worker processes).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class WorkerPeak(threading.Thread):
    """Samples the peak resident memory (VmHWM) and CPU time of this process's descendants from /proc.

    Pool workers are started by a forkserver, so they are grandchildren and RUSAGE_CHILDREN
    never sees them; Linux only (reports 0 elsewhere). CPU time is each process's last sampled
    user + system time (sampled every 0.5 s, so a worker's last half second may be missed).
    """

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_kb = 0
        self.cpu_ticks: dict[int, int] = {}
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

    def cpu_seconds(self) -> float:
        """Sum of the descendants' sampled CPU time so far."""
        return sum(self.cpu_ticks.values()) / os.sysconf("SC_CLK_TCK")

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for pid in self._descendants():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                self.cpu_ticks[pid] = max(self.cpu_ticks.get(pid, 0), int(fields[11]) + int(fields[12]))
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))


CPU_PROBE = """
import json, sys, time
from bib.tasks import make_unit
n, seed, tasks = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
out = {}
for task in tasks:
    t0 = time.process_time()
    for i in range(n):
        make_unit(task, i, seed)
    out[task] = (time.process_time() - t0) / n
print(json.dumps(out))
"""
"""Runs in a fresh interpreter: CPU seconds per unit of ``make_unit`` for each task (units 0..n-1)."""

CTRL_PROBE = """
import json, sys, time
from bib.stimuli.spec import load_spec
from bib.tasks import make_unit
n, path = int(sys.argv[1]), sys.argv[2]
spec = load_spec(path)
options = spec.options()
out = {}
for task in spec.tasks:
    o = options[task.id]
    g = o.group_size
    t0 = time.process_time()
    for i in range(0, n, g):
        make_unit(task.id, i, spec.seed, o)
    out[task.id] = (time.process_time() - t0) / (len(range(0, n, g)) * g)
print(json.dumps(out))
"""
"""Runs in a fresh interpreter: CPU seconds per pair of ``make_unit`` for each task of a spec with its options."""


def cpu_per_unit(tasks: list[str], n: int, seed: int, source: Path | None) -> dict[str, float]:
    """CPU seconds per unit for each task, measured in a fresh process importing ``bib`` from ``source``
    (None: this checkout)."""
    env = dict(os.environ)
    cwd = ROOT
    if source is not None:
        env["PYTHONPATH"] = str(source)
        cwd = source  # so the editable install of this checkout does not shadow the tree
    done = subprocess.run([sys.executable, "-c", CPU_PROBE, str(n), str(seed), *tasks], capture_output=True,
                          text=True, env=env, cwd=cwd, check=True)
    return json.loads(done.stdout)


def loadavg() -> str:
    """The 1-minute load average (or "n/a")."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "n/a"


def children_cpu() -> float:
    """CPU seconds of this process's waited-for children (the ffmpeg CLI encodes)."""
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return b.ru_utime + b.ru_stime


def own_cpu() -> float:
    """CPU seconds of this process and of its waited-for children."""
    a = resource.getrusage(resource.RUSAGE_SELF)
    return a.ru_utime + a.ru_stime + children_cpu()


def run_with_peak(cmd: list[str]) -> int:
    """Run ``cmd`` to its end and return its own peak resident memory in kB: its VmHWM in /proc, sampled every
    20 ms (0 where /proc is missing). Not ``RUSAGE_CHILDREN``'s ru_maxrss: that also counts, for a child, this
    process's resident pages when it was started (the child shares them until it runs ``cmd``)."""
    proc = subprocess.Popen(cmd)
    peak = 0
    while proc.poll() is None:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            status = ""
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]))
        time.sleep(0.02)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return peak


def raw_encode_cpu(root: Path, settings, crf: int, preset: str, pix_fmt: str) -> dict[str, float]:
    """CPU seconds of the ffmpeg CLI's libx264 (one thread, the pipeline's preset, crf and pixel format:
    :func:`bib.render.video.h264_command`) encoding frames from a raw file written beforehand (not timed),
    two ways: ``videos``, every video's frames (one file and one encode per episode: the issue's figure),
    and ``encoded``, only the frames the pipeline encodes (per pair, the segments of
    :func:`bib.render.video.segment_bounds` its episodes share written once: one file and one encode per
    pair). Also the frame counts (``videos_frames``, ``encoded_frames``), the CPU seconds of drawing
    every video's frames (``drawing``, :func:`episode_yuv` alone) and the largest encode's own peak resident
    memory in MB (``peak_mb``, :func:`run_with_peak`)."""
    from bib.episode import load_episode
    from bib.render.video import h264_command, segment_bounds, segment_key
    from bib.render.yuv import episode_yuv

    pairs: dict[str, list] = {}
    for path in sorted((root / "episodes").glob("*.json")):
        ep = load_episode(path)
        pairs.setdefault(ep.pair_id or ep.id, []).append(ep)
    out = dict.fromkeys(("videos", "encoded", "videos_frames", "encoded_frames", "drawing", "peak_mb"), 0.0)

    def encode(parts, kind: str) -> None:
        """Write the frames of ``parts`` ((episode, first trial, end trial) each) to one raw file, then time the CLI on it."""
        with open(raw, "wb") as fh:
            for ep, a, b in parts:
                for buf in episode_yuv(ep, settings, pix_fmt, a, b):
                    fh.write(buf.tobytes())
                    out[f"{kind}_frames"] += 1
        size = settings.frame_size(parts[0][0].width, parts[0][0].height)
        t0 = children_cpu()  # the encoder's own CPU (this process only waits for it, sampling its memory)
        peak = run_with_peak(h264_command(str(raw), tmp_out, size, settings.fps, crf, preset, pix_fmt))
        out[kind] += children_cpu() - t0
        out["peak_mb"] = max(out["peak_mb"], peak / 1024)

    with tempfile.TemporaryDirectory() as tmp:
        raw, tmp_out = Path(tmp) / "frames.yuv", Path(tmp) / "out.mp4"
        for episodes in pairs.values():
            for ep in episodes:
                t0 = time.process_time()
                sum(1 for _ in episode_yuv(ep, settings, pix_fmt))
                out["drawing"] += time.process_time() - t0
                encode([(ep, 0, None)], "videos")
            seen, parts = set(), []
            for ep in episodes:
                bounds = segment_bounds(ep, episodes)
                for a, b in zip(bounds, bounds[1:]):
                    key = segment_key(ep, a, b)
                    if b == bounds[-1] or key not in seen:  # a video's last segment is always its own
                        seen.add(key)
                        parts.append((ep, a, b))
            encode(parts, "encoded")
    return out


def _unit_frames(job) -> tuple[str, int, int]:
    """Worker: ``(task, episodes, frames)`` of one unit of a build plan, generated but not rendered (frames from
    the episodes' timing, :func:`bib.render.frames.episode_frame_count`)."""
    from bib.render.frames import episode_frame_count
    from bib.tasks import make_unit

    episodes = make_unit(job.task, job.index, job.seed, job.options)
    return job.task, len(episodes), sum(episode_frame_count(ep, job.settings) for ep in episodes)


def set_frames(spec, settings, workers: int = 1, limit: int | None = None) -> tuple[int, float, int]:
    """``(episodes, video frames, episodes counted)`` of the full ``spec`` at ``settings``, without rendering.

    Every unit of the spec's build (:class:`bib.stimuli.build.Plan`: the tasks, counts, seed and options a
    build uses) is generated on ``workers`` processes and its episodes' frames counted from their timing, so
    the count is exact. With ``limit``, only the first ``limit`` units of each task are counted and each
    task's count is scaled to its full number of episodes (the frames are then a float estimate).
    """
    from collections import Counter

    from bib.parallel import map_ordered
    from bib.stimuli.build import Plan

    options = spec.options()
    plan = Plan(tuple((task, n, options[task]) for task, n in spec.units), spec.seed, "", False, settings, "h264", False)
    full: Counter[str] = Counter()
    todo = []
    for _, job in plan.jobs():
        full[job.task] += job.n_episodes
        if limit is None or job.index < limit:
            todo.append(job)
    episodes: Counter[str] = Counter()
    frames: Counter[str] = Counter()
    for task, n, f in map_ordered(_unit_frames, todo, workers=workers):
        episodes[task] += n
        frames[task] += f
    total = sum(frames[t] * full[t] / episodes[t] for t in episodes) if limit is not None else sum(frames.values())
    return sum(full.values()), total, sum(episodes.values())


def video_overhead(spec, root: Path, pairs: int, repeats: int, workers: int, frames_limit: int | None = None) -> None:
    """Print, for the same episodes (``pairs`` per condition, one process), the CPU of generation with
    video, without video and of a raw libx264 encode (ffmpeg CLI) of the same frames from a file at the
    same settings, both of every video's frames and of only the frames the pipeline encodes (a pair's
    familiarization once); the ratios (video - symbolic) / raw (target <= 1.2; the issue's figure is
    against every video's frames); a projection of the full spec with videos from its frame count
    (:func:`set_frames`, with ``frames_limit``)."""
    from bib.stimuli.build import build_spec
    from bib.stimuli.spec import override

    vid = override(spec, "bench", video=True)
    settings = vid.render.settings()  # the defaults of RenderSettings unless the spec's [render] sets them
    crf, preset, pix_fmt = settings.crf, settings.preset, settings.pix_fmt
    best: dict[str, float] = {}
    load0 = loadavg()
    episodes = 0
    raw: dict[str, float] = {}
    peak_reference = 0.0
    for k in range(repeats):  # interleaved, best of each, so the load shifts all of them alike
        for name, s in (("symbolic", spec), ("video", vid)):
            folder = root / f"overhead-{name}-{k}"
            t0 = own_cpu()
            done = build_spec(s, folder, workers=1, limit=pairs, record=False)
            best[name] = min(best.get(name, float("inf")), own_cpu() - t0)
            episodes = done.episodes
        raw = raw_encode_cpu(root / f"overhead-video-{k}", settings, crf, preset, pix_fmt)
        for name in ("videos", "encoded", "drawing"):
            best[name] = min(best.get(name, float("inf")), raw[name])
        peak_reference = max(peak_reference, raw["peak_mb"])
    frames, encoded = int(raw["videos_frames"]), int(raw["encoded_frames"])
    extra = best["video"] - best["symbolic"]
    print(f"video overhead on the same {episodes} episodes ({pairs} pairs per condition, {frames} video frames of which "
          f"the pipeline encodes {encoded} ({100 * encoded / frames:.0f}%: a pair's familiarization once), "
          f"{settings.frame_size(10, 10)[0]} px, {settings.fps} fps, libx264 {preset} crf {crf} {pix_fmt}, one thread; "
          f"one process, CPU incl. ffmpeg children, best of {repeats}; load average {load0} before, {loadavg()} after):")
    rows = (("symbolic", "generation without video"), ("video", "generation with video"),
            ("videos", "raw CLI encode, every video's frames"), ("encoded", "raw CLI encode, the encoded frames"))
    for name, label in rows:
        print(f"  {label:38s} {best[name]:7.2f} s = {1000 * best[name] / episodes:6.1f} ms/episode "
              f"= {1e6 * best[name] / frames:5.0f} us/video frame")
    print(f"  (video - symbolic = drawing every video's frames {1e6 * best['drawing'] / frames:.0f} us/video frame (the "
          f"pipeline draws shared frames once) + the rest, encoding in-process and muxing, "
          f"{1e6 * (extra - best['drawing']) / frames:.0f} us/video frame)")
    print(f"NUMBER 1: (video generation - symbolic generation) / raw libx264 encode of the videos' frames = "
          f"{extra / best['videos']:.2f} (target <= 1.2; the issue's figure); {1e6 * extra / frames:.0f} us CPU per video "
          f"frame for video, raw encode {1e6 * best['videos'] / frames:.0f}")
    print(f"  against the raw encode of only the frames the pipeline encodes: {extra / best['encoded']:.2f} "
          f"({1e6 * extra / encoded:.0f} us CPU per encoded frame for video, raw encode {1e6 * best['encoded'] / encoded:.0f})")
    per_frame = extra / frames
    symbolic_per_ep = best["symbolic"] / episodes
    peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the frame count's workers
    n_eps, set_frame_count, counted = set_frames(spec, settings, workers, frames_limit)
    how = ("every episode" if frames_limit is None else
           f"{counted} episodes ({frames_limit} units per condition), each condition scaled to its size")
    print(f"  {spec.name}: {n_eps} episodes, {set_frame_count:,.0f} video frames ({set_frame_count / n_eps:,.0f} per "
          f"episode), counted from the episodes' timing on {how} (generated, not rendered)")
    total = n_eps * symbolic_per_ep + set_frame_count * per_frame
    print(f"  rate: {1e6 * per_frame:.0f} us CPU per video frame for video (video - symbolic, this subset) and "
          f"{1000 * symbolic_per_ep:.1f} ms per episode without video")
    print(f"NUMBER 2: full {spec.name} with videos projected = {n_eps} episodes x {1000 * symbolic_per_ep:.1f} ms + "
          f"{set_frame_count:,.0f} frames x {1e6 * per_frame:.0f} us = {total:.0f} CPU s = {total / workers / 60:.1f} "
          f"min on {workers} workers (target <= 30 min; CPU-bound, so CPU / workers; rates from this subset, at load "
          f"average {loadavg()}); the raw CLI encode of every video's frames alone would take "
          f"{set_frame_count * best['videos'] / frames / workers / 60:.1f} min")
    print(f"  peak memory: this process (generation with and without video) {peak_self:.0f} MB; the raw reference "
          f"encode (the ffmpeg CLI, largest of its runs, its own VmHWM) {peak_reference:.0f} MB")


def main() -> None:
    """Run the benchmark and print its figures."""
    os.environ.setdefault("BIB_NO_PROGRESS", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="units per condition for the no-video run (default: all)")
    parser.add_argument("--video-limit", type=int, default=3, help="pairs per condition for the video run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="output root (default: a temporary folder)")
    parser.add_argument("--cpu-units", type=int, default=200, help="units per condition for the CPU-time probe")
    parser.add_argument("--repeats", type=int, default=2, help="probe runs per tree (best taken)")
    parser.add_argument("--overhead-pairs", type=int, default=2, help="pairs per condition for the video overhead")
    parser.add_argument("--frames-limit", type=int, default=None,
                        help="units per condition whose frames are counted for the projection (default: all; fewer "
                             "are scaled to each condition's size)")
    parser.add_argument("--only-video", action="store_true", help="print only the video overhead and projection")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a source tree with an older bib package to compare the CPU time against")
    parser.add_argument("--smoke", action="store_true",
                        help="1 unit or pair per condition everywhere, 1 repeat: CI's check that the script runs")
    args = parser.parse_args()
    per_condition_limit = 20
    if args.smoke:
        args.limit = args.video_limit = args.overhead_pairs = args.frames_limit = args.repeats = 1
        args.cpu_units, per_condition_limit = 2, 1

    from bib.stimuli.build import build_spec
    from bib.stimuli.spec import load_spec, override
    from bib.tasks import REGISTRY

    spec = load_spec(ROOT / "stimuli" / "bib-eval.toml")
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; registered tasks: {len(REGISTRY)}; "
          f"load average {loadavg()}")
    with tempfile.TemporaryDirectory(prefix="bib-bench-video-") as tmp:
        video_overhead(spec, Path(tmp), args.overhead_pairs, args.repeats, args.workers, args.frames_limit)
    if args.only_video:
        return
    tasks = [t.id for t in spec.tasks]
    trees = {"current": None} | ({"baseline": args.baseline} if args.baseline else {})
    best: dict[str, dict[str, float]] = {name: {} for name in trees}
    for _ in range(args.repeats):
        for name, source in trees.items():
            for task, sec in cpu_per_unit(tasks, args.cpu_units, spec.seed, source).items():
                best[name][task] = min(sec, best[name].get(task, float("inf")))
    print(f"CPU time per unit of make_unit (one process, {args.cpu_units} units per condition, best of "
          f"{args.repeats}; load average {loadavg()}):")
    for task in tasks:
        line = f"  {task:30s} {1000 * best['current'][task]:6.1f} ms"
        if args.baseline:
            b = best["baseline"][task]
            line += f"   baseline {1000 * b:6.1f} ms   x{b / best['current'][task]:.2f}"
        print(line)
    for name in trees:
        total = sum(best[name][t] * n for t, n in spec.units)
        print(f"  projected CPU for the full spec ({name}): {total:.1f} s = {total / args.workers:.1f} s on "
              f"{args.workers} workers (generation and validation only)")

    ctrl = load_spec(ROOT / "stimuli" / "bib-ctrl.toml")
    per_pair: dict[str, float] = {}
    for _ in range(args.repeats):
        done = subprocess.run([sys.executable, "-c", CTRL_PROBE, str(args.cpu_units), str(ROOT / "stimuli" / "bib-ctrl.toml")],
                              capture_output=True, text=True, cwd=ROOT, check=True)
        for task, sec in json.loads(done.stdout).items():
            per_pair[task] = min(sec, per_pair.get(task, float("inf")))
    print(f"bib-ctrl: CPU time per pair of make_unit (same probe; load average {loadavg()}):")
    for task in per_pair:
        ratio = (f"x{per_pair[task] / best['current'][task]:.2f} of bib-eval's" if task in best["current"]
                 else "(not in bib-eval: issue 43's AGENT families)")
        print(f"  {task:30s} {1000 * per_pair[task]:6.1f} ms   {ratio}")
    total_ctrl = sum(per_pair[t] * n for t, n in ctrl.units)
    total_eval = sum(best["current"][t] * n for t, n in spec.units)
    print(f"  projected CPU for the full spec: {total_ctrl:.1f} s, x{total_ctrl / total_eval:.2f} of bib-eval's "
          f"(generation and validation only)")

    root = args.out or Path(tempfile.mkdtemp(prefix="bib-bench-"))
    sampler = WorkerPeak()
    sampler.start()
    try:
        per_condition = []
        for task in spec.tasks:
            one = override(spec.model_copy(update={"tasks": [task]}), "bench")
            t0 = time.perf_counter()
            s = build_spec(one, root / "per-condition" / task.id, workers=1, limit=per_condition_limit, record=False)
            per_condition.append((task.id, s.episodes / (time.perf_counter() - t0)))
        print(f"one worker, {per_condition_limit} pairs per condition (no video), wall clock:")
        for task_id, rate in per_condition:
            print(f"  {task_id:30s} {rate:7.1f} episodes/s")

        t0, cpu0, main0 = time.perf_counter(), sampler.cpu_seconds(), time.process_time()
        load0 = loadavg()
        full = build_spec(spec, root / "full", workers=args.workers, limit=args.limit)
        wall = time.perf_counter() - t0
        time.sleep(0.6)  # one more sample of the workers' CPU time
        cpu = sampler.cpu_seconds() - cpu0 + time.process_time() - main0
        units = sum(n if args.limit is None else min(n, args.limit) for _, n in spec.units)
        print(f"bib-eval without video, {args.workers} workers: {full.episodes} episodes ({units} pairs) in {wall:.1f} s "
              f"= {full.episodes / wall:.0f} episodes/s (target <= 60 s for the full spec); CPU time of the main "
              f"and worker processes {cpu:.1f} s ({cpu / args.workers:.1f} s per worker); load average {load0} "
              f"before, {loadavg()} after")

        eval_wall, eval_cpu = wall, cpu
        t0, cpu0, main0 = time.perf_counter(), sampler.cpu_seconds(), time.process_time()
        load0 = loadavg()
        full_ctrl = build_spec(ctrl, root / "ctrl", workers=args.workers, limit=args.limit)
        wall = time.perf_counter() - t0
        time.sleep(0.6)
        cpu = sampler.cpu_seconds() - cpu0 + time.process_time() - main0
        print(f"bib-ctrl without video, {args.workers} workers: {full_ctrl.episodes} episodes in {wall:.1f} s; CPU "
              f"{cpu:.1f} s; load average {load0} before, {loadavg()} after")
        print(f"bib-ctrl / bib-eval: wall x{wall / eval_wall:.2f}, CPU x{cpu / eval_cpu:.2f} (target <= 1.5, issue 26)")

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
