"""Instrumental conditions: key-needing familiarization, the three tests, rules, round trip, barrier fade, determinism."""

from __future__ import annotations

from dataclasses import replace
from itertools import islice

import numpy as np
import pytest

from bib.episode import dumps, loads
from bib.render.frames import BARRIER, RenderSettings, episode_frames, trial_frames
from bib.stimuli.stats import closest_object_credit
from bib.tasks import make_unit, task_ids, validate_episode, validate_pair
from bib.tasks.common import make_trial
from bib.tasks.instrumental import sample_enclosure
from bib.world.dynamics import AgentState
from bib.world.keylock import optimal_cost
from bib.world.planning import is_shortest, reachable, shortest_cost, shortest_path

CONDITIONS = task_ids("evaluation", family="instrumental")
SEEDS = [0, 1, 2]


def with_test(ep, trial):
    return replace(ep, trials=(*ep.trials[:-1], trial))


def blocks(trial) -> bool:
    lay = trial.layout
    return lay.object("A").cell not in reachable(lay, lay.agent.home)


@pytest.fixture(scope="module")
def pairs():
    return {(c, s): make_unit(c, s, 3) for c in CONDITIONS for s in SEEDS}


@pytest.mark.parametrize("condition", CONDITIONS)
def test_generates_valid_pairs_that_round_trip_and_render(pairs, condition):
    for s in SEEDS:
        e, u = pairs[condition, s]
        assert e.pair_id == u.pair_id and len(e.trials) == len(u.trials) == 9
        assert e.familiarization == u.familiarization
        for ep in (e, u):
            assert validate_episode(ep) == []
            assert loads(dumps(ep)) == ep
        assert validate_pair(e, u) == []
    frames = list(islice(episode_frames(pairs[condition, 0][0], RenderSettings(cell_px=8)), 4))
    assert len(frames) == 4 and frames[-1].shape == (80, 80, 3)


def test_familiarization_really_needs_the_key(pairs):
    for (c, s), (e, _) in pairs.items():
        for t in e.familiarization:
            lay = t.layout
            assert lay.barriers and lay.lock is not None and lay.key is not None
            assert blocks(t)  # without unlocking the object is out of reach
            assert [ev.type for ev in t.events] == ["pickup-key", "unlock"]
            assert t.path[t.pickup_step()] == lay.key and t.path[-1] == lay.object("A").cell
        # enclosures and keys are drawn anew each trial
        assert len({(t.layout.lock, t.layout.key) for t in e.familiarization}) > 1


def test_test_outcomes(pairs):
    for s in SEEDS:
        e, u = pairs["instrumental-no-barrier", s]
        assert not e.test.layout.barriers and e.test.layout.lock is None
        assert (e.test.goal, u.test.goal) == ("A", "key")
        assert e.test.events == () and is_shortest(e.test.layout, e.test.path)

        e, u = pairs["instrumental-inconsequential", s]
        assert e.test.layout == u.test.layout and e.test.layout.barriers and not blocks(e.test)
        assert (e.test.goal, u.test.goal) == ("A", "key")
        assert e.test.events == () and is_shortest(e.test.layout, e.test.path)
        assert u.test.path[-1] == u.test.layout.key and is_shortest(u.test.layout, u.test.path)

        e, u = pairs["instrumental-blocking", s]
        assert blocks(e.test) and not blocks(u.test)
        assert u.test.layout.barriers < e.test.layout.barriers and u.test.layout.lock == e.test.layout.lock
        assert (e.test.goal, u.test.goal) == ("key", "key")
        for t in (e.test, u.test):
            assert t.path[-1] == t.layout.key and t.unlock_step() is None and is_shortest(t.layout, t.path)


def test_barrier_fades_after_unlock(pairs):
    trial = pairs["instrumental-blocking", 0][0].trials[2]
    s = RenderSettings(cell_px=10, pause_start=0, pause_end=0)
    frames = list(trial_frames(trial, s))
    cell = sorted(trial.layout.barriers - {trial.path[-1]})[0]
    px = frames[0][cell[1] * 10 + 5, cell[0] * 10 + 5]
    assert tuple(px) == BARRIER
    assert tuple(frames[-1][cell[1] * 10 + 5, cell[0] * 10 + 5]) == (255, 255, 255)
    greens = [int(f[cell[1] * 10 + 5, cell[0] * 10 + 5][0]) for f in frames]
    middle = [g for g in greens if BARRIER[0] < g < 255]
    assert middle and middle == sorted(middle)  # a gradual fade towards the background


def test_rules_reject_hand_broken_episodes(pairs):
    e, u = pairs["instrumental-no-barrier", 0]
    t = e.trials[4]
    opened = replace(t, layout=replace(t.layout, barriers=frozenset(), lock=None))
    path = shortest_path(opened.layout, t.agent.home, t.layout.object("A").cell)
    broken = replace(e, trials=(*e.trials[:4], make_trial(opened.layout, path, "A"), *e.trials[5:]))
    probs = validate_episode(broken)
    assert probs[0].trial == 4 and "barrier" in probs[0].message
    [p] = validate_episode(with_test(e, u.test))
    assert p.trial == 8 and "'key'" in p.message

    e, u = pairs["instrumental-inconsequential", 0]
    [p] = validate_episode(replace(e, outcome="unexpected", id=u.id))
    assert p.trial == 8

    e, u = pairs["instrumental-blocking", 0]
    [p] = validate_episode(with_test(u, e.test))
    assert p.trial == 8 and "block" in p.message
    [p] = validate_pair(e, with_test(u, replace(u.test, layout=replace(u.test.layout, key=None))))
    assert p.trial == 8
    other = pairs["instrumental-blocking", 1][0]
    [p] = validate_pair(e, replace(u, trials=(*other.familiarization, u.test)))
    assert p.trial == 0 and "familiarization" in p.message


def test_enclosure_lock_sits_between_inside_and_outside():
    rng = np.random.default_rng(0)
    for _ in range(50):
        enc = sample_enclosure(rng)
        edge = [(enc.lock[0] + dx, enc.lock[1] + dy) for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))]
        assert any(c in enc.inside for c in edge)
        assert enc.lock not in enc.ring and not enc.ring & enc.inside
        opened = enc.opened(rng)
        assert opened < enc.ring


def test_deterministic():
    a = make_unit("instrumental-blocking", 5, 2)
    b = make_unit("instrumental-blocking", 5, 2)
    assert [dumps(x) for x in a] == [dumps(x) for x in b]


def nearest_costs(trial) -> tuple[float, float]:
    """(key, object) shortest-path costs from home with the test's barriers closed (as bib stats measures)."""
    lay = trial.layout
    home = lay.agent.home
    return shortest_cost(lay, home, lay.key), shortest_cost(lay, home, lay.object("A").cell)


def closest_rule(condition: str, n: int) -> tuple[float, list[tuple[float, float]], list]:
    """Mean closest-target credit over units 0..n-1 (seed 20211206), each unexpected test's (key, object)
    costs, and the units."""
    units = [make_unit(condition, i, 20211206) for i in range(n)]
    rule = float(np.mean([closest_object_credit(e, u) for e, u in units]))
    return rule, [nearest_costs(u.test) for _, u in units], units


@pytest.mark.parametrize("condition", CONDITIONS)
def test_nearer_target_is_stratified_so_the_closest_target_rule_is_at_chance(condition):
    rule, costs, units = closest_rule(condition, 24)
    assert rule == 0.5
    for _, u in units:  # the key is a detour where it is not needed: reaching it is not on the way to A
        lay, key = u.test.layout, u.test.layout.key
        obj = lay.object("A").cell
        via_key = shortest_cost(lay, lay.agent.home, key) + optimal_cost(lay, obj, AgentState(key, True, False))
        assert via_key > optimal_cost(lay, obj) + 1e-9
    for i, (key, obj) in enumerate(costs):
        if condition == "instrumental-blocking":
            assert key <= obj + 1e-9  # the object, reachable once the ring opens, is never the nearer target
        else:
            assert (key < obj - 1e-9) if i % 2 == 0 else (key > obj + 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("condition", CONDITIONS)
def test_closest_target_rule_near_chance_on_200_pairs(condition):
    rule, _, _ = closest_rule(condition, 200)
    assert 0.4 <= rule <= 0.6


def test_key_nearer_of_a_walled_in_home_is_a_tie_without_a_warning():
    """Neither the key nor the object reachable (both distances inf): a tie (None), computed without inf - inf (a
    RuntimeWarning the audit's rebuild test met on a secret-seed set)."""
    import warnings

    from bib.tasks.common import empty_layout, place, sample_agent
    from bib.tasks.instrumental import key_nearer

    rng = np.random.default_rng(0)
    home = (1, 1)
    lay = empty_layout(objects=(place(("circle", (255, 0, 0)), "A", (8, 8)),), agents=(sample_agent(rng, "agent-0", home),))
    lay = replace(lay, walls=lay.walls | {(2, 1), (1, 2), (2, 2)}, key=(6, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert key_nearer(lay) is None
    assert key_nearer(replace(lay, walls=lay.walls - {(2, 1)})) is True  # opened: (6, 6) is nearer than (8, 8)
