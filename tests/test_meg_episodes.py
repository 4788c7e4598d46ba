"""MEG of stimulus agents: the gridworld MDP of a layout, hand-built trials, generated efficiency/preference episodes, CLI."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from bib.cli import app
from bib.episode import Event, Trial, save_episode
from bib.errors import BibInputError
from bib.meg.episodes import episode_meg, trial_meg
from bib.world.dynamics import STAY, AgentState, move_legal, step
from bib.world.grid import Agent, GridObject, Layout, border_walls
from bib.world.mdp import layout_actions, layout_mdp

AGENT = Agent("agent-0", "pentagon", (40, 90, 220), (1, 3))


def open_layout(objects: tuple[GridObject, ...], inner: frozenset = frozenset()) -> Layout:
    return Layout(9, 7, walls=border_walls(9, 7) | inner, objects=objects, agents=(AGENT,))


def test_layout_mdp_moves_and_corner_cutting() -> None:
    lay = open_layout((), inner=frozenset({(3, 2)}))
    grid = layout_mdp(lay, (1, 1), horizon=3)
    T = grid.mdp.dense_transitions()
    assert grid.mdp.n_actions == 9 and grid.mdp.deterministic and grid.actions == tuple(range(9))
    assert len(grid.cells) == 7 * 5 - 1
    corner = grid.index[AgentState((1, 1))]
    moves = {a for a in range(9) if T[corner, a, corner] == 0}
    assert moves == {2, 3, 4}  # E, SE, S; N, W and the diagonals into walls stay put
    below = grid.index[AgentState((2, 3))]  # NE from (2, 3) would cut the corner of the wall at (3, 2)
    assert T[below, 1, below] == 1.0 and T[below, 0, grid.index[AgentState((2, 2))]] == 1.0
    assert T[corner, STAY, corner] == 1.0


def test_four_move_layout_has_its_own_actions() -> None:
    lay = replace(open_layout(()), moves=4)
    grid = layout_mdp(lay, (1, 1), horizon=3)
    assert layout_actions(lay) == grid.actions == (0, 2, 4, 6, STAY)  # N, E, S, W, stay
    T = grid.mdp.dense_transitions()
    s = grid.index[AgentState((3, 3))]
    went = [grid.cells[int(np.argmax(T[s, i]))] for i in range(5)]
    assert went == [(3, 2), (4, 3), (3, 4), (2, 3), (3, 3)]
    with pytest.raises(BibInputError, match=r"path\[1\]: \[2, 2\] is not one move from \[1, 1\]"):
        grid.trajectory([(1, 1), (2, 2)])  # a diagonal is no move of a 4-move layout


def test_path_as_trajectory_and_bad_paths() -> None:
    grid = layout_mdp(open_layout(()), (1, 1), horizon=4)
    states, actions = grid.trajectory([(1, 1), (2, 2), (3, 2)])
    assert actions.tolist() == [[3, 2, STAY, STAY]]
    assert [grid.cells[s] for s in states[0]] == [(1, 1), (2, 2), (3, 2), (3, 2), (3, 2)]
    with pytest.raises(BibInputError, match=r"path\[1\]: \[3, 3\] is not one move from \[1, 1\]"):
        grid.trajectory([(1, 1), (3, 3)])
    with pytest.raises(BibInputError, match=r"path\[0\]: cell \[0, 0\] is not the start"):
        grid.trajectory([(0, 0), (1, 1)])
    walled = layout_mdp(open_layout((), inner=frozenset({(2, 1)})), (1, 1), horizon=4)
    with pytest.raises(BibInputError, match=r"path\[1\]: the move from \[1, 1\] to \[2, 1\] is illegal"):
        walled.trajectory([(1, 1), (2, 1)])


def locked_room() -> Layout:
    """Object A at (6, 3) behind a barrier column x = 5 with the lock at (5, 3); the key at (2, 5)."""
    barriers = frozenset({(5, 1), (5, 2), (5, 4), (5, 5)})
    obj = GridObject("A", "heart", (220, 40, 60), (6, 3))
    return Layout(9, 7, walls=border_walls(9, 7), barriers=barriers, lock=(5, 3), key=(2, 5),
                  objects=(obj,), agents=(AGENT,))


def test_key_lock_mdp_follows_the_dynamics() -> None:
    lay = locked_room()
    grid = layout_mdp(lay, (1, 3), horizon=12, key_lock=True)
    assert grid.states[0] == AgentState((1, 3))
    # every state is reachable and every transition is dynamics.step (or staying put when illegal)
    for i, s in enumerate(grid.states):
        for j, a in enumerate(grid.actions):
            want = step(lay, s, a)[0] if a != STAY and move_legal(lay, s.cell, a, s.unlocked) else s
            assert grid.states[int(grid.successors[i, j])] == want
    modes = {(s.has_key, s.unlocked) for s in grid.states}
    assert modes == {(False, False), (True, False), (True, True)}
    assert {grid.states[i].unlocked for i in grid.at((6, 3))} == {True}  # A is only reached once unlocked
    assert grid.reach_utility((6, 3)).sum() == len(grid.at((6, 3)))
    # the instrumental path: key, then next to the lock (it opens), then A
    path = [(1, 3), (1, 4), (2, 5), (3, 4), (4, 3), (5, 3), (6, 3)]
    states, _ = grid.trajectory(path)
    got = [grid.states[s] for s in states[0][: len(path)]]
    assert [(s.has_key, s.unlocked) for s in got] == [(False, False)] * 2 + [(True, False)] * 2 + [(True, True)] * 3


def test_unlocking_trial_is_measured_on_its_real_dynamics() -> None:
    lay = locked_room()
    path = ((1, 3), (1, 4), (2, 5), (3, 4), (4, 3), (5, 3), (6, 3))
    row = trial_meg(Trial("familiarization", lay, path, events=(Event(2, "pickup-key"), Event(4, "unlock")), goal="A"))
    assert row["unlocked"] and row["key_lock"]
    # with the key/lock state the detour through the key is the only way to A: optimal, so beta is +inf
    assert row["beta"]["A"] == "inf" and row["meg"]["A"] > 5
    # the same moves on the layout with its barriers and lock gone (the old measure) look far less goal-directed
    open_lay = replace(lay, barriers=frozenset(), lock=None)
    no_key = trial_meg(Trial("familiarization", open_lay, path, goal="A"))
    assert not no_key["key_lock"] and no_key["meg"]["A"] < row["meg"]["A"] - 3


def straight(a: tuple[int, int], b: tuple[int, int]) -> list[tuple[int, int]]:
    return [(x, a[1]) for x in range(a[0], b[0] + 1)]


def test_shortest_path_scores_higher_than_a_needless_curve() -> None:
    obj = GridObject("A", "heart", (220, 40, 60), (6, 3))
    lay = open_layout((obj,))
    rational = Trial("familiarization", lay, tuple(straight((1, 3), (6, 3))), goal="A")
    curve = [(1, 3), (2, 2), (3, 1), (4, 1), (5, 2), (6, 3)]  # a curve with as many moves as the line
    detour = [(1, 3), (2, 4), (3, 5), (4, 5), (5, 5), (6, 5), (7, 4), (6, 3)]
    r = trial_meg(rational)
    c = trial_meg(Trial("familiarization", lay, tuple(curve), goal="A"))
    d = trial_meg(Trial("familiarization", lay, tuple(detour), goal="A"))
    assert r["beta"]["A"] == "inf" and 0 < r["meg"]["A"] <= r["upper_bound"]
    assert d["meg"]["A"] < r["meg"]["A"] - 2
    # A state utility counts moves, not their sqrt(2) lengths: a curve with as many moves is as optimal.
    assert c["meg"]["A"] == pytest.approx(r["meg"]["A"], abs=1e-9)
    assert r["unknown_objects"] >= r["meg"]["A"] - 1e-9


def test_goal_directed_towards_the_object_reached() -> None:
    a = GridObject("A", "heart", (220, 40, 60), (7, 1))
    b = GridObject("B", "star", (40, 200, 60), (7, 5))
    lay = open_layout((a, b))
    path = [(1, 3), (2, 3), (3, 2), (4, 1), (5, 1), (6, 1), (7, 1)]
    row = trial_meg(Trial("familiarization", lay, tuple(path), goal="A"))
    assert row["signed_meg"]["A"] > 3 and row["signed_meg"]["B"] < row["signed_meg"]["A"] - 3
    assert row["signed_meg"]["B"] <= 0  # moving away from B
    assert row["unknown_objects"] >= max(row["meg"].values()) - 1e-9


def test_generated_efficiency_and_preference_episodes() -> None:
    from bib.tasks import make_unit

    expected, unexpected = make_unit("efficiency-irrational", 0, 0)
    assert expected.outcome == "expected"  # irrational familiarization; unexpected = rational one

    def fam_mean(ep, obj: str) -> float:
        rows = [r for r in episode_meg(ep) if r["phase"] == "familiarization"]
        return float(np.mean([r["meg"][obj] for r in rows]))

    rational, irrational = fam_mean(unexpected, "A"), fam_mean(expected, "A")
    assert rational > 2 * irrational and rational - irrational > 5
    pref = make_unit("preference", 0, 0)[0]
    rows = [r for r in episode_meg(pref) if r["phase"] == "familiarization"]
    preferred = rows[0]["goal"]
    other = next(k for k in rows[0]["meg"] if k != preferred)
    assert np.mean([r["signed_meg"][preferred] for r in rows]) > np.mean([r["signed_meg"][other] for r in rows]) + 5


def test_cli_episodes(tmp_path) -> None:
    from bib.tasks import make_unit

    ep = make_unit("preference", 1, 0)[0]
    save_episode(ep, tmp_path / f"{ep.id}.json")
    runner = CliRunner()
    res = runner.invoke(app, ["meg", "episodes", str(tmp_path), "--json"], env={"BIB_NO_PROGRESS": "1"})
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["trials"]
    assert len(rows) == len(ep.trials) and rows[0]["episode"] == ep.id
    assert all(0 <= r["meg"]["A"] <= r["upper_bound"] + 1e-9 for r in rows)
    table = runner.invoke(app, ["meg", "episodes", str(tmp_path), "--workers", "2", "--out", str(tmp_path / "m")],
                          env={"BIB_NO_PROGRESS": "1"})
    assert table.exit_code == 0 and ep.id in table.output
    assert json.loads((tmp_path / "m" / "meg-episodes.json").read_text()) == {"trials": rows}
    assert (tmp_path / "m" / "meg-episodes.md").read_text().rstrip("\n") == table.output.rstrip("\n")
    assert (tmp_path / "m" / "provenance.json").exists()


def test_cli_cliffworld_json_and_bad_input(tmp_path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["meg", "cliffworld", "--horizon", "9", "--policy", "eps-greedy", "--epsilon", "0.3", "--json"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.output)["rows"][0]
    assert round(row["known"], 2) == 2.36 and row["unknown_tabular"] >= row["known"]
    bad = runner.invoke(app, ["meg", "cliffworld", "--policy", "greedy"])
    assert bad.exit_code != 0
    assert math.isfinite(row["beta"])


def test_trajectory_passes_give_the_numbers_of_the_whole_array_passes_bit_for_bit() -> None:
    """The profile's MEG speed-ups (indexing backups, one entry per step) change no bit: each is compared with
    the general path it replaces (matrix products, whole-array weights) on a wandering path in a key/lock layout."""
    from bib.meg.soft import (
        action_major,
        beta_objective_am,
        forward,
        single_entries,
        soft_value_iteration,
        trajectory_loglik_visits,
        weighted_loglik,
    )
    from bib.meg.trajectories import trajectory_weights
    from bib.tasks import make_unit

    trial = make_unit("instrumental-blocking", 0, 0)[0].trials[-1]
    lay, rng = trial.layout, np.random.default_rng(3)
    path = wandering_path(lay, 25, rng)
    grid = layout_mdp(lay, path[0], horizon=len(path), key_lock=True)
    mdp = grid.mdp
    matrix = mdp.with_horizon(mdp.horizon)
    matrix._succ = None  # the matrix product, as before
    v = rng.normal(size=(mdp.n_states, 3))
    assert np.array_equal(mdp.backup(v), matrix.backup(v)) and mdp._succ is not None
    W = trajectory_weights(mdp, *grid.trajectory(path))
    am = action_major(W)
    single = single_entries(am)
    assert single is not None and (single[0] >= 0).all() and single_entries(action_major(W + 0.1)) is None
    u = rng.normal(size=mdp.n_states)
    for beta in (0.0, 0.7, -3.0):
        fast, slow = beta_objective_am(mdp, u, beta, am, single), beta_objective_am(matrix, u, beta, am)
        for name in ("value", "d1", "d2", "soft_return"):
            assert np.array_equal(getattr(fast, name), getattr(slow, name)), (beta, name)
    value, visits = trajectory_loglik_visits(mdp, u, single)
    svi = soft_value_iteration(matrix, 1.0, u)
    assert value == weighted_loglik(svi.log_policy, W)
    assert np.array_equal(visits, forward(matrix, np.exp(svi.log_policy))[:-1].sum(axis=0))


def wandering_path(layout: Layout, moves: int, rng: np.random.Generator) -> list:
    state, path = AgentState(layout.agent.home), [layout.agent.home]
    for _ in range(moves):
        legal = [a for a in range(STAY) if move_legal(layout, state.cell, a, state.unlocked)]
        state = step(layout, state, legal[int(rng.integers(len(legal)))])[0]
        path.append(state.cell)
    return path


def test_beta_fits_in_lockstep_are_the_single_fits_bit_for_bit() -> None:
    """fit_betas / megs_from_weights / target_megs (every fit of many trials in one backward pass per round over
    their stacked MDPs) give each problem's fit_beta / meg_from_weights / target_meg result to the bit: MDPs of
    several sizes and two horizons (a key/lock one among them), wandering and optimal paths (the +inf limit),
    reach and random utilities (both signs of the slope), and weights of more than one entry per step (fitted
    alone) mixed in."""
    from bib.meg.known import fit_beta, fit_betas, meg_from_weights, megs_from_weights
    from bib.meg.trajectories import trajectory_weights
    from bib.meg.unknown import target_meg, target_megs
    from bib.tasks import make_unit

    rng = np.random.default_rng(7)
    problems, targets = [], []
    for task, i in (("instrumental-blocking", 0), ("preference", 1), ("efficiency-path", 2), ("multi-agent", 3)):
        for moves in (12, 25):
            lay = make_unit(task, i, 0)[0].trials[-1].layout
            path = wandering_path(lay, moves, rng)
            key_lock = lay.key is not None and lay.lock is not None
            grid = layout_mdp(lay, path[0], horizon=len(path), key_lock=key_lock)
            W = trajectory_weights(grid.mdp, *grid.trajectory(path))
            for u in [grid.reach_utility(o.cell) for o in lay.objects if grid.at(o.cell).size]:
                problems.append((grid.mdp, u, W, float(W.sum(axis=(0, 2)) @ u), None))
            problems.append((grid.mdp, rng.normal(size=grid.mdp.n_states), W, 0.0, None))
            labels = np.full(grid.mdp.n_states, -1)
            for k, o in enumerate(lay.objects):
                labels[grid.at(o.cell)] = k
            targets.append((grid.mdp, labels, W))
    line = Layout(9, 7, walls=border_walls(9, 7), objects=(GridObject("A", "square", (200, 30, 30), (5, 3)),),
                  agents=(Agent("agent-0", "pentagon", (40, 90, 220), (1, 3)),))
    straight = [(1, 3), (2, 3), (3, 3), (4, 3), (5, 3)]
    grid = layout_mdp(line, straight[0], horizon=len(straight))
    W = trajectory_weights(grid.mdp, *grid.trajectory(straight))
    u = grid.reach_utility((5, 3))
    problems.append((grid.mdp, u, W, float(W.sum(axis=(0, 2)) @ u), None))
    problems.append((grid.mdp, u, W + 0.01, 0.0, None))  # not one trajectory: fitted alone
    fits = fit_betas([(mdp, u, W, expected) for mdp, u, W, _, expected in problems])
    assert fits == [fit_beta(mdp, u, W, expected=expected) for mdp, u, W, _, expected in problems]
    assert math.isinf(fits[-2].beta) and {f.slope0 > 0 for f in fits} == {True, False}
    assert len({p[0].horizon for p in problems}) == 3
    assert megs_from_weights(problems) == [meg_from_weights(*p) for p in problems]
    for batched, (mdp, labels, W) in zip(target_megs(targets), targets):
        alone = target_meg(mdp, None, labels, weights=W)
        assert batched.meg == alone.meg and np.array_equal(batched.utility, alone.utility)
        assert batched.known == alone.known


def test_trials_meg_rows_are_trial_meg_rows() -> None:
    """trials_meg of several trials (their fits in lockstep) gives each trial's trial_meg row exactly."""
    from bib.meg.episodes import trials_meg
    from bib.tasks import make_unit

    trials = [t for task in ("instrumental-blocking", "preference") for t in make_unit(task, 0, 0)[0].trials[-3:]]
    objects = [None, ("A",), (), None, None, ("B",)]
    assert trials_meg(trials, objects) == [trial_meg(t, o) for t, o in zip(trials, objects)]
    assert trials_meg(trials) == [trial_meg(t) for t in trials]
