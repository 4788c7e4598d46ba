"""``bib experiment``: a self-contained browser looking-time study (:mod:`bib.experiment.build`) or an adult
surprise-rating study (:mod:`bib.experiment.ratings`)."""

from __future__ import annotations

from bib.experiment.build import Criteria, ExperimentSummary, build_experiment, looking_time, study_criteria

__all__ = ["Criteria", "ExperimentSummary", "build_experiment", "looking_time", "study_criteria"]
