"""Why bc-mlp sits at chance on efficiency-irrational (issue 31 item 2): the same trained models on the
same pairs, as generated and in two counterfactual test trials, with where the max sits and what the
model predicts on the detour.

    python baselines/learned/irrational.py SET NAME=CHECKPOINT [NAME=CHECKPOINT ...] [--pairs N] [--json OUT.json]

SET is an episode set (folder or manifest.csv) holding efficiency-irrational pairs (bib-eval's), each
CHECKPOINT a ``bib train`` folder of a BC model (bc-mlp or bc-rnn; their (dx, dy) head is read). Every
episode goes to the model as its blind view, as ``bib score`` hands it, so the "as generated" column
equals ``bib evaluate`` on the same pairs. Per model:

- ``as generated``: the pair as the generator made it (the expected episode: irrational familiarization,
  no barrier; the unexpected: rational, around the barrier; both end on one curved test path on a
  fresh layout of the scene, the barrier removed);
- ``test repeats trial k``: both test trials replaced by familiarization trial k's layout without its
  barrier and its curved path (k drawn per pair from a seeded Generator), so the expected episode's test
  repeats one of its own familiarization trials exactly and the unexpected one is path control's
  unexpected test (a fact of BIB's data we do not have: ``reference/bib.md`` says which layouts path
  control tests on, not which irrational does);
- ``straight test``: both test trials replaced by a shortest path on the fresh layout; the column is the
  share of pairs whose rational-familiarization episode is the less surprised (a context-using model
  expects the efficient path after the rational agent).

and, on the pairs as generated, per outcome: the share of maxima on a detour step (a move on no shortest
path to the object in the test layout), the mean surprise on detour and on efficient steps, and the mean
cosine between the model's predicted move (tanh of its (dx, dy) output) and the observed move, and
between it and the nearest optimal move, on detour steps.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from bib.episode import Episode, load_episode
from bib.evaluation import find_episodes, pair_score, pair_up
from bib.observers.learned import load_observer
from bib.stimuli.blind import blind_episode, episode_secret, file_secret
from bib.tasks.common import make_trial
from bib.tasks.efficiency import without_inner_walls
from bib.world.dynamics import ACTIONS, action_between
from bib.world.planning import optimal_actions_at, shortest_path

CONDITION = "efficiency-irrational"


def with_test(ep: Episode, layout, path) -> Episode:
    """``ep`` with its test trial replaced by ``path`` on ``layout`` (phase test, goal A)."""
    test = make_trial(layout, path, "A", "test")
    return replace(ep, trials=(*ep.familiarization, test))


def variants(e: Episode, u: Episode, k: int) -> dict[str, tuple[Episode, Episode]]:
    """The pair as generated, its test replaced by familiarization trial k, and by a straight path."""
    fam = e.familiarization[k]
    lay_k = without_inner_walls(fam.layout)
    test = e.test
    straight = shortest_path(test.layout, test.path[0], test.path[-1])
    return {"as generated": (e, u),
            "test repeats trial k": (with_test(e, lay_k, fam.path), with_test(u, lay_k, fam.path)),
            "straight test": (with_test(e, test.layout, straight), with_test(u, test.layout, straight))}


def predictions(obs, views: list[Episode]) -> list[np.ndarray]:
    """``[n_steps, 2]`` predicted (dx, dy) (tanh of the head) per episode, batched as scoring does."""
    out: list[np.ndarray] = []
    obs.net.eval()
    with torch.inference_mode():
        for batch in obs.score_batches(views):
            pred = torch.tanh(obs.net(batch)).double().numpy()
            out += np.split(pred, np.cumsum(batch.query_counts)[:-1])
    return out


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else 0.0


def detour_steps(ep: Episode) -> list[bool]:
    """Per test step: the move lies on no shortest path to the path's last cell in the test layout."""
    t = ep.test
    goal = t.path[-1]
    return [action_between(a, b) not in optimal_actions_at(t.layout, a, goal) for a, b in zip(t.path, t.path[1:])]


def analyse(obs, pairs: list[tuple[Episode, Episode, bytes, bytes]], seed: int = 0) -> dict[str, object]:
    """Accuracies of the three test trials and the detour diagnostics of one model."""
    rng = np.random.default_rng(seed)
    ks = [int(rng.integers(len(e.familiarization))) for e, _, _, _ in pairs]
    acc: dict[str, float] = {}
    gen_views: list[Episode] = []
    for name in ("as generated", "test repeats trial k", "straight test"):
        views = []
        for (e, u, se, su), k in zip(pairs, ks):
            ve, vu = variants(e, u, k)[name]
            if name == "as generated":  # the files' own secrets, as bib score reads them
                views += [blind_episode(ve, se), blind_episode(vu, su)]
            else:
                views += [blind_episode(ve, episode_secret(ve)), blind_episode(vu, episode_secret(vu))]
        s = obs.surprise_many(views)
        mx = [float(x.max()) for x in s]
        if name == "straight test":  # the rational (unexpected-labelled) context should be the less surprised
            scores = [pair_score(mx[i + 1], mx[i]) for i in range(0, len(mx), 2)]
        else:
            scores = [pair_score(mx[i], mx[i + 1]) for i in range(0, len(mx), 2)]
        acc[name] = 100.0 * float(np.mean(scores))
        if name == "as generated":
            gen_views, gen_steps = views, s
    preds = predictions(obs, gen_views)
    diag: dict[str, dict[str, float]] = {}
    for j, outcome in enumerate(("expected", "unexpected")):
        on_detour, s_det, s_eff, c_obs, c_opt = [], [], [], [], []
        for i, (e, u, _, _) in enumerate(pairs):
            ep = (e, u)[j]
            steps, pred = gen_steps[2 * i + j], preds[2 * i + j]
            det = detour_steps(ep)
            on_detour.append(det[int(np.argmax(steps))])
            t = ep.test
            for n, (a, b) in enumerate(zip(t.path, t.path[1:])):
                (s_det if det[n] else s_eff).append(float(steps[n]))
                if det[n]:
                    c_obs.append(_cos(pred[n], np.array(ACTIONS[action_between(a, b)], float)))
                    c_opt.append(max(_cos(pred[n], np.array(ACTIONS[o], float))
                                     for o in optimal_actions_at(t.layout, a, t.path[-1])))
        diag[outcome] = {"max on a detour step %": 100.0 * float(np.mean(on_detour)),
                         "surprise on detour steps": float(np.mean(s_det)),
                         "surprise on efficient steps": float(np.mean(s_eff)) if s_eff else float("nan"),
                         "cos(predicted, observed) on detour": float(np.mean(c_obs)),
                         "cos(predicted, nearest optimal) on detour": float(np.mean(c_opt))}
    diff = [float(gen_steps[2 * i].max() - gen_steps[2 * i + 1].max()) for i in range(len(pairs))]
    return {"accuracy": acc, "outcomes": diag,
            "max expected - max unexpected": {"mean": float(np.mean(diff)), "mean abs": float(np.mean(np.abs(diff)))}}


def shape(pairs: list[tuple[Episode, Episode, bytes, bytes]]) -> dict[str, float]:
    """Test-path facts of the pairs: steps, detour steps, excess over a shortest path (moves)."""
    steps, det, excess = [], [], []
    for e, _, _, _ in pairs:
        t = e.test
        steps.append(t.n_steps)
        det.append(sum(detour_steps(e)))
        excess.append(t.n_steps - (len(shortest_path(t.layout, t.path[0], t.path[-1])) - 1))
    return {"pairs": len(pairs), "test steps": float(np.mean(steps)), "detour steps": float(np.mean(det)),
            "extra moves over a shortest path": float(np.mean(excess))}


def load_pairs(set_path: str, limit: int) -> list[tuple[Episode, Episode, bytes, bytes]]:
    found = find_episodes(set_path)
    paths = {r.id: r.path for r in found.refs}
    items = pair_up([r for r in found.refs if r.condition == CONDITION]).get(CONDITION, [])
    if limit:
        items = items[:limit]
    return [(load_episode(paths[e]), load_episode(paths[u]), file_secret(paths[e]), file_secret(paths[u]))
            for e, u in items]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set")
    ap.add_argument("models", nargs="+", help="NAME=CHECKPOINT (a bib train folder)")
    ap.add_argument("--pairs", type=int, default=0, help="first N pairs (0 = all)")
    ap.add_argument("--json", help="also write every number here")
    args = ap.parse_args(argv)
    pairs = load_pairs(args.set, args.pairs)
    if not pairs:
        print(f"{args.set}: no {CONDITION} pairs", file=sys.stderr)
        return 2
    out: dict[str, object] = {"set": args.set, "shape": shape(pairs), "models": {}}
    for spec in args.models:
        name, _, ckpt = spec.partition("=")
        obs = load_observer(Path(ckpt) / "checkpoint.pt")
        out["models"][name] = analyse(obs, pairs)  # type: ignore[index]
    print(f"{CONDITION}: {out['shape']}\n")
    cols = ("as generated", "test repeats trial k", "straight test")
    print("| model | " + " | ".join(cols) + " | max e - max u (mean / mean abs) |")
    print("|---|" + "---|" * (len(cols) + 1))
    for name, r in out["models"].items():  # type: ignore[union-attr]
        d = r["max expected - max unexpected"]
        print(f"| {name} | " + " | ".join(f"{r['accuracy'][c]:.1f}" for c in cols)
              + f" | {d['mean']:+.4f} / {d['mean abs']:.4f} |")
    keys = next(iter(out["models"].values()))["outcomes"]["expected"].keys()  # type: ignore[union-attr]
    print("\n| model | outcome | " + " | ".join(keys) + " |")
    print("|---|---|" + "---|" * len(keys))
    for name, r in out["models"].items():  # type: ignore[union-attr]
        for outcome, d in r["outcomes"].items():
            print(f"| {name} | {outcome} | " + " | ".join(f"{v:.3f}" for v in d.values()) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
