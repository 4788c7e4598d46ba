"""Pairwise accuracy of the learned observers over training seeds, beside BIB's two tables (issue 31 item 2).

    python baselines/learned/seeds.py NAME/sS=EVALDIR [NAME/sS=EVALDIR ...] [--previous OLD.json] [--json OUT.json] [--title TEXT]

Each EVALDIR is a ``bib evaluate --out`` folder (its ``evaluation.json``) of the model NAME (``bc-mlp``,
``bc-rnn``, ``video-rnn``) trained with seed S. Prints, per model, every condition's accuracy per seed,
the mean and the sample standard deviation over the seeds, BIB's NeurIPS and poster numbers
(``data/published/voe_anchors.csv``) and how far the mean is from the nearer of the two.
``--previous`` takes the seeds of an earlier ``--json`` output too (a run given here replaces its seed
there), so seeds run in different sessions go in one table without their evaluation folders.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from bib.evaluation import order_conditions, read_anchors

PUBLISHED = {"bc-mlp": "BC-MLP", "bc-rnn": "BC-RNN", "bc-rnn-padded": "BC-RNN", "video-rnn": "Video-RNN"}
"""Our observer name (bc-rnn-padded: bc-rnn with `context_last = "padded"`) -> the model's name in BIB's tables."""
TABLES = ("neurips", "poster")


def accuracies(folder: Path) -> dict[str, float]:
    """``{condition or family average: accuracy %}`` of one evaluation.json."""
    d = json.loads((folder / "evaluation.json").read_text())
    out = {c: 100.0 * v["accuracy"] for c, v in d["conditions"].items()}
    for key, value in (d.get("overall") or {}).items():
        if value is not None and key != "mean":
            out[key.replace("_", "-")] = 100.0 * value
    if (d.get("overall") or {}).get("mean") is not None:
        out["mean"] = 100.0 * d["overall"]["mean"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", help="NAME/sS=EVALDIR")
    ap.add_argument("--previous", help="an earlier --json output whose seeds are kept")
    ap.add_argument("--json", help="also write every number here")
    ap.add_argument("--title", default="", help="a line printed above the tables")
    args = ap.parse_args(argv)
    runs: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    if args.previous:
        for model, table in json.loads(Path(args.previous).read_text()).items():
            for cond, entry in table.items():
                for seed, value in entry["seeds"].items():
                    runs[model].setdefault(seed, {})[cond] = value
    for spec in args.runs:
        key, _, folder = spec.partition("=")
        model, _, seed = key.partition("/")
        runs[model][seed] = accuracies(Path(folder))
    for model in runs:
        runs[model] = dict(sorted(runs[model].items(), key=lambda kv: int(kv[0].lstrip("s") or 0)))
    anchors = {(r["model"], r["condition"], r["table"]): float(r["accuracy"]) for r in read_anchors(tables=TABLES)}
    out: dict[str, object] = {}
    if args.title:
        print(args.title + "\n")
    for model, seeds in runs.items():
        names = list(seeds)
        conds = [c for c in order_conditions(next(iter(seeds.values())))
                 if c not in ("mean", "efficiency-average", "instrumental-average")]
        rows = [*conds, "efficiency-average", "instrumental-average", "mean"]
        print(f"### {model} ({len(names)} seeds: {', '.join(names)})\n")
        print("| condition | " + " | ".join(names) + " | mean +- sd | BIB NeurIPS / poster | mean - nearer |")
        print("|---|" + "---|" * (len(names) + 3))
        table = {}
        for c in rows:
            vals = np.array([seeds[s][c] for s in names if c in seeds[s]])
            if vals.size != len(names):
                continue
            sd = float(vals.std(ddof=1)) if vals.size > 1 else float("nan")
            pub = [anchors.get((PUBLISHED.get(model, model), c, t)) for t in TABLES]
            known = [p for p in pub if p is not None]
            gap = min((float(vals.mean()) - p for p in known), key=abs) if known else None
            table[c] = {"seeds": dict(zip(names, vals.tolist())), "mean": float(vals.mean()), "sd": sd,
                        "published": dict(zip(TABLES, pub)), "mean_minus_nearer": gap}
            pub_text = " / ".join("-" if p is None else f"{p:.1f}" for p in pub)
            gap_text = "" if gap is None else f"{gap:+.1f}"
            print(f"| {c} | " + " | ".join(f"{v:.1f}" for v in vals) + f" | {vals.mean():.1f} +- {sd:.1f} | "
                  f"{pub_text} | {gap_text} |")
        print()
        out[model] = table
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
