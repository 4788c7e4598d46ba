"""How much the familiarization walks hug the wall the test reveals, on unobserved-constraints: four counts, and the
reader "the wall the walks hug more is the expected one" on each.

    python baselines/agent/path_adjacency.py SET [--json OUT.json] [--scores SCORES ...]

SET is a set (folder or manifest.csv) holding unobserved-constraints pairs (e.g. `bib generate
baselines/agent/unobserved-ctrl.toml --out SET`). For each episode the revealed wall is the test's walls where the
familiarization's occluder stood (what the occluder hid is in no familiarization file), and the counts are those of
:func:`bib.tasks.unobserved.hugging`: distinct familiarization path cells within one king move of it, each walk's such
cells summed over the walks, distinct path cells within two king moves, and the walks' turns within one king move.
`bib audit`'s single-feature reads the same four (`path-hugs-reveal`, `walks-hug-reveal`, `path-nears-reveal`,
`turns-at-reveal`); this script prints them over the whole set, without a fit/score split. Each reader calls the
episode with the larger count expected (a tie counts 0.5); it needs no model of the agent, only the picture. Printed:
each reader's pairwise accuracy, over all pairs and per variant, and the two outcomes' first count. bib-ctrl's
``hug`` catch pairs reverse every count (docs/tasks.md), so over its mix each reader is near 50%.

For comparison, one reader of the efficiency principle, which the family tests (the audit exempts the efficiency cue
there): ``crosses-straight-line``, how many familiarization trials' straight line from home to object (51 points
along it, rounded to cells) passes through the revealed wall, i.e. how many walks it would have made go round.

With ``--scores`` (folders `bib score` wrote, each a results.csv of per-episode surprise), each observer's pairwise
accuracy (ties 0.5) per variant, to compare with the readers': a reader of how much the walks hug the reveal is right
on nearly every plain pair and wrong on every ``hug`` pair.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import Counter, defaultdict
from pathlib import Path

from bib.episode import Episode, load_episode
from bib.stimuli.sets import EpisodeRef, find_episodes
from bib.tasks.unobserved import hugging, revealed_walls

COUNTS = ("path-hugs-reveal", "walks-hug-reveal", "path-nears-reveal", "turns-at-reveal")
"""The four counts, named as the audit's features."""
EFFICIENCY = "crosses-straight-line"


def crosses_straight_line(ep: Episode) -> int:
    """How many familiarization trials' straight line from home to object passes through a wall the test reveals."""
    walls = revealed_walls(ep)
    n = 0
    for t in ep.familiarization:
        (x0, y0), (x1, y1) = t.path[0], t.path[-1]
        line = {(round(x0 + (x1 - x0) * i / 50), round(y0 + (y1 - y0) * i / 50)) for i in range(51)}
        n += bool(line & walls)
    return n


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set", type=Path)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--scores", type=Path, nargs="*", default=[])
    args = ap.parse_args(argv)
    episodes = find_episodes(args.set)
    pairs: dict[str, dict[str, EpisodeRef]] = defaultdict(dict)
    for ref in episodes.refs:
        if ref.condition == "unobserved-constraints":
            pairs[str(ref.pair_id)][ref.outcome] = ref
    score: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name in (*COUNTS, EFFICIENCY)}
    counts: dict[str, Counter[int]] = {"expected": Counter(), "unexpected": Counter()}
    for pair in pairs.values():
        eps = [load_episode(pair[o].path) for o in ("expected", "unexpected")]
        e, u = ((*hugging(x), crosses_straight_line(x)) for x in eps)
        counts["expected"][e[0]] += 1
        counts["unexpected"][u[0]] += 1
        for name, a, b in zip((*COUNTS, EFFICIENCY), e, u):
            hit = 1.0 if a > b else 0.5 if a == b else 0.0
            score[name]["all"].append(hit)
            score[name][pair["expected"].variant or '""'].append(hit)
    out = {"pairs": len(pairs),
           "accuracy": {name: {k: sum(v) / len(v) for k, v in sorted(by.items())} for name, by in score.items()},
           "counts": {k: dict(sorted(v.items())) for k, v in counts.items()}}
    print(f"{args.set}: {len(pairs)} unobserved-constraints pairs; 'the wall the walks hug more = expected' "
          f"({EFFICIENCY}: 'the wall across more straight lines = expected', the efficiency principle):")
    for name, by in score.items():
        parts = ", ".join(f"{k} {100 * sum(v) / len(v):.1f}% of {len(v)}" for k, v in sorted(by.items()))
        print(f"  {name}: {parts}")
    for k, c in counts.items():
        print(f"  {k}: path cells within one king move of the revealed wall -> pairs {dict(sorted(c.items()))}")
    for folder in args.scores:
        with open(folder / "results.csv", newline="") as fh:
            surprise = {r["episode_id"]: float(r["surprise"]) for r in csv.DictReader(fh)}
        by: dict[str, list[float]] = defaultdict(list)
        for pair in pairs.values():
            d = surprise[pair["unexpected"].id] - surprise[pair["expected"].id]
            by[pair["expected"].variant or '""'].append(1.0 if d > 0 else 0.5 if d == 0 else 0.0)
        out.setdefault("observers", {})[str(folder)] = {k: sum(v) / len(v) for k, v in sorted(by.items())}  # type: ignore[union-attr]
        print(f"  {folder}: " + ", ".join(f"{k} {100 * sum(v) / len(v):.1f}% of {len(v)}" for k, v in sorted(by.items())))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
