"""The reflection step of `bib demo`: NaiveLearner and its reality check, 100 steps, 2 seeds."""

from __future__ import annotations

import json
from pathlib import Path

from bib.io import atomic_write_text
from bib.reflection.harness import table


def run(out: Path) -> None:
    """Measure NaiveLearner and RC(NaiveLearner) briefly and write ``reflection/naive-learner.json``."""
    rows = table(agents=["naive-learner"], lengths=[100], seeds=2, progress=False)
    folder = Path(out) / "reflection"
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "naive-learner.json", json.dumps([m.to_json() for m in rows], indent=2) + "\n")
    for m in rows:
        print(f"{m.label:16s} {m.steps} steps x {m.seeds} seeds: mean {m.mean:+.4f} (stderr {m.stderr:.4f})")
    print(f"wrote {folder / 'naive-learner.json'}")
