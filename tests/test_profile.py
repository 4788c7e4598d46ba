"""`bib profile`: built-in agents, the orderings that must hold, the output folder and bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bib.cli import main
from bib.profile.agents import AGENCY_GOALS, AGENTS, BIB_GOALS, BUILTIN, AgentSpec, Boltzmann, agent_rng
from bib.profile.instruments import (
    Checked,
    Job,
    Settings,
    act_episode,
    agency_job,
    base_pairs,
    battery_job,
    bib_job,
    trial_goal,
)
from bib.profile.result import Profile, mean_se
from bib.tasks import validate_episode
from bib.world.dynamics import AgentState

FEW = ("instrumental-no-barrier", "preference", "efficiency-path")


def bib_numbers(name: str, seeds=(0,), conds=FEW):
    rows = []
    for seed in seeds:
        out = bib_job(Job("bib", AgentSpec(name), seed, Settings(seeds=seeds, observers=(), conditions=conds)))
        rows += out["trials"]
    return rows


def battery(name: str, seed: int = 0, conds=FEW):
    out = battery_job(Job("self_reflection", AgentSpec(name), seed,
                          Settings(seeds=(seed,), conditions=conds, classic_steps=300)))
    mean = {k: float(np.mean([s for _, s, _ in out[k]])) for k in ("plain", "reality_check")}
    return mean, out


# ---------------------------------------------------------------- agents


@pytest.mark.parametrize("name", BUILTIN)
def test_every_builtin_agent_acts_legally_in_bib_tasks_and_agency_grids(name):
    from bib.agency.env import load_grid, run_rollouts

    for expected, _ in base_pairs(0, 1, ("instrumental-blocking", "inaccessible-goal")):
        agent = Checked(AgentSpec(name).make(BIB_GOALS, agent_rng(0, name)), name)
        ep = act_episode(expected, agent)
        assert validate_episode(ep) == [] and ep.condition == "actor" and ep.outcome == "none"
        assert [t.layout for t in ep.trials] == [t.layout for t in expected.trials]
    grid = load_grid("key-door", 0, 0)
    ros = run_rollouts([Checked(AgentSpec(name).make(AGENCY_GOALS, agent_rng(0, "g")), name)], grid)
    assert ros[0].n_steps >= 1 and set(ros[0].kinds) <= {"move", "invalid"}


def actor_trials(name: str, conds=FEW, seed: int = 0):
    from bib.profile.instruments import trial_stats

    out = []
    for expected, _ in base_pairs(seed, 1, conds):
        ep = act_episode(expected, Checked(AgentSpec(name).make(BIB_GOALS, agent_rng(seed, name)), name))
        out += [trial_stats(t) for t in ep.trials]
    return out


def test_rational_agents_reach_the_task_goal_on_an_optimal_path():
    rows = actor_trials("rational")
    assert all(r["reached"] and r["optimal"] for r in rows)


def test_boltzmann_draws_follow_beta():
    ep = base_pairs(0, 1, ("efficiency-path",))[0][0]
    lay = ep.trials[0].layout
    s = AgentState(lay.agent.home)
    goal = lay.goal_cell(trial_goal(ep.trials[0]))
    from bib.world.keylock import move_costs, optimal_moves

    _, moves = move_costs(lay, s, goal)
    actions, q = [a for a, _ in moves], -np.array([c for _, c in moves])
    best = set(optimal_moves(lay, s, goal))
    assert {a for a, v in zip(actions, q) if v == q.max()} == best
    for beta, lo in ((16.0, 0.99), (1.0, 0.0)):
        agent = Boltzmann(BIB_GOALS, beta, np.random.default_rng(1))
        share = np.mean([agent.act(lay, s) in best for _ in range(400)])
        p = np.exp(beta * (q - q.max()))
        p_best = p[[a in best for a in actions]].sum() / p.sum()
        assert share >= lo and abs(share - p_best) < 0.06
    from bib.tasks.agents import BoltzmannAgent, RationalAgent

    greedy = Boltzmann(BIB_GOALS, 1.0, np.random.default_rng(0)).with_options(greedy=True)
    assert isinstance(greedy, RationalAgent) and not isinstance(greedy, BoltzmannAgent)


def test_irrational_agent_detours_where_no_obstacle_requires_it():
    rows = actor_trials("irrational", conds=("efficiency-path", "preference"))
    assert all(r["reached"] for r in rows)
    assert np.mean([r["optimal"] for r in rows]) < 0.8


# ---------------------------------------------------------------- orderings


def test_boltzmann_beta_16_has_higher_meg_than_beta_1_on_the_same_tasks():
    hi = bib_numbers("rational-b16", conds=("efficiency-path",))
    lo = bib_numbers("rational-b1", conds=("efficiency-path",))
    assert [(r["episode"], r["trial"]) for r in hi] == [(r["episode"], r["trial"]) for r in lo]
    known_hi = np.mean([r["meg_known"] for r in hi])
    known_lo = np.mean([r["meg_known"] for r in lo])
    assert known_hi > known_lo + 2.0
    assert np.mean([r["meg_unknown"] for r in hi]) > np.mean([r["meg_unknown"] for r in lo])


def test_random_sits_near_zero_on_meg_and_self_reflection():
    rows = bib_numbers("random", conds=("preference",))
    rational = bib_numbers("rational", conds=("preference",))
    assert np.mean([r["meg_known"] for r in rows]) < 1.0 < np.mean([r["meg_known"] for r in rational])
    mean, _ = battery("random")
    assert abs(mean["plain"]) < 0.05 and abs(mean["reality_check"]) < 0.05


def test_the_reality_check_raises_the_learners_self_reflection():
    mean, out = battery("learner")
    assert mean["reality_check"] > mean["plain"] + 0.05
    classic = {k: float(np.mean([s for _, s, _ in out["classic"][k]])) for k in ("plain", "reality_check")}
    assert classic["reality_check"] > classic["plain"] > 0.1  # its integer face on V1's battery, as Table 1
    assert battery("rational")[1]["classic"] is None  # no adapter for an agent without history


def test_reward_blind_agents_sit_near_zero_and_their_reality_check_changes_nothing_overall():
    mean, out = battery("rational")
    assert abs(mean["plain"]) < 0.05 and abs(mean["plain"] - mean["reality_check"]) < 0.01
    # per environment the rules tell agents apart: a planner mirrors itself, its RC does not
    plain = dict((e, s) for e, s, _ in out["plain"])
    assert plain["MirrorWorld"] > 0.5 and plain["IgnoreDistractors"] > 0.8


def test_agency_metrics_order_rational_above_random():
    s = Settings(seeds=(0,), navigation_grids=6, key_grids=1, rollouts=2)
    good = agency_job(Job("agency", AgentSpec("rational"), 0, s))["grids"]
    bad = agency_job(Job("agency", AgentSpec("random"), 0, s))["grids"]
    assert np.mean([g["accuracy"] for g in good]) == 1.0 > np.mean([g["accuracy"] for g in bad])
    assert np.mean([g["meg"] for g in good]) > np.mean([g["meg"] for g in bad])


def test_mean_se_uses_sd_over_sqrt_n():
    assert mean_se([1.0, 2.0, 3.0]) == {"mean": 2.0, "se": 1.0 / math.sqrt(3), "n": 3}
    assert mean_se([None, float("nan")]) == {"mean": None, "se": None, "n": 0}
    assert mean_se([4.0]) == {"mean": 4.0, "se": None, "n": 1}  # one seed: no standard error, not 0.0


# ---------------------------------------------------------------- the command


def run_cli(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code, capsys.readouterr()


def small(out, *agents, extra=()):
    return ["profile", *agents, "--out", str(out), "--seeds", "1", "--condition", "efficiency-path",
            "--agency-grids", "2", *extra]


def test_profile_writes_json_markdown_figure_episodes_and_provenance(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    out = tmp_path / "p"
    with pytest.raises(SystemExit) as exc:
        main(small(out, "rational-b4"))
    assert exc.value.code in (0, None)
    text = capsys.readouterr().out
    assert text.startswith("# Profile of `rational-b4`")
    doc = json.loads((out / "profile.json").read_text())
    assert doc["schema"] == "bib.profile/1" and doc["agent"]["name"] == "rational-b4"
    assert doc["settings"]["conditions"] == ["efficiency-path"]
    assert set(doc) >= {"actor", "meg", "self_reflection", "agency", "surprise"}
    assert doc["self_reflection"]["plain"]["score"]["n"] == 1
    assert doc["self_reflection"]["plain"]["score"]["se"] is None  # one seed: no standard error (was 0.0)
    assert Profile.from_json(doc).to_json() == doc
    assert (out / "profile.png").stat().st_size > 10_000 and (out / "profile.svg").is_file()
    eps = sorted((out / "episodes").glob("*.json"))
    assert len(eps) == 1
    from bib.episode import load_episode

    assert all(validate_episode(load_episode(p)) == [] for p in eps)
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["argv"][:2] == ["bib", "profile"] and prov["job"]["agents"] == ["rational-b4"]
    timings = json.loads((out / "timings.json").read_text())
    assert set(timings["cpu_seconds"]["rational-b4"]) == {"actor", "meg", "surprise", "self_reflection", "agency"}
    assert doc["command"] == f"bib profile rational-b4 --seeds 1 --seed 0 --condition efficiency-path --agency-grids 2 --out {out}"
    # another agent (another job) is refused without --force, before any work
    code, cap = run_cli(small(out, "random"), capsys)
    assert code == 2 and "folder holds the output of `bib profile rational-b4" in cap.err and "--force" in cap.err
    assert json.loads((out / "profile.json").read_text())["agent"]["name"] == "rational-b4"


def test_several_agents_write_a_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    out = tmp_path / "t"
    with pytest.raises(SystemExit):
        main(small(out, "rational", "profile_agents:Stayer", extra=("--no-episodes", "--observer", "closest-object")))
    table = (out / "profiles.md").read_text()
    assert "| rational |" in table and "| profile_agents:Stayer |" in table
    doc = json.loads((out / "profiles.json").read_text())
    assert [a["agent"] for a in doc["agents"]] == ["rational", "profile_agents:Stayer"]
    assert (out / "profile_agents-Stayer" / "profile.md").is_file()
    assert (out / "rational" / "profile.json").is_file() and not (out / "rational" / "episodes").exists()
    assert (out / "profiles.png").is_file()


@pytest.mark.parametrize("agent,message,extra", [
    ("nosuchagent", "unknown agent 'nosuchagent'; known: rational", ()),
    ("no_such_module_xyz:Agent", "cannot import 'no_such_module_xyz'", ()),
    ("profile_agents:Missing", "has no attribute 'Missing'", ()),
    ("profile_agents:NoAct", "does not implement act(layout, state)", ()),
    ("profile_agents:BadInit", "constructing it failed (RuntimeError: missing weights)", ()),
    ("profile_agents:WallWalker", "returned the illegal move N at cell", ("--strict",)),
    ("profile_agents:NotAnAction", "returned 'north', not an", ()),
    ("profile_agents:Crashes", "raised ZeroDivisionError: no plan at cell", ()),
])
def test_bad_agents_are_one_line_exit_2_and_nothing_is_written(agent, message, extra, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    out = tmp_path / "bad"
    code, cap = run_cli(small(out, agent, extra=extra), capsys)
    assert code == 2
    err = cap.err.strip()
    assert err.startswith("bib: error: ") and message in err and "\n" not in err
    if "profile_agents:" in agent and "Bad" not in agent and "Act" not in agent and "Missing" not in agent:
        assert " at cell [" in err  # the state is named
    assert not out.exists() and not list(tmp_path.glob(".bad*"))


def north_moves(layout, cell, unlocked=False):
    """How far a walker going north gets before its first bump (independent of the profile's code)."""
    from bib.world.dynamics import move_legal

    k = 0
    while move_legal(layout, cell, 0, unlocked):
        cell, k = (cell[0], cell[1] - 1), k + 1
    return k


def test_an_illegal_move_is_a_bump_the_agent_stays_and_the_move_costs_a_step(tmp_path, capsys, monkeypatch):
    settings = Settings(seeds=(0,), observers=("closest-object",), conditions=FEW, navigation_grids=2, key_grids=1)
    out = bib_job(Job("bib", AgentSpec("profile_agents:WallWalker"), 0, settings))
    trials = [t for ep in out["episodes"] for t in ep.trials]
    assert len(out["trials"]) == len(trials) == 27
    for row, trial in zip(out["trials"], trials):
        k = north_moves(trial.layout, trial.layout.agent.home)
        assert row["steps"] == settings.max_moves and row["bumps"] == settings.max_moves - k
        assert trial.path[k + 1:] == (trial.path[k],) * (settings.max_moves - k)  # stays where it bumped
        assert not row["optimal"]
    assert all(validate_episode(ep) == [] for ep in out["episodes"])
    assert all(r["meg_known"] is not None for r in out["trials"])
    agency = agency_job(Job("agency", AgentSpec("profile_agents:WallWalker"), 0, settings))
    assert all(0 <= g["bumps"] <= 1 for g in agency["grids"]) and any(g["bumps"] > 0 for g in agency["grids"])
    # the Gymnasium environments follow the same rule: the agent stays, the step is paid and the episode goes on
    import gymnasium as gym

    import bib.envs  # noqa: F401 - registers the environments

    env = gym.make("bib/preference-v0", step_cost=0.5)
    env.reset(seed=0)
    rewards = [env.step(0)[1] for _ in range(12)]
    layout = env.unwrapped._trial.layout
    k = north_moves(layout, layout.agent.home)
    assert env.unwrapped._state.cell == (layout.agent.home[0], layout.agent.home[1] - k)
    assert rewards[k:] == [-0.5] * (12 - k)
    # and the summary: bumps per move, averaged over trials
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    folder = tmp_path / "w"
    with pytest.raises(SystemExit):
        main(small(folder, "profile_agents:WallWalker", extra=("--no-episodes", "--observer", "closest-object")))
    doc = json.loads((folder / "profile.json").read_text())
    rows = bib_job(Job("bib", AgentSpec("profile_agents:WallWalker"), 0,
                       Settings(seeds=(0,), observers=(), conditions=("efficiency-path",))))["trials"]
    assert doc["actor"]["bumps"]["mean"] == pytest.approx(np.mean([r["bumps"] / r["steps"] for r in rows]))
    assert doc["settings"]["strict"] is False and "| bumps (per move) |" in (folder / "profile.md").read_text()


def test_user_classes_get_goals_and_seed(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    agent = AgentSpec("profile_agents:Stayer").make(BIB_GOALS, agent_rng(0))
    assert agent.goals == BIB_GOALS and isinstance(agent.seed, int)
    out = tmp_path / "s"
    with pytest.raises(SystemExit):
        main(small(out, "profile_agents:Stayer", extra=("--no-episodes",)))
    doc = json.loads((out / "profile.json").read_text())
    assert doc["actor"]["steps"]["mean"] == 0.0 and doc["meg"]["known"]["mean"] == 0.0


def test_out_must_be_a_folder_and_other_folders_are_kept(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    code, cap = run_cli(small(f, "rational"), capsys)
    assert code == 2 and "exists and is a file" in cap.err
    d = tmp_path / "other"
    d.mkdir()
    (d / "keep.txt").write_text("mine")
    code, cap = run_cli(small(d, "rational"), capsys)
    assert code == 2 and "holds files not written by bib" in cap.err and (d / "keep.txt").read_text() == "mine"


def test_endpoint_agent_runs_through_the_agency_client(tmp_path, monkeypatch):
    from test_agency_endpoint import Server

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    with Server("oracle") as server:
        spec = AgentSpec("endpoint", endpoint=server.url, model="fake", options={"timeout": 5, "retries": 1})
        from bib.profile.agents import check_spec

        check_spec(spec)
        out = bib_job(Job("bib", spec, 0, Settings(seeds=(0,), observers=("closest-object",),
                                                    conditions=("instrumental-no-barrier",))))
        assert all(r["reached"] for r in out["trials"])  # the oracle reads the prompt and walks to G
        assert all(validate_episode(ep) == [] for ep in out["episodes"])
        assert server.requests > 10


def test_failing_endpoint_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    from test_agency_endpoint import Server

    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    with Server("http-500") as server:
        code, cap = run_cli(small(tmp_path / "e", "endpoint", extra=("--endpoint", server.url, "--model", "m",
                                                                      "--retries", "0", "--timeout", "5")), capsys)
    assert code == 2 and cap.err.startswith("bib: error: endpoint ") and "http-500" in cap.err
    assert not (tmp_path / "e").exists()
    code, cap = run_cli(small(tmp_path / "e", "endpoint"), capsys)
    assert code == 2 and "needs --endpoint URL and --model NAME" in cap.err


def test_agents_registry_lists_the_builtins():
    assert set(BUILTIN) == {"rational", "rational-b1", "rational-b4", "rational-b16", "instrumental", "irrational",
                            "random", "policy-net", "learner"}
    assert all(AGENTS[n].description for n in BUILTIN)


@pytest.mark.slow
def test_profile_is_the_same_for_any_worker_count_and_a_rerun_replaces_it(tmp_path, monkeypatch):
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    for w in (1, 2):
        with pytest.raises(SystemExit):
            main(small(tmp_path / f"w{w}", "rational-b4", extra=("--workers", str(w))))
    assert (tmp_path / "w1" / "profile.json").read_bytes() == (tmp_path / "w2" / "profile.json").read_bytes()
    before = (tmp_path / "w1" / "profile.json").read_bytes()
    with pytest.raises(SystemExit):
        main(small(tmp_path / "w1", "rational-b4", extra=("--workers", "2")))  # the same job: replaced
    assert (tmp_path / "w1" / "profile.json").read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "w1" / "episodes").iterdir()) == \
        sorted(p.name for p in (tmp_path / "w2" / "episodes").iterdir())
