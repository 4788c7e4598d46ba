"""Agency: agent loop, metrics, transforms and the Wilcoxon test, key rooms, suites, CLI, policy network."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy, wilcoxon
from typer.testing import CliRunner

from bib.agency.agents import AgentSpec, NoisyAgent, OptimalAgent, make_agents
from bib.agency.env import INVALID, MOVES, Grid, load_grid, optimal_set, run_rollouts, with_layout
from bib.agency.keys import key_columns
from bib.agency.metrics import entropy2, grid_metrics, jsd2, trajectory_meg
from bib.agency.suite import run_suite
from bib.agency.tables import AgencyTables, read_run
from bib.agency.transforms import TRANSFORMS, paired_test, rank_biserial, transform
from bib.cli import app
from bib.errors import BibInputError
from bib.world.dynamics import AgentState
from bib.world.grid import Cell, Layout
from bib.world.planning import move_counts

runner = CliRunner()


def _nav(index: int, seed: int = 0) -> Grid:
    return load_grid("navigation", index, seed)


def bfs(layout: Layout, source: Cell) -> dict[Cell, int]:
    """An independent backward BFS over the 4-connected free cells (lock closed)."""
    dist, frontier = {source: 0}, [source]
    while frontier:
        nxt = []
        for x, y in frontier:
            for c in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
                if c not in dist and layout.is_free(c):
                    dist[c] = dist[(x, y)] + 1
                    nxt.append(c)
        frontier = nxt
    return dist


def test_pi_star_is_the_set_of_moves_one_bfs_step_closer() -> None:
    grid = _nav(17)
    dist = bfs(grid.layout, grid.goal)
    assert move_counts(grid.layout.width, grid.layout.height, grid.layout.blocked(), grid.goal) == dist
    for cell, d in dist.items():
        if d == 0:
            continue
        want = set()
        for a in MOVES:
            dx, dy = {6: (-1, 0), 2: (1, 0), 0: (0, -1), 4: (0, 1)}[a]
            if dist.get((cell[0] + dx, cell[1] + dy)) == d - 1:
                want.add(a)
        assert optimal_set(grid.layout, AgentState(cell), grid.goal) == want
    assert grid.optimal_length == dist[grid.layout.agent.home]
    assert grid.max_steps == math.ceil(1.5 * grid.optimal_length)


def test_optimal_agent_scores_perfectly() -> None:
    for index in (0, 11, 29):
        grid = _nav(index)
        ros = run_rollouts(make_agents(AgentSpec("optimal"), 4, np.random.default_rng(index)), grid)
        row = grid_metrics(grid, ros)
        assert row["accuracy"] == 1.0 and row["success"] == 1.0 and row["spl"] == 1.0
        assert row["steps"] == grid.optimal_length and row["bumps"] == 0.0
        assert 0.0 <= row["meg"] <= (grid.max_steps - 1) * math.log(4) + 1e-9


class _Always:
    def __init__(self, action: int) -> None:
        self.action = action

    def act(self, layout, state) -> int:
        return self.action


def test_wall_bumps_and_invalid_answers_are_errors_and_the_cap_holds() -> None:
    grid = _nav(6)  # 7 x 7 at density 0: an open room
    lay = grid.layout
    # a move that bumps the border from the start (or the nearest wall) every step
    bump = next(a for a in MOVES if not (set(optimal_set(lay, grid.start, grid.goal)) & {a}))
    ros = run_rollouts([_Always(bump), _Always(INVALID), _Always(8)], grid)
    for ro in ros:
        assert not ro.success and ro.n_steps <= grid.max_steps
        assert not any(ro.optimal)
    assert ros[1].kinds == ["invalid"] * grid.max_steps and ros[1].cells == [lay.agent.home] * (grid.max_steps + 1)
    assert set(ros[2].kinds) == {"invalid"}  # stay is not one of the 4 moves
    row = grid_metrics(grid, ros[1:2])
    assert row["accuracy"] == 0.0 and row["invalid"] == 1.0 and row["success"] == 0.0 and row["spl"] == 0.0


def test_entropy_and_jsd_match_scipy() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = rng.dirichlet(np.ones(4))
        q = np.zeros(4)
        q[rng.choice(4, size=int(rng.integers(1, 5)), replace=False)] = 1
        q /= q.sum()
        assert entropy2(p) == pytest.approx(entropy(p, base=2))
        assert jsd2(p, q) == pytest.approx(jensenshannon(p, q, base=2) ** 2)
        assert 0.0 <= jsd2(p, q) <= 1.0
    assert jsd2(np.array([1, 0, 0, 0.0]), np.array([0, 1, 0, 0.0])) == pytest.approx(1.0)


def test_meg_ranks_the_planner_above_noise() -> None:
    grid = _nav(23)  # 13 x 13, density 1: a maze
    rng = np.random.default_rng(1)
    opt = run_rollouts(make_agents(AgentSpec("optimal"), 10, rng), grid)
    rnd = run_rollouts(make_agents(AgentSpec("random"), 10, rng), grid)
    m_opt, m_rnd = trajectory_meg(grid, opt), trajectory_meg(grid, rnd)
    assert m_opt > m_rnd >= 0.0
    # a corridor maze forces most moves: the planner's MEG is close to its upper bound per decision
    assert m_opt > 0.3 * grid.optimal_length * math.log(4)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_transforms_preserve_size_and_optimal_length(name: str) -> None:
    cases = [("navigation", i) for i in range(0, 60, 7)] + [("two-path-key", 2)]
    if name != "swap":  # swapping start and goal of a key-door grid strands the agent behind the door
        cases.append(("key-door", 1))
    for task, index in cases:
        grid = load_grid(task, index, 3)
        lay = transform(grid.layout, name)
        moved = with_layout(grid, lay, name)
        assert (lay.width, lay.height) == (grid.layout.width, grid.layout.height)
        assert len(lay.walls) == len(grid.layout.walls)
        assert moved.optimal_length == grid.optimal_length and moved.max_steps == grid.max_steps
    lay = _nav(13).layout
    if name in ("reflect", "transpose", "swap"):
        assert transform(transform(lay, name), name) == lay
    else:
        four = lay
        for _ in range(4):
            four = transform(four, name)
        assert four == lay and transform(lay, name) != lay


def test_paired_test_matches_scipy_and_skips_small_samples() -> None:
    rng = np.random.default_rng(2)
    base = rng.random(40)
    moved = base + rng.normal(0.05, 0.1, 40)
    res = paired_test(moved, base)
    ref = wilcoxon(moved, base)
    assert res["p"] == pytest.approx(ref.pvalue) and res["statistic"] == pytest.approx(ref.statistic)
    assert res["pairs"] == 40 and res["skipped"] == ""
    assert rank_biserial(np.array([1.0, 2.0, -3.0])) == pytest.approx(0.0)
    assert rank_biserial(np.array([1.0, -2.0, 3.0, 0.0])) == pytest.approx((1 + 3 - 2) / 6)
    assert paired_test(base[:9], base[:9] + 1)["skipped"] == "fewer than 10 pairs"
    same = base.copy()
    same[:3] += 0.1
    short = paired_test(same, base)
    assert short["skipped"] == "fewer than 5 non-zero differences" and math.isnan(short["p"])


class _KeyFirst:
    """Goes for the key by optimal moves, then for the goal (a distracted but rational agent)."""

    def __init__(self, rng) -> None:
        self.rng = rng

    def act(self, layout, state) -> int:
        target = layout.goal_cell("G") if state.has_key else layout.key
        best = sorted(optimal_set(layout, state, target))
        return best[int(self.rng.integers(len(best)))]


def test_key_rooms_pickup_and_moves_toward_the_key() -> None:
    door = load_grid("key-door", 0, 0)
    ros = run_rollouts(make_agents(AgentSpec("optimal"), 3, np.random.default_rng(0)), door)
    assert key_columns(door, ros, door.layout.key)["pickup"] == 1.0
    assert all(ro.success for ro in ros)
    for index in range(6):
        grid = load_grid("key-no-door", index, 0)
        ros = run_rollouts([_KeyFirst(np.random.default_rng(index))], grid)
        cols = key_columns(grid, ros, grid.layout.key)
        assert cols["pickup"] == 1.0
        assert cols["nonopt_toward_key"] == cols["nonopt_before_pickup"]  # every detour heads for the key
        ros = run_rollouts(make_agents(AgentSpec("optimal"), 2, np.random.default_rng(0)), grid)
        assert key_columns(grid, ros, grid.layout.key)["nonopt_before_pickup"] == 0


def test_noisy_agent_epsilon_and_bad_epsilon() -> None:
    grid = _nav(20)
    agent = NoisyAgent(np.random.default_rng(0), epsilon=0.5)
    best = optimal_set(grid.layout, grid.start, grid.goal)
    hits = np.mean([agent.act(grid.layout, grid.start) in best for _ in range(4000)])
    assert hits == pytest.approx(0.5 + 0.5 * len(best) / 4, abs=0.03)
    assert OptimalAgent(np.random.default_rng(0)).act(grid.layout, grid.start) in best
    with pytest.raises(BibInputError, match="epsilon"):
        NoisyAgent(np.random.default_rng(0), epsilon=1.5)


def test_suite_is_deterministic_across_workers(tmp_path) -> None:
    spec = AgentSpec("noisy", epsilon=0.3)
    a = run_suite("keys", spec, tmp_path / "a", grids=2, rollouts=2, meg=False)
    b = run_suite("keys", spec, tmp_path / "b", grids=2, rollouts=2, meg=False, workers=2)
    for name in ("grids.csv", "rollouts.jsonl", "tables.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert a.to_markdown() == b.to_markdown()
    rows = read_run(tmp_path / "b")[0].to_dict("records")
    assert [r["variant"] for r in rows if r["task"] == "two-path-key"] == ["base", "no-key"] * 2
    assert all(0.0 <= r["jaccard_no_key"] <= 1.0 for r in rows if r["task"] == "two-path-key" and r["variant"] == "base")


def test_run_suite_returns_the_tables_it_wrote_and_the_cli_prints_them(tmp_path, monkeypatch) -> None:
    """run_suite returns the AgencyTables it wrote (tables.md is its markdown); `bib agency run` prints that
    result and makes the tables from grids.csv once, not a second time after run_suite."""
    import bib.agency.tables

    result = run_suite("keys", AgentSpec("optimal"), tmp_path / "lib", grids=1, rollouts=1, meg=False)
    assert isinstance(result, AgencyTables)
    assert (tmp_path / "lib" / "tables.md").read_text() == result.to_markdown() + "\n"
    assert result.meta == json.loads((tmp_path / "lib" / "run.json").read_text())
    assert list(result.tables) == ["summary", "key_rooms"]
    assert (result.tables["summary"]["success"] == 1.0).all()  # the planner always reaches the goal

    made = []
    tables_of = bib.agency.tables.agency_tables
    monkeypatch.setattr(bib.agency.tables, "agency_tables", lambda folder: made.append(folder) or tables_of(folder))
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    out = tmp_path / "cli"
    res = runner.invoke(app, ["agency", "run", "--agent", "optimal", "--suite", "keys", "--grids", "1",
                              "--rollouts", "1", "--no-meg", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert len(made) == 1
    assert res.stdout == (out / "tables.md").read_text()


def test_cli_run_report_and_bad_input(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    out = tmp_path / "pert"
    res = runner.invoke(app, ["agency", "run", "--agent", "noisy", "--suite", "perturbations", "--grids", "1",
                              "--rollouts", "2", "--no-meg", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "transform tests" in res.output
    rows = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert len(rows) == 30 * 5 * 2
    res = runner.invoke(app, ["agency", "report", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "plots" / "accuracy.png").stat().st_size > 0 and (out / "plots" / "transforms.png").is_file()
    for args, msg in [
        (["--agent", "optimal", "--endpoint", "http://127.0.0.1:9/v1"], "exactly one"),
        (["--endpoint", "http://127.0.0.1:9/v1"], "--model"),
        (["--agent", "policy-net", "--checkpoint", str(tmp_path / "none.pt")], "--checkpoint"),
    ]:
        full = ["agency", "run", "--suite", "keys", "--out", str(tmp_path / "x"), *args]
        if "--suite" in args:
            full = ["agency", "run", "--out", str(tmp_path / "x"), *args]
        with pytest.raises(BibInputError, match=msg.replace("-", r"\-")):
            runner.invoke(app, full, catch_exceptions=False)
    res = runner.invoke(app, ["agency", "run", "--out", str(tmp_path / "x"), "--agent", "optimal", "--suite", "mazes"])
    assert res.exit_code == 2 and "Invalid value for '--suite'" in res.output and not (tmp_path / "x").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(BibInputError, match="exists and is a file; --out names a folder"):
        runner.invoke(app, ["agency", "run", "--out", str(tmp_path / "file"), "--agent", "optimal", "--suite", "keys"],
                      catch_exceptions=False)
    # another job's output is refused before the run and left as it was; --force replaces it
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    keys = ["agency", "run", "--agent", "optimal", "--suite", "keys", "--grids", "1", "--no-meg", "--out", str(out)]
    with pytest.raises(BibInputError, match="folder holds the output of .*; use --force to replace it"):
        runner.invoke(app, keys, catch_exceptions=False)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    res = runner.invoke(app, [*keys, "--force"])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "run.json").read_text())["suite"] == "keys" and not (out / "plots").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary folder left
    with pytest.raises(BibInputError, match="grids.csv"):
        runner.invoke(app, ["agency", "report", str(tmp_path)], catch_exceptions=False)
