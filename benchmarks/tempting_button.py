"""The recurrent DQN on TemptingButton (the paper's Section 3.2): reward per turn against steps.

    .venv/bin/python benchmarks/tempting_button.py --steps 4000 --seeds 3 --out baselines/reflection/tempting-button

Writes ``curve.csv`` (agent, seed, the mean reward of each block of ``--block`` turns) and
``curve.png`` (one line per seed; ``--plot-only`` redraws it from the CSV), for ``recurrent-dqn`` and, for contrast, the SB3 ``dqn`` agent (a
feed-forward DQN). Pushing every button earns -0.5 per turn, never pushing +0.5 (the optimum).
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path

import numpy as np

COMMAND = ".venv/bin/python benchmarks/tempting_button.py"


def rewards(agent_name: str, seed: int, steps: int, **options: float) -> list[int]:
    """The reward of every turn of one TemptingButton run."""
    from bib.reflection import environments as E
    from bib.reflection.drqn import RecurrentDQN
    from bib.reflection.environments import EnvSpec
    from bib.reflection.harness import make_agent
    from bib.reflection.policy import Uniforms

    agent = RecurrentDQN(seed, **options) if agent_name == "recurrent-dqn" else make_agent(agent_name, seed)
    env = EnvSpec(E.TemptingButton).make(agent, Uniforms(np.random.default_rng([seed, 1, 0])))
    policy = agent.policy(env.num_actions, env.num_observations)
    r, o = env.start()
    state = policy.percept(policy.empty(), r, o)
    out = []
    for _ in range(steps):
        action = policy.act(state)
        state = policy.record(state, action)
        r, o = env.step(action)
        out.append(r)
        state = policy.percept(state, r, o)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--block", type=int, default=250)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--lookback", type=int, default=1)
    parser.add_argument("--agents", default="recurrent-dqn,dqn")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--plot-only", action="store_true", help="redraw curve.png from the folder's curve.csv")
    args = parser.parse_args()
    if args.plot_only:
        plot(args.out)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    command = (f"{COMMAND} --steps {args.steps} --seeds {args.seeds} --block {args.block} --gamma {args.gamma} "
               f"--lookback {args.lookback} --agents {args.agents} --out {args.out}")
    rows = []
    for agent in args.agents.split(","):
        for seed in range(args.seeds):
            cpu = time.process_time()
            options = {"gamma": args.gamma, "lookback": args.lookback} if agent == "recurrent-dqn" else {}
            r = np.asarray(rewards(agent, seed, args.steps, **options), dtype=float)
            blocks = r[: len(r) // args.block * args.block].reshape(-1, args.block).mean(axis=1)
            rows += [[agent, seed, (i + 1) * args.block, f"{b:.4f}"] for i, b in enumerate(blocks)]
            print(f"{agent} seed {seed}: {np.round(blocks, 3).tolist()} ({time.process_time() - cpu:.1f} s CPU, "
                  f"load {os.getloadavg()[0]:.0f})", flush=True)
    with open(args.out / "curve.csv", "w", newline="") as f:
        f.write(f"# made by: {command}\n")
        w = csv.writer(f)
        w.writerow(["agent", "seed", "step", "mean_reward_of_block"])
        w.writerows(rows)
    plot(args.out)


def plot(out: Path) -> None:
    """curve.png from curve.csv: one line per agent and seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(out / "curve.csv") as f:
        command = f.readline().removeprefix("# made by: ").strip()
        rows = list(csv.DictReader(f))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for agent, seed in dict.fromkeys((r["agent"], r["seed"]) for r in rows):
        mine = [r for r in rows if r["agent"] == agent and r["seed"] == seed]
        ax.plot([int(r["step"]) for r in mine], [float(r["mean_reward_of_block"]) for r in mine], marker="o", ms=3,
                label=f"{agent}, seed {seed}")
    ax.axhline(0.5, ls="--", c="gray", lw=0.8)
    ax.axhline(-0.5, ls=":", c="gray", lw=0.8)
    ax.set_ylim(-0.7, 0.7)
    ax.set_xlabel("turn")
    ax.set_ylabel("mean reward per turn (block)")
    ax.set_title("TemptingButton: +0.5 never push (optimum), -0.5 always push", fontsize=9)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, command, fontsize=5)
    fig.tight_layout()
    fig.savefig(out / "curve.png", dpi=120)

if __name__ == "__main__":
    main()
