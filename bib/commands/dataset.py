"""Dataset commands: export to / import from the original BIB JSON format, and set statistics."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from bib.errors import BibInputError

FORMATS = ("bib-json",)


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise BibInputError(f"--format {fmt!r} is not supported; known: {', '.join(FORMATS)}")


def register(app: typer.Typer) -> None:
    """Add ``export``, ``import`` and ``stats`` to ``app``."""

    @app.command("export")
    def export(
        directory: Path = typer.Argument(..., help="A generated set (manifest.csv, episodes/) or a folder of episodes."),
        out: Path = typer.Argument(..., help="Output root: one BIB folder per task inside."),
        fmt: str = typer.Option("bib-json", "--format", help="Output format (bib-json: BIB's per-frame JSON)."),
        video: bool = typer.Option(False, "--video", help="Also render a matching 200 x 200 / 25 fps MP4 per file."),
        workers: int = typer.Option(1, "--workers", min=1, help="Worker processes."),
    ) -> None:
        """Write episodes as the original BIB per-frame JSON (<task folder>/<index>e.json / u.json)."""
        from bib.stimuli.bibjson import export_bib_json

        _check_format(fmt)
        index = export_bib_json(directory, out, video=video, workers=workers)
        folders = sorted({r["file"].split("/")[0] for r in index})
        typer.echo(f"{len(index)} episodes exported to {out} ({', '.join(folders)}); index in {out / 'export.csv'}")

    @app.command("import")
    def import_(
        src: Path = typer.Argument(..., help="A BIB root (task folders inside) or one BIB task folder."),
        out: Path = typer.Argument(..., help="Output folder (manifest.csv, episodes/)."),
        fmt: str = typer.Option("bib-json", "--format", help="Input format (bib-json: BIB v1.1 per-frame JSON)."),
        workers: int = typer.Option(1, "--workers", min=1, help="Worker processes."),
    ) -> None:
        """Read original BIB episodes into bib.episode/1 (positions snapped to cells, paths from frames)."""
        from bib.stimuli.bibjson import import_bib_json

        _check_format(fmt)
        summary = import_bib_json(src, out, workers=workers)
        typer.echo(f"{summary.episodes} episodes imported into {summary.out}; "
                   f"{len(summary.problems)} break a rule of their condition")
        for line in summary.problems[:10]:
            typer.echo(f"  {line}")

    @app.command()
    def stats(
        directory: Path = typer.Argument(..., help="A generated or imported set, or a folder of episodes."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON (with histograms and object grids)."),
        workers: int = typer.Option(1, "--workers", min=1, help="Worker processes."),
    ) -> None:
        """Per condition: counts, path lengths, object positions and the closest-object rule's accuracy."""
        from bib.stimuli.stats import format_table, set_stats

        result = set_stats(directory, workers=workers)
        if as_json:
            typer.echo(json.dumps([s.as_dict() for s in result], indent=1))
        else:
            typer.echo(format_table(result))
