"""Analysis commands: ``bib analyze``, ``bib compare``, ``bib reliability``, ``bib power`` and ``bib power simulate``."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from bib.commands._common import FORCE, WORKERS, open_interval, optional_out, out_option, value
from bib.errors import BibInputError

SIMULATED = "looking_times.csv"
"""The file `bib power simulate` writes into its --out folder."""

def _format_choices() -> type[Enum]:
    from bib.analysis.formats import IMPORTERS

    return IMPORTERS.choices("Format")


Format = _format_choices()
"""Looking-time file formats for ``--format``: the names of :data:`bib.analysis.formats.IMPORTERS`."""


class Scale(str, Enum):
    """The analysis scale: log seconds or raw seconds."""

    log = "log"
    raw = "raw"


FormatOpt = typer.Option(None, "--format", help="The file's format, csv (canonical or mapped by the spec), pyhab, ... (default: the spec's).", show_default=False)
SpecOpt = typer.Option(None, "--spec", help="Analysis spec (TOML), e.g. analysis/infant-pilot.toml (default: the built-in one).", show_default=False)
ScaleOpt = typer.Option(None, "--scale", help="log or raw seconds (default: the spec's, or log).", show_default=False)


class Test(str, Enum):
    """The test of ``bib power``: Satterthwaite t or Wald z."""

    t = "t"
    z = "z"


def _load(data: list[Path], fmt: Format | None, spec_path: Path | None, scale: Scale | None):  # noqa: ANN202
    from bib.analysis.analyze import analyze
    from bib.analysis.importers import read_looking_times
    from bib.analysis.spec import load_spec

    spec = load_spec(spec_path)
    return analyze(read_looking_times(data, value(fmt), spec), spec, value(scale)), spec


def register(app: typer.Typer) -> None:
    """Add ``analyze``, ``compare`` and the ``power`` group to ``app``."""

    @app.command()
    def analyze(
        data: list[Path] = typer.Argument(..., help="Looking-time data: CSV files or a folder of session files (one header, "
                                                  "one file per participant), or PyHab files or folders."),
        fmt: Format | None = FormatOpt,  # noqa: UP007 (typer needs Optional)
        spec: Path | None = SpecOpt,  # noqa: UP007
        scale: Scale | None = ScaleOpt,  # noqa: UP007
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
        out: Path | None = optional_out("report.json, report.md, exclusions.csv, paired-<task>.png/.svg and provenance.json"),  # noqa: UP007
        force: bool = FORCE,
    ) -> None:
        """Row filter, exclusions and per-task mixed models (lme4-style formula; default
        log_lt ~ outcome + (1 | participant) [+ (1 | item)]), Satterthwaite df, the model kept."""
        folder = None
        if out is not None:
            from bib.io import OutputFolder

            folder = OutputFolder(out, {"command": "analyze", "data": data, "spec": spec, "format": value(fmt),
                                        "scale": value(scale)}, force=force)
        result, _ = _load(data, fmt, spec, scale)
        if folder is not None:
            with folder as tmp:
                result.write(tmp)
        typer.echo(result.to_json_text().rstrip() if as_json else result.to_markdown())

    @app.command()
    def compare(
        inputs: list[Path] = typer.Argument(..., metavar="[INFANTS] EPISODES RESULTS...",
                                            help="INFANTS: looking-time data as for bib analyze, a file or a folder of session "
                                                 "files (left out with --ratings); EPISODES: the episode set the models scored "
                                                 "(a folder with manifest.csv or episode JSON files); RESULTS: each model's "
                                                 "`bib score` folder (named by the folder) or results CSV episode_id,surprise "
                                                 "(named by the file stem)."),
        ratings: Path | None = typer.Option(None, "--ratings", show_default=False,  # noqa: UP007
                                            help="A folder of adult surprise-rating sessions (NAME_ID_ratings.csv, from `bib "
                                                 "experiment SET --ratings`): report per-trial agreement of each model with the "
                                                 "mean rating instead of the infant comparison; then give EPISODES RESULTS..."),
        boot: int = typer.Option(2000, "--boot", min=100, max=100000, show_default=True,
                                 help="With --ratings: bootstrap resamples per correlation CI."),
        splits: int = typer.Option(200, "--splits", min=10, max=100000, show_default=True,
                                   help="With --ratings: random rater splits for the split-half reliability."),
        seed: int = typer.Option(0, "--seed", min=0, show_default=True, help="With --ratings: seed of the bootstrap and the splits."),
        fmt: Format | None = FormatOpt,  # noqa: UP007
        spec: Path | None = SpecOpt,  # noqa: UP007
        scale: Scale | None = ScaleOpt,  # noqa: UP007
        as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
        out: Path | None = optional_out("compare.json, compare.csv, forest.{png,svg} (with --ratings: ratings.json, "  # noqa: UP007
                                        "ratings.md) and provenance.json"),
        force: bool = FORCE,
    ) -> None:
        """Models vs infants: z-scored responses, response_z ~ outcome * observer + (1 | unit) per task;
        with --ratings, models vs adults' surprise ratings per trial (Pearson, Spearman, pairwise accuracy, reliability)."""
        from bib.analysis import compare as cmp
        from bib.evaluation import RESULTS, results_file

        least = 2 if ratings is not None else 3
        if len(inputs) < least:
            usage = "EPISODES RESULTS... with --ratings" if ratings is not None else "INFANTS EPISODES RESULTS..."
            raise BibInputError(f"compare: give {usage} ({len(inputs)} path{'s' if len(inputs) != 1 else ''} given)")
        if ratings is not None and (fmt is not None or spec is not None or scale is not None):
            raise BibInputError("compare: --format, --spec and --scale read infant data; with --ratings give EPISODES RESULTS... only")
        infants = None if ratings is not None else inputs[0]
        episodes, results = (inputs[0], inputs[1:]) if ratings is not None else (inputs[1], inputs[2:])
        files = [results_file(r) for r in results]
        names = [f.parent.name if f.name == RESULTS and Path(r).is_dir() else f.stem for f, r in zip(files, results)]
        clash = sorted({n for n in names if names.count(n) > 1 or n == cmp.INFANTS})
        if clash:
            raise BibInputError(f"RESULTS: model names (folder names or file stems) must be unique and not {cmp.INFANTS!r}: {', '.join(clash)}")
        folder = None
        if out is not None:
            from bib.io import OutputFolder

            job = ({"command": "compare", "ratings": ratings, "episodes": episodes, "results": files, "boot": boot,
                    "splits": splits, "seed": seed} if ratings is not None else
                   {"command": "compare", "infants": infants, "episodes": episodes, "results": files,
                    "spec": spec, "format": value(fmt), "scale": value(scale)})
            folder = OutputFolder(out, job, force=force)
        if ratings is not None:
            from bib.analysis import ratings as rt

            index = cmp.read_episode_index(episodes)
            table = rt.read_ratings(ratings, index)
            models = {n: dict(zip(*cmp.read_model_scores(f, index))) for f, n in zip(files, names)}
            agreement = rt.RatingAgreement(rt.agreement(table, index, models, n_boot=boot, n_splits=splits, seed=seed))
            if folder is not None:
                with folder as tmp:
                    agreement.save(tmp)
            typer.echo(agreement.to_json_text().rstrip() if as_json else agreement.to_markdown())
            return
        analysis, spec_obj = _load([infants], fmt, spec, scale)
        index = cmp.read_episode_index(episodes)
        result = cmp.Comparison(cmp.compare(analysis.data, [cmp.read_results(f, index, n) for f, n in zip(files, names)],
                                            spec_obj.alpha))
        if folder is not None:
            from bib.analysis.plots import forest_plot
            from bib.io import atomic_write_text

            with folder as tmp:
                forest_plot(result.result, tmp / "forest")
                cmp.write_table(result.result, tmp / "compare.csv")
                atomic_write_text(tmp / "compare.json", result.to_json_text())
        typer.echo(result.to_json_text().rstrip() if as_json else result.to_markdown())

    @app.command("simulate-ratings")
    def simulate_ratings(
        episodes: Path = typer.Argument(..., help="The episode set to rate: a folder with manifest.csv or episode JSON files."),
        out: Path = out_option("One SYNTHETIC rating session per rater, NAME_rNN_ratings.csv (synthetic = true on every row), "
                               "and provenance.json"),
        raters: int = typer.Option(20, "--raters", min=2, max=10000, show_default=True, help="Raters (one session file each)."),
        seed: int = typer.Option(0, "--seed", min=0, show_default=True, help="Seed of the raters' plans and their ratings."),
        name: str = typer.Option("", "--name", show_default=False, help="The study name in the file names (default: the set folder's name)."),
        force: bool = FORCE,
    ) -> None:
        """SYNTHETIC adult surprise ratings of a set's pairs (AGENT's design: each rater sees one outcome of every pair)."""
        from bib.analysis import ratings as rt
        from bib.analysis.compare import read_episode_index
        from bib.io import OutputFolder, atomic_write_text, frame_csv

        folder = OutputFolder(out, {"command": "simulate-ratings", "episodes": episodes, "raters": raters, "seed": seed,
                                    "name": name}, force=force)
        index = read_episode_index(episodes)
        sessions = rt.simulate_ratings(index, raters, seed, name or Path(episodes).resolve().name)
        with folder as tmp:
            for file, rows in sessions.items():
                atomic_write_text(tmp / file, frame_csv(rows, index=False, lineterminator="\n"))
        typer.echo(f"{out}: {len(sessions)} SYNTHETIC rating sessions of {rows['pair_id'].nunique()} pairs")

    @app.command()
    def reliability(
        coder_a: Path = typer.Argument(..., help="The first coder's trials CSV (bib experiment's NAME_ID_trials.csv)."),
        coder_b: Path = typer.Argument(..., help="The second coder's trials CSV of the same session(s) (coding mode)."),
        threshold: float = typer.Option(1.0, "--threshold", min=0.0, show_default=True,
                                        help="Seconds: trials whose looking times differ by more are listed."),
        phase: str | None = typer.Option(None, "--phase", show_default=False,  # noqa: UP007
                                         help="Only the trials of this phase: test or familiarization (default: all)."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
        out: Path | None = optional_out("reliability.json, reliability.md and provenance.json"),  # noqa: UP007
        force: bool = FORCE,
    ) -> None:
        """Inter-coder reliability: per-trial agreement, ICC(2,1) and ICC(3,1) with confidence intervals, Pearson r of looking times."""
        from bib.analysis.reliability import reliability as compute

        folder = None
        if out is not None:
            from bib.io import OutputFolder

            folder = OutputFolder(out, {"command": "reliability", "coder_a": coder_a, "coder_b": coder_b,
                                        "threshold": threshold, "phase": phase}, force=force)
        result = compute(coder_a, coder_b, threshold, phase)
        if folder is not None:
            with folder as tmp:
                result.save(tmp)
        typer.echo(result.to_json_text().rstrip() if as_json else result.to_markdown())

    power_app = typer.Typer(help="Power of a VOE study simulated from the published pilot; `simulate` writes the example data.",
                            invoke_without_command=True, no_args_is_help=False)

    @power_app.callback()
    def power(
        ctx: typer.Context,
        task: str | None = typer.Option(None, "--task", help="A pilot task: preference or efficiency-path (those of --pilot).", show_default=False),  # noqa: UP007
        n: list[int] = typer.Option([16, 24, 32, 48], "--n", min=2, help="Numbers of infants, repeatable: --n 16 --n 24."),
        sims: int = typer.Option(1000, "--sims", min=1, help="Simulated studies per N."),
        effect: str = typer.Option("pilot", "--effect", help="'pilot' (as published) or an effect in seconds."),
        seed: int = typer.Option(0, "--seed", help="Base seed of the simulated studies."),
        scale: Scale = typer.Option(Scale.log, "--scale", help="Analysis scale: log or raw seconds."),
        alpha: float = typer.Option(0.05, "--alpha", callback=open_interval(0, 1), help="Significance level, in (0, 1)."),
        workers: int = WORKERS,
        test: Test = typer.Option(Test.t, "--test",  # noqa: B008
                                  help="t: Satterthwaite t as bib analyze reports; z: Wald z (bib power before issue 14)."),
        pilot: Path | None = typer.Option(None, "--pilot", help="Pilot summaries CSV (default: the published data/published/infant_pilot.csv).", show_default=False),  # noqa: UP007
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    ) -> None:
        """Monte Carlo power (with its MC error) of the LMM analysis at each N."""
        if ctx.invoked_subcommand is not None:
            return
        if task is None:
            raise BibInputError("bib power: --task is required (or use `bib power simulate`)")
        from bib.analysis.pilot import pilot_task
        from bib.analysis.power import Power, parse_effect, simulate_studies, summarize_power

        p = pilot_task(task, pilot)
        eff = parse_effect(effect)
        studies = simulate_studies(p, list(n), sims, seed, effect_s=eff, scale=scale.value,
                                   alpha=alpha, workers=workers, progress=True, test=test.value)
        result = Power(p, summarize_power(studies, alpha), eff, scale.value, alpha, seed, test.value)
        typer.echo(result.to_json_text().rstrip() if as_json else result.to_markdown())

    @power_app.command("simulate")
    def simulate(
        out: Path = out_option(f"{SIMULATED} (synthetic per-infant looking times in bib analyze's columns) and provenance.json"),
        seed: int = typer.Option(2022, "--seed", help="Seed of the synthetic infants (2022 made data/looking_times/example.csv)."),
        pilot: Path | None = typer.Option(None, "--pilot", help="Pilot summaries CSV (default: the published one).", show_default=False),  # noqa: UP007
        force: bool = FORCE,
    ) -> None:
        """Write a synthetic per-infant data set drawn from the pilot summaries (flagged synthetic)."""
        from bib.analysis.example import simulate_example
        from bib.analysis.pilot import load_pilot
        from bib.io import OutputFolder, atomic_write_text, frame_csv

        folder = OutputFolder(out, {"command": "power simulate", "seed": seed, "pilot": pilot}, force=force)
        df = simulate_example(load_pilot(pilot), seed)
        with folder as tmp:
            atomic_write_text(tmp / SIMULATED, frame_csv(df, index=False, lineterminator="\n"))
        typer.echo(f"wrote {out / SIMULATED}: {df['participant_id'].nunique()} synthetic infants, {len(df)} trials (seed {seed})")

    app.add_typer(power_app, name="power")
