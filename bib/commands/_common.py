"""Options and helpers every command shares, so the CLI convention (docs/cli.md) is written once."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from bib.errors import BibInputError


def out_path(text: str | Path) -> Path:
    """The value of ``--out``: a folder; an empty one is refused (it would mean the working folder)."""
    if isinstance(text, Path):
        return text
    if text == "":
        raise typer.BadParameter("is empty; name a folder (e.g. --out out)")
    return Path(text)


OUT_PATH = {"parser": out_path, "metavar": "<path>"}
"""What every ``--out`` option passes to ``typer.Option``: :func:`out_path` parses it."""


def out_option(what: str, default: Path | None = None) -> typer.models.OptionInfo:
    """``--out DIR``: the output folder; ``what`` says which files go inside."""
    return typer.Option(... if default is None else default, "--out", **OUT_PATH,
                        help=f"Output folder: {what}.", show_default=default is not None)


def optional_out(what: str) -> typer.models.OptionInfo:
    """``--out DIR`` for commands whose main output is printed: also write files into this folder."""
    return typer.Option(None, "--out", **OUT_PATH, help=f"Also write {what} into this folder.", show_default=False)


FORCE = typer.Option(False, "--force", help="Replace an --out folder that holds another job's output.")
WORKERS = typer.Option(1, "--workers", min=1, help="Worker processes.")
SCHEDULER = typer.Option(None, "--scheduler", help="Dask scheduler tcp://HOST:PORT instead of local processes.",
                         show_default=False)
JSON = typer.Option(False, "--json", help="Print JSON instead of a table.")
DEVICE = typer.Option("auto", "--device", help="Where a torch model runs: auto (a CUDA GPU, else mps, else cpu), cpu, "
                      "cuda, cuda:N or mps; a device that is not here is refused.")


def checkpoint_file(path: Path | None, name: str) -> Path | None:
    """A ``--checkpoint`` given as the file or as the ``--out`` folder that holds it under ``name`` (the folder
    itself when ``bib train`` wrote it for a user's model)."""
    if path is None:
        return None
    from bib.observers.trainable import is_model_folder

    p = Path(path)
    if is_model_folder(p):  # a user's model `bib train` saved: the folder itself is the checkpoint
        return p
    if p.is_dir():
        p = p / name
    if not p.exists():
        raise BibInputError(f"--checkpoint {path}: checkpoint not found")
    if not p.is_file():
        raise BibInputError(f"--checkpoint {path}: not a regular file (a pipe, device or socket); bib reads "
                            "regular files only")
    return p


def _codec_choices() -> type[Enum]:
    from bib.render.video import CODECS

    return CODECS.choices("Codec")


Codec = _codec_choices()
"""Video codecs for ``--codec``: the names of :data:`bib.render.video.CODECS`."""


def _render_choices(name: str) -> type[Enum]:
    """An enum of a render setting's allowed values (:data:`bib.render.frames.RenderSettings.CHOICES`)."""
    from bib.render.frames import RenderSettings

    return Enum(name, {v: v for v in RenderSettings.CHOICES[name.lower()]}, type=str)  # type: ignore[return-value]


Preset = _render_choices("Preset")
"""libx264 presets for ``--preset``."""


def closed_interval(name: str, lo: int, hi: int):  # noqa: ANN201 - a Typer callback
    """A Typer callback refusing values outside [lo, hi], naming the value and the allowed range."""

    def check(x: int | None) -> int | None:
        if x is not None and not lo <= x <= hi:
            raise typer.BadParameter(f"{x} is out of range; allowed: {lo} <= {name} <= {hi}")
        return x

    return check


def render_options() -> tuple[typer.models.OptionInfo, typer.models.OptionInfo]:
    """``--preset`` and ``--crf``, with the choices, limits and defaults of :class:`bib.render.frames.RenderSettings`."""
    from bib.render.frames import RenderSettings

    lo, hi, _ = RenderSettings.LIMITS["crf"]
    return (
        typer.Option(None, "--preset", help=f"libx264 speed preset of H.264 videos (default: {RenderSettings.preset}; generate: the spec's).",
                     show_default=False),
        typer.Option(None, "--crf", callback=closed_interval("crf", int(lo), int(hi)), help=f"libx264 constant rate "
                     f"factor, {int(lo)}-{int(hi)} (default: {RenderSettings.crf}; generate: the spec's).", show_default=False),
    )


PRESET, CRF = render_options()


def value(choice: Enum | None) -> str | None:
    """The string of an enum option (None stays None)."""
    return None if choice is None else str(choice.value)


def open_interval(lo: float, hi: float):  # noqa: ANN201 - a Typer callback
    """A Typer callback refusing values outside the open interval (lo, hi) (Typer's min/max are closed)."""

    def check(x: float | None) -> float | None:
        if x is not None and not lo < x < hi:
            raise typer.BadParameter(f"{x:g} is not in the open interval ({lo:g}, {hi:g})")
        return x

    return check
