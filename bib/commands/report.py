"""Browser commands: ``bib report`` (a static site) and ``bib experiment`` (a looking-time study)."""

from __future__ import annotations

import shlex
from enum import Enum
from pathlib import Path

import typer

from bib.commands._common import OUT_PATH, value
from bib.errors import BibInputError
from bib.stimuli.timing import HAB_BASES, MEASURE_FROM

MeasureFrom = Enum("MeasureFrom", {m: m for m in MEASURE_FROM}, type=str)  # type: ignore[misc]
"""``--measure-from`` choices: :data:`bib.stimuli.timing.MEASURE_FROM`."""
HabBasis = Enum("HabBasis", {m: m for m in HAB_BASES}, type=str)  # type: ignore[misc]
"""``--hab-basis`` choices: :data:`bib.stimuli.timing.HAB_BASES`."""


def command_line(name: str, positional: list[object], options: dict[str, object], defaults: dict[str, object]) -> str:
    """The command as it was given (options at their defaults left out), for the pages it makes."""
    words = ["bib", name, *(str(p) for p in positional)]
    for flag, given in options.items():
        if given == defaults.get(flag):
            continue
        words += [flag] if given is True else [flag, str(given)]
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
        lookaway: float | None = typer.Option(None, "--lookaway", min=0.1, max=60.0, show_default=False,  # noqa: UP007
                                              help="Seconds of continuous look-away that end a trial (PyHab maxOff; default: the set's [study], or 2)."),
        max_trial: float | None = typer.Option(None, "--max-trial", min=1.0, max=600.0, show_default=False,  # noqa: UP007
                                               help="Maximum trial length in seconds (PyHab maxDur; default: the set's [study], or 60)."),
        min_on: float | None = typer.Option(None, "--min-on", min=0.0, max=600.0, show_default=False,  # noqa: UP007
                                            help="Looking (s, from --measure-from) a trial needs before a look-away can end it "
                                                 "(PyHab minOn; default: the set's [study], or 2)."),
        min_trial: float | None = typer.Option(None, "--min-trial", min=0.0, max=600.0, show_default=False,  # noqa: UP007
                                               help="Minimum trial length in seconds (default: the set's [study], or 0)."),
        play_through: bool | None = typer.Option(None, "--play-through/--no-play-through", show_default=False,  # noqa: UP007
                                                 help="A look-away counts only after the trial's video has played to its end "
                                                      "(PyHab playThrough; default: the set's [study], or on)."),
        measure_from: MeasureFrom | None = typer.Option(None, "--measure-from", show_default=False,  # noqa: UP007
                                                        help="Measure looking from the video's outcome frame (the agent at its goal, "
                                                             "recorded by bib generate) or the trial start (default: the set's [study], or outcome)."),
        habituation: bool | None = typer.Option(None, "--habituation/--no-habituation", show_default=False,  # noqa: UP007
                                                help="Infant-controlled familiarization: each pair's familiarization repeats until the "
                                                     "habituation criterion (PyHab's) or --hab-max-trials (default: the set's [study], or off)."),
        hab_window: int | None = typer.Option(None, "--hab-window", min=1, max=20, show_default=False,  # noqa: UP007
                                              help="Trials in the habituation windows (PyHab setCritWindow/metCritWindow; default 3)."),
        hab_ratio: float | None = typer.Option(None, "--hab-ratio", min=0.05, max=0.95, show_default=False,  # noqa: UP007
                                               help="Habituated below this share of the criterion window's looking (PyHab 1/setCritDivisor; default 0.5)."),
        hab_basis: HabBasis | None = typer.Option(None, "--hab-basis", show_default=False,  # noqa: UP007
                                                  help="Criterion window: the first trials, the largest sliding window, or the longest trials "
                                                       "(PyHab setCritType First, Peak, Max; default first)."),
        hab_max_trials: int | None = typer.Option(None, "--hab-max-trials", min=2, max=100, show_default=False,  # noqa: UP007
                                                  help="Most habituation trials per pair (PyHab maxHabTrials; default 14)."),
        hab_recovery: bool | None = typer.Option(None, "--recovery/--no-recovery", show_default=False,  # noqa: UP007
                                                 help="A recovery trial after each pair's test trials (default off)."),
        lab: str = typer.Option("", "--lab", show_default=True, help="Lab id written into every row (editable in the form)."),
        practice_trials: int = typer.Option(2, "--practice-trials", min=1, max=50, show_default=True,
                                            help="Trials of order 1 that practice mode plays (nothing is saved)."),
        ratings: bool = typer.Option(False, "--ratings", help="An adult surprise-rating study instead (AGENT's: each pair's "
                                     "familiarization videos, one test video, a 0-100 slider); the timing options do not apply."),
        raters: int = typer.Option(40, "--raters", min=2, max=10000, show_default=True,
                                   help="With --ratings: raters' plans written into the study (rater numbers 1..N)."),
        seed: int = typer.Option(0, "--seed", min=0, show_default=True,
                                 help="With --ratings: seed of the raters' plans (which outcome of each pair, in which order)."),
        force: bool = typer.Option(False, "--force", help="Replace an --out folder that holds something other than a study."),
    ) -> None:
        """Write a browser looking-time experiment (works from file://) for a set's presentation orders
        (with --ratings, an adult surprise-rating study)."""
        from bib.experiment import build_experiment, study_criteria

        if ratings:
            from bib.experiment.ratings import build_rating_study

            timing_given = [lookaway, max_trial, min_on, min_trial, play_through, measure_from, habituation, hab_window,
                            hab_ratio, hab_basis, hab_max_trials, hab_recovery]
            if any(v is not None for v in timing_given) or lab or practice_trials != 2:
                raise BibInputError("--ratings: the looking-time options (--lookaway, --habituation, --lab, --practice-trials, ...) "
                                    "do not apply to a rating study")
            command = command_line("experiment", [stimuli], {"--ratings": True, "--raters": raters, "--seed": seed, "--out": out,
                                                             "--force": force}, {"--raters": 40, "--seed": 0, "--force": False})
            made = build_rating_study(stimuli, out, command=command, seed=seed, raters=raters, force=force)
            typer.echo(f"{made.out}/ratings.html: {made.n_pairs} pairs, plans for {made.n_raters} raters, "
                       f"{made.n_videos} videos; open it in a browser")
            return
        timing = {"lookaway": lookaway, "max_trial": max_trial, "min_on": min_on, "min_trial": min_trial,
                  "play_through": play_through, "measure_from": value(measure_from), "habituation": habituation,
                  "hab_window": hab_window, "hab_ratio": hab_ratio, "hab_basis": value(hab_basis),
                  "hab_max_trials": hab_max_trials, "hab_recovery": hab_recovery}
        switches = {"play_through": "play-through", "habituation": "habituation", "hab_recovery": "recovery"}
        criteria = study_criteria(stimuli, **timing)
        options = {f"--{k.replace('_', '-')}": v for k, v in timing.items() if v is not None and k not in switches}
        for key, flag in switches.items():
            if timing[key] is not None:
                options[f"--{flag}" if timing[key] else f"--no-{flag}"] = True
        command = command_line("experiment", [stimuli], {"--out": out, **options, "--lab": lab,
                                                         "--practice-trials": practice_trials, "--force": force},
                               {"--lab": "", "--practice-trials": 2, "--force": False})
        summary = build_experiment(stimuli, out, criteria, command=command,
                                   lab=lab, practice_trials=practice_trials, force=force)
        typer.echo(f"{summary.out}/index.html: {summary.n_orders} orders of {summary.n_trials} trials, "
                   f"{summary.n_videos} videos; open it in a browser")
