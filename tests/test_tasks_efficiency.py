"""Efficiency conditions: generation, condition and pair rules, JSON round trip, rendering, determinism."""

from __future__ import annotations

from dataclasses import replace
from itertools import islice

import pytest

from bib.episode import dumps, loads, save_episode
from bib.render.frames import RenderSettings, episode_frames
from bib.stimuli.check import check_path
from bib.tasks import make_unit, task_ids, validate_episode, validate_pair
from bib.tasks.common import make_trial
from bib.tasks.efficiency import inner_walls
from bib.world.grid import border_walls
from bib.world.planning import is_shortest, path_cost, shortest_cost, shortest_path

CONDITIONS = task_ids("evaluation", family="efficiency")
SEEDS = [0, 1, 2]


def with_test(ep, trial):
    return replace(ep, trials=(*ep.trials[:-1], trial))


@pytest.fixture(scope="module")
def pairs():
    return {(c, s): make_unit(c, s, 7) for c in CONDITIONS for s in SEEDS}


@pytest.mark.parametrize("condition", CONDITIONS)
def test_generates_valid_pairs_that_round_trip_and_render(pairs, condition):
    for s in SEEDS:
        e, u = pairs[condition, s]
        assert (e.outcome, u.outcome) == ("expected", "unexpected")
        assert e.pair_id == u.pair_id == f"{condition}-{s:06d}"
        assert len(e.familiarization) == len(u.familiarization) == 8 and len(e.trials) == 9
        for ep in (e, u):
            assert validate_episode(ep) == []
            assert loads(dumps(ep)) == ep
        assert validate_pair(e, u) == []
    frames = list(islice(episode_frames(pairs[condition, 0][1], RenderSettings(cell_px=8)), 5))
    assert len(frames) == 5 and frames[0].shape == (80, 80, 3)


def test_layouts_vary_between_pairs_and_trials(pairs):
    barriers = {inner_walls(pairs["efficiency-path", s][0].trials[0].layout) for s in SEEDS}
    assert len(barriers) == len(SEEDS)
    e = pairs["efficiency-path", 0][0]
    assert len({(t.agent.home, t.layout.object("A").cell) for t in e.familiarization}) > 1


def test_rational_familiarization_is_shortest_around_a_fixed_barrier_and_curved(pairs):
    for c in CONDITIONS:
        fam = pairs[c, 0][1].familiarization
        barrier = inner_walls(fam[0].layout)
        assert barrier
        for t in fam:
            assert inner_walls(t.layout) == barrier
            assert is_shortest(t.layout, t.path)
            start, goal = t.path[0], t.path[-1]
            open_cost = shortest_cost(replace(t.layout, walls=border_walls(10, 10)), start, goal)
            assert path_cost(t.path) >= open_cost + 0.5


def test_efficiency_path_outcomes(pairs):
    for s in SEEDS:
        e, u = pairs["efficiency-path", s]
        assert e.test.layout == u.test.layout and not inner_walls(e.test.layout)
        assert is_shortest(e.test.layout, e.test.path)
        assert not is_shortest(u.test.layout, u.test.path)
        assert u.test.path in [t.path for t in u.familiarization]


def test_efficiency_time_outcomes(pairs):
    for s in SEEDS:
        e, u = pairs["efficiency-time", s]
        home = e.test.agent.home
        assert u.test.agent.home == home
        assert u.test.n_steps == e.test.n_steps
        assert path_cost(u.test.path) == pytest.approx(path_cost(e.test.path))
        assert is_shortest(e.test.layout, e.test.path) and not is_shortest(u.test.layout, u.test.path)
        near = shortest_cost(u.test.layout, home, u.test.layout.object("A").cell)
        far = shortest_cost(e.test.layout, home, e.test.layout.object("A").cell)
        assert near < far
        assert any(t.path[: len(u.test.path)] == u.test.path for t in u.familiarization)


def test_efficiency_irrational_outcomes(pairs):
    for s in SEEDS:
        e, u = pairs["efficiency-irrational", s]
        assert e.test == u.test
        assert not is_shortest(e.test.layout, e.test.path)
        for te, tu in zip(e.familiarization, u.familiarization):
            assert te.path == tu.path
            assert not inner_walls(te.layout) and inner_walls(tu.layout)
            assert not is_shortest(te.layout, te.path) and is_shortest(tu.layout, tu.path)


def test_rules_reject_hand_broken_episodes(pairs):
    e, u = pairs["efficiency-path", 0]
    straight = make_trial(u.test.layout, e.test.path, "A", "test")
    [p] = validate_episode(with_test(u, straight))
    assert p.trial == 8 and "shortest" in p.message
    curved = make_trial(e.test.layout, u.test.path, "A", "test")
    assert validate_episode(with_test(e, curved))[0].trial == 8
    # a rational familiarization trial without its barrier
    t3 = e.trials[3]
    opened = replace(t3, layout=replace(t3.layout, walls=border_walls(10, 10)))
    probs = validate_episode(replace(e, trials=(*e.trials[:3], opened, *e.trials[4:])))
    assert probs[0].trial == 3 and "barrier" in probs[0].message

    e, u = pairs["efficiency-time", 0]
    short = shortest_path(u.test.layout, u.test.agent.home, u.test.layout.object("A").cell)
    assert validate_episode(with_test(u, make_trial(u.test.layout, short, "A", "test")))[0].trial == 8
    [p] = validate_pair(e, with_test(u, make_trial(u.test.layout, u.test.path[:-1], None, "test")))
    assert p.trial == 8 and "steps" in p.message

    e, u = pairs["efficiency-irrational", 0]
    other = pairs["efficiency-irrational", 1][0].test
    [p] = validate_pair(e, with_test(u, other))
    assert p.trial == 8 and "test trial" in p.message
    probs = validate_episode(replace(e, trials=u.trials))  # rational familiarization labelled expected
    assert probs[0].trial == 0 and "barrier" in probs[0].message


def test_pair_rule_needs_shared_familiarization(pairs):
    e, u = pairs["efficiency-path", 0]
    swapped = replace(u, trials=(u.trials[1], u.trials[0], *u.trials[2:]))
    [p] = validate_pair(e, swapped)
    assert p.trial == 0 and "familiarization" in p.message


def test_bib_validate_checks_conditions_and_pairs(pairs, tmp_path):
    e, u = pairs["efficiency-time", 1]
    save_episode(e, tmp_path / f"{e.id}.json")
    save_episode(u, tmp_path / f"{u.id}.json")
    assert check_path(tmp_path).n_invalid == 0
    other = pairs["efficiency-time", 2][0]
    save_episode(replace(u, trials=(*other.familiarization, u.test)), tmp_path / f"{u.id}.json")
    report = check_path(tmp_path)
    assert report.n_invalid == 1 and "trial" in report.problems[0]


def test_deterministic():
    a = make_unit("efficiency-time", 3, 11)
    b = make_unit("efficiency-time", 3, 11)
    assert [dumps(x) for x in a] == [dumps(x) for x in b]
    assert dumps(make_unit("efficiency-time", 4, 11)[0]) != dumps(a[0])
