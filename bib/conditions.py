"""The condition and task ids of DESIGN.md, in BIB's table order: one list every part imports."""

from __future__ import annotations

CONDITIONS: tuple[str, ...] = (
    "preference",
    "multi-agent",
    "inaccessible-goal",
    "efficiency-path",
    "efficiency-time",
    "efficiency-irrational",
    "instrumental-no-barrier",
    "instrumental-inconsequential",
    "instrumental-blocking",
)
"""The nine evaluation conditions."""

FAMILIES: dict[str, tuple[str, ...]] = {
    "efficiency": ("efficiency-path", "efficiency-time", "efficiency-irrational"),
    "instrumental": ("instrumental-no-barrier", "instrumental-inconsequential", "instrumental-blocking"),
}
"""Families whose average BIB reports (the unweighted mean of the condition accuracies)."""

BACKGROUND_TASKS: tuple[str, ...] = ("single-object", "no-navigation", "multi-agent-background", "agent-blocked-instrumental")
"""Background (training) task ids: expected-only episodes."""
