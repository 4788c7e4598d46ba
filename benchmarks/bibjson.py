"""BIB JSON import speed: real recordings (episodes/s on one core), split into JSON parsing and the rest.

Reads the public recordings in ``../shared/data/bib-real`` (gzip; about 1.9 MB of JSON each),
decompressed once, and times ``import_file`` (parse + derive goals and paths + the episode's text)
per episode in this one process, plus plain ``json.loads`` on the same bytes as the reference
(the importer parses each trial's repeated walls once, so it beats a plain parse). Usage: ``python benchmarks/bibjson.py [--repeat N] [--dir DIR] [--smoke]``. Prints
episodes/s (wall and CPU), the load average and the machine.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from bib.stimuli.bibjson import ImportJob, import_file

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "bib-real"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=DEFAULT, help="folder of BIB recordings (.json or .json.gz)")
    ap.add_argument("--repeat", type=int, default=5, help="passes over the files (best pass is reported)")
    ap.add_argument("--smoke", action="store_true", help="one pass over 2 recordings: CI's check that the script runs")
    args = ap.parse_args()
    if args.smoke:
        args.repeat = 1
    if not args.dir.is_dir():
        if args.smoke and args.dir == DEFAULT:  # a checkout without ../shared/data: nothing to time, not a failure
            print(f"BIB JSON benchmark skipped: {args.dir} not found (the real BIB recordings, ../shared/data/bib-real)")
            return
        raise SystemExit(f"{args.dir}: not a folder of BIB recordings")
    files = sorted(f for f in args.dir.iterdir() if f.name.endswith((".json", ".json.gz")))[: 2 if args.smoke else None]
    if not files:
        raise SystemExit(f"{args.dir}: no BIB recordings")
    with tempfile.TemporaryDirectory() as tmp:
        plain = []
        for f in files:
            data = f.read_bytes()
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            p = Path(tmp) / f.name.removesuffix(".gz")
            p.write_bytes(data)
            plain.append(p)
        mb = sum(p.stat().st_size for p in plain) / len(plain) / 1e6
        jobs = [ImportJob(str(p), "", p.stem, "p", "preference", "expected" if p.stem.endswith("e") else "unexpected", "auto")
                for p in plain]
        best = {}
        for _ in range(args.repeat):
            for name, fn in (("json.loads only", lambda: [json.loads(p.read_bytes()) for p in plain]),
                             ("import_file", lambda: [import_file(j) for j in jobs])):
                w, c = time.perf_counter(), time.process_time()
                fn()
                w, c = time.perf_counter() - w, time.process_time() - c
                prev = best.get(name, (float("inf"), float("inf")))
                best[name] = (min(prev[0], w), min(prev[1], c))
    load = os.getloadavg()
    print(f"{len(files)} recordings of {mb:.2f} MB JSON each; best of {args.repeat} passes; one process")
    for name, (w, c) in best.items():
        print(f"  {name:16s} {len(files) / w:7.1f} episodes/s wall  {len(files) / c:7.1f} episodes/s CPU  "
              f"({1000 * c / len(files):.1f} ms CPU per episode)")
    parse = best["json.loads only"][1]
    total = best["import_file"][1]
    print(f"  the whole import takes {total / parse:.2f}x the CPU time of json.loads alone "
          "(it parses each trial's repeated walls once)")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
