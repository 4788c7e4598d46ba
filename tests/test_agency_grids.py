"""Agent-evaluation grids: maze generation, the four tasks, their rules, determinism and rendering."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from bib.episode import dumps, loads
from bib.render.frames import RenderSettings, trial_frames
from bib.tasks import make_unit, task_ids, validate_episode
from bib.tasks.agent_grids import (
    NAV_DENSITIES,
    NAV_SIZES,
    bfs,
    maze_walls,
    navigation_design,
    shortest_path_cells,
    two_path_layout,
)
from bib.world.grid import Layout, border_walls
from bib.world.planning import reachable

TASKS = task_ids("agent")


def _edges(free: set) -> int:
    return sum((x + 1, y) in free for x, y in free) + sum((x, y + 1) in free for x, y in free)


@pytest.mark.parametrize("size", NAV_SIZES)
def test_density_one_is_a_perfect_maze_and_zero_an_open_room(size: int) -> None:
    rng = np.random.default_rng(size)
    walls = maze_walls(rng, size, 1.0)
    free = {(x, y) for x in range(size) for y in range(size)} - walls
    lay = Layout(size, size, walls=walls, moves=4)
    start = next(iter(free))
    assert len(bfs(lay, start)) == len(free)  # connected
    assert _edges(free) == len(free) - 1  # and a tree: a perfect maze
    # every odd cell is carved
    assert {(x, y) for x in range(1, size - 1, 2) for y in range(1, size - 1, 2)} <= free
    assert maze_walls(rng, size, 0.0) == border_walls(size, size)


def test_density_removes_the_stated_number_of_interior_walls() -> None:
    size, d = 11, 0.4
    perfect = maze_walls(np.random.default_rng(3), size, 1.0)
    partial = maze_walls(np.random.default_rng(3), size, d)  # same stream: same maze, then deletions
    inner = perfect - border_walls(size, size)
    assert partial <= perfect
    assert len(perfect - partial) == int((1 - d) * len(inner))


def test_maze_bad_arguments() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="odd"):
        maze_walls(rng, 8, 0.5)
    with pytest.raises(ValueError, match="density"):
        maze_walls(rng, 9, 1.5)


def test_navigation_design_covers_sizes_and_densities_ten_times() -> None:
    cells = Counter(navigation_design(i)[:2] for i in range(300))
    assert set(cells) == {(s, d) for s in NAV_SIZES for d in NAV_DENSITIES}
    assert set(cells.values()) == {10}


@pytest.mark.parametrize("task", TASKS)
def test_units_are_valid_4_connected_and_deterministic(task: str) -> None:
    for index in range(12):
        (ep,) = make_unit(task, index, base_seed=5)
        assert validate_episode(ep) == []
        assert ep.moves == 4 and len(ep.trials) == 1 and ep.test.phase == "test" and ep.outcome == "none"
        text = dumps(ep)
        assert '"moves": 4' in text
        assert dumps(loads(text)) == text
        assert dumps(make_unit(task, index, base_seed=5)[0]) == text
    if task == "navigation":
        (ep,) = make_unit(task, 29, base_seed=5)
        assert ep.width == 15


def test_key_door_needs_the_key_and_rules_catch_broken_rooms() -> None:
    (ep,) = make_unit("key-door", 3, base_seed=1)
    lay = ep.test.layout
    goal = lay.object("G").cell
    assert goal not in reachable(lay, lay.agent.home)
    assert lay.key in reachable(lay, lay.agent.home)
    assert [e.type for e in ep.test.events] == ["pickup-key", "unlock"]
    # the same grid without its door breaks the key-door rule (and is no longer optimal through the key)
    broken = replace(ep, trials=(replace(ep.test, layout=replace(lay, lock=None)),))
    assert validate_episode(broken)
    (nd,) = make_unit("key-no-door", 3, base_seed=1)
    assert nd.test.layout.lock is None and nd.test.layout.key is not None
    assert validate_episode(nd) == []


def test_two_path_key_has_two_equal_corridors_and_the_key_on_one() -> None:
    for seed in range(10):
        lay = two_path_layout(np.random.default_rng(seed))
        paths = shortest_path_cells(lay, lay.agent.home, lay.object("G").cell)
        assert len(paths) == 2 and len(paths[0]) == len(paths[1])
        assert sum(lay.key in p for p in paths) == 1
    (ep,) = make_unit("two-path-key", 0, base_seed=2)
    lay = ep.test.layout
    paths = shortest_path_cells(lay, lay.agent.home, lay.object("G").cell)
    shared_free = sorted((paths[0] & paths[1]) - {lay.agent.home, lay.object("G").cell})
    off_path = sorted(set(lay.free_cells()) - paths[0] - paths[1])
    bad_cell = (shared_free or off_path)[0]
    broken = replace(ep, trials=(replace(ep.test, layout=replace(lay, key=bad_cell), events=()),))
    problems = validate_episode(broken)
    assert problems and ("corridors" in problems[0].message or "events" in problems[0].message)


def test_agent_grids_render_at_their_own_size() -> None:
    (ep,) = make_unit("navigation", 29, base_seed=0)  # 15 x 15
    frame = next(trial_frames(ep.test, RenderSettings(cell_px=8)))
    assert frame.shape == (15 * 8, 15 * 8, 3)
