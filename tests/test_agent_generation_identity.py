"""Issue 43's families generate the same bytes as before they were made cheaper (hB-speed), and the caches their
generators read are keyed on everything a value depends on.

The pins are the sha256 of :func:`bib.episode.dumps` (the generator's version normalised to ``X``) of episodes of
``unobserved-constraints`` (bib-ctrl's options, and the walk design's reveals), ``cost-reward`` (bib-ctrl's, twins)
and both background tasks, built by commit b589c2b, before the generators read cached tables in place of layouts.
A change to any draw, its order or a value written changes them: regenerate them only for a deliberate change of
the sets, and say so. The ``touch`` and ``hug`` designs' pins (``hug``: bib-ctrl's since the catch pairs were adopted)
were made when their coordinate search was written (``SAMPLES, PASSES = 6, 3``); the ``""`` design keeps bib-ctrl's
earlier designs pinned.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
from pathlib import Path

import numpy as np
import pytest

from bib.episode import dumps
from bib.stimuli.spec import load_spec
from bib.tasks import make_unit, task_ids
from bib.tasks import unobserved as uc
from bib.tasks.common import empty_layout, place
from bib.tasks.cost_reward import _margin, margin, trade_layout
from bib.tasks.efficiency import legal_path
from bib.tasks.options import LEGACY
from bib.world.grid import Agent, border_walls
from bib.world.keylock import optimal_cost
from bib.world.planning import TOL, cost_between
from bib.world.terrain import terrain_cost, terrain_cost_between

CTRL = load_spec(Path(__file__).resolve().parents[1] / "stimuli" / "bib-ctrl.toml")
OPTIONS = CTRL.options()
PLAIN = dataclasses.replace(OPTIONS[uc.CONDITION], variants=("at-goal", "at-goal+bends-4", "at-goal+bends-2", "at-goal+bends-1"))
"""bib-ctrl's unobserved-constraints designs before the path-adjacency catch pairs (``hug``) were adopted."""
TOUCH = dataclasses.replace(OPTIONS[uc.CONDITION], variants=("at-goal+bends-4+touch", "at-goal+bends-2+touch",
                                                             "at-goal+bends-1+touch"))
"""The path-adjacency tie (``touch``), opt-in."""
WALK = dataclasses.replace(OPTIONS[uc.CONDITION], variants=("", "empty", "larger", "larger+bends-2"))
"""The walk design's three reveals and one bends-K variant (bib-ctrl shows the test at the goal)."""

PINS = {
    "unobserved-constraints//0/unobserved-constraints-000000-expected": "b1792de8cde31fe050e0104b23da7044247c93397870beee83713bafe9a33d52",
    "unobserved-constraints//0/unobserved-constraints-000000-unexpected": "9a4ff6d862437caef38073a62d7b7ac51bbcc059f3085a7fd484593bd28d8c5f",
    "unobserved-constraints//1/unobserved-constraints-000001-expected": "85a5a1582fe989926ee313daf605e070737aa53c9f975e619b7849bac0ec12e0",
    "unobserved-constraints//1/unobserved-constraints-000001-unexpected": "e8145c42578412785ef8fa88c1afa933383cd776a6a5ad2d5e1a46f288146590",
    "unobserved-constraints//2/unobserved-constraints-000002-expected": "5e66b4ae8f0fe57766d127a93700cbcdaabbdb9102c2a68a282b120ec909ed26",
    "unobserved-constraints//2/unobserved-constraints-000002-unexpected": "ddacf2c4907ad51fec0e39af6b682c9a7e2b75ec9e98c789986aa1446840a04b",
    "unobserved-constraints//3/unobserved-constraints-000003-expected": "a88b271aea87b3ef9572ae3fcfc9553d36a56b421bd3d0f93049d01c803daa7c",
    "unobserved-constraints//3/unobserved-constraints-000003-unexpected": "6368b1760386985691233dc0ea6214ed4ae426a893684e529c92f9142499c290",
    "unobserved-constraints/walk/0/unobserved-constraints-000000-expected": "6cf5abeb1a76e81341a2dd8ccfe41af0ac7ef8bc757d47cf7200db7f8b4a4158",
    "unobserved-constraints/walk/0/unobserved-constraints-000000-unexpected": "e9dc0b1abef8c03ee63e83b8f5ca91d1f720accaf443583f9b8eedd7bc9fcae8",
    "unobserved-constraints/walk/1/unobserved-constraints-000001-expected": "77b39288d6215ed0fd25b6bc59a099885026c818d14bb037f83de7bd0c685476",
    "unobserved-constraints/walk/1/unobserved-constraints-000001-unexpected": "220d604289558bdc8e484aaff89221ae117a6bf216e67c8eec35c84cf4837372",
    "unobserved-constraints/walk/2/unobserved-constraints-000002-expected": "972a5896b355df314dc4864cc7742521daf487739ae8f5d0b6ff626fdfb0abb9",
    "unobserved-constraints/walk/2/unobserved-constraints-000002-unexpected": "2dcf46f2a975dc001f58586c35f8cab9d783a9b9923a002df46e70154e318b1c",
    "unobserved-constraints/walk/3/unobserved-constraints-000003-expected": "ea76f0655723647603bde2127f3e0dcc71a6ed202631a0cf9d28aca262d5e080",
    "unobserved-constraints/walk/3/unobserved-constraints-000003-unexpected": "607e753ef20b8a1033ac9baa8b33e0a9fa95b732c37b1bce88e452e7c0455f32",
    "unobserved-constraints/touch/0/unobserved-constraints-000000-expected": "a7126ad15249d08370a3173329d2514cc47152305bec9de8431b1a3c01634ea4",
    "unobserved-constraints/touch/0/unobserved-constraints-000000-unexpected": "10b85a57eeaad22e780799b70541be23e23262c5a4b680632c1207c3b0be355e",
    "unobserved-constraints/touch/1/unobserved-constraints-000001-expected": "931f41fe28904ae09b4d140f9642daea06276e9c0a969418e44b6f48af056e76",
    "unobserved-constraints/touch/1/unobserved-constraints-000001-unexpected": "2afd8df7e6f3f46f9127493e9756487de49097d04d5f4d0718bc798374a904d8",
    "unobserved-constraints/touch/2/unobserved-constraints-000002-expected": "d6886c0fd949ee1506f366ba40875e96307c768701e418a8f37f7697d795b10a",
    "unobserved-constraints/touch/2/unobserved-constraints-000002-unexpected": "af9da67086057cfa5718531ac6fe67a0748c98aa9415599eb7df79a605e46ca0",
    "unobserved-constraints/hug/0/unobserved-constraints-000000-expected": "97f0ca429d75d2c5304c0e9fae45d71917651e9c83675a39deba6ba68ddddbca",
    "unobserved-constraints/hug/0/unobserved-constraints-000000-unexpected": "b12597a159dd10139777ba401aca4e93cb07a411421ddb6103725159d422f7c0",
    "unobserved-constraints/hug/1/unobserved-constraints-000001-expected": "4928a766540b2615793159f681a95977e5f4ff81ca2210d3d60ad059cd0bfa68",
    "unobserved-constraints/hug/1/unobserved-constraints-000001-unexpected": "b3ca15792f774ae5506e27d0acae301947022dc643c8eb395417b8cb458f3022",
    "unobserved-constraints/hug/2/unobserved-constraints-000002-expected": "d54336203ae1f601fe0f3923201b7006b9ac9e11915e922bd4471dd5007a2ef9",
    "unobserved-constraints/hug/2/unobserved-constraints-000002-unexpected": "c8c01ce9565fa0ec14f9c411be09f41af9b0988eaf0059413b3ef47329a6924b",
    "unobserved-constraints/hug/3/unobserved-constraints-000003-expected": "0e505bfa34fbe24b5258f60746fb676fc93af71e28bde96efcead074235903df",
    "unobserved-constraints/hug/3/unobserved-constraints-000003-unexpected": "bd64e7cb1c58486ba245bf34080279d31f48edf145a1a8df36737d0cac0a4e7a",
    "cost-reward//0/cost-reward-000000-expected": "06d80ac32d419be2710688db8038d282b1e59fa3812dc2478840ad323ea8f5fe",
    "cost-reward//0/cost-reward-000000-unexpected": "dcae9339f04fab50bb7f1096d7af54ed9e9103e32ca55030dd46b270bf86bef3",
    "cost-reward//0/cost-reward-000001-expected": "e2f03dd0f133c47740bb53b8de2d9a7ff28ec4d57bb14e4cad4fb85dbf8004fd",
    "cost-reward//0/cost-reward-000001-unexpected": "f86c0258173b388108162c4dd4d5fcc27cfe6aaf5a7d46e1de74dff3e05f4502",
    "cost-reward//2/cost-reward-000002-expected": "6f7b7ac95b76fc74a31d8f1efac5119f4f52fdb9ca4d8adacbb8cd4c31f5859e",
    "cost-reward//2/cost-reward-000002-unexpected": "1ad73e5c0bc2452e33a8bf783cf11c9a43670df71d659c0234cdb21a285f5d48",
    "cost-reward//2/cost-reward-000003-expected": "bd845bb17f3639a38a7349fb42d864568de5f3dd810d3e4dfc138922c1dc52e4",
    "cost-reward//2/cost-reward-000003-unexpected": "89bab2fad9d3bbbcc267dfc8cfa9a118387df6a01500f1e939d52205fa2b5fcd",
    "unobserved-constraints-background//0/unobserved-constraints-background-000000": "3ee8c124b5dbb37bbd5bd5cd4d8dd91bfcdff78be89cf3ebf653989ec77f4bda",
    "unobserved-constraints-background//1/unobserved-constraints-background-000001": "8f53a91302e7697b974d67f0e8aca8ddbfb56a303da17f2199d5df3ee14fb458",
    "unobserved-constraints-background//2/unobserved-constraints-background-000002": "d02a1f0787fa0c23f1ac38bedfca3a0902030a906156fc0802ef2318c9e95e5c",
    "cost-reward-background//0/cost-reward-background-000000": "b6219b8bca697d4a7bf3db1712729d07d7da06ecab6005522ee254d85675d567",
    "cost-reward-background//1/cost-reward-background-000001": "f3261e97339408eaa8a288fad6a802ad560171a75c183874c0728a9ac158232d",
    "cost-reward-background//2/cost-reward-background-000002": "7f0ded899ef7d86b664855771f6bdc497dcac248ca42dc9bceacf0066b038720",
}


def _digest(ep) -> str:
    text = dumps(ep).replace(f'"version": "{ep.generator["version"]}"', '"version": "X"', 1)
    return hashlib.sha256(text.encode()).hexdigest()


(CR,) = task_ids("evaluation", "cost-reward")
(CR_BG,) = task_ids("background", "cost-reward")


@pytest.mark.parametrize("task, design, options, units", [
    (uc.CONDITION, "", PLAIN, range(4)),
    (uc.CONDITION, "touch", TOUCH, range(3)),
    (uc.CONDITION, "hug", OPTIONS[uc.CONDITION], range(4)),
    (uc.CONDITION, "walk", WALK, range(4)),
    (CR, "", OPTIONS[CR], range(0, 4, OPTIONS[CR].group_size)),
    (uc.BACKGROUND, "", LEGACY, range(3)),
    (CR_BG, "", LEGACY, range(3)),
])
def test_episodes_are_byte_identical_to_the_pinned_build(task, design, options, units):
    got = {f"{task}/{design}/{i}/{ep.id}": _digest(ep) for i in units for ep in make_unit(task, i, CTRL.seed, options)}
    want = {k: v for k, v in PINS.items() if k.startswith(f"{task}/{design}/")}
    assert got == want


def _scenes(n: int, seed: int = 5) -> list:
    rng = np.random.default_rng(seed)
    return [uc._Scene(rng) for _ in range(n)]


def test_a_scenes_cached_geometry_is_the_one_its_own_draws_give():
    """Scenes share a geometry by their draws: a key that missed one (the symmetry, the column) would hand a scene
    another's hidden segment; every field is recomputed here from the scene's own draws."""
    seen = set()
    for s in _scenes(3000):
        f = s.f
        assert s.hidden == frozenset(f((s.column, y)) for y in s.rows)
        assert s.occluder == uc._box(frozenset(f((x, y)) for x in s.columns for y in range(1, uc.GRID - 1)))
        for length in (s.length, s.length + 1):
            segs = [frozenset(f((x, y)) for y in range(y0, y0 + length)) for x in s.columns for y0 in range(1, uc.GRID - length)]
            assert s.geometry.segments(length) == segs
            assert s.geometry.apart(length) == [t for t in segs if t != s.hidden and not (t & s.hidden)]
        for obj in [(8, 1), (7, 5), (1, 8), (5, 5)]:
            for kind, goal in itertools.product(("", "larger"), (False, True)):
                length = s.length + (kind == "larger")
                brute = any(uc.placement(t, obj) == uc.placement(s.hidden, obj) and not (goal and uc._near(obj, t))
                            for t in s.geometry.segments(length) if not (t & s.hidden))
                assert s.geometry.fits(kind, goal, obj) == brute
        seen.add(id(s.geometry))
    assert len(seen) < 1200 < 3000  # shared: at most one per distinct draw


def test_the_bend_table_is_the_layouts_cost_difference_and_keyed_by_the_walls():
    """Each home's class in the table equals the bend optimal_cost gives the two layouts; two hidden segments that
    differ only in their cells never share a table (the same object, different classes)."""
    agent = Agent("agent-0", "circle", (1, 2, 3), (1, 1))
    scenes = _scenes(40, seed=11)
    differ = 0
    for s in scenes:
        for obj in [(8, 4), (7, 2), (6, 8)]:
            table = uc._bends(s.hidden, obj)
            for home in [(1, 1), (1, 4), (2, 6), (2, 8), (8, 8)]:
                seen = empty_layout(objects=(place(("square", (0, 0, 0)), "A", obj),),
                                    agents=(dataclasses.replace(agent, home=home),))
                bend = optimal_cost(uc.with_walls(seen, s.hidden), obj) - optimal_cost(seen, obj)
                want = (uc.BENT if bend >= uc.MIN_BEND else uc.STRAIGHT if bend <= TOL else 0) if np.isfinite(bend) else 0
                assert table[home[1] * uc.GRID + home[0]] == want
            differ += table != uc._bends(scenes[0].hidden, obj)
    assert differ > 0


def test_cost_between_is_optimal_cost_and_keyed_by_the_walls():
    lay = empty_layout(objects=(place(("square", (0, 0, 0)), "A", (8, 5)),), agents=(Agent("a", "circle", (1, 2, 3), (1, 5)),))
    wall = frozenset((4, y) for y in range(2, 9))
    costs = []
    for walls in (frozenset(), wall):
        walled = uc.with_walls(lay, walls)
        got = cost_between(10, 10, 8, walled.walls, (1, 5), (8, 5))
        assert got == optimal_cost(walled, (8, 5))
        costs.append(got)
    assert costs[0] == 7.0 and costs[1] > 7.0 + 1.0  # the wall lengthens the route: no shared field
    assert cost_between(10, 10, 8, wall, (-1, 5), (8, 5)) == float("inf")


def test_terrain_cost_between_is_terrain_cost_and_keyed_by_the_mud():
    agent = Agent("a", "circle", (1, 2, 3), (2, 2))
    looks = [("square", (0, 0, 0)), ("star", (9, 9, 9))]
    values = set()
    for a, b in [((4, 4), (7, 7)), ((7, 7), (4, 4)), ((5, 2), (2, 6))]:
        for both in (False, True):
            lay = trade_layout(agent, looks, a, b, both)
            for goal in (a, b):
                assert terrain_cost_between(10, 10, 8, border_walls(10, 10), lay.terrain, (2, 2), goal) == \
                    terrain_cost(lay, (2, 2), goal)
            assert _margin((2, 2), a, b, both) == margin(lay)
            values.add(_margin((2, 2), a, b, both))
    assert len(values) == 6  # mud around b too changes every margin: no shared field


def test_crossed_cells_decide_which_added_walls_keep_every_walk_legal():
    """An added wall set keeps every familiarization walk legal (legal_path) exactly when it avoids the cells the
    walks cross; random sets of 1-3 interior cells against the walks of generated episodes."""
    rng = np.random.default_rng(3)
    interior = [(x, y) for x in range(1, 9) for y in range(1, 9)]
    for i in range(3):
        fam = make_unit(uc.CONDITION, i, CTRL.seed, WALK)[0].familiarization
        crossed = uc._crossed(list(fam))
        hits = 0
        for _ in range(300):
            cells = frozenset(interior[int(k)] for k in rng.choice(len(interior), int(rng.integers(1, 4)), replace=False))
            legal = all(legal_path(uc.with_walls(t.layout, cells), t.path) for t in fam)
            assert legal == crossed.isdisjoint(cells)
            hits += not legal
        assert 0 < hits < 300


def test_a_key_less_replay_checks_every_move_as_the_dynamics_do():
    """events_of skips the key/lock bookkeeping of a layout without key, not the checks: a move into a wall or
    across a corner raises the dynamics' own error, a jump is rejected, a legal walk has no events."""
    from bib.tasks.common import events_of
    from bib.tasks.registry import LayoutRejected
    from bib.world.dynamics import AgentState, action_between, step

    lay = uc.with_walls(empty_layout(agents=(Agent("a", "circle", (1, 2, 3), (2, 2)),)), frozenset({(3, 3), (4, 2)}))
    assert events_of(lay, [(2, 2), (2, 3), (2, 4), (3, 4)]) == ()
    # into a wall; a diagonal past two walls; a diagonal past one (each second move is the illegal one)
    for path in ([(2, 2), (3, 2), (4, 2)], [(2, 2), (3, 2), (4, 3)], [(2, 4), (2, 3), (3, 2)]):
        with pytest.raises(ValueError) as got:
            events_of(lay, path)
        with pytest.raises(ValueError) as want:
            step(lay, AgentState(path[1]), action_between(path[1], path[2]))
        assert str(got.value) == str(want.value) and "illegal move" in str(got.value)
    with pytest.raises(LayoutRejected, match="path jumps"):
        events_of(lay, [(2, 2), (4, 4)])
