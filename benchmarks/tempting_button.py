"""The recurrent DQN on TemptingButton (the paper's Section 3.2): reward per turn against steps.

    .venv/bin/python benchmarks/tempting_button.py --steps 4000 --seeds 3 --paper --out baselines/reflection/tempting-button

Writes ``curve.csv`` (agent, variation, seed, the mean reward of each block of ``--block`` turns)
and ``curve.png`` (one panel per variation, one line per seed; ``--plot-only`` redraws it from the
CSV). ``--paper`` runs ``recurrent-dqn`` at the eight settings of the paper's experiment script
(TemptingButtonExperiment.py: the defaults, learning rate 0.05 / 0.1 / 0.01 / 0.001, lookback 1 / 3
/ 5); without it, ``--agents`` (``recurrent-dqn`` at its defaults or at ``--learning-rate`` /
``--lookback``; the SB3 ``dqn`` agent, a feed-forward DQN, for contrast; ``constant``, which never
pushes, for the optimum on the same rooms). Pushing every button
earns -0.5 per turn, never pushing +0.5 (the optimum).
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
import time
from pathlib import Path

import numpy as np

COMMAND = ".venv/bin/python benchmarks/tempting_button.py"


def rewards(agent_name: str, seed: int, steps: int, **options: float) -> list[int]:
    """The reward of every turn of one TemptingButton run."""
    from bib.reflection import environments as E
    from bib.reflection.drqn import RecurrentDQN
    from bib.reflection.environments import EnvSpec
    from bib.reflection.harness import make_agent, play
    from bib.reflection.policy import Uniforms

    agent = RecurrentDQN(seed, **options) if agent_name == "recurrent-dqn" else make_agent(agent_name, seed)
    return play(EnvSpec(E.TemptingButton), agent, steps, Uniforms(np.random.default_rng([seed, 1, 0]))).rewards


#: The settings of the paper's TemptingButtonExperiment.py: (label, options of RecurrentDQN).
PAPER_VARIATIONS = (
    ("defaults", {}),
    ("learning_rate=0.05", {"learning_rate": 0.05}),
    ("learning_rate=0.1", {"learning_rate": 0.1}),
    ("learning_rate=0.01", {"learning_rate": 0.01}),
    ("learning_rate=0.001", {"learning_rate": 0.001}),
    ("lookback=1", {"lookback": 1}),
    ("lookback=3", {"lookback": 3}),
    ("lookback=5", {"lookback": 5}),
)


def runs(args: argparse.Namespace) -> list[tuple[str, str, dict]]:
    """(agent, variation label, RecurrentDQN options) of every run a seed makes."""
    if args.paper:
        return [("recurrent-dqn", label, options) for label, options in PAPER_VARIATIONS]
    options = {k: v for k, v in (("learning_rate", args.learning_rate), ("lookback", args.lookback)) if v is not None}
    label = ",".join(f"{k}={v}" for k, v in options.items()) or "defaults"
    other = {"a2c": "sb3", "dqn": "sb3", "ppo": "sb3"}  # the others (random, constant, ...): "reference"
    return [(a, label, options) if a == "recurrent-dqn" else (a, other.get(a, "reference"), {})
            for a in args.agents.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--block", type=int, default=250)
    parser.add_argument("--paper", action="store_true", help="the eight settings of the paper's experiment script")
    parser.add_argument("--learning-rate", type=float, help="recurrent-dqn's (default: the agent's, 0.1)")
    parser.add_argument("--lookback", type=int, help="recurrent-dqn's (default: the agent's, 10)")
    parser.add_argument("--agents", default="recurrent-dqn,dqn")
    parser.add_argument("--out", type=Path, help="the folder for curve.csv and curve.png (required but with --smoke)")
    parser.add_argument("--plot-only", action="store_true", help="redraw curve.png from the folder's curve.csv")
    parser.add_argument("--smoke", action="store_true",
                        help="200 steps, 1 seed, blocks of 100, into a temporary folder: CI's check that the script runs")
    args = parser.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            args.steps, args.seeds, args.block, args.out = 200, 1, 100, Path(tmp)
            run(args)
        return
    if args.out is None:
        parser.error("--out is required")
    if not args.plot_only and not 0 < args.block <= args.steps:
        parser.error(f"--block {args.block} must be between 1 and --steps {args.steps} (a curve needs one block)")
    run(args)


def run(args: argparse.Namespace) -> None:
    """Run the settings of ``args`` and write curve.csv and curve.png into ``args.out``."""
    if args.plot_only:
        plot(args.out)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    command = f"{COMMAND} --steps {args.steps} --seeds {args.seeds} --block {args.block}"
    if args.paper:
        command += " --paper"
    else:
        for flag, value in (("--learning-rate", args.learning_rate), ("--lookback", args.lookback)):
            command += f" {flag} {value}" if value is not None else ""
        command += f" --agents {args.agents}"
    command += f" --out {args.out}"
    rows = []
    for agent, label, options in runs(args):
        for seed in range(args.seeds):
            cpu = time.process_time()
            r = np.asarray(rewards(agent, seed, args.steps, **options), dtype=float)
            blocks = r[: len(r) // args.block * args.block].reshape(-1, args.block).mean(axis=1)
            rows += [[agent, label, seed, (i + 1) * args.block, f"{b:.4f}"] for i, b in enumerate(blocks)]
            print(f"{agent} {label} seed {seed}: {np.round(blocks, 3).tolist()} "
                  f"({time.process_time() - cpu:.1f} s CPU, load {os.getloadavg()[0]:.1f})", flush=True)
    with open(args.out / "curve.csv", "w", newline="") as f:
        f.write(f"# made by: {command}\n")
        w = csv.writer(f)
        w.writerow(["agent", "variation", "seed", "step", "mean_reward_of_block"])
        w.writerows(rows)
    plot(args.out)


def plot(out: Path) -> None:
    """curve.png from curve.csv: a panel per agent and variation, a line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(out / "curve.csv") as f:
        command = f.readline().removeprefix("# made by: ").strip()
        rows = list(csv.DictReader(f))
    panels = list(dict.fromkeys((r["agent"], r["variation"]) for r in rows))
    cols = min(4, len(panels))
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 2.6 * nrows + 0.3), squeeze=False, sharey=True)
    for ax, (agent, variation) in zip(axes.flat, panels):
        mine = [r for r in rows if (r["agent"], r["variation"]) == (agent, variation)]
        for seed in dict.fromkeys(r["seed"] for r in mine):
            line = [r for r in mine if r["seed"] == seed]
            ax.plot([int(r["step"]) for r in line], [float(r["mean_reward_of_block"]) for r in line], marker="o", ms=2,
                    lw=1, label=f"seed {seed}")
        ax.axhline(0.5, ls="--", c="gray", lw=0.8)
        ax.axhline(-0.5, ls=":", c="gray", lw=0.8)
        ax.set_ylim(-0.7, 0.7)
        ax.set_title(f"{agent}, {variation}", fontsize=8)
        ax.set_xlabel("turn", fontsize=7)
        ax.tick_params(labelsize=7)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    axes[0, 0].set_ylabel("mean reward per turn (block)", fontsize=7)
    axes[0, 0].legend(fontsize=6)
    fig.suptitle("TemptingButton: +0.5 never push (the optimum, dashed), -0.5 always push (dotted)", fontsize=9)
    fig.text(0.01, 0.005, command, fontsize=5)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(out / "curve.png", dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
