"""Peak memory of `bib generate` against the number of units (issue 17 item 4: flat in n).

Each size runs in a fresh process and reports its peak resident set (ru_maxrss). By default the
unit builder is a stub that returns a unit's manifest rows without generating or writing episodes,
so the run measures what grows with n: the job list, the manifest bookkeeping and the resume index.
``--real`` runs the real generator instead (slow: about 5 ms of CPU per unit).

    python benchmarks/memory.py                       # n = 2,000 and 200,000, stub builder
    python benchmarks/memory.py --n 2000 --n 20000 --real --workers 2
    python benchmarks/memory.py --smoke                # n = 200 and 2,000: seconds
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import resource, sys, time
import bib.stimuli.build as b
from bib.tasks import unit_id

def stub(job):
    uid = unit_id(job.task, job.index)
    return [{"episode_id": uid, "pair_id": "", "task": job.task, "condition": job.task, "outcome": "none",
             "seed": job.index, "n_trials": 9, "n_steps": 30, "episode_path": f"episodes/{uid}.json",
             "video_path": "", "sha256": "0" * 64, "variant": "", "twin_id": "", "difficulty": "", "beta": ""}]

n, out, real, workers = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
if not real:
    b.build_unit = stub
t = time.perf_counter()
s = b.build([("single-object", n)], 0, out, workers=workers)
assert s.episodes == n
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, time.perf_counter() - t)
"""


def peak_mib(n: int, real: bool = False, workers: int = 1) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of building ``n`` single-object units in a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, BIB_NO_PROGRESS="1")
        proc = subprocess.run([sys.executable, "-c", CHILD, str(n), os.path.join(tmp, "set"), "1" if real else "0",
                               str(workers)], capture_output=True, text=True, env=env, check=True)
    rss, secs = proc.stdout.split()
    return float(rss), float(secs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, action="append", help="units (repeatable; default 2000 and 200000)")
    ap.add_argument("--real", action="store_true", help="run the real generator, not the stub")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--smoke", action="store_true", help="n = 200 and 2,000 (stub builder): CI's check that the script runs")
    args = ap.parse_args()
    sizes = args.n or ([200, 2000] if args.smoke else [2000, 200000])
    print(f"load average {os.getloadavg()[0]:.1f}; {'real generator' if args.real else 'stub builder'}, "
          f"{args.workers} worker(s)")
    first = None
    for n in sizes:
        mib, secs = peak_mib(n, args.real, args.workers)
        first = first or mib
        print(f"n = {n:>8,}: peak RSS {mib:7.1f} MiB ({mib / first - 1:+.1%} vs n = {sizes[0]:,}), {secs:.1f} s")


if __name__ == "__main__":
    main()
