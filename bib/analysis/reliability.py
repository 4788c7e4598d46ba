"""Inter-coder reliability of looking times: two coders' trials files of the same sessions.

``bib reliability CODER_A CODER_B`` matches the two files' trials by (participant, trial) and
reports, per trial, both looking times, their difference and whether they agree within a
threshold; over the trials, the share that agree, the mean absolute difference, Pearson's r and
the two-way intraclass correlations of Shrout & Fleiss (1979): ICC(2,1), two-way random effects,
absolute agreement, single coder (the usual reliability figure), and ICC(3,1), two-way mixed,
consistency, each with its F-based confidence interval as ``psych::ICC`` gives it (Shrout & Fleiss
1979 for ICC(3,1); McGraw & Wong 1996's approximate interval, with Satterthwaite's degrees of
freedom, for ICC(2,1)). ``phase`` keeps one phase's trials (``--phase test``: the test trials
only). Two files with the same bytes, or with the same looking time on every trial, are compared
but with a warning (an ICC of 1 from one coder's file given twice is not agreement). The
statistics are checked against R (``psych::ICC``, ``cor.test``, and the intervals' formulas with R's
``qf``) by ``tests/test_reliability.py`` with fixtures made by ``tests/fixtures/reliability/make_expected.R``
and ``make_expected_ci.R``.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import stats

from bib.analysis.importers import read_strings
from bib.analysis.schema import MISSING, PHASES, RECORDING_SUFFIX, ROW
from bib.errors import BibInputError
from bib.results import Result, jsonable

#: Columns a coder's file needs; those of ``CHECKED`` are compared when both files have them.
NEEDED: tuple[str, ...] = ("participant_id", "trial_num", "looking_time_s")
KEY: tuple[str, ...] = ("participant_id", "trial_num")
CHECKED: tuple[str, ...] = ("study", "study_id", "criteria_hash", "episode_id", "order", "phase")
#: Default threshold (s): trials whose looking times differ by more are listed.
THRESHOLD = 1.0
#: Confidence level of the ICCs' intervals (psych::ICC's default alpha = .05).
ALPHA = 0.05


def icc(x: np.ndarray, alpha: float = ALPHA) -> dict[str, float]:
    """Shrout & Fleiss' ICC(2,1) and ICC(3,1) of an ``n x k`` table (targets x raters), from the
    two-way ANOVA mean squares, with the mean squares themselves and the ``1 - alpha`` confidence
    intervals ``psych::ICC`` gives (``icc2_1_low``, ``icc2_1_high``, ``icc3_1_low``, ``icc3_1_high``):

    * ICC(3,1): with ``F = MSR / MSE`` on ``(n - 1, (n - 1)(k - 1))`` degrees of freedom,
      ``FL = F / F_{1-alpha/2}(n - 1, (n - 1)(k - 1))``, ``FU = F * F_{1-alpha/2}((n - 1)(k - 1), n - 1)``,
      bounds ``(FL - 1) / (FL + k - 1)`` and ``(FU - 1) / (FU + k - 1)`` (Shrout & Fleiss 1979);
    * ICC(2,1): McGraw & Wong (1996, case 2A), ``Fj = MSC / MSE`` and Satterthwaite's ``v``;
      ``FU = F_{1-alpha/2}(n - 1, v)``, ``FL = F_{1-alpha/2}(v, n - 1)``,
      low ``n (MSR - FU MSE) / (FU (k MSC + (k n - k - n) MSE) + n MSR)``,
      high ``n (FL MSR - MSE) / (k MSC + (k n - k - n) MSE + n FL MSR)``.
    """
    x = np.asarray(x, dtype=float)
    n, k = x.shape
    grand = x.mean()
    ss_rows = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_err = ((x - grand) ** 2).sum() - ss_rows - ss_cols
    msr, msc, mse = ss_rows / (n - 1), ss_cols / (k - 1), ss_err / ((n - 1) * (k - 1))
    icc2 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    icc3 = (msr - mse) / (msr + (k - 1) * mse)
    q = 1 - alpha / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        f3 = msr / mse
        fl3 = f3 / stats.f.ppf(q, n - 1, (n - 1) * (k - 1))
        fu3 = f3 * stats.f.ppf(q, (n - 1) * (k - 1), n - 1)
        fj = msc / mse
        vn = (k - 1) * (n - 1) * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        vd = (n - 1) * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        v = vn / vd
        fu2, fl2 = stats.f.ppf(q, n - 1, v), stats.f.ppf(q, v, n - 1)
        low2 = n * (msr - fu2 * mse) / (fu2 * (k * msc + (k * n - k - n) * mse) + n * msr)
        high2 = n * (fl2 * msr - mse) / (k * msc + (k * n - k - n) * mse + n * fl2 * msr)
    return {
        "icc2_1": float(icc2), "icc2_1_low": float(low2), "icc2_1_high": float(high2),
        "icc3_1": float(icc3), "icc3_1_low": float((fl3 - 1) / (fl3 + k - 1)), "icc3_1_high": float((fu3 - 1) / (fu3 + k - 1)),
        "ms_targets": float(msr), "ms_coders": float(msc), "ms_error": float(mse),
    }


def _read(path: Path) -> pd.DataFrame:
    raw = read_strings(path)
    missing = [c for c in NEEDED if c not in raw.columns]
    if missing:
        raise BibInputError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} (a trials CSV of bib experiment)")
    if raw.empty:
        raise BibInputError(f"{path}: no trials (the file has only a header)")
    dup = raw.duplicated(list(KEY), keep=False)
    if dup.any():
        raise BibInputError(f"{path}: (participant_id, trial_num) given twice (lines {', '.join(raw.loc[dup, ROW].head(4))})")
    text = raw["looking_time_s"].str.lower()
    value = pd.to_numeric(raw["looking_time_s"].where(~text.isin(MISSING)), errors="coerce")
    bad = value.isna() & ~text.isin(MISSING) | (value < 0)
    if bad.any():
        raise BibInputError(f"{path}: column looking_time_s: not a looking time (line {raw.loc[bad, ROW].iloc[0]})")
    raw["lt"] = value
    return raw


def _same_sessions(a: pd.DataFrame, b: pd.DataFrame, pa: Path, pb: Path) -> pd.DataFrame:
    """The trials of both files, joined; refuses files of different sessions, naming the file and row."""
    ids_a, ids_b = set(a["participant_id"]), set(b["participant_id"])
    if ids_a != ids_b:
        only = sorted(ids_b - ids_a) or sorted(ids_a - ids_b)
        where = pb if ids_b - ids_a else pa
        raise BibInputError(f"{where}: coder files of different sessions: participant {only[0]} is in {where.name} only "
                            f"({pa.name}: {', '.join(sorted(ids_a))}; {pb.name}: {', '.join(sorted(ids_b))})")
    joined = a.merge(b, on=list(KEY), how="outer", suffixes=("_a", "_b"), indicator=True)
    lone = joined[joined["_merge"] != "both"]
    if len(lone):
        r = lone.iloc[0]
        side, path = ("a", pa) if r["_merge"] == "left_only" else ("b", pb)
        raise BibInputError(f"{path}: line {r[f'{ROW}_{side}']}: trial {r['trial_num']} of {r['participant_id']} is not in the "
                            f"other coder's file: coder files of different sessions")
    for col in CHECKED:
        if col in a.columns and col in b.columns:
            differ = joined[f"{col}_a"] != joined[f"{col}_b"]
            if differ.any():
                r = joined[differ].iloc[0]
                raise BibInputError(f"{pb}: line {r[f'{ROW}_b']}: {col} {r[f'{col}_b']!r}, but {r[f'{col}_a']!r} in {pa} "
                                    f"(line {r[f'{ROW}_a']}): coder files of different sessions")
    if "recording" in b.columns and "recording" not in a.columns and "study" in a.columns:
        study = joined["study_a"] if "study_a" in joined.columns else joined["study"]
        want = study.astype(str) + "_" + joined["participant_id"].astype(str) + RECORDING_SUFFIX
        got = joined["recording"].fillna("").astype(str)
        wrong = (got != "") & (got != want)
        if wrong.any():
            r = joined[wrong].iloc[0]
            raise BibInputError(f"{pb}: line {r[f'{ROW}_b']}: recording {r['recording']} does not match its session "
                                f"({want[wrong].iloc[0]} is the recording of {r['participant_id']})")
    return joined


@dataclass
class Reliability(Result):
    """The agreement of two coders (see the module doc); ``trials`` has one row per matched trial."""

    name: ClassVar[str] = "reliability"
    coder_a: str
    coder_b: str
    threshold: float
    summary: dict[str, Any]
    trials: pd.DataFrame = field(repr=False)
    phase: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return jsonable({"coder_a": self.coder_a, "coder_b": self.coder_b, "threshold_s": self.threshold,
                         "phase": self.phase or "all", "warnings": self.warnings, "confidence": 1 - ALPHA,
                         **self.summary, "trials": self.trials.to_dict("records")})

    def to_markdown(self) -> str:
        s = self.summary
        ci = f"{1 - ALPHA:.0%} CI"
        lines = [f"warning: {w}" for w in self.warnings] + [
            f"Reliability of {self.coder_b} against {self.coder_a}: {s['n_trials']} "
            f"{self.phase + ' ' if self.phase else ''}trials of {s['n_participants']} "
            f"participant(s) coded by both" + (f" ({s['n_missing']} with a missing look left out)" if s["n_missing"] else ""),
            f"- agreement: {s['n_agree']} of {s['n_trials']} trials ({s['agreement']:.1%}) differ by at most {self.threshold:g} s; "
            f"mean absolute difference {s['mean_abs_diff_s']:.3f} s",
            f"- ICC(2,1), two-way random, absolute agreement, single coder: {_f(s['icc2_1'])} "
            f"({ci} {_f(s['icc2_1_low'])} to {_f(s['icc2_1_high'])})",
            f"- ICC(3,1), two-way mixed, consistency, single coder: {_f(s['icc3_1'])} "
            f"({ci} {_f(s['icc3_1_low'])} to {_f(s['icc3_1_high'])})",
            f"- Pearson r of the looking times: {_f(s['pearson_r'])} (p = {_p(s['pearson_p'])})",
        ]
        far = self.trials[~self.trials["agree"]]
        if len(far):
            lines.append(f"trials differing by more than {self.threshold:g} s:")
            lines.append(f"  {'participant':<14}{'trial':>6}  {'A (s)':>8}{'B (s)':>8}{'B - A':>8}")
            for r in far.itertuples():
                lines.append(f"  {r.participant_id:<14}{r.trial_num:>6}  {r.a:>8.3f}{r.b:>8.3f}{r.diff:>8.3f}")
        else:
            lines.append(f"no trial differs by more than {self.threshold:g} s")
        return "\n".join(lines)


def _f(x: float) -> str:
    return "nan" if x is None or math.isnan(x) else f"{x:.3f}"


def _p(x: float) -> str:
    return "nan" if math.isnan(x) else ("< .001" if x < 0.001 else f"{x:.3f}".lstrip("0"))


def _phase(joined: pd.DataFrame, phase: str, pa: Path) -> pd.DataFrame:
    """The joined trials of one phase (the first coder's ``phase`` column; the second's must agree)."""
    col = "phase_a" if "phase_a" in joined.columns else "phase"
    if col not in joined.columns:
        raise BibInputError(f"{pa}: no phase column: --phase needs the trials CSV of bib experiment")
    return joined[joined[col] == phase]


def _identical(pa: Path, pb: Path, trials: pd.DataFrame) -> list[str]:
    """Warnings that the two files look like one coder's file given twice."""
    if hashlib.sha256(pa.read_bytes()).digest() == hashlib.sha256(pb.read_bytes()).digest():
        return [f"{pa} and {pb} have the same bytes: the same file given twice? (agreement of a file with itself is 1)"]
    if (trials["a"] == trials["b"]).all():
        return [f"{pb}: every looking time equals {pa.name}'s to the millisecond: a copy of the first coder's file?"]
    return []


def reliability(coder_a: str | Path, coder_b: str | Path, threshold: float = THRESHOLD, phase: str | None = None) -> Reliability:
    """Compare two coders' trials files of the same sessions (module doc); ``phase`` keeps one phase's trials.

    Raises:
        BibInputError: a missing column, a bad looking time, files of different sessions (other
            participants, trials, studies or episodes), an unknown phase or a file without one,
            fewer than 3 trials coded by both.
    """
    pa, pb = Path(coder_a), Path(coder_b)
    if not threshold >= 0:
        raise BibInputError(f"--threshold {threshold}: must be >= 0 seconds")
    if phase is not None and phase not in PHASES:
        raise BibInputError(f"--phase {phase}: expected {' or '.join(PHASES)}")
    joined = _same_sessions(_read(pa), _read(pb), pa, pb)
    if phase is not None:
        joined = _phase(joined, phase, pa)
    both = joined.dropna(subset=["lt_a", "lt_b"])
    if len(both) < 3:
        raise BibInputError(f"{pb}: {len(both)} {phase + ' ' if phase else ''}trials with both coders' looking times; "
                            "reliability needs at least 3")
    trial_num = pd.to_numeric(both["trial_num"], errors="coerce")
    trials = pd.DataFrame({"participant_id": both["participant_id"].to_numpy(), "trial_num": both["trial_num"].to_numpy(),
                           "a": both["lt_a"].to_numpy(), "b": both["lt_b"].to_numpy()})
    trials["diff"] = trials["b"] - trials["a"]
    trials["agree"] = trials["diff"].abs() <= threshold + 1e-9
    trials = trials.assign(_t=trial_num.to_numpy()).sort_values(["participant_id", "_t"]).drop(columns="_t").reset_index(drop=True)
    x = trials[["a", "b"]].to_numpy()
    if np.ptp(x[:, 0]) == 0 or np.ptp(x[:, 1]) == 0:
        r, p = math.nan, math.nan
    else:
        test = stats.pearsonr(x[:, 0], x[:, 1])
        r, p = float(test.statistic), float(test.pvalue)
    summary = {
        "n_trials": len(trials), "n_participants": int(trials["participant_id"].nunique()),
        "n_missing": int(len(joined) - len(both)), "n_agree": int(trials["agree"].sum()),
        "agreement": float(trials["agree"].mean()), "mean_abs_diff_s": float(trials["diff"].abs().mean()),
        "pearson_r": r, "pearson_p": p, **icc(x),
    }
    return Reliability(str(pa), str(pb), threshold, summary, trials, phase, _identical(pa, pb, trials))
