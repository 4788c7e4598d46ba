"""Before/after of the blind view (issue 26): each non-learned observer's accuracy on the OPEN episodes (what
scoring handed an observer before the blind view: the episodes as generated, in chunks of 32 sorted by id)
beside its accuracy through the blind view (what ``bib score`` hands it now), with the same code.

Usage: python baselines/ctrl/open_vs_blind.py SET OUT_JSON [--scores ROOT] [--workers N]
       [--checkpoint NAME=PATH] [--observers A,B,...]

Each episode file is read once and handed, open and as its blind view, to every observer. The blind view is
``bib score``'s own (:func:`bib.observers.scoring.score_files`: :func:`bib.stimuli.blind.load_blind`'s view in
the shuffled order of :func:`bib.observers.base.surprise_of_views`). Where ``--scores ROOT`` holds
``ROOT/<observer>/results.csv`` (a ``bib score OBSERVER SET --out ROOT/OBSERVER`` run), the blind side is read
from it instead of scored again, so the table's "after" is that run's. Writes OUT_JSON (per observer:
accuracy per condition, open and blind, their means over conditions, how many episodes' surprise differs
and by how much at most) and prints a Markdown table. ``single-feature`` needs ``--checkpoint
single-feature=PATH`` (an audit's fit).
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from bib.evaluation import evaluate, find_episodes, read_results, readout
from bib.observers.base import surprise_of_views
from bib.observers.registry import make_observer
from bib.stimuli.blind import blind_episode, file_secret
from bib.stimuli.check import load_checked

OBSERVERS = ["inverse-planner", "closest-object", "random", "test-only", "novelty", "familiarity", "path-length",
             "single-feature"]
CHUNK = 32
_MADE: dict[tuple[str, str | None], object] = {}

Item = tuple[list[tuple[str, str | None]], list[str], list[tuple[str, str]]]


def _observer(name: str, checkpoint: str | None) -> object:
    if (name, checkpoint) not in _MADE:
        _MADE[(name, checkpoint)] = make_observer(name, checkpoint)
    return _MADE[(name, checkpoint)]


def _max(values: object) -> float:
    return readout(np.asarray(values, dtype=np.float64).reshape(-1))


def _chunk(item: Item) -> dict[str, list[tuple[str, float, float | None]]]:
    """``{observer: [(id, open surprise, blind surprise or None)]}`` of a chunk of ``(id, file)``, max readout."""
    observers, blind_too, chunk = item
    episodes = [load_checked(path) for _, path in chunk]
    views = [blind_episode(ep, file_secret(path)) for ep, (_, path) in zip(episodes, chunk)]
    ids = [eid for eid, _ in chunk]
    out = {}
    for name, checkpoint in observers:
        observer = _observer(name, checkpoint)
        batched = getattr(observer, "surprise_many", None)
        opened = list(batched(episodes)) if callable(batched) else [observer.surprise(ep) for ep in episodes]
        blind = surprise_of_views(observer, views, ids) if name in blind_too else [None] * len(ids)
        out[name] = [(eid, _max(o), None if b is None else _max(b)) for eid, o, b in zip(ids, opened, blind)]
    return out


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--scores", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--checkpoint", action="append", default=[])
    parser.add_argument("--observers", default=",".join(OBSERVERS))
    args = parser.parse_args(argv)
    checkpoints = dict(c.split("=", 1) for c in args.checkpoint)
    names = args.observers.split(",")
    episodes = find_episodes(args.set)
    refs = sorted(episodes.refs, key=lambda r: r.id)
    scored = {n: args.scores / n / "results.csv" for n in names if args.scores and (args.scores / n / "results.csv").exists()}
    blind_too = [n for n in names if n not in scored]
    items = [([(n, checkpoints.get(n)) for n in names], blind_too, [(r.id, str(r.path)) for r in refs[i : i + CHUNK]])
             for i in range(0, len(refs), CHUNK)]
    opened: dict[str, dict[str, float]] = {n: {} for n in names}
    blind: dict[str, dict[str, float]] = {n: {} for n in names}
    with ProcessPoolExecutor(args.workers) as pool:
        for part in pool.map(_chunk, items, chunksize=4):
            for n, rows in part.items():
                for eid, o, b in rows:
                    opened[n][eid] = o
                    if b is not None:
                        blind[n][eid] = b
    report: dict[str, object] = {"set": str(args.set), "episodes": len(refs), "observers": {}}
    for n in names:
        after = read_results(scored[n], episodes) if n in scored else blind[n]
        diff = np.array([abs(opened[n][r.id] - after[r.id]) for r in refs])
        acc = {how: {c: round(100 * r.accuracy, 2) for c, r in evaluate(episodes.refs, s).items()}
               for how, s in (("open", opened[n]), ("blind", after))}
        entry: dict[str, object] = {how: {"conditions": acc[how], "mean": round(float(np.mean(list(acc[how].values()))), 2)}
                                    for how in acc}
        entry.update(episodes_differing=int((diff > 0).sum()), max_abs_difference=float(diff.max()),
                     blind_from=str(scored[n]) if n in scored else "scored here", checkpoint=checkpoints.get(n))
        report["observers"][n] = entry  # type: ignore[index]
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    conds = list(acc["open"])
    print("| observer | " + " | ".join(conds) + " | mean | episodes differing |")
    print("|---|" + "---|" * (len(conds) + 2))
    for n, e in report["observers"].items():  # type: ignore[union-attr]
        o, b = e["open"]["conditions"], e["blind"]["conditions"]
        cells = [f"{o[c]:.2f} -> {b[c]:.2f}" if o[c] != b[c] else f"{o[c]:.2f}" for c in conds]
        print(f"| {n} | " + " | ".join(cells) + f" | {e['open']['mean']:.2f} -> {e['blind']['mean']:.2f} | "
              f"{e['episodes_differing']} (max {e['max_abs_difference']:.2g}) |")


if __name__ == "__main__":
    main(sys.argv[1:])
