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
from bib.registry import Registry
from bib.tasks.options import LEGACY, Controls, TaskOptions, in_bin

Generator = Callable[[np.random.Generator, "UnitInfo"], list[Episode]]
Rule = Callable[[Episode], list[Problem]]
PairRule = Callable[[Episode, Episode], list[Problem]]
PairMeasure = Callable[[Episode, Episode], float]


def unit_id(task: str, index: int) -> str:
    """``<task>-<index:06d>``: the id of unit ``index`` of ``task`` (a pair id, or a background episode id)."""
    return f"{task}-{index:06d}"


@dataclass(frozen=True)
class UnitInfo:
    """What a generator needs: task id, unit index, the unit's seed and the task's generation options.

    With options (:mod:`bib.tasks.options`) a unit is a group of ``options.group_size`` pairs
    whose pair indices start at ``index``.
    """

    task: str
    index: int
    seed: int
    options: TaskOptions = LEGACY
    slot: int | None = None

    @property
    def pair_id(self) -> str:
        """``<task>-<index:06d>``: the pair id (evaluation) or the episode id (background)."""
        return unit_id(self.task, self.index)

    @property
    def group(self) -> int:
        """The unit's group number (its index over the group size)."""
        return self.index // self.options.group_size

    @property
    def design(self) -> int:
        """The unit's design slot (:func:`design_slot`; the group number when none was drawn)."""
        return self.group if self.slot is None else self.slot


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
        controls: what the generator supports beyond BIB's design (twins, variants, graded
            difficulty; :class:`bib.tasks.options.Controls`).
        difficulty: ``difficulty(expected, unexpected) -> cells`` of a pair (see
            :mod:`bib.tasks.difficulty`), or None where pairs are not graded.
        evidence: ``evidence(expected, unexpected) -> nats`` of a pair that the familiarization itself carries,
            added to the test moves' evidence (:func:`bib.tasks.difficulty.pair_evidence`; unobserved-constraints:
            the walks' log-likelihood ratio of the two reveals), or None where the familiarization enters only
            through the goal it shows.
        shortcut_exempt: ``((cue, reason), ...)``: the kinds of cue (:data:`bib.observers.shortcuts.CUES`)
            that ``bib audit`` allows to decide this condition, because the condition tests that
            very thing (the efficiency principle) or it is the condition's own manipulation.
        exempt_lapses: variants whose design takes the exempt cues away (e.g. efficiency-irrational's
            ``barrier-aside``: the same barrier in both familiarizations): on a set where every pair of
            the condition is one of these, ``bib audit`` grants no exemption and every cue must stay at
            chance.
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
    controls: Controls = Controls()
    difficulty: PairMeasure | None = None
    evidence: PairMeasure | None = None
    shortcut_exempt: tuple[tuple[str, str], ...] = ()
    exempt_lapses: tuple[str, ...] = ()


class LayoutRejected(Exception):
    """Raised by a generator when a sampled layout cannot satisfy the task's rule."""


REGISTRY: Registry[TaskSpec] = Registry("task id")
"""Task id -> :class:`TaskSpec` (a :class:`bib.registry.Registry`; family modules register into it)."""
MAX_ATTEMPTS = 200


def register(spec: TaskSpec) -> TaskSpec:
    """Add a task to :data:`REGISTRY` under its id (ids are unique; the kind must be known)."""
    if spec.kind not in ("evaluation", "background", "agent"):
        raise ValueError(f"task {spec.id!r}: unknown kind {spec.kind!r}")
    return REGISTRY.register(spec.id, spec)


def get_task(task_id: str) -> TaskSpec:
    """The registered task ``task_id`` (``REGISTRY[task_id]``): BibInputError listing the known ids otherwise."""
    return REGISTRY[task_id]


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


def _base_entropy(base_seed: int) -> int:
    """The base seed as SeedSequence entropy: itself, whole (a ``--secret-seed`` is 128 bits; a seed below 2**64
    gives the entropy it always gave), or a negative seed's 64 low bits, as before."""
    s = int(base_seed)
    return s if s >= 0 else s & 0xFFFFFFFFFFFFFFFF


def unit_seed(base_seed: int, task_id: str, index: int, options: TaskOptions = LEGACY) -> int:
    """The seed of unit ``index`` of ``task_id`` under ``base_seed`` (63-bit, stable across runs).

    With options, a checksum of them joins the entropy, so a set built with other options (and
    resumed into the same folder) never keeps a unit built under the old ones.
    """
    entropy = [_base_entropy(base_seed), zlib.crc32(task_id.encode()), int(index)]
    if not options.legacy:
        entropy.append(zlib.crc32(repr(options).encode()))
    ss = np.random.SeedSequence(entropy)
    hi, lo = ss.generate_state(2, dtype=np.uint32)
    return (int(hi) << 31) ^ int(lo)


def _block_order(base_seed: int, task_id: str, block: int, options: TaskOptions) -> np.ndarray:
    """The order in which the groups of ``block`` take its design slots (a permutation drawn from the seed)."""
    entropy = [_base_entropy(base_seed), zlib.crc32(task_id.encode()), int(block),
               zlib.crc32(repr(options).encode()), 0x5107]
    return np.random.default_rng(np.random.SeedSequence(entropy)).permutation(options.cycle)


def design_slot(base_seed: int, task_id: str, group: int, options: TaskOptions) -> int:
    """The design slot of group ``group`` (:mod:`bib.tasks.options`): groups ``k * cycle .. (k + 1) * cycle - 1``
    take the slots of block ``k`` in an order drawn from the set's seed, so a group's variant, bin, order and
    twin position are balanced over every block and follow from no pair index."""
    block, offset = divmod(int(group), options.cycle)
    return block * options.cycle + int(_block_order(base_seed, task_id, block, options)[offset])


def design_group(base_seed: int, task_id: str, slot: int, options: TaskOptions) -> int:
    """The group that takes design slot ``slot`` (the inverse of :func:`design_slot`)."""
    block, offset = divmod(int(slot), options.cycle)
    return block * options.cycle + int(np.flatnonzero(_block_order(base_seed, task_id, block, options) == offset)[0])


def make_unit(task_id: str, index: int, base_seed: int, options: TaskOptions = LEGACY,
              attempts: int = MAX_ATTEMPTS) -> list[Episode]:
    """Generate unit ``index`` of a task: a pair (evaluation), a group of pairs (with ``options``), or one episode (background).

    The generator is retried with the same stream (fresh layouts) up to ``attempts`` times when
    it rejects a layout; every returned episode passes :func:`validate_episode`, every pair its
    pair rule and, with options, :func:`group_problems` (twins, difficulty bin, excess bound), or
    a RuntimeError says which rule kept failing.

    Raises:
        ValueError: ``index`` is not the first pair of a group.
    """
    spec = get_task(task_id)
    if index % options.group_size:
        raise ValueError(f"unit index {index} of {task_id} is not a multiple of the group size {options.group_size}")
    seed = unit_seed(base_seed, task_id, index, options)
    rng = np.random.default_rng(seed)
    slot = None if options.legacy else design_slot(base_seed, task_id, index // options.group_size, options)
    unit = UnitInfo(task_id, index, seed, options, slot)
    last = "no attempt"
    for _ in range(attempts):
        try:
            episodes = spec.make(rng, unit)
        except LayoutRejected as exc:
            last = str(exc) or "layout rejected"
            continue
        problems = [p for ep in episodes for p in validate_episode(ep)]
        if spec.pair_rule is not None:
            problems += [p for e, u in pairs_of(episodes) for p in spec.pair_rule(e, u)]
        if not options.legacy:
            problems += group_problems(episodes, unit)
        if not problems:
            return episodes
        last = str(problems[0])
    raise RuntimeError(f"task {task_id} unit {index}: no valid layout after {attempts} attempts ({last})")


def pairs_of(episodes: list[Episode]) -> list[tuple[Episode, Episode]]:
    """``(expected, unexpected)`` of every pair among ``episodes`` (in order of first appearance)."""
    by_pair: dict[str, dict[str, Episode]] = {}
    for ep in episodes:
        if ep.pair_id is not None:
            by_pair.setdefault(ep.pair_id, {})[ep.outcome] = ep
    return [(p["expected"], p["unexpected"]) for p in by_pair.values() if {"expected", "unexpected"} <= set(p)]


def group_problems(episodes: list[Episode], unit: UnitInfo) -> list[Problem]:
    """Rules of a group built with options: twins, the difficulty bin, recorded excess costs and their bound.

    - Twins: a pair's ``twin_id`` names a pair of the group whose ``twin_id`` names it back, whose
      test trials are the same two trials with the labels swapped.
    - The pair's recorded ``difficulty`` is what :attr:`TaskSpec.difficulty` measures and lies in
      the group's bin.
    - Every trial records its ``excess_cost`` (to 4 decimals). (The Boltzmann agent's bound,
      ``max_excess``, holds for its paths in the layouts it walked them in; the walker enforces it,
      since a path replayed elsewhere, as in efficiency-irrational, may cost more there.)
    """
    from bib.tasks.difficulty import excess_cost

    spec = get_task(unit.task)
    opts = unit.options
    out: list[Problem] = []
    pairs = {e.pair_id: (e, u) for e, u in pairs_of(episodes)}
    for pid, (e, u) in pairs.items():
        if e.twin_id is not None:
            twin = pairs.get(e.twin_id)
            if twin is None or twin[0].twin_id != pid:
                out.append(Problem(e.id, f"twin {e.twin_id!r} is not in the group or does not name {pid!r} back"))
            elif (twin[0].test, twin[1].test) != (u.test, e.test):
                out.append(Problem(e.id, f"twin {e.twin_id!r} does not show the same test trials with the labels swapped"))
        elif opts.twins:
            out.append(Problem(e.id, "the pair has no twin"))
        if spec.difficulty is not None and opts.difficulty is not None:
            d = e.difficulty
            flipped = "twin" in e.variant.split("+") and e.twin_id in pairs
            want = pairs[e.twin_id][0].difficulty if flipped else spec.difficulty(e, u)  # type: ignore[index]
            if d is None or want is None or u.difficulty != d or abs(d - want) > 1e-3:
                out.append(Problem(e.id, f"recorded difficulty {d!r} is not the pair's"))
            elif not in_bin(d, opts.bin(unit.design)):
                out.append(Problem(e.id, f"difficulty {d} is outside the group's bin {opts.bin(unit.design)}"))
    for ep in episodes:
        for i, t in enumerate(ep.trials):
            actual = excess_cost(t)
            if t.excess_cost is None or abs(t.excess_cost - actual) > 1e-3:
                out.append(Problem(ep.id, f"recorded excess cost {t.excess_cost!r} is not the path's {actual:.4f}", i))
    return out


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
