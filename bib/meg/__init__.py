"""MEG (maximum entropy goal-directedness, MacDermott et al. 2024): exact soft value iteration, known/unknown-utility MEG."""

from __future__ import annotations

from bib.meg.known import MEGResult, fit_beta, known_utility_meg, predictive_accuracy
from bib.meg.soft import (
    SoftVI,
    expected_utility,
    limit_log_policy,
    occupancy,
    soft_policy,
    soft_value_iteration,
    state_action_occupancy,
)
from bib.meg.unknown import (
    UnknownMEGResult,
    linear_utility_meg,
    mlp_utility_meg,
    tabular_utility_meg,
    target_meg,
    unknown_utility_meg,
)
from bib.world.tabular import TabularMDP

__all__ = [
    "MEGResult", "SoftVI", "TabularMDP", "UnknownMEGResult", "expected_utility", "fit_beta", "known_utility_meg",
    "limit_log_policy", "linear_utility_meg", "mlp_utility_meg", "occupancy", "predictive_accuracy", "soft_policy",
    "soft_value_iteration", "state_action_occupancy", "tabular_utility_meg", "target_meg", "unknown_utility_meg",
]
