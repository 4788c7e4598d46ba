"""The published BIB infant pilot summaries and the generative model of looking times derived from them.

The poster gives, per task, N, the LMM beta and p, and the mean and standard error of looking time
(seconds) for each test outcome. Everything else here is derived, and says how:

- per-outcome SD = SE * sqrt(N);
- SE of beta from its p, with a t distribution on N - 1 df (a paired design analysed by lmerTest;
  the poster does not say which test it used), hence the SD of the paired differences and the
  correlation between an infant's expected and unexpected looks;
- looking times are bivariate log-normal with those means, SDs and that correlation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from bib.errors import BibInputError
from bib.resources import resource

#: The CSV of the published summaries shipped with the package (``data/published/`` in a checkout).
DEFAULT_PILOT = resource("published/infant_pilot.csv")
PILOT_COLUMNS = ("task", "n", "beta", "p", "mean_expected", "se_expected", "mean_unexpected", "se_unexpected")


@dataclass(frozen=True)
class PilotTask:
    """Published summaries of one pilot task, with the derived log-normal looking-time model."""

    task: str
    n: int
    beta: float
    p: float
    mean_expected: float
    se_expected: float
    mean_unexpected: float
    se_unexpected: float
    age_months_mean: float = math.nan
    age_months_sd: float = math.nan

    @property
    def sd_expected(self) -> float:
        """Between-infant SD of expected-outcome looks (s): SE * sqrt(N)."""
        return self.se_expected * math.sqrt(self.n)

    @property
    def sd_unexpected(self) -> float:
        """Between-infant SD of unexpected-outcome looks (s): SE * sqrt(N)."""
        return self.se_unexpected * math.sqrt(self.n)

    @property
    def se_beta(self) -> float:
        """SE of beta implied by its two-sided p on a t distribution with N - 1 df."""
        return abs(self.beta) / stats.t.ppf(1 - self.p / 2, self.n - 1)

    @property
    def dz(self) -> float:
        """Standardised paired effect: beta / SD of the paired differences."""
        return self.beta / (self.se_beta * math.sqrt(self.n))

    @property
    def rho(self) -> float:
        """Correlation of an infant's two looks implied by the SDs and the SE of beta (clipped to +-0.95)."""
        sd_diff = self.se_beta * math.sqrt(self.n)
        se, su = self.sd_expected, self.sd_unexpected
        return float(np.clip((se**2 + su**2 - sd_diff**2) / (2 * se * su), -0.95, 0.95))

    def log_model(self, effect_s: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Mean vector and covariance of (log expected, log unexpected) looks.

        Args:
            effect_s: None for the pilot as published; otherwise a hypothetical effect in seconds:
                the unexpected look is the expected one scaled by ``(mean_expected + effect_s) /
                mean_expected`` (same log SD, same correlation), so ``effect_s = 0`` is an exact null.
        """
        s_e = math.sqrt(math.log1p((self.sd_expected / self.mean_expected) ** 2))
        mu_e = math.log(self.mean_expected) - s_e**2 / 2
        if effect_s is None:
            s_u = math.sqrt(math.log1p((self.sd_unexpected / self.mean_unexpected) ** 2))
            mu_u = math.log(self.mean_unexpected) - s_u**2 / 2
        else:
            if self.mean_expected + effect_s <= 0:
                raise BibInputError(f"--effect {effect_s:g}: must exceed -{self.mean_expected:g} s (the expected mean)")
            s_u, mu_u = s_e, mu_e + math.log((self.mean_expected + effect_s) / self.mean_expected)
        # Raw-scale correlation of log-normals -> correlation of the logs.
        raw = self.rho * math.sqrt(math.expm1(s_e**2) * math.expm1(s_u**2))
        r = float(np.clip(math.log1p(raw) / (s_e * s_u), -0.95, 0.95))
        cov = np.array([[s_e**2, r * s_e * s_u], [r * s_e * s_u, s_u**2]])
        return np.array([mu_e, mu_u]), cov

    def draw(self, rng: np.random.Generator, n: int, effect_s: float | None = None) -> np.ndarray:
        """``n`` infants' (expected, unexpected) looking times in seconds, shape ``(n, 2)``."""
        mean, cov = self.log_model(effect_s)
        return np.exp(rng.multivariate_normal(mean, cov, size=n, method="cholesky"))


def load_pilot(path: str | Path | None = None) -> dict[str, PilotTask]:
    """Read the published pilot summaries: task id -> :class:`PilotTask`.

    Raises:
        BibInputError: a missing file or column, or a non-numeric value.
    """
    p = Path(path) if path is not None else DEFAULT_PILOT
    import io

    from bib.guard import read_text

    try:
        df = pd.read_csv(io.StringIO(read_text(p)))  # a regular file, size-capped, UTF-8 (never a FIFO or /dev/zero)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise BibInputError(f"{p}: cannot read the pilot summaries ({str(exc).splitlines()[0]}); pass --pilot FILE") from None
    missing = [c for c in PILOT_COLUMNS if c not in df.columns]
    if missing:
        raise BibInputError(f"{p}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    out = {}
    for i, row in df.iterrows():
        try:
            out[str(row["task"])] = PilotTask(
                task=str(row["task"]),
                n=int(row["n"]),
                **{c: float(row[c]) for c in PILOT_COLUMNS[2:]},
                age_months_mean=float(row.get("age_months_mean", math.nan)),
                age_months_sd=float(row.get("age_months_sd", math.nan)),
            )
        except (TypeError, ValueError):
            raise BibInputError(f"{p}: line {i + 2}: non-numeric pilot summary") from None
    return out


def pilot_task(task: str, path: str | Path | None = None) -> PilotTask:
    """One task's pilot summaries; raises BibInputError naming the tasks available."""
    pilots = load_pilot(path)
    if task not in pilots:
        raise BibInputError(f"--task {task}: no published pilot summaries (available: {', '.join(pilots)})")
    return pilots[task]
