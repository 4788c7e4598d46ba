"""The controlled-set contract: design fields of bib.episode/1 and the manifest's design columns."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from bib.episode import dumps, loads
from bib.errors import BibInputError
from bib.stimuli.build import build, design_columns
from bib.stimuli.manifest import COLUMNS, LEGACY_COLUMNS, PRE_EVIDENCE_COLUMNS, read_manifest
from bib.tasks import make_unit
from bib.tasks.difficulty import excess_cost, key_detour, pair_difficulty, pair_evidence
from bib.world.planning import distance_field, path_cost


@pytest.fixture(scope="module")
def pair():
    return make_unit("efficiency-path", 0, 3)


def test_design_fields_round_trip_and_are_absent_when_unset(pair):
    e, u = pair
    plain = dumps(e)
    for key in ("variant", "twin_id", "difficulty", "beta", "excess_cost"):
        assert f'"{key}"' not in plain
    trials = tuple(replace(t, excess_cost=round(excess_cost(t), 4)) for t in e.trials)
    tagged = replace(e, trials=trials, variant="catch", twin_id="efficiency-path-000001", difficulty=0.4142, beta=3.5)
    text = dumps(tagged)
    d = json.loads(text)
    assert (d["variant"], d["twin_id"], d["difficulty"], d["beta"]) == ("catch", "efficiency-path-000001", 0.4142, 3.5)
    assert all("excess_cost" in t for t in d["trials"])
    again = loads(text)
    assert again == tagged and dumps(again) == text
    assert loads(plain) == e


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(beta=0), "field 'beta': expected a finite number > 0"),
    (lambda d: d.update(beta="high"), "field 'beta': expected an integer or a number"),
    (lambda d: d.update(difficulty=float("nan")), "field 'difficulty': expected a finite number"),
    (lambda d: d["trials"][1].update(excess_cost=-1), "field 'trials[1].excess_cost': expected a finite number >= 0"),
    (lambda d: d.update(variant=3), "field 'variant': expected a string"),
])
def test_bad_design_fields_name_the_field(pair, mutate, message):
    d = json.loads(dumps(pair[0]))
    mutate(d)
    with pytest.raises(BibInputError, match=re.escape(message)):
        loads(json.dumps(d), "x.json")


def test_path_difficulty_is_the_familiar_paths_excess_over_the_straight_path(pair):
    e, u = pair
    t = u.test
    straight = float(distance_field(t.layout, t.path[-1])[t.path[0][1], t.path[0][0]])
    assert pair_difficulty(e, u) == round(path_cost(t.path) - straight, 4) > 0
    assert excess_cost(e.test) == 0


def test_key_detour_of_a_key_on_the_way_is_zero_and_grows_off_it():
    e, u = make_unit("instrumental-no-barrier", 0, 5)
    lay = u.test.layout
    home, obj = lay.agent.home, lay.object("A").cell
    to = distance_field(lay, obj)
    # independent computation: key cell -> home cost + key -> object cost - home -> object cost
    want = float(distance_field(lay, lay.key)[home[1], home[0]] + to[lay.key[1], lay.key[0]] - to[home[1], home[0]])
    assert key_detour(u.test) == pytest.approx(want) and want > 0
    on_path = e.test.path[len(e.test.path) // 2]
    assert key_detour(replace(u.test, layout=replace(lay, key=on_path))) == pytest.approx(0)


def test_manifest_has_design_columns_and_legacy_manifests_still_read(tmp_path: Path):
    build([("efficiency-time", 2), ("preference", 1), ("single-object", 1)], 0, tmp_path)
    rows = read_manifest(tmp_path)
    assert list(rows[0]) == COLUMNS
    by_id = {r["episode_id"]: r for r in rows}
    eps = make_unit("efficiency-time", 1, 0)
    want = f"{pair_difficulty(*eps):.4f}"
    assert by_id["efficiency-time-000001-expected"]["difficulty"] == by_id["efficiency-time-000001-unexpected"]["difficulty"] == want
    assert {r["difficulty"] for r in rows if r["task"] in ("preference", "single-object")} == {""}
    assert {(r["variant"], r["twin_id"], r["beta"]) for r in rows} == {("", "", "")}
    # a manifest written before the design columns existed
    with open(tmp_path / "manifest.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=LEGACY_COLUMNS, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    old = read_manifest(tmp_path)
    assert [list(r) for r in old] == [COLUMNS] * len(rows)
    assert [r["episode_id"] for r in old] == [r["episode_id"] for r in rows]
    assert {r["difficulty"] for r in old} == {""}
    assert read_manifest(tmp_path, strict=False) == []  # resuming rebuilds a legacy set
    # a manifest written before the evidence column existed reads with evidence ""
    with open(tmp_path / "manifest.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=PRE_EVIDENCE_COLUMNS, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    old = read_manifest(tmp_path)
    assert [list(r) for r in old] == [COLUMNS] * len(rows) and {r["evidence"] for r in old} == {""}
    assert [r["difficulty"] for r in old] == [r["difficulty"] for r in rows]
    assert read_manifest(tmp_path, strict=False) == []


def test_design_columns_prefer_what_the_episodes_record(pair):
    e, u = pair
    e2, u2 = (replace(x, difficulty=0.4142, beta=2.0, variant="catch", twin_id="t") for x in pair)
    cols = design_columns([e2, u2])
    assert cols[e2.id] == {"variant": "catch", "twin_id": "t", "difficulty": "0.4142", "beta": "2.0000",
                           "evidence": f"{pair_evidence(e2, u2):.4f}"}
    assert design_columns([e, u])[u.id]["difficulty"] == f"{pair_difficulty(e, u):.4f}"
    assert design_columns([e, u])[u.id]["evidence"] == ""  # the noise-free planner has no beta
