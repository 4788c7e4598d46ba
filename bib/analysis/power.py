"""Monte Carlo power of a VOE study simulated from the published pilot summaries, run in parallel.

Each simulated study draws N infants' (expected, unexpected) test looks from the pilot's log-normal
model (:class:`bib.analysis.pilot.PilotTask`) and analyses them exactly as ``bib analyze`` does
(:func:`bib.analysis.analyze.task_effect`: random-intercept LMM, Wald z). Simulation ``i`` at
sample size N is seeded from ``SeedSequence(seed, spawn_key=(N,)).spawn(sims)[i]``, so results do
not depend on the worker count, the chunking or the list of sample sizes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bib.analysis.analyze import EFFECT, task_effect
from bib.analysis.pilot import PilotTask
from bib.errors import BibInputError
from bib.parallel import map_ordered

CHUNK = 25


@dataclass(frozen=True)
class _Job:
    pilot: PilotTask
    n: int
    effect_s: float | None
    scale: str
    alpha: float
    seeds: list[np.random.SeedSequence]


def study_frame(looks: np.ndarray, scale: str) -> pd.DataFrame:
    """Long table of one simulated study: two test rows per infant with ``y`` on the model's scale."""
    n = len(looks)
    pids = np.repeat([f"p{i}" for i in range(n)], 2)
    outcome = np.tile(["expected", "unexpected"], n)
    lt = looks.reshape(-1)
    return pd.DataFrame({
        "participant_id": pids,
        "outcome": outcome,
        "looking_time_s": lt,
        "y": np.log(lt) if scale == "log" else lt,
        EFFECT: np.tile([0.0, 1.0], n),
    })


def _run(job: _Job) -> list[tuple[float, float, float, float]]:
    out = []
    for ss in job.seeds:
        rng = np.random.default_rng(ss)
        frame = study_frame(job.pilot.draw(rng, job.n, job.effect_s), job.scale)
        r = task_effect(frame, [], job.alpha, f"simulated study (N={job.n})")
        out.append((r["estimate"], r["ci_low"], r["ci_high"], r["p"]))
    return out


def _jobs(pilot: PilotTask, ns: list[int], sims: int, seed: int, effect_s: float | None, scale: str,
          alpha: float) -> Iterator[_Job]:
    for n in ns:
        seeds = np.random.SeedSequence(seed, spawn_key=(n,)).spawn(sims)
        for start in range(0, sims, CHUNK):
            yield _Job(pilot, n, effect_s, scale, alpha, seeds[start:start + CHUNK])


def simulate_studies(pilot: PilotTask, ns: list[int], sims: int, seed: int, *, effect_s: float | None = None,
                     scale: str = "log", alpha: float = 0.05, workers: int = 1,
                     progress: bool = False) -> pd.DataFrame:
    """Simulate and analyse ``sims`` studies at each sample size.

    Returns:
        One row per simulated study: ``n, sim, estimate, ci_low, ci_high, p``.
    """
    if sims < 1:
        raise BibInputError(f"--sims must be >= 1, got {sims}")
    bad = [n for n in ns if n < 3]
    if bad:
        raise BibInputError(f"--n: sample sizes must be >= 3, got {', '.join(map(str, bad))}")
    jobs = list(_jobs(pilot, ns, sims, seed, effect_s, scale, alpha))
    results = map_ordered(_run, jobs, workers=workers)
    if progress:
        from bib.progress import track

        results = track(results, total=len(jobs), description=f"power {pilot.task}")
    rows = []
    for job, chunk in zip(jobs, results, strict=True):
        rows += [(job.n, *r) for r in chunk]
    df = pd.DataFrame(rows, columns=["n", "estimate", "ci_low", "ci_high", "p"])
    df.insert(1, "sim", df.groupby("n").cumcount())
    return df


def summarize_power(studies: pd.DataFrame, alpha: float) -> list[dict[str, float]]:
    """Power (p < alpha) per sample size with its Monte Carlo SE, and the share significant and positive."""
    out = []
    for n, g in studies.groupby("n", sort=False):
        sig = (g["p"] < alpha).to_numpy()
        power = float(sig.mean())
        out.append({
            "n": int(n),
            "sims": len(g),
            "power": power,
            "mc_se": math.sqrt(power * (1 - power) / len(g)),
            "power_positive": float((sig & (g["estimate"] > 0).to_numpy()).mean()),
            "mean_estimate": float(g["estimate"].mean()),
        })
    return out


def parse_effect(text: str) -> float | None:
    """``--effect``: ``pilot`` (or ``FROM_PILOT``) -> None, else a number of seconds."""
    if text.strip().lower() in {"pilot", "from_pilot", "from-pilot"}:
        return None
    try:
        return float(text)
    except ValueError:
        raise BibInputError(f"--effect: expected 'pilot' or a number of seconds, got {text!r}") from None


def parse_ns(text: str) -> list[int]:
    """``--n 16,24,32``: a comma-separated list of sample sizes."""
    try:
        ns = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise BibInputError(f"--n: expected comma-separated integers, got {text!r}") from None
    if not ns:
        raise BibInputError("--n: no sample sizes given")
    return ns
