"""A perceptual cue the audit does not read on unobserved-constraints: how many familiarization path cells touch the
wall the test reveals.

    python baselines/agent/path_adjacency.py SET [--json OUT.json]

SET is a set (folder or manifest.csv) holding unobserved-constraints pairs (e.g. `bib generate
baselines/agent/unobserved-ctrl.toml --out SET`). For each episode the revealed wall is the test layout's walls less
the familiarization's (the familiarization shows only the border: what the occluder hid is in no file), and the cue
is the number of distinct cells of the familiarization paths within one king move of it
(:func:`bib.tasks.unobserved.path_adjacency`; the ``touch`` token ties it on every pair). The reader calls the
episode with the larger count expected (a tie counts 0.5), as a shortcut of `bib audit` would; it needs no model of
the agent, only the picture. Printed: the reader's pairwise accuracy, per variant, and the two outcomes' counts.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from bib.episode import load_episode
from bib.stimuli.sets import EpisodeRef, find_episodes
from bib.tasks.unobserved import path_adjacency


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set", type=Path)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    episodes = find_episodes(args.set)
    pairs: dict[str, dict[str, EpisodeRef]] = defaultdict(dict)
    for ref in episodes.refs:
        if ref.condition == "unobserved-constraints":
            pairs[str(ref.pair_id)][ref.outcome] = ref
    score: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, Counter[int]] = {"expected": Counter(), "unexpected": Counter()}
    for pair in pairs.values():
        e, u = (path_adjacency(load_episode(pair[o].path)) for o in ("expected", "unexpected"))
        counts["expected"][e] += 1
        counts["unexpected"][u] += 1
        hit = 1.0 if e > u else 0.5 if e == u else 0.0
        score["all"].append(hit)
        score[pair["expected"].variant or '""'].append(hit)
    out = {"pairs": len(pairs), "accuracy": {k: sum(v) / len(v) for k, v in score.items()},
           "counts": {k: dict(sorted(v.items())) for k, v in counts.items()}}
    print(f"{args.set}: {len(pairs)} unobserved-constraints pairs")
    for k, v in score.items():
        print(f"  'more path cells touch the revealed wall = expected' on {k}: {100 * sum(v) / len(v):.1f}% of {len(v)}")
    for k, c in counts.items():
        print(f"  {k}: path cells touching the revealed wall -> pairs {dict(sorted(c.items()))}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
