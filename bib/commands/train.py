"""`bib train`: train a learned observer (bc-mlp, bc-rnn, video-rnn: the learned entries of the observer registry)."""

from __future__ import annotations

from pathlib import Path

import typer

from bib.commands._common import FORCE, out_option
from bib.observers import OBSERVERS, observer_names

LearnedName = OBSERVERS.choices("LearnedName", observer_names(learned=True))
"""The observers ``bib train`` trains: the learned ones of :data:`bib.observers.OBSERVERS`."""

CHECKPOINT = "checkpoint.pt"
"""The checkpoint inside a `bib train` folder (`bib score --checkpoint` takes the folder or this file)."""


def register(app: typer.Typer) -> None:
    """Add ``bib train`` to ``app``."""

    @app.command()
    def train(
        name: LearnedName = typer.Argument(..., metavar="OBSERVER", help="The learned observer to train.", show_default=False),
        background: Path = typer.Argument(..., help="Background episodes: a folder (searched recursively) or a manifest.csv."),
        out: Path = out_option(f"{CHECKPOINT} (state dict + JSON config, loads with weights_only), checkpoint.log.json (epoch times) and provenance.json"),
        config: Path = typer.Option(None, "--config", help="TOML config, e.g. baselines/bc-rnn.toml (default: built-in defaults).", show_default=False),
        epochs: int = typer.Option(None, "--epochs", min=1, help="Override [train] epochs (default: the config's).", show_default=False),
        max_episodes: int = typer.Option(None, "--max-episodes", min=0, help="Use N episodes spread evenly over the id-sorted set (0 = all; default: the config's).", show_default=False),
        seed: int = typer.Option(None, "--seed", help="Override [train] seed (default: the config's).", show_default=False),
        force: bool = FORCE,
    ) -> None:
        """Train on an 80/20 split (by sorted episode id), printing validation loss per epoch.

        The checkpoint keeps the epoch with the lowest validation loss. The output folder is checked
        before training and written only when training ends.
        """
        from bib.io import OutputFolder
        from bib.observers.training import train as run

        observer = name.value
        overrides = {"epochs": epochs, "max_episodes": max_episodes, "seed": seed}
        folder = OutputFolder(out, {"command": "train", "observer": observer, "background": background,
                                    "config": config, "overrides": overrides}, force=force)
        with folder as tmp:
            run(observer, background, tmp / CHECKPOINT, config, overrides, log=lambda line: typer.echo(line, err=True))
        typer.echo(f"{observer}: checkpoint written to {out / CHECKPOINT}")
