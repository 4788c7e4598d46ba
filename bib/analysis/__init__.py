"""Looking-time analysis: import, exclusions, mixed models, models vs infants, power, plots.

Modules: ``schema`` (the per-trial table), ``spec`` (analysis specs), ``importers`` (CSV, mapped
CSV, PyHab), ``exclusions``, ``formula``, ``mixed`` (lme4's PLS), ``optimum`` (BOBYQA and lme4's checks),
``rexpr`` (expressions inside a formula, evaluated over a whitelist), ``lmm`` (statsmodels MixedLM), ``anova`` (likelihood-ratio and F tests), ``effects`` (ranef, fitted,
residuals, predict), ``emmeans`` (marginal means, pairwise contrasts),
``intervals`` (confint: Wald, profile, bootstrap), ``analyze`` (the VOE analysis),
``compare`` (models vs infants), ``pilot`` (published pilot summaries), ``power``, ``example``
(the synthetic example data), ``plots``, ``demo``.
"""

__all__ = ["lmer"]


def __getattr__(name: str):  # noqa: ANN202
    """``bib.analysis.lmer`` (:func:`bib.analysis.mixed.lmer`), imported on first use."""
    if name == "lmer":
        from bib.analysis.mixed import lmer

        return lmer
    raise AttributeError(f"module 'bib.analysis' has no attribute {name!r}")
