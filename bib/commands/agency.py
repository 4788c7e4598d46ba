"""Agency commands: `bib agency run`, `report`, `train-policy` and `probe` (goal-directedness of agents)."""

from __future__ import annotations

import shlex
import sys
from enum import Enum
from pathlib import Path

import typer

from bib.commands._common import FORCE, checkpoint_file, out_option
from bib.errors import BibInputError

POLICY_FILE = "policy_net.pt"
"""The checkpoint `bib agency train-policy` writes into its --out folder."""


def _choices() -> tuple[type[Enum], type[Enum]]:
    from bib.agency.agents import AGENT_NAMES, AGENTS
    from bib.agency.suite import SUITES

    return SUITES.choices("Suite"), AGENTS.choices("AgencyAgent", AGENT_NAMES)


Suite, AgencyAgent = _choices()
"""``--suite`` and ``--agent`` choices: the names of :data:`bib.agency.suite.SUITES` and the local agents of
:data:`bib.agency.agents.AGENTS`."""


def register(app: typer.Typer) -> None:
    """Add the ``agency`` command group to ``app``."""
    sub = typer.Typer(help="Goal-directedness of agents: behaviour, perturbations, key rooms, probes.",
                      no_args_is_help=True)

    @sub.command()
    def run(
        suite: Suite = typer.Option(..., "--suite", help="The suite to run."),
        out: Path = out_option("grids.csv, rollouts.jsonl, run.json, tables.md and tables/ (and `bib agency probe`'s probes.json)"),
        agent: AgencyAgent | None = typer.Option(None, "--agent", help="A local agent (or give --endpoint).", show_default=False),  # noqa: UP007
        endpoint: str = typer.Option(None, "--endpoint", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.", show_default=False),
        model: str = typer.Option(None, "--model", help="Model name for --endpoint.", show_default=False),
        workers: int = typer.Option(1, "--workers", min=1, help="Processes (local agents) or threads (endpoint)."),
        grids: int = typer.Option(None, "--grids", min=1, help="Grids per size x density cell (navigation suites) or per key task (default: 10 / 100).", show_default=False),
        rollouts: int = typer.Option(None, "--rollouts", min=1, help="Rollouts per grid (default: 10; keys: 1).", show_default=False),
        seed: int = typer.Option(0, "--seed", help="Base seed of grids and rollouts."),
        epsilon: float = typer.Option(0.2, "--epsilon", min=0.0, max=1.0, help="noisy: probability of a random move."),
        checkpoint: Path = typer.Option(None, "--checkpoint", help=f"policy-net checkpoint: a `bib agency train-policy` folder or its {POLICY_FILE} (default: the shipped one).", show_default=False),
        temperature: float = typer.Option(None, "--temperature", min=0.0, help="Sampling temperature (default: policy-net 1, endpoint 0.7).", show_default=False),
        timeout: float = typer.Option(60.0, "--timeout", min=0.001, help="Endpoint: seconds per request attempt."),
        retries: int = typer.Option(2, "--retries", min=0, help="Endpoint: retries of a failed request, and re-asks after a bad answer."),
        concurrency: int = typer.Option(4, "--concurrency", min=1, help="Endpoint: requests in flight at most."),
        cache: Path = typer.Option(None, "--cache", help="Endpoint: answer cache folder (default: $XDG_CACHE_HOME/bib/endpoint/<endpoint+model hash>, kept when a run fails).", show_default=False),
        no_meg: bool = typer.Option(False, "--no-meg", help="Skip MEG (the slowest metric)."),
        force: bool = FORCE,
    ) -> None:
        """Run a suite for one agent and write grids.csv, rollouts.jsonl, run.json and tables."""
        from bib.agency.agents import AgentSpec, check_spec
        from bib.agency.suite import run_suite
        from bib.io import OutputFolder

        if (agent is None) == (endpoint is None):
            raise BibInputError("give exactly one of --agent NAME or --endpoint URL --model NAME")
        if endpoint is not None:
            from bib.agency.endpoint import default_cache_dir

            cache_dir = cache or default_cache_dir(endpoint, model or "")
            if cache_dir.exists() and not cache_dir.is_dir():
                raise BibInputError(f"{cache_dir}: --cache must be a folder, not a file")
            options = {"timeout": timeout, "retries": retries, "concurrency": concurrency, "cache_dir": str(cache_dir)}
            spec = AgentSpec("endpoint", endpoint=endpoint, model=model, options=options,
                             temperature=0.7 if temperature is None else temperature)
        else:
            ckpt = checkpoint_file(checkpoint, POLICY_FILE)
            if agent.value == "policy-net":  # refuse a bad checkpoint before the output folder is made
                from bib.agency.policy_net import DEFAULT_CHECKPOINT, load

                load(ckpt or DEFAULT_CHECKPOINT)
            spec = AgentSpec(agent.value, epsilon=epsilon, checkpoint=str(ckpt) if ckpt else None,
                             temperature=1.0 if temperature is None else temperature)
        check_spec(spec)
        if endpoint is not None:  # a real chat request, before the output folder is made (docs/agency.md)
            from bib.agency.endpoint import check_reachable
            from bib.agency.text import check_endpoint, shared_client

            check_reachable(endpoint, timeout)
            check_endpoint(shared_client(spec), endpoint)
        command = "bib " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["agency"] else ""
        job = {"command": "agency run", "suite": suite.value, "agent": spec.label, "grids": grids, "rollouts": rollouts,
               "seed": seed, "meg": not no_meg}
        folder = OutputFolder(out, job, force=force)  # checked before the run; written into a temporary sibling
        if endpoint is not None:
            typer.echo(f"endpoint answers cached in {options['cache_dir']}", err=True)
        with folder as tmp:
            result = run_suite(suite.value, spec, tmp, grids=grids, rollouts=rollouts, seed=seed, workers=workers,
                               meg=not no_meg, command=command)
        typer.echo(result.to_markdown())

    @sub.command()
    def report(folder: Path = typer.Argument(..., help="A folder written by `bib agency run`.")) -> None:
        """Tables (tables.md, tables/*.csv) and plots (plots/*.png) of a run."""
        from bib.agency.report import make_report

        result, figures = make_report(folder)
        typer.echo(result.to_markdown())
        for f in figures:
            typer.echo(f"wrote {f}")

    @sub.command("train-policy")
    def train_policy(
        out: Path = out_option(f"{POLICY_FILE} (loads with weights_only) and provenance.json"),
        grids: int = typer.Option(200, "--grids", min=1, help="Navigation training grids (key tasks get a fifth / a tenth)."),
        epochs: int = typer.Option(6, "--epochs", min=1, help="Training epochs."),
        seed: int = typer.Option(1000, "--seed", help="Seed of the training grids (keep it apart from evaluation seeds)."),
        force: bool = FORCE,
    ) -> None:
        """Train the policy network to imitate the planner on fresh grids and save a checkpoint."""
        from bib.agency.keys import KEY_TASKS
        from bib.agency.policy_net import save, train, training_states
        from bib.io import OutputFolder

        folder = OutputFolder(out, {"command": "agency train-policy", "grids": grids, "epochs": epochs, "seed": seed},
                              force=force)
        tasks = {"navigation": grids, **{t: max(1, grids // (10 if t == "two-path-key" else 5)) for t in KEY_TASKS}}
        x, y = training_states(tasks, seed)
        model = train(x, y, epochs=epochs, seed=0,
                      log=lambda e, loss, acc: typer.echo(f"epoch {e + 1}: loss {loss:.4f}, argmax in pi* {acc:.3f}", err=True))
        with folder as tmp:
            save(model, tmp / POLICY_FILE, meta={
                "tasks": tasks, "seed": seed, "epochs": epochs, "samples": int(len(x)),
                "command": f"bib agency train-policy --out {out} --grids {grids} --epochs {epochs} --seed {seed}"})
        typer.echo(f"wrote {Path(out) / POLICY_FILE} ({len(x)} training states)")

    @sub.command()
    def probe(
        out: Path = out_option("probes.json and tables (may be a `bib agency run` folder: probes.json is added beside the run)"),
        checkpoint: Path = typer.Option(None, "--checkpoint", help=f"policy-net checkpoint: a `bib agency train-policy` folder or its {POLICY_FILE} (default: the shipped one).", show_default=False),
        grids: int = typer.Option(2, "--grids", min=1, help="Navigation grids per size x density cell."),
        rollouts: int = typer.Option(5, "--rollouts", min=1, help="Rollouts per grid."),
        layers: list[int] = typer.Option([1, 2], "--layers", min=1, max=4, help="Plan-probe decoder depths, repeatable: --layers 1 --layers 2."),
        map_epochs: int = typer.Option(5, "--map-epochs", min=1, help="Cognitive-map probe epochs."),
        plan_epochs: int = typer.Option(20, "--plan-epochs", min=1, help="Plan probe epochs."),
        plan_hidden: int = typer.Option(128, "--plan-hidden", min=8, help="Plan probe width (the paper: 1024; 128 keeps CPU training short)."),
        seed: int = typer.Option(0, "--seed", help="Seed of grids, rollouts, split and training."),
        force: bool = FORCE,
    ) -> None:
        """Cognitive-map, decoded-map consistency and plan probes on the policy network's activations."""
        import os

        from bib.agency.policy_net import DEFAULT_CHECKPOINT, load
        from bib.agency.probes import run_probes
        from bib.agency.tables import write_tables
        from bib.io import FolderLock, OutputFolder, read_provenance

        ckpt = checkpoint_file(checkpoint, POLICY_FILE) or DEFAULT_CHECKPOINT
        model = load(ckpt)
        command = "bib " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["agency"] else ""
        settings = {"grids": grids, "rollouts": rollouts, "layers": tuple(layers), "map_epochs": map_epochs,
                    "plan_epochs": plan_epochs, "plan_hidden": plan_hidden, "seed": seed}
        run = read_provenance(out) if out.is_dir() else None
        if not force and run is not None and (run.get("job") or {}).get("command") == "agency run":
            # beside a run's results: probes.json is written atomically and the tables are redone from both
            if not os.access(out, os.W_OK | os.X_OK):
                raise BibInputError(f"{out}: output folder is not writable")
            from bib.guard import no_links

            no_links(out, "the run folder")  # probes.json and tables/ are written in place
            folder = FolderLock(out)  # one writer here too
            folder.check()
        else:
            folder = OutputFolder(out, {"command": "agency probe", "checkpoint": ckpt, **settings}, force=force)
        with folder as target:
            run_probes(model, target, **settings, command=command)
            result = write_tables(target)
        typer.echo(result.to_markdown())

    app.add_typer(sub, name="agency")
