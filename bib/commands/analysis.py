"""Analysis commands: ``bib analyze``, ``bib compare``, ``bib power`` and ``bib power simulate``."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path

import typer

from bib.errors import BibInputError

FormatOpt = typer.Option(None, "--format", help="csv (canonical or mapped by the spec) or pyhab; default: the spec's")
SpecOpt = typer.Option(None, "--spec", help="analysis spec (TOML), e.g. analysis/infant-pilot.toml")
ScaleOpt = typer.Option(None, "--scale", help="log (default) or raw seconds; overrides the spec")


class Test(str, Enum):
    """The test of ``bib power``: Satterthwaite t or Wald z."""

    t = "t"
    z = "z"


def _scale(value: str | None) -> str | None:
    if value not in (None, "log", "raw"):
        raise BibInputError(f"--scale must be log or raw, got {value!r}")
    return value


def _load(data: Path, fmt: str | None, spec_path: Path | None, scale: str | None):  # noqa: ANN202
    from bib.analysis.analyze import analyze
    from bib.analysis.importers import read_looking_times
    from bib.analysis.spec import load_spec

    spec = load_spec(spec_path)
    return analyze(read_looking_times(data, fmt, spec), spec, _scale(scale)), spec


def _dump(obj: object) -> str:
    from bib.analysis.analyze import jsonable

    return json.dumps(jsonable(obj), indent=2)


def register(app: typer.Typer) -> None:
    """Add ``analyze``, ``compare`` and the ``power`` group to ``app``."""

    @app.command()
    def analyze(
        data: Path = typer.Argument(..., help="looking-time data: a CSV, or a PyHab file or folder"),
        fmt: str | None = FormatOpt,  # noqa: UP007 (typer needs Optional)
        spec: Path | None = SpecOpt,  # noqa: UP007
        scale: str | None = ScaleOpt,  # noqa: UP007
        as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
        out: Path | None = typer.Option(  # noqa: UP007
            None, "--out", help="output folder: report.json, report.md, exclusions.csv, paired-<task>.png/.svg, provenance.json"),
        force: bool = typer.Option(False, "--force", help="replace an --out folder holding another job's output"),
        plots: Path | None = typer.Option(None, "--plots", help="write only the paired plots (PNG, SVG) here"),  # noqa: UP007
    ) -> None:
        """Row filter, exclusions and per-task mixed models (lme4-style formula; default
        log_lt ~ outcome + (1 | participant) [+ (1 | item)]), Satterthwaite df, the model kept."""
        from bib.analysis.analyze import format_report

        folder = None
        if out is not None:
            import os

            from bib.io import OutputFolder

            folder = OutputFolder(out, {"command": "analyze", "data": os.path.abspath(data),
                                        "spec": os.path.abspath(spec) if spec else None, "format": fmt, "scale": scale},
                                  force=force)
        result, spec_obj = _load(data, fmt, spec, scale)
        if folder is not None:
            with folder as tmp:
                result.write(tmp)
        if plots is not None:
            from bib.analysis.plots import analysis_plots

            analysis_plots(result.data, result.report, scale or spec_obj.scale, plots)
        typer.echo(_dump(result.report) if as_json else format_report(result.report))

    @app.command()
    def compare(
        infants: Path = typer.Option(..., "--infants", help="infant looking-time data (as for bib analyze)"),
        results: list[Path] = typer.Option(..., "--results", help="a model's results CSV (episode_id,surprise); repeat per model"),
        episodes: Path = typer.Option(..., "--episodes", help="episode set: a folder with manifest.csv or episode JSON files"),
        fmt: str | None = FormatOpt,  # noqa: UP007
        spec: Path | None = SpecOpt,  # noqa: UP007
        scale: str | None = ScaleOpt,  # noqa: UP007
        as_json: bool = typer.Option(False, "--json", help="print the comparison as JSON"),
        plots: Path | None = typer.Option(None, "--plots", help="write forest.{png,svg} and compare.csv here"),  # noqa: UP007
    ) -> None:
        """Models vs infants: z-scored responses, response_z ~ outcome * observer + (1 | unit) per task."""
        from bib.analysis import compare as cmp

        analysis, spec_obj = _load(infants, fmt, spec, scale)
        index = cmp.read_episode_index(episodes)
        names = [r.stem for r in results]
        clash = sorted({n for n in names if names.count(n) > 1 or n == cmp.INFANTS})
        if clash:
            raise BibInputError(f"--results: model names (file stems) must be unique and not {cmp.INFANTS!r}: {', '.join(clash)}")
        result = cmp.Comparison(cmp.compare(analysis.data, [cmp.read_results(r, index) for r in results], spec_obj.alpha))
        if plots is not None:
            from bib.analysis.plots import forest_plot
            from bib.io import ensure_dir

            ensure_dir(plots)
            forest_plot(result.result, plots / "forest")
            cmp.write_table(result.result, plots / "compare.csv")
        typer.echo(result.to_json_text().rstrip() if as_json else result.to_markdown())

    power_app = typer.Typer(help="Power of a VOE study simulated from the published pilot; `simulate` writes the example data.",
                            invoke_without_command=True, no_args_is_help=False)

    @power_app.callback()
    def power(
        ctx: typer.Context,
        task: str | None = typer.Option(None, "--task", help="a pilot task: preference or efficiency-path"),  # noqa: UP007
        n: str = typer.Option("16,24,32,48", "--n", help="comma-separated numbers of infants"),
        sims: int = typer.Option(1000, "--sims", help="simulated studies per N"),
        effect: str = typer.Option("pilot", "--effect", help="'pilot' (as published) or an effect in seconds"),
        seed: int = typer.Option(0, "--seed"),
        scale: str = typer.Option("log", "--scale", help="analysis scale: log or raw"),
        alpha: float = typer.Option(0.05, "--alpha"),
        workers: int = typer.Option(1, "--workers", help="worker processes"),
        test: Test = typer.Option(Test.t, "--test", show_default=True,  # noqa: B008
                                  help="t: Satterthwaite t as bib analyze reports; z: Wald z (bib power before issue 14)"),
        pilot: Path | None = typer.Option(None, "--pilot", help="pilot summaries CSV (default data/published/infant_pilot.csv)"),  # noqa: UP007
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Monte Carlo power (with its MC error) of the LMM analysis at each N."""
        if ctx.invoked_subcommand is not None:
            return
        if task is None:
            raise BibInputError("bib power: --task is required (or use `bib power simulate`)")
        from bib.analysis.pilot import pilot_task
        from bib.analysis.power import Power, parse_effect, parse_ns, simulate_studies, summarize_power

        p = pilot_task(task, pilot)
        eff = parse_effect(effect)
        studies = simulate_studies(p, parse_ns(n), sims, seed, effect_s=eff, scale=_scale(scale) or "log",
                                   alpha=alpha, workers=workers, progress=True, test=test.value)
        result = Power(p, summarize_power(studies, alpha), eff, scale, alpha, seed, test.value)
        typer.echo(result.to_json_text().rstrip() if as_json else result.to_markdown())

    @power_app.command("simulate")
    def simulate(
        out: Path = typer.Option(Path("data/looking_times/example.csv"), "--out", help="CSV to write"),
        seed: int = typer.Option(2022, "--seed"),
        pilot: Path | None = typer.Option(None, "--pilot", help="pilot summaries CSV"),  # noqa: UP007
    ) -> None:
        """Write a synthetic per-infant data set drawn from the pilot summaries (flagged synthetic)."""
        from bib.analysis.example import simulate_example
        from bib.analysis.pilot import load_pilot
        from bib.io import atomic_write_text, ensure_dir

        df = simulate_example(load_pilot(pilot), seed)
        ensure_dir(out.parent)
        atomic_write_text(out, df.to_csv(index=False, lineterminator="\n"))
        typer.echo(f"wrote {out}: {df['participant_id'].nunique()} synthetic infants, {len(df)} trials (seed {seed})")

    app.add_typer(power_app, name="power")
