"""Table 1 task by task: run the tasks of ``bib reflect table`` into a resumable JSON-lines log, or tabulate it.

Each task is what ``bib reflect table`` runs per (agent, length, seed): the agent and then its
reality check on the 50 environments, sharing the memo (``bib.reflection.harness.run_task``), so
the numbers are the same; the log adds the task's CPU and wall seconds and the load average, and a
run that is stopped keeps every finished task.

    .venv/bin/python benchmarks/reflection_tasks.py run LOG --agents a2c,dqn,ppo --seeds 10 --workers 2
    .venv/bin/python benchmarks/reflection_tasks.py table LOG   # rows over the seeds finished so far (LOG may be .gz)
    .venv/bin/python benchmarks/reflection_tasks.py --smoke     # random agent, 500 steps, 1 seed: seconds
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict


def work(job: tuple[str, int, int]) -> dict:
    """One task, timed."""
    from bib.reflection.harness import Task, run_task

    agent, steps, seed = job
    cpu, wall = time.process_time(), time.perf_counter()
    out = run_task(Task(agent, seed, steps, plain=True, reality_check=True))
    return {"agent": agent, "steps": steps, "seed": seed, "cpu_s": time.process_time() - cpu,
            "wall_s": time.perf_counter() - wall, "load": os.getloadavg()[0],
            "cells": {k: [asdict(c) for c in v] for k, v in out.items()}}


def run(args: argparse.Namespace) -> None:
    done = set()
    if os.path.exists(args.log):
        with open(args.log) as f:
            done = {(r["agent"], r["steps"], r["seed"]) for r in map(json.loads, f)}
    jobs = [(a, n, s) for s in range(args.seed, args.seed + args.seeds) for n in args.steps
            for a in args.agents.split(",") if (a, n, s) not in done]
    with ProcessPoolExecutor(args.workers) as pool, open(args.log, "a") as f:
        for future in as_completed([pool.submit(work, j) for j in jobs]):
            r = future.result()
            f.write(json.dumps(r) + "\n")
            f.flush()
            print(r["agent"], r["steps"], r["seed"], f"cpu {r['cpu_s']:.1f} s, wall {r['wall_s']:.1f} s, load {r['load']:.1f}",
                  flush=True)


def table(args: argparse.Namespace) -> None:
    from bib.reflection.harness import PUBLISHED, PUBLISHED_SE_PAPER, Cell, format_table, summarise

    with (gzip.open(args.log, "rt") if args.log.endswith(".gz") else open(args.log)) as f:
        records = [json.loads(line) for line in f]
    rows, cpu = [], []
    for agent in dict.fromkeys(r["agent"] for r in records):
        for steps in sorted({r["steps"] for r in records if r["agent"] == agent}):
            runs = sorted((r for r in records if r["agent"] == agent and r["steps"] == steps), key=lambda r: r["seed"])
            for key in ("plain", "rc"):
                rows.append(summarise(agent, key == "rc", steps, [[Cell(**c) for c in r["cells"][key]] for r in runs]))
            seeds = [r["seed"] for r in runs]
            cpu.append(f"| {agent} | {steps} | {len(runs)} ({min(seeds)}..{max(seeds)}) | "
                       f"{statistics.fmean(r['cpu_s'] for r in runs):.1f} | "
                       f"{statistics.fmean(r['load'] for r in runs):.0f} |")
    print(format_table(rows))
    print("\n| Agent | Steps | seeds | Published SE (paper sd/n -> sd/sqrt n) | Diff / combined SE |\n|---|---|---|---|---|")
    for m in rows:
        pub, se = PUBLISHED.get((m.label, m.steps)), PUBLISHED_SE_PAPER.get((m.label, m.steps))
        if pub is None or se is None:
            continue
        theirs = se * 10 / 10**0.5
        z = (m.mean - pub) / (m.stderr**2 + theirs**2) ** 0.5
        print(f"| {m.label} | {m.steps} | {m.seeds} | {se:.4f} -> {theirs:.4f} | {z:+.2f} |")
    print("\n| agent | steps | seeds | CPU s per task (agent + RC) | load average |\n|---|---|---|---|---|")
    print("\n".join(cpu))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true",
                        help="run the random agent (500 steps, 1 seed) into a temporary log and tabulate it: CI's check")
    sub = parser.add_subparsers(dest="mode")
    r = sub.add_parser("run")
    r.add_argument("log")
    r.add_argument("--agents", default="a2c,dqn,ppo")
    r.add_argument("--steps", type=int, action="append", default=None)
    r.add_argument("--seeds", type=int, default=10)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--workers", type=int, default=2)
    t = sub.add_parser("table")
    t.add_argument("log")
    args = parser.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "log.jsonl")
            run(argparse.Namespace(log=log, agents="random", steps=[500], seeds=1, seed=0, workers=1))
            table(argparse.Namespace(log=log))
    elif args.mode == "run":
        args.steps = args.steps or [500, 1000]
        run(args)
    elif args.mode == "table":
        table(args)
    else:
        parser.error("a mode (run or table) or --smoke is required")


if __name__ == "__main__":
    main()
