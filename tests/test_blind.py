"""The blind view (issue 26): a model is handed only what a viewer of the videos knows.

Hand-written cheats (the label field, the id's text, the place in the chunk, the text size) are
scored through the library (`score`, `surprise_many`) on a small generated set of every condition;
through the blind view each sits at chance.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from bib.episode import Episode, dumps, load_episode, loads
from bib.evaluation import evaluate, find_episodes
from bib.observers.base import BaseObserver, surprise_many
from bib.stimuli.blind import GENERATOR, blind_episode, blind_text, file_secret, load_blind, opaque_id
from bib.tasks import conditions, make_unit

os.environ["BIB_NO_PROGRESS"] = "1"


@pytest.fixture(scope="module")
def small_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six pairs of every condition (bib-eval's generators), 108 episode files."""
    from bib.episode import save_episode

    root = tmp_path_factory.mktemp("blindset")
    for cond in conditions():
        for i in range(6):
            for ep in make_unit(cond, i, 7):
                save_episode(ep, root / f"{ep.id}.json", durable=False)
    return root


def test_blind_episode_drops_every_design_field(small_set: Path) -> None:
    for path in sorted(small_set.glob("*.json"))[:40]:
        ep = load_episode(path)
        view = load_blind(path, ep.id)
        assert view == blind_episode(ep, file_secret(path))  # deterministic
        assert (view.outcome, view.pair_id, view.twin_id, view.variant, view.difficulty, view.beta, view.seed) == \
            ("none", None, None, "", None, None, 0)
        assert view.generator == GENERATOR and view.condition == ep.condition and view.task == ep.task
        assert view.id == opaque_id(file_secret(path), ep.id) and len(view.id) == 17 and view.id[0] == "e"
        text = blind_text(view)
        assert loads(text) == view
        assert ep.id not in text and (ep.pair_id or "@@") not in text
        head = text.split('"trials"')[0]
        assert json.loads(head + '"trials": []}').keys() == {"schema", "id", "task", "condition", "grid", "trials"}
        assert "excess_cost" not in text
        # same layouts, paths and events; objects renamed consistently, listed in the new ids' order
        names: dict[str, str] = {}
        for t, v in zip(ep.trials, view.trials):
            assert (t.phase, t.path, t.events, t.layout.walls, t.layout.barriers, t.layout.key, t.layout.lock) == \
                (v.phase, v.path, v.events, v.layout.walls, v.layout.barriers, v.layout.key, v.layout.lock)
            assert v.excess_cost is None
            assert [o.id for o in v.layout.objects] == sorted(o.id for o in v.layout.objects)
            by_cell = {o.cell: o for o in t.layout.objects}
            for o in v.layout.objects:
                orig = by_cell[o.cell]
                assert (o.shape, o.color) == (orig.shape, orig.color)
                assert names.setdefault(orig.id, o.id) == o.id  # one id per object across the episode
                assert o.id != orig.id and len(o.id) == 5 and o.id[0] == "o"
            assert names.setdefault(t.layout.agent.id, v.layout.agent.id) == v.layout.agent.id
            end = v.path[-1]
            on = [o.id for o in v.layout.objects if o.cell == end]
            assert v.goal == (on[0] if on else ("key" if v.layout.key == end else None))


def test_another_secret_gives_other_ids(small_set: Path) -> None:
    ep = load_episode(next(iter(sorted(small_set.glob("*.json")))))
    a, b = blind_episode(ep, b"one"), blind_episode(ep, b"two")
    assert a.id != b.id
    assert {o.id for o in a.test.layout.objects} != {o.id for o in b.test.layout.objects}


class Cheat(BaseObserver):
    """Reads what a model must not: ``how`` is label, id, position or size."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.name = f"cheat-{how}"

    def surprise_many(self, episodes: Sequence[Episode]) -> list[np.ndarray]:
        out = []
        for i, ep in enumerate(episodes):
            value = {"label": float(ep.outcome == "unexpected"),
                     "id": float("unexpected" in ep.id),
                     "position": float(i % 2),
                     "size": float(len(dumps(ep)))}[self.how]
            out.append(np.full(ep.test.n_steps, value))
        return out


def accuracies(found, surprise: dict[str, float]) -> dict[str, float]:
    return {c: r.accuracy for c, r in evaluate(found.refs, surprise, n_boot=10).items()}


@pytest.mark.parametrize("how", ["label", "id", "position"])
def test_cheats_sit_at_chance_through_score(small_set: Path, tmp_path: Path, how: str) -> None:
    """On the open episodes the cheat is perfect; through `score` (the blind view) it reads nothing."""
    from bib.observers.scoring import _OBSERVERS, _observer_key, score

    found = find_episodes(small_set)
    eps = [load_episode(r.path) for r in found.refs]
    cheat = Cheat(how)
    open_scores = {ep.id: float(s.max()) for ep, s in zip(eps, cheat.surprise_many(eps))}
    assert set(accuracies(found, open_scores).values()) == {1.0}
    _OBSERVERS[_observer_key("cheat", None, {})] = cheat  # as if built by name
    summary = score("cheat", found, tmp_path / "r.csv", progress=False)
    acc = accuracies(found, summary.surprise)
    if how == "position":  # a shuffled order: near chance, not exactly
        assert 0.3 <= float(np.mean(list(acc.values()))) <= 0.7
    else:  # nothing to read: every pair ties
        assert set(acc.values()) == {0.5}
    blind = {ep.id: float(s.max()) for ep, s in zip(eps, surprise_many(cheat, eps))}
    acc = accuracies(found, blind)
    if how != "position":
        assert set(acc.values()) == {0.5}


def test_score_results_are_keyed_by_the_real_ids(small_set: Path, tmp_path: Path) -> None:
    from bib.observers.scoring import score

    found = find_episodes(small_set)
    summary = score("path-length", found, tmp_path / "r.csv", progress=False)
    assert set(summary.surprise) == found.ids()
    rows = (tmp_path / "r.csv").read_text().splitlines()[1:]
    assert {r.split(",")[0] for r in rows} == found.ids()
    again = score("path-length", found, tmp_path / "r2.csv", progress=False)
    assert (tmp_path / "r.csv").read_bytes() == (tmp_path / "r2.csv").read_bytes()
    assert json.dumps(summary.to_json()["conditions"]) == json.dumps(again.to_json()["conditions"])
