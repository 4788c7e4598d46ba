"""`bib reflect`: the extended-environments self-reflection measure, and `bib reflect table` (Table 1)."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add the ``reflect`` command group."""
    sub = typer.Typer(
        help="Self-reflection of agents in extended environments (Alexander et al.).",
        invoke_without_command=True,
        no_args_is_help=False,
    )

    @sub.callback()
    def reflect(
        ctx: typer.Context,
        agent: str | None = typer.Option(None, "--agent", help="random, constant, naive-learner, a2c, dqn, ppo"),
        reality_check: bool = typer.Option(False, "--reality-check", help="measure RC(agent) instead"),
        steps: int = typer.Option(1000, "--steps", help="percepts per environment"),
        seeds: int = typer.Option(10, "--seeds", help="seeds 0..K-1"),
        workers: int = typer.Option(1, "--workers", help="worker processes"),
        slow: bool = typer.Option(False, "--slow", help="add the runtime and determinism inspectors"),
        as_json: bool = typer.Option(False, "--json", help="print one JSON document"),
    ) -> None:
        """Score one agent on the 50 environments: mean over seeds of the battery mean of reward/steps."""
        if ctx.invoked_subcommand is not None:
            return
        from bib.errors import BibInputError
        from bib.reflection.harness import measure

        if agent is None:
            raise BibInputError("--agent is required (or use `bib reflect table`)")
        m = measure(
            agent, reality_check=reality_check, steps=steps, seeds=seeds, workers=workers, include_slow=slow,
            progress=not as_json,
        )
        typer.echo(m.to_json_text() if as_json else m.to_markdown(), nl=not as_json)

    @sub.command("table")
    def table_cmd(
        steps: list[int] = typer.Option([500, 1000], "--steps", help="lengths (repeatable)"),
        seeds: int = typer.Option(10, "--seeds"),
        workers: int = typer.Option(1, "--workers"),
        out: Path | None = typer.Option(None, "--out", help="also write the Markdown table here"),
    ) -> None:
        """Reproduce Table 1 for Random, Constant, NaiveLearner and their reality checks."""
        from bib.io import atomic_write_text
        from bib.reflection.harness import format_table, table

        rows = table(lengths=steps, seeds=seeds, workers=workers)
        text = format_table(rows)
        typer.echo(text)
        if out is not None:
            command = f"bib reflect table {' '.join(f'--steps {n}' for n in steps)} --seeds {seeds}"
            atomic_write_text(
                out,
                f"# Table 1 reproduced (extended environments)\n\nMade by: `{command}`\n\n{text}\n\n"
                "Diff / SE = (ours - published) / our sd/sqrt(seeds).\n",
            )

    app.add_typer(sub, name="reflect")
