"""The controlled set (issue 12): Boltzmann agents, label-flipping twins, catch pairs, spec options and their errors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from bib.cli import main
from bib.episode import trial_to_dict
from bib.errors import BibInputError
from bib.evaluation import pair_score
from bib.observers.heuristics import ClosestObjectObserver
from bib.stimuli.build import build, build_spec
from bib.stimuli.manifest import read_manifest
from bib.stimuli.spec import parse_spec
from bib.tasks import REGISTRY, make_unit
from bib.tasks.difficulty import excess_cost
from bib.tasks.options import AgentModel, TaskOptions
from bib.world.planning import path_cost

NOISY = AgentModel("boltzmann", (2.0, 10.0), 3.0)


def group_episodes(task: str, options: TaskOptions, groups: int, seed: int = 0) -> list:
    """All episodes of the first ``groups`` units of ``task`` under ``options``."""
    g = options.group_size
    return [ep for k in range(groups) for ep in make_unit(task, k * g, seed, options)]


def pairs(episodes) -> list[tuple]:
    by: dict[str, dict] = {}
    for ep in episodes:
        by.setdefault(ep.pair_id, {})[ep.outcome] = ep
    return [(p["expected"], p["unexpected"]) for p in by.values()]


def accuracy(episodes, surprise) -> float:
    """Mean pair score of a per-episode surprise function (ties 0.5)."""
    return float(np.mean([pair_score(surprise(e), surprise(u)) for e, u in pairs(episodes)]))


def hash_of_test(ep) -> float:
    """A familiarization-blind observer: any function of the test trial alone (here a hash)."""
    text = json.dumps(trial_to_dict(ep.test), sort_keys=True)
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 2**32


def cost_of_test(ep) -> float:
    return path_cost(ep.test.path)


def closest_object(ep) -> float:
    return float(ClosestObjectObserver().surprise(ep).max(initial=0.0))


def familiar_is_unsurprising(ep) -> float:
    """0 when the test path repeats a familiarization path, else 1."""
    return 0.0 if any(t.path == ep.test.path for t in ep.familiarization) else 1.0


# ---------------------------------------------------------------- Boltzmann agents


def test_boltzmann_episodes_record_beta_and_excess_and_respect_the_bound():
    opts = TaskOptions(agent=NOISY)
    eps = group_episodes("preference", opts, 6, seed=3)
    betas = {ep.pair_id: ep.beta for ep in eps}
    assert all(2.0 <= b <= 10.0 for b in betas.values()) and len(set(betas.values())) == 6
    noisy = 0
    for ep in eps:
        for t in ep.trials:
            assert t.excess_cost == pytest.approx(excess_cost(t), abs=1e-4)
            if t.phase == "familiarization":
                assert t.excess_cost <= 3.0 + 1e-9
            noisy += t.excess_cost > 0
    assert noisy > 0  # the agents do stray
    deterministic = group_episodes("preference", TaskOptions(variants=("catch",)), 3)
    assert all(ep.beta is None and all(t.excess_cost == 0 for t in ep.trials) for ep in deterministic)


def test_boltzmann_agent_prefers_cheap_moves_more_with_larger_beta():
    from bib.tasks.agents import BoltzmannAgent, rollout

    lay = make_unit("preference", 0, 1)[0].trials[0].layout
    mean_excess = []
    for beta in (1.0, 4.0, 16.0):
        rng = np.random.default_rng(0)
        runs = [rollout(BoltzmannAgent(["A"], beta, rng), lay)[0] for _ in range(200)]
        assert all(r[-1] == lay.object("A").cell for r in runs)
        best = path_cost(make_unit("preference", 0, 1)[0].trials[0].path)
        mean_excess.append(np.mean([path_cost(r) - best for r in runs]))
    assert mean_excess[0] > mean_excess[1] > mean_excess[2] >= 0


# ---------------------------------------------------------------- twins and catch pairs (preference)


@pytest.mark.parametrize("agent", [AgentModel(), NOISY])
def test_preference_twins_swap_labels_on_the_same_test_trials(agent):
    opts = TaskOptions(agent=agent, twins=True, variants=("", "catch"))
    eps = group_episodes("preference", opts, 4, seed=1)
    by = {e.pair_id: (e, u) for e, u in pairs(eps)}
    assert len(by) == 8
    for pid, (e, u) in by.items():
        te, tu = by[e.twin_id]
        assert te.twin_id == pid and (te.test, tu.test) == (u.test, e.test)
        assert {e.familiarization[0].goal, te.familiarization[0].goal} == {"A", "B"}
        # same layouts, other goal
        assert [t.layout for t in e.familiarization] == [t.layout for t in te.familiarization]
        base = e if "twin" not in e.variant else te
        assert base.familiarization[0].goal == "A" and base.test.goal == "A"


def test_catch_pairs_repeat_the_familiar_path_in_the_expected_outcome():
    opts = TaskOptions(twins=True, variants=("", "catch"))
    eps = group_episodes("preference", opts, 4, seed=2)
    for e, u in pairs(eps):
        familiar_e = any(t.path == e.test.path for t in e.familiarization)
        familiar_u = any(t.path == u.test.path for t in u.familiarization)
        if "catch" in e.variant:
            assert familiar_e and not familiar_u
            assert any(t.layout == e.test.layout for t in e.familiarization)
        else:
            assert familiar_u and not familiar_e


@pytest.mark.parametrize("observer", [hash_of_test, cost_of_test, closest_object])
def test_a_familiarization_blind_observer_scores_exactly_half_with_twins(observer):
    opts = TaskOptions(agent=NOISY, twins=True, variants=("", "catch"))
    eps = group_episodes("preference", opts, 6, seed=4)
    assert accuracy(eps, observer) == 0.5


def test_familiar_and_novel_detectors_sit_at_chance_with_catch_pairs():
    opts = TaskOptions(agent=NOISY, twins=True, variants=("", "catch"))
    eps = group_episodes("preference", opts, 8, seed=5)
    assert accuracy(eps, familiar_is_unsurprising) == 0.5
    assert accuracy(eps, lambda ep: -familiar_is_unsurprising(ep)) == 0.5


# ---------------------------------------------------------------- builds


SPEC = {
    "name": "ctrl-test", "seed": 9,
    "agent": {"policy": "boltzmann", "beta": [2.0, 10.0]},
    "tasks": [{"id": "preference", "n": 8, "twins": True, "variants": ["", "catch"]},
              {"id": "single-object", "n": 2}],
}


def test_controlled_build_is_identical_for_1_and_2_workers(tmp_path: Path):
    spec = parse_spec(SPEC, "test")
    a, b = tmp_path / "a", tmp_path / "b"
    build_spec(spec, a, workers=1)
    build_spec(spec, b, workers=2)
    ra, rb = read_manifest(a), read_manifest(b)
    assert ra == rb and len(ra) == 18
    assert [r["variant"] for r in ra[:8:2]] == ["", "twin", "catch", "catch+twin"]
    assert ra[0]["twin_id"] == "preference-000001" and ra[2]["twin_id"] == "preference-000000"
    assert all(bool(r["beta"]) == (r["task"] == "preference") for r in ra)
    for r in ra:
        assert (a / r["episode_path"]).read_bytes() == (b / r["episode_path"]).read_bytes()
    # resuming keeps every unit; other options rebuild them (the unit seeds change with the options)
    assert build_spec(spec, a, workers=1).kept == 6
    other = parse_spec({**SPEC, "agent": {"policy": "boltzmann", "beta": [3.0, 10.0]}}, "test")
    again = build_spec(other, a, workers=1)
    assert (again.kept, again.built) == (2, 4)  # the background task keeps the noise-free planner
    assert read_manifest(a) != ra


def test_limit_rounds_up_to_whole_groups(tmp_path: Path):
    opts = {"preference": TaskOptions(twins=True)}
    summary = build([("preference", 6)], 0, tmp_path, limit=3, options=opts)
    assert summary.episodes == 8


# ---------------------------------------------------------------- bad input


def _spec(**changes):
    data = json.loads(json.dumps(SPEC))
    for key, value in changes.items():
        if key.startswith("task_"):
            data["tasks"][0][key[5:]] = value
            data["tasks"] = data["tasks"][:1]
        elif key.startswith("agent_"):
            data["agent"][key[6:]] = value
        else:
            data[key] = value
    return data


@pytest.mark.parametrize("changes, field, words", [
    ({"agent_beta": [5.0, 2.0]}, "agent.beta", "inverted"),
    ({"agent_beta": [0.0, 2.0]}, "agent.beta", "> 0"),
    ({"agent_beta": [-1.0, 2.0]}, "agent.beta", "> 0"),
    ({"agent": {"policy": "boltzmann"}}, "agent.beta", "missing"),
    ({"agent": {"policy": "deterministic", "beta": [1.0, 2.0]}}, "agent.beta", "only the boltzmann policy"),
    ({"agent_policy": "softmax"}, "agent.policy", "unknown policy 'softmax'"),
    ({"agent_max_excess": 0}, "agent.max_excess", "greater than 0"),
    ({"task_id": "efficiency-path", "task_twins": True}, "tasks[0].twins", "efficiency-path has no label-flipping twin"),
    ({"task_id": "instrumental-blocking", "task_twins": True}, "tasks[0].twins", "no label-flipping twin"),
    ({"task_n": 7}, "tasks[0].n", "7 pairs cannot be split"),
    ({"task_variants": ["", "sideways"]}, "tasks[0].variants[1]", "no variant 'sideways'"),
    ({"task_difficulty": [0.4, 2.0]}, "tasks[0].difficulty", "preference is not graded"),
    ({"task_id": "single-object", "task_twins": True}, "tasks[0]", "not an evaluation condition"),
])
def test_bad_controlled_options_name_the_field(changes, field, words):
    with pytest.raises(BibInputError) as info:
        parse_spec(_spec(**changes), "x.toml")
    msg = str(info.value)
    assert msg.startswith(f"x.toml: field '{field}'") and words in msg and "\n" not in msg


def test_cli_refuses_an_inverted_beta_before_writing(tmp_path: Path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\n[agent]\npolicy = "boltzmann"\nbeta = [4.0, 1.0]\n'
                    '[[tasks]]\nid = "preference"\nn = 2\n', encoding="utf-8")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        main(["generate", "--spec", str(spec), "--out", str(out)])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "field 'agent.beta'" in err and "inverted" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_every_condition_declares_its_controls():
    twins = {k for k, v in REGISTRY.items() if v.controls.twins}
    assert "preference" in twins and "efficiency-path" not in twins and "instrumental-blocking" not in twins
