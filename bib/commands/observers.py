"""Observer commands: score (episodes -> surprise), evaluate (pairwise VOE accuracy), audit (shortcut battery), leaderboard."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from bib.errors import BibInputError


def register(app: typer.Typer) -> None:
    """Add ``score``, ``evaluate``, ``audit`` and ``leaderboard`` to ``app``."""

    @app.command()
    def score(
        observer: str = typer.Option(..., "--observer", help="Observer name: random, closest-object, inverse-planner, bc-mlp, bc-rnn, video-rnn."),
        episodes: Path = typer.Option(..., "--episodes", help="Folder searched recursively for episodes / manifests, or a manifest.csv."),
        out: Path = typer.Option(..., "--out", help="Results CSV (episode_id,surprise); per-step surprise goes beside it as <stem>.steps.parquet."),
        checkpoint: Path = typer.Option(None, "--checkpoint", help="Trained weights (learned observers; see `bib train`)."),
        option: list[str] = typer.Option([], "--option", help="Observer option KEY=VALUE (JSON value), repeatable, e.g. seed=3."),
        workers: int = typer.Option(1, "--workers", min=1, help="Worker processes."),
        scheduler: str = typer.Option(None, "--scheduler", help="Dask scheduler tcp://HOST:PORT instead of local processes."),
    ) -> None:
        """Score every episode with an observer: one surprise per test step."""
        from bib.observers.scoring import parse_options
        from bib.observers.scoring import score as run

        summary = run(observer, episodes, out, checkpoint=checkpoint, config=parse_options(option),
                      workers=workers, scheduler=scheduler)
        typer.echo(f"{summary.n_episodes} episodes scored with {observer}: {summary.results} (max readout), "
                   f"per-step surprise in {summary.steps}")

    @app.command()
    def evaluate(
        episodes: Path = typer.Option(..., "--episodes", help="The episode set the results are for (folder or manifest.csv)."),
        results: Path = typer.Option(..., "--results", help="Results CSV episode_id,surprise (from `bib score` or an outside model)."),
        readout: str = typer.Option("max", "--readout", help="Reduce per-step surprise by max (BIB) or mean (needs <stem>.steps.parquet)."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
        seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
        table: Path = typer.Option(None, "--table", help="Also write these results into an 'ours' table (e.g. baselines/results.csv) under --name."),
        name: str = typer.Option(None, "--name", help="Observer name for --table."),
        stimuli: str = typer.Option(None, "--stimuli", help="For --table: what the set is (default: the set's spec name and seed)."),
        out: Path = typer.Option(None, "--out", help="Folder to write evaluation.{json,md,png,svg} and, when the set's pairs have a difficulty, difficulty.{json,md,png,svg} (accuracy per difficulty bin)."),
    ) -> None:
        """Pairwise VOE accuracy per condition (a tie counts 0.5) with bootstrap 95% CIs, and per difficulty bin."""
        from bib.evaluation import DifficultyCurve, Evaluation, evaluate_difficulty, find_episodes, surprise_by_episode
        from bib.evaluation import evaluate as run
        from bib.evaluation import table_rows, upsert_table

        folder = None
        if out is not None:
            import os

            from bib.io import OutputFolder

            job = {"command": "evaluate", "set": os.path.abspath(episodes), "results": os.path.abspath(results),
                   "readout": readout, "seed": seed}
            folder = OutputFolder(out, job)
        found = find_episodes(episodes)
        surprise = surprise_by_episode(results, found, readout)
        res = run(found.refs, surprise, seed=seed)
        if not res:
            raise BibInputError(f"{episodes}: no expected/unexpected pairs to evaluate")
        result = Evaluation(res, readout, found.sets, evaluate_difficulty(found.refs, surprise, seed=seed))
        if folder is not None:
            with folder as tmp:
                result.save(tmp)
                if result.difficulty:
                    sets = "; ".join(f"{s['name']} seed {s['seed']}" for s in found.sets) or str(episodes)
                    DifficultyCurve(result.difficulty, f"{name or results.stem} on {sets}").save(tmp)
        if table is not None:
            if not name:
                raise BibInputError("--table needs --name (the observer's name in the table)")
            label = stimuli or "; ".join(f"{s['name']} seed {s['seed']}" for s in found.sets) or str(episodes)
            command = f"bib evaluate --episodes {episodes} --results {results} --readout {readout}"
            upsert_table(table, table_rows(name, result.to_json(), label, command))
        typer.echo(result.to_json_text() if as_json else result.to_markdown(), nl=not as_json)

    @app.command()
    def audit(
        episodes: Path = typer.Argument(..., help="The VOE set to audit: a folder searched recursively for episodes / manifests, or a manifest.csv."),
        out: Path = typer.Option(Path("out/audit"), "--out", help="Output folder: audit.json, audit.md, audit.png, audit.svg (heatmap), single-feature.json (the fit).", show_default=True),
        workers: int = typer.Option(1, "--workers", min=1, help="Worker processes.", show_default=True),
        scheduler: str = typer.Option(None, "--scheduler", help="Dask scheduler tcp://HOST:PORT instead of local processes."),
        seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap CIs.", show_default=True),
        force: bool = typer.Option(False, "--force", help="Replace an --out folder that holds something else.", show_default=True),
        as_json: bool = typer.Option(False, "--json", help="Print audit.json on stdout instead of the table.", show_default=True),
    ) -> None:
        """Run the shortcut battery on a VOE set; FAIL where a shortcut leaves 50 +- 10% (exit code 1).

        Shortcuts: closest-object, test-only, novelty, familiarity, path-length, single-feature
        (fit per condition on half of the pairs, scored on the other half). See docs/observers.md.
        """
        import os

        from bib.io import OutputFolder
        from bib.observers.audit import audit_table, check_set, run_audit, write_audit

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
            verdict = "PASS" if result.passed else f"FAIL: {len(result.failures)} cell(s)"
            typer.echo(f"{verdict}; tables in {out / 'audit.md'} and {out / 'audit.json'}")
        if not result.passed:
            raise typer.Exit(code=1)

    @app.command()
    def leaderboard(
        table: Path = typer.Option(Path("baselines/results.csv"), "--table", help="'Ours' table written by `bib evaluate --table` (skipped if absent)."),
        add: list[str] = typer.Option([], "--add", help="NAME=EVALUATION.json (from `bib evaluate --json`), repeatable."),
        anchors: Path = typer.Option(None, "--anchors", help="Published accuracies (default: data/published/voe_anchors.csv)."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    ) -> None:
        """Our observers' accuracy (%) beside the published models'."""
        from bib.evaluation import ANCHORS, leaderboard as build
        from bib.evaluation import read_anchors, read_evaluation, read_table, table_rows

        published = read_anchors(anchors or ANCHORS)
        ours: list[dict[str, str]] = read_table(table) if table.exists() else []
        for item in add:
            nm, sep, path = item.partition("=")
            if not sep:
                raise BibInputError(f"--add {item!r}: expected NAME=EVALUATION.json")
            doc = read_evaluation(path)
            sets = "; ".join(f"{s.get('name')} seed {s.get('seed')}" for s in doc.get("sets", [])) or path
            ours += [{k: str(v) for k, v in r.items()} for r in table_rows(nm, doc, sets, "")]
        header, rows = build(published, ours)
        stimuli = sorted({r.get("stimuli", "") for r in ours} - {""})
        note = ("Published: original BIB v1.1 data (sources in data/published/voe_anchors.csv; their tie rule gave "
                "ties full credit). Ours: " + ("; ".join(stimuli) if stimuli else "none yet")
                + " (generated by this package, not the original data; a tie counts 0.5).")
        if as_json:
            typer.echo(json.dumps({"header": header, "rows": rows, "note": note}, indent=2))
            return
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        for line in [header, *rows]:
            typer.echo("  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in enumerate(zip(line, widths))))
        typer.echo(note)
