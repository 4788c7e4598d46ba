"""What each power-of-two network of a recurrent-dqn run on TemptingButton answers (issue 31, item 4).

    .venv/bin/python baselines/reflection/tempting-button/networks.py --seed 0 --seed 2 --steps 1030 --seed-steps 1:2060 \
        > baselines/reflection/tempting-button/networks.md

Runs ``recurrent-dqn`` at its defaults for ``--steps`` turns (a seed's own count with
``--seed-steps SEED:STEPS``), then evaluates every network the run trained on a prefix of its real
history on the last 200 states of that history: the mean Q-value of each action (0 = skip,
1 = push) in rooms with and without a button, and the share of those states where it pushes.
"""

from __future__ import annotations

import argparse

import numpy as np


def networks(seed: int, steps: int) -> list[str]:
    import torch

    from bib.reflection import environments as E
    from bib.reflection.drqn import RecurrentDQN, windows
    from bib.reflection.environments import EnvSpec
    from bib.reflection.harness import play
    from bib.reflection.policy import Uniforms
    from bib.reflection.prefix import flatten, prefix_key

    agent = RecurrentDQN(seed)
    run = play(EnvSpec(E.TemptingButton), agent, steps, Uniforms(np.random.default_rng([seed, 1, 0])))
    policy, state = run.policy, run.state
    symbols = flatten(state[4])
    seq = np.asarray(symbols[1:], dtype=np.float32)
    n = (len(symbols) + 1) // 3
    ends = 3 * np.arange(max(0, n - 200), n)
    x = torch.from_numpy(windows(seq, ends, policy.width))
    button = seq[ends] == 1
    real = {prefix_key(symbols[: 3 * k - 1]): k for k in (2**i for i in range(n.bit_length())) if k <= n}
    out = []
    for key, k in sorted(real.items(), key=lambda kv: kv[1]):
        with torch.no_grad():
            q = policy.models[key].q(x).numpy()
        push = q.argmax(axis=1) == 1
        out.append(f"| {seed} | {k} | {q[button, 0].mean():+.2f} / {q[button, 1].mean():+.2f} | "
                   f"{q[~button, 0].mean():+.2f} / {q[~button, 1].mean():+.2f} | {push[button].mean():.2f} | "
                   f"{push[~button].mean():.2f} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, action="append", default=[])
    parser.add_argument("--steps", type=int, default=1030)
    parser.add_argument("--seed-steps", action="append", default=[], help="SEED:STEPS, a seed with its own turn count")
    args = parser.parse_args()
    runs = [(s, args.steps) for s in args.seed] + [tuple(map(int, v.split(":"))) for v in args.seed_steps]
    print("| seed | network of the first K percepts | Q skip / push, button rooms | Q skip / push, other rooms "
          "| pushes in button rooms | pushes elsewhere |\n|---|---|---|---|---|---|")
    for seed, steps in sorted(runs):
        print("\n".join(networks(seed, steps)), flush=True)


if __name__ == "__main__":
    main()
