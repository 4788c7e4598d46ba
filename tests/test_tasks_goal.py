"""Goal-inference conditions (preference, multi-agent, inaccessible-goal): generation, rules, balance."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bib.episode import Episode, dumps, loads, save_episode
from bib.render.frames import RenderSettings, frame_count, trial_frames
from bib.stimuli.check import check_path
from bib.tasks import get_task, make_unit, task_ids, validate_episode, validate_pair
from bib.tasks.common import make_trial
from bib.tasks.inaccessible_goal import enclose, neighbours
from bib.tasks.multi_agent import new_agent
from bib.tasks.preference import OTHER, PREFERRED, closer_object, home_cost, walk
from bib.world.planning import is_shortest, reachable

GOAL_TASKS = [t for f in ("preference", "multi_agent", "inaccessible_goal") for t in task_ids("evaluation", family=f)]
TEST = 8


def _pair(task: str, index: int = 0, seed: int = 0) -> tuple[Episode, Episode]:
    e, u = make_unit(task, index, seed)
    return e, u


def _with_trial(ep: Episode, i: int, trial) -> Episode:
    trials = list(ep.trials)
    trials[i] = trial
    return replace(ep, trials=tuple(trials))


def _with_test_layout(ep: Episode, layout) -> Episode:
    return _with_trial(ep, TEST, replace(ep.test, layout=layout))


def _messages(problems) -> list[tuple[int | None, str]]:
    return [(p.trial, p.message) for p in problems]


# ---------------------------------------------------------------- generation


@pytest.mark.parametrize("task", GOAL_TASKS)
@pytest.mark.parametrize("seed", [0, 7, 123])
def test_pairs_generate_validate_and_round_trip(task, seed):
    spec = get_task(task)
    assert spec.family == task.replace("-", "_") and spec.kind == "evaluation"
    for index in range(2):
        e, u = _pair(task, index, seed)
        assert (e.outcome, u.outcome) == ("expected", "unexpected")
        assert e.pair_id == u.pair_id == f"{task}-{index:06d}"
        assert (e.id, u.id) == (f"{e.pair_id}-expected", f"{e.pair_id}-unexpected")
        for ep in (e, u):
            assert [t.phase for t in ep.trials] == ["familiarization"] * 8 + ["test"]
            assert validate_episode(ep) == []
            assert all(is_shortest(t.layout, t.path) for t in ep.trials)
            assert loads(dumps(ep)) == ep and dumps(loads(dumps(ep))) == dumps(ep)
        assert validate_pair(e, u) == []
        assert e.familiarization == u.familiarization
        # Familiarization: always the same preferred object, and the other one is reachable too.
        assert {t.goal for t in e.familiarization} == {PREFERRED}
        assert all(np.isfinite(home_cost(t.layout, t.layout.object(OTHER).cell)) for t in e.familiarization)


@pytest.mark.parametrize("task", GOAL_TASKS)
def test_same_seed_gives_identical_bytes(task):
    a = [dumps(ep) for ep in make_unit(task, 3, 11)]
    b = [dumps(ep) for ep in make_unit(task, 3, 11)]
    c = [dumps(ep) for ep in make_unit(task, 4, 11)]
    assert a == b
    assert a != c


@pytest.mark.parametrize("task", GOAL_TASKS)
def test_test_trials_render(task):
    e, u = _pair(task, 1)
    s = RenderSettings(pause_start=0.0, pause_end=0.0)
    for trial in (e.test, u.test):
        frames = list(trial_frames(trial, s))
        assert len(frames) == frame_count(trial, s) > 1
        assert frames[0].shape == (200, 200, 3) and frames[0].dtype == np.uint8
        assert not np.array_equal(frames[0], frames[-1])  # the agent moved


def test_layouts_vary_within_and_across_episodes():
    e, _ = _pair("multi-agent", 0)
    cells = {t.layout.object(PREFERRED).cell for t in e.familiarization}
    assert len(cells) >= 5  # widely varying locations
    homes = {make_unit("preference", i, 0)[0].trials[0].agent.home for i in range(8)}
    assert len(homes) >= 5
    walls = {len(t.layout.walls) for t in e.familiarization}
    assert len(walls) >= 2  # a varying number of interior walls


# ---------------------------------------------------------------- condition content


def test_preference_test_swaps_identities():
    e, u = _pair("preference", 2)
    lay = e.test.layout
    # The unexpected test repeats a familiarization trial's path exactly, now ending on B.
    source = next(t for t in e.familiarization if t.path == u.test.path)
    assert lay.object(OTHER).cell == source.layout.object(PREFERRED).cell
    assert lay.object(PREFERRED).cell == source.layout.object(OTHER).cell
    assert lay.walls == source.layout.walls
    assert e.test.goal == PREFERRED and e.test.path[-1] == source.layout.object(OTHER).cell
    assert u.test.goal == OTHER
    # Object locations correlate with identity: A never strays more than 2 cells from where it was.
    a_cells = [t.layout.object(PREFERRED).cell for t in e.familiarization]
    assert max(max(abs(p[0] - q[0]), abs(p[1] - q[1])) for p in a_cells for q in a_cells) <= 2


def test_multi_agent_new_agent_differs_in_everything():
    e, u = _pair("multi-agent", 2)
    old = e.familiarization[0].agent
    assert u.test.agent == old
    new = e.test.agent
    assert new.id != old.id and new.shape != old.shape and new.color != old.color and new.home == old.home
    assert e.test.goal == u.test.goal == OTHER and e.test.path == u.test.path


def test_inaccessible_goal_walls_in_the_preferred_object():
    e, u = _pair("inaccessible-goal", 2)
    a = e.test.layout.object(PREFERRED).cell
    home = e.test.agent.home
    assert neighbours(a) <= e.test.layout.walls
    assert a not in reachable(e.test.layout, home)
    assert a in reachable(u.test.layout, home)
    assert e.test.layout.walls - u.test.layout.walls == neighbours(a) - u.test.layout.walls
    used = {o.cell for t in e.familiarization for o in t.layout.objects}
    assert not {o.cell for o in e.test.layout.objects} & used  # two new locations
    assert e.test.goal == u.test.goal == OTHER


def _closest_cue(e: Episode, u: Episode) -> str:
    """Does "the agent goes to the closer object" call the expected episode expected?"""

    def surprise(ep: Episode) -> float:
        near = closer_object(ep.test.layout)
        return 0.5 if near is None else float(near != ep.test.goal)

    se, su = surprise(e), surprise(u)
    return "right" if se < su else "wrong" if se > su else "tie"


def _cue_counts(task: str, n: int = 40) -> dict[str, int]:
    counts = {"right": 0, "wrong": 0, "tie": 0}
    for i in range(n):
        counts[_closest_cue(*make_unit(task, i, 5))] += 1
    return counts


def test_closest_object_cue_is_at_chance():
    # preference: the preferred object was the closer one in the reused layout on a coin flip.
    pref = _cue_counts("preference")
    assert pref["tie"] == 0 and 12 <= pref["right"] <= 28
    # multi-agent: both outcomes show the same layout and path, so the cue never separates them.
    assert _cue_counts("multi-agent") == {"right": 0, "wrong": 0, "tie": 40}
    # inaccessible-goal: B is the closer object in both outcomes (A, walled in, cannot be).
    assert _cue_counts("inaccessible-goal") == {"right": 0, "wrong": 0, "tie": 40}


# ---------------------------------------------------------------- rules reject broken episodes


@pytest.mark.parametrize("task", GOAL_TASKS)
def test_rule_rejects_a_familiarization_trial_with_another_goal(task):
    e, _ = _pair(task)
    trial = e.trials[3]
    lay = trial.layout
    to_b = make_trial(lay, walk(lay, lay.object(OTHER).cell, np.random.default_rng(0)), OTHER)
    problems = validate_episode(_with_trial(e, 3, to_b))
    assert (3, "familiarization goal 'B' differs from trial 0's 'A'") in _messages(problems)


@pytest.mark.parametrize("task", GOAL_TASKS)
def test_rule_rejects_a_familiarization_agent_change(task):
    e, _ = _pair(task)
    trial = e.trials[5]
    other = new_agent(np.random.default_rng(1), trial.agent)
    problems = validate_episode(_with_trial(e, 5, replace(trial, layout=replace(trial.layout, agents=(other,)))))
    assert (5, "familiarization agent differs from trial 0's") in _messages(problems)


@pytest.mark.parametrize("task", GOAL_TASKS)
def test_pair_rule_rejects_a_changed_familiarization_trial(task):
    e, u = _pair(task)
    swapped = list(u.trials)
    swapped[2], swapped[4] = swapped[4], swapped[2]
    broken = replace(u, trials=tuple(swapped))
    assert validate_episode(broken) == []  # each episode alone is still fine
    problems = validate_pair(e, broken)
    assert _messages(problems) == [(2, f"familiarization trial differs from the expected episode {e.id}'s")]
    assert problems[0].episode == u.id


@pytest.mark.parametrize("task", GOAL_TASKS)
def test_rules_reject_swapped_test_goals(task):
    e, u = _pair(task)
    if task == "preference":
        assert _messages(validate_episode(_with_trial(e, TEST, u.test))) == [
            (TEST, "expected test goal is 'B', not the preferred object 'A'")]
        assert _messages(validate_episode(_with_trial(u, TEST, e.test))) == [
            (TEST, "unexpected test goal is the preferred object 'A'")]
    else:
        lay = u.test.layout
        to_a = make_trial(lay, walk(lay, lay.object(PREFERRED).cell, np.random.default_rng(0)), PREFERRED, "test")
        assert (TEST, "test goal is the preferred object 'A', not the other one") in _messages(
            validate_episode(_with_trial(u, TEST, to_a)))


def test_preference_rule_needs_a_swapped_familiarization_layout():
    e, u = _pair("preference")
    fam0 = e.trials[0]
    unswapped = _with_trial(e, TEST, replace(fam0, phase="test"))
    assert _messages(validate_episode(unswapped)) == [
        (TEST, "test layout is not a familiarization layout with the two objects swapped")]
    # The unexpected outcome must repeat the old path, not just end at the old location.
    lay = u.test.layout
    rng = np.random.default_rng(0)
    paths = {tuple(walk(lay, lay.object(OTHER).cell, rng)) for _ in range(50)}
    path = sorted(paths - {u.test.path})[0]  # this layout has several shortest paths
    other_path = _with_trial(u, TEST, make_trial(lay, path, OTHER, "test"))
    assert _messages(validate_episode(other_path)) == [
        (TEST, "unexpected test path does not repeat the familiarization path to the preferred object's old location")]
    assert _messages(validate_pair(e, _with_test_layout(u, enclose(lay, PREFERRED)))) == [
        (TEST, "test layout differs from the expected episode's")]


def test_multi_agent_rules_check_the_agent():
    e, u = _pair("multi-agent")
    old = e.familiarization[0].agent
    same = _with_test_layout(e, replace(e.test.layout, agents=(old,)))
    assert _messages(validate_episode(same)) == [
        (TEST, "expected test agent has the familiarization agent's id, shape, color; it must be a new agent")]
    recoloured = replace(e.test.agent, color=old.color)
    assert _messages(validate_episode(_with_test_layout(e, replace(e.test.layout, agents=(recoloured,))))) == [
        (TEST, "expected test agent has the familiarization agent's color; it must be a new agent")]
    assert _messages(validate_episode(_with_test_layout(u, e.test.layout))) == [
        (TEST, "unexpected test agent is not the familiarization agent")]
    # Pair: the test trials may differ only in the agent.
    moved = _with_trial(u, TEST, e.familiarization[0])
    moved = _with_trial(moved, TEST, replace(moved.test, phase="test", goal=OTHER,
                                              path=tuple(walk(moved.test.layout,
                                                              moved.test.layout.object(OTHER).cell,
                                                              np.random.default_rng(0)))))
    assert validate_episode(moved) == []
    assert _messages(validate_pair(e, moved)) == [
        (TEST, "test trial differs from the expected episode's in more than the agent")]


def test_inaccessible_rules_check_the_enclosure():
    e, u = _pair("inaccessible-goal")
    lay = e.test.layout
    a = lay.object(PREFERRED).cell
    gap = sorted(neighbours(a) - u.test.layout.walls)[0]
    opened = replace(lay, walls=lay.walls - {gap})
    problems = validate_episode(_with_test_layout(e, opened))
    assert _messages(problems) == [(TEST, "preferred object 'A' is not walled in on all sides")]
    assert problems[0].cell == gap
    # The unexpected outcome must leave both objects reachable.
    walled = _with_test_layout(u, enclose(u.test.layout, PREFERRED))
    assert _messages(validate_episode(walled)) == [
        (TEST, "preferred object 'A' is unreachable; both must be reachable")]
    # The test objects must sit on new cells: move B onto a cell an object used in familiarization.
    old_cell = next(o.cell for t in e.familiarization for o in t.layout.objects
                    if o.cell not in neighbours(a) | lay.walls | {e.test.agent.home})
    moved_lay = replace(lay, objects=(lay.objects[0], replace(lay.objects[1], cell=old_cell)))
    trial = make_trial(moved_lay, walk(moved_lay, old_cell, np.random.default_rng(0)), OTHER, "test")
    problems = validate_episode(_with_trial(e, TEST, trial))
    assert _messages(problems) == [(TEST, "test object 'B' is not at a new location")]
    assert problems[0].cell == old_cell
    # Pair: the expected test only adds walls around the preferred object.
    stray = next(c for c in sorted(u.test.layout.free_cells()) if c not in e.test.path and c not in neighbours(a)
                 and c not in {o.cell for o in lay.objects} and c != e.test.agent.home)
    extra = _with_test_layout(e, replace(lay, walls=lay.walls | {stray}))
    assert _messages(validate_pair(extra, u)) == [
        (TEST, "test layout differs from the expected episode's in more than the walls around the preferred object")]


def test_bib_validate_checks_pairs_on_disk(tmp_path):
    e, u = _pair("inaccessible-goal")
    for ep in (e, u):
        save_episode(ep, tmp_path / f"{ep.id}.json")
    assert check_path(tmp_path).n_invalid == 0
    swapped = list(u.trials)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    save_episode(replace(u, trials=tuple(swapped)), tmp_path / f"{u.id}.json")
    report = check_path(tmp_path)
    assert report.n_invalid == 1
    assert "trial 0: familiarization trial differs" in report.problems[0]
