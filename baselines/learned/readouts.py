"""Pairwise accuracy of learned observers under several readouts of the same per-step surprise (issue 31 item 2).

    python baselines/learned/readouts.py SET NAME=SCOREDIR [NAME=SCOREDIR ...] [--json OUT.json]

SET is an episode set (folder or manifest.csv), each SCOREDIR a `bib score` folder (results.csv and
results.steps.parquet). Scores of one model trained with several seeds are named ``model/sN``; the table
gives each model's mean and standard deviation over its seeds. The readouts, all from the same arrays:

- ``max``: the max over the test trial's steps (BIB's, `bib evaluate`'s default);
- ``mean``: the mean over steps (`bib evaluate --readout mean`);
- ``prefix-max``: the max over the first k steps of both trials of a pair, k the shorter trial's length
  (a longer trial cannot win by having more steps to take a max over);
- ``no-last``: the max over all steps but the last (the step that arrives at the goal: BIB's action code
  dropped each trial's last 83 frames);
- ``last``: the last step alone.

It also prints, per condition, how often the max sits on the last step, for each outcome, and (from the
first model's arrays, one value per test step) how often the expected test trial is longer than, as long
as or shorter than its pair's unexpected one.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from bib.evaluation import find_episodes, order_conditions, pair_score, pair_up, read_steps, results_file, steps_path

READOUTS = ("max", "mean", "prefix-max", "no-last", "last")


def _one(values: np.ndarray, how: str, k: int) -> float:
    if values.size == 0:
        return 0.0
    if how == "max":
        return float(values.max())
    if how == "mean":
        return float(values.mean())
    if how == "prefix-max":
        return float(values[:k].max())
    if how == "no-last":
        return float(values[:-1].max()) if values.size > 1 else float(values[0])
    return float(values[-1])


def accuracies(pairs: dict[str, list[tuple[str, str]]], steps: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """``{readout: {condition: accuracy}}`` plus ``at-last-expected`` / ``at-last-unexpected`` shares."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for cond, items in pairs.items():
        scores = defaultdict(list)
        for e, u in items:
            se, su = steps[e], steps[u]
            k = max(1, min(se.size, su.size))
            for how in READOUTS:
                scores[how].append(pair_score(_one(se, how, k), _one(su, how, k)))
            scores["at-last-expected"].append(float(se.size > 0 and se.argmax() == se.size - 1))
            scores["at-last-unexpected"].append(float(su.size > 0 and su.argmax() == su.size - 1))
        for how, vals in scores.items():
            out[how][cond] = float(np.mean(vals))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set")
    ap.add_argument("scores", nargs="+", help="NAME=SCOREDIR (NAME model/sN for seeds)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    found = find_episodes(args.set)
    pairs = pair_up(found.refs)
    results: dict[str, dict[str, dict[str, float]]] = {}
    for item in args.scores:
        name, folder = item.split("=", 1)
        results[name] = accuracies(pairs, read_steps(steps_path(results_file(folder))))
    first = read_steps(steps_path(results_file(args.scores[0].split("=", 1)[1])))
    print("### test-trial steps (expected vs unexpected, per pair)\n")
    print("| condition | pairs | expected steps | unexpected steps | expected longer % | equal % | unexpected longer % |")
    print("|---|---|---|---|---|---|---|")
    for c in order_conditions(pairs):
        le = np.array([first[e].size for e, _ in pairs[c]])
        lu = np.array([first[u].size for _, u in pairs[c]])
        print(f"| {c} | {le.size} | {le.mean():.2f} | {lu.mean():.2f} | {100 * np.mean(le > lu):.1f} | "
              f"{100 * np.mean(le == lu):.1f} | {100 * np.mean(le < lu):.1f} |")
    print()
    models = defaultdict(list)
    for name in results:
        models[name.split("/")[0]].append(name)
    conds = order_conditions(pairs)
    print(f"{sum(len(v) for v in pairs.values())} pairs of {args.set}; accuracy %, mean +- sd over seeds (n seeds)\n")
    for model, names in models.items():
        print(f"### {model} ({len(names)} seed{'s' if len(names) > 1 else ''}: {', '.join(names)})\n")
        cols = [*READOUTS, "at-last-expected", "at-last-unexpected"]
        print("| condition | " + " | ".join(cols) + " |")
        print("|---" * (len(cols) + 1) + "|")
        for c in conds:
            cells = []
            for how in cols:
                vals = np.array([results[n][how][c] for n in names]) * 100
                cells.append(f"{vals.mean():.1f}" + (f" +- {vals.std(ddof=1):.1f}" if len(vals) > 1 else ""))
            print(f"| {c} | " + " | ".join(cells) + " |")
        print()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
