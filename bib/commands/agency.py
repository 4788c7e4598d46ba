"""Agency commands: `bib agency run`, `report`, `train-policy` and `probe` (goal-directedness of agents)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import typer

from bib.errors import BibInputError


def register(app: typer.Typer) -> None:
    """Add the ``agency`` command group to ``app``."""
    sub = typer.Typer(help="Goal-directedness of agents: behaviour, perturbations, key rooms, probes.",
                      no_args_is_help=True)

    @sub.command()
    def run(
        suite: str = typer.Option(..., "--suite", help="navigation, perturbations or keys."),
        out: Path = typer.Option(..., "--out", help="Output folder."),
        agent: str = typer.Option(None, "--agent", help="optimal, noisy, random or policy-net."),
        endpoint: str = typer.Option(None, "--endpoint", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1."),
        model: str = typer.Option(None, "--model", help="Model name for --endpoint."),
        workers: int = typer.Option(1, "--workers", help="Processes (local agents) or threads (endpoint)."),
        grids: int = typer.Option(None, "--grids", help="Grids per size x density cell (navigation suites) or per key task; default 10 / 100."),
        rollouts: int = typer.Option(None, "--rollouts", help="Rollouts per grid (default 10; keys: 1)."),
        seed: int = typer.Option(0, "--seed", help="Base seed of grids and rollouts."),
        epsilon: float = typer.Option(0.2, "--epsilon", help="noisy: probability of a random move."),
        checkpoint: Path = typer.Option(None, "--checkpoint", help="policy-net checkpoint (default: the shipped one)."),
        temperature: float = typer.Option(None, "--temperature", help="Sampling temperature (policy-net default 1, endpoint 0.7)."),
        timeout: float = typer.Option(60.0, "--timeout", help="Endpoint: seconds per request attempt."),
        retries: int = typer.Option(2, "--retries", help="Endpoint: retries of a failed request, and re-asks after a bad answer."),
        concurrency: int = typer.Option(4, "--concurrency", help="Endpoint: requests in flight at most."),
        cache: Path = typer.Option(None, "--cache", help="Endpoint: answer cache folder (default OUT/cache)."),
        no_meg: bool = typer.Option(False, "--no-meg", help="Skip MEG (the slowest metric)."),
    ) -> None:
        """Run a suite for one agent and write grids.csv, rollouts.jsonl, run.json and tables."""
        from bib.agency.agents import AgentSpec
        from bib.agency.suite import run_suite

        if (agent is None) == (endpoint is None):
            raise BibInputError("give exactly one of --agent NAME or --endpoint URL --model NAME")
        if endpoint is not None:
            if retries < 0 or timeout <= 0 or concurrency < 1:
                raise BibInputError("--retries must be >= 0, --timeout > 0 and --concurrency >= 1")
            options = {"timeout": timeout, "retries": retries, "concurrency": concurrency,
                       "cache_dir": str(cache or out / "cache")}
            spec = AgentSpec("endpoint", endpoint=endpoint, model=model, options=options,
                             temperature=0.7 if temperature is None else temperature)
        else:
            spec = AgentSpec(agent, epsilon=epsilon, checkpoint=str(checkpoint) if checkpoint else None,
                             temperature=1.0 if temperature is None else temperature)
        command = "bib " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["agency"] else ""
        run_suite(suite, spec, out, grids=grids, rollouts=rollouts, seed=seed, workers=workers,
                  meg=not no_meg, command=command)
        typer.echo((out / "tables.md").read_text(encoding="utf-8").rstrip())

    @sub.command()
    def report(folder: Path = typer.Argument(..., help="A folder written by `bib agency run`.")) -> None:
        """Tables (tables.md, tables/*.csv) and plots (plots/*.png) of a run."""
        from bib.agency.report import make_report

        text, figures = make_report(folder)
        typer.echo(text.rstrip())
        for f in figures:
            typer.echo(f"wrote {f}")

    @sub.command("train-policy")
    def train_policy(
        out: Path = typer.Option(..., "--out", help="Checkpoint file to write."),
        grids: int = typer.Option(200, "--grids", help="Navigation training grids (key tasks get a fifth / a tenth)."),
        epochs: int = typer.Option(6, "--epochs", help="Training epochs."),
        seed: int = typer.Option(1000, "--seed", help="Seed of the training grids (keep it apart from evaluation seeds)."),
    ) -> None:
        """Train the policy network to imitate the planner on fresh grids and save a checkpoint."""
        from bib.agency.keys import KEY_TASKS
        from bib.agency.policy_net import save, train, training_states

        if grids < 1 or epochs < 1:
            raise BibInputError("--grids and --epochs must be >= 1")
        tasks = {"navigation": grids, **{t: max(1, grids // (10 if t == "two-path-key" else 5)) for t in KEY_TASKS}}
        x, y = training_states(tasks, seed)
        model = train(x, y, epochs=epochs, seed=0,
                      log=lambda e, loss, acc: typer.echo(f"epoch {e + 1}: loss {loss:.4f}, argmax in pi* {acc:.3f}", err=True))
        save(model, out, meta={"tasks": tasks, "seed": seed, "epochs": epochs, "samples": int(len(x)),
                               "command": f"bib agency train-policy --out {out} --grids {grids} --epochs {epochs} --seed {seed}"})
        typer.echo(f"wrote {out} ({len(x)} training states)")

    @sub.command()
    def probe(
        out: Path = typer.Option(..., "--out", help="Folder for probes.json (a run folder: the report shows both)."),
        checkpoint: Path = typer.Option(None, "--checkpoint", help="policy-net checkpoint (default: the shipped one)."),
        grids: int = typer.Option(2, "--grids", help="Navigation grids per size x density cell."),
        rollouts: int = typer.Option(5, "--rollouts", help="Rollouts per grid."),
        layers: str = typer.Option("1,2", "--layers", help="Plan-probe decoder depths (1-4), comma-separated."),
        map_epochs: int = typer.Option(5, "--map-epochs", help="Cognitive-map probe epochs."),
        plan_epochs: int = typer.Option(20, "--plan-epochs", help="Plan probe epochs."),
        plan_hidden: int = typer.Option(128, "--plan-hidden", min=8, help="Plan probe width (the paper: 1024; 128 keeps CPU training short)."),
        seed: int = typer.Option(0, "--seed", help="Seed of grids, rollouts, split and training."),
    ) -> None:
        """Cognitive-map, decoded-map consistency and plan probes on the policy network's activations."""
        from bib.agency.policy_net import load
        from bib.agency.probes import run_probes
        from bib.agency.tables import write_tables

        try:
            depths = tuple(int(v) for v in layers.split(","))
        except ValueError:
            raise BibInputError(f"--layers: expected comma-separated integers, got {layers!r}") from None
        if not all(1 <= d <= 4 for d in depths) or grids < 1 or rollouts < 1:
            raise BibInputError("--layers must lie in 1..4, --grids and --rollouts >= 1")
        from bib.agency.policy_net import DEFAULT_CHECKPOINT

        model = load(checkpoint or DEFAULT_CHECKPOINT)
        command = "bib " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["agency"] else ""
        run_probes(model, out, grids=grids, rollouts=rollouts, layers=depths, map_epochs=map_epochs,
                   plan_epochs=plan_epochs, plan_hidden=plan_hidden, seed=seed, command=command)
        typer.echo(write_tables(out).rstrip())

    app.add_typer(sub, name="agency")
