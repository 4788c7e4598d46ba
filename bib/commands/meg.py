"""MEG commands: `bib meg cliffworld` (the paper's experiments) and `bib meg episodes` (MEG of stimulus agents)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from bib.commands._common import FORCE, WORKERS, optional_out, value
from bib.errors import BibInputError


class Policy(str, Enum):
    """CliffWorld policies `bib meg cliffworld --policy` measures."""

    optimal = "optimal"
    eps_greedy = "eps-greedy"


def register(app: typer.Typer) -> None:
    """Add the ``meg`` command group to ``app``."""
    sub = typer.Typer(help="Maximum entropy goal-directedness (MEG, MacDermott et al. 2024).", no_args_is_help=True)

    @sub.command()
    def cliffworld(
        width: int = typer.Option(None, "--width", min=3, help="Grid width (default 7).", show_default=False),
        height: int = typer.Option(None, "--height", min=2, help="Grid height (default 4).", show_default=False),
        horizon: int = typer.Option(None, "--horizon", min=1, help="Number of decisions H (default 40).", show_default=False),
        wind: float = typer.Option(None, "--wind", min=0.0, max=1.0, help="Probability of being blown one extra row up (default 0.3).", show_default=False),
        policy: Policy | None = typer.Option(None, "--policy", help="Measure one policy (default: both experiments).", show_default=False),  # noqa: UP007
        epsilon: float = typer.Option(0.1, "--epsilon", min=0.0, max=1.0, help="With --policy eps-greedy: the exploration rate."),
        goal_length: int = typer.Option(None, "--goal-length", min=1, help="Rightmost top-row cells rewarded +10 (default 1); alone: measure the optimal policy for it.", show_default=False),
        mlp_restarts: int = typer.Option(0, "--mlp-restarts", min=0, help="Also unknown-utility MEG over an MLP (256 hidden units), this many seeds."),
        seed: int = typer.Option(0, "--seed", help="Base seed of the MLP restarts."),
        paper: bool = typer.Option(False, "--paper", help="The paper's stated CliffWorld (10 x 4, wind 0.3, H 40), both experiments, beside its Appendix D tables."),
        out: Path | None = optional_out("cliffworld.json, cliffworld.md, for both experiments cliffworld.png/.svg and occupancy.png/.svg (Figure 5), and provenance.json"),  # noqa: UP007
        force: bool = FORCE,
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    ) -> None:
        """MEG of CliffWorld policies: known utility (exact beta) and unknown utility (tabular, optionally MLP)."""
        from bib.meg import cliffworld as cw

        given = {"width": width, "height": height, "horizon": horizon, "wind": wind}
        if paper:
            if policy is not None or goal_length is not None:
                raise BibInputError("--paper runs both of the paper's experiments; leave out --policy and --goal-length")
            clash = [f"--{k} {v}" for k, v in given.items() if v is not None]
            if clash:
                raise BibInputError(f"--paper sets the CliffWorld itself (10 x 4, H 40, wind 0.3); leave out {', '.join(clash)}")
        settings = {k: (cw.PAPER_SETTINGS if paper else cw.DEFAULT_SETTINGS)[k] if v is None else v for k, v in given.items()}
        width, height, horizon, wind = (settings[k] for k in ("width", "height", "horizon", "wind"))
        if goal_length is not None and goal_length > width:
            raise BibInputError(f"--goal-length {goal_length}: at most --width ({width}) cells")
        folder = None
        if out is not None:
            from bib.io import OutputFolder

            folder = OutputFolder(out, {"command": "meg cliffworld", "width": width, "height": height, "horizon": horizon,
                                        "wind": wind, "policy": value(policy), "epsilon": epsilon,
                                        "goal_length": goal_length, "mlp_restarts": mlp_restarts, "seed": seed,
                                        "paper": paper}, force=force)
        policy = value(policy)  # type: ignore[assignment]

        if policy is None and goal_length is not None:
            policy = "optimal"
        goal_length = 1 if goal_length is None else goal_length
        if policy is None:
            rows = cw.run_experiments(width, height, horizon, wind, mlp_restarts=mlp_restarts, seed=seed)
        else:
            mdp = cw.cliffworld(width, height, horizon, wind, goal_length=goal_length)
            if policy == "optimal":
                pol, experiment, param = cw.greedy_policy(mdp), "goal-length", goal_length
            else:
                pol, experiment, param = cw.epsilon_greedy(mdp, epsilon), "epsilon-greedy", epsilon
            feats = cw.xy_features(width, height)
            rows = [cw.measure(mdp, pol, experiment, param, mlp_restarts=mlp_restarts, seed=seed, features=feats)]
        command = ("bib meg cliffworld --paper" if paper else
                   f"bib meg cliffworld --width {width} --height {height} --horizon {horizon} --wind {wind}")
        if policy is not None:
            command += f" --policy {policy}" + (f" --epsilon {epsilon}" if policy == "eps-greedy" else "")
        if policy is not None:
            command += f" --goal-length {goal_length}"
        if mlp_restarts:
            command += f" --mlp-restarts {mlp_restarts} --seed {seed}"
        if out is not None:
            command += f" --out {out}"
        result = cw.CliffWorldMEG(rows, {"width": width, "height": height, "horizon": horizon, "wind": wind}, command,
                                  paper=cw.compare_with_paper(rows) if paper else None)
        if folder is not None:
            with folder as tmp:
                result.save(tmp)
        text = cw.format_tables(rows) + ("\n" + cw.format_paper_comparison(result.paper) if paper else "")
        typer.echo(result.to_json_text() if as_json else text.rstrip(), nl=not as_json)

    @sub.command()
    def episodes(
        directory: Path = typer.Argument(..., help="A set or folder of episode JSON files (searched recursively)."),
        workers: int = WORKERS,
        out: Path | None = optional_out("meg-episodes.json (one row per trial), meg-episodes.md (the table) and provenance.json"),  # noqa: UP007
        force: bool = FORCE,
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    ) -> None:
        """MEG of the agent in every trial: towards each object (known utility) and over all object utilities."""
        from bib.meg.episodes import meg_of_directory

        folder = None
        if out is not None:
            from bib.io import OutputFolder

            folder = OutputFolder(out, {"command": "meg episodes", "episodes": directory}, force=force)
        result = meg_of_directory(directory, workers=workers, progress=not as_json)
        if folder is not None:
            with folder as tmp:
                result.save(tmp)
        typer.echo(result.to_json_text() if as_json else result.to_markdown(), nl=not as_json)

    app.add_typer(sub, name="meg")
