"""Learned observers: scoring throughput (episodes/s) and the bc-rnn training-time estimate for the full background set.

Run: .venv/bin/python benchmarks/observers_learned.py [--pairs N] [--frame-pairs N] [--background N] [--smoke]

Scoring: the same episode files as ``benchmarks/observers.py`` (its ``make_set``: ``--pairs`` pairs
of every registered evaluation condition, read from disk as ``bib score`` does), scored through
``score_refs`` with 1 and 2 worker processes by ``bc-mlp``, ``bc-rnn`` and ``video-rnn`` at their
``baselines/*.toml`` configs (symbolic input; target >= 50 episodes/s), then with
``input = "frames"`` (84 x 84 rendered frames; ``--frame-pairs`` pairs per condition, default 40)
on 1 worker (target >= 50 episodes/s; the rate per CPU-second is what an idle core gives), then
in fresh processes as ``bib score`` runs (start-up included) on 1 and 2 workers (target >= 100 on
2 cores): the whole run's rate and, separately, a run's fixed cost and the rate after it (see
:func:`frame_rates`), the peak memory of the scoring process, and what the start-up is made of
(:func:`child_startup`: imports, checkpoint load, a pool process's first result with and without
the forkserver's preload of torch, a first chunk's one-off cost). With 2 workers, ``score_refs``
scores chunks in this process too beside one pool process. The checkpoints are untrained (weights
do not change the cost). Reference: ``closest-object`` on the same files in the same process (ratio
of CPU-time rates on 1 worker, which other jobs on the shared VM do not distort).

Training: one epoch of ``bc-rnn`` at ``baselines/bc-rnn.toml`` on ``--background`` episodes per
background task (80/20 split, validation included), timed in wall-clock and CPU seconds; the
full-set estimate scales the per-episode time to 28,000 episodes x the configured epochs.
The estimate is given both from wall-clock time at the current load and from CPU time (the training
process and the loader process run in parallel, so on 2 idle cores an epoch takes about the CPU
time of the busier one). The load average is printed because the VM is shared.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_T0 = time.perf_counter()

os.environ.setdefault("BIB_NO_PROGRESS", "1")

from bib.evaluation import find_episodes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FULL_BACKGROUND = 28_000
BIB_EVAL = 16_534
"""Episodes of stimuli/bib-eval.toml (8,267 pairs)."""


def _observers_benchmark():
    """``benchmarks/observers.py`` as a module (for ``make_set`` and ``time_observer``)."""
    spec = importlib.util.spec_from_file_location("bench_observers", ROOT / "benchmarks" / "observers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def untrained_checkpoint(name: str, out: Path, **model) -> Path:
    """An untrained checkpoint of ``name`` at its baseline config (plus ``model`` overrides)."""
    import dataclasses

    from bib.observers.learned import learned_class
    from bib.observers.training import load_config

    cfg, train = load_config(name, ROOT / "baselines" / f"{name}.toml")
    obs = learned_class(name)(dataclasses.replace(cfg, **model))
    path = out / f"{name}-{'-'.join(f'{k}{v}' for k, v in model.items()) or 'default'}.pt"
    obs.save(path, train)
    return path


def cpu_seconds() -> tuple[float, float]:
    """User + system CPU seconds of this process, and of its finished children (the loader workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def training_estimate(root: Path, per_task: int) -> None:
    """Time one bc-rnn epoch on a generated background subset and extrapolate to the full set."""
    from bib.episode import save_episode
    from bib.evaluation import find_episodes
    from bib.observers.learned import learned_class
    from bib.observers.training import load_config, run_training, split
    from bib.tasks import REGISTRY, make_unit

    bg = root / "background"
    bg.mkdir()
    tasks = sorted(t for t, s in REGISTRY.items() if s.kind == "background")
    for task in tasks:
        for i in range(per_task):
            ep = make_unit(task, i, 7)[0]
            save_episode(ep, bg / f"{ep.id}.json")
    files = [(r.id, r.path) for r in find_episodes(bg).refs]
    tr, va = split([i for i, _ in files])
    model, train = load_config("bc-rnn", ROOT / "baselines" / "bc-rnn.toml")
    train.epochs = 1
    obs = learned_class("bc-rnn")(model)
    t0, (m0, k0) = time.perf_counter(), cpu_seconds()
    report = run_training(obs, [files[i][1] for i in tr], [files[i][1] for i in va], train, log=lambda _: None)
    wall = time.perf_counter() - t0
    m1, k1 = cpu_seconds()
    main_cpu, loader_cpu = m1 - m0, k1 - k0
    n = len(files)
    passes = 1.2 * n  # untrained validation (0.2 n) + one epoch: training (0.8 n) and validation (0.2 n)
    print(f"bc-rnn training: {len(tr)} train + {len(va)} validation episodes ({', '.join(tasks)}), "
          f"one epoch {report.history[1]['seconds']:.1f} s wall; whole run {wall:.1f} s wall, "
          f"CPU {main_cpu:.1f} s training process + {loader_cpu:.1f} s loader process")
    epochs = load_config("bc-rnn", ROOT / "baselines" / "bc-rnn.toml")[1].epochs
    full = FULL_BACKGROUND * (epochs + 0.2)
    wall_est = report.history[1]["seconds"] / n * full  # an epoch = training + validation = n episodes
    idle_est = max(main_cpu, loader_cpu) / passes * full
    print(f"estimate for the full {FULL_BACKGROUND} episodes x {epochs} epochs (baselines/bc-rnn.toml): "
          f"{wall_est / 60:.0f} min wall at this load; {idle_est / 60:.0f} min on 2 idle cores "
          f"(the busier of the two processes' CPU time); target < 60 min: "
          f"{'PASS' if idle_est < 3600 else 'FAIL'} idle, {'PASS' if wall_est < 3600 else 'FAIL'} at this load")


def child(*args: object) -> dict:
    """Run this file with ``args`` in a fresh Python process (as ``bib score`` starts); its JSON output."""
    out = subprocess.run([sys.executable, __file__, *map(str, args)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def child_run(name: str, ckpt: str, folder: str, n: int, workers: int) -> None:
    """``--child-run``: score the first ``n`` episodes of ``folder`` in this fresh process, as ``bib score``
    does (torch imported, checkpoint loaded, pool started, all inside the timing). Prints JSON: seconds
    from this process's start, and its peak memory (MiB)."""
    from bib.observers.scoring import score_refs

    refs = find_episodes(folder).refs[:n]
    for _ in score_refs(name, refs, checkpoint=ckpt, workers=workers):
        pass
    print(json.dumps({"seconds": time.perf_counter() - _T0,
                      "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def _pid(_: object) -> int:
    return os.getpid()


def child_startup(name: str, ckpt: str, folder: str, preload: str) -> None:
    """``--child-startup``: what a 2-worker run's start-up is made of, in a fresh process started as
    ``score_refs`` starts: the forkserver first (with the observer's modules preloaded, or none when
    ``preload`` is ``none``: the start-up before issue 19's change), then this process's torch import
    and checkpoint load, a pool process's start (fork, checkpoint load: the time from creating the
    pool to its first result) and the one-off cost of a process's first chunk (first minus second
    scoring of the same chunk). Prints JSON."""
    import functools

    from bib.parallel import map_ordered, start_forkserver

    t0 = time.perf_counter()
    from bib.observers import scoring

    modules = scoring.worker_modules(name)
    start_forkserver(modules if preload != "none" else [])
    t1 = time.perf_counter()
    for module in modules:
        importlib.import_module(module)
    t2 = time.perf_counter()
    scoring._cached_observer(name, ckpt, {}, "cpu")
    t3 = time.perf_counter()
    setup = functools.partial(scoring._cached_observer, name, ckpt, {}, "cpu")
    list(map_ordered(_pid, [0], workers=2, setup=setup, preload=modules))
    t4 = time.perf_counter()
    refs = find_episodes(folder).refs[: scoring.CHUNK]
    item = (name, ckpt, {}, "cpu", [(r.id, str(r.path)) for r in refs])  # _score_chunk's fields (device: the CPU)
    times = []
    for _ in range(2):
        t = time.perf_counter()
        scoring._score_chunk(item)
        times.append(time.perf_counter() - t)
    print(json.dumps({"imports": t2 - t1 + (t1 - t0), "checkpoint": t3 - t2, "pool": t4 - t3,
                      "warmup": times[0] - times[1], "chunk": times[1]}))


def render_ratio(refs: list, repeats: int = 3) -> None:
    """CPU time per episode of the frame states (84 x 84, cell 8) of ``refs``' distinct trials, as frame
    scoring renders them (:func:`bib.render.frames.step_pictures`) and by resizing every whole frame
    (``_step_pictures_whole``, the same bytes), alternated in this process: the ratio is what to read."""
    from bib.observers.encoders import trial_key
    from bib.render.frames import _step_pictures_whole, step_pictures
    from bib.stimuli.check import load_checked

    trials = list({trial_key(t): t for r in refs for t in load_checked(r.path).trials}.values())
    best = {}
    for _ in range(repeats):
        for fn in (step_pictures, _step_pictures_whole):
            t0 = time.process_time()
            for t in trials:
                fn(t, 8, 84)
            best[fn] = min(best.get(fn, float("inf")), (time.process_time() - t0) / len(refs) * 1e3)
    print(f"frame states (step_pictures): {best[step_pictures]:.2f} ms CPU per episode, whole frames resized "
          f"{best[_step_pictures_whole]:.2f} ms: {best[_step_pictures_whole] / best[step_pictures]:.2f}x")


def frame_rates(name: str, folder: Path, n: int, ckpt: Path, reference_cpu: float, bench) -> None:
    """Frame-input scoring of the first ``n`` episodes of ``folder`` by ``name``: 1 worker in this
    process (CPU rate: what an idle core gives), then in fresh processes as ``bib score`` runs
    (:func:`child_run`): 1 worker on all ``n``, 2 workers on all ``n`` and on their first 4 chunks;
    and what the start-up is made of (:func:`child_startup`).

    A run pays once a fixed cost: its own torch import and checkpoint load and, with 2 workers, the
    pool process's start (since issue 19 a fork from the forkserver, which imported torch while this
    process imported its own, then a checkpoint load) and first chunk's one-off costs; this process
    scores meanwhile. So the 2-worker rate is printed for the whole run and as the line
    ``T(N) = fixed + N / rate`` through the two runs, with the projected time of bib-eval.
    """
    from bib.observers.scoring import CHUNK

    refs = find_episodes(folder).refs[:n]
    wall1, cpu1 = bench.time_observer(name, refs, 1, ckpt)
    label = f"{name + ' (frames 84x84)':28s}"
    print(f"{label} workers=1: {wall1:8.1f} episodes/s wall, {cpu1:7.1f} per CPU-second "
          f"({cpu1 / reference_cpu:.2f}x reference; target >= 50: {'PASS' if cpu1 >= 50 else 'FAIL'} on an idle core)")
    wall2_here, _ = bench.time_observer(name, refs, 2, ckpt)
    print(f"{label} workers=2: {wall2_here:8.1f} episodes/s wall in this process (torch imported already, its "
          f"pool process imports it while this process scores; the method of the figures before session 4)")
    one = child("--child-run", name, ckpt, folder, n, 1)
    small = child("--child-run", name, ckpt, folder, 4 * CHUNK, 2)
    full = child("--child-run", name, ckpt, folder, n, 2)
    t_small, t_full = small["seconds"], full["seconds"]
    wall2 = n / t_full
    print(f"{label} as `bib score` runs (a fresh process, its start-up included): {n} episodes in {one['seconds']:.1f} s "
          f"on 1 worker, {t_full:.1f} s on 2 (x{one['seconds'] / t_full:.2f}); peak memory {one['peak_mib']:.0f} / "
          f"{full['peak_mib']:.0f} MiB (the scoring process)")
    whole = (f"{label} workers=2: {wall2:8.1f} episodes/s wall over the {n}-episode run, start-up included "
             f"(target >= 100: {'PASS' if wall2 >= 100 else 'FAIL'})")
    if t_full - t_small < 0.25 * t_full:  # the longer run barely longer: timings too noisy (load) for a line
        print(f"{whole}; the {4 * CHUNK}- and {n}-episode runs took {t_small:.1f} and {t_full:.1f} s: "
              f"too close for a fixed cost and a rate (machine busy?)")
    else:
        steady = (n - 4 * CHUNK) / (t_full - t_small)
        startup = max(t_small - 4 * CHUNK / steady, 0.0)
        eval_min = (startup + BIB_EVAL / steady) / 60
        print(f"{whole}; fixed cost of a run {startup:.1f} s, then {steady:.1f} episodes/s "
              f"(target >= 100: {'PASS' if steady >= 100 else 'FAIL'}); bib-eval's {BIB_EVAL:,} episodes projected {eval_min:.1f} min")
    now, old = (child("--child-startup", name, ckpt, folder, p) for p in ("observer", "none"))
    print(f"{label} start-up: imports (torch, bib) {now['imports']:.2f} s, checkpoint load {now['checkpoint']:.2f} s "
          f"(the scoring process, before any work); a pool process's first result {now['pool']:.2f} s after the pool "
          f"is created ({old['pool']:.2f} s when the forkserver has not preloaded torch); a process's first chunk "
          f"{now['warmup']:.2f} s longer than the next ({now['chunk']:.2f} s)")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("--child-run", "--child-startup"):
        kind, name, ckpt, folder, extra = sys.argv[1:6]
        if kind == "--child-run":
            child_run(name, ckpt, folder, int(extra), int(sys.argv[6]))
        else:
            child_startup(name, ckpt, folder, extra)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20, help="pairs per evaluation condition (default 20)")
    parser.add_argument("--frame-pairs", type=int, default=40,
                        help="pairs per evaluation condition for frame input (default 40)")
    parser.add_argument("--background", type=int, default=150, help="episodes per background task for the epoch timing (default 150)")
    parser.add_argument("--smoke", action="store_true",
                        help="1 pair per condition, 2 background episodes per task: CI's check that the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.pairs, args.frame_pairs, args.background = 1, 1, 2
    bench = _observers_benchmark()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        refs = bench.make_set(root / "set", args.pairs)
        print(f"{len(refs)} evaluation episodes ({args.pairs} pairs per condition)")
        ref = {w: bench.time_observer("closest-object", refs, w) for w in (1, 2)}
        for w in (1, 2):
            print(f"{'closest-object':28s} workers={w}: {ref[w][0]:8.1f} episodes/s wall"
                  + (f", {ref[w][1]:7.1f} per CPU-second" if w == 1 else "") + " (reference)")
        for name in ("bc-mlp", "bc-rnn", "video-rnn"):
            ckpt = untrained_checkpoint(name, root)
            for w in (1, 2):
                wall, cpu = bench.time_observer(name, refs, w, ckpt)
                verdict = "PASS" if wall >= 50 else "FAIL"
                extra = f", {cpu:7.1f} per CPU-second ({cpu / ref[1][1]:.2f}x reference)" if w == 1 else ""
                print(f"{name + ' (symbolic)':28s} workers={w}: {wall:8.1f} episodes/s wall{extra} "
                      f"(target >= 50: {verdict})")
        frames = root / "set" if args.frame_pairs == args.pairs else root / "frames"
        frame_refs = refs if args.frame_pairs == args.pairs else bench.make_set(frames, args.frame_pairs)
        print(f"{len(frame_refs)} evaluation episodes for frame input ({args.frame_pairs} pairs per condition)")
        render_ratio(frame_refs)
        for name in ("bc-mlp", "bc-rnn", "video-rnn"):
            ckpt = untrained_checkpoint(name, root, input="frames")
            frame_rates(name, frames, len(frame_refs), ckpt, ref[1][1], bench)
        training_estimate(root, args.background)
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}; "
          f"peak memory (this process, where the 1-worker runs score): "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
