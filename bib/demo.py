"""`bib demo`: every capability's small end-to-end step, run in order on embedded defaults."""

from __future__ import annotations

import importlib
from pathlib import Path

from rich.console import Console

# (title, "module:function"); each function takes the demo output root and returns nothing.
# Add one line per capability.
STEPS: list[tuple[str, str]] = [
    ("stimuli: episodes, videos, validation", "bib.stimuli.demo:run"),
    ("analysis: looking-time mixed models on the synthetic example data", "bib.analysis.demo:run"),
    ("reflection: NaiveLearner and its reality check in the extended environments", "bib.reflection.demo:run"),
    ("observers: inverse planner scores and evaluates a few pairs of every condition", "bib.observers.demo:run"),
    ("blind scoring: a --secret-seed set, its kit scored and evaluated against the key", "bib.challenge.demo:run_blind"),
    ("learned observers: train a small bc-rnn, score and evaluate pairs", "bib.observers.learned_demo:run"),
    ("meg: CliffWorld MEG tables and the MEG of an efficiency pair's agents", "bib.meg.demo:run"),
    ("agency: policy network and noisy planner on a small navigation suite", "bib.agency.demo:run"),
]


def run_demo(out: Path = Path("out/demo")) -> None:
    """Run every demo step, printing a header for each."""
    console = Console(stderr=True)
    out.mkdir(parents=True, exist_ok=True)
    for title, target in STEPS:
        console.rule(f"[bold]{title}")
        module, func = target.split(":")
        getattr(importlib.import_module(module), func)(out)
    console.print(f"demo outputs are under {out}/")
