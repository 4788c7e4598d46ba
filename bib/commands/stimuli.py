"""Stimulus commands: generate, render, validate, demo."""

from __future__ import annotations

from pathlib import Path

import typer

from bib.commands._common import CRF, FORCE, PRESET, SCHEDULER, WORKERS, Codec, Preset, out_option, value
from bib.errors import BibInputError


def register(app: typer.Typer) -> None:
    """Add the stimulus commands to ``app``."""

    @app.command()
    def generate(
        spec: Path = typer.Argument(None, help="Stimulus-set spec (TOML), e.g. stimuli/bib-eval.toml, or a built-in spec's name, e.g. bib-eval (or give --task).", show_default=False),
        out: Path = out_option("manifest.csv, episodes/, videos/, spec.toml, provenance.json; rerunning the same command resumes"),
        task: str = typer.Option(None, "--task", help="Task or condition id, e.g. single-object (instead of SPEC).", show_default=False),
        n: int = typer.Option(10, "--n", min=0, help="With --task: pairs (evaluation conditions) or episodes (background tasks)."),
        seed: int = typer.Option(None, "--seed", help="Base seed (default: the spec's, or 0); the same seed gives byte-identical episodes.", show_default=False),
        secret_seed: bool = typer.Option(False, "--secret-seed", help="Draw the base seed from the operating system (128 bits) and keep it only in --out (spec.toml, provenance.json): a set no one can rebuild, for `bib blind`; a rerun into the same folder resumes with it."),
        video: bool = typer.Option(None, "--video/--no-video", help="Render one video per episode (default: the spec's render.video, or off).", show_default=False),
        per_trial: bool = typer.Option(False, "--per-trial", help="Also one video per trial (implies --video)."),
        codec: Codec = typer.Option(None, "--codec", help="h264 (MP4, browser-playable), vp9 (WebM) or mp4v (default: the spec's, or h264).", show_default=False),
        cell_px: int = typer.Option(None, "--cell-px", min=1, help="Pixels per cell (default: the spec's, or BIB's 20).", show_default=False),
        fps: int = typer.Option(None, "--fps", min=1, help="Frames per second (default: the spec's, or BIB's 25).", show_default=False),
        preset: Preset = PRESET,  # type: ignore[valid-type]
        crf: int = CRF,
        workers: int = WORKERS,
        limit: int = typer.Option(None, "--limit", min=0, help="Build at most N units of each task (to try a big spec).", show_default=False),
        scheduler: str = SCHEDULER,
        force: bool = typer.Option(False, "--force", help="Replace an --out folder that holds another set (or anything else)."),
        append: bool = typer.Option(False, "--append", help="Add this set's units to an --out folder that holds another set."),
    ) -> None:
        """Generate a stimulus set from a spec, or episodes of one task; reruns resume.

        An --out folder holding another set is refused unless --append (add to it) or --force
        (replace it). The spec is checked before any episode is written.
        """
        from bib.parallel import check_scheduler
        from bib.render.video import check_video
        from bib.stimuli.build import build_spec, check_build_space, check_spec, generate_job
        from bib.stimuli.spec import load_spec, override, task_spec

        if (spec is None) == (task is None):
            raise BibInputError("generate needs exactly one of SPEC or --task ID")
        if force and append:
            raise BibInputError("give at most one of --force and --append")
        if secret_seed and seed is not None:
            raise BibInputError("give at most one of --seed and --secret-seed")
        check_scheduler(scheduler)  # before anything is written
        base = load_spec(spec) if spec is not None else task_spec(task, n)
        resumed = False
        if secret_seed:
            from bib.stimuli.origin import with_secret_seed

            base, resumed = with_secret_seed(base, out, force=force)
        trials = per_trial and video is not False
        resolved = override(
            base, str(spec or "--task"), seed=seed, cell_px=cell_px, fps=fps, codec=value(codec), preset=value(preset), crf=crf,
            per_trial=True if trials else None, video=True if trials else None,
        )
        folder = generate_job(resolved, out, force=force, append=append, secret=secret_seed)
        check_spec(resolved)
        if resolved.render.video if video is None else video:
            check_video(resolved.render.codec, resolved.render.settings())
        check_build_space(resolved, out, video=video, limit=limit)  # before the folder is made
        one_set = len(folder.job["sets"]) == 1  # type: ignore[arg-type]
        with folder:
            if not one_set:  # spec.toml would name one of several sets
                (out / "spec.toml").unlink(missing_ok=True)
            summary = build_spec(resolved, out, video=video, workers=workers, scheduler=scheduler, limit=limit,
                                 record=spec is not None and one_set, checked=True)
        typer.echo(
            f"{summary.episodes} episodes in {summary.out} "
            f"({summary.built} units generated, {summary.kept} kept from an earlier run)"
        )
        if secret_seed:
            from bib.stimuli.origin import secret_note

            typer.echo(secret_note(out, resumed))

    @app.command()
    def render(
        episode: Path = typer.Argument(..., help="Episode JSON file."),
        out: Path = out_option("<episode id>.mp4 (or .webm), trials/ with --per-trial, contact_sheet.png with --contact-sheet, provenance.json"),
        codec: Codec | None = typer.Option(None, "--codec", help="h264 (MP4, browser-playable), vp9 (WebM) or mp4v (MP4) "  # noqa: UP007
                                           "(default: the set's, or h264).", show_default=False),
        cell_px: int | None = typer.Option(None, "--cell-px", min=1, help="Pixels per cell (default: the set's, or 20).",  # noqa: UP007
                                           show_default=False),
        fps: int | None = typer.Option(None, "--fps", min=1, help="Frames per second (default: the set's, or 25).",  # noqa: UP007
                                       show_default=False),
        preset: Preset = PRESET,  # type: ignore[valid-type]
        crf: int = CRF,
        per_trial: bool = typer.Option(False, "--per-trial", help="Also write one video per trial into trials/."),
        sheet: bool = typer.Option(False, "--contact-sheet", help="Also write contact_sheet.png of the test trial."),
        force: bool = FORCE,
    ) -> None:
        """Render one episode to a video (the episode is checked against the schema and the world rules).

        An episode of a set (SET/episodes/<id>.json) is rendered with the set's render settings and
        codec (its render.json, else its spec.toml); --cell-px, --fps, --codec, --preset and --crf
        override them."""
        import dataclasses

        from bib.guard import output_path
        from bib.io import OutputFolder
        from bib.render.frames import RenderSettings
        from bib.render.video import CODECS, check_video, contact_sheet, render_episode
        from bib.stimuli.check import load_checked
        from bib.stimuli.render_stamp import set_render_settings

        ep = load_checked(episode)
        found = set_render_settings(episode, ep.id)
        base, base_codec, source = found if found is not None else (RenderSettings(), "h264", None)
        given = {k: v for k, v in (("cell_px", cell_px), ("fps", fps), ("preset", value(preset)), ("crf", crf)) if v is not None}
        settings = dataclasses.replace(base, **given)
        chosen = value(codec) or base_codec
        check_video(chosen, settings)
        try:  # a grid too big for a video is refused before the folder is made
            settings.frame_size(ep.width, ep.height)
        except BibInputError as exc:
            raise BibInputError(f"{episode}: {exc}") from None
        folder = OutputFolder(out, {"command": "render", "episode": episode, "codec": chosen, "cell_px": settings.cell_px,
                                    "fps": settings.fps, "preset": settings.preset, "crf": settings.crf, "per_trial": per_trial,
                                    "contact_sheet": sheet, "settings_from": str(source) if source else None}, force=force)
        name = f"{ep.id}{CODECS[chosen]}"
        with folder as tmp:
            frames = render_episode(ep, output_path(tmp, name), settings, chosen, tmp / "trials" if per_trial else None)
            if sheet:
                contact_sheet(ep.test, tmp / "contact_sheet.png", settings)
        width, height = settings.canvas or ("grid", "grid")
        origin = f"the set's render settings ({source})" if source else "the default render settings"
        typer.echo(f"{out / name}: {frames} frames at {settings.fps} fps ({frames / settings.fps:.1f} s), "
                   + (f"{width} x {height}" if settings.canvas else f"{settings.cell_px} px cells"))
        typer.echo(f"  rendered with {origin}" + (f", overridden: {', '.join(f'{k} {v}' for k, v in given.items())}" if given else "")
                   + (f"; per-trial videos in {out / 'trials'}" if per_trial else "")
                   + (f"; contact sheet {out / 'contact_sheet.png'}" if sheet else ""))

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
    def demo(
        out: Path = out_option("one subfolder per step (stimuli/, analysis/, observers/, ...) and provenance.json", Path("out/demo")),
        force: bool = FORCE,
    ) -> None:
        """Run every step of the demo on small embedded defaults."""
        from bib.demo import run_demo
        from bib.io import OutputFolder

        with OutputFolder(out, {"command": "demo"}, force=force, resume=True) as folder:
            run_demo(folder)
