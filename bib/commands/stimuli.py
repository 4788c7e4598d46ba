"""Stimulus commands: generate, render, validate, demo (filled in by the foundation work)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the stimulus commands to ``app``."""

    @app.command()
    def demo() -> None:
        """Run every step of the demo on small embedded defaults (outputs under out/demo/)."""
        from bib.demo import run_demo

        run_demo()
