"""Looking-time analysis: import, exclusions, mixed models, models vs infants, power, plots.

Modules: ``schema`` (the per-trial table), ``spec`` (analysis specs), ``importers`` (CSV, mapped
CSV, PyHab), ``exclusions``, ``formula``, ``mixed`` (lme4's PLS), ``optimum`` (BOBYQA and lme4's checks),
``lmm`` (statsmodels MixedLM), ``analyze`` (the VOE analysis),
``compare`` (models vs infants), ``pilot`` (published pilot summaries), ``power``, ``example``
(the synthetic example data), ``plots``, ``demo``.
"""
