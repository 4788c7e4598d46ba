"""`bib train`: train a learned observer (bc-mlp, bc-rnn, video-rnn) or a user's own ``package.module:Class``."""

from __future__ import annotations

from pathlib import Path

import typer

from bib.commands._common import DEVICE, FORCE, out_option
from bib.errors import BibInputError
from bib.observers import OBSERVERS, observer_names

CHECKPOINT = "checkpoint.pt"
"""The checkpoint inside a `bib train` folder of a learned observer (`bib score --checkpoint` takes the folder or
this file)."""


def trainable(name: str) -> str:
    """``name`` when ``bib train`` can train it (a learned observer or a ``package.module:Class``); else a one-line
    BibInputError naming what it trains."""
    if ":" in name or (name in OBSERVERS and OBSERVERS[name].learned):
        return name
    learned = ", ".join(observer_names(learned=True))
    what = "is not a learned observer" if name in OBSERVERS else "is not a registered observer"
    raise BibInputError(f"observer {name!r} {what}; bib train trains {learned} or your own package.module:Class")


def register(app: typer.Typer) -> None:
    """Add ``bib train`` to ``app``."""

    @app.command()
    def train(
        name: str = typer.Argument(..., metavar="OBSERVER", help=f"The model to train: {', '.join(observer_names(learned=True))}, or your own package.module:Class (its fit(background_episodes) is called).", show_default=False),
        background: Path = typer.Argument(..., help="Background episodes: a folder (searched recursively) or a manifest.csv."),
        out: Path = out_option(f"{CHECKPOINT} (state dict + JSON config, loads with weights_only), checkpoint.log.json (epoch times) and provenance.json; for your own class model.json and weights.pt (a torch.nn.Module's state dict) or saved/ (its save(folder))"),
        config: Path = typer.Option(None, "--config", help="TOML config of a learned observer, e.g. baselines/bc-rnn.toml (default: built-in defaults).", show_default=False),
        epochs: int = typer.Option(None, "--epochs", min=1, help="Override [train] epochs of a learned observer (default: the config's).", show_default=False),
        max_episodes: int = typer.Option(None, "--max-episodes", min=0, help="Use N episodes spread evenly over the id-sorted set (0 = all; default: the config's).", show_default=False),
        seed: int = typer.Option(None, "--seed", help="Override [train] seed (default: the config's; your own class: 0, seeding random, numpy and torch).", show_default=False),
        option: list[str] = typer.Option([], "--option", help="Constructor argument KEY=VALUE (JSON value) of your own class, repeatable.", show_default=False),
        device: str = DEVICE,
        force: bool = FORCE,
    ) -> None:
        """Train on the background set; the folder is checked before training and written when it ends.

        A learned observer trains on an 80/20 split (by sorted episode id), printing validation loss per
        epoch, and keeps the epoch with the lowest validation loss. Your own package.module:Class is built
        with --option, its fit(background_episodes) is called with the whole set, and it is saved by its
        state_dict (a torch.nn.Module) or its own save(folder); `bib score CLASS SET --checkpoint DIR`
        restores it.
        """
        from bib.io import OutputFolder
        from bib.observers.scoring import parse_options

        observer = trainable(name)
        user = ":" in observer
        options = parse_options(option)
        if user and (config is not None or epochs is not None):
            raise BibInputError("--config and --epochs configure the built-in learned observers; "
                                "give your own class its settings with --option KEY=VALUE")
        if not user and options:
            raise BibInputError(f"--option is for your own package.module:Class; configure {observer} with --config")
        from bib.observers.device import check_device, resolve_device

        dev = check_device(device) if user else resolve_device(device)  # a learned observer: resolved before any work
        overrides = {"epochs": epochs, "max_episodes": max_episodes, "seed": seed}
        job = {"command": "train", "observer": observer, "background": background, "config": config,
               "overrides": overrides, **({"options": options} if options else {})}
        folder = OutputFolder(out, job, force=force)
        log = lambda line: typer.echo(line, err=True)  # noqa: E731
        if user:
            from bib.observers.trainable import MODEL_CARD, SAVED, WEIGHTS, train_model

            with folder as tmp:
                card = train_model(observer, background, tmp, options=options, seed=seed or 0,
                                   max_episodes=max_episodes or 0, log=log, device=dev)
            typer.echo(f"{card['name']}: trained model written to {out} ({MODEL_CARD} and "
                       f"{WEIGHTS if card['saved'] == 'state_dict' else SAVED + '/'})")
            return
        from bib.observers.training import train as run

        with folder as tmp:
            run(observer, background, tmp / CHECKPOINT, config, overrides, log=log, device=dev)
        typer.echo(f"{observer}: checkpoint written to {out / CHECKPOINT}")
