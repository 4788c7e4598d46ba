"""Gridworld rules and exact planning, checked against an independent graph search."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.sparse import lil_matrix
from scipy.sparse.csgraph import dijkstra

from bib.world import (
    ACTIONS,
    STAY,
    AgentState,
    Layout,
    border_walls,
    distance_field,
    legal_actions,
    move_legal,
    optimal_actions,
    path_cost,
    reachable,
    shortest_path,
    step,
)
from bib.world.dynamics import action_between
from bib.world.planning import optimal_actions_at

SIZE = 7


def reference_distances(width: int, height: int, blocked: set, goal, moves: int = 8) -> np.ndarray:
    """Independent all-pairs graph: edges written out by hand from the world rules."""
    cells = [(x, y) for y in range(height) for x in range(width)]
    index = {c: i for i, c in enumerate(cells)}
    free = lambda c: 0 <= c[0] < width and 0 <= c[1] < height and c not in blocked  # noqa: E731
    graph = lil_matrix((len(cells), len(cells)))
    for (x, y) in cells:
        if not free((x, y)):
            continue
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                if dx == dy == 0 or not free((x + dx, y + dy)):
                    continue
                if dx and dy and (moves == 4 or not free((x + dx, y)) or not free((x, y + dy))):
                    continue
                graph[index[(x, y)], index[(x + dx, y + dy)]] = math.sqrt(2) if dx and dy else 1.0
    d = dijkstra(graph.tocsr(), indices=index[goal])
    return d.reshape(height, width)


layouts = st.builds(
    lambda walls, goal, start, moves: (frozenset(walls) - {goal, start}, goal, start, moves),
    st.sets(st.tuples(st.integers(0, SIZE - 1), st.integers(0, SIZE - 1)), max_size=18),
    st.tuples(st.integers(0, SIZE - 1), st.integers(0, SIZE - 1)),
    st.tuples(st.integers(0, SIZE - 1), st.integers(0, SIZE - 1)),
    st.sampled_from([8, 4]),
)


@given(layouts, st.integers(0, 2**32 - 1))
def test_shortest_path_is_legal_and_exactly_shortest(case, seed):
    walls, goal, start, moves = case
    layout = Layout(SIZE, SIZE, walls=walls, moves=moves)
    ref = reference_distances(SIZE, SIZE, set(walls), goal, moves)
    field = distance_field(layout, goal)
    assert np.allclose(np.where(np.isinf(ref), -1, ref), np.where(np.isinf(field), -1, field))
    path = shortest_path(layout, start, goal, rng=np.random.default_rng(seed))
    if np.isinf(ref[start[1], start[0]]):
        assert path is None
        return
    assert path[0] == start and path[-1] == goal
    for a, b in zip(path, path[1:]):
        action = action_between(a, b)
        assert action is not None and move_legal(layout, a, action)
    assert path_cost(path) == pytest.approx(ref[start[1], start[0]], abs=1e-9)


@given(layouts)
def test_optimal_action_set_matches_bellman_equation(case):
    walls, goal, _, moves = case
    layout = Layout(SIZE, SIZE, walls=walls, moves=moves)
    ref = reference_distances(SIZE, SIZE, set(walls), goal, moves)
    opt = optimal_actions(layout, goal)
    for y in range(SIZE):
        for x in range(SIZE):
            for a, (dx, dy) in enumerate(ACTIONS[:STAY]):
                nx, ny = x + dx, y + dy
                expect = (
                    np.isfinite(ref[y, x])
                    and ref[y, x] > 0
                    and move_legal(layout, (x, y), a)
                    and abs((math.sqrt(2) if dx and dy else 1) + ref[ny, nx] - ref[y, x]) < 1e-9
                )
                assert opt[y, x, a] == expect
            assert opt[y, x, STAY] == (ref[y, x] == 0)
            assert sorted(np.flatnonzero(opt[y, x])) == optimal_actions_at(layout, (x, y), goal)


def test_no_corner_cutting_past_walls_or_barriers():
    layout = Layout(5, 5, walls=frozenset({(2, 1)}), barriers=frozenset({(1, 2)}))
    ne, se, sw = 1, 3, 5
    assert not move_legal(layout, (1, 1), se)  # would cut the wall at (2, 1) and the barrier at (1, 2)
    assert not move_legal(layout, (1, 0), se)  # the target (2, 1) is the wall itself
    assert move_legal(layout, (2, 2), ne) is False  # corner (2, 1) is a wall
    assert move_legal(layout, (3, 3), sw) is True
    assert move_legal(layout, (1, 1), se, unlocked=True) is False  # the wall is still there
    only_barrier = Layout(5, 5, barriers=frozenset({(1, 2)}))
    assert not move_legal(only_barrier, (1, 1), sw)
    assert move_legal(only_barrier, (1, 1), 4 + 1, unlocked=True)  # SW allowed once barriers are gone


def test_four_connected_layouts_forbid_diagonals():
    layout = Layout(4, 4, moves=4)
    assert legal_actions(layout, (1, 1)) == [0, 2, 4, 6, STAY]


def test_key_pickup_and_unlock_open_the_barrier():
    # Object at (4, 2) walled in by barriers with the lock at (3, 2); key at (1, 3).
    barriers = frozenset({(3, 1), (4, 1), (5, 1), (5, 2), (5, 3), (4, 3), (3, 3)})
    layout = Layout(7, 6, walls=border_walls(7, 6) - {(5, 1)}, barriers=barriers, lock=(3, 2), key=(1, 3))
    assert (4, 2) not in reachable(layout, (1, 1))
    assert (4, 2) in reachable(layout, (1, 1), unlocked=True)
    state = AgentState((1, 2))
    state, events = step(layout, state, 4)  # S onto the key
    assert events == ["pickup-key"] and state.has_key and not state.unlocked
    state, events = step(layout, state, 1)  # NE to (2, 2), next to the lock
    assert events == ["unlock"] and state.unlocked
    state, _ = step(layout, state, 2)  # E through the former lock cell
    assert state.cell == (3, 2)
    with pytest.raises(ValueError, match="illegal move"):
        step(Layout(3, 3, walls=frozenset({(1, 0)})), AgentState((1, 1)), 0)


def test_path_cost_rejects_jumps():
    assert path_cost([(0, 0), (1, 1), (2, 1)]) == pytest.approx(1 + math.sqrt(2))
    with pytest.raises(ValueError, match="not adjacent"):
        path_cost([(0, 0), (2, 0)])


@given(layouts)
def test_grid_graph_moves_match_move_legal(case):
    from bib.world.planning import layout_graph

    walls, _, _, moves = case
    layout = Layout(SIZE, SIZE, walls=walls | {(SIZE, 0), (-1, 2)}, barriers=frozenset({(3, 3)}), moves=moves)
    for unlocked in (False, True):
        graph = layout_graph(layout, unlocked)
        for cell in layout.free_cells(unlocked):
            want = [a for a in range(STAY) if move_legal(layout, cell, a, unlocked)]
            assert list(np.flatnonzero(graph.legal[cell[1], cell[0]])) == want
            i = graph.index(cell)
            assert [(a, graph.cell(i + off)) for a, off, _ in graph.steps[i]] == \
                [(a, (cell[0] + ACTIONS[a][0], cell[1] + ACTIONS[a][1])) for a in want]
    assert reachable(layout, (SIZE, 0)) == frozenset()
