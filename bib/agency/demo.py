"""The agency step of `bib demo`: the policy network and the epsilon-noisy planner on a small navigation suite."""

from __future__ import annotations

from pathlib import Path

from bib.agency.agents import AgentSpec
from bib.agency.report import make_report
from bib.agency.suite import run_suite


def run(out: Path) -> None:
    """One grid per size x density cell, 3 rollouts each, for two agents; tables and plots under ``agency/``."""
    for spec in (AgentSpec("policy-net"), AgentSpec("noisy", epsilon=0.2)):
        folder = Path(out) / "agency" / spec.name
        rows = run_suite("navigation", spec, folder, grids=1, rollouts=3, meg=False,
                         command=f"bib agency run --agent {spec.name} --suite navigation --grids 1 --rollouts 3 "
                                 f"--no-meg --out {folder}")
        make_report(folder)
        n = len(rows)
        acc = sum(r["accuracy"] for r in rows) / n
        ok = sum(r["success"] for r in rows) / n
        print(f"{spec.label:16s} {n} grids x 3 rollouts: accuracy {acc:.3f}, success {ok:.3f} -> {folder}")
