"""Issue 43: the inverse planner's cost model (bib.observers.cost_model) on the cost-reward family."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from bib.evaluation import evaluate_difficulty, pair_score
from bib.observers import make_observer
from bib.observers.cost_model import REWARDS, CostModel, applies, choice_log_probs, terrain_values
from bib.stimuli.sets import EpisodeRef
from bib.tasks import make_unit
from bib.tasks.common import empty_layout
from bib.tasks.cost_reward import OTHER, VALUED, decisive_gap, margin, pair_gap
from bib.tasks.options import TaskOptions
from bib.world.grid import Agent, GridObject
from bib.world.terrain import MUD_STAYS, forced_stays, terrain_path

AGENT = Agent("agent-0", "pentagon", (40, 90, 220), (1, 4))
MUD = frozenset((4, y) for y in range(1, 9))


def _wall_of_mud():
    return empty_layout(objects=(GridObject("A", "heart", (220, 40, 60), (8, 4)),), agents=(AGENT,), terrain=MUD)


def _twin_pairs(groups: int = 12, seed: int = 2) -> list[tuple]:
    eps = [ep for k in range(groups) for ep in make_unit("cost-reward", 2 * k, seed, TaskOptions(twins=True))]
    pairs: dict[str, dict] = {}
    for ep in eps:
        pairs.setdefault(ep.pair_id, {})[ep.outcome] = ep
    return [(p["expected"], p["unexpected"]) for p in pairs.values()]


def _accuracy(obs, pairs) -> float:
    return float(np.mean([pair_score(obs.surprise(e).max(), obs.surprise(u).max()) for e, u in pairs]))


def test_forced_stays_and_move_values_charge_the_mud():
    lay = _wall_of_mud()
    path = terrain_path(lay, (1, 4), (8, 4))
    enter = next(t for t in range(1, len(path)) if path[t] in MUD)
    want = np.zeros(len(path) - 1, dtype=bool)
    want[enter: enter + MUD_STAYS] = True  # steps enter+1 .. enter+MUD_STAYS repeat the mud cell
    assert np.array_equal(forced_stays(lay, path), want)
    assert not forced_stays(lay, [(1, 4), (1, 4), (2, 4)]).any()  # a stay off the mud is the agent's own
    stack = terrain_values(lay)[(8, 4)]
    # from (3, 4): 5 moves and one wade (2) = 7; on the mud at (4, 4): 4 moves, plus its own stays when moved onto
    assert stack[0, 4, 3] == pytest.approx(7.0) and stack[0, 4, 4] == pytest.approx(4.0 + 2.0)
    assert all(np.array_equal(stack[k], stack[0]) for k in range(4))


def test_choice_is_boltzmann_over_reward_minus_the_seen_cost():
    e = make_unit("cost-reward", 0, 777)[0]
    lay = e.test.layout
    ids = {o.id: (o.shape, o.color) for o in lay.objects}
    goals = (ids[VALUED], ids[OTHER])
    log_p = choice_log_probs(lay, goals, ids[VALUED], np.array([0.5, 4.0]))
    d = np.asarray(REWARDS)
    for k, beta in enumerate((0.5, 4.0)):  # P(A) = sigmoid(beta (d - margin)), the margin from the task module
        want = 1.0 / (1.0 + np.exp(-beta * (d - margin(lay))))
        assert np.allclose(np.exp(log_p[0, :, k]), want) and np.allclose(np.exp(log_p[1, :, k]), 1.0 - want)


def test_the_reward_posterior_sits_between_the_margins_paid_and_refused():
    """The value gap the choices imply: above every margin paid for A, below every margin at which it was refused."""
    model = CostModel(make_observer("inverse-planner"))
    for i in range(4):
        fam = make_unit("cost-reward", i, 777)[0].familiarization
        first, post = model.reward_posterior(fam)
        sign = 1.0 if first == next((o.shape, o.color) for o in fam[0].layout.objects if o.id == VALUED) else -1.0
        gap = sign * np.asarray(REWARDS)  # R(A) - R(B) on the grid
        paid = max(margin(t.layout) for t in fam if t.goal == VALUED)
        refused = min(margin(t.layout) for t in fam if t.goal == OTHER)
        inside = (gap > paid) & (gap < refused)
        assert post.sum() == pytest.approx(1.0) and post[inside].sum() > 0.6  # the prior gives it < 0.04
        assert inside[int(np.argmax(post))]


def test_decides_the_family_and_the_twins_swap_with_the_labels():
    """24 pairs (12 twin groups, seed 2): 100%; without the cost model 50% exactly (the A walk's stays in the mud
    read as noise, so the walk to A is the surprising one after either familiarization)."""
    pairs = _twin_pairs()
    assert len(pairs) == 24
    assert _accuracy(make_observer("inverse-planner"), pairs) == 1.0
    assert _accuracy(make_observer("inverse-planner", costs=False), pairs) == 0.5
    obs = make_observer("inverse-planner")
    by_test: dict = {}
    for e, u in pairs:  # a twin shows the same two test trials: the walk to A is unsurprising after one
        to_a = e if e.test.goal == VALUED else u
        by_test.setdefault(to_a.test, []).append(obs.surprise(to_a).max() < obs.surprise(u if to_a is e else e).max())
    assert len(by_test) == 12 and all(sorted(v) == [False, True] for v in by_test.values())


def test_legacy_pairs_are_all_decided_and_sequential_agrees():
    pairs = [tuple(make_unit("cost-reward", i, 777)[:2]) for i in range(12)]
    assert _accuracy(make_observer("inverse-planner"), pairs) == 1.0
    assert _accuracy(make_observer("inverse-planner", sequential=True), pairs) == 1.0
    e = pairs[0][0]
    s = make_observer("inverse-planner").surprise(e)
    assert s.shape == (e.test.n_steps,) and np.all(s[forced_stays(e.test.layout, e.test.path)] == 0.0)


def test_other_conditions_are_scored_as_without_the_cost_model():
    on, off = make_observer("inverse-planner"), make_observer("inverse-planner", costs=False)
    for cond in ("preference", "instrumental-blocking", "unobserved-constraints"):
        for ep in make_unit(cond, 0, 5)[:2]:
            assert not applies(ep)
            assert np.array_equal(on.surprise(ep), off.surprise(ep))
    assert applies(make_unit("cost-reward", 0, 5)[0])


def test_difficulty_is_the_decisive_gap_and_the_planners_confidence_rises_with_it():
    pairs = _twin_pairs()
    model = CostModel(make_observer("inverse-planner"))
    rows = []
    for e, u in pairs:
        assert e.difficulty == u.difficulty == round(pair_gap(e, u), 4)
        assert e.difficulty == round(decisive_gap(e.familiarization, e.test.layout), 4) and 0 <= e.difficulty <= 1 + 1e-9
        looks = {o.id: (o.shape, o.color) for o in e.test.layout.objects}
        rows.append((e.difficulty, model.predictive(e)[looks[e.test.goal]]))
    twins = {e.twin_id: e.difficulty for e, _ in pairs}
    assert any(twins[e.pair_id] != e.difficulty for e, _ in pairs)  # a twin's difficulty is its own familiarization's
    hard = [p for d, p in rows if d < 0.5]
    easy = [p for d, p in rows if d >= 0.5]
    assert (len(hard), len(easy)) == (7, 17) and min(p for _, p in rows) > 0.5
    assert np.mean(hard) < np.mean(easy)  # 0.83 and 0.89: P(the expected choice) rises with the gap
    refs = [EpisodeRef(ep.id, ep.pair_id, ep.condition, ep.outcome, Path("."), difficulty=ep.difficulty)
            for pair in pairs for ep in pair]
    obs = make_observer("inverse-planner")
    surprise = {ep.id: float(obs.surprise(ep).max()) for pair in pairs for ep in pair}
    by_bin = evaluate_difficulty(refs, surprise, measure="excess", n_boot=10)
    assert {k: (r.n_pairs, r.accuracy) for k, r in by_bin["cost-reward"].items()} == {"0-0.5": (7, 1.0), "0.5-1": (16, 1.0),
                                                                                 "1-1.5": (1, 1.0)}
    assert math.isclose(sum(r.n_pairs for r in by_bin["all"].values()), 24)


def _main(argv: list[str]) -> int:
    from bib.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    return int(info.value.code or 0)


def test_bib_evaluate_bins_the_family_by_its_difficulty(tmp_path, capsys):
    """`bib evaluate --difficulty excess` bins the manifest's difficulty column (cost-reward: the decisive gap);
    the default evidence curve has no cost-reward pair (its walks have no beta)."""
    assert _main(["generate", "--task", "cost-reward", "--n", "8", "--seed", "3", "--out", str(tmp_path / "set")]) == 0
    assert _main(["score", "inverse-planner", str(tmp_path / "set"), "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert _main(["evaluate", str(tmp_path / "set"), str(tmp_path / "run"), "--json", "--difficulty", "excess",
                  "--out", str(tmp_path / "eval")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["conditions"]["cost-reward"]["accuracy"] == 1.0 and doc["difficulty"]["measure"] == "excess"
    episodes = {p.stem: p for p in (tmp_path / "set" / "episodes").glob("*.json")}
    from bib.episode import load_episode

    eps = {k: load_episode(p) for k, p in episodes.items()}
    gaps = [pair_gap(eps[f"{pid}-expected"], eps[f"{pid}-unexpected"])
            for pid in sorted({k.rsplit("-", 1)[0] for k in eps})]
    want: dict[str, int] = {}
    for g in gaps:
        label = "0-0.5" if g < 0.5 else "0.5-1" if g < 1 else "1-1.5"
        want[label] = want.get(label, 0) + 1
    assert {k: v["n_pairs"] for k, v in doc["difficulty"]["groups"]["cost-reward"].items()} == want
    saved = json.loads((tmp_path / "eval" / "difficulty.json").read_text())
    assert saved["measure"] == "excess" and saved["groups"] == doc["difficulty"]["groups"]
    capsys.readouterr()
    assert _main(["evaluate", str(tmp_path / "set"), str(tmp_path / "run"), "--json"]) == 0
    assert "difficulty" not in json.loads(capsys.readouterr().out)  # no evidence: no curve
