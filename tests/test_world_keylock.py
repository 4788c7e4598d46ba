"""Key/lock planner value layers against value iteration over the product space, and the cached legal-move table."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from bib.observers.goal_values import layout_goal_values
from bib.tasks.common import empty_layout
from bib.world.dynamics import STAY, AgentState, action_cost, adjacent_to_lock, move_legal, step
from bib.world.grid import Agent, Cell, GridObject, Layout
from bib.world.keylock import DIRECT, HAS_KEY, NO_KEY, UNLOCKED, cost_to_go, key_lock_values
from bib.world.planning import distance_field, layout_graph

AGENT = Agent("agent-0", "pentagon", (40, 90, 220), (2, 2))


def product_values(layout: Layout, goal: Cell) -> dict[AgentState, float]:
    """Independent reference: value iteration to ``goal`` over (cell, has_key, unlocked) states via dynamics.step."""
    states = [AgentState((x, y), hk, ul) for x in range(layout.width) for y in range(layout.height)
              for hk, ul in ((False, False), (True, False), (True, True)) if layout.is_free((x, y), ul)]
    value = {s: (0.0 if s.cell == goal else math.inf) for s in states}
    for _ in range(200):
        changed = False
        for s in states:
            if s.cell == goal:
                continue
            best = value[s]
            for a in range(STAY):
                if move_legal(layout, s.cell, a, s.unlocked):
                    nxt, _ = step(layout, s, a)
                    best = min(best, action_cost(a) + value.get(nxt, math.inf))
            if best < value[s] - 1e-12:
                value[s], changed = best, True
        if not changed:
            return value
    raise AssertionError("value iteration did not converge")


def key_lock_layout(moves: int = 8) -> Layout:
    """Object A inside a barrier box with a lock on its left; key in the lower left."""
    box = {(5, 3), (6, 3), (7, 3), (7, 4), (7, 5), (6, 5), (5, 5)}
    lay = empty_layout(barriers=frozenset(box), lock=(5, 4), key=(2, 7),
                       objects=(GridObject("A", "heart", (220, 40, 60), (6, 4)),), agents=(AGENT,))
    return replace(lay, moves=moves)


@pytest.mark.parametrize("moves", [8, 4])
def test_value_layers_match_product_space_value_iteration(moves: int) -> None:
    lay = key_lock_layout(moves)
    values = layout_goal_values([lay])[0][(6, 4)]
    assert values is key_lock_values(lay, (6, 4)).stack and not values.flags.writeable
    ref = product_values(lay, (6, 4))
    checked = 0
    for s, v in ref.items():
        # states no move can lead to (pickup and unlock happen on arrival): skip them
        if (s.cell == lay.key and not s.has_key) or (s.has_key and not s.unlocked and adjacent_to_lock(lay, s.cell)):
            continue
        layer = UNLOCKED if s.unlocked else (HAS_KEY if s.has_key else NO_KEY)
        got = values[layer, s.cell[1], s.cell[0]]
        if math.isinf(v):
            assert math.isinf(got)
        else:
            assert got == pytest.approx(v, abs=1e-9)
            assert cost_to_go(lay, (6, 4))[(s.cell, s.has_key, s.unlocked)] == got
            checked += 1
    assert checked > 100
    # the direct layer never uses the key: the plain shortest-path field (the object is locked in)
    assert np.array_equal(values[DIRECT], distance_field(lay, (6, 4)))
    assert np.argwhere(np.isfinite(values[DIRECT])).tolist() == [[4, 6]]  # only the goal itself
    # from home the object needs the key: 2 -> key (5 rows down) then to the lock and in
    assert math.isfinite(values[NO_KEY, 2, 2]) and values[NO_KEY, 2, 2] > distance_field(lay, (2, 7))[2, 2]


def test_without_a_key_only_the_direct_mode_exists() -> None:
    lay = empty_layout(walls=frozenset({(4, 2), (4, 3), (4, 4)}), objects=(), agents=(AGENT,))
    stack = key_lock_values(lay, (7, 3)).stack
    assert np.array_equal(stack[NO_KEY], distance_field(lay, (7, 3)))
    assert np.array_equal(stack[DIRECT], stack[NO_KEY])
    assert np.isinf(stack[HAS_KEY]).all() and np.isinf(stack[UNLOCKED]).all()
    assert set(cost_to_go(lay, (7, 3))) == {(c, False, False) for c in lay.free_cells()}


@pytest.mark.parametrize("moves", [8, 4])
def test_graph_legal_table_equals_move_legal(moves: int) -> None:
    lay = key_lock_layout(moves)
    for unlocked in (False, True):
        legal = layout_graph(lay, unlocked).legal
        assert not legal.flags.writeable
        for x in range(lay.width):
            for y in range(lay.height):
                if lay.is_free((x, y), unlocked):
                    for a in range(STAY):
                        assert legal[y, x, a] == move_legal(lay, (x, y), a, unlocked), (x, y, a)
                else:
                    assert not legal[y, x].any()


def test_every_state_the_dynamics_produce_with_a_finite_cost_has_an_optimal_move() -> None:
    """An agent that can still reach the goal always has a move on an optimal path. The states with
    none are the two the dynamics cannot produce (on the key without it; holding it next to the
    closed lock), whose value is that of the state arriving there creates."""
    from bib.stimuli.spec import load_spec
    from bib.tasks import families, make_unit
    from bib.world.keylock import optimal_moves

    spec = load_spec("bib-eval")
    options = spec.options()
    layouts = [key_lock_layout(8), key_lock_layout(4)]
    for task in families()["instrumental"]:
        layouts += [trial.layout for u in range(3) for ep in make_unit(task, u, spec.seed, options[task])
                    for trial in ep.trials]
    checked = impossible = 0
    for lay in layouts:
        for goal in [o.cell for o in lay.objects]:
            v = key_lock_values(lay, goal)
            for i in range(lay.width * lay.height):
                cell = v.locked.cell(i)
                for has_key, unlocked in ((False, False), (True, False), (True, True)):
                    if cell == goal or not math.isfinite(v.value(i, has_key, unlocked)):
                        continue
                    moves = optimal_moves(lay, AgentState(cell, has_key, unlocked), goal)
                    if (i == v.key and not has_key) or (has_key and not unlocked and i in v.lock_side):
                        impossible += not moves
                        continue
                    assert moves, (lay, goal, cell, has_key, unlocked)
                    checked += 1
    assert checked > 10_000 and impossible > 0  # the exception is real, and only there
