"""`bib train`: train a learned observer (bc-mlp, bc-rnn, video-rnn) or a user's own ``package.module:Class``."""

from __future__ import annotations

from pathlib import Path

import typer

from bib.commands._common import DEVICE, FORCE, out_option
from bib.observers import observer_names
from bib.observers.registry import trainable
from bib.observers.trainable import CHECKPOINT  # the file name's one source


def register(app: typer.Typer) -> None:
    """Add ``bib train`` to ``app``."""

    @app.command()
    def train(
        name: str = typer.Argument(..., metavar="OBSERVER", help=f"The model to train: {', '.join(observer_names(learned=True))}, or your own package.module:Class (its fit(background_episodes) is called).", show_default=False),
        background: Path = typer.Argument(..., help="Background episodes: a folder (searched recursively) or a manifest.csv."),
        out: Path = out_option(f"{CHECKPOINT} (state dict + JSON config, loads with weights_only), checkpoint.log.json (epochs, times, provenance), metrics.csv, last.pt (for --resume-from) and provenance.json; for your own class model.json and weights.pt (a torch.nn.Module's state dict) or saved/ (its save(folder))"),
        config: Path = typer.Option(None, "--config", help="TOML config of a learned observer, e.g. baselines/bc-rnn.toml (default: built-in defaults).", show_default=False),
        epochs: int = typer.Option(None, "--epochs", min=1, help="Override [train] epochs of a learned observer (default: the config's).", show_default=False),
        max_episodes: int = typer.Option(None, "--max-episodes", min=0, help="Use N episodes spread evenly over the id-sorted set (0 = all; default: the config's).", show_default=False),
        seed: int = typer.Option(None, "--seed", help="Override [train] seed (default: the config's; your own class: 0, seeding random, numpy and torch).", show_default=False),
        option: list[str] = typer.Option([], "--option", help="Constructor argument KEY=VALUE (JSON value) of your own class, repeatable.", show_default=False),
        patience: int = typer.Option(None, "--patience", min=0, help="Stop after N epochs without a lower validation loss (0 = never stop early; default: the config's [train] patience, 0 for your class); your class: its fit(episodes, context)'s early stopping.", show_default=False),
        resume_from: Path = typer.Option(None, "--resume-from", help="Continue training from the last.pt of a folder an earlier bib train wrote (its epochs count towards --epochs).", show_default=False),
        pretrain: str = typer.Option(None, "--pretrain", metavar="none|atc", help="A learned observer with input = \"frames\": atc pretrains its frame encoder with Augmented Temporal Contrast on the training split before training (default: the config's [train] pretrain, none).", show_default=False),
        device: str = DEVICE,
        force: bool = FORCE,
    ) -> None:
        """Train on the background set; the folder is checked before training and written when it ends.

        A learned observer trains on an 80/20 split (by sorted episode id), printing validation loss per
        epoch, and keeps the epoch with the lowest validation loss (a warning when that is the untrained
        epoch 0). Your own package.module:Class is built with --option, its fit(background_episodes) is
        called with the whole set (a fit(episodes, context) also gets the training context: split, seed,
        device, logger, early stopping, resume), and it is saved by its state_dict (a torch.nn.Module) or
        its own save(folder); `bib score CLASS SET --checkpoint DIR` restores it.
        """
        from bib.api import train as run
        from bib.observers.scoring import parse_options

        trained = run(trainable(name), background, out, config=config, epochs=epochs, max_episodes=max_episodes,
                      seed=seed, device=device, force=force, log=lambda line: typer.echo(line, err=True),
                      options=parse_options(option), patience=patience, resume_from=resume_from, pretrain=pretrain)
        typer.echo(str(trained))
