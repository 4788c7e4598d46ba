"""Monte Carlo power of a VOE study simulated from the published pilot summaries, run in parallel.

Each simulated study draws N infants' (expected, unexpected) test looks from the pilot's log-normal
model (:class:`bib.analysis.pilot.PilotTask`) and analyses them as ``bib analyze`` does: the
random-intercept LMM ``y ~ outcome + (1 | participant)`` (REML), tested with Satterthwaite t
(``test="t"``, as ``bib analyze`` reports) or Wald z (``test="z"``, what ``bib power`` reported
before issue 14).

Two paths give the same numbers. A simulated study is a *balanced paired design* (one expected and
one unexpected look per infant) with a participant intercept, where REML has a closed form: with
the per-infant differences ``d`` and sums ``s``, the REML estimates are ``beta = mean(d)``,
``sigma_e^2 = var(d)/2`` and ``sigma_u^2 = (var(s) - var(d))/4``. Where ``var(s) > var(d)`` (an
interior optimum) the LMM's estimate, SE and Satterthwaite df are exactly the paired t-test's
(``SE = sd(d)/sqrt(N)``, ``df = N - 1``); where not, the participant variance is 0 (a singular fit)
and the model is ordinary least squares: ``sigma^2 = (var(d) + var(s))/4``,
``SE = sqrt(2 sigma^2 / N)``, ``df = 2N - 2`` (lmerTest's Hessian is diagonal there, since the
deviance is even in theta). Both are vectorized over the simulated studies; tests check them
against the PLS engine. Any other design (unbalanced, missing looks, covariates) would go through
:func:`bib.analysis.analyze.task_effect`; the power simulation only makes balanced paired studies,
so all of them take the closed form, and the summary counts how many were singular. Studies are drawn
in blocks of :data:`BLOCK`, block ``k`` at sample size N from ``SeedSequence(seed, spawn_key=(N, k))``,
all of a block's looks at once, so results do not depend on the worker count, the jobs' size, the list
of sample sizes or (for the studies both have) the number of simulations.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd
from scipy import stats

from bib.analysis.analyze import EFFECT
from bib.analysis.pilot import PilotTask
from bib.errors import BibInputError
from bib.parallel import map_ordered
from bib.results import Result, markdown_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Studies drawn from one generator, seeded by ``SeedSequence(seed, spawn_key=(N, block))``: the random
#: granularity. A study's numbers depend only on the seed, N and its index, never on the sims asked for (a
#: block's first m studies are the first m of the whole block), the workers or the jobs' size.
BLOCK = 256
#: Blocks per job handed to a worker.
CHUNK = 8


@dataclass(frozen=True)
class _Job:
    pilot: PilotTask
    n: int
    effect_s: float | None
    scale: str
    alpha: float
    seed: int
    first_block: int
    sims: int  # studies of this job (from first_block * BLOCK)
    test: str = "t"


def study_frame(looks: np.ndarray, scale: str) -> pd.DataFrame:
    """Long table of one simulated study: two test rows per infant with ``y`` on the model's scale."""
    n = len(looks)
    pids = np.repeat([f"p{i}" for i in range(n)], 2)
    outcome = np.tile(["expected", "unexpected"], n)
    lt = looks.reshape(-1)
    return pd.DataFrame({
        "participant_id": pids,
        "participant": pids,
        "outcome": outcome,
        "looking_time_s": lt,
        "y": np.log(lt) if scale == "log" else lt,
        "log_lt": np.log(lt),
        EFFECT: np.tile([0.0, 1.0], n),
        "item": "",
    })


def paired_closed_form(y: np.ndarray) -> dict[str, np.ndarray]:
    """REML of ``y ~ outcome + (1 | participant)`` for balanced paired studies, in closed form.

    Args:
        y: shape ``(studies, N, 2)``: each infant's (expected, unexpected) response on the model scale.

    Returns:
        ``estimate, se, df, interior`` per study; ``interior`` is False where the participant
        variance estimate is on its boundary (a singular fit: then OLS).
    """
    d = y[..., 1] - y[..., 0]
    s = y[..., 1] + y[..., 0]
    n = y.shape[1]
    var_d = d.var(axis=1, ddof=1)
    var_s = s.var(axis=1, ddof=1)
    interior = var_s > var_d
    se = np.where(interior, np.sqrt(var_d / n), np.sqrt((var_d + var_s) / (2 * n)))
    df = np.where(interior, n - 1.0, 2.0 * n - 2.0)
    return {"estimate": d.mean(axis=1), "se": se, "df": df, "interior": interior}


def draw_block(pilot: PilotTask, n: int, studies: int, effect_s: float | None, seed: int, block: int,
               scale: str) -> np.ndarray:
    """The first ``studies`` (at most :data:`BLOCK`) studies of block ``block`` at sample size ``n``: shape
    ``(studies, n, 2)``, each infant's (expected, unexpected) look on the model's scale (log seconds or seconds),
    drawn from the pilot's log-normal model with one generator per block."""
    mean, cov = pilot.log_model(effect_s)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(n, block)))
    z = rng.standard_normal((studies, n, 2))
    log_looks = z @ np.linalg.cholesky(cov).T + mean
    return log_looks if scale == "log" else np.exp(log_looks)


def _run(job: _Job) -> np.ndarray:
    """One job's studies as rows ``estimate, ci_low, ci_high, p, singular`` (an array)."""
    parts = []
    left, block = job.sims, job.first_block
    while left > 0:
        m = min(BLOCK, left)
        parts.append(draw_block(job.pilot, job.n, m, job.effect_s, job.seed, block, job.scale))
        left, block = left - m, block + 1
    cf = paired_closed_form(np.concatenate(parts))
    est, se = cf["estimate"], cf["se"]
    if job.test == "t":
        q = stats.t.ppf(1 - job.alpha / 2, cf["df"])
        p = 2 * stats.t.sf(np.abs(est / se), cf["df"])
    else:
        q = np.full(len(est), stats.norm.ppf(1 - job.alpha / 2))
        p = 2 * stats.norm.sf(np.abs(est / se))
    return np.column_stack([est, est - q * se, est + q * se, p, (~cf["interior"]).astype(float)])


def _jobs(pilot: PilotTask, ns: list[int], sims: int, seed: int, effect_s: float | None, scale: str,
          alpha: float, test: str) -> Iterator[_Job]:
    per_job = CHUNK * BLOCK
    for n in ns:
        for start in range(0, sims, per_job):
            yield _Job(pilot, n, effect_s, scale, alpha, seed, start // BLOCK, min(per_job, sims - start), test)


def simulate_studies(pilot: PilotTask, ns: list[int], sims: int, seed: int, *, effect_s: float | None = None,
                     scale: str = "log", alpha: float = 0.05, workers: int = 1,
                     progress: bool = False, test: str = "t") -> pd.DataFrame:
    """Simulate and analyse ``sims`` studies at each sample size.

    Args:
        test: ``"t"`` (Satterthwaite, as ``bib analyze``) or ``"z"`` (Wald z).

    Returns:
        One row per simulated study: ``n, sim, estimate, ci_low, ci_high, p, singular``
        (1 where the participant variance is estimated as 0).
    """
    if test not in ("t", "z"):
        raise BibInputError(f"--test must be t or z, got {test!r}")
    if sims < 1:
        raise BibInputError(f"--sims must be >= 1, got {sims}")
    bad = [n for n in ns if n < 3]
    if bad:
        raise BibInputError(f"--n: sample sizes must be >= 3, got {', '.join(map(str, bad))}")
    jobs = list(_jobs(pilot, ns, sims, seed, effect_s, scale, alpha, test))
    results = map_ordered(_run, jobs, workers=workers)
    if progress:
        from bib.progress import track

        results = track(results, total=len(jobs), description=f"power {pilot.task}")
    values = np.concatenate(list(results)) if jobs else np.zeros((0, 5))
    df = pd.DataFrame(values, columns=["estimate", "ci_low", "ci_high", "p", "singular"])
    df.insert(0, "n", np.concatenate([np.full(job.sims, job.n) for job in jobs]))
    df.insert(1, "sim", np.concatenate([np.arange(job.first_block * BLOCK, job.first_block * BLOCK + job.sims)
                                        for job in jobs]))
    df["singular"] = df["singular"].astype(int)
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
            "singular": int(g["singular"].sum()) if "singular" in g else 0,
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


CLOSED_FORM_PATH = ("closed form: a balanced paired design with a participant intercept, where REML is the paired t "
                    "(participant variance > 0) or OLS (variance 0, a singular fit; counted in 'singular')")
"""How every simulated study is analysed (see the module docstring)."""


@dataclass
class Power(Result):
    """``bib power``'s result: power per sample size (rows of :func:`summarize_power`) and the settings.

    ``to_json()`` is what ``bib power --json`` prints; ``plot()`` draws power against N with its
    Monte Carlo error.
    """

    name: ClassVar[str] = "power"
    pilot: PilotTask
    rows: list[dict[str, float]]
    effect_s: float | None
    scale: str
    alpha: float
    seed: int
    test: str

    def to_json(self) -> dict[str, Any]:
        effect = self.pilot.beta if self.effect_s is None else self.effect_s
        return {"task": self.pilot.task, "effect_s": effect, "scale": self.scale, "alpha": self.alpha,
                "seed": self.seed, "test": self.test, "path": CLOSED_FORM_PATH, "power": self.rows}

    def to_markdown(self) -> str:
        effect = (f"as published (beta = {self.pilot.beta:g} s)" if self.effect_s is None else f"{self.effect_s:g} s")
        label = "Satterthwaite t" if self.test == "t" else "Wald z"
        head = (f"{self.pilot.task}: effect {effect}, pilot N = {self.pilot.n}, d_z = {self.pilot.dz:.3f}; analysis: "
                f"LMM on {self.scale} scale, {label}, alpha = {self.alpha:g}; seed {self.seed}\n\npath: {CLOSED_FORM_PATH}\n\n")
        rows = [[r["n"], r["sims"], f"{r['power']:.3f}", f"{r['mc_se']:.3f}", f"{r['power_positive']:.3f}",
                 f"{r['mean_estimate']:.3f}", r["singular"]] for r in self.rows]
        return head + markdown_table(["N", "sims", "power", "mc_se", "power+", "mean est", "singular"], rows)

    def plot(self) -> Figure:
        """Power against N with 95% Monte Carlo error bars; 0.8 dashed."""
        from matplotlib.figure import Figure  # lazy: matplotlib is only needed to draw

        fig = Figure(figsize=(5, 3.2))
        ax = fig.subplots()
        ns = [r["n"] for r in self.rows]
        ax.errorbar(ns, [r["power"] for r in self.rows], yerr=[1.96 * r["mc_se"] for r in self.rows], fmt="o-", capsize=3)
        ax.axhline(0.8, color="0.6", lw=0.8, ls="--")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("infants (N)")
        ax.set_ylabel(f"power (p < {self.alpha:g}), 95% MC error")
        ax.set_title(f"{self.pilot.task}, {self.scale} scale", fontsize=9)
        return fig
