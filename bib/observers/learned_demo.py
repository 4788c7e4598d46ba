"""`bib demo` step for the learned observers: train a small bc-rnn for a few seconds, then score and evaluate pairs."""

from __future__ import annotations

import json
from pathlib import Path

BACKGROUND = 40
"""Episodes per background task."""
PAIRS = 2
"""Pairs per evaluation condition."""
SEED = 2024
SMALL = {"embed": 32, "symbolic_hidden": 64, "context_hidden": 16, "policy": [64, 64]}


def run(root: Path) -> None:
    """Write background episodes, train ``bc-rnn`` (small config, 4 epochs), score and evaluate pairs."""
    from bib.episode import save_episode
    from bib.evaluation import evaluate, evaluation_json, find_episodes, surprise_by_episode
    from bib.io import atomic_write_text, ensure_dir
    from bib.observers.bc import BCRNNObserver
    from bib.observers.learned import TrainConfig
    from bib.observers.scoring import score
    from bib.observers.training import run_training, split
    from bib.tasks import REGISTRY, make_unit

    out = ensure_dir(root / "learned")
    background = ensure_dir(out / "background")
    evaluation = ensure_dir(out / "episodes")
    for task in sorted(t for t, s in REGISTRY.items() if s.kind == "background"):
        for i in range(BACKGROUND):
            ep = make_unit(task, i, SEED)[0]
            save_episode(ep, background / f"{ep.id}.json")
    for task in sorted(t for t, s in REGISTRY.items() if s.kind == "evaluation"):
        for i in range(PAIRS):
            for ep in make_unit(task, i, SEED):
                save_episode(ep, evaluation / f"{ep.id}.json")
    files = [(r.id, r.path) for r in find_episodes(background).refs]
    tr, va = split([i for i, _ in files])
    obs = BCRNNObserver(**SMALL)
    cfg = TrainConfig(epochs=4, batch_size=16, lr=1e-2, loader_workers=0)
    ckpt = out / "bc-rnn.pt"
    report = run_training(obs, [files[i][1] for i in tr], [files[i][1] for i in va], cfg, ckpt, log=lambda _: None)
    losses = ", ".join(f"{h['val_loss']:.3f}" for h in report.history)
    print(f"bc-rnn (small) trained on {len(tr)} background episodes, validation loss by epoch: {losses}; checkpoint {ckpt}")
    summary = score("bc-rnn", evaluation, out / "results.csv", checkpoint=ckpt, progress=False)
    found = find_episodes(evaluation)
    res = evaluate(found.refs, surprise_by_episode(summary.results, found, "max"))
    atomic_write_text(out / "evaluation.json", json.dumps(evaluation_json(res, "max"), indent=2) + "\n")
    accs = ", ".join(f"{c} {100 * r.accuracy:.0f}%" for c, r in res.items())
    print(f"bc-rnn on {summary.n_episodes} episodes ({PAIRS} pairs per condition; a toy run, not a result): {accs}")
