"""`bib demo` step for observers: score a few generated pairs of every registered condition with the inverse planner."""

from __future__ import annotations

import json
import shutil
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


def run_blind(root: Path) -> None:
    """The organiser's protocol on a small set: ``bib generate bib-ctrl --secret-seed --limit 1``, ``bib blind``,
    the kit scored as a submitter would (inverse planner) and ``bib evaluate KEY RESULTS``."""
    from bib.evaluation import evaluate, overall, surprise_by_episode
    from bib.observers.scoring import score
    from bib.stimuli.build import build_spec, generate_job
    from bib.stimuli.kit import make_kit, read_key
    from bib.stimuli.origin import secret_note, with_secret_seed
    from bib.stimuli.spec import load_spec

    out = root / "blind"
    spec, resumed = with_secret_seed(load_spec("bib-ctrl"), out / "set")
    with generate_job(spec, out / "set", secret=True):
        build_spec(spec, out / "set", limit=1)
    print(secret_note(out / "set", resumed))
    for stale in (out / "kit", out / "entry"):
        shutil.rmtree(stale, ignore_errors=True)  # a rerun: a kit goes into a new folder
    kit = make_kit(out / "set", out / "kit", out / "key.csv", force=True, progress=False)
    summary = score("inverse-planner", out / "kit", out / "entry" / "results.csv", progress=False)
    keyed, _ = read_key(out / "key.csv")
    mean = overall(evaluate(keyed.refs, surprise_by_episode(summary.results, keyed, "max")))["mean"]
    print(f"kit {kit.fingerprint}: {sum(kit.conditions.values())} blind episodes in {kit.kit}, key {kit.key}")
    print(f"inverse-planner on the kit, against the key (bib evaluate KEY RESULTS): mean of conditions {100 * (mean or 0):.1f}%")
