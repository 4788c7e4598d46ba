"""Task registry: ids -> generators, condition rules and the facts about each task (MiniGrid-style register / make).

The registry is the one list of conditions and tasks: their ids, family, kind, order, BIB folder
name and one-line descriptions live in the :class:`TaskSpec` each family module registers, and
everything else (evaluation tables, BIB JSON folders, analysis schema, demo, docs) derives from
it through :func:`task_ids`, :func:`conditions`, :func:`families` and :func:`table_order`.

Order: tasks are listed by their ``order`` (BIB's table order for the evaluation conditions:
preference 10, multi-agent 20, inaccessible goal 30, efficiency 40-60, instrumental 70-90; a new
condition takes a free number between its neighbours), then by registration.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bib.episode import Episode, Problem, validate
from bib.errors import BibInputError

Generator = Callable[[np.random.Generator, "UnitInfo"], list[Episode]]
Rule = Callable[[Episode], list[Problem]]
PairRule = Callable[[Episode, Episode], list[Problem]]


def unit_id(task: str, index: int) -> str:
    """``<task>-<index:06d>``: the id of unit ``index`` of ``task`` (a pair id, or a background episode id)."""
    return f"{task}-{index:06d}"


@dataclass(frozen=True)
class UnitInfo:
    """What a generator needs to name its episodes: task id, unit index and the unit's seed."""

    task: str
    index: int
    seed: int

    @property
    def pair_id(self) -> str:
        """``<task>-<index:06d>``: the pair id (evaluation) or the episode id (background)."""
        return unit_id(self.task, self.index)


@dataclass(frozen=True)
class TaskSpec:
    """A registered task.

    Attributes:
        id: the task / condition id.
        family: task family (preference, efficiency, ...).
        kind: ``evaluation`` (yields an expected + unexpected pair) or ``background``
            (yields one expected-only episode).
        make: ``make(rng, unit) -> [episodes]``; raise :class:`LayoutRejected` to ask for a
            fresh layout.
        rule: condition rule of one episode (beyond the generic ones), or None.
        pair_rule: rule tying the expected and unexpected episodes of a pair, or None.
        bib_folder: BIB v1.1's folder name for the condition (evaluation) or bib-baselines'
            training folder (background); None for tasks BIB does not have.
        expected: one line saying what the expected episode shows (the whole episode for
            background and agent tasks).
        unexpected: one line saying what the unexpected episode shows ("" when there is none).
        order: position in listings and results tables among the tasks of its kind (ascending).
    """

    id: str
    family: str
    kind: str
    make: Generator
    rule: Rule | None = None
    pair_rule: PairRule | None = None
    bib_folder: str | None = None
    expected: str = ""
    unexpected: str = ""
    order: int = 0


class LayoutRejected(Exception):
    """Raised by a generator when a sampled layout cannot satisfy the task's rule."""


REGISTRY: dict[str, TaskSpec] = {}
MAX_ATTEMPTS = 200


def register(spec: TaskSpec) -> TaskSpec:
    """Add a task to the registry (ids are unique)."""
    if spec.id in REGISTRY:
        raise ValueError(f"task {spec.id!r} is registered twice")
    if spec.kind not in ("evaluation", "background", "agent"):
        raise ValueError(f"task {spec.id!r}: unknown kind {spec.kind!r}")
    REGISTRY[spec.id] = spec
    return spec


def get_task(task_id: str) -> TaskSpec:
    """The registered task ``task_id``; BibInputError listing the known ids otherwise."""
    try:
        return REGISTRY[task_id]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise BibInputError(f"unknown task id {task_id!r}; known: {known}") from None


def task_ids(kind: str | None = None, family: str | None = None) -> tuple[str, ...]:
    """Registered task ids, in order, of ``kind`` (``evaluation``, ``background``, ``agent``) and
    ``family`` (either or both may be None: any)."""
    specs = sorted(REGISTRY.values(), key=lambda t: t.order)  # stable: registration order breaks ties
    return tuple(t.id for t in specs if (kind is None or t.kind == kind) and (family is None or t.family == family))


def conditions() -> tuple[str, ...]:
    """The evaluation conditions, in BIB's table order."""
    return task_ids("evaluation")


def families() -> dict[str, tuple[str, ...]]:
    """``{family: conditions}`` for the families with several conditions, whose unweighted mean BIB reports."""
    out: dict[str, tuple[str, ...]] = {}
    for c in conditions():
        out[REGISTRY[c].family] = (*out.get(REGISTRY[c].family, ()), c)
    return {f: cs for f, cs in out.items() if len(cs) > 1}


def table_order() -> list[str]:
    """Rows of a BIB results table: the conditions in order, ``<family>-average`` after each averaged family."""
    fams = families()
    last = {cs[-1]: f for f, cs in fams.items()}
    rows: list[str] = []
    for c in conditions():
        rows.append(c)
        if c in last:
            rows.append(f"{last[c]}-average")
    return rows


def bib_folders(kind: str) -> dict[str, str]:
    """``{task id: BIB folder name}`` of the registered tasks of ``kind`` that BIB has."""
    return {t.id: t.bib_folder for t in REGISTRY.values() if t.kind == kind and t.bib_folder}


def unit_seed(base_seed: int, task_id: str, index: int) -> int:
    """The seed of unit ``index`` of ``task_id`` under ``base_seed`` (63-bit, stable across runs)."""
    ss = np.random.SeedSequence([int(base_seed) & 0xFFFFFFFFFFFFFFFF, zlib.crc32(task_id.encode()), int(index)])
    hi, lo = ss.generate_state(2, dtype=np.uint32)
    return (int(hi) << 31) ^ int(lo)


def make_unit(task_id: str, index: int, base_seed: int) -> list[Episode]:
    """Generate unit ``index`` of a task: a pair (evaluation) or one episode (background).

    The generator is retried with the same stream (fresh layouts) up to ``MAX_ATTEMPTS`` times
    when it rejects a layout; every returned episode passes :func:`validate_episode` and the
    pair rule, or a RuntimeError says which rule kept failing.
    """
    spec = get_task(task_id)
    seed = unit_seed(base_seed, task_id, index)
    rng = np.random.default_rng(seed)
    unit = UnitInfo(task_id, index, seed)
    last = "no attempt"
    for _ in range(MAX_ATTEMPTS):
        try:
            episodes = spec.make(rng, unit)
        except LayoutRejected as exc:
            last = str(exc) or "layout rejected"
            continue
        problems = [p for ep in episodes for p in validate_episode(ep)]
        if spec.pair_rule is not None and len(episodes) == 2:
            problems += spec.pair_rule(*episodes)
        if not problems:
            return episodes
        last = str(problems[0])
    raise RuntimeError(f"task {task_id} unit {index}: no valid layout after {MAX_ATTEMPTS} attempts ({last})")


def validate_episode(ep: Episode) -> list[Problem]:
    """Generic rules plus the rule of the episode's condition (when it is a registered task)."""
    problems = validate(ep)
    spec = REGISTRY.get(ep.condition)
    if not problems and spec is not None and spec.rule is not None:
        problems = spec.rule(ep)
    return problems


def validate_pair(expected: Episode, unexpected: Episode) -> list[Problem]:
    """The pair rule of the condition the two episodes share (empty when it has none)."""
    spec = REGISTRY.get(expected.condition)
    if spec is None or spec.pair_rule is None:
        return []
    return spec.pair_rule(expected, unexpected)
