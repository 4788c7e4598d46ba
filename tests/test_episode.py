"""Episode schema: round trips, parse errors naming the field, generic validation."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from bib.episode import Event, dumps, episode_from_dict, load_episode, loads, save_episode, validate
from bib.errors import BibInputError
from bib.tasks import make_unit


@pytest.fixture(scope="module")
def episode():
    return make_unit("single-object", 0, 11)[0]


def test_round_trip_is_exact(episode, tmp_path):
    text = save_episode(episode, tmp_path / "e.json")
    again = load_episode(tmp_path / "e.json")
    assert again == episode
    assert dumps(again) == text == (tmp_path / "e.json").read_text()
    d = json.loads(text)
    assert d["schema"] == "bib.episode/1" and len(d["trials"]) == 9
    assert [t["phase"] for t in d["trials"]] == ["familiarization"] * 8 + ["test"]
    assert d["trials"][0]["path"][0] == d["trials"][0]["agent"]["home"]


def test_save_is_atomic_on_failure(episode, tmp_path, monkeypatch):
    target = tmp_path / "e.json"
    target.write_text("old")

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        save_episode(episode, target)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["e.json"]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(schema="bib.episode/2"), "field 'schema': expected 'bib.episode/1', got 'bib.episode/2'"),
        (lambda d: d.pop("trials"), "field 'trials': missing"),
        (lambda d: d["trials"][2].update(path=[[1, 1], [1]]), "field 'trials[2].path[1]': expected a cell"),
        (lambda d: d["trials"][0]["objects"][0].update(color=[1, 2, 300]), "field 'trials[0].objects[0].color'"),
        (lambda d: d.update(outcome="maybe"), "field 'outcome': expected one of expected, unexpected, none"),
        (lambda d: d["grid"].update(width="ten"), "field 'grid.width': expected an integer"),
        (lambda d: d["trials"][1].update(phase="train"), "field 'trials[1].phase'"),
        (lambda d: d["trials"][1]["path"].append([40, 1]), "is outside the 10 x 10 grid"),
        (lambda d: d["trials"][3]["events"].append({"step": 1, "type": "jump"}), "field 'trials[3].events[0].type'"),
    ],
)
def test_parse_errors_name_file_and_field(episode, mutate, message):
    d = json.loads(dumps(episode))
    mutate(d)
    with pytest.raises(BibInputError) as err:
        episode_from_dict(d, "x.json")
    text = str(err.value)
    assert text.startswith("x.json: ") and message in text and "\n" not in text


def test_malformed_json_and_missing_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": ')
    with pytest.raises(BibInputError, match=r"bad.json: malformed JSON at line 1"):
        load_episode(bad)
    with pytest.raises(BibInputError, match="no such file"):
        load_episode(tmp_path / "missing.json")


def test_generated_episode_is_valid(episode):
    assert validate(episode) == []


def _with_trial(ep, k, **changes):
    trials = list(ep.trials)
    trials[k] = replace(trials[k], **changes)
    return replace(ep, trials=tuple(trials))


def test_path_through_wall_is_located(episode):
    trial = episode.trials[4]
    # Put a wall on the third cell of the path.
    blocked = trial.path[2]
    layout = replace(trial.layout, walls=trial.layout.walls | {blocked})
    broken = _with_trial(episode, 4, layout=layout)
    problems = validate(broken)
    assert problems and problems[0].trial == 4 and problems[0].step == 2 and problems[0].cell == blocked
    assert "crosses a wall or barrier" in str(problems[0])
    assert str(problems[0]).startswith(f"episode {episode.id}, trial 4, step 2, cell [{blocked[0]}, {blocked[1]}]")


def test_other_generic_rules(episode):
    t = episode.trials[1]
    jump = _with_trial(episode, 1, path=(t.path[0], (t.path[0][0] + 2, t.path[0][1])) + t.path[1:])
    assert "cells are not adjacent" in str(validate(jump)[0])
    short = _with_trial(episode, 1, path=t.path[:-1])
    assert "not on its goal 'A'" in str(validate(short)[0])
    wrong_start = _with_trial(episode, 1, path=t.path[1:])
    assert "not at the agent's home" in str(validate(wrong_start)[0])
    bogus_event = _with_trial(episode, 1, events=(Event(1, "unlock"),))
    assert "do not match what the path does" in str(validate(bogus_event)[0])
    unknown_goal = _with_trial(episode, 1, goal="Z")
    assert "names no object" in str(validate(unknown_goal)[0])
    no_test = replace(episode, trials=episode.trials[:-1])
    assert "exactly one test trial" in str(validate(no_test)[0])


def test_loads_rejects_top_level_list():
    with pytest.raises(BibInputError, match="top level"):
        loads("[]", "y.json")


def test_written_files_get_the_usual_mode(episode, tmp_path):
    import stat

    mask = os.umask(0)
    os.umask(mask)
    save_episode(episode, tmp_path / "e.json")
    assert stat.S_IMODE((tmp_path / "e.json").stat().st_mode) == 0o666 & ~mask
