"""`bib demo` step for observers: score a few generated pairs of every registered condition with the inverse planner."""

from __future__ import annotations

import json
from pathlib import Path

PAIRS = 3
SEED = 2024


def run(root: Path) -> None:
    """Generate ``PAIRS`` pairs per registered evaluation condition, score them, evaluate, print the table."""
    from bib.episode import save_episode
    from bib.evaluation import evaluate, evaluation_json, find_episodes, surprise_by_episode
    from bib.io import atomic_write_text, ensure_dir
    from bib.observers.scoring import score
    from bib.tasks import REGISTRY, make_unit

    out = ensure_dir(root / "observers")
    episodes = ensure_dir(out / "episodes")
    for task in sorted(t for t, s in REGISTRY.items() if s.kind == "evaluation"):
        for i in range(PAIRS):
            for ep in make_unit(task, i, SEED):
                save_episode(ep, episodes / f"{ep.id}.json")
    summary = score("inverse-planner", episodes, out / "results.csv", progress=False)
    found = find_episodes(episodes)
    res = evaluate(found.refs, surprise_by_episode(summary.results, found, "max"))
    atomic_write_text(out / "evaluation.json", json.dumps(evaluation_json(res, "max"), indent=2) + "\n")
    print(f"inverse-planner on {summary.n_episodes} episodes ({PAIRS} pairs per condition, seed {SEED}):")
    for cond, r in res.items():
        print(f"  {cond:30s} {100 * r.accuracy:5.1f}%  ({r.n_pairs} pairs)")
    print(f"  results: {summary.results}, per-step: {summary.steps}, evaluation: {out / 'evaluation.json'}")
