"""Benchmark: one built-in agent's whole profile (every instrument, 3 seeds) and the time per instrument.

Run: ``.venv/bin/python benchmarks/profile_agent.py [AGENT ...] [--seeds 3] [--workers 2]`` (default agent:
rational; the issue's target is one built-in agent, every instrument, 3 seeds, in < 60 s on 2 cores).
Prints the load average, the wall time of each profile, the CPU seconds of each instrument summed over
the worker processes, the extended battery's policy calls (every real and counterfactual question, answered
from the per-(layout, state) cache) against the agent queries that reached the agent (uncached), the peak
RSS of this process, and, as a reference measured in the same process, one seed
of the classic integer battery (Random, 1000 steps), so ratios can be compared across machines.
"""

from __future__ import annotations

import argparse
import os
import resource
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("agents", nargs="*", default=["rational"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("BIB_NO_PROGRESS", "1")

    from bib.profile.agents import AgentSpec
    from bib.profile.instruments import INSTRUMENTS, Settings
    from bib.profile.run import run_profiles
    from bib.reflection.harness import Task, run_task

    t = time.perf_counter()
    run_task(Task("random", 0, 1000))
    reference = time.perf_counter() - t
    print(f"load average {os.getloadavg()[0]:.2f}; reference (classic battery, Random, 1 seed, 1000 steps): "
          f"{reference:.2f} s")
    settings = Settings(seeds=tuple(range(args.seeds)))
    print(f"{'agent':14s} {'wall s':>7s} {'/ref':>6s} " + " ".join(f"{k:>15s}" for k in INSTRUMENTS)
          + "   battery: steps / policy calls (cached) / agent queries (uncached)")
    for name in args.agents:
        t = time.perf_counter()
        _, results, timings = run_profiles([AgentSpec(name)], settings, workers=args.workers, progress=False)
        wall = time.perf_counter() - t
        cpu = timings["cpu_seconds"][name]
        calls = [r["calls"] for r in results[0] if r["kind"] == "self_reflection"]
        steps = sum(c["steps"] for c in calls)
        pc = sum(c["policy_calls"] or 0 for c in calls)
        aq = sum(c["agent_queries"] or 0 for c in calls)
        saved = f" ({pc / aq:.1f} calls per query)" if aq else ""
        print(f"{name:14s} {wall:7.1f} {wall / reference:6.0f} " + " ".join(f"{cpu[k]:13.1f} s" for k in INSTRUMENTS)
              + f"   {steps} / {pc} / {aq}{saved}")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; peak RSS of this process "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (the workers are the forkserver's "
          "children, not counted here) (target: < 60 s per profile)")


if __name__ == "__main__":
    main()
