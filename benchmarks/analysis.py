"""Speed of the looking-time analysis: one LMM fit vs a paired t-test, power simulation on 1 and 2 workers.

Run: .venv/bin/python benchmarks/analysis.py   (prints figures; asserts nothing)
"""

from __future__ import annotations

import os
import resource
import time

import numpy as np
from scipy import stats

os.environ.setdefault("BIB_NO_PROGRESS", "1")

from bib.analysis.analyze import analyze, task_effect  # noqa: E402
from bib.analysis.importers import read_looking_times  # noqa: E402
from bib.analysis.pilot import DEFAULT_PILOT, pilot_task  # noqa: E402
from bib.analysis.power import simulate_studies, study_frame  # noqa: E402
from bib.analysis.spec import load_spec  # noqa: E402
from bib.parallel import map_ordered  # noqa: E402

ROOT = DEFAULT_PILOT.parents[2]


def _timed(fn, repeat: int) -> float:  # noqa: ANN001
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    """Print per-call times, ratios against the named references, and peak memory."""
    pilot = pilot_task("preference")
    frame = study_frame(pilot.draw(np.random.default_rng(0), 24), "log")
    wide = frame.pivot(index="participant_id", columns="outcome", values="y")
    t_lmm = _timed(lambda: task_effect(frame, [], 0.05, "bench"), 30)
    t_ttest = _timed(lambda: stats.ttest_rel(wide["unexpected"], wide["expected"]), 300)
    print(f"LMM fit, N=24 paired (task_effect)       {t_lmm * 1e3:8.2f} ms")
    print(f"reference: scipy paired t-test, same data {t_ttest * 1e3:8.3f} ms   ratio LMM/t-test {t_lmm / t_ttest:8.0f}x")

    spec = load_spec(ROOT / "analysis" / "infant-pilot.toml")
    t_an = _timed(lambda: analyze(read_looking_times(ROOT / "data/looking_times/example.csv", spec=spec), spec), 3)
    print(f"bib analyze example.csv (500 trials, 2 tasks + pooled) {t_an * 1e3:8.1f} ms")

    start = time.perf_counter()
    list(map_ordered(abs, [1, 2], workers=2))
    print(f"pool start-up (2 forkserver workers, no work)          {time.perf_counter() - start:8.2f} s")
    sims = 150
    times = {}
    for workers in (1, 2):
        start = time.perf_counter()
        simulate_studies(pilot, [24], sims, seed=0, workers=workers)
        times[workers] = time.perf_counter() - start
        print(f"power: {sims} studies at N=24, workers={workers}     {times[workers]:8.2f} s  ({sims / times[workers]:.1f} studies/s)")
    print(f"speed-up 2 workers vs 1 (reference: workers=1, same seeds, identical results) {times[1] / times[2]:.2f}x")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (main process; forkserver workers are not its children) {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
