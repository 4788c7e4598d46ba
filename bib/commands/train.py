"""`bib train`: train a learned observer (bc-mlp, bc-rnn, video-rnn) on background episodes."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add ``bib train`` to ``app``."""

    @app.command()
    def train(
        observer: str = typer.Option(..., "--observer", help="Learned observer: bc-mlp, bc-rnn or video-rnn."),
        background: Path = typer.Option(..., "--background", help="Folder of background episodes (searched recursively) or a manifest.csv."),
        out: Path = typer.Option(..., "--out", help="Checkpoint file to write (state dict + JSON config)."),
        config: Path = typer.Option(None, "--config", help="TOML config, e.g. baselines/bc-rnn.toml (default: built-in defaults)."),
        epochs: int = typer.Option(None, "--epochs", min=1, help="Override [train] epochs."),
        max_episodes: int = typer.Option(None, "--max-episodes", min=0, help="Use N episodes spread evenly over the id-sorted set (0 = all)."),
        seed: int = typer.Option(None, "--seed", help="Override [train] seed."),
    ) -> None:
        """Train on an 80/20 split (by sorted episode id), printing validation loss per epoch.

        The checkpoint keeps the epoch with the lowest validation loss and loads with
        torch.load(weights_only=True).
        """
        from bib.observers.training import train as run

        overrides = {"epochs": epochs, "max_episodes": max_episodes, "seed": seed}
        run(observer, background, out, config, overrides, log=lambda line: typer.echo(line, err=True))
        typer.echo(f"{observer}: checkpoint written to {out}")
