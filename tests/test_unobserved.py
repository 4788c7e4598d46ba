"""Issue 43: AGENT's unobserved constraints (bib.tasks.unobserved) and the occluder (bib.world.occluder).

The occluder's contract: the cells under it hold nothing in an episode's file, so no reader of the file, of
the blind view or of the frames learns what the generator hid there. The family's controls: both outcomes
show the same walk; wall counts balance over whole blocks of design slots.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

from bib.episode import Episode, dumps, loads, save_episode, validate
from bib.errors import BibInputError
from bib.observers.shortcuts import FEATURES, episode_features
from bib.render.frames import RenderSettings, trial_frames
from bib.stimuli.blind import blind_episode, blind_text, episode_secret
from bib.tasks import make_unit, validate_episode, validate_pair
from bib.tasks.options import AgentModel, TaskOptions
from bib.tasks.unobserved import (
    BACKGROUND,
    CONDITION,
    MIN_BEND,
    inner_walls,
    walk_excess,
    with_walls,
)
from bib.vocabulary import OCCLUDER_COLOR, WALL_COLOR
from bib.world.occluder import Occluder

os.environ["BIB_NO_PROGRESS"] = "1"

CTRL = TaskOptions(agent=AgentModel("boltzmann", (2.0, 10.0), 3.0), variants=("", "empty", "", "larger"),
                   difficulty=(0.4, 1.0, 2.0))
"""AGENT's walk design with bib-ctrl's agent and bins; a block is 2 x 4 variants x 2 bins = 16 pairs."""
AT_GOAL = dataclasses.replace(CTRL, variants=("at-goal", "empty+at-goal", "at-goal", "larger+at-goal"))
"""The test shows the agent at its object, after each of the three reveals."""
CTRL_SPEC = dataclasses.replace(CTRL, variants=("at-goal", "at-goal+bends-4", "at-goal+bends-2", "at-goal+bends-1"))
"""bib-ctrl's options for the family before the path-adjacency control (TOUCH_SPEC, below) was adopted: at the goal,
the same obstacle elsewhere, the walks bending in all 8, 4, 2 or 1 familiarization trials."""


@pytest.fixture(scope="module")
def ctrl_pairs() -> list[tuple[Episode, Episode]]:
    """Two whole blocks (32 pairs) of AGENT's walk design, bib-ctrl's seed."""
    out = []
    for i in range(2 * CTRL.cycle):
        e, u = make_unit(CONDITION, i, 20211207, CTRL)
        out.append((e, u))
    return out


@pytest.fixture(scope="module")
def goal_pairs() -> list[tuple[Episode, Episode]]:
    """One whole block of the test at the goal after each reveal: 16 pairs."""
    return [tuple(make_unit(CONDITION, i, 20211207, AT_GOAL)) for i in range(AT_GOAL.cycle)]  # type: ignore[misc]


@pytest.fixture(scope="module")
def plain_pairs() -> list[tuple[Episode, Episode]]:
    """Eight pairs of the noise-free design (``bib generate --task unobserved-constraints``)."""
    return [tuple(make_unit(CONDITION, i, 5)) for i in range(8)]  # type: ignore[misc]


HUGS = ("path-hugs-reveal", "walks-hug-reveal", "path-nears-reveal", "turns-at-reveal")
"""The audit's four counts of how much the walks hug the revealed wall (bib.tasks.unobserved.hugging)."""


def _hidden(e: Episode) -> frozenset:
    """What the expected test reveals: the obstacle the familiarization hid."""
    return inner_walls(e.test.layout)


# ---------------------------------------------------------------- the occluder in the schema


def test_occluder_round_trips_and_is_written_only_when_set(plain_pairs) -> None:
    e, _ = plain_pairs[0]
    text = dumps(e)
    assert loads(text) == e
    lines = text.splitlines()[1:-1]
    assert all('"occluder":' in line for line in lines[:-1]) and '"occluder"' not in lines[-1]  # not at test
    occ = e.trials[0].occluder
    assert occ is not None and f'"occluder":[[{occ.x0},{occ.y0}],[{occ.x1},{occ.y1}]]' in lines[0]


@pytest.mark.parametrize("value, message", [
    ("[[4,1]]", "expected two corners"),
    ("[[6,1],[4,8]]", "are not [low, high]"),
    ("[[0,1],[4,8]]", "is not inside the border ring of the 10 x 10 grid"),
    ("[[4,1],[4,\"8\"]]", "expected a cell [x, y] of two integers"),
])
def test_a_bad_occluder_is_one_line_naming_the_field(plain_pairs, value: str, message: str) -> None:
    e, _ = plain_pairs[0]
    occ = e.trials[0].occluder
    assert occ is not None
    text = dumps(e).replace(f'"occluder":[[{occ.x0},{occ.y0}],[{occ.x1},{occ.y1}]]', f'"occluder":{value}', 1)
    with pytest.raises(BibInputError) as err:
        loads(text, "x.json")
    msg = str(err.value)
    assert msg.startswith("x.json: field 'trials[0].occluder") and message in msg and "\n" not in msg


def test_the_schema_refuses_anything_under_an_occluder(plain_pairs) -> None:
    e, _ = plain_pairs[0]
    t = e.trials[0]
    occ = t.occluder
    assert occ is not None
    hidden = sorted(_hidden(e))
    leaky = dataclasses.replace(t, layout=with_walls(t.layout, frozenset(hidden[:1])))
    ep = dataclasses.replace(e, trials=(leaky, *e.trials[1:]))
    problems = [str(p) for p in validate(ep)]
    assert problems == [f"episode {e.id}, trial 0, cell {list(hidden[0])}: the occluder hides a wall: an occluded "
                        "cell must hold nothing in the file"]
    obj = t.layout.objects[0]
    moved = dataclasses.replace(t.layout, objects=(dataclasses.replace(obj, cell=(occ.x0, occ.y0)),))
    assert any("hides a object A" in str(p) for p in validate(dataclasses.replace(e, trials=(
        dataclasses.replace(t, layout=moved), *e.trials[1:]))))


def test_the_occluder_is_drawn_opaque_under_the_agent(plain_pairs) -> None:
    e, _ = plain_pairs[0]
    t = e.trials[0]
    occ = t.occluder
    assert occ is not None
    px = 8
    for i, frame in enumerate(trial_frames(t, RenderSettings(cell_px=px))):
        for x, y in occ.cells:
            block = frame[y * px:(y + 1) * px, x * px:(x + 1) * px].reshape(-1, 3)
            assert not (block == WALL_COLOR).all(axis=1).any()  # nothing hidden shows through
        if i == 0:  # the agent is at home, off the occluder: every occluded pixel is the occluder's colour
            cells = np.array(sorted(occ.cells))
            ys = (cells[:, 1, None] * px + np.arange(px)).ravel()
            assert (frame[occ.y0 * px:(occ.y1 + 1) * px, occ.x0 * px:(occ.x1 + 1) * px] == OCCLUDER_COLOR).all(), ys.size
    frames = list(trial_frames(t, RenderSettings(cell_px=px)))
    under = [k for k, c in enumerate(t.path) if c in occ]
    assert under, "the walk crosses the occluder"
    # the agent is drawn over the occluder: some frame differs from the occluder's colour inside it
    inside = [f[occ.y0 * px:(occ.y1 + 1) * px, occ.x0 * px:(occ.x1 + 1) * px] for f in frames]
    assert any(not (b == OCCLUDER_COLOR).all() for b in inside)


# ---------------------------------------------------------------- the hidden obstacle reaches no model


def _blind_trial_dicts(view: Episode) -> list[dict]:
    """The blind view's familiarization trials as JSON objects, entity ids dropped (they differ per episode)."""
    out = []
    for line in blind_text(view).splitlines()[1:-1]:
        d = json.loads(line.rstrip(","))
        if d["phase"] != "familiarization":
            continue
        for o in d["objects"]:
            o.pop("id")
        d["agent"].pop("id")
        d.pop("goal")
        out.append(d)
    return out


def _reader(view: Episode) -> float:
    """Surprise of a cheat: minus how many of the test's revealed walls the familiarization showed as walls (in
    the view's text or, as black pixels, in its first frames)."""
    shown: set = set()
    for d in _blind_trial_dicts(view):
        shown |= {tuple(c) for key in ("walls", "barriers") for c in d[key]}
    for t in view.familiarization:
        frame = next(iter(trial_frames(t, RenderSettings(cell_px=4))))
        dark = (frame.reshape(10, 4, 10, 4, 3) == WALL_COLOR).all(axis=(1, 3, 4))
        shown |= {(int(x), int(y)) for y, x in zip(*np.nonzero(dark))}
    return -float(len(inner_walls(view.test.layout) & shown))


def test_no_model_can_read_the_hidden_obstacle_from_what_it_is_handed(ctrl_pairs, plain_pairs) -> None:
    """Adversarial: everything a model gets of the familiarization (the blind view's text and frames) is the same
    in both outcomes and holds nothing under the occluder, and a reader that takes "expected" to be the reveal of
    what the familiarization hid sits at exactly 50% (every pair ties), where a view that lets the obstacle
    through makes it right on every pair."""
    correct = 0.0
    for e, u in [*ctrl_pairs, *plain_pairs]:
        views = [blind_episode(ep, episode_secret(ep)) for ep in (e, u)]
        fam = [_blind_trial_dicts(v) for v in views]
        assert fam[0] == fam[1]  # the expected and unexpected familiarizations are one picture
        occ = views[0].trials[0].occluder
        assert occ is not None
        hidden = _hidden(e)
        for t, d in zip(views[0].familiarization, fam[0]):
            mentioned = {tuple(c) for key in ("walls", "barriers") for c in d[key]}
            mentioned |= {tuple(o["cell"]) for o in d["objects"]} | {tuple(d["agent"]["home"])}
            mentioned |= {tuple(c) for c in (d["key"], d["lock"]) if c is not None}
            assert not mentioned & occ.cells and not mentioned & hidden
            assert inner_walls(t.layout) == frozenset()
        # a reader that knows the design: "expected = the test reveals the walls the familiarization hid", the
        # hidden walls read from whatever of the familiarization's file or frames shows a wall
        scores = [_reader(view) for view in views]
        correct += 1.0 if scores[1] > scores[0] else 0.5 if scores[1] == scores[0] else 0.0
        # the same reader on a view that lets the hidden obstacle through (drawn, the occluder dropped) is right
        leaky = [dataclasses.replace(v, trials=(*[dataclasses.replace(t, occluder=None, layout=with_walls(t.layout, hidden))
                                                  for t in v.familiarization], v.test)) for v in views]
        assert _reader(leaky[1]) > _reader(leaky[0])
    assert correct / (len(ctrl_pairs) + len(plain_pairs)) == 0.5


# ---------------------------------------------------------------- the family's design and rules


def test_pairs_show_the_same_walk_and_differ_only_in_what_is_revealed(ctrl_pairs) -> None:
    variants = {"": 0, "empty": 0, "larger": 0}
    for e, u in ctrl_pairs:
        assert e.familiarization == u.familiarization and e.test.path == u.test.path
        assert e.test.occluder is None and all(t.occluder == e.trials[0].occluder for t in e.familiarization)
        shown = next(t for t in e.familiarization if t.path == e.test.path)
        assert with_walls(e.test.layout, frozenset()) == shown.layout == with_walls(u.test.layout, frozenset())
        a, b = _hidden(e), inner_walls(u.test.layout)
        assert a and a <= e.trials[0].occluder.cells and b <= e.trials[0].occluder.cells
        assert walk_excess(shown.layout, shown.path) >= MIN_BEND - 1e-9  # the bend is evident as seen
        d = walk_excess(u.test.layout, u.test.path) - walk_excess(e.test.layout, e.test.path)
        assert e.difficulty == u.difficulty == pytest.approx(d, abs=1e-4) and d >= 0.05 - 1e-9
        variants[e.variant] += 1
        if e.variant == "":
            assert len(b) == len(a) and b != a
        elif e.variant == "empty":
            assert not b
        else:
            assert len(b) == len(a) + 1 and not a & b
    assert variants == {"": len(ctrl_pairs) // 2, "empty": len(ctrl_pairs) // 4, "larger": len(ctrl_pairs) // 4}


def test_wall_counts_and_every_non_efficiency_feature_sit_at_chance(ctrl_pairs) -> None:
    """Over two whole blocks: "more walls revealed = expected" is exactly 50% (empty and larger balance), and
    every single feature that does not read the walk's efficiency is within 40-60% in either direction."""
    fe = np.array([episode_features(e) for e, _ in ctrl_pairs])
    fu = np.array([episode_features(u) for _, u in ctrl_pairs])
    acc = {name: float(np.mean(np.where(fu[:, j] > fe[:, j], 1.0, np.where(fu[:, j] == fe[:, j], 0.5, 0.0))))
           for j, name in enumerate(FEATURES)}
    assert acc["inner-walls"] == 0.5
    assert acc["path-cost"] == acc["n-steps"] == acc["repeats-familiar-path"] == acc["objects"] == 0.5
    assert acc["familiarization-inner-walls"] == 0.5
    for name, f in FEATURES.items():
        if f.cue != "efficiency" and name not in HUGS:
            assert 0.4 <= acc[name] <= 0.6, (name, acc[name])
    assert acc["excess-cost"] == 1.0  # the efficiency principle, the condition's own test (exempt)
    assert acc["path-hugs-reveal"] < 0.1  # the walks hug the hidden obstacle: the cue the hug catch pairs balance (below)


def test_both_reveals_sit_alike_relative_to_the_object(ctrl_pairs, goal_pairs) -> None:
    """The hidden segment stood between homes and objects, so "the wall in line with the object" or "the wall
    nearer the object" would call it; every pair whose unexpected outcome reveals a wall ties on both."""
    from bib.tasks.unobserved import placement

    tied = 0
    for e, u in [*ctrl_pairs, *goal_pairs]:
        b = inner_walls(u.test.layout)
        if b:
            obj = e.test.layout.objects[0].cell
            assert placement(b, obj) == placement(_hidden(e), obj)
            tied += 1
    assert tied == len(ctrl_pairs) * 3 // 4 + len(goal_pairs) * 3 // 4
    from bib.observers.hidden_obstacles import segments

    for e, u in (p for p in ctrl_pairs if p[0].variant == ""):  # the rule refuses a reveal that sits otherwise
        obj, a = e.test.layout.objects[0].cell, _hidden(e)
        vertical = len({c[0] for c in a}) == 1
        other = [s for s in segments(e.trials[0].occluder, len(a)) if len(s) == len(a) and s != a
                 and (len({c[0] for c in s}) == 1) == vertical and placement(s, obj) != placement(a, obj)]
        if other:
            bad = dataclasses.replace(u, trials=(*u.familiarization, dataclasses.replace(
                u.test, layout=with_walls(u.test.layout, other[0]))))
            assert "the two reveals must sit alike relative to the object" in str(validate_pair(e, bad)[0])
            break
    else:
        pytest.fail("no pair to break")


@pytest.mark.parametrize("break_it, message", [
    ("outside", "a revealed wall lies outside the occluder"),
    ("cross", "the revealed walls cross this familiarization walk"),
    ("nothing", "the expected outcome must reveal the hidden obstacle"),
    ("occluded-test", "the occluder hides a wall: an occluded cell must hold nothing in the file"),
])
def test_the_rule_refuses_a_broken_expected_episode(plain_pairs, break_it: str, message: str) -> None:
    e, _ = plain_pairs[0]
    assert validate_episode(e) == []
    test, occ = e.test, e.trials[0].occluder
    assert occ is not None
    if break_it == "outside":
        free = next(c for c in test.layout.free_cells() if c not in occ and c not in test.path
                    and c != test.layout.objects[0].cell and c != test.layout.agent.home)
        test = dataclasses.replace(test, layout=with_walls(test.layout, _hidden(e) | {free}))
    elif break_it == "cross":
        on_path = next(c for t in e.familiarization for c in t.path if c in occ and c not in test.path)
        test = dataclasses.replace(test, layout=with_walls(test.layout, _hidden(e) | {on_path}))
    elif break_it == "nothing":
        test = dataclasses.replace(test, layout=with_walls(test.layout, frozenset()))
    else:
        test = dataclasses.replace(test, occluder=occ)
    broken = dataclasses.replace(e, trials=(*e.familiarization, test))
    problems = [str(p) for p in validate_episode(broken)]
    assert problems and message in problems[0], problems


def test_the_pair_rule_refuses_a_reveal_that_explains_the_bend(ctrl_pairs) -> None:
    e, u = next((e, u) for e, u in ctrl_pairs if e.variant == "")
    assert validate_pair(e, u) == []
    same = dataclasses.replace(u, trials=(*u.familiarization, e.test))  # the hidden obstacle itself
    assert [str(p) for p in validate_pair(e, same)] == [
        f"episode {u.id}: the unexpected outcome must reveal an obstacle of the expected one's shape elsewhere"]
    e2, u2 = next((e, u) for e, u in ctrl_pairs if e.variant == "empty")
    walled = dataclasses.replace(u2.test, layout=e2.test.layout)
    assert "must reveal nothing" in str(validate_pair(e2, dataclasses.replace(u2, trials=(*u2.familiarization, walled)))[0])
    e3, u3 = next((e, u) for e, u in ctrl_pairs if e.variant == "larger")
    assert validate_pair(e3, u3) == []
    other = dataclasses.replace(u3, trials=(*u3.familiarization[1:], u3.familiarization[0], u3.test))
    assert "familiarization differs" in str(validate_pair(e3, other)[0])


def test_the_background_task_hides_an_obstacle_in_half_its_episodes() -> None:
    eps = [make_unit(BACKGROUND, i, 11)[0] for i in range(40)]
    assert all(validate_episode(ep) == [] and ep.outcome == "none" for ep in eps)
    revealed = [bool(inner_walls(ep.test.layout)) for ep in eps]
    assert 12 <= sum(revealed) <= 28
    for ep, r in zip(eps, revealed):
        bends = [walk_excess(t.layout, t.path) for t in ep.familiarization]
        assert (min(bends) >= MIN_BEND - 1e-9) if r else (max(bends) <= 1e-9)  # noise-free planner


def test_bib_json_export_refuses_the_family_in_one_line(tmp_path: Path, plain_pairs) -> None:
    from bib.stimuli.bibjson import export_bib_json, trial_to_bib
    from bib.stimuli.build import build

    build([(CONDITION, 2)], 3, tmp_path / "set")
    with pytest.raises(BibInputError) as err:
        export_bib_json(tmp_path / "set", tmp_path / "out")
    msg = str(err.value)
    assert "task 'unobserved-constraints' shows an occluder, which BIB JSON cannot hold" in msg and "\n" not in msg
    assert not (tmp_path / "out").exists()
    with pytest.raises(BibInputError, match="shows an occluder, which BIB JSON cannot hold"):
        trial_to_bib(plain_pairs[0][0].trials[0])


def test_ctrl_spec_builds_the_family_without_touching_the_other_conditions(tmp_path: Path) -> None:
    """stimuli/bib-ctrl.toml's entry is MIX_SPEC (bends-2 and bends-1, half of each hug catch pairs, below), and the
    nine conditions' options are not the family's."""
    from bib.stimuli.spec import load_spec

    spec = load_spec(Path(__file__).resolve().parents[1] / "stimuli" / "bib-ctrl.toml")
    options = spec.options()
    assert options[CONDITION] == MIX_SPEC and dict(spec.units)[CONDITION] == 400
    assert all(o != MIX_SPEC for t, o in options.items() if t != CONDITION)
    ep = make_unit(CONDITION, 0, spec.seed, options[CONDITION])[0]
    save_episode(ep, tmp_path / "e.json")
    assert loads((tmp_path / "e.json").read_text()) == ep


def test_occluder_contains_and_cells() -> None:
    occ = Occluder(2, 3, 4, 3)
    assert occ.cells == {(2, 3), (3, 3), (4, 3)} and (3, 3) in occ and (3, 4) not in occ and "x" not in occ
    with pytest.raises(ValueError):
        Occluder(4, 3, 2, 3)


# ---------------------------------------------------------------- the inverse planner's hidden obstacles


def test_segments_under_an_occluder() -> None:
    from bib.observers.hidden_obstacles import segments

    segs = segments(Occluder(4, 1, 5, 8), max_length=3)
    # vertical: 2 columns x (7 of length 2 + 6 of length 3); horizontal: 8 rows x 1 of length 2
    assert len(segs) == 2 * (7 + 6) + 8 and len(set(segs)) == len(segs)
    assert frozenset({(4, 1), (4, 2), (4, 3)}) in segs and frozenset({(4, 5), (5, 5)}) in segs
    assert all(len(s) in (2, 3) and s <= Occluder(4, 1, 5, 8).cells for s in segs)


def test_the_posterior_puts_the_hidden_obstacle_first_and_reads_only_the_view(plain_pairs, ctrl_pairs) -> None:
    from bib.observers.hidden_obstacles import hidden_posterior, reveal_surprise
    from bib.observers.inverse_planning import InversePlanner

    planner = InversePlanner()
    for e, u in plain_pairs[:4]:
        post = hidden_posterior(planner, e.familiarization)
        assert max(post, key=post.__getitem__) == _hidden(e)
        assert post[frozenset()] < -10  # nothing hidden cannot explain the bends
        views = [blind_episode(ep, episode_secret(ep)) for ep in (e, u)]
        s = [reveal_surprise(planner, v) for v in views]
        assert s == [reveal_surprise(planner, ep) for ep in (e, u)] and s[0] < 1.0 < 10.0 < s[1]
    off = InversePlanner(hidden=False)
    right = {True: 0.0, False: 0.0}
    block = ctrl_pairs[:CTRL.cycle]  # AGENT's walk design: the test walk's efficiency decides nearly all pairs alone
    for e, u in block:
        for flag, p in ((True, planner), (False, off)):
            se, su = (float(p.surprise(blind_episode(ep, episode_secret(ep))).max()) for ep in (e, u))
            right[flag] += 1.0 if su > se else 0.5 if su == se else 0.0
    assert right[True] == len(block) and right[False] >= 0.85 * len(block)


def test_the_hidden_term_leaves_other_conditions_alone() -> None:
    from bib.observers.inverse_planning import InversePlanner

    on, off = InversePlanner(), InversePlanner(hidden=False)
    for cond in ("efficiency-path", "preference"):
        for ep in make_unit(cond, 0, 3):
            assert np.array_equal(on.surprise(ep), off.surprise(ep))


def test_at_goal_pairs_leave_only_the_familiarization_to_tell(goal_pairs) -> None:
    """bib-ctrl's design: the agent at its object in both tests, one stay step, no revealed wall next to it; every
    single feature (excess cost included) and the test-only planner tie on every pair, the planner without its
    hidden obstacles too, and with them it decides every pair. One picture-level feature does too: how many path cells
    touch the revealed wall (the expected one on every pair: all 8 walks bend around it; see the touch control)."""
    from bib.observers.inverse_planning import InversePlanner
    from bib.observers.shortcuts import TestOnlyObserver

    fe = np.array([episode_features(e) for e, _ in goal_pairs])
    fu = np.array([episode_features(u) for _, u in goal_pairs])
    for j, name in enumerate(FEATURES):
        acc = float(np.mean(np.where(fu[:, j] > fe[:, j], 1.0, np.where(fu[:, j] == fe[:, j], 0.5, 0.0))))
        if name in HUGS:  # all 8 walks bend: they hug the hidden obstacle (no reveal can be hugged more)
            assert acc == 0.0 if name == "path-hugs-reveal" else acc < 0.4, (name, acc)
            continue
        assert (acc == 0.5) if name != "inner-walls" else (0.4 <= acc <= 0.6), (name, acc)
    right = {"hidden": 0.0, "no-hidden": 0.0, "test-only": 0.0}
    observers = {"hidden": InversePlanner(), "no-hidden": InversePlanner(hidden=False), "test-only": TestOnlyObserver()}
    for e, u in goal_pairs:
        obj = e.test.layout.objects[0].cell
        assert e.test.path == u.test.path == (obj, obj) and e.test.layout.agent.home == obj
        assert validate_episode(e) == validate_episode(u) == validate_pair(e, u) == []
        for name, obs in observers.items():
            se, su = (float(obs.surprise(blind_episode(x, episode_secret(x))).max()) for x in (e, u))
            right[name] += 1.0 if su > se else 0.5 if su == se else 0.0
    n = len(goal_pairs)
    assert right == {"hidden": n, "no-hidden": n / 2, "test-only": n / 2}


def test_a_test_at_the_goal_may_not_reveal_a_wall_next_to_the_agent(goal_pairs) -> None:
    e, _ = goal_pairs[0]
    obj = e.test.path[0]
    occ = e.trials[0].occluder
    assert occ is not None
    near = next(((obj[0] + dx, obj[1] + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if (obj[0] + dx, obj[1] + dy) in occ),
                None)
    if near is None:
        e = next(p[0] for p in goal_pairs if any((p[0].test.path[0][0] + dx, p[0].test.path[0][1] + dy) in occ
                                                 for dx in (-1, 0, 1) for dy in (-1, 0, 1)))
        obj = e.test.path[0]
        near = next((obj[0] + dx, obj[1] + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if (obj[0] + dx, obj[1] + dy) in occ)
    test = dataclasses.replace(e.test, layout=with_walls(e.test.layout, _hidden(e) | {near}))
    problems = [str(p) for p in validate_episode(dataclasses.replace(e, trials=(*e.familiarization, test)))]
    assert problems and "a test at the goal reveals a wall next to the agent" in problems[0]


# ---------------------------------------------------------------- graded by evidence (bib-ctrl's design)


@pytest.fixture(scope="module")
def graded_pairs() -> list[tuple[Episode, Episode]]:
    """One whole block (16 pairs) of bib-ctrl's design: at the goal, 8, 4, 2 or 1 bending familiarization trials."""
    return [tuple(make_unit(CONDITION, i, 20211207, CTRL_SPEC)) for i in range(CTRL_SPEC.cycle)]  # type: ignore[misc]


def _walks_llr(e: Episode, u: Episode) -> float:
    """The walks' log-likelihood ratio of the two reveals, from the Boltzmann softmax over move_costs directly."""
    import math

    from bib.world.dynamics import AgentState, action_between, step
    from bib.world.keylock import move_costs

    assert e.beta is not None
    total = 0.0
    for sign, walls in ((1.0, _hidden(e)), (-1.0, _hidden(u))):
        for t in e.familiarization:
            lay = with_walls(t.layout, walls)
            state = AgentState(t.path[0])
            for a, b in zip(t.path, t.path[1:]):
                here, moves = move_costs(lay, state, lay.objects[0].cell)
                logits = {m: -e.beta * c for m, c in moves}
                top = max(logits.values())
                norm = top + math.log(sum(math.exp(v - top) for v in logits.values()))
                action = action_between(a, b)
                total += sign * (logits[action] - norm)
                state, _ = step(lay, state, action)
    return total


def test_bends_k_bends_exactly_k_familiarization_walks(graded_pairs) -> None:
    from bib.tasks.unobserved import n_bends
    from bib.world.keylock import optimal_cost

    seen_k = set()
    for e, u in graded_pairs:
        assert validate_episode(e) == validate_episode(u) == validate_pair(e, u) == []
        k = n_bends(e.variant)
        seen_k.add(k)
        bends = [optimal_cost(with_walls(t.layout, _hidden(e)), t.layout.objects[0].cell)
                 - optimal_cost(t.layout, t.layout.objects[0].cell) for t in e.familiarization]
        assert sum(b >= MIN_BEND for b in bends) == k and sum(b <= 1e-9 for b in bends) == 8 - k, (e.variant, bends)
        obj = e.test.path[0]  # the test shows a trial that bends
        shown = next(i for i, t in enumerate(e.familiarization) if t.layout.objects[0].cell == obj)
        assert bends[shown] >= MIN_BEND
    assert seen_k == {8, 4, 2, 1}


def test_at_goal_pairs_carry_the_walks_evidence(graded_pairs) -> None:
    """The manifest's evidence of a pair at the goal is the walks' log-likelihood ratio (its test moves tie): it was 0
    on every pair before, so bib evaluate put the whole family in one bin."""
    from bib.evaluation import difficulty_bin
    from bib.tasks.difficulty import pair_evidence

    ev = {}
    for i, (e, u) in enumerate(graded_pairs):
        ev[i] = pair_evidence(e, u)
        assert ev[i] == pytest.approx(_walks_llr(e, u), abs=1e-3) and ev[i] > 0
    by_k: dict[str, list[float]] = {}
    for i, (e, _) in enumerate(graded_pairs):
        by_k.setdefault(e.variant, []).append(ev[i])
    means = [float(np.mean(by_k[v])) for v in CTRL_SPEC.variants]  # 8, 4, 2, 1 bends (4 pairs each): 80.1, 21.1, 22.6, 6.2
    assert means[0] > 2 * max(means[1:3]) and means[3] < 0.5 * min(means[1:3]), means
    assert len({difficulty_bin(v) for v in ev.values()}) >= 3  # 2-4, 8-16 and >=16 nats on this block


def test_the_planners_margin_grows_with_the_evidence(graded_pairs) -> None:
    """The inverse planner decides every pair of the block, and its margin (unexpected minus expected surprise)
    follows the evidence: Spearman >= 0.9 (0.98 measured), the mean margin rises from the lower half to the upper."""
    from scipy.stats import spearmanr

    from bib.observers.inverse_planning import InversePlanner
    from bib.tasks.difficulty import pair_evidence

    planner = InversePlanner()
    ev, margin = [], []
    for e, u in graded_pairs:
        se, su = (float(planner.surprise(blind_episode(x, episode_secret(x))).max()) for x in (e, u))
        ev.append(pair_evidence(e, u))
        margin.append(su - se)
    assert min(margin) > 0
    assert spearmanr(ev, margin).statistic >= 0.9
    order = np.argsort(ev)
    half = len(ev) // 2
    assert np.mean(np.array(margin)[order[half:]]) > 2 * np.mean(np.array(margin)[order[:half]])


# ---------------------------------------------------------------- the path-adjacency control ("touch")


TOUCH_SPEC = dataclasses.replace(CTRL, variants=("at-goal+bends-4+touch", "at-goal+bends-2+touch", "at-goal+bends-1+touch"),
                                 difficulty=(0.4, 1.0, 2.0))
"""bib-ctrl's bends-K designs with the path-adjacency control; 6 pairs cover each (variant, bin) once."""


def _touched(e: Episode) -> int:
    """The cue, computed apart from bib.tasks.unobserved: familiarization path cells within a king move of a revealed wall."""
    walls = _hidden(e)
    cells = {tuple(c) for t in e.familiarization for c in t.path}
    return sum(1 for (x, y) in cells if any(abs(x - a) <= 1 and abs(y - b) <= 1 for a, b in walls))


@pytest.fixture(scope="module")
def touch_pairs() -> list[tuple[Episode, Episode]]:
    return [tuple(make_unit(CONDITION, i, 20211207, TOUCH_SPEC)) for i in range(TOUCH_SPEC.cycle // 2)]  # type: ignore[misc]


def test_touch_ties_the_path_adjacency_cue_on_every_pair(touch_pairs, graded_pairs) -> None:
    """Without the token the walks hug the hidden obstacle more than the other reveal (96.6% of bib-ctrl's 400 pairs);
    with it both reveals touch as many path cells on every pair, so the reader of the cue is at exactly 50%."""
    from bib.tasks.unobserved import n_bends, path_adjacency

    assert {n_bends(e.variant) for e, _ in touch_pairs} == {4, 2, 1}
    for e, u in touch_pairs:
        assert validate_episode(e) == validate_episode(u) == validate_pair(e, u) == []
        assert path_adjacency(e) == _touched(e) == _touched(u) == path_adjacency(u) > 0, e.variant
        hugs = list(FEATURES).index("path-hugs-reveal")  # the audit's reader of the cue
        assert episode_features(e)[hugs] == episode_features(u)[hugs] == _touched(e)
        assert _walks_llr(e, u) > 0  # the redrawn walks still favour the hidden obstacle
    plain = [_touched(e) > _touched(u) for e, u in graded_pairs]
    assert sum(plain) == len(plain) == 16, plain  # every pair of the same design without the token


@pytest.mark.parametrize("variants, fails", [
    (["at-goal"], True),
    (["at-goal+bends-2+touch", "at-goal+bends-1+touch"], True),
    (["at-goal+bends-2", "at-goal+bends-2+hug", "at-goal+bends-1", "at-goal+bends-1+hug"], False),
])
def test_the_audit_reads_the_cue_where_no_control_balances_it(tmp_path: Path, variants: list[str], fails: bool) -> None:
    """`bib audit`'s single-feature candidates that count how much the walks hug the revealed wall read the cue: on a set
    whose 8 walks all bend one is picked and decides the held-out pairs (FAIL); the touch control ties one count only,
    and another still decides (FAIL); with bib-ctrl's hug catch pairs every count is balanced and the family passes."""
    from bib.evaluation import find_episodes
    from bib.observers.audit import run_audit
    from bib.stimuli.build import build_spec
    from bib.stimuli.spec import parse_spec

    spec = parse_spec({"name": "hug", "seed": 11, "agent": {"policy": "boltzmann", "beta": [2.0, 10.0]},
                       "tasks": [{"id": CONDITION, "n": 32, "variants": variants}]})
    build_spec(spec, tmp_path / "set")
    result = run_audit(find_episodes(tmp_path / "set"), str(tmp_path / "set"), n_boot=10, progress=False, rebuild=False)
    cell = result.cells[CONDITION]["single-feature"]
    if fails:
        assert result.stumps[CONDITION].feature in HUGS and result.stumps[CONDITION].sign == -1
        assert cell.status == "FAIL" and cell.result.accuracy > 0.8, cell.result.accuracy
    else:
        assert result.passed, result.failures


def test_the_planner_still_decides_touch_pairs(touch_pairs) -> None:
    """The walks' efficiency still separates the reveals: the inverse planner finds every unexpected reveal more
    surprising (smallest margin 3.47 nats on these 6 pairs)."""
    from bib.observers.inverse_planning import InversePlanner

    planner = InversePlanner()
    for e, u in touch_pairs:
        se, su = (float(planner.surprise(blind_episode(x, episode_secret(x))).max()) for x in (e, u))
        assert su - se > 1.0, (e.variant, su - se)


def test_the_pair_rule_refuses_a_touch_pair_whose_cue_differs(graded_pairs) -> None:
    e, u = next(p for p in graded_pairs if _touched(p[0]) != _touched(p[1]) and "bends" in p[0].variant)
    e, u = (dataclasses.replace(x, variant=x.variant + "+touch") for x in (e, u))
    problems = [str(p) for p in validate_pair(e, u)]
    assert problems and f"touches {_touched(u)} familiarization path cells, the expected one {_touched(e)}" in problems[0]


def test_the_pair_rule_refuses_a_touch_pair_whose_walks_favour_the_other_reveal(touch_pairs, monkeypatch) -> None:
    """The generator keeps only touch (and at-goal) pairs whose walks favour the hidden obstacle; `bib validate` checks
    it too (a pair with the walks' evidence at or below 0 nats is refused, naming the number)."""
    import bib.tasks.unobserved as uc

    e, u = touch_pairs[0]
    assert validate_pair(e, u) == [] and uc.evidence(e, u) > 0
    monkeypatch.setattr(uc, "evidence", lambda a, b: -0.25)
    problems = [str(p) for p in validate_pair(e, u)]
    assert problems and "the familiarization walks favour the unexpected reveal (-0.25 nats" in problems[0]
    e, u = (dataclasses.replace(x, variant="at-goal") for x in (e, u))  # at the goal without a token too
    assert "the familiarization walks favour the unexpected reveal (-0.25 nats" in str(validate_pair(e, u)[0])


@pytest.mark.parametrize("variant", ["at-goal+touch", "touch", "empty+at-goal+bends-1+touch", "larger+bends-2+touch",
                                     "at-goal+bends-4+hug", "at-goal+hug", "empty+at-goal+bends-1+hug", "larger+bends-2+hug"])
def test_touch_and_hug_need_a_bends_token_and_a_same_shape_reveal(variant: str) -> None:
    """Both need non-bending trials to draw and a reveal of the hidden obstacle's shape; hug also fewer than 4 bends."""
    from bib.stimuli.spec import parse_spec

    data = {"name": "t", "seed": 1, "tasks": [{"id": CONDITION, "n": 2, "variants": [variant]}]}
    with pytest.raises(BibInputError) as info:
        parse_spec(data, "x.toml")
    assert f"has no variant {variant!r}" in str(info.value) and "\n" not in str(info.value)
    ok = ["at-goal+bends-2+touch", "at-goal+bends-4+touch", "at-goal+bends-2+hug", "at-goal+bends-1+hug", "bends-2+hug"]
    parse_spec({**data, "tasks": [{"id": CONDITION, "n": 2, "variants": ok}]}, "x.toml")


# ---------------------------------------------------------------- the path-adjacency catch pairs ("hug", bib-ctrl's design)


MIX_SPEC = dataclasses.replace(CTRL, variants=("at-goal+bends-2", "at-goal+bends-2+hug", "at-goal+bends-1", "at-goal+bends-1+hug"),
                               difficulty=(0.4, 1.0, 2.0))
"""bib-ctrl's options for the family: 2 or 1 bends, half the pairs hug catch pairs; 8 pairs cover each (variant, bin)."""


@pytest.fixture(scope="module")
def mix_pairs() -> list[tuple[Episode, Episode]]:
    return [tuple(make_unit(CONDITION, i, 20211207, MIX_SPEC)) for i in range(2 * MIX_SPEC.cycle)]  # type: ignore[misc]


def _counts(e: Episode) -> tuple[int, int, int, int]:
    """The four hugging counts, computed apart from bib.tasks.unobserved: distinct path cells within 1 and 2 king moves of
    a revealed wall, each walk's cells within 1 summed, the walks' direction changes within 1."""
    walls = _hidden(e)

    def near(c, k):
        return any(max(abs(c[0] - a), abs(c[1] - b)) <= k for a, b in walls)

    walks = [[tuple(c) for c in t.path] for t in e.familiarization]
    cells = {c for w in walks for c in w}
    turns = [b for w in walks for a, b, c in zip(w, w[1:], w[2:]) if (b[0] - a[0], b[1] - a[1]) != (c[0] - b[0], c[1] - b[1])]
    return (sum(near(c, 1) for c in cells), sum(sum(near(c, 1) for c in set(w)) for w in walks),
            sum(near(c, 2) for c in cells), sum(near(t, 1) for t in turns))


def test_hug_pairs_are_hugged_more_and_the_mix_balances_every_count(mix_pairs) -> None:
    """On a hug pair the walks hug the unexpected reveal more every way (the four counts, also as the audit's features); on
    its plain partner they hug the hidden obstacle more by most counts; over the mix each count reads near 50%."""
    from bib.tasks.unobserved import hugging

    assert {e.variant for e, _ in mix_pairs} == set(MIX_SPEC.variants)
    index = [list(FEATURES).index(n) for n in HUGS]
    right = np.zeros(4)
    for e, u in mix_pairs:
        assert validate_episode(e) == validate_episode(u) == validate_pair(e, u) == []
        ce, cu = _counts(e), _counts(u)
        assert hugging(e) == ce and hugging(u) == cu
        assert [episode_features(x)[index].tolist() for x in (e, u)] == [list(map(float, ce)), list(map(float, cu))]
        if e.variant.endswith("+hug"):
            assert all(b > a for a, b in zip(ce, cu)), (ce, cu)
            assert _walks_llr(e, u) > 0  # the redrawn walks still favour the hidden obstacle
        right += np.where(np.array(ce) > np.array(cu), 1.0, np.where(np.array(ce) == np.array(cu), 0.5, 0.0))
    share = right / len(mix_pairs)
    assert all(0.3 <= x <= 0.7 for x in share), share  # 32 pairs; 400 read 45.8-59.0% (baselines/agent/path_adjacency.json)


def test_the_planner_decides_hug_pairs(mix_pairs) -> None:
    from bib.observers.inverse_planning import InversePlanner

    planner = InversePlanner()
    for e, u in mix_pairs:
        if e.variant.endswith("+hug"):
            se, su = (float(planner.surprise(blind_episode(x, episode_secret(x))).max()) for x in (e, u))
            assert su > se, (e.variant, su - se)


def test_the_pair_rule_refuses_a_hug_pair_hugged_less(mix_pairs) -> None:
    e, u = next(p for p in mix_pairs if not p[0].variant.endswith("+hug") and _counts(p[0])[0] > _counts(p[1])[0])
    e, u = (dataclasses.replace(x, variant=x.variant + "+hug") for x in (e, u))
    problems = [str(p) for p in validate_pair(e, u)]
    assert problems and f"the walks hug the unexpected reveal {_counts(u)}" in problems[0] and "must be more each" in problems[0]
