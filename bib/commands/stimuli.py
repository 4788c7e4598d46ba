"""Stimulus commands: generate, render, validate, demo."""

from __future__ import annotations

from pathlib import Path

import typer

from bib.commands._common import WORKERS
from bib.errors import BibInputError


def _settings(cell_px: int, fps: int):
    from bib.render.frames import RenderSettings

    return RenderSettings(cell_px=cell_px, fps=fps)


def register(app: typer.Typer) -> None:
    """Add the stimulus commands to ``app``."""

    @app.command()
    def generate(
        out: Path = typer.Option(..., "--out", help="Output folder (manifest.csv, episodes/, videos/)."),
        spec: Path = typer.Option(None, "--spec", help="Stimulus-set spec (TOML), e.g. stimuli/bib-eval.toml."),
        task: str = typer.Option(None, "--task", help="Task or condition id, e.g. single-object (instead of --spec)."),
        n: int = typer.Option(10, "--n", min=0, help="With --task: pairs (evaluation conditions) or episodes (background tasks)."),
        seed: int = typer.Option(None, "--seed", help="Base seed (default: the spec's, or 0); the same seed gives byte-identical episodes."),
        video: bool = typer.Option(None, "--video/--no-video", help="Render one video per episode (default: the spec's render.video, or off)."),
        per_trial: bool = typer.Option(False, "--per-trial", help="Also one video per trial (implies --video)."),
        codec: str = typer.Option(None, "--codec", help="h264 (MP4, browser-playable), vp9 (WebM) or mp4v (default: the spec's, or h264)."),
        cell_px: int = typer.Option(None, "--cell-px", help="Pixels per cell (default: the spec's, or BIB's 20)."),
        fps: int = typer.Option(None, "--fps", help="Frames per second (default: the spec's, or BIB's 25)."),
        workers: int = typer.Option(1, "--workers", min=1, help="Worker processes."),
        limit: int = typer.Option(None, "--limit", min=0, help="Build at most N units of each task (to try a big spec)."),
        scheduler: str = typer.Option(None, "--scheduler", help="Dask scheduler tcp://HOST:PORT instead of local processes."),
    ) -> None:
        """Generate a stimulus set from a spec, or episodes of one task; reruns resume."""
        from bib.stimuli.build import build_spec
        from bib.stimuli.spec import load_spec, override, task_spec

        if (spec is None) == (task is None):
            raise BibInputError("generate needs exactly one of --spec FILE or --task ID")
        base = load_spec(spec) if spec is not None else task_spec(task, n)
        trials = per_trial and video is not False
        resolved = override(
            base, str(spec or "--task"), seed=seed, cell_px=cell_px, fps=fps, codec=codec,
            per_trial=True if trials else None, video=True if trials else None,
        )
        summary = build_spec(resolved, out, video=video, workers=workers, scheduler=scheduler, limit=limit,
                             record=spec is not None)
        typer.echo(
            f"{summary.episodes} episodes in {summary.out} "
            f"({summary.built} units generated, {summary.kept} kept from an earlier run)"
        )

    @app.command()
    def render(
        episode: Path = typer.Argument(..., help="Episode JSON file."),
        out: Path = typer.Option(..., "--out", help="Video file (.mp4 for H.264, .webm for VP9)."),
        codec: str = typer.Option(None, "--codec", help="h264, vp9 or mp4v (default: by extension)."),
        cell_px: int = typer.Option(20, "--cell-px", help="Pixels per cell."),
        fps: int = typer.Option(25, "--fps", help="Frames per second."),
        per_trial_dir: Path = typer.Option(None, "--per-trial-dir", help="Also write one video per trial here."),
        sheet: Path = typer.Option(None, "--contact-sheet", help="Also write a PNG contact sheet of the test trial."),
    ) -> None:
        """Render one episode to a video."""
        from bib.episode import load_episode
        from bib.io import ensure_dir
        from bib.render.video import contact_sheet, render_episode
        from bib.tasks import validate_episode

        ep = load_episode(episode)
        problems = validate_episode(ep)
        if problems:
            raise BibInputError(f"{episode}: {problems[0]}")
        ensure_dir(out.parent if str(out.parent) else Path("."))
        settings = _settings(cell_px, fps)
        frames = render_episode(ep, out, settings, codec, per_trial_dir)
        typer.echo(f"{out}: {frames} frames at {fps} fps")
        if sheet is not None:
            contact_sheet(ep.test, sheet, settings)
            typer.echo(f"{sheet}: contact sheet of the test trial")

    @app.command()
    def validate(
        path: Path = typer.Argument(..., help="A set (folder with manifest.csv), a folder searched recursively, or one episode file."),
        workers: int = WORKERS,
        quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only problems."),
    ) -> None:
        """Check a set or episodes: manifest vs files, complete pairs and twins, world and condition rules.

        A set (a folder with manifest.csv) is checked against its manifest: every row's file present
        with its hash, no file the manifest does not name (e.g. a unit an interrupted run left
        half-built), every pair complete, every twin naming a pair that names it back. Every episode
        is checked against the schema, the world rules, its condition's rule and the pair rule.
        Exit code 0 when all is valid, 1 when anything is not (each problem is printed on one line
        with its file, episode, trial, step and cell where known).
        """
        from bib.stimuli.check import check_path

        report = check_path(path, workers=workers, progress=not quiet)
        for line in report.problems:
            typer.echo(line)
        if not quiet or report.problems:
            typer.echo(f"{report.n_valid} valid, {report.n_invalid} invalid of {report.n_files} episode files"
                       + (f" in {report.n_sets} set{'s' * (report.n_sets != 1)}" if report.n_sets else "")
                       + (f"; {len(report.problems)} problems" if report.problems else ""))
        raise typer.Exit(1 if report.problems else 0)

    @app.command()
    def demo() -> None:
        """Run every step of the demo on small embedded defaults (outputs under out/demo/)."""
        from bib.demo import run_demo

        run_demo()
