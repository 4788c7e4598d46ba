"""Background tasks: no-navigation, multi-agent-background, agent-blocked-instrumental (and single-object)."""

from __future__ import annotations

from dataclasses import replace
from itertools import islice

import pytest

from bib.episode import dumps, loads
from bib.render.frames import RenderSettings, episode_frames
from bib.tasks import get_task, make_unit, task_ids, validate_episode
from bib.world.planning import is_shortest, reachable

TASKS = task_ids("background")
SEEDS = [0, 1, 2]


@pytest.fixture(scope="module")
def episodes():
    return {(t, s): make_unit(t, s, 5)[0] for t in TASKS for s in SEEDS}


@pytest.mark.parametrize("task", TASKS)
def test_generates_valid_episodes_that_round_trip_and_render(episodes, task):
    assert get_task(task).kind == "background"
    for s in SEEDS:
        ep = episodes[task, s]
        assert ep.outcome == "none" and ep.pair_id is None and ep.id == f"{task}-{s:06d}"
        assert len(ep.familiarization) == 8 and ep.test.phase == "test"
        assert validate_episode(ep) == []
        assert loads(dumps(ep)) == ep
    frames = list(islice(episode_frames(episodes[task, 0], RenderSettings(cell_px=8)), 3))
    assert len(frames) == 3


def test_no_navigation_always_takes_the_same_adjacent_object(episodes):
    for s in SEEDS:
        ep = episodes["no-navigation", s]
        looks = {(o.id, o.shape, o.color) for t in ep.trials for o in t.layout.objects}
        assert len(looks) == 2  # the same two objects throughout
        for t in ep.trials:
            home = t.agent.home
            assert all(max(abs(o.cell[0] - home[0]), abs(o.cell[1] - home[1])) == 1 for o in t.layout.objects)
            assert t.goal == "A" and t.n_steps == 1 and t.path[-1] == t.layout.object("A").cell
        assert len({t.agent.home for t in ep.trials}) > 1


def test_multi_agent_background_switches_agent_once_through_the_test(episodes):
    switches = set()
    for s in SEEDS:
        ep = episodes["multi-agent-background", s]
        ids = [t.agent.id for t in ep.trials]
        k = ids.index("agent-1")
        assert k >= 1 and ids == ["agent-0"] * k + ["agent-1"] * (9 - k)
        assert ep.trials[0].agent.shape != ep.test.agent.shape
        assert all(is_shortest(t.layout, t.path) and t.goal == "A" for t in ep.trials)
        switches.add(k)
    assert len(switches) > 1


def test_agent_blocked_instrumental_encloses_the_agent_with_the_key(episodes):
    for s in SEEDS:
        ep = episodes["agent-blocked-instrumental", s]
        for t in ep.trials:
            lay = t.layout
            inside = reachable(lay, lay.agent.home)
            assert lay.key in inside and lay.object("A").cell not in inside
            assert len(inside) <= 9  # a 2x2 .. 3x3 enclosure
            assert [e.type for e in t.events] == ["pickup-key", "unlock"]


def test_rules_reject_hand_broken_episodes(episodes):
    ep = episodes["no-navigation", 0]
    t = ep.trials[2]
    b = t.layout.object("B").cell
    wrong = replace(t, path=(t.agent.home, b), goal="B")
    [p] = validate_episode(replace(ep, trials=(*ep.trials[:2], wrong, *ep.trials[3:])))
    assert p.trial == 2 and "object A" in p.message

    ep = episodes["multi-agent-background", 0]
    first = ep.trials[0].agent
    relabel = tuple(replace(t, layout=replace(t.layout, agents=(replace(t.agent, id=first.id, shape=first.shape),)))
                    for t in ep.trials)
    [p] = validate_episode(replace(ep, trials=relabel))
    assert "agent-1" in p.message

    ep = episodes["agent-blocked-instrumental", 0]
    t = ep.trials[5]
    free = replace(t, layout=replace(t.layout, key=t.layout.object("A").cell))
    probs = validate_episode(replace(ep, trials=(*ep.trials[:5], free, *ep.trials[6:])))
    assert probs and probs[0].trial == 5


def test_deterministic():
    for task in TASKS[1:]:
        assert dumps(make_unit(task, 2, 9)[0]) == dumps(make_unit(task, 2, 9)[0])
