"""A manifest-only episode set and a model's results file for `bib compare` tests (15 pairs of 2 tasks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_compare_inputs(folder: Path, results: Path, expected_shift: float = 0.0,
                         unexpected_shift: float = 0.0) -> None:
    """``folder/manifest.csv`` (preference and efficiency-path, 15 pairs each) and ``results`` (CSV
    ``episode_id,surprise``: standard normal noise, seed 0, plus the shift of the episode's outcome)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["episode_id,pair_id,task,condition,outcome,seed,n_trials,n_steps,episode_path,video_path,sha256"]
    res = ["episode_id,surprise"]
    rng = np.random.default_rng(0)
    for task in ("preference", "efficiency-path"):
        for i in range(15):
            for outcome in ("expected", "unexpected"):
                eid = f"{task}-{i}-{outcome}"
                lines.append(f"{eid},{task}-{i},{task},{task},{outcome},{i},9,30,episodes/{eid}.json,,{'0' * 64}")
                shift = expected_shift if outcome == "expected" else unexpected_shift
                res.append(f"{eid},{rng.normal(0, 1) + shift:.5f}")
    (folder / "manifest.csv").write_text("\n".join(lines) + "\n")
    results.write_text("\n".join(res) + "\n")
