"""Episode loading: trials read before are remembered by their text, with the same episodes and the same errors."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import bib.episode as episode_module
from bib.episode import dumps, episode_from_dict, loads, validate
from bib.errors import BibInputError
from bib.tasks import make_unit, task_ids


def _canonical(d):
    """``d`` laid out as :func:`bib.episode.dumps` lays out an episode (one trial per line)."""
    d = dict(d)
    trials = d.pop("trials")
    head = json.dumps(d, separators=(", ", ": "))[:-1]
    body = ",\n  ".join(json.dumps(t, separators=(",", ":")) for t in trials)
    return f'{head}, "trials": [\n  {body}\n]}}\n'


def _error(fn, *args):
    with pytest.raises(BibInputError) as err:
        fn(*args)
    return str(err.value)


@pytest.fixture(autouse=True)
def forget_trials():
    episode_module._TRIAL_TEXTS.clear()
    yield
    episode_module._TRIAL_TEXTS.clear()


@pytest.fixture(scope="module")
def episode():
    return make_unit("single-object", 0, 11)[0]


def test_every_task_reads_back_the_same_episodes_cold_and_remembered():
    for task in task_ids():
        for ep in make_unit(task, 0, 5):
            text = dumps(ep)
            assert _canonical(json.loads(text)) == text
            whole = episode_from_dict(json.loads(text))
            assert loads(text) == whole == ep
            assert loads(text) == ep  # every trial remembered
            assert loads(json.dumps(json.loads(text), indent=1)) == ep  # another layout: read whole
    assert episode_module._TRIAL_TEXTS


def test_a_pair_shares_its_familiarization_trials():
    pair = next(unit for task in task_ids() if len(unit := make_unit(task, 0, 5)) == 2)
    a, b = loads(dumps(pair[0])), loads(dumps(pair[1]))
    shared = [i for i, (s, t) in enumerate(zip(a.trials, b.trials)) if s == t]
    assert shared and all(a.trials[i] is b.trials[i] for i in shared)


MUTATIONS = [
    lambda d: d.update(schema="bib.episode/2"),
    lambda d: d["trials"][2].update(path=[[1, 1], [1]]),
    lambda d: d["trials"][2]["path"][1].__setitem__(0, True),
    lambda d: d["trials"][2]["path"][1].__setitem__(0, 1.0),
    lambda d: d["trials"][0]["objects"][0].update(color=[1, 2, 300]),
    lambda d: d["grid"].update(width="ten"),
    lambda d: d["grid"].update(width=4),  # the same trial texts on a smaller grid: cells outside
    lambda d: d["grid"].update(width=True),
    lambda d: d["trials"][1].update(phase="train"),
    lambda d: d["trials"][1]["path"].append([40, 1]),
    lambda d: d["trials"][3]["events"].append({"step": 1, "type": "jump"}),
    lambda d: d["trials"].__setitem__(4, [1, 2]),
    lambda d: d["trials"].clear(),
    lambda d: d["trials"][5].update(excess_cost=float("nan")),
]


@pytest.mark.parametrize("mutate", MUTATIONS)
@pytest.mark.parametrize("remembered", [False, True])
def test_errors_are_those_of_reading_the_whole_text(episode, mutate, remembered):
    if remembered:
        loads(dumps(episode))
    d = json.loads(dumps(episode))
    mutate(d)
    text = _canonical(d)
    want = _error(episode_from_dict, json.loads(text), "x.json")
    assert _error(loads, text, "x.json") == want
    assert _error(loads, text, "x.json") == want  # and once more, after that attempt


def test_malformed_trial_text_reports_the_whole_text_position(episode):
    lines = dumps(episode).split("\n")
    lines[4] = lines[4].replace('"walls":', '"walls"', 1)
    text = "\n".join(lines)
    with pytest.raises(json.JSONDecodeError) as exc:
        json.loads(text)
    want = f"x.json: malformed JSON at line {exc.value.lineno} column {exc.value.colno}: {exc.value.msg}"
    loads(dumps(episode))  # its other trials remembered
    assert _error(loads, text, "x.json") == want


def test_heads_that_only_look_like_the_layout_are_read_whole(episode):
    d = json.loads(dumps(episode))
    d["generator"]["version"] = 'x", "trials": [\n  '  # the marker inside a string
    text = _canonical(d)
    assert loads(text) == episode_from_dict(json.loads(text))
    lines = dumps(episode).split("\n")
    extra = dumps(episode).replace('"trials": [', '"trials": [], "more": [', 1)  # trials not the last key
    assert _error(loads, extra, "x.json") == _error(episode_from_dict, json.loads(extra), "x.json")
    assert loads("\n".join(lines)) == episode


def test_remembered_trial_checks_name_each_episode(episode):
    trial = episode.trials[4]
    layout = replace(trial.layout, walls=trial.layout.walls | {trial.path[2]})
    trials = list(episode.trials)
    trials[4] = replace(trial, layout=layout)
    first, second = replace(episode, trials=tuple(trials)), replace(episode, id="other", trials=tuple(trials))
    for ep in (first, second, first):
        problems = validate(ep)
        assert str(problems[0]).startswith(f"episode {ep.id}, trial 4, step 2, cell ")
        assert "crosses a wall or barrier" in str(problems[0])
