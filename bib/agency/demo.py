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
        result = run_suite("navigation", spec, folder, grids=1, rollouts=3, meg=False,
                           command=f"bib agency run --agent {spec.name} --suite navigation --grids 1 --rollouts 3 "
                                   f"--no-meg --out {folder}")
        make_report(folder, result)
        base = result.tables["summary"].loc[("navigation", "base")]
        print(f"{spec.label:16s} {int(base['grids'])} grids x 3 rollouts: accuracy {base['accuracy']:.3f}, "
              f"success {base['success']:.3f} -> {folder}")
