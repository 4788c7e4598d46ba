"""Browser commands: ``bib report`` (a static site) and ``bib experiment`` (a looking-time study)."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer

from bib.commands._common import OUT_PATH


def command_line(name: str, positional: list[object], options: dict[str, object], defaults: dict[str, object]) -> str:
    """The command as it was given (options at their defaults left out), for the pages it makes."""
    words = ["bib", name, *(str(p) for p in positional)]
    for flag, value in options.items():
        if value == defaults.get(flag):
            continue
        words += [flag] if value is True else [flag, str(value)]
    return shlex.join(words)


def register(app: typer.Typer) -> None:
    """Add ``report`` and ``experiment`` to ``app``."""

    @app.command()
    def report(
        inputs: list[Path] = typer.Argument(..., help="Stimulus set folders, evaluation JSON/tables, audits, analysis reports, `bib profile` outputs (kinds are detected)."),
        out: Path = typer.Option(..., "--out", **OUT_PATH, help="Site folder: index.html, set-*.html, evaluation.html, analysis-*.html, profile(s)-*.html, "
                                 "figures/, sheets/, style.css, table.js."),
        pairs: int = typer.Option(100, "--pairs-per-condition", min=0, show_default=True,
                                  help="Pairs shown side by side per condition (0 = all); the manifest page lists every episode."),
        per_page: int = typer.Option(20, "--pairs-per-page", min=1, show_default=True,
                                     help="Pairs per condition page; longer conditions continue on further pages (each pair is two videos)."),
        workers: int = typer.Option(1, "--workers", min=1, show_default=True, help="Worker processes drawing contact sheets."),
        force: bool = typer.Option(False, "--force", help="Replace an --out folder that holds something other than a report."),
    ) -> None:
        """Build a static site (opens from file://) from stimulus sets, evaluation results, analyses and agent profiles."""
        from bib.report import build_report

        command = command_line("report", inputs, {"--out": out, "--pairs-per-condition": pairs, "--pairs-per-page": per_page,
                                                  "--workers": workers, "--force": force},
                               {"--pairs-per-condition": 100, "--pairs-per-page": 20, "--workers": 1, "--force": False})
        summary = build_report(inputs, out, command=command, pairs=pairs, workers=workers, force=force, pairs_per_page=per_page)
        kinds = ", ".join(f"{k} {p}" for k, p in summary.inputs)
        typer.echo(f"{summary.out}/index.html: {summary.pages} pages, {summary.sheets} contact sheets ({kinds})")

    @app.command()
    def experiment(
        stimuli: Path = typer.Argument(..., help="A stimulus set with orders.csv and per-trial videos (e.g. from stimuli/infant-pilot.toml)."),
        out: Path = typer.Option(..., "--out", **OUT_PATH, help="Study folder: index.html, experiment.js, experiment.css, study.js, videos/."),
        lookaway: float = typer.Option(2.0, "--lookaway", min=0.1, max=60.0, show_default=True,
                                       help="Seconds of continuous look-away that end a trial (PyHab maxOff)."),
        max_trial: float = typer.Option(60.0, "--max-trial", min=1.0, max=600.0, show_default=True,
                                        help="Maximum trial length in seconds (PyHab maxDur)."),
        min_on: float = typer.Option(1.0, "--min-on", min=0.0, max=600.0, show_default=True,
                                     help="Looking (s) a trial needs before a look-away can end it (PyHab minOn)."),
        lab: str = typer.Option("", "--lab", show_default=True, help="Lab id written into every row (editable in the form)."),
        practice_trials: int = typer.Option(2, "--practice-trials", min=1, max=50, show_default=True,
                                            help="Trials of order 1 that practice mode plays (nothing is saved)."),
        force: bool = typer.Option(False, "--force", help="Replace an --out folder that holds something other than a study."),
    ) -> None:
        """Write a browser looking-time experiment (works from file://) for a set's presentation orders."""
        from bib.experiment import Criteria, build_experiment

        command = command_line("experiment", [stimuli], {"--out": out, "--lookaway": lookaway, "--max-trial": max_trial,
                                                         "--min-on": min_on, "--lab": lab, "--practice-trials": practice_trials,
                                                         "--force": force},
                               {"--lookaway": 2.0, "--max-trial": 60.0, "--min-on": 1.0, "--lab": "", "--practice-trials": 2,
                                "--force": False})
        summary = build_experiment(stimuli, out, Criteria(lookaway, max_trial, min_on), command=command,
                                   lab=lab, practice_trials=practice_trials, force=force)
        typer.echo(f"{summary.out}/index.html: {summary.n_orders} orders of {summary.n_trials} trials, "
                   f"{summary.n_videos} videos; open it in a browser")
