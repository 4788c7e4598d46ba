"""Benchmark: one built-in agent's whole profile (every instrument, 3 seeds) and the time per instrument.

Run: ``.venv/bin/python benchmarks/profile_agent.py [AGENT ...] [--seeds 3] [--workers 2] [--smoke]`` (default agent:
rational; the issue's target is one built-in agent, every instrument, 3 seeds, in < 60 s on 2 cores).
Prints the load average, the wall time of each profile, the CPU seconds of each instrument summed over
the worker processes, the extended battery's policy calls (every real and counterfactual question, answered
from the per-(layout, state) cache) against the agent queries that reached the agent (uncached), the peak
RSS of this process, and, as a reference measured in the same process, one seed
of the classic integer battery (Random, 1000 steps), so ratios can be compared across machines.

``--user [--against REF] [--seed N]``: the speed-up of ``bib profile`` for a wandering user agent
(``profile_agents:Wanderer`` from tests/: a random legal move, never staying, so every BIB trial
runs to the move limit) on one seed, every instrument, one worker: this tree against commit REF
(default 49dee63, main just before MEG's trajectory passes), each in a fresh child process that imports
its own tree (REF extracted with ``git archive``), alternated ``--rounds`` times. Prints each
run's CPU seconds (the child's user + system time: every thread, forkserver children none with
one worker) per instrument, peak RSS, the CPU-time ratio REF / this tree, and whether both
profile.json's hold the same numbers (every value of REF's: identical, or equal within
``TOLERANCE`` relative, the L-BFGS optimum of unknown-utility MEG).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WANDERER = "profile_agents:Wanderer"
REFERENCE = "49dee63"
"""main just before the speed-up (dense matrix backups, whole-array MEG passes)."""


def child(seed: int) -> None:
    """One profile of the wanderer in this process (whichever ``bib`` PYTHONPATH names), as JSON on stdout."""
    from bib.profile.agents import AgentSpec
    from bib.profile.instruments import Settings
    from bib.profile.run import run_profiles

    profiles, _, timings = run_profiles([AgentSpec(WANDERER)], Settings(seeds=(seed,)), workers=1, progress=False)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"cpu": usage.ru_utime + usage.ru_stime, "instruments": timings["cpu_seconds"][WANDERER],
                      "peak_mib": usage.ru_maxrss / 1024, "profile": profiles[0].to_json()}, sort_keys=True))


def differences(reference: object, other: object, where: str = "") -> list[str]:
    """Where ``other`` does not hold a value of ``reference`` (keys added since, such as ``bumps``, are not compared)."""
    if isinstance(reference, dict) and isinstance(other, dict):
        return [d for k, v in reference.items() for d in (differences(v, other[k], f"{where}.{k}") if k in other
                                                          else [f"{where}.{k} missing"])]
    if where.endswith(".se") and reference == 0.0 and other is None:
        return []  # a standard error over one seed: 0.0 before, null since (issue 29), not a number that changed
    return [] if reference == other else [f"{where}: {reference!r} != {other!r}"]


def run_child(tree: Path, seed: int) -> dict:
    """:func:`child` in a fresh interpreter importing ``bib`` from ``tree`` (the user agent from tests/)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT / "tests")]), "BIB_NO_PROGRESS": "1"}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--seed", str(seed)],
                         cwd=tree, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def user(against: str, seed: int, rounds: int) -> None:
    """The wanderer's profile, this tree against ``against``, alternated ``rounds`` times."""
    with tempfile.TemporaryDirectory(prefix="bib-ref-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", against], check=True, capture_output=True).stdout
        with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; wandering user agent {WANDERER}, "
              f"seed {seed}, 1 worker")
        runs: dict[str, list[dict]] = {"reference": [], "this tree": []}
        for _ in range(rounds):
            for name, tree in (("reference", Path(tmp)), ("this tree", ROOT)):
                r = run_child(tree, seed)
                runs[name].append(r)
                print(f"{name:10s} CPU {r['cpu']:7.1f} s  " + " ".join(f"{k} {v:.1f}" for k, v in r["instruments"].items())
                      + f"  peak RSS {r['peak_mib']:.0f} MiB", flush=True)
    ref = min(r["cpu"] for r in runs["reference"])
    new = min(r["cpu"] for r in runs["this tree"])
    diff = [d for rs in runs.values() for r in rs for d in differences(runs["reference"][0]["profile"], r["profile"])]
    for d in diff[:10]:
        print("differs:", d[:300])
    worst = max((relative(d) for d in diff), default=0.0)
    same = "identical" if not diff else (f"equal within {worst:.1e} relative ({len(diff)} numbers differ)"
                                         if worst <= TOLERANCE else f"NOT the same (worst {worst:.1e} relative)")
    print(f"CPU-time ratio {against} / this tree: {ref / new:.2f} (best of {rounds} each: {ref:.1f} s / {new:.1f} s; "
          f"target >= 5); profile.json: {same}; load average {os.getloadavg()[0]:.2f}")


TOLERANCE = 1e-9
"""Relative difference within which a profile number counts as the same (unknown-utility MEG is an L-BFGS optimum:
since its numpy port, bib.meg.lbfgs, it equals torch's within the solver's tolerances, not to the bit)."""


def relative(difference: str) -> float:
    """The relative difference of two numbers in a :func:`differences` line (inf when they are not numbers)."""
    try:
        a, b = (float(x) for x in difference.rsplit(": ", 1)[1].split(" != "))
    except (ValueError, IndexError):
        return float("inf")
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("agents", nargs="*", default=["rational"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--user", action="store_true", help="the wandering user agent against --against")
    parser.add_argument("--against", default=REFERENCE)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="the default agent on 1 seed, 1 worker: CI's check that the script runs")
    args = parser.parse_args()
    if args.smoke:
        args.seeds, args.workers = 1, 1
    os.environ.setdefault("BIB_NO_PROGRESS", "1")
    if args.child:
        return child(args.seed)
    if args.user:
        return user(args.against, args.seed, args.rounds)

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
    if args.smoke:  # every instrument still runs, on the fewest grids and steps
        settings = Settings(seeds=(0,), navigation_grids=1, key_grids=1, rollouts=1, classic_steps=100)
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
