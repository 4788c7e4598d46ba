"""The leak battery through a submission kit: every leak reader of ``bib audit`` scored on a kit as ``bib score KIT`` hands it.

Builds the kit of SET (``bib blind SET --out OUT/kit --key OUT/key.csv``, a fresh random secret unless
``--seed``), reads the kit's episodes in ``bib score``'s chunks (``load_blind`` of each file, each chunk's
views shuffled: :func:`bib.observers.scoring.score_files` for every reader at once, so each file is
read once), and scores each reader against the key as ``bib evaluate KEY RESULTS`` does. Prints
accuracy % per condition and the audit's verdict per reader (``judge_leak`` over readers x conditions
cells), the CPU and wall time of both steps and the load average; writes ``OUT/leaks.json``.
``bib audit SET`` gives the same readers through ``bib score``'s own blind view.
Usage: ``python benchmarks/leaks.py SET --out OUT [--seed N]`` (OUT must not hold a kit), or ``--smoke``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from bib.evaluation import evaluate, find_episodes, readout
from bib.observers.audit import BAND
from bib.observers.base import surprise_of_views
from bib.observers.leaks import LEAKS, coin_p, judge_leak, leak_readers
from bib.observers.scoring import CHUNK
from bib.stimuli.blind import load_blind
from bib.stimuli.kit import make_kit, read_key


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("set", type=Path, nargs="?", help="the VOE set (a folder with a manifest)")
    ap.add_argument("--out", type=Path, help="folder for kit/, key.csv and leaks.json")
    ap.add_argument("--seed", type=int, default=None, help="the kit's seed (default: a random secret)")
    ap.add_argument("--smoke", action="store_true",
                    help="bib-ctrl at 1 unit per condition, generated into a temporary folder: CI's check that the script runs")
    args = ap.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            from bib.stimuli.build import build_spec
            from bib.stimuli.spec import load_spec

            args.set, args.out = Path(tmp) / "set", Path(tmp) / "out"
            build_spec(load_spec("bib-ctrl"), args.set, workers=1, limit=1)
            args.out.mkdir()
            run(args)
        return
    if args.set is None or args.out is None:
        ap.error("SET and --out are required (or --smoke)")
    run(args)


def run(args: argparse.Namespace) -> None:
    """Build the kit of ``args.set`` into ``args.out`` and print the readers' accuracies."""
    kit, key = args.out / "kit", args.out / "key.csv"
    c0, w0 = time.process_time(), time.perf_counter()
    make_kit(args.set, kit, key, seed=args.seed, progress=False, allow_public=True)  # the view's leaks, not rebuilding
    c1, w1 = time.process_time(), time.perf_counter()
    refs = find_episodes(kit).refs
    keyed, fingerprint = read_key(key)
    readers = leak_readers()
    surprise: dict[str, dict[str, float]] = {r.leak: {} for r in readers}
    for i in range(0, len(refs), CHUNK):
        part = refs[i : i + CHUNK]
        views = [load_blind(r.path, r.id) for r in part]
        ids = [r.id for r in part]
        for reader in readers:
            for eid, s in zip(ids, surprise_of_views(reader, views, ids)):
                surprise[reader.leak][eid] = readout(s, "max")
    c2, w2 = time.process_time(), time.perf_counter()
    results = {leak: evaluate(keyed.refs, surprise[leak], n_boot=200) for leak in LEAKS}
    cells = sum(len(r) for r in results.values())
    doc = {"set": str(args.set), "kit": fingerprint, "episodes": len(refs),
           "episode_file_sizes": sorted({f.stat().st_size for f in (kit / "episodes").iterdir()}),
           "blind_cpu_s": round(c1 - c0, 1), "blind_wall_s": round(w1 - w0, 1),
           "read_cpu_s": round(c2 - c1, 1), "read_wall_s": round(w2 - w1, 1), "load": os.getloadavg(),
           "machine": f"{platform.node()} {os.cpu_count()} cores",
           "readers": {leak: {c: {"accuracy": r.accuracy, "n_pairs": r.n_pairs, "n_ties": r.n_ties, "p": coin_p(r),
                                  "status": judge_leak(r, BAND, cells)[0]} for c, r in res.items()}
                       for leak, res in results.items()}}
    (args.out / "leaks.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    conditions = list(next(iter(results.values())))
    print(f"kit {fingerprint}: {len(refs)} episodes, episode files of {doc['episode_file_sizes']} bytes; "
          f"bib blind {doc['blind_cpu_s']} s CPU ({doc['blind_wall_s']} s wall), reading {doc['read_cpu_s']} s CPU "
          f"({doc['read_wall_s']} s wall); load {' '.join(f'{x:.1f}' for x in doc['load'])}")
    print("reader      " + " ".join(c[:12].rjust(12) for c in conditions) + "  verdict")
    for leak, res in results.items():
        fail = any(v["status"] == "FAIL" for v in doc["readers"][leak].values())
        print(f"{leak:11s} " + " ".join(f"{100 * res[c].accuracy:12.1f}" for c in conditions) + ("  FAIL" if fail else "  ok"))


if __name__ == "__main__":
    main()
