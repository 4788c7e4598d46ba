"""Observer commands: score (episodes -> surprise), blind (a submission kit and its key), evaluate (pairwise VOE
accuracy, against a set or a key), audit (shortcut and leak batteries), leaderboard."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from bib.commands._common import (
    DEVICE,
    FORCE,
    JSON,
    OUT_PATH,
    SCHEDULER,
    WORKERS,
    checkpoint_file,
    optional_out,
    out_option,
)
from bib.errors import BibInputError
from bib.evaluation import RESULTS, results_file
from bib.observers import OBSERVERS


class Readout(str, Enum):
    max = "max"
    mean = "mean"


class Measure(str, Enum):
    evidence = "evidence"
    excess = "excess"


class KitFormat(str, Enum):
    episodes = "episodes"
    bib_json = "bib-json"


def register(app: typer.Typer) -> None:
    """Add ``score``, ``blind``, ``check-submission``, ``evaluate``, ``audit`` and ``leaderboard`` to ``app``."""

    @app.command()
    def score(
        observer: str = typer.Argument(..., help=f"Observer: {', '.join(OBSERVERS)}, or your own package.module:Class."),
        episodes: Path = typer.Argument(..., help="Episode set: a folder searched recursively for episodes / manifests, or a manifest.csv."),
        out: Path = out_option("results.csv (episode_id,surprise; max readout), results.steps.parquet (per-step surprise), provenance.json"),
        checkpoint: Path = typer.Option(None, "--checkpoint", help="Trained weights of a learned observer: a `bib train` folder or its checkpoint.pt.", show_default=False),
        option: list[str] = typer.Option([], "--option", help="Observer option KEY=VALUE (JSON value), repeatable, e.g. seed=3.", show_default=False),
        workers: int = WORKERS,
        scheduler: str = SCHEDULER,
        device: str = DEVICE,
        force: bool = FORCE,
    ) -> None:
        """Score every episode with an observer: one surprise per test step.

        Every episode is checked against the world rules first (as `bib validate` does); a set with
        an invalid episode is refused.
        """
        from bib.evaluation import find_episodes
        from bib.io import OutputFolder
        from bib.observers.device import device_for
        from bib.observers.scoring import check_observer, parse_options
        from bib.observers.scoring import score as run
        from bib.parallel import check_scheduler

        check_scheduler(scheduler)
        config = parse_options(option)
        ckpt = checkpoint_file(checkpoint, "checkpoint.pt")
        dev = device_for(check_observer(observer, ckpt, config), device)
        found = find_episodes(episodes)
        folder = OutputFolder(out, {"command": "score", "observer": observer, "episodes": episodes,
                                    "checkpoint": ckpt, "options": config}, force=force)
        with folder as tmp:
            summary = run(observer, found, tmp / RESULTS, checkpoint=ckpt, config=config,
                          workers=workers, scheduler=scheduler, device=dev)
        typer.echo(summary.to_markdown())
        typer.echo(f"wrote {out}")

    @app.command()
    def blind(
        episodes: Path = typer.Argument(..., help="The VOE set to hand out: a folder searched recursively for episodes / manifests, or a manifest.csv."),
        out: Path = out_option("the kit: README.md (the files, how to score, the results formats), sample-submission/ (results.csv and results.steps.parquet, surprise 0), episodes/<id>.json (blind), kit.csv (episode_id,condition), videos/ when the set has them (.mp4 or .webm), bib-json/ with --format bib-json, each folder's files padded to one size; a new or empty folder"),
        key: Path = typer.Option(..., "--key", help="Where to write the key (a CSV for `bib evaluate KEY RESULTS`); never inside the kit.", show_default=False),
        fmt: KitFormat = typer.Option(KitFormat.episodes, "--format", help="episodes (blind bib.episode/1 files) or bib-json (also BIB's per-frame JSON)."),
        seed: int = typer.Option(None, "--seed", help="Base seed of a reproducible kit (default: a fresh random secret); the seed tells the key, keep it as secret.", show_default=False),
        force: bool = typer.Option(False, "--force", help="Replace an existing key file."),
        allow_public: bool = typer.Option(False, "--allow-public", help="Accept a set anyone can rebuild (not made with `bib generate --secret-seed`), for tutorials: the key then says 'public: scores are not blind'."),
        codabench: Path = typer.Option(None, "--codabench", help="Also write a Codabench competition bundle (a .zip: competition.yaml, the scoring program, the key as reference data, the leaderboard, a results template, the participant pages); never inside the kit.", show_default=False),
        docker_image: str = typer.Option(None, "--docker-image", help="With --codabench: the Docker image the scoring program runs in, with this bib installed from its wheel (default: bib-voe:VERSION).", show_default=False),
        as_json: bool = JSON,
    ) -> None:
        """Write a submission kit: the set's episodes as a model may see them, under opaque shuffled ids, and the key apart.

        The set must be one no one can rebuild (`bib generate SPEC --secret-seed --out SET`); any
        other is refused unless --allow-public. Score the kit with any model (`bib score OBSERVER KIT
        --out R`, or a program that writes episode_id,surprise over kit.csv's ids), check it with
        `bib check-submission KIT R`, then `bib evaluate KEY.csv R`. See docs/blind-scoring.md.
        """
        from bib.challenge.submission import write_kit_docs
        from bib.stimuli.kit import check_kit_paths, make_kit

        check_kit_paths(out, key, force)
        if docker_image is not None and codabench is None:
            raise BibInputError("--docker-image goes with --codabench BUNDLE.zip")
        if codabench is not None:
            from bib.challenge import check_bundle_path, write_codabench

            check_bundle_path(codabench, out, force)
        summary = make_kit(episodes, out, key, fmt=fmt.value, seed=seed, force=force, allow_public=allow_public,
                           extras=write_kit_docs)
        typer.echo(summary.to_json_text() if as_json else summary.to_markdown(), nl=not as_json)
        if codabench is not None:
            bundle = write_codabench(key, out, codabench, docker_image=docker_image)
            typer.echo(f"Codabench bundle in {bundle}: upload it as a competition bundle (it holds the key)", err=as_json)

    @app.command("check-submission")
    def check_submission(
        kit: Path = typer.Argument(..., help="The kit folder `bib blind` wrote (its kit.csv lists the ids).", show_default=False),
        results: Path = typer.Argument(..., help="The submission: a `bib score` folder or a results CSV (episode_id,surprise); a results.steps.parquet beside it is checked too.", show_default=False),
        as_json: bool = JSON,
    ) -> None:
        """Check a submission's format against a kit, without the key: every kit id once, no other id, finite surprise; the per-step Parquet's footer, columns, types, step counts and max.

        The rules are those of `bib evaluate` and the Codabench scoring program. One line and exit
        code 2 on the first problem; a one-line OK otherwise. See docs/blind-scoring.md.
        """
        from bib.challenge.submission import check_submission as run

        result = run(kit, results)
        typer.echo(result.to_json_text() if as_json else result.to_markdown(), nl=not as_json)

    @app.command()
    def evaluate(
        episodes: Path = typer.Argument(..., help="The episode set the results are for (folder or manifest.csv), or the KEY.csv of a `bib blind` kit."),
        results: Path = typer.Argument(..., help="A `bib score` folder, or a CSV episode_id,surprise (e.g. from an outside model)."),
        readout: Readout = typer.Option(Readout.max, "--readout", help="Reduce per-step surprise by max (BIB) or mean (needs results.steps.parquet)."),
        measure: Measure = typer.Option(Measure.evidence, "--difficulty", help="What the difficulty curve bins: the pair's evidence (nats), or the generator's grading, the manifest's difficulty column (cells: a deviation's excess cost, cost-reward's decisive margin gap)."),
        out: Path = optional_out("evaluation.json, evaluation.md, evaluation.{png,svg} and provenance.json"),
        as_json: bool = JSON,
        seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
        table: Path = typer.Option(None, "--table", help="Also write these results into an 'ours' table (e.g. baselines/results.csv) under --name.", show_default=False),
        name: str = typer.Option(None, "--name", help="Observer name for --table.", show_default=False),
        stimuli: str = typer.Option(None, "--stimuli", help="For --table: what the set is (default: the set's spec name and seed).", show_default=False),
        replace: bool = typer.Option(False, "--replace", help="With --table: replace the rows of an observer already in the table."),
        force: bool = FORCE,
    ) -> None:
        """Pairwise VOE accuracy per condition (a tie counts 0.5) with bootstrap 95% CIs, and per difficulty bin.

        With --out: evaluation.{json,md,png,svg} and, when the set's pairs have a difficulty,
        difficulty.{json,md,png,svg} (accuracy per difficulty bin).
        """
        from bib.evaluation import (
            DifficultyCurve,
            Evaluation,
            check_table_update,
            evaluate_difficulty,
            find_episodes,
            read_model_card,
            set_summary,
            surprise_by_episode,
            table_rows,
            ties_warning,
            upsert_table,
        )
        from bib.evaluation import evaluate as run
        from bib.io import OutputFolder

        if table is not None and not name:
            raise BibInputError("--table needs --name (the observer's name in the table)")
        from bib.stimuli.kit import check_results_kit, is_key, key_note, read_key

        results = results_file(results)
        note = None
        if is_key(episodes):
            found, fingerprint = read_key(episodes)
            check_results_kit(results, found, fingerprint, episodes)
            note = key_note(episodes)
        else:
            found = find_episodes(episodes)
        if table is not None:
            check_table_update(table, name, replace)
        folder = None if out is None else OutputFolder(
            out, {"command": "evaluate", "episodes": episodes, "results": results, "readout": readout.value, "seed": seed},
            force=force)
        surprise = surprise_by_episode(results, found, readout.value)
        res = run(found.refs, surprise, seed=seed)
        if not res:
            raise BibInputError(f"{episodes}: no expected/unexpected pairs to evaluate")
        model = read_model_card(results.parent) if results.name == RESULTS else {}
        if name and not model.get("name"):
            model = {**model, "name": name}
        result = Evaluation(res, readout.value, found.sets,
                            evaluate_difficulty(found.refs, surprise, seed=seed, measure=measure.value), model,
                            set_summary(found.refs, found.sets), note=note, measure=measure.value)
        if (tied := ties_warning(res)) is not None:  # also in the JSON's warnings and the table's last lines
            typer.echo(f"warning: {tied}", err=True)
        if folder is not None:
            with folder as tmp:
                result.save(tmp)
                if result.difficulty:
                    sets = "; ".join(f"{s['name']} seed {s['seed']}" for s in found.sets) or str(episodes)
                    label = name or (results.parent.name if results.name == RESULTS else results.stem)
                    DifficultyCurve(result.difficulty, f"{label} on {sets}", measure.value).save(tmp)
        if table is not None:
            label = stimuli or "; ".join(f"{s['name']} seed {s['seed']}" for s in found.sets) or str(episodes)
            command = f"bib evaluate {episodes} {results.parent if results.name == RESULTS else results} --readout {readout.value}"
            upsert_table(table, table_rows(name, result.to_json(), label, command))
        typer.echo(result.to_json_text() if as_json else result.to_markdown(), nl=not as_json)

    @app.command()
    def audit(
        episodes: Path = typer.Argument(..., help="The VOE set to audit: a folder searched recursively for episodes / manifests, or a manifest.csv."),
        out: Path = typer.Option(Path("out/audit"), "--out", **OUT_PATH, help="Output folder: audit.json, audit.md, audit.png, audit.svg (heatmap), single-feature.json (the fit).", show_default=True),
        workers: int = typer.Option(1, "--workers", min=1, help="Worker processes.", show_default=True),
        scheduler: str = typer.Option(None, "--scheduler", help="Dask scheduler tcp://HOST:PORT instead of local processes."),
        seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap CIs and of the role-stratified fit/scored split of single-feature and learned-test-only.", show_default=True),
        force: bool = typer.Option(False, "--force", help="Replace an --out folder that holds something else.", show_default=True),
        as_json: bool = typer.Option(False, "--json", help="Print audit.json on stdout instead of the table.", show_default=True),
    ) -> None:
        """Run the shortcut and leak batteries on a VOE set, and try to rebuild it; FAIL where a shortcut or leak leaves 50 +- 10% or a shipped spec rebuilds an episode (exit code 1).

        Shortcuts: closest-object, test-only, novelty, familiarity, path-familiarity, path-length,
        single-feature and learned-test-only (both fit per condition on half of the pairs, scored
        on the other half). Leak readers, through the blind view a model gets: label, id-text,
        id-order, position, text-size, role. Rebuild: every shipped spec whose settings match the
        set's, regenerated from its own seed; the share of the set's episodes found there.
        See docs/observers.md.
        """
        import os

        from bib.io import OutputFolder
        from bib.observers.audit import audit_table, check_set, rebuild_text, run_audit, verdict_counts, write_audit
        from bib.parallel import check_scheduler

        check_scheduler(scheduler)
        source = str(episodes)
        found = check_set(episodes)
        folder = OutputFolder(out, {"command": "audit", "set": os.path.abspath(source), "seed": seed}, force=force)
        result = run_audit(found, source, workers=workers, scheduler=scheduler, seed=seed)
        with folder as tmp:
            write_audit(result, tmp)
        if as_json:
            typer.echo(result.to_json_text(), nl=False)
        else:
            typer.echo("pairwise accuracy % (95% CI), max readout, ties 0.5; FAIL outside 40-60% unless exempt")
            typer.echo(audit_table(result, markdown=False))
            typer.echo(rebuild_text(result, markdown=False))
            verdict = "PASS" if result.passed else f"FAIL: {verdict_counts(result)}"
            typer.echo(f"{verdict}; tables in {out / 'audit.md'} and {out / 'audit.json'}")
        if not result.passed:
            raise typer.Exit(code=1)

    @app.command()
    def leaderboard(
        table: Path = typer.Argument(None, help="'Ours' table written by `bib evaluate --table` or --save (skipped if absent; default: the table that ships with bib, baselines/results.csv in a checkout).", show_default=False),
        add: list[str] = typer.Option([], "--add", help="NAME=EVALUATION.json (from `bib evaluate --out`), repeatable.", show_default=False),
        replace: bool = typer.Option(False, "--replace", help="Let --add NAME replace the table's rows of NAME (otherwise refused)."),
        save: bool = typer.Option(False, "--save", help="Also write the --add rows into TABLE (created if absent; needs TABLE)."),
        anchors: Path = typer.Option(None, "--anchors", help="Published accuracies (default: data/published/voe_anchors.csv).", show_default=False),
        source: list[str] = typer.Option([], "--source", help="Published table(s) to show: neurips, poster, irene, hbtom (repeatable; default all, a model in two tables as two labelled columns).", show_default=False),
        as_json: bool = JSON,
    ) -> None:
        """Our observers' accuracy (%) beside the published models', with the set and pair counts of each column."""
        from bib.evaluation import build_leaderboard

        pairs = []
        for item in add:
            nm, sep, path = item.partition("=")
            if not sep or not nm:
                raise BibInputError(f"--add {item!r}: expected NAME=EVALUATION.json")
            pairs.append((nm, path))
        result = build_leaderboard(table, pairs, replace=replace, anchors=anchors, sources=source or None, save=save)
        typer.echo(result.to_json_text() if as_json else result.to_markdown(), nl=not as_json)
