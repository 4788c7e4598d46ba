"""The MEG step of `bib demo`: CliffWorld MEG tables and the MEG of one efficiency pair's agents."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bib.io import atomic_write_text, ensure_dir
from bib.meg.cliffworld import format_tables, run_experiments
from bib.meg.episodes import episode_meg


def run(root: Path) -> None:
    """Write ``root/meg/cliffworld.md`` (epsilon and goal-length sweeps) and ``root/meg/episodes.json``."""
    from bib.tasks import make_unit

    out = ensure_dir(root / "meg")
    rows = run_experiments(epsilons=(0.1, 0.3, 0.5, 0.9), goal_lengths=(1, 2, 4))
    atomic_write_text(out / "cliffworld.md", "CliffWorld 7 x 4, H = 40, wind 0.3 (bib demo)\n\n" + format_tables(rows))
    expected, unexpected = make_unit("efficiency-irrational", 0, 0)
    ep_rows = episode_meg(expected) + episode_meg(unexpected)
    atomic_write_text(out / "episodes.json", json.dumps(ep_rows, indent=2) + "\n")

    def fam(ep_id: str) -> float:
        return float(np.mean([r["meg"]["A"] for r in ep_rows if r["episode"] == ep_id and r["phase"] == "familiarization"]))

    eps01 = rows[0]
    print(f"meg: CliffWorld eps-greedy 0.1: known {eps01.known:.2f} nats (beta* {eps01.beta:.3f}), unknown {eps01.unknown_tabular:.2f}; "
          f"efficiency-irrational familiarization MEG towards A: rational {fam(unexpected.id):.2f} vs irrational "
          f"{fam(expected.id):.2f} nats; tables in {out}")
