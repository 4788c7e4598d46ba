"""Agency speed: the navigation suite (5 sizes x 6 densities x 10 grids x 10 rollouts) for the policy network.

Run: .venv/bin/python benchmarks/agency.py [--grids 10] [--rollouts 10] [--workers 2] [--smoke]

Prints, for the policy network (batched lockstep rollouts, shipped checkpoint) and for the named
in-process reference, the planner agent ``optimal`` (same grids, same rollouts, same metrics):
wall time, rollouts/s, steps/s and the ratio; once with every metric (MEG included) and once
without MEG. Target: the policy-network suite under 60 s on 2 cores. Peak memory via ru_maxrss
(this process; worker processes report their own).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

from bib.agency.agents import AgentSpec
from bib.agency.suite import run_suite


def measure(spec: AgentSpec, grids: int, rollouts: int, workers: int, meg: bool) -> tuple[float, int, int]:
    """``(seconds, rollouts, steps)`` of one navigation suite run."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_suite("navigation", spec, tmp, grids=grids, rollouts=rollouts, workers=workers, meg=meg)
        dt = time.perf_counter() - t0
        meta = json.loads((Path(tmp) / "run.json").read_text())
    return dt, meta["rollouts"], meta["steps"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", type=int, default=10, help="grids per size x density cell")
    parser.add_argument("--rollouts", type=int, default=10, help="rollouts per grid")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (1 grid, 1 rollout, 1 worker): CI's check that the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.grids, args.rollouts, args.workers = 1, 1, 1
    os.environ.setdefault("BIB_NO_PROGRESS", "1")
    print(f"navigation suite: 5 sizes x 6 densities x {args.grids} grids x {args.rollouts} rollouts, "
          f"{args.workers} workers, {os.cpu_count()} CPUs")
    print(f"{'agent':12s} {'metrics':10s} {'seconds':>8s} {'rollouts/s':>11s} {'steps/s':>9s} {'steps':>7s}")
    results = {}
    for meg in (True, False):
        for spec in (AgentSpec("policy-net"), AgentSpec("optimal")):
            dt, n, steps = measure(spec, args.grids, args.rollouts, args.workers, meg)
            results[(spec.name, meg)] = dt
            label = "all" if meg else "no MEG"
            print(f"{spec.name:12s} {label:10s} {dt:8.2f} {n / dt:11.1f} {steps / dt:9.0f} {steps:7d}")
    for meg in (True, False):
        ratio = results[("policy-net", meg)] / results[("optimal", meg)]
        print(f"policy-net / optimal time ({'all metrics' if meg else 'no MEG'}): {ratio:.2f}x")
    verdict = "meets" if results[("policy-net", True)] < 60 else "MISSES"
    print(f"target: policy-net suite under 60 s -> {results[('policy-net', True)]:.1f} s ({verdict})")
    print(f"peak memory (this process): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
