"""VOE observers behind one protocol (``fit`` / per-step ``surprise``) and a registry of names.

Built in: ``random``, ``closest-object`` (heuristics), ``inverse-planner`` (Bayesian inverse
planning) and the shortcut battery ``test-only``, ``novelty``, ``familiarity``, ``path-familiarity``, ``path-length`` and
``single-feature`` (:mod:`bib.observers.shortcuts`, run together by ``bib audit``) and the learned
observers ``bc-mlp``, ``bc-rnn`` and ``video-rnn`` (trained by ``bib train``). Every one is an entry of
:data:`OBSERVERS` (a :class:`bib.registry.Registry`); factories are ``"module:attr"`` strings imported when
the observer is made, so listing observers never imports torch.
"""

from __future__ import annotations

from bib.observers.base import BaseObserver, Observer, surprise_many
from bib.observers.registry import (
    OBSERVERS,
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
register_observer(
    "test-only",
    "bib.observers.shortcuts:make_test_only",
    description="shortcut: the inverse planner given only the test trial (uniform goal and beta priors)",
)
register_observer(
    "novelty",
    "bib.observers.shortcuts:make_novelty",
    description="shortcut: a step's distance to the nearest familiarization state (novel = surprising)",
)
register_observer(
    "familiarity",
    "bib.observers.shortcuts:make_familiarity",
    description="shortcut: how much the test looks like the familiarization (familiar = surprising)",
)
register_observer(
    "path-familiarity",
    "bib.observers.shortcuts:make_path_familiarity",
    description="shortcut: one minus the share of the test path's moves the familiarization made (unfamiliar path = surprising)",
)
register_observer(
    "path-length",
    "bib.observers.shortcuts:make_path_length",
    description="shortcut: the path cost walked so far (a long path is surprising)",
)
register_observer(
    "single-feature",
    "bib.observers.shortcuts:make_single_feature",
    needs_checkpoint=True,
    description="shortcut: the best single episode feature per condition (fit: single-feature.json from `bib audit`)",
    checkpoint_hint="the fit single-feature.json that `bib audit SET --out DIR` writes",
)
register_observer(
    "bc-mlp",
    "bib.observers.bc:BCMLPObserver.create",
    needs_checkpoint=True,
    learned=True,
    description="ToMnet-style behaviour cloning, mean-pooled MLP context (needs a checkpoint)",
)
register_observer(
    "bc-rnn",
    "bib.observers.bc:BCRNNObserver.create",
    needs_checkpoint=True,
    learned=True,
    description="ToMnet-style behaviour cloning, bidirectional-LSTM context (needs a checkpoint)",
)
register_observer(
    "video-rnn",
    "bib.observers.video_rnn:VideoRNNObserver.create",
    needs_checkpoint=True,
    learned=True,
    description="GRU context over familiarization frames + U-Net next-frame predictor (needs a checkpoint)",
)

__all__ = [
    "OBSERVERS",
    "BaseObserver",
    "Observer",
    "ObserverSpec",
    "get_observer_spec",
    "make_observer",
    "observer_names",
    "register_observer",
    "surprise_many",
]
