"""Statistics of a stimulus set per condition: counts, path lengths, object positions, closest-object cue.

The closest-object rule is the shortcut BIB's RNN baselines fell into ("goes to the nearer
object", reference/bib.md section 4). For each episode's test trial it asks whether the agent
walks to the NEAREST target: the targets are the objects plus the key (when there is one), and
"near" is the shortest-path cost from the agent's home in the test layout with barriers closed
(unreachable targets are infinitely far). The rule predicts that the episode whose agent goes to a
farther target is the unexpected one. A pair counts 1 when only the unexpected episode goes far,
0 when only the expected one does, and 0.5 when the rule cannot tell them apart (both or neither
go far, e.g. every single-object condition). A set free of this cue scores about 0.5.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from bib.episode import Episode, Trial
from bib.parallel import map_ordered
from bib.progress import track
from bib.results import Result, markdown_table
from bib.world.planning import shortest_cost


def goes_far(trial: Trial) -> bool | None:
    """True when the trial's agent walks to a target farther than the nearest reachable one.

    None when the trial has no goal (the rule has nothing to say).
    """
    lay = trial.layout
    if trial.goal is None:
        return None
    home = lay.agent.home
    targets = [o.cell for o in lay.objects] + ([lay.key] if lay.key is not None else [])
    costs = [shortest_cost(lay, home, c) for c in targets]
    reachable = [c for c in costs if math.isfinite(c)]
    if not reachable:
        return None
    goal = shortest_cost(lay, home, lay.goal_cell(trial.goal))
    return not math.isfinite(goal) or goal > min(reachable) + 1e-9


def _credit(e_far: bool | None, u_far: bool | None) -> float:
    if bool(u_far) and not e_far:
        return 1.0
    if bool(e_far) and not u_far:
        return 0.0
    return 0.5


def closest_object_credit(expected: Episode, unexpected: Episode) -> float:
    """1, 0 or 0.5: how the closest-object rule does on one pair (see the module docstring)."""
    return _credit(goes_far(expected.test), goes_far(unexpected.test))


@dataclass(frozen=True)
class EpisodeSummary:
    """What the statistics need from one episode (small and picklable)."""

    condition: str
    kind: str
    pair_id: str | None
    outcome: str
    fam_steps: tuple[int, ...]
    test_steps: int
    object_cells: tuple[tuple[int, int], ...]
    width: int
    height: int
    far: bool | None


def summarize_episode(ep: Episode) -> EpisodeSummary:
    """The per-episode facts :func:`set_stats` aggregates."""
    kind = "evaluation" if ep.outcome in ("expected", "unexpected") else "background"
    return EpisodeSummary(
        condition=ep.condition,
        kind=kind,
        pair_id=ep.pair_id,
        outcome=ep.outcome,
        fam_steps=tuple(t.n_steps for t in ep.familiarization),
        test_steps=ep.test.n_steps,
        object_cells=tuple(o.cell for t in ep.trials for o in t.layout.objects),
        width=ep.width,
        height=ep.height,
        far=goes_far(ep.test) if kind == "evaluation" else None,
    )


def _summarize_file(path: str) -> EpisodeSummary:
    from bib.stimuli.check import load_checked

    return summarize_episode(load_checked(path))


def _describe(values: Sequence[float]) -> dict[str, float | None]:
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {"mean": None, "sd": None, "min": None, "max": None}
    return {"mean": float(a.mean()), "sd": float(a.std()), "min": float(a.min()), "max": float(a.max())}


@dataclass
class ConditionStats:
    """Aggregated statistics of one condition (or background task)."""

    condition: str
    kind: str
    episodes: int = 0
    pairs: int = 0
    fam_steps: dict[str, float | None] = field(default_factory=dict)
    test_steps_expected: dict[str, float | None] = field(default_factory=dict)
    test_steps_unexpected: dict[str, float | None] = field(default_factory=dict)
    test_steps_histogram: dict[int, int] = field(default_factory=dict)
    object_grid: list[list[int]] = field(default_factory=list)
    object_cells: int = 0
    object_entropy_bits: float = 0.0
    closest_object_correct: float | None = None
    closest_object_decided: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        d = dict(self.__dict__)
        d["test_steps_histogram"] = {str(k): v for k, v in sorted(self.test_steps_histogram.items())}
        return d


def _aggregate(condition: str, items: Sequence[EpisodeSummary]) -> ConditionStats:
    st = ConditionStats(condition=condition, kind=items[0].kind, episodes=len(items))
    st.fam_steps = _describe([s for it in items for s in it.fam_steps])
    exp = [it for it in items if it.outcome in ("expected", "none")]
    unexp = [it for it in items if it.outcome == "unexpected"]
    st.test_steps_expected = _describe([it.test_steps for it in exp])
    st.test_steps_unexpected = _describe([it.test_steps for it in unexp])
    st.test_steps_histogram = dict(Counter(it.test_steps for it in items))
    w, h = max(it.width for it in items), max(it.height for it in items)
    grid = np.zeros((h, w), dtype=int)
    for it in items:
        for x, y in it.object_cells:
            grid[y, x] += 1
    st.object_grid = grid.tolist()
    st.object_cells = int((grid > 0).sum())
    p = grid[grid > 0] / max(grid.sum(), 1)
    st.object_entropy_bits = float(-(p * np.log2(p)).sum()) if p.size else 0.0
    pairs: dict[str, dict[str, EpisodeSummary]] = {}
    for it in items:
        if it.pair_id and it.outcome in ("expected", "unexpected"):
            pairs.setdefault(it.pair_id, {})[it.outcome] = it
    full = [m for m in pairs.values() if len(m) == 2]
    st.pairs = len(full)
    if full:
        credits = [_credit(m["expected"].far, m["unexpected"].far) for m in full]
        st.closest_object_correct = float(np.mean(credits))
        st.closest_object_decided = float(np.mean([c != 0.5 for c in credits]))
    return st


def episode_paths(directory: str | os.PathLike[str]) -> list[Path]:
    """Episode files of a set, read by :func:`bib.stimuli.sets.find_episodes` (manifests, else episode files)."""
    from bib.stimuli.sets import find_episodes

    return [r.path for r in find_episodes(directory).refs]


def set_stats(directory: str | os.PathLike[str], workers: int = 1) -> SetStats:
    """Statistics per condition of the set in ``directory``, conditions in sorted order (a :class:`SetStats`)."""
    files = [str(f) for f in episode_paths(directory)]
    by_condition: dict[str, list[EpisodeSummary]] = {}
    summaries = map_ordered(_summarize_file, files, workers=workers)
    for s in track(summaries, total=len(files), description="reading"):
        by_condition.setdefault(s.condition, []).append(s)
    from bib.stimuli.build import built_limit

    return SetStats([_aggregate(c, by_condition[c]) for c in sorted(by_condition)], built_limit(directory))


def _fmt(v: float | None, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def _mean_sd(d: dict[str, float | None]) -> str:
    return "-" if d["mean"] is None else f"{d['mean']:.1f}±{d['sd']:.1f}"


@dataclass
class SetStats(Result):
    """``bib stats``: :class:`ConditionStats` per condition of a set (iterating yields them)."""

    name: ClassVar[str] = "stats"
    conditions: list[ConditionStats]
    limit: int | None = None
    """The ``--limit`` the set was built with (its counts are then not the spec's), or None."""

    def __iter__(self) -> Iterator[ConditionStats]:
        return iter(self.conditions)

    def __len__(self) -> int:
        return len(self.conditions)

    def to_json(self) -> dict[str, Any]:
        """``{"conditions": [ConditionStats.as_dict(), ...]}`` (with histograms and object grids)."""
        return {"conditions": [c.as_dict() for c in self.conditions], "limit": self.limit}

    def to_markdown(self) -> str:
        """One row per condition: counts, steps (mean±sd), object cells and entropy, the closest-object rule;
        then what each column means (:data:`COLUMN_MEANINGS`)."""
        head = [c for c, _ in COLUMN_MEANINGS]
        rows = [[s.condition, s.kind, s.episodes, s.pairs, _mean_sd(s.fam_steps), _mean_sd(s.test_steps_expected),
                 _mean_sd(s.test_steps_unexpected), s.object_cells, _fmt(s.object_entropy_bits),
                 _fmt(s.closest_object_correct, ".3f"), _fmt(s.closest_object_decided, ".3f")] for s in self.conditions]
        table = markdown_table(head, rows, "ll" + "r" * (len(head) - 2))
        legend = "\n".join(f"- **{c}**: {m}" for c, m in COLUMN_MEANINGS)
        note = (f"Built with --limit {self.limit}: at most {self.limit} pairs (or episodes) per task, not the spec's counts.\n\n"
                if self.limit is not None else "")
        return f"{note}{table}\n\nWhat the columns mean:\n\n{legend}"


#: The columns of ``bib stats`` and what each means, in words for the people who design the study.
COLUMN_MEANINGS: tuple[tuple[str, str], ...] = (
    ("condition", "the task (condition) the episodes belong to"),
    ("kind", "evaluation (expected/unexpected pairs, shown to infants and models) or background (training episodes)"),
    ("episodes", "how many episodes (one familiarization block plus a test trial each)"),
    ("pairs", "how many complete expected/unexpected pairs"),
    ("fam steps", "moves the agent makes in a familiarization trial: mean ± SD"),
    ("test steps e", "moves in the test trial of the expected outcome: mean ± SD"),
    ("test steps u", "moves in the test trial of the unexpected outcome: mean ± SD (if it differs much from the "
                     "expected one, path length alone could tell the outcomes apart)"),
    ("obj cells", "how many different grid cells the objects appear in (more: positions better varied)"),
    ("obj H bits", "how evenly the objects are spread over those cells (entropy in bits; higher is more even, "
                   "log2 of the number of cells at most)"),
    ("closest rule", "how well a shortcut tells the outcomes apart without understanding the agent: \"the outcome "
                     "in which the agent walks to a farther object than the nearest one is the unexpected one\" "
                     "(1 = always right, 0.5 = chance; pairs it cannot decide count 0.5). Near 0.5 means object "
                     "distance does not give the answer away"),
    ("decided", "share of pairs the shortcut can decide (exactly one outcome's agent walks to a farther object)"),
)
