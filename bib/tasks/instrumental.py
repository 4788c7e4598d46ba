"""Instrumental family: `instrumental-no-barrier`, `-inconsequential`, `-blocking` (BIB §2).

Familiarization (shared by expected and unexpected): the agent (fixed home) sees one object
enclosed by a green barrier ring (border walls may close one or two sides) with a lock in the
ring; it fetches the key, opens the lock from a cell next to it and goes to the object, along
an optimal path of the (cell, has_key, unlocked) space. Without unlocking the object is
unreachable. Enclosure, object and key are drawn anew in every trial.

Test (a fresh layout of the same kind):
- ``instrumental-no-barrier``: barrier and lock removed; expected -> object, unexpected -> key.
- ``instrumental-inconsequential``: one side of the ring (not the lock's) removed, so the
  barrier no longer blocks; expected -> object, unexpected -> key.
- ``instrumental-blocking``: expected: the ring blocks and the agent goes to the key;
  unexpected: the same ring with one side removed (not blocking), the agent goes to the key.

The test key is placed so that a closest-target cue ("the agent that walks to a target farther
than the nearest one is the unexpected one", :mod:`bib.stimuli.stats`) is at chance: in
no-barrier and inconsequential the key is strictly nearer home than the object in even-numbered
units and strictly farther in odd ones (which is visible in the layout, so the index tells an
observer nothing it cannot see); in blocking the expected agent walks to the only reachable
target, so the key is never farther than the object once the ring is open.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bib.episode import Episode, Problem, Trial
from bib.tasks.agents import InstrumentalAgent, RationalAgent, rollout
from bib.tasks.common import (
    GRID,
    N_FAMILIARIZATION,
    WALK_TRIES,
    PairDraft,
    Walker,
    empty_layout,
    finish_group,
    interior,
    make_episode,
    make_trial,
    place,
    sample_agent,
    sample_cells,
    sample_looks,
    twin_of,
)
from bib.tasks.difficulty import key_detour
from bib.tasks.options import Controls, in_bin
from bib.tasks.registry import LayoutRejected, TaskSpec, UnitInfo, register
from bib.world.dynamics import AgentState, adjacent_to_lock
from bib.world.grid import Agent, Cell, Layout
from bib.world.keylock import is_optimal_path, optimal_cost
from bib.world.planning import TOL, distance_field, reachable

SIDES = ("top", "bottom", "left", "right")
_INTERIOR = frozenset(interior())


@dataclass(frozen=True)
class Enclosure:
    """A rectangle ``inside`` ringed by barrier cells, with a lock in the ring.

    Attributes:
        inside: the enclosed cells.
        ring: barrier cells around them (border walls excluded), the lock not included.
        lock: the lock cell, sharing an edge with an inside cell.
        sides: ring cells by side (``top``/``bottom``/``left``/``right``; corners in both).
    """

    inside: frozenset[Cell]
    ring: frozenset[Cell]
    lock: Cell
    sides: dict[str, frozenset[Cell]]

    def opened(self, rng: np.random.Generator) -> frozenset[Cell]:
        """The ring with one side (not the lock's, not empty) removed."""
        options = [s for s in SIDES if self.sides[s] and self.lock not in self.sides[s]]
        if not options:
            raise LayoutRejected("the enclosure has no side that can be opened")
        side = options[int(rng.integers(len(options)))]
        return self.ring - self.sides[side]

    def side_moved(self, rng: np.random.Generator, keep_free: frozenset[Cell]) -> frozenset[Cell]:
        """The ring with one side (not the lock's) moved one cell outwards: as many barrier cells as the
        closed ring, with a one-cell corridor into the enclosure. The moved cells stay interior and off
        ``keep_free``."""
        step = {"top": (0, -1), "bottom": (0, 1), "left": (-1, 0), "right": (1, 0)}
        options = []
        for s in SIDES:
            if not self.sides[s] or self.lock in self.sides[s]:
                continue
            dx, dy = step[s]
            moved = frozenset((x + dx, y + dy) for x, y in self.sides[s])
            if moved <= _INTERIOR and not moved & (self.ring | self.inside | keep_free | {self.lock}):
                options.append((self.ring - self.sides[s]) | moved)
        if not options:
            raise LayoutRejected("no side of the enclosure can move outwards")
        return options[int(rng.integers(len(options)))]


def sample_enclosure(rng: np.random.Generator, sizes: tuple[int, ...] = (1, 2), around: Cell | None = None) -> Enclosure:
    """A random rectangle of width and height from ``sizes`` (containing ``around`` if given), its ring and lock.

    Ring cells on the border are dropped (the border walls close those sides). The lock is a
    ring cell sharing an edge with an inside cell and with an interior cell outside the ring.
    """
    w, h = (int(sizes[int(rng.integers(len(sizes)))]) for _ in range(2))
    if around is None:
        x0, y0 = int(rng.integers(1, GRID - w)), int(rng.integers(1, GRID - h))
    else:
        x0 = int(rng.integers(max(1, around[0] - w + 1), min(around[0], GRID - 1 - w) + 1))
        y0 = int(rng.integers(max(1, around[1] - h + 1), min(around[1], GRID - 1 - h) + 1))
    inside = frozenset((x, y) for x in range(x0, x0 + w) for y in range(y0, y0 + h))
    free = _INTERIOR
    x1, y1 = x0 + w - 1, y0 + h - 1
    sides = {
        "top": frozenset((x, y0 - 1) for x in range(x0 - 1, x1 + 2)),
        "bottom": frozenset((x, y1 + 1) for x in range(x0 - 1, x1 + 2)),
        "left": frozenset((x0 - 1, y) for y in range(y0 - 1, y1 + 2)),
        "right": frozenset((x1 + 1, y) for y in range(y0 - 1, y1 + 2)),
    }
    sides = {k: v & free for k, v in sides.items()}
    ring = frozenset().union(*sides.values())
    outside = free - ring - inside

    def edge(c: Cell) -> list[Cell]:
        return [(c[0] + 1, c[1]), (c[0] - 1, c[1]), (c[0], c[1] + 1), (c[0], c[1] - 1)]

    locks = sorted(c for c in ring if any(n in inside for n in edge(c)) and any(n in outside for n in edge(c)))
    if not locks:
        raise LayoutRejected("no cell of the ring can hold the lock")
    lock = locks[int(rng.integers(len(locks)))]
    return Enclosure(inside, ring - {lock}, lock, {k: v - {lock} for k, v in sides.items()})


def _key_cells(layout: Layout, enc: Enclosure) -> list[Cell]:
    """Where the key may lie: outside the ring, reachable from home while locked, not on home, not next to the lock."""
    home = layout.agent.home
    lock_side = {(enc.lock[0] + dx, enc.lock[1] + dy) for dx, dy in ((0, 1), (0, -1), (1, 0), (-1, 0))}
    return [c for c in sorted(reachable(layout, home) - {home}) if c not in lock_side]


def _enclosed_object_layout(rng: np.random.Generator, agent: Agent, look) -> tuple[Layout, Enclosure]:
    """The object locked in an enclosure, the key outside, the agent at home outside."""
    for _ in range(30):
        enc = sample_enclosure(rng)
        if agent.home in enc.inside | enc.ring | {enc.lock}:
            continue
        obj = sample_cells(rng, sorted(enc.inside), 1)[0]
        base = empty_layout(barriers=enc.ring, lock=enc.lock, objects=(place(look, "A", obj),), agents=(agent,))
        candidates = _key_cells(base, enc)
        if obj in reachable(base, agent.home) or not candidates:
            continue
        lay = replace(base, key=candidates[int(rng.integers(len(candidates)))])
        if np.isfinite(optimal_cost(lay, obj)):
            return lay, enc
    raise LayoutRejected("no enclosure leaves the object locked in and the key reachable")


def _familiarization(rng: np.random.Generator, agent: Agent, look) -> list[Trial]:
    trials = []
    for _ in range(N_FAMILIARIZATION):
        lay, _ = _enclosed_object_layout(rng, agent, look)
        trials.append(make_trial(lay, rollout(InstrumentalAgent("A", rng), lay)[0], "A"))
    return trials


def _test_trial(rng: np.random.Generator, layout: Layout, goal: str, blocks: bool) -> Trial:
    """The agent goes to ``goal`` (object id or ``"key"``) by a shortest route, not touching the
    key on the way to the object; ``blocks`` says whether the barrier must block the object."""
    if (layout.object("A").cell not in reachable(layout, layout.agent.home)) != blocks:
        raise LayoutRejected("the test barrier " + ("does not block" if blocks else "blocks") + " the object")
    path, events = rollout(RationalAgent([goal], rng), layout)
    if goal != "key" and events:
        raise LayoutRejected("the path to the object crosses the key")
    return make_trial(layout, path, goal, "test")


TEST_TRIES = 30
"""Test layouts drawn per unit (keeping its familiarization and its nearer-target stratum) before the
whole unit is rejected."""


def key_nearer(layout: Layout, key: Cell | None = None) -> bool | None:
    """Whether the key (at ``key``, default the layout's) is nearer home than object ``A``.

    Distances are shortest-path costs from the agent's home with the layout's barriers closed,
    as the closest-target cue of :mod:`bib.stimuli.stats` measures them. True when the key is
    strictly nearer, False when strictly farther, None on a tie (or when neither is reachable).
    """
    dist = distance_field(layout, layout.agent.home)
    k, o = key if key is not None else layout.key, layout.object("A").cell
    dk, do = dist[k[1], k[0]], dist[o[1], o[0]]  # type: ignore[index]
    if (np.isinf(dk) and np.isinf(do)) or abs(dk - do) < TOL:  # neither reachable first: inf - inf is nan (a warning)
        return None
    return bool(dk < do)


def key_is_detour(layout: Layout, key: Cell) -> bool:
    """True when a key at ``key`` lies on no optimal route from home to object ``A``.

    The route is the key/lock planner's: walking to the key (shortest path, barriers closed) and
    going on from there holding it costs more than walking to the object, so an agent that walks
    to the key is not on its way to the object (by foot or through the lock). Without the key the
    planner can only walk, or fetch the key, so those are the two plans to compare; the cost of
    going on while holding the key does not depend on where the key lay.
    """
    lay = layout if layout.key is not None else replace(layout, key=key)
    obj = lay.object("A").cell
    from_home = distance_field(lay, lay.agent.home)
    onwards = optimal_cost(lay, obj, AgentState(key, True, adjacent_to_lock(lay, key)))
    return bool(from_home[key[1], key[0]] + onwards > from_home[obj[1], obj[0]] + TOL)


def _shown(rng: np.random.Generator, condition: str, lay: Layout, enc: Enclosure) -> Layout:
    """The layout with the barrier as the test shows it to the closest-target cue: no barrier
    (no-barrier) or one side open (inconsequential, and blocking's unexpected outcome)."""
    if condition == "instrumental-no-barrier":
        return replace(lay, barriers=frozenset(), lock=None)
    return replace(lay, barriers=enc.opened(rng))


def _test_trials(rng: np.random.Generator, condition: str, agent: Agent, look, want_key_nearer: bool) -> list[Trial]:
    """The expected and unexpected test trials, with the key placed so that which target is nearer
    home (in the layout with the barrier open) is what the unit's stratum asks.

    In no-barrier and inconsequential, the key is strictly nearer than the object when
    ``want_key_nearer`` and strictly farther otherwise, so "the agent goes to the nearer target"
    is right on half the pairs. In blocking the expected agent goes to the only reachable target
    (the key), so that cue could only ever call the unexpected outcome correctly, when the opened
    ring lets the object be nearer; there the key is never farther than the object. In all three
    the key is a detour (:func:`key_is_detour`) in the layout where it is not needed, so walking
    to it is never also the best way to the object.
    """
    for _ in range(TEST_TRIES):
        try:
            closed, enc = _enclosed_object_layout(rng, agent, look)
            shown = _shown(rng, condition, closed, enc)
            want = (True, None) if condition == "instrumental-blocking" else (want_key_nearer,)
            fits = [c for c in _key_cells(closed, enc) if key_nearer(shown, c) in want]
            key = None
            while fits and key is None:  # uniform over the fitting cells where the key is a detour
                c = fits.pop(int(rng.integers(len(fits))))
                key = c if key_is_detour(shown, c) else None
            if key is None:
                continue
            closed, shown = replace(closed, key=key), replace(shown, key=key)
            if not np.isfinite(optimal_cost(closed, closed.object("A").cell)):
                continue
            if condition == "instrumental-blocking":
                return [_test_trial(rng, closed, "key", True), _test_trial(rng, shown, "key", False)]
            return [_test_trial(rng, shown, "A", False), _test_trial(rng, shown, "key", False)]
        except LayoutRejected:
            continue
    raise LayoutRejected(f"no test layout in {TEST_TRIES} draws")


def _walk_avoiding_key(walker: Walker, layout: Layout, goal: str) -> list[Cell]:
    """A path to ``goal`` that never steps on the key (redrawn a few times for a noisy agent)."""
    for _ in range(5 if walker.beta is not None else 1):
        path = walker.walk(layout, goal)
        if layout.key not in path:
            return path
    raise LayoutRejected("the path to the object crosses the key")


VIA_KEY = "via-key"
"""The instrumental variant whose unexpected agent fetches the key it does not need and goes on to the object."""


def _walk_via_key(walker: Walker, layout: Layout) -> list[Cell]:
    """A path to the key and from there on to object ``A``, each leg the unit's agent's own walk (the second
    one holding the key, so it may open the lock on its way): the unexpected outcome of ``via-key`` and the
    walk of its twin's key-collecting familiarization."""
    from bib.world.keylock import boltzmann_path
    from bib.world.planning import path_cost

    to_key = walker.walk(layout, "key")
    obj = layout.object("A").cell
    if obj in to_key:
        raise LayoutRejected("the walk to the key passes the object")
    held = AgentState(layout.key, True, adjacent_to_lock(layout, layout.key))  # type: ignore[arg-type]
    best = optimal_cost(layout, obj, held)
    beta = 1e3 if walker.beta is None else walker.beta  # the noise-free agent: an optimal path, ties at random
    for _ in range(WALK_TRIES):
        onwards = boltzmann_path(layout, obj, beta, walker.rng, start=held)
        if onwards[-1] == obj and path_cost(onwards) - best <= walker.model.max_excess + 1e-9:
            return [*to_key, *onwards[1:]]
    raise LayoutRejected("no walk on from the key to the object within the excess bound")


def _controlled_tests(rng: np.random.Generator, condition: str, unit: UnitInfo, walker: Walker, agent: Agent,
                      look) -> tuple[Trial, Trial]:
    """The expected and unexpected test trials of the controlled set.

    As :func:`_test_trials`, with the unit's stimulus agent and the key placed so that its detour
    (:func:`bib.tasks.difficulty.key_detour` in the unexpected layout) falls in the group's
    difficulty bin. Without twins the nearer-target stratum still applies (with twins the pair and its
    twin balance any test-only cue exactly). Blocking's ``moved-side`` variant moves the opened
    side one cell outwards instead of removing it, so both outcomes show as many barrier cells.
    """
    opts = unit.options
    bin_ = opts.bin(unit.design)
    variant = opts.variant(unit.design)
    want_key_nearer = not opts.flipped(unit.design)  # half the slots of every (variant, bin)
    blocking = condition == "instrumental-blocking"
    for _ in range(TEST_TRIES):
        try:
            closed, enc = _enclosed_object_layout(rng, agent, look)
            if blocking and variant == "moved-side":
                shown = replace(closed, barriers=enc.side_moved(rng, frozenset({agent.home, closed.object("A").cell})))
            else:
                shown = _shown(rng, condition, closed, enc)
            want = (True, None) if blocking else (want_key_nearer,) if not opts.twins else (True, False, None)
            fits = [c for c in _key_cells(closed, enc) if c not in shown.barriers and key_nearer(shown, c) in want]
            key = None
            while fits and key is None:
                c = fits.pop(int(rng.integers(len(fits))))
                detour = key_detour(Trial("test", replace(shown, key=c), (shown.agent.home,)))
                key = c if detour > TOL and in_bin(detour, bin_) else None
            if key is None:
                continue
            closed, shown = replace(closed, key=key), replace(shown, key=key)
            if not np.isfinite(optimal_cost(closed, closed.object("A").cell)) or _blocks_layout(shown):
                continue
            if blocking:
                return (make_trial(closed, walker.walk(closed, "key"), "key", "test"),
                        make_trial(shown, walker.walk(shown, "key"), "key", "test"))
            if variant == VIA_KEY:
                return (make_trial(shown, _walk_avoiding_key(walker, shown, "A"), "A", "test"),
                        make_trial(shown, _walk_via_key(walker, shown), "A", "test"))
            return (make_trial(shown, _walk_avoiding_key(walker, shown, "A"), "A", "test"),
                    make_trial(shown, walker.walk(shown, "key"), "key", "test"))
        except LayoutRejected:
            continue
    raise LayoutRejected(f"no test layout in {TEST_TRIES} draws")


def _blocks_layout(layout: Layout) -> bool:
    return layout.object("A").cell not in reachable(layout, layout.agent.home)


def _controlled(condition: str, rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
    """A group of the controlled set: the pair and, with twins (not in blocking), its twin, whose
    familiarization shows the same layouts with the agent walking to the key and stopping there (the
    key is the goal), so going to the key is expected and going to the object is not."""
    opts = unit.options
    walker = Walker(opts, rng)
    home = sample_cells(rng, interior(), 1)[0]
    agent = sample_agent(rng, "agent-0", home)
    look = sample_looks(rng, 1)[0]
    drawn = [_enclosed_object_layout(rng, agent, look) for _ in range(N_FAMILIARIZATION)]
    layouts = [lay for lay, _ in drawn]
    fam = [make_trial(lay, walker.walk(lay, "A"), "A") for lay in layouts]
    test_e, test_u = _controlled_tests(rng, condition, unit, walker, agent, look)
    variant = opts.variant(unit.design)
    draft = PairDraft(fam, test_e, fam, test_u, variant)
    drafts = [draft]
    if opts.twins and variant == VIA_KEY:
        drafts = [replace(draft, twin=1), twin_of(draft, _collecting_familiarization(rng, walker, drawn), 0)]
    elif opts.twins:
        twin_fam = [make_trial(lay, walker.walk(lay, "key"), "key") for lay in layouts]
        drafts = [replace(draft, twin=1), twin_of(draft, twin_fam, 0)]
    return finish_group(unit, drafts, walker.beta)


def _collecting_familiarization(rng: np.random.Generator, walker: Walker,
                                drawn: list[tuple[Layout, Enclosure]]) -> list[Trial]:
    """The twin familiarization of a ``via-key`` pair: the familiarization's layouts with one side of each ring
    open (the object reachable, the key not needed), and the agent fetching the key anyway, then going on to
    the object: an agent that collects the key, after which fetching it in the test is the expected outcome."""
    trials = []
    for lay, enc in drawn:
        opened = next((o for o in (replace(lay, barriers=enc.opened(rng)) for _ in range(4)) if not _blocks_layout(o)),
                      None)
        if opened is None:
            raise LayoutRejected("an opened familiarization ring leaves the object locked in")
        trials.append(make_trial(opened, _walk_via_key(walker, opened), "A"))
    return trials


def _generator(condition: str):
    """The generator of one instrumental condition."""

    def make(rng: np.random.Generator, unit: UnitInfo) -> list[Episode]:
        if not unit.options.legacy:
            return _controlled(condition, rng, unit)
        home = sample_cells(rng, interior(), 1)[0]
        agent = sample_agent(rng, "agent-0", home)
        look = sample_looks(rng, 1)[0]
        want_key_nearer = unit.index % 2 == 0  # stratified: any run of units is balanced to within one
        fam = _familiarization(rng, agent, look)
        tests = _test_trials(rng, condition, agent, look, want_key_nearer)
        return [make_episode(unit, [*fam, t], outcome=o, paired=True) for t, o in zip(tests, ("expected", "unexpected"))]

    return make


# ---------------------------------------------------------------- rules


def _blocks(trial: Trial) -> bool:
    """True when the object cannot be reached from home without unlocking."""
    lay = trial.layout
    return lay.object("A").cell not in reachable(lay, lay.agent.home)


def check_key_needed(ep: Episode, trial_index: int) -> list[Problem]:
    """A trial that needs the key: barrier, lock and key present; goal A unreachable while locked;
    the agent picks up the key, then unlocks, along an optimal key/lock-space path."""
    t = ep.trials[trial_index]
    lay = t.layout

    def problem(msg: str) -> list[Problem]:
        return [Problem(ep.id, msg, trial_index)]

    if not lay.barriers or lay.lock is None or lay.key is None:
        return problem("trial needs a barrier, a lock and a key")
    if t.goal != "A":
        return problem(f"goal is {t.goal!r}, expected 'A'")
    if lay.object("A").cell in reachable(lay, lay.agent.home):
        return problem("the object is reachable without the key")
    if [e.type for e in t.events] != ["pickup-key", "unlock"]:
        return problem(f"events are {[e.type for e in t.events]}, expected pickup-key then unlock")
    if ep.beta is None and not is_optimal_path(lay, t.path):
        return problem("path is not optimal in the key/lock state space")
    return []


def check_key_goal(ep: Episode, trial_index: int) -> list[Problem]:
    """A twin's familiarization trial: the object locked in, and the agent walks to the key and stops there."""
    t = ep.trials[trial_index]
    lay = t.layout
    if not lay.barriers or lay.lock is None or lay.key is None or not _blocks_layout(lay):
        return [Problem(ep.id, "trial needs the object locked in and a key", trial_index)]
    if [(e.step, e.type) for e in t.events] != [(t.n_steps, "pickup-key")]:
        return [Problem(ep.id, "the agent must walk to the key and stop when it picks it up", trial_index)]
    return []


def check_key_collected(ep: Episode, trial_index: int) -> list[Problem]:
    """A ``via-key`` twin's familiarization trial: the ring open (the object reachable), and the agent picks
    up the key it does not need (passing the lock with it may open it) and ends on object A."""
    t = ep.trials[trial_index]
    lay = t.layout
    if not lay.barriers or lay.lock is None or lay.key is None or _blocks_layout(lay):
        return [Problem(ep.id, "trial needs a ring that does not block the object, a lock and a key", trial_index)]
    if t.goal != "A" or tuple(t.path[-1]) != lay.object("A").cell:
        return [Problem(ep.id, f"goal is {t.goal!r}, expected the agent to end on 'A'", trial_index)]
    if [e.type for e in t.events][:1] != ["pickup-key"]:
        return [Problem(ep.id, "the agent must pick up the key on its way to A", trial_index)]
    return []


def _collects_key(ep: Episode) -> bool:
    """Whether the episode's familiarization is a ``via-key`` twin's (the key fetched while the object is reachable)."""
    return bool(ep.familiarization) and not _blocks_layout(ep.familiarization[0].layout)


def _check_test(ep: Episode, goal: str, barrier: bool, blocks: bool, via_key: bool | None = None) -> list[Problem]:
    """The test shows (or not) a barrier with its lock and a key, blocks the object (or not), and
    the agent goes to ``goal`` by a shortest path without unlocking."""
    i, t = len(ep.trials) - 1, ep.test
    lay = t.layout
    if lay.key is None or "A" not in {o.id for o in lay.objects}:
        return [Problem(ep.id, "the test needs the key and object A", i)]
    if barrier != bool(lay.barriers) or barrier != (lay.lock is not None):
        return [Problem(ep.id, "the test should " + ("" if barrier else "not ") + "show a barrier with a lock", i)]
    if _blocks(t) != blocks:
        return [Problem(ep.id, "the barrier should " + ("" if blocks else "not ") + "block the object", i)]
    if t.goal != goal:
        return [Problem(ep.id, f"test goal is {t.goal!r}, expected {goal!r}", i)]
    if t.unlock_step() is not None and not via_key:
        return [Problem(ep.id, "the test agent unlocks the barrier", i)]
    if via_key is not None and (t.pickup_step() is not None) != via_key:
        return [Problem(ep.id, "the test agent should " + ("" if via_key else "not ") + "fetch the key on its way to A", i)]
    if ep.beta is None and not is_optimal_path(lay, t.path):
        return [Problem(ep.id, "test path is not a shortest path", i)]
    return []


def _rule(condition: str):
    """The rule of one instrumental condition."""

    def rule(ep: Episode) -> list[Problem]:
        expected = ep.outcome == "expected"
        if VIA_KEY in ep.variant.split("+") and condition != "instrumental-blocking":
            collects = _collects_key(ep)  # a twin's familiarization: fetching the key is what the agent does
            check = check_key_collected if collects else check_key_needed
            out = [p for i in range(len(ep.familiarization)) for p in check(ep, i)]
            return out or _check_test(ep, "A", barrier=condition == "instrumental-inconsequential", blocks=False,
                                      via_key=expected == collects)
        key_goal = bool(ep.familiarization) and ep.familiarization[0].goal == "key"  # a twin's familiarization
        check = check_key_goal if key_goal else check_key_needed
        out = [p for i in range(len(ep.familiarization)) for p in check(ep, i)]
        if out:
            return out
        want, other = ("key", "A") if key_goal else ("A", "key")
        if condition == "instrumental-no-barrier":
            return _check_test(ep, want if expected else other, barrier=False, blocks=False)
        if condition == "instrumental-inconsequential":
            return _check_test(ep, want if expected else other, barrier=True, blocks=False)
        return _check_test(ep, "key", barrier=True, blocks=expected)

    return rule


def _pair_rule(condition: str):
    """Shared familiarization; the same test layout, except that in blocking the unexpected
    barrier is the expected one with cells removed."""

    def pair_rule(e: Episode, u: Episode) -> list[Problem]:
        i = len(u.trials) - 1
        if e.familiarization != u.familiarization:
            bad = next((k for k, (a, b) in enumerate(zip(e.familiarization, u.familiarization)) if a != b), None)
            return [Problem(u.id, "familiarization differs from the expected episode's", bad)]
        le, lu = e.test.layout, u.test.layout
        if condition != "instrumental-blocking":
            if le != lu:
                return [Problem(u.id, "test layout differs from the expected episode's", i)]
        elif "moved-side" in e.variant.split("+"):
            if replace(lu, barriers=le.barriers) != le or len(lu.barriers) != len(le.barriers) or lu.barriers == le.barriers:
                return [Problem(u.id, "unexpected test barrier is not the expected one with a side moved", i)]
        elif replace(lu, barriers=le.barriers) != le or not lu.barriers < le.barriers:
            return [Problem(u.id, "unexpected test barrier is not the expected one with a side removed", i)]
        return []

    return pair_rule


BLOCKING_EXEMPT = (
    ("efficiency", "tests the efficiency of fetching the key"),
    ("reachability", "whether the barrier blocks the object (so fetching the key is needed) is the condition's "
                     "manipulation"),
)
"""The shortcut audit lets the efficiency of fetching the key decide the blocking test (issue 12), and with it
whether the object is reachable: both outcomes fetch the key, so "the object is reachable" is exactly "fetching
the key is a detour". Blocking has no label-flipping twin (with the key as the goal both outcomes are expected)."""

for _order, (_id, _folder, _expected, _unexpected) in enumerate((
    ("instrumental-no-barrier", "instrumental_no_barrier",
     "no barrier; agent goes to the object", "no barrier; agent goes to the key"),
    ("instrumental-inconsequential", "instrumental_inconsequential_barrier",
     "barrier does not block; agent goes to the object", "barrier does not block; agent goes to the key"),
    ("instrumental-blocking", "instrumental_blocking_barrier",
     "barrier blocks; agent goes to the key", "barrier does not block; agent goes to the key"),
), start=7):
    _blocking = _id == "instrumental-blocking"
    register(TaskSpec(_id, "instrumental", "evaluation", _generator(_id), rule=_rule(_id), pair_rule=_pair_rule(_id),
                      bib_folder=_folder, expected=_expected, unexpected=_unexpected, order=10 * _order,
                      shortcut_exempt=BLOCKING_EXEMPT if _blocking else (),
                      controls=Controls(twins=not _blocking, variants=("", "moved-side") if _blocking else ("", VIA_KEY),
                                        graded=True, boltzmann=True),
                      difficulty=lambda e, u: key_detour(u.test)))
