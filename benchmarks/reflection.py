"""Benchmark: time per Table 1 row (both lengths, 10 seeds) and steps/s, against the V1 timings.

Run: ``.venv/bin/python benchmarks/reflection.py [--seeds 10] [--workers 2] [--agents a2c,dqn,ppo] [--smoke]``.
The reference is the first library version's measured time for one seed over the 50 environments
(the issue's figures, pure Python, quadratic/cubic); ours is measured here in the same process.
With ``--agents a2c,dqn,ppo`` it times the Stable-Baselines3 rows (target: the whole table, both
lengths and 10 seeds, in 30 minutes on 2 workers), printing CPU seconds beside wall seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from bib.reflection.harness import Task, run_task

# V1 seconds for one seed over the 50 environments (shared/reference/extended_environments.md section 5).
V1_SECONDS = {
    ("random", False, 500): 1.9, ("random", False, 1000): 6.1,
    ("random", True, 500): 34.0, ("random", True, 1000): 299.0,
    ("constant", True, 500): 18.0, ("constant", True, 1000): 152.0,
    ("naive-learner", False, 500): 6.7, ("naive-learner", False, 1000): 46.0,
    ("naive-learner", True, 500): 37.0, ("naive-learner", True, 1000): 315.0,
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--agents", default="random,constant,naive-learner")
    parser.add_argument("--smoke", action="store_true",
                        help="the random agent, 500 steps, 1 seed, 1 worker: CI's check that the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.agents, args.seeds, args.workers = "random", 1, 1
    agents = args.agents.split(",")
    lengths = (500,) if args.smoke else (500, 1000)
    target = 1800 if set(agents) & {"a2c", "dqn", "ppo"} else 60

    print("per row, one process, one seed (seed 0), 50 environments:")
    print(f"{'row':22s} {'steps':>5s} {'seconds':>8s} {'cpu s':>8s} {'env-steps/s':>12s} {'V1 s':>6s} {'speed-up':>8s}")
    for agent in agents:
        for rc in (False, True):
            for steps in lengths:
                t, c = time.perf_counter(), time.process_time()
                run_task(Task(agent, 0, steps, plain=not rc, reality_check=rc))
                dt, cpu = time.perf_counter() - t, time.process_time() - c
                v1 = V1_SECONDS.get((agent, rc, steps))
                ratio = f"{v1 / dt:7.0f}x" if v1 else "       -"
                label = agent + ("+RC" if rc else "")
                v1s = f"{v1:6.1f}" if v1 else "     -"
                print(f"{label:22s} {steps:5d} {dt:8.2f} {cpu:8.2f} {50 * steps / dt:12.0f} {v1s} {ratio}")

    from bib.reflection.harness import table

    t = time.perf_counter()
    table(agents=agents, seeds=args.seeds, workers=args.workers, progress=False)
    dt = time.perf_counter() - t
    total_steps = len(agents) * 2 * 50 * (500 + 1000) * args.seeds
    print(
        f"whole table ({2 * len(agents)} rows x 2 lengths x {args.seeds} seeds, {args.workers} workers): {dt:.1f} s, "
        f"{total_steps / dt:.0f} env-steps/s (target < {target} s); load average {os.getloadavg()[0]:.1f}"
    )
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
