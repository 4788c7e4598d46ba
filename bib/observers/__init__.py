"""VOE observers behind one protocol (``fit`` / per-step ``surprise``) and a registry of names.

Built in: ``random``, ``closest-object`` (heuristics) and ``inverse-planner`` (Bayesian inverse
planning). Learned observers (``bc-mlp``, ``bc-rnn``, ``video-rnn``) register themselves from their
own modules, which the registry imports on demand (see :data:`registry.PLUGIN_MODULES`).
"""

from __future__ import annotations

from bib.observers.base import BaseObserver, Observer, surprise_many
from bib.observers.registry import (
    ObserverSpec,
    get_observer_spec,
    make_observer,
    observer_names,
    register_observer,
)

register_observer(
    "random", "bib.observers.heuristics:make_random", description="seeded uniform noise per step (chance)"
)
register_observer(
    "closest-object",
    "bib.observers.heuristics:make_closest_object",
    description="surprise when a test step heads away from the closest object (the shortcut)",
)
register_observer(
    "inverse-planner",
    "bib.observers.inverse_planning:make_inverse_planner",
    description="Bayesian inverse planning: posterior over preferred object and beta, -log predictive of each move",
)

__all__ = [
    "BaseObserver",
    "Observer",
    "ObserverSpec",
    "get_observer_spec",
    "make_observer",
    "observer_names",
    "register_observer",
    "surprise_many",
]
