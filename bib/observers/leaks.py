"""The leak battery and the learned test-only shortcut of ``bib audit`` (issue 26).

Leak readers are cheats: they read what a model must not be able to read, the answer written into
an episode rather than shown by it. ``bib audit`` runs them through the blind view, exactly as
``bib score`` hands episodes to a model (:func:`bib.observers.base.surprise_of_views`: blind views,
a shuffled chunk), so each must sit at chance there; on the open episodes each scores near 100%
where the set leaks. :data:`LEAKS`:

- ``label``: the ``outcome`` field (``unexpected`` = surprising);
- ``id-text``: the id's text (an id ending ``unexpected``);
- ``id-order``: the id's rank among its batch's ids (in an open set ``...-expected`` sorts before
  ``...-unexpected``);
- ``position``: the episode's place in the batch it is handed in (a pair's second = surprising);
- ``text-size``: the length of the episode's JSON text before its trials (ids and fields: in an open
  set ``unexpected`` is two characters longer than ``expected``). The trials' own text follows what
  they show (path lengths, barriers), which the shortcut battery measures;
- ``role``: object names as roles (the test ends on an object that is not the first-named one:
  ``A`` was the preferred object), and a twin field read with it (a twin flips which end is
  expected).

A leak is never exempt: FAIL wherever a reader leaves 40-60% and a fair coin per pair would give that
result with probability below ``0.05 / cells`` (:func:`judge_leak`; ``cells`` = readers x conditions
of the audit, 54 on a nine-condition set, so 9.3e-4). Through the blind view ``id-order``, ``position``
and ``role`` read only the view's random draws (opaque ids, a shuffled order, random names), and the
two episodes of a pair get independent draws, so their result is exactly a fair coin per untied pair:
the exact binomial test is their null, and Bonferroni over the audit's leak cells keeps the chance
that such a reader FAILs any cell of an audit at most 5%, whatever the set's size. On 100 pairs a
condition a coin leaves 40-60% in 3.5% of cells (39% happens, p = 0.035), so the band alone would
raise a false alarm in most audits; a reader that reads the answer scores far beyond both.

``learned-test-only`` (:func:`fit_learned`): scikit-learn's HistGradientBoostingClassifier over
the features of the test trial alone (:data:`TEST_FEATURES`: the battery's test-only features of
:data:`bib.observers.shortcuts.FEATURES` plus where the path starts and ends and when the key is
taken and the lock opened), fit per condition on the audit's fit half of the pairs and scored on
the other half. It reads the efficiency of the test path, so it is exempt where the efficiency
principle is the condition's question (efficiency path/time, instrumental-blocking's key fetch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bib.episode import Episode, dumps
from bib.evaluation import ConditionResult
from bib.observers.base import BaseObserver
from bib.observers.shortcuts import FEATURES

LEAKS: tuple[str, ...] = ("label", "id-text", "id-order", "position", "text-size", "role")
"""The leak readers, in table order."""
LEAK_CUE = "leak"
LEARNED = "learned-test-only"
"""The learned shortcut's column in the audit."""
LEARNED_CUE = "efficiency"


def _role(ep: Episode) -> float:
    test = ep.test
    names = sorted(o.id for o in test.layout.objects)
    ends_off_first = float(bool(names) and test.goal not in (None, "key") and test.goal != names[0])
    return float(ends_off_first != float(ep.twin_id is not None and ep.twin_id < (ep.pair_id or "")))


LEAK_ALPHA = 0.05
"""The chance, over a whole audit, that a reader which reads nothing real FAILs any leak cell: at most this."""


def leak_threshold(cells: int) -> float:
    """The per-cell p-value below which a leak cell outside the band FAILs: :data:`LEAK_ALPHA` / ``cells``
    (Bonferroni over the ``cells`` leak cells an audit judges, so a coin flip FAILs somewhere with
    probability at most :data:`LEAK_ALPHA`)."""
    return LEAK_ALPHA / max(1, cells)


def coin_p(result: ConditionResult) -> float:
    """Two-sided exact binomial p-value of a reader's result under a fair coin per untied pair (1.0 with none)."""
    from scipy.stats import binomtest

    untied = result.n_pairs - result.n_ties
    wins = round(result.accuracy * result.n_pairs - 0.5 * result.n_ties)
    return float(binomtest(wins, untied, 0.5).pvalue) if untied else 1.0


def judge_leak(result: ConditionResult, band: tuple[float, float], cells: int) -> tuple[str, str | None]:
    """``("ok" | "FAIL", reason)`` of a leak reader's result on one condition of an audit judging ``cells`` leak
    cells: FAIL outside ``band`` when a fair coin per pair gives that result with probability below
    :func:`leak_threshold` (``cells``)."""
    lo, hi = band
    if lo - 1e-12 <= result.accuracy <= hi + 1e-12:
        return "ok", None
    p, alpha = coin_p(result), leak_threshold(cells)
    if p >= alpha:
        return "ok", None
    return "FAIL", (f"leak {'above' if result.accuracy > hi else 'below'} the {100 * lo:g}-{100 * hi:g}% band "
                    f"(binomial p = {p:.1e} < {LEAK_ALPHA:g} / {cells} cells)")


class LeakReader(BaseObserver):
    """One reader of :data:`LEAKS` as an observer: the same value at every test step."""

    def __init__(self, leak: str) -> None:
        if leak not in LEAKS:
            raise ValueError(f"unknown leak reader {leak!r}")
        self.leak = leak
        self.name = f"leak-{leak}"

    def value(self, ep: Episode, index: int, rank: int) -> float:
        """The reader's surprise of ``ep``, handed at ``index`` of its batch, its id ``rank``-th of the batch's."""
        if self.leak == "label":
            return float(ep.outcome == "unexpected")
        if self.leak == "id-text":
            return float(ep.id.endswith("unexpected"))
        if self.leak == "id-order":
            return float(rank)
        if self.leak == "position":
            return float(index % 2)
        if self.leak == "text-size":
            text = dumps(ep)
            return float(text.index('"trials": ['))  # the text beyond what the trials show
        return _role(ep)

    def surprise_many(self, episodes: Sequence[Episode]) -> list[np.ndarray]:
        """Each episode's value (:meth:`value`), repeated over its test steps."""
        rank = {eid: r for r, eid in enumerate(sorted(ep.id for ep in episodes))}
        return [np.full(ep.test.n_steps, self.value(ep, i, rank[ep.id])) for i, ep in enumerate(episodes)]


def leak_readers() -> list[LeakReader]:
    """One reader per leak, in :data:`LEAKS` order."""
    return [LeakReader(name) for name in LEAKS]


# ---------------------------------------------------------------- learned test-only shortcut

TEST_FEATURES: tuple[str, ...] = (*(n for n, f in FEATURES.items() if not f.reads_familiarization),
                                  "start-x", "start-y", "end-x", "end-y", "pickup-step", "unlock-step",
                                  "has-key", "has-lock")
"""What the learned shortcut reads of an episode: its test trial only."""


def features_of_test(ep: Episode) -> np.ndarray:
    """The :data:`TEST_FEATURES` of an episode (float64)."""
    test = ep.test
    lay = test.layout
    own = [FEATURES[n].compute(ep) for n in FEATURES if not FEATURES[n].reads_familiarization]
    pickup, unlock = test.pickup_step(), test.unlock_step()
    extra = [test.path[0][0], test.path[0][1], test.path[-1][0], test.path[-1][1],
             -1 if pickup is None else pickup, -1 if unlock is None else unlock,
             float(lay.key is not None), float(lay.lock is not None)]
    return np.array([*own, *extra], dtype=np.float64)


def fit_learned(fit: Mapping[str, Sequence[tuple[str, str]]], features: Mapping[str, np.ndarray]) -> dict[str, object]:
    """Per condition, a HistGradientBoostingClassifier (seeded, no early stopping) fit on the fit pairs'
    test features: expected episodes labelled 0, unexpected 1."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    models: dict[str, object] = {}
    for cond, pairs in fit.items():
        if not pairs:
            continue
        x = np.stack([features[e] for pair in pairs for e in pair])
        y = np.array([0, 1] * len(pairs))
        with threadpool_limits(limits=1):  # OpenMP threads on small data: 100x slower on a busy machine
            models[cond] = HistGradientBoostingClassifier(max_iter=100, min_samples_leaf=min(20, max(2, len(pairs) // 4)),
                                                      early_stopping=False, random_state=0).fit(x, y)
    return models


def learned_surprise(models: Mapping[str, object], episodes: Sequence[tuple[str, str]],
                     features: Mapping[str, np.ndarray]) -> dict[str, float]:
    """``{episode id: the probability its condition's model gives "unexpected"}`` for ``(id, condition)``
    pairs (0.5 where a condition has no model)."""
    from threadpoolctl import threadpool_limits

    out = {eid: 0.5 for eid, cond in episodes if cond not in models}
    for cond, model in models.items():
        ids = [eid for eid, c in episodes if c == cond]
        if ids:
            with threadpool_limits(limits=1):
                probs = model.predict_proba(np.stack([features[e] for e in ids]))[:, 1]  # type: ignore[attr-defined]
            out.update({eid: float(p) for eid, p in zip(ids, probs)})
    return out


__all__ = ["LEAKS", "LEAK_ALPHA", "LEARNED", "TEST_FEATURES", "LeakReader", "coin_p", "features_of_test", "fit_learned",
           "judge_leak", "leak_readers", "leak_threshold", "learned_surprise"]
