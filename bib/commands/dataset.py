"""Dataset commands: export to / import from the original BIB JSON format, and set statistics."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from bib.commands._common import OUT_PATH
from bib.tasks import REGISTRY, task_ids


class Format(str, Enum):
    """Episode file formats ``export`` and ``import`` speak."""

    bib_json = "bib-json"


def _naming_choices() -> tuple[type[Enum], type[Enum]]:
    from bib.stimuli.bibjson import NAMINGS

    return NAMINGS.choices("Naming"), NAMINGS.choices("ImportNaming", ("auto", *NAMINGS))


Naming, ImportNaming = _naming_choices()
"""Key/lock field names of BIB JSON (:data:`bib.stimuli.bibjson.NAMINGS`: v1.1 = pin/key, old = key/lock) to
write, and to read (``auto``: detected per file)."""


BibTask = REGISTRY.choices("BibTask", (*task_ids("evaluation"), *task_ids("background")))
"""Task ids a BIB folder can hold (the evaluation conditions and the background tasks)."""


def register(app: typer.Typer) -> None:
    """Add ``export``, ``import`` and ``stats`` to ``app``."""

    @app.command("export")
    def export(
        directory: Path = typer.Argument(..., help="A generated set (manifest.csv, episodes/) or a folder of episodes."),
        out: Path = typer.Option(..., "--out", **OUT_PATH, help="Output folder: one BIB task folder per task inside, and export.csv."),
        fmt: Format = typer.Option(Format.bib_json, "--format", help="Output format (bib-json: BIB's per-frame JSON).",
                                   show_default=True),
        naming: Naming = typer.Option(Naming("v1.1"), "--naming", show_default=True,
                                      help="Key/lock field names: v1.1 writes the key as 'pin' and the lock as 'key' "
                                           "(BIB v1.1, SolvingBIB.jl); old writes 'key' and 'lock'."),
        video: bool = typer.Option(False, "--video", help="Also render a matching 200 x 200 / 25 fps MP4 per file."),
        workers: int = typer.Option(1, "--workers", min=1, show_default=True, help="Worker processes."),
        force: bool = typer.Option(False, "--force", help="Replace an --out folder that holds other files."),
    ) -> None:
        """Write episodes as the original BIB per-frame JSON (OUT/<task folder>/<index>e.json / u.json, OUT/export.csv)."""
        from bib.stimuli.bibjson import export_bib_json

        index = export_bib_json(directory, out, video=video, workers=workers, naming=naming.value, force=force)
        folders = sorted({r["file"].split("/")[0] for r in index})
        typer.echo(f"{len(index)} episodes exported to {out} ({', '.join(folders)}); index in {out / 'export.csv'}")

    @app.command("import")
    def import_(
        src: Path = typer.Argument(..., help="A BIB root (task folders inside), one BIB task folder, or with --task a "
                                             "folder of one task's files under any name (.json or .json.gz)."),
        out: Path = typer.Option(..., "--out", **OUT_PATH, help="Output folder: episodes/, manifest.csv, import.csv."),
        fmt: Format = typer.Option(Format.bib_json, "--format", help="Input format (bib-json: BIB per-frame JSON).",
                                   show_default=True),
        task: BibTask | None = typer.Option(None, "--task", help="The task of every file in SRC (for folders with "  # noqa: UP007
                                                                   "any name); default: from BIB's folder names."),
        naming: ImportNaming = typer.Option(ImportNaming("auto"), "--naming", show_default=True,
                                            help="Key/lock field names: auto (v1.1 when frames have 'pin', old when "
                                                 "they have 'lock'), v1.1 or old."),
        workers: int = typer.Option(1, "--workers", min=1, show_default=True, help="Worker processes."),
        force: bool = typer.Option(False, "--force", help="Replace an --out folder that holds other files."),
    ) -> None:
        """Read BIB recordings into bib.episode/1 (goals, 8-connected paths and the continuous positions read)."""
        from bib.stimuli.bibjson import import_bib_json

        summary = import_bib_json(src, out, task=task.value if task else None, naming=naming.value, workers=workers,
                                  force=force)
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
        from bib.stimuli.stats import set_stats

        result = set_stats(directory, workers=workers)
        typer.echo(result.to_json_text() if as_json else result.to_markdown(), nl=not as_json)
