"""`bib profile`: one agent (or several) through every instrument on the same BIB layouts."""

from __future__ import annotations

import enum
import shlex
from pathlib import Path

import typer

from bib.commands._common import OUT_PATH


def _observer_choices() -> type[enum.Enum]:
    from bib.observers import OBSERVERS

    return OBSERVERS.choices("ProfileObserver", [n for n, s in OBSERVERS.items() if not s.needs_checkpoint])


ProfileObserver = _observer_choices()
"""The observers ``--observer`` accepts: the registered ones that need no checkpoint."""


def _condition_choices() -> type[enum.Enum]:
    from bib.profile.instruments import conditions

    return enum.Enum("ProfileCondition", {c.replace("-", "_"): c for c in conditions()}, type=str)  # type: ignore[return-value]


ProfileCondition = _condition_choices()
"""The evaluation conditions ``--condition`` accepts."""


def register(app: typer.Typer) -> None:
    """Add the ``profile`` command."""
    from bib.profile.agents import BUILTIN
    from bib.profile.instruments import OBSERVERS

    @app.command("profile")
    def profile(
        agents: list[str] = typer.Argument(
            ..., metavar="AGENT...",
            help=f"Agents to profile: built-in ({', '.join(BUILTIN)}), package.module:Class, or endpoint "
                 "(with --endpoint and --model)."),
        out: Path = typer.Option(
            ..., "--out", **OUT_PATH,
            help="Output folder. One agent: profile.json, profile.md, profile.png, episodes/ and provenance.json; "
                 "several: one such folder per agent plus profiles.json, profiles.md and profiles.png."),
        seeds: int = typer.Option(3, "--seeds", min=1, max=1000, show_default=True,
                                  help="Number of seeds, starting at --seed."),
        seed: int = typer.Option(0, "--seed", min=0, show_default=True, help="Base seed."),
        units: int = typer.Option(1, "--units", min=1, max=1000, show_default=True,
                                  help="BIB units (pairs) per evaluation condition and seed."),
        workers: int = typer.Option(1, "--workers", min=1, show_default=True,
                                    help="Worker processes (threads for an endpoint agent)."),
        condition: list[ProfileCondition] | None = typer.Option(  # type: ignore[valid-type]
            None, "--condition", show_default=False,
            help="Evaluation condition to act in (repeatable; default: all nine)."),
        agency_grids: int = typer.Option(30, "--agency-grids", min=1, max=3000, show_default=True,
                                         help="Agency navigation grids per seed (grid i is design cell i mod 30); "
                                              "key grids per task: a tenth of it, at least 1."),
        observer: list[ProfileObserver] | None = typer.Option(  # type: ignore[valid-type]
            None, "--observer", show_default=False,
            help=f"Observer whose surprise at the agent's test trials is reported (repeatable; default: "
                 f"{', '.join(OBSERVERS)})."),
        endpoint: str | None = typer.Option(None, "--endpoint",
                                               help="OpenAI-compatible base URL for the agent `endpoint`."),
        model: str | None = typer.Option(None, "--model", help="Model name for --endpoint."),
        timeout: float = typer.Option(60.0, "--timeout", min=0.001, show_default=True,
                                      help="Endpoint: seconds per request attempt."),
        retries: int = typer.Option(2, "--retries", min=0, show_default=True,
                                    help="Endpoint: retries of a failed request, and re-asks after a bad answer."),
        concurrency: int = typer.Option(4, "--concurrency", min=1, show_default=True,
                                        help="Endpoint: requests in flight at most."),
        cache: Path | None = typer.Option(None, "--cache", help="Endpoint: answer cache folder (default: memory only)."),
        no_episodes: bool = typer.Option(False, "--no-episodes", help="Do not write the agent's BIB episodes."),
        battery_episodes: bool = typer.Option(False, "--battery-episodes",
                                              help="Also write every extended-environment run as episodes."),
        strict: bool = typer.Option(False, "--strict",
                                    help="Refuse an agent's illegal move (exit 2) instead of counting it as a bump "
                                         "(the agent stays where it is; the move costs a step)."),
        force: bool = typer.Option(False, "--force", help="Replace an --out folder that holds something else."),
        as_json: bool = typer.Option(False, "--json", help="Print profile.json (profiles.json) instead of Markdown."),
    ) -> None:
        """Profile agents: BIB tasks as the actor, MEG of those paths, the extended gridworld battery (self-reflection,
        with the reality check), the agency suite, and the VOE observers' surprise at the agent's own behaviour."""
        from bib.errors import BibInputError
        from bib.profile.agents import AgentSpec
        from bib.profile.instruments import Settings
        from bib.profile.run import profile_command

        specs = []
        for name in agents:
            if name == "endpoint":
                if endpoint is None or model is None:
                    raise BibInputError("AGENT endpoint needs --endpoint URL and --model NAME")
                options = {"timeout": timeout, "retries": retries, "concurrency": concurrency}
                if cache is not None:
                    options["cache_dir"] = str(cache)
                specs.append(AgentSpec("endpoint", endpoint=endpoint, model=model, options=options))
            else:
                specs.append(AgentSpec(name))
        if endpoint is not None and not any(s.name == "endpoint" for s in specs):
            raise BibInputError("--endpoint is given but no AGENT is `endpoint`")
        observers = tuple(o.value for o in observer) if observer else OBSERVERS
        chosen = tuple(c.value for c in condition) if condition else ()
        settings = Settings(seeds=tuple(range(seed, seed + seeds)), units=units, observers=observers,
                            conditions=chosen, navigation_grids=agency_grids, key_grids=max(1, agency_grids // 10),
                            strict=strict)
        words = [*agents, "--seeds", str(seeds), "--seed", str(seed)]
        words += ["--units", str(units)] if units != 1 else []
        words += [w for c in chosen for w in ("--condition", c)]
        words += ["--agency-grids", str(agency_grids)] if agency_grids != 30 else []
        words += [w for o in (observers if observer else ()) for w in ("--observer", o)]
        if endpoint is not None:
            words += ["--endpoint", endpoint, "--model", str(model)]
        words += ["--strict"] if strict else []
        words += ["--no-episodes"] if no_episodes else []
        words += ["--battery-episodes"] if battery_episodes else []
        words += ["--out", str(out)]
        result, timings, _ = profile_command(
            specs, out, settings, workers=workers, force=force, episodes=not no_episodes,
            battery_episodes=battery_episodes, progress=not as_json, argv=[shlex.quote(w) for w in words])
        if as_json:
            typer.echo(result.to_json_text(), nl=False)
            return
        typer.echo(result.to_markdown())
        cpu = timings["cpu_seconds"]
        for label, per in cpu.items():
            parts = ", ".join(f"{k} {v:.1f} s" for k, v in per.items())
            typer.echo(f"{label}: CPU {parts}", err=True)
        typer.echo(f"wall {timings['wall_seconds']:.1f} s on {workers} worker(s); wrote {out}", err=True)
