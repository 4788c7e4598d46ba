"""MEG speed: our sparse soft value iteration vs imitation's mce_partition_fh on seals CliffWorld, and MEG timings.

Run: .venv/bin/python benchmarks/meg.py [--smoke]

Prints, per CliffWorld size, one soft value iteration pass (beta = 1) of
``bib.meg.soft_value_iteration`` against ``imitation.algorithms.mce_irl.mce_partition_fh`` on the
same seals ``CliffWorldEnv`` (when ``imitation`` and ``seals`` are importable: the optional
``bench`` extra), and always against a straightforward dense numpy reimplementation of
``mce_partition_fh`` (the named in-process reference when imitation is missing). Then the
issue's targets: known-utility MEG with exact beta on 100 x 20 / H = 110 (< 0.5 s) and
unknown-utility (tabular) MEG on 7 x 4 / H = 40 (< 1 s). Peak memory via ru_maxrss.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import scipy.special

from bib.meg import known_utility_meg, soft_value_iteration, tabular_utility_meg
from bib.meg.cliffworld import cliffworld, epsilon_greedy

SIZES = [(7, 4, 40), (15, 6, 18), (100, 20, 110)]


def dense_mce_partition_fh(T: np.ndarray, reward: np.ndarray, horizon: int) -> np.ndarray:
    """imitation's ``mce_partition_fh`` (discount 1) written out densely: returns pi[H, S, A]."""
    S, A, _ = T.shape
    V = np.full((horizon, S), -np.inf)
    Q = np.zeros((horizon, S, A))
    Q[horizon - 1] = reward[:, None]
    V[horizon - 1] = scipy.special.logsumexp(Q[horizon - 1], axis=1)
    for t in reversed(range(horizon - 1)):
        Q[t] = reward[:, None] + T @ V[t + 1]
        V[t] = scipy.special.logsumexp(Q[t], axis=1)
    return np.exp(Q - V[:, :, None])


def best_time(fn, repeats: int, cpu: bool = False) -> tuple[float, object]:
    """Minimum wall (or process CPU) time of ``repeats`` calls after one warm-up call, and the last result."""
    clock = time.process_time if cpu else time.perf_counter
    out = fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        out = fn()
        best = min(best, clock() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="the two small CliffWorlds, 1 repeat, MEG on 7 x 4: CI's check that the script runs")
    args = parser.parse_args()
    sizes = SIZES[:2] if args.smoke else SIZES
    try:
        from imitation.algorithms.mce_irl import mce_partition_fh
        from seals.diagnostics.cliff_world import CliffWorldEnv
    except ImportError as exc:  # the optional `bench` extra
        mce_partition_fh = None
        print(f"imitation/seals not importable ({exc}); skipping them: install the `bench` extra "
              "(pip install -e '.[bench]') to compare. The dense reimplementation below is the reference.")
    print("soft value iteration, one pass (beta = 1), best of N, milliseconds")
    print(f"{'CliffWorld':>16} {'ours':>9} {'imitation':>10} {'ratio':>7} {'dense ref':>10} {'ratio':>7}  max |pi diff|")
    for width, height, horizon in sizes:
        mdp = cliffworld(width, height, horizon)
        T = mdp.dense_transitions()
        repeats = 1 if args.smoke else 3 if width >= 100 else 20
        ours, svi = best_time(lambda: soft_value_iteration(mdp, 1.0), repeats * 5)
        dense, pi_ref = best_time(lambda: dense_mce_partition_fh(T, mdp.utility, horizon), repeats)
        diff = float(np.abs(svi.policy - pi_ref).max())
        imit_s, ratio_i = "-", "-"
        if mce_partition_fh is not None:
            env = CliffWorldEnv(width=width, height=height, horizon=horizon, use_xy_obs=False)
            assert np.allclose(env.transition_matrix, T) and np.allclose(env.reward_matrix, mdp.utility)
            imit, (_, _, pi_imit) = best_time(lambda: mce_partition_fh(env), repeats)
            diff = max(diff, float(np.abs(svi.policy - pi_imit).max()))
            imit_s, ratio_i = f"{imit * 1e3:10.2f}", f"{imit / ours:6.0f}x"
        print(f"{f'{width}x{height} H={horizon}':>16} {ours * 1e3:9.3f} {imit_s:>10} {ratio_i:>7} {dense * 1e3:10.2f} "
              f"{dense / ours:6.0f}x  {diff:.1e}")

    w, h, horizon = (7, 4, 40) if args.smoke else (100, 20, 110)
    big = cliffworld(w, h, horizon)
    pol = epsilon_greedy(big, 0.1)
    t_known, res = best_time(lambda: known_utility_meg(big, pol), 3)
    c_known, _ = best_time(lambda: known_utility_meg(big, pol), 3, cpu=True)
    print(f"known-utility MEG, exact beta, {w}x{h} H={horizon}, eps-greedy 0.1: {t_known:.3f} s wall, {c_known:.3f} s CPU "
          f"(target < 0.5 s); MEG {res.meg:.3f}, beta* {res.beta:.4f}, {res.iterations} backward passes")
    small = cliffworld()
    pol = epsilon_greedy(small, 0.1)
    t_unknown, res = best_time(lambda: tabular_utility_meg(small, pol), 3)
    c_unknown, _ = best_time(lambda: tabular_utility_meg(small, pol), 3, cpu=True)
    print(f"unknown-utility MEG (tabular, L-BFGS), 7x4 H=40, eps-greedy 0.1: {t_unknown:.3f} s wall, {c_unknown:.3f} s CPU "
          f"(target < 1 s); MEG {res.meg:.3f}")
    print(f"peak memory (ru_maxrss): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
