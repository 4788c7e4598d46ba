"""The analysis step of ``bib demo``: analyse the example looking times and draw the paired plots."""

from __future__ import annotations

from pathlib import Path

from bib.resources import resource

EXAMPLE = resource("looking_times/example.csv")
SPEC = resource("analysis/infant-pilot.toml")


def run(out: Path) -> None:
    """Analyse ``data/looking_times/example.csv`` with ``analysis/infant-pilot.toml`` into ``out/analysis/``.

    Writes ``report.txt``, ``report.json`` and ``paired-<task>.{png,svg}``, and prints the table.
    """
    import json

    from bib.analysis.analyze import analyze, format_report, jsonable
    from bib.analysis.importers import read_looking_times
    from bib.analysis.plots import analysis_plots
    from bib.analysis.spec import load_spec
    from bib.io import atomic_write_text, ensure_dir

    folder = ensure_dir(out / "analysis")
    spec = load_spec(SPEC)
    result = analyze(read_looking_times(EXAMPLE, spec=spec), spec)
    text = format_report(result.report)
    atomic_write_text(folder / "report.txt", text + "\n")
    atomic_write_text(folder / "report.json", json.dumps(jsonable(result.report), indent=2) + "\n")
    plots = analysis_plots(result.data, result.report, spec.scale, folder)
    print("\n".join(text.splitlines()[:8]))
    print(f"(synthetic example data) wrote {folder}/report.txt, report.json and {len(plots)} plot files")
