"""Where the inverse planner errs on bib-ctrl's instrumental no-barrier and inconsequential pairs (issue 26).

Usage: python baselines/ctrl/instrumental_twins.py SET RESULTS [--alpha A ...] [--out JSON]
SET is bib-ctrl, RESULTS the planner's ``bib score`` folder (or its results.csv). Per condition and group
(``via-key`` pairs, their key-collector twins, BIB's "moves to the key" pairs and their key-goal twins) it
prints the accuracy, and for the collector twins:

- the accuracy split by whether the collector's (expected) test walk is optimal for fetching the key and
  going on to the object, with the mean number of its steps and of the direct (unexpected) walk's;
- what the planner predicts after the collector's familiarization: the posterior-predictive probability
  that the agent wants the object itself rather than "the object with the key", and the largest surprise
  of the direct walk, which that probability caps (a move the plain-object goal explains well costs at
  most about ``-log P(object)``);
- with ``--alpha``: the accuracy on the collector twins of the planner with that Dirichlet pseudo-count
  (scored here on those pairs only; the default is 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from bib.evaluation import find_episodes, pair_score, read_results, results_file
from bib.observers.goal_values import layout_goal_values
from bib.observers.inverse_planning import KEY, VIA_KEY, InversePlanner
from bib.stimuli.check import load_checked
from bib.world.dynamics import AgentState, adjacent_to_lock
from bib.world.keylock import optimal_cost
from bib.world.planning import path_cost

CONDITIONS = ("instrumental-no-barrier", "instrumental-inconsequential")
GROUPS = {"via-key": "via-key", "via-key+twin": "via-key collector twins", "": "BIB (moves to the key)",
          "twin": "BIB key-goal twins"}


def via_key_excess(trial) -> float:
    """The excess cost of a walk that fetches the key and goes on to object A, over the best such walk."""
    lay = trial.layout
    held = AgentState(lay.key, True, adjacent_to_lock(lay, lay.key))
    best = optimal_cost(lay, lay.key) + optimal_cost(lay, lay.object("A").cell, held)
    return float(path_cost(trial.path) - best)


def object_probability(planner: InversePlanner, episode) -> float:
    """The planner's posterior-predictive probability, after the familiarization, that the agent wants the
    test object itself (not "with the key", not the key)."""
    fam = episode.familiarization
    belief = planner.belief_of(planner.familiarize(fam, layout_goal_values([t.layout for t in fam])), episode.test)
    obj = next(o for o in episode.test.layout.objects)
    goals = [(obj.shape, obj.color), KEY, (VIA_KEY + obj.shape, obj.color)]
    return float(planner.goal_prior(belief, goals)[0])


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("--alpha", type=float, action="append", default=[])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    found = find_episodes(args.set)
    surprise = read_results(results_file(args.results), found)
    pairs: dict[tuple[str, str], dict[str, dict[str, object]]] = defaultdict(dict)
    for r in found.refs:
        if r.condition in CONDITIONS and r.pair_id:
            pairs[(r.condition, r.variant or "")].setdefault(r.pair_id, {})[r.outcome] = r
    report: dict[str, object] = {}
    planner = InversePlanner()
    others = {a: InversePlanner(alpha=a) for a in args.alpha}
    for cond in CONDITIONS:
        for variant, label in GROUPS.items():
            group = pairs.get((cond, variant), {})
            scores = [pair_score(surprise[p["expected"].id], surprise[p["unexpected"].id]) for p in group.values()]
            entry: dict[str, object] = {"pairs": len(scores), "accuracy": round(100 * float(np.mean(scores)), 1)}
            if variant == "via-key+twin":
                rows = []
                for p in group.values():
                    e, u = load_checked(p["expected"].path), load_checked(p["unexpected"].path)
                    row = {"score": pair_score(surprise[p["expected"].id], surprise[p["unexpected"].id]),
                           "optimal": via_key_excess(e.test) < 1e-9, "steps_e": e.test.n_steps, "steps_u": u.test.n_steps,
                           "p_object": object_probability(planner, e), "surprise_u": surprise[p["unexpected"].id]}
                    for a, other in others.items():
                        row[f"alpha {a}"] = pair_score(float(other.surprise(e).max()), float(other.surprise(u).max()))
                    rows.append(row)
                opt = [r for r in rows if r["optimal"]]
                noisy = [r for r in rows if not r["optimal"]]
                entry.update({
                    "collector walk optimal": {"pairs": len(opt), "accuracy": round(100 * np.mean([r["score"] for r in opt]), 1)},
                    "collector walk noisy": {"pairs": len(noisy), "accuracy": round(100 * np.mean([r["score"] for r in noisy]), 1)},
                    "steps expected / unexpected": [round(float(np.mean([r["steps_e"] for r in rows])), 1),
                                                    round(float(np.mean([r["steps_u"] for r in rows])), 1)],
                    "P(object) mean": round(float(np.mean([r["p_object"] for r in rows])), 3),
                    "-log P(object) mean": round(float(np.mean([-np.log(r["p_object"]) for r in rows])), 2),
                    "direct walk's surprise, median / 90th percentile": [
                        round(float(np.median([r["surprise_u"] for r in rows])), 2),
                        round(float(np.percentile([r["surprise_u"] for r in rows], 90)), 2)],
                    **{f"accuracy with alpha={a}": round(100 * float(np.mean([r[f"alpha {a}"] for r in rows])), 1)
                       for a in args.alpha},
                })
            report[f"{cond} / {label}"] = entry
            print(f"{cond} / {label}: {json.dumps(entry)}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
