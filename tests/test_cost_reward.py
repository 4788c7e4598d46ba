"""Issue 43: costly terrain (mud) in the world, the schema, the renderer, and the cost-reward family."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bib.cli import main
from bib.episode import Trial, dumps, loads, validate_trial
from bib.errors import BibInputError
from bib.render.frames import RenderSettings, frame_count, trial_frames
from bib.stimuli.bibjson import episode_to_bib, export_bib_json
from bib.stimuli.blind import blind_episode, blind_text
from bib.stimuli.build import build
from bib.stimuli.spec import load_spec
from bib.tasks import REGISTRY, make_unit, validate_episode, validate_pair
from bib.tasks.common import empty_layout, make_trial
from bib.tasks.cost_reward import OTHER, VALUED, margin, muddy_both, predicted_choice, ring
from bib.tasks.difficulty import excess_cost
from bib.tasks.options import AgentModel, TaskOptions
from bib.vocabulary import TERRAIN_COLOR
from bib.world.dynamics import ACTIONS, STAY, action_cost, move_legal
from bib.world.grid import Agent, GridObject, Layout
from bib.world.planning import shortest_cost
from bib.world.terrain import MUD_STAYS, cost_field, stay_problems, terrain_cost, terrain_path, time_cost, with_stays

ROOT = Path(__file__).resolve().parents[1]
AGENT = Agent("agent-0", "pentagon", (40, 90, 220), (1, 4))
NOISY = AgentModel("boltzmann", (2.0, 10.0), 3.0)


def corridor(mud: frozenset = frozenset()) -> Layout:
    """An open 10 x 10 room, the agent at (1, 4), an object at (8, 4), optional mud."""
    return empty_layout(objects=(GridObject("A", "heart", (220, 40, 60), (8, 4)),), agents=(AGENT,), terrain=mud)


# ---------------------------------------------------------------- world: dynamics, cost, planner


def test_time_cost_counts_moves_and_stays():
    assert time_cost([(1, 1), (2, 1), (3, 2), (3, 2), (3, 2)]) == pytest.approx(1 + math.sqrt(2) + 2)
    assert with_stays(corridor(frozenset({(2, 4)})), [(1, 4), (2, 4), (3, 4)]) == [(1, 4), (2, 4), (2, 4), (2, 4), (3, 4)]


def test_the_planner_wades_through_mud_only_when_a_detour_costs_more():
    # a wall of mud across the room (x = 4, rows 1-8): no way around, so one mud cell is waded through
    full = frozenset((4, y) for y in range(1, 9))
    lay = corridor(full)
    path = terrain_path(lay, (1, 4), (8, 4), np.random.default_rng(0))
    assert time_cost(path) == pytest.approx(7 + MUD_STAYS) == terrain_cost(lay, (1, 4), (8, 4))
    wade = [i for i in range(1, len(path)) if path[i] in full and path[i - 1] != path[i]]
    assert len(wade) == 1 and path[wade[0] + 1: wade[0] + 1 + MUD_STAYS] == [path[wade[0]]] * MUD_STAYS
    # one mud cell in the straight line: going round it (two diagonals) costs 2 sqrt 2 - 2 = 0.83 more, less than 2
    one = corridor(frozenset({(4, 4)}))
    path = terrain_path(one, (1, 4), (8, 4))
    assert (4, 4) not in path and time_cost(path) == pytest.approx(5 + 2 * math.sqrt(2))
    assert terrain_cost(corridor(), (1, 4), (8, 4)) == 7.0


def test_cost_field_equals_value_iteration_on_a_random_muddy_room():
    """Dijkstra with entry costs against an independent Bellman iteration over every legal move."""
    rng = np.random.default_rng(4)
    cells = [(x, y) for y in range(1, 9) for x in range(1, 9)]
    pick = rng.choice(len(cells), 28, replace=False)
    walls = frozenset(cells[i] for i in pick[:8])
    mud = frozenset(cells[i] for i in pick[8:])
    goal = next(c for c in cells if c not in walls and c not in mud)
    lay = empty_layout(walls=walls, terrain=mud, agents=(replace(AGENT, home=goal),))
    v = {c: (0.0 if c == goal else math.inf) for c in cells if c not in walls}
    for _ in range(200):
        for c in v:
            if c == goal:
                continue
            for a in range(STAY):
                if move_legal(lay, c, a):
                    n = (c[0] + ACTIONS[a][0], c[1] + ACTIONS[a][1])
                    v[c] = min(v[c], action_cost(a) + (2.0 if n in mud else 0.0) + v[n])
    field = cost_field(lay, goal)
    for (x, y), want in v.items():
        assert field[y, x] == pytest.approx(want), (x, y)


# ---------------------------------------------------------------- schema, validation, renderer, blind view


def test_terrain_round_trips_and_files_without_it_keep_their_bytes():
    lay = corridor(frozenset({(4, 4), (4, 5)}))
    trial = make_trial(lay, terrain_path(lay, (1, 4), (8, 4)), "A", "test")
    ep = make_unit("preference", 0, 5)[0]
    assert '"terrain"' not in dumps(ep)  # BIB's tasks: no field, bytes as before
    muddy = replace(ep, trials=(*ep.trials[:-1], trial))
    text = dumps(muddy)
    assert '"terrain":[[4,4],[4,5]]' in text
    assert loads(text).test.layout.terrain == frozenset({(4, 4), (4, 5)})
    bad = text.replace('"terrain":[[4,4],[4,5]]', '"terrain":[[4,4],[40,5]]')
    with pytest.raises(BibInputError, match=r"field 'trials\[8\]\.terrain\[1\]': cell \[40, 5\] is outside"):
        loads(bad)


def test_validation_refuses_leaving_mud_early_and_mud_where_it_cannot_be():
    lay = corridor(frozenset((4, y) for y in range(1, 9)))
    short = [(1, 4), (2, 4), (3, 4), (4, 4), (4, 4), (5, 4), (6, 4), (7, 4), (8, 4)]
    problems = validate_trial(Trial("test", lay, tuple(short), goal="A"))
    assert [p.message for p in problems] == [f"leaves the mud at [4, 4] before staying {MUD_STAYS} steps there"]
    assert problems[0].step == 3 and stay_problems(lay, with_stays(lay, [c for i, c in enumerate(short) if i != 4])) == []
    on_object = corridor(frozenset({(8, 4)}))
    assert "mud (terrain) sits under an object" in str(validate_trial(Trial("test", on_object, ((1, 4), (2, 4)))))
    keyed = replace(corridor(frozenset({(5, 5)})), key=(3, 3))
    assert "with a key or lock" in str(validate_trial(Trial("test", keyed, ((1, 4), (2, 4)))))


def test_mud_is_drawn_brown_and_the_stays_take_time():
    lay = corridor(frozenset((4, y) for y in range(1, 9)))
    path = terrain_path(lay, (1, 4), (8, 4))
    trial = make_trial(lay, path, "A", "test")
    s = RenderSettings(cell_px=20, fps=10, speed=1.0, pause_start=0.0, pause_end=0.0)
    first = next(iter(trial_frames(trial, s)))
    assert tuple(first[4 * 20 + 2, 4 * 20 + 2]) == TERRAIN_COLOR and tuple(first[2 * 20 + 2, 3 * 20 + 2]) != TERRAIN_COLOR
    # 7 moves + 2 stays at 1 cell/s: 9 s, 91 frames; the same path without the stays: 71
    plain = make_trial(corridor(), [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]], "A", "test")
    assert (frame_count(trial, s), frame_count(plain, s)) == (91, 71)


def test_the_blind_view_carries_the_mud():
    ep = make_unit("cost-reward", 0, 3)[0]
    view = blind_episode(ep, b"x" * 32)
    assert [t.layout.terrain for t in view.trials] == [t.layout.terrain for t in ep.trials]
    assert '"terrain":' in blind_text(view)


# ---------------------------------------------------------------- the family


def _episodes(groups: int = 6, seed: int = 2) -> list:
    opts = TaskOptions(agent=NOISY, twins=True)
    return [ep for k in range(groups) for ep in make_unit("cost-reward", 2 * k, seed, opts)]


def test_every_episode_passes_its_rules_and_the_expected_choice_is_what_the_costs_predict():
    eps = _episodes()
    assert len(eps) == 24
    for ep in eps:
        assert validate_episode(ep) == []
        fam = ep.familiarization
        assert sorted(t.goal for t in fam) == ["A"] * 4 + ["B"] * 4
        assert ep.test.layout.terrain == ring(ep.test.layout.object(VALUED).cell)
        assert all(t.layout.terrain == ring(t.layout.object(VALUED).cell) | (ring(t.layout.object(OTHER).cell)
                                                                               if muddy_both(t.layout) else frozenset())
                   for t in fam)
        assert sum(muddy_both(t.layout) for t in fam) == 4
        assert all(t.excess_cost == 0.0 and excess_cost(t) < 1e-9 for t in ep.trials)  # cheapest paths, in time
        want = predicted_choice(fam, ep.test.layout)
        assert (ep.test.goal == want) == (ep.outcome == "expected")
        paid = [margin(t.layout) for t in fam if t.goal == VALUED]
        refused = [margin(t.layout) for t in fam if t.goal == OTHER]
        m = margin(ep.test.layout)
        assert 1.5 - 1e-9 <= m <= 3.0 + 1e-9 and max(paid) < min(refused)
        lay, home = ep.test.layout, ep.test.layout.agent.home  # the nearer object by distance is never a tie
        assert abs(shortest_cost(lay, home, lay.object(VALUED).cell) - shortest_cost(lay, home, lay.object(OTHER).cell)) > 1e-6
        # the values-A agent paid at least the test's margin for A; the cost-sensitive one gave A up at no more
        assert (max(paid) >= m) == ("twin" not in ep.variant) == (min(refused) > m)
        # every A trip wades through the mud once (stays included), a B trip only where B is ringed too
        for t in fam:
            waded = sum(1 for a, b in zip(t.path, t.path[1:]) if b in t.layout.terrain and a != b)
            assert waded == (1 if t.goal == VALUED or muddy_both(t.layout) else 0)


def test_twins_flip_the_labels_so_test_only_cues_tie():
    eps = _episodes()
    by = {}
    for ep in eps:
        by.setdefault(ep.pair_id, {})[ep.outcome] = ep
    for pid, p in by.items():
        e, u = p["expected"], p["unexpected"]
        assert validate_pair(e, u) == []
        t = by[e.twin_id]
        assert (t["expected"].test, t["unexpected"].test) == (u.test, e.test)
    # the costlier object (A) is the expected choice in exactly half the pairs; path length and steps likewise
    a_expected = [p["expected"].test.goal == VALUED for p in by.values()]
    longer_expected = [len(p["expected"].test.path) > len(p["unexpected"].test.path) for p in by.values()]
    assert np.mean(a_expected) == 0.5 and np.mean(longer_expected) == 0.5


def test_the_rule_refuses_a_swapped_choice_and_a_familiarization_no_value_gap_explains():
    e, u = make_unit("cost-reward", 0, 9)[:2]
    swapped = replace(e, trials=(*e.trials[:-1], u.test))
    msg = str(validate_episode(swapped))
    assert f"expected test goal is {u.test.goal!r}, not {e.test.goal!r}, which the familiarization's costs predict" in msg
    fam = list(e.familiarization)
    i = max((k for k in range(8) if fam[k].goal == OTHER), key=lambda k: margin(fam[k].layout))
    lay = fam[i].layout
    fam[i] = make_trial(lay, terrain_path(lay, lay.agent.home, lay.object(VALUED).cell), VALUED)
    j = min((k for k in range(8) if fam[k].goal == VALUED and k != i), key=lambda k: margin(fam[k].layout))
    lay = fam[j].layout
    fam[j] = make_trial(lay, terrain_path(lay, lay.agent.home, lay.object(OTHER).cell), OTHER)
    broken = replace(e, trials=(*fam, e.test))
    assert "no value gap explains the familiarization" in str(validate_episode(broken))
    detour = list(e.trials)
    t = detour[0]
    detour[0] = replace(t, path=tuple(with_stays(t.layout, [*t.path, t.path[-2], t.path[-1]])))  # back and forth
    assert "is not a cheapest path (in time, mud included)" in str(validate_episode(replace(e, trials=tuple(detour))))


def test_plain_sets_alternate_the_two_designs_and_background_episodes_show_the_predicted_choice():
    plain = [ep for i in range(4) for ep in make_unit("cost-reward", i, 1)]
    goals = [ep.test.goal for ep in plain if ep.outcome == "expected"]
    assert goals == ["A", "B", "A", "B"]
    for i in range(4):
        (bg,) = make_unit("cost-reward-background", i, 1)
        assert bg.outcome == "none" and bg.pair_id is None and validate_episode(bg) == []
        assert bg.test.goal == predicted_choice(bg.familiarization, bg.test.layout)
    assert REGISTRY["cost-reward"].bib_folder is None and REGISTRY["cost-reward"].controls.twins


def test_bib_json_refuses_mud_in_one_line(tmp_path: Path, capsys):
    ep = make_unit("cost-reward", 0, 1)[0]
    with pytest.raises(BibInputError, match=r"BIB JSON has no costly terrain \(mud\); it cannot be exported"):
        episode_to_bib(ep)
    build([("cost-reward", 2)], 1, tmp_path / "set")
    capsys.readouterr()
    with pytest.raises(BibInputError, match="task 'cost-reward' has no BIB JSON form"):
        export_bib_json(tmp_path / "set", tmp_path / "out")
    with pytest.raises(SystemExit) as info:
        main(["export", str(tmp_path / "set"), "--out", str(tmp_path / "out")])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no BIB JSON form" in err and not (tmp_path / "out").exists()


def test_bib_ctrl_gains_the_family_with_twins():
    spec = load_spec(ROOT / "stimuli" / "bib-ctrl.toml")
    opts = spec.options()
    assert opts["cost-reward"].twins and dict(spec.units)["cost-reward"] == 500
    assert opts["cost-reward"].agent.noisy  # accepted under bib-ctrl's Boltzmann [agent]; its walks stay noise-free
    assert all(ep.beta is None for ep in make_unit("cost-reward", 0, spec.seed, opts["cost-reward"]))


def test_episode_json_of_the_family_reads_back_equal():
    for ep in _episodes(2):
        assert loads(dumps(ep)) == ep
        assert json.loads(dumps(ep))["trials"][0]["terrain"] == sorted([list(c) for c in ep.trials[0].layout.terrain])


def test_the_two_designs_margins_balance_about_the_test():
    """Mean familiarization margin minus the test's: near 0 in both designs (docs/tasks.md quotes these numbers);
    the count of margins at or above the test's separates them, as the design must (equal goal counts)."""
    eps = [ep for ep in _episodes(40, seed=7) if ep.outcome == "expected"]
    rel = {"": [], "twin": []}
    above = {"": [], "twin": []}
    for ep in eps:
        t = margin(ep.test.layout)
        ms = [margin(f.layout) for f in ep.familiarization]
        rel[ep.variant].append(np.mean(ms) - t)
        above[ep.variant].append(sum(m >= t - 1e-9 for m in ms))
    means = {k: float(np.mean(v)) for k, v in rel.items()}
    assert len(rel[""]) == len(rel["twin"]) == 40
    assert abs(means[""]) < 0.3 and abs(means["twin"]) < 0.3 and abs(means[""] - means["twin"]) < 0.4, means
    assert min(above[""]) >= 5 and max(above["twin"]) <= 4


def test_an_observer_blind_to_the_mud_is_at_chance():
    """Value inference from distances alone (the margins of the layouts with the mud taken away): the second ring
    moves half the familiarization's margins by 2, so it gets one design right and the other wrong."""
    eps = [ep for ep in _episodes(30, seed=5) if ep.outcome == "expected"]
    blind = [predicted_choice([replace(t, layout=replace(t.layout, terrain=frozenset())) for t in ep.familiarization],
                              replace(ep.test.layout, terrain=frozenset())) == ep.test.goal for ep in eps]
    seeing = [predicted_choice(ep.familiarization, ep.test.layout) == ep.test.goal for ep in eps]
    assert all(seeing) and len(eps) == 60
    assert 0.4 <= np.mean(blind) <= 0.6, np.mean(blind)


def test_every_single_feature_of_the_audit_scores_exactly_half():
    """The audit's single-feature candidates (the mud ones included) on the family: a feature of the test alone
    is undone by the twin, one of the familiarization alone is the same for both episodes of a pair."""
    from bib.evaluation import pair_score
    from bib.observers.shortcuts import FEATURES, episode_features

    by: dict[str, dict] = {}
    for ep in _episodes(12, seed=11):
        by.setdefault(ep.pair_id, {})[ep.outcome] = ep
    feats = {pid: (episode_features(p["expected"]), episode_features(p["unexpected"])) for pid, p in by.items()}
    for i, name in enumerate(FEATURES):
        assert np.mean([pair_score(e[i], u[i]) for e, u in feats.values()]) == 0.5, name
    assert {"mud-cells", "wades", "familiarization-mud"} <= set(FEATURES)
