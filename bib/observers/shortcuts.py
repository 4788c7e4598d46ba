"""The shortcut battery: observers that pass a VOE set without a model of agents, and the features they read.

A benchmark whose pairs these observers can tell apart measures the shortcut, not an
understanding of agents (issue 12). ``bib audit SET`` (:mod:`bib.observers.audit`) runs them all.
Besides ``closest-object`` (:mod:`bib.observers.heuristics`):

- ``test-only``: the inverse planner given ONLY the test trial (no familiarization): a uniform
  prior over the feasible goals and over beta. It reads the efficiency of the test path.
- ``novelty``: "novel = surprising". A step's surprise is its distance to the nearest
  familiarization state: :func:`step_novelty`.
- ``familiarity``: "familiar = surprising" (BIB's design rule makes the unexpected outcome the one
  that looks like familiarization): the mean over the test trial of ``exp(-novelty)``, the same
  value at every step.
- ``path-familiarity``: "a test path that repeats fewer of the familiarization's moves is surprising":
  one minus the share of the test path's moves (cell to cell) that some familiarization trial made
  (:func:`path_familiarity`), the same value at every step (issue 38: it read 75% on the
  ``barrier-elsewhere`` pairs of efficiency-irrational).
- ``path-length``: "a long test path is surprising": the path cost walked so far at each step
  (the max readout is the whole path's cost).
- ``single-feature``: the best single episode feature of :data:`FEATURES` with a sign and a
  threshold, fit per condition on pairs disjoint from the evaluated ones
  (:mod:`bib.observers.audit` does the split; the fit is a small JSON file passed as
  ``--checkpoint``).

Each shortcut reads one kind of cue (:data:`CUES`); the audit's exemptions are stated per cue.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bib.episode import Episode, Trial
from bib.errors import BibInputError
from bib.guard import read_json
from bib.observers.base import BaseObserver
from bib.observers.heuristics import no_checkpoint
from bib.observers.inverse_planning import DEFAULT_BETAS, InversePlanner
from bib.world.dynamics import AgentState, action_between
from bib.world.grid import Layout, border_walls
from bib.world.keylock import optimal_cost
from bib.world.planning import distance_field, path_cost, reachable
from bib.world.terrain import crosses_mud

SHORTCUTS: tuple[str, ...] = ("closest-object", "test-only", "novelty", "familiarity", "path-familiarity", "path-length",
                               "single-feature")
"""The battery ``bib audit`` runs, in table order."""

CUES: dict[str, str] = {
    "closest-object": "efficiency",
    "test-only": "efficiency",
    "novelty": "novelty",
    "familiarity": "novelty",
    "path-familiarity": "novelty",
    "path-length": "perceptual",
}
"""The kind of cue each shortcut reads (``single-feature``: the kind of the feature it picked).

``efficiency``: how efficient the test path is on its own; ``novelty``: how unlike the
familiarization the test looks (layout, agent position and moves); ``perceptual``: a property of
the picture (lengths, counts, what is where); ``reachability``: which test objects the agent can
reach; ``familiarization-barrier``: whether the familiarization showed a barrier (or mud);
``agent-identity``: whether the test agent is the familiar one.
"""


# ---------------------------------------------------------------- test-only


class TestOnlyObserver(BaseObserver):
    """The inverse planner without familiarization: uniform goal and beta priors, the test trial alone."""

    name = "test-only"

    def __init__(self, betas: Sequence[float] = DEFAULT_BETAS, epsilon: float = 1e-3) -> None:
        self.planner = InversePlanner(betas=betas, epsilon=epsilon)

    def surprise(self, episode: Episode) -> np.ndarray:
        """``-log p(move)`` of each test move under the prior predictive of a never-seen agent."""
        test = episode.test
        return self.planner.infer_trial(test, self.planner.prior_belief()).surprise


# ---------------------------------------------------------------- novelty / familiarity

EMPTY, WALL, BARRIER, LOCK, KEY = 0, 1, 2, 3, 4
MUD = -2
"""Content code of a mud cell (costly terrain, issue 43); objects take the codes above :data:`KEY`."""
START = -1
"""Move code of a trial's first state (no move made yet)."""


def _content(layout: Layout, key_taken: bool, unlocked: bool, looks: dict[tuple, int]) -> np.ndarray:
    """What each cell shows (``[H, W]`` codes): walls, mud, barriers and lock until unlocked, the key until taken,
    objects by look."""
    grid = np.zeros((layout.height, layout.width), dtype=np.int64)
    for x, y in layout.walls:
        grid[y, x] = WALL
    for x, y in layout.terrain:
        grid[y, x] = MUD
    if not unlocked:
        for x, y in layout.barriers:
            grid[y, x] = BARRIER
        if layout.lock is not None:
            grid[layout.lock[1], layout.lock[0]] = LOCK
    if layout.key is not None and not key_taken:
        grid[layout.key[1], layout.key[0]] = KEY
    for o in layout.objects:
        grid[o.cell[1], o.cell[0]] = looks.setdefault((o.shape, o.color), KEY + 1 + len(looks))
    return grid


@dataclass(frozen=True)
class _States:
    """The states of one or more trials: cell, the move that led there, and which content picture it shows."""

    xy: np.ndarray  # [N, 2]
    move: np.ndarray  # [N]
    picture: np.ndarray  # [N] index into pictures
    pictures: list[np.ndarray]


def _trial_states(trials: Sequence[Trial], looks: dict[tuple, int], with_start: bool) -> _States:
    xy: list[tuple[int, int]] = []
    move: list[int] = []
    picture: list[int] = []
    pictures: list[np.ndarray] = []
    for trial in trials:
        pick, unlock = trial.pickup_step(), trial.unlock_step()
        index: dict[tuple[bool, bool], int] = {}
        for t in range(0 if with_start else 1, len(trial.path)):
            state = (pick is not None and t >= pick, unlock is not None and t >= unlock)
            if state not in index:
                index[state] = len(pictures)
                pictures.append(_content(trial.layout, *state, looks))
            xy.append(trial.path[t])
            a = START if t == 0 else action_between(trial.path[t - 1], trial.path[t])
            move.append(-2 if a is None else a)
            picture.append(index[state])
    return _States(np.asarray(xy, dtype=np.float64).reshape(-1, 2), np.asarray(move), np.asarray(picture, dtype=np.int64),
                   pictures)


def step_novelty(episode: Episode) -> np.ndarray:
    """Per test step, the distance of its state and move to the nearest familiarization state.

    A state is the picture after the move (what every cell shows: walls, barriers and lock until
    unlocked, the key until picked up, objects by look) plus the agent's cell; the agent's own
    looks are not part of it. The distance between a test step and a familiarization state is
    ``H + |cell - cell'| + [move != move']``: ``H`` the number of cells whose content differs
    between the two pictures, the Euclidean distance of the agent's cells, and 1 when the moves
    differ (a trial's first state counts as no move). All familiarization trials and their
    start states are candidates. No familiarization: zeros.
    """
    looks: dict[tuple, int] = {}
    fam = _trial_states(episode.familiarization, looks, with_start=True)
    test = _trial_states([episode.test], looks, with_start=False)
    n = len(test.move)
    if n == 0 or len(fam.move) == 0:
        return np.zeros(n)
    fam_pics = np.stack(fam.pictures)  # [P, H, W]
    hamming = np.array([(fam_pics != p[None]).sum(axis=(1, 2)) for p in test.pictures], dtype=np.float64)  # [Pt, P]
    d = hamming[test.picture][:, fam.picture]  # [T, F]
    d = d + np.sqrt(((test.xy[:, None, :] - fam.xy[None, :, :]) ** 2).sum(axis=2))
    d = d + (test.move[:, None] != fam.move[None, :])
    return d.min(axis=1)


class NoveltyObserver(BaseObserver):
    """"Novel = surprising": each test step's distance to the nearest familiarization state (:func:`step_novelty`)."""

    name = "novelty"

    def surprise(self, episode: Episode) -> np.ndarray:
        """:func:`step_novelty` of each test step."""
        return step_novelty(episode)


class FamiliarityObserver(BaseObserver):
    """"Familiar = surprising": the test trial's mean ``exp(-novelty)``, the same value at every step."""

    name = "familiarity"

    def surprise(self, episode: Episode) -> np.ndarray:
        """``mean_t exp(-step_novelty_t)`` repeated over the test steps."""
        return familiarity_of(step_novelty(episode))


def familiarity_of(novelty: np.ndarray) -> np.ndarray:
    """Familiarity per step from :func:`step_novelty`: ``mean_t exp(-novelty_t)`` at every step."""
    return np.full(novelty.shape, float(np.exp(-novelty).mean()) if novelty.size else 0.0)


# ---------------------------------------------------------------- path familiarity


def path_familiarity(episode: Episode) -> float:
    """The share of the test path's moves (from cell, to cell) that some familiarization trial made (0 with no
    test move or no familiarization)."""
    moves = list(zip(episode.test.path, episode.test.path[1:]))
    if not moves:
        return 0.0
    seen = {m for t in episode.familiarization for m in zip(t.path, t.path[1:])}
    return sum(m in seen for m in moves) / len(moves)


class PathFamiliarityObserver(BaseObserver):
    """"A test path that repeats fewer familiar moves is surprising": ``1 - path_familiarity`` at every test step."""

    name = "path-familiarity"

    def surprise(self, episode: Episode) -> np.ndarray:
        """``1 -`` :func:`path_familiarity` repeated over the test steps."""
        return np.full(episode.test.n_steps, 1.0 - path_familiarity(episode))


# ---------------------------------------------------------------- path length


class PathLengthObserver(BaseObserver):
    """"A long path is surprising": the path cost walked so far at each test step (1 per orthogonal move, sqrt 2 diagonal)."""

    name = "path-length"

    def surprise(self, episode: Episode) -> np.ndarray:
        """Cumulative path cost after each test step."""
        path = episode.test.path
        return np.cumsum([path_cost(path[i - 1 : i + 1]) for i in range(1, len(path))], dtype=np.float64)


# ---------------------------------------------------------------- single features


@dataclass(frozen=True)
class Feature:
    """One number per episode that a single-feature shortcut may threshold."""

    name: str
    cue: str
    description: str
    compute: Callable[[Episode], float]
    reads_familiarization: bool = False


def _inner_walls(layout: Layout) -> int:
    return len(layout.walls - border_walls(layout.width, layout.height))


def _excess_cost(ep: Episode) -> float:
    test = ep.test
    if test.n_steps == 0:
        return 0.0
    best = optimal_cost(test.layout, test.path[-1], AgentState(test.path[0]))
    return float(path_cost(test.path) - best) if math.isfinite(best) else 0.0


def _hug_count(k: int) -> Callable[[Episode], float]:
    """The ``k``-th count of :func:`bib.tasks.unobserved.hugging` (the one definition of the cue)."""

    def count(ep: Episode) -> float:
        from bib.tasks.unobserved import hugging  # the tasks import no observer: no cycle

        return float(hugging(ep)[k])

    return count


def _reachable_share(ep: Episode) -> float:
    lay = ep.test.layout
    if not lay.objects:
        return 1.0
    reach = reachable(lay, ep.test.path[0])
    return sum(o.cell in reach for o in lay.objects) / len(lay.objects)


def _ends_nearest(ep: Episode) -> float:
    """1 when the test path ends on the nearest reachable target (objects and the key) by path cost from its start."""
    test = ep.test
    lay = test.layout
    targets = [o.cell for o in lay.objects] + ([lay.key] if lay.key is not None else [])
    if not targets or test.n_steps == 0:
        return 0.0
    field = distance_field(lay, test.path[0])
    costs = {c: float(field[c[1], c[0]]) for c in targets}
    finite = [v for v in costs.values() if math.isfinite(v)]
    end = test.path[-1]
    return float(end in costs and bool(finite) and costs[end] <= min(finite) + 1e-9)


def _repeats_familiar_path(ep: Episode) -> float:
    return float(any(t.path == ep.test.path for t in ep.familiarization))


def _familiar_agent_changed(ep: Episode) -> float:
    fam = ep.familiarization
    if not fam:
        return 0.0
    a, b = fam[-1].agent, ep.test.agent
    return float((a.shape, a.color) != (b.shape, b.color))


def _distance(ep: Episode) -> float:
    p = ep.test.path
    return float(math.dist(p[0], p[-1]))


FEATURES: dict[str, Feature] = {
    f.name: f
    for f in (
        Feature("path-cost", "perceptual", "cost of the test path", lambda ep: float(path_cost(ep.test.path))),
        Feature("n-steps", "perceptual", "moves in the test trial", lambda ep: float(ep.test.n_steps)),
        Feature("start-end-distance", "perceptual", "straight-line distance from the test start to its end",
                _distance),
        Feature("excess-cost", "efficiency", "test path cost minus an optimal key/lock path's to the same end cell",
                _excess_cost),
        Feature("ends-nearest", "perceptual", "the test path ends on the nearest reachable target (objects, key)",
                _ends_nearest),
        Feature("ends-on-key", "perceptual", "the test path ends on the key",
                lambda ep: float(ep.test.layout.key is not None and ep.test.path[-1] == ep.test.layout.key)),
        Feature("picks-key", "perceptual", "the test agent picks up the key",
                lambda ep: float(ep.test.pickup_step() is not None)),
        Feature("reachable-share", "reachability", "share of the test objects reachable from the start",
                _reachable_share),
        Feature("objects", "perceptual", "objects in the test layout", lambda ep: float(len(ep.test.layout.objects))),
        Feature("inner-walls", "perceptual", "interior wall cells in the test layout",
                lambda ep: float(_inner_walls(ep.test.layout))),
        Feature("barriers", "perceptual", "barrier cells in the test layout",
                lambda ep: float(len(ep.test.layout.barriers))),
        Feature("repeats-familiar-path", "novelty", "the test path repeats a familiarization path cell for cell",
                _repeats_familiar_path, reads_familiarization=True),
        Feature("familiarization-inner-walls", "familiarization-barrier",
                "mean interior wall cells of the familiarization layouts",
                lambda ep: float(np.mean([_inner_walls(t.layout) for t in ep.familiarization]))
                if ep.familiarization else 0.0, reads_familiarization=True),
        Feature("agent-changed", "agent-identity", "the test agent looks different from the last familiarization agent",
                _familiar_agent_changed, reads_familiarization=True),
        # costly terrain (issue 43), last so that the picks of sets without mud (every feature 0 there) stay as they were
        Feature("mud-cells", "perceptual", "mud (costly terrain) cells in the test layout",
                lambda ep: float(len(ep.test.layout.terrain))),
        Feature("wades", "perceptual", "times the test path steps onto mud", lambda ep: float(crosses_mud(ep.test.layout, ep.test.path))),
        Feature("familiarization-mud", "familiarization-barrier", "mean mud cells of the familiarization layouts",
                lambda ep: float(np.mean([len(t.layout.terrain) for t in ep.familiarization])) if ep.familiarization else 0.0,
                reads_familiarization=True),
        # the revealed obstacle (issue 43's occluder), last for the same reason: 0 in every episode without an occluder;
        # how much the walks hug it, the four counts of bib.tasks.unobserved.hugging
        Feature("path-hugs-reveal", "perceptual", "familiarization path cells within one king move of a wall the test "
                "reveals where the familiarization's occluder stood", _hug_count(0), reads_familiarization=True),
        Feature("walks-hug-reveal", "perceptual", "each familiarization walk's cells within one king move of a revealed "
                "wall, summed over the walks", _hug_count(1), reads_familiarization=True),
        Feature("path-nears-reveal", "perceptual", "familiarization path cells within two king moves of a revealed wall",
                _hug_count(2), reads_familiarization=True),
        Feature("turns-at-reveal", "perceptual", "familiarization walks' turns within one king move of a revealed wall",
                _hug_count(3), reads_familiarization=True),
    )
}
"""Candidate features of ``single-feature``, in tie-break order."""


def episode_features(episode: Episode) -> np.ndarray:
    """All :data:`FEATURES` of one episode, in order."""
    return np.array([f.compute(episode) for f in FEATURES.values()], dtype=np.float64)


@dataclass(frozen=True)
class Stump:
    """A fitted single-feature rule of one condition: ``unexpected when sign * feature > threshold``.

    Attributes:
        feature: a :data:`FEATURES` name.
        sign: +1 (a larger value is more surprising) or -1.
        threshold: the cut on ``sign * feature`` that best classifies the fit split's episodes.
        fit_accuracy: pairwise accuracy of ``sign * feature`` on the fit split (ties 0.5).
        n_fit_pairs: pairs the rule was fit on.
    """

    feature: str
    sign: int
    threshold: float
    fit_accuracy: float
    n_fit_pairs: int

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"feature": self.feature, "sign": self.sign, "threshold": self.threshold,
                "fit_accuracy": self.fit_accuracy, "n_fit_pairs": self.n_fit_pairs}


def _pairwise(values_e: np.ndarray, values_u: np.ndarray) -> float:
    return float(np.mean(np.where(values_e < values_u, 1.0, np.where(values_e == values_u, 0.5, 0.0))))


def fit_stump(expected: np.ndarray, unexpected: np.ndarray) -> Stump:
    """The best (feature, sign) by pairwise accuracy on the fit pairs, and its episode-level threshold.

    Args:
        expected: ``[N, F]`` features of the expected episodes of N fit pairs (columns: :data:`FEATURES`).
        unexpected: ``[N, F]`` features of their unexpected partners.

    Ties between candidates go to the earlier feature in :data:`FEATURES`, then to sign +1. The
    threshold is the midpoint between consecutive values of ``sign * feature`` over the 2N fit
    episodes that classifies most of them right ("unexpected" above it), the lowest such one.
    """
    names = list(FEATURES)
    if expected.shape != unexpected.shape or expected.ndim != 2 or expected.shape[1] != len(names):
        raise ValueError(f"fit_stump needs two [N, {len(names)}] arrays, got {expected.shape} and {unexpected.shape}")
    n = expected.shape[0]
    if n == 0:
        raise ValueError("fit_stump needs at least one fit pair")
    best: tuple[float, int, int] | None = None
    for j in range(len(names)):
        for sign in (1, -1):
            acc = _pairwise(sign * expected[:, j], sign * unexpected[:, j])
            if best is None or acc > best[0] + 1e-12:
                best = (acc, j, sign)
    assert best is not None
    acc, j, sign = best
    values = np.concatenate([sign * expected[:, j], sign * unexpected[:, j]])
    labels = np.concatenate([np.zeros(n), np.ones(n)])
    uniq = np.unique(values)
    cuts = np.concatenate([[uniq[0] - 1.0], (uniq[:-1] + uniq[1:]) / 2]) if uniq.size > 1 else np.array([uniq[0] - 1.0])
    correct = [float(np.mean((values > c) == labels)) for c in cuts]
    threshold = float(cuts[int(np.argmax(correct))])
    return Stump(names[j], sign, threshold, acc, n)


class SingleFeatureObserver(BaseObserver):
    """The best single feature per condition, read from a fit (``{condition: Stump}``).

    A step's surprise is ``sign * feature - threshold`` of its episode (the same value at every
    step); a condition without a fit gets zeros (every pair a tie).
    """

    name = "single-feature"

    def __init__(self, stumps: Mapping[str, Stump]) -> None:
        self.stumps = dict(stumps)

    def surprise(self, episode: Episode) -> np.ndarray:
        """The signed, thresholded feature of the episode's condition, repeated over the test steps."""
        stump = self.stumps.get(episode.condition)
        value = 0.0 if stump is None else stump.sign * FEATURES[stump.feature].compute(episode) - stump.threshold
        return np.full(episode.test.n_steps, value)


FIT_SCHEMA = "bib.single-feature/1"


def write_stumps(path: str | Path, stumps: Mapping[str, Stump], split: str) -> None:
    """Write a single-feature fit as JSON (``{"schema", "split", "conditions": {C: stump}}``), atomically."""
    from bib.io import atomic_write_text

    doc = {"schema": FIT_SCHEMA, "split": split, "conditions": {c: s.to_json() for c, s in stumps.items()}}
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n")


def read_stumps(path: str | Path) -> dict[str, Stump]:
    """Read a single-feature fit written by :func:`write_stumps` (``bib audit`` writes ``single-feature.json``).

    Raises:
        BibInputError: not readable, not such a file, or a stump naming an unknown feature.
    """
    p = Path(path)
    try:
        doc = read_json(p)
    except OSError as exc:
        raise BibInputError(f"{p}: cannot read single-feature fit ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != FIT_SCHEMA or not isinstance(doc.get("conditions"), dict):
        raise BibInputError(f"{p}: not a single-feature fit (schema {FIT_SCHEMA}; `bib audit` writes one)")
    out = {}
    for cond, s in doc["conditions"].items():
        try:
            stump = Stump(str(s["feature"]), int(s["sign"]), float(s["threshold"]), float(s["fit_accuracy"]),
                          int(s["n_fit_pairs"]))
        except (KeyError, TypeError, ValueError):
            raise BibInputError(f"{p}: field 'conditions.{cond}': malformed stump") from None
        if stump.feature not in FEATURES or stump.sign not in (1, -1):
            raise BibInputError(f"{p}: field 'conditions.{cond}.feature': unknown feature {stump.feature!r} "
                                f"or sign {stump.sign}")
        out[cond] = stump
    return out


# ---------------------------------------------------------------- factories


def make_test_only(checkpoint: Path | None = None, betas: Sequence[float] = DEFAULT_BETAS,
                   epsilon: float = 1e-3) -> TestOnlyObserver:
    """Factory for ``test-only``."""
    no_checkpoint("test-only", checkpoint)
    return TestOnlyObserver(betas=betas, epsilon=epsilon)


def make_novelty(checkpoint: Path | None = None) -> NoveltyObserver:
    """Factory for ``novelty``."""
    no_checkpoint("novelty", checkpoint)
    return NoveltyObserver()


def make_familiarity(checkpoint: Path | None = None) -> FamiliarityObserver:
    """Factory for ``familiarity``."""
    no_checkpoint("familiarity", checkpoint)
    return FamiliarityObserver()


def make_path_familiarity(checkpoint: Path | None = None) -> PathFamiliarityObserver:
    """Factory for ``path-familiarity``."""
    no_checkpoint("path-familiarity", checkpoint)
    return PathFamiliarityObserver()


def make_path_length(checkpoint: Path | None = None) -> PathLengthObserver:
    """Factory for ``path-length``."""
    no_checkpoint("path-length", checkpoint)
    return PathLengthObserver()


def make_single_feature(checkpoint: Path | None = None) -> SingleFeatureObserver:
    """Factory for ``single-feature``: ``checkpoint`` is the fit ``bib audit`` writes (``single-feature.json``)."""
    assert checkpoint is not None  # the registry enforces needs_checkpoint
    return SingleFeatureObserver(read_stumps(checkpoint))
