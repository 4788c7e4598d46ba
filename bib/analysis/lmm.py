"""Linear mixed models on statsmodels ``MixedLM``: random intercepts, Wald contrasts, captured warnings.

lme4's ``y ~ x + (1 | participant)`` is ``smf.mixedlm("y ~ x", data, groups=data["participant"])``.
Every warning statsmodels raises during a fit (convergence, boundary, Hessian) is recorded in the
fit's ``warnings`` and nothing is silenced globally. P-values and intervals are Wald z, as in
statsmodels (no Satterthwaite df), which is anti-conservative for small samples.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from bib.errors import BibInputError


@dataclass(frozen=True)
class Contrast:
    """A Wald estimate of a linear combination of fixed effects."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    p: float

    def as_dict(self) -> dict[str, float]:
        """The fields as a plain dict."""
        return {"estimate": self.estimate, "se": self.se, "ci_low": self.ci_low, "ci_high": self.ci_high, "p": self.p}


@dataclass(frozen=True)
class MixedFit:
    """Fixed effects, their covariance, the group variance, convergence and the captured warnings."""

    params: pd.Series
    cov: pd.DataFrame
    group_var: float
    residual_var: float
    converged: bool
    warnings: list[str] = field(default_factory=list)
    n_groups: int = 0
    n_obs: int = 0

    def contrast(self, weights: dict[str, float], alpha: float = 0.05) -> Contrast:
        """Wald z estimate, standard error, ``1 - alpha`` interval and p of ``sum(w * beta)``."""
        unknown = [k for k in weights if k not in self.params.index]
        if unknown:
            raise KeyError(f"not fixed effects of the model: {', '.join(unknown)}")
        w = pd.Series(0.0, index=self.params.index)
        for name, value in weights.items():
            w[name] = value
        est = float(w @ self.params)
        se = float(np.sqrt(max(w @ self.cov @ w, 0.0)))
        z = stats.norm.ppf(1 - alpha / 2)
        p = float(2 * stats.norm.sf(abs(est) / se)) if se > 0 else float("nan")
        return Contrast(est, se, est - z * se, est + z * se, p)

    def joint_test(self, names: list[str]) -> dict[str, float]:
        """Wald chi-square test that all ``names`` are zero: ``{"chi2", "df", "p"}``."""
        b = self.params[names].to_numpy()
        v = self.cov.loc[names, names].to_numpy()
        chi2 = float(b @ np.linalg.pinv(v) @ b)
        return {"chi2": chi2, "df": len(names), "p": float(stats.chi2.sf(chi2, len(names)))}


def fit_mixed(data: pd.DataFrame, formula: str, groups: str, *, reml: bool = True, label: str = "model") -> MixedFit:
    """Fit ``formula`` with a random intercept per level of ``groups`` and record its warnings.

    Args:
        data: one row per observation.
        formula: a patsy formula for the fixed effects, e.g. ``"y ~ unexpected"``.
        groups: the grouping column (lme4's ``(1 | groups)``).
        reml: REML (default) or ML (needed for likelihood-ratio tests of fixed effects).
        label: names the model in error messages.

    Raises:
        BibInputError: when the model cannot be fitted (e.g. a singular design).
    """
    import statsmodels.formula.api as smf

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = smf.mixedlm(formula, data, groups=data[groups]).fit(reml=reml)
        except (ValueError, np.linalg.LinAlgError) as exc:
            raise BibInputError(f"{label}: the mixed model {formula} cannot be fitted ({exc})") from None
    messages: list[str] = []
    for w in caught:
        text = f"{w.category.__name__}: {str(w.message).strip()}"
        if text not in messages:
            messages.append(text)
    converged = bool(result.converged)
    if not converged and not any("converge" in m for m in messages):
        messages.append("MixedLM did not converge")
    names = list(result.fe_params.index)
    cov = result.cov_params().loc[names, names]
    group_var = float(np.asarray(result.cov_re)[0, 0]) if np.size(result.cov_re) else 0.0
    return MixedFit(
        params=result.fe_params.copy(),
        cov=cov,
        group_var=group_var,
        residual_var=float(result.scale),
        converged=converged,
        warnings=messages,
        n_groups=int(data[groups].nunique()),
        n_obs=len(data),
    )
