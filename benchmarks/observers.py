"""Observer scoring throughput (episodes/s) on freshly generated pairs of every registered evaluation condition.

Run: .venv/bin/python benchmarks/observers.py [--pairs N] [--smoke]

Scores the same episode files (read from disk, as `bib score` does) with ``inverse-planner`` on 1
and 2 worker processes (target: >= 100 episodes/s on 2 cores), against the ``closest-object``
heuristic on the same files as the named in-process reference (it reads every episode and
computes distance fields but does no inference). Each run starts from a cold cache in a fresh
worker pool; the 1-worker runs are in this process, whose caches are cleared first.
Learned observers (issue 6 part B) are timed from :data:`LEARNED_OBSERVERS`. Peak memory via ru_maxrss.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("BIB_NO_PROGRESS", "1")

from bib.episode import save_episode  # noqa: E402
from bib.evaluation import find_episodes  # noqa: E402
from bib.observers.scoring import score_refs  # noqa: E402
from bib.tasks import REGISTRY, make_unit  # noqa: E402

LEARNED_OBSERVERS: list[tuple[str, Callable[[Path], Path]]] = []
"""Hook for part B: ``(observer name, make_checkpoint(workdir) -> checkpoint path)``; each is timed like the others."""


def make_set(root: Path, pairs: int, seed: int = 99) -> list:
    """Generate ``pairs`` pairs of every registered evaluation condition as episode files; return their refs."""
    root.mkdir(parents=True, exist_ok=True)
    for task, spec in sorted(REGISTRY.items()):
        if spec.kind != "evaluation":
            continue
        for i in range(pairs):
            for ep in make_unit(task, i, seed):
                save_episode(ep, root / f"{ep.id}.json")
    return find_episodes(root).refs


def clear_caches() -> None:
    """Forget cached graphs, distance fields, key/lock values and observers, so every timing starts cold."""
    from bib.observers import scoring
    from bib.world.keylock import clear_caches as clear_planning

    clear_planning()
    scoring._OBSERVERS.clear()


def time_observer(name: str, refs: list, workers: int, checkpoint: Path | None = None) -> tuple[float, float]:
    """Episodes per second of scoring ``refs`` (loading included) with ``workers`` processes.

    Returns:
        ``(wall-clock rate, CPU-time rate of this process)``; the second is meaningful for
        ``workers == 1`` only (it is robust to other jobs sharing the machine).
    """
    clear_caches()
    start, cpu = time.perf_counter(), time.process_time()
    n = sum(1 for _ in score_refs(name, refs, checkpoint=checkpoint, workers=workers))
    return n / (time.perf_counter() - start), n / max(time.process_time() - cpu, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40, help="pairs per condition (default 40)")
    parser.add_argument("--smoke", action="store_true", help="1 pair per condition: CI's check that the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.pairs = 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        refs = make_set(root / "set", args.pairs)
        conditions = sorted({r.condition for r in refs})
        print(f"{len(refs)} episodes ({args.pairs} pairs x {len(conditions)} conditions), "
              f"generated in {time.perf_counter() - t0:.1f} s; cpu count {os.cpu_count()}; "
              f"load average {os.getloadavg()[0]:.1f} (wall-clock rates drop when other jobs share the cores)")
        runs: list[tuple[str, Path | None]] = [("closest-object", None), ("inverse-planner", None)]
        for name, make_checkpoint in LEARNED_OBSERVERS:
            runs.append((name, make_checkpoint(root)))
        rates: dict[tuple[str, int], float] = {}
        for name, ckpt in runs:
            for workers in (1, 2):
                wall, cpu = time_observer(name, refs, workers, ckpt)
                rates[(name, workers)] = wall
                extra = f"  ({cpu:.1f} episodes per CPU-second of this process)" if workers == 1 else ""
                print(f"{name:16s} workers={workers}: {wall:8.1f} episodes/s wall-clock{extra}")
        for workers in (1, 2):
            ratio = rates[("inverse-planner", workers)] / rates[("closest-object", workers)]
            print(f"inverse-planner / closest-object (reference) at workers={workers}: {ratio:.2f}x")
        target = rates[("inverse-planner", 2)]
        print(f"inverse-planner on 2 workers: {target:.1f} episodes/s (target >= 100): {'PASS' if target >= 100 else 'FAIL'}")
    print(f"peak memory (this process): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
