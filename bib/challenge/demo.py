"""`bib demo` step for challenges: the organiser's protocol on a small secret set (kit, README, sample, key)."""

from __future__ import annotations

import shutil
from pathlib import Path


def run_blind(root: Path) -> None:
    """The organiser's protocol on a small set: ``bib generate bib-ctrl --secret-seed --limit 1``, ``bib blind``,
    the kit (with its README and sample submission, as ``bib blind`` writes them) scored as a submitter would
    (inverse planner) and ``bib evaluate KEY RESULTS``."""
    from bib.challenge.submission import write_kit_docs
    from bib.evaluation import evaluate, overall, surprise_by_episode
    from bib.observers.scoring import score
    from bib.stimuli.build import build_spec, generate_job
    from bib.stimuli.kit import make_kit, read_key
    from bib.stimuli.origin import secret_note, with_secret_seed
    from bib.stimuli.spec import load_spec

    out = root / "blind"
    spec, resumed = with_secret_seed(load_spec("bib-ctrl"), out / "set")
    with generate_job(spec, out / "set", secret=True):
        build_spec(spec, out / "set", limit=1)
    print(secret_note(out / "set", resumed))
    for stale in (out / "kit", out / "entry"):
        shutil.rmtree(stale, ignore_errors=True)  # a rerun: a kit goes into a new folder
    kit = make_kit(out / "set", out / "kit", out / "key.csv", force=True, progress=False, extras=write_kit_docs)
    summary = score("inverse-planner", out / "kit", out / "entry" / "results.csv", progress=False)
    keyed, _ = read_key(out / "key.csv")
    mean = overall(evaluate(keyed.refs, surprise_by_episode(summary.results, keyed, "max")))["mean"]
    print(f"kit {kit.fingerprint}: {sum(kit.conditions.values())} blind episodes in {kit.kit} (README.md, "
          f"sample-submission/), key {kit.key}")
    print(f"inverse-planner on the kit, against the key (bib evaluate KEY RESULTS): mean of conditions {100 * (mean or 0):.1f}%")
