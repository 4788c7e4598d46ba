"""`bib reflect`: the extended-environments self-reflection measure, and `bib reflect table` (Table 1)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from bib.commands._common import FORCE, WORKERS, optional_out


def _agent_choices() -> type[Enum]:
    from bib.reflection.harness import AGENTS

    return AGENTS.choices("Agent")


Agent = _agent_choices()
"""Agents of the extended-environments battery (:data:`bib.reflection.harness.AGENTS`; a2c, dqn and ppo need
the rl extra)."""


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
        agent: Agent | None = typer.Option(None, "--agent", help="The agent to measure.", show_default=False),  # noqa: UP007
        reality_check: bool = typer.Option(False, "--reality-check", help="Measure RC(agent) instead."),
        steps: int = typer.Option(1000, "--steps", min=1, help="Percepts per environment."),
        seeds: int = typer.Option(10, "--seeds", min=1, help="Number of seeds: --seed .. --seed + N - 1."),
        seed: int = typer.Option(0, "--seed", min=0, help="First seed."),
        workers: int = WORKERS,
        slow: bool = typer.Option(False, "--slow", help="Add the runtime and determinism inspectors."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document."),
    ) -> None:
        """Score one agent on the 50 environments: mean over seeds of the battery mean of reward/steps."""
        if ctx.invoked_subcommand is not None:
            return
        from bib.errors import BibInputError
        from bib.reflection.harness import measure

        if agent is None:
            raise BibInputError("--agent is required (or use `bib reflect table`)")
        m = measure(
            agent.value, reality_check=reality_check, steps=steps, seeds=seeds, workers=workers, include_slow=slow,
            progress=not as_json, seed=seed,
        )
        typer.echo(m.to_json_text() if as_json else m.to_markdown(), nl=not as_json)

    @sub.command("table")
    def table_cmd(
        agents: list[Agent] = typer.Option(  # type: ignore[valid-type]
            [], "--agent", help="Agents (repeatable); default random, constant, naive-learner.", show_default=False),
        steps: list[int] = typer.Option([500, 1000], "--steps", min=1, help="Lengths, repeatable: --steps 500 --steps 1000."),
        seeds: int = typer.Option(10, "--seeds", min=1, help="Number of seeds: --seed .. --seed + N - 1."),
        seed: int = typer.Option(0, "--seed", min=0, help="First seed."),
        workers: int = WORKERS,
        out: Path | None = optional_out("table1.json, table1.md (Table 1 beside the published values) and provenance.json"),  # noqa: UP007
        force: bool = FORCE,
    ) -> None:
        """Reproduce Table 1: each agent and its reality check (default Random, Constant, NaiveLearner)."""
        from bib.io import OutputFolder
        from bib.reflection.harness import TABLE_AGENTS, ReflectionTable, table

        names = [a.value for a in agents] or list(TABLE_AGENTS)
        folder = None if out is None else OutputFolder(
            out, {"command": "reflect table", "agents": names, "steps": steps, "seeds": seeds, "seed": seed}, force=force)
        command = ("bib reflect table " + "".join(f"--agent {a} " for a in names if agents)
                   + f"{' '.join(f'--steps {n}' for n in steps)} --seeds {seeds}" + (f" --seed {seed}" if seed else ""))
        result = ReflectionTable(table(agents=names, lengths=steps, seeds=seeds, workers=workers, seed=seed), command)
        typer.echo(result.to_markdown())
        if folder is not None:
            with folder as tmp:
                result.save(tmp)

    app.add_typer(sub, name="reflect")
