"""Key/lock planner (bib.world.keylock) against a forward search, and the stimulus agents built on it: rational
(shortest, preferred object, seeded ties), instrumental (optimal in key/lock space), irrational, rollout."""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from bib.tasks.agents import GridAgent, InstrumentalAgent, IrrationalAgent, RationalAgent, rollout
from bib.tasks.common import empty_layout, interior
from bib.world.dynamics import STAY, AgentState, action_between, adjacent_to_lock, move_legal, step
from bib.world.grid import Agent, GridObject, Layout
from bib.world.keylock import cost_to_go, is_optimal_path, optimal_cost, optimal_moves
from bib.world.planning import is_shortest, path_cost, reachable, shortest_cost

AGENT = Agent("agent-0", "pentagon", (40, 90, 220), (2, 2))


def obj(oid: str, cell) -> GridObject:
    return GridObject(oid, "heart", (220, 40, 60), cell)


def reference_cost(layout: Layout, goal, start: AgentState | None = None) -> float:
    """Forward Dijkstra over (cell, has_key, unlocked) with the dynamics' own step()."""
    start = start or AgentState(layout.agent.home)
    best = {start: 0.0}
    heap = [(0.0, 0, start)]
    tie = 1
    while heap:
        d, _, s = heapq.heappop(heap)
        if s.cell == goal:
            return d
        if d > best[s] + 1e-12:
            continue
        for a in range(STAY):
            if move_legal(layout, s.cell, a, s.unlocked):
                n, _ = step(layout, s, a)
                nd = d + path_cost([s.cell, n.cell])
                if nd < best.get(n, float("inf")) - 1e-12:
                    best[n] = nd
                    heapq.heappush(heap, (nd, tie, n))
                    tie += 1
    return float("inf")


def locked_room() -> Layout:
    """Object A at (7, 2) in a barrier ring closed by the border, lock on the ring's left side, key at (2, 7)."""
    ring = frozenset({(6, 1), (6, 3), (7, 3), (8, 3)})
    return empty_layout(barriers=ring, lock=(6, 2), key=(2, 7), objects=(obj("A", (7, 2)),), agents=(AGENT,))


def random_key_layouts(n: int, seed: int = 0) -> list[Layout]:
    """Random layouts with walls, barriers, a lock and a key (no structure assumed)."""
    rng = np.random.default_rng(seed)
    out = []
    cells = interior()
    while len(out) < n:
        pick = rng.choice(len(cells), size=22, replace=False)
        c = [cells[int(i)] for i in pick]
        out.append(empty_layout(walls=frozenset(c[:6]), barriers=frozenset(c[6:18]), lock=c[18], key=c[19],
                                objects=(obj("A", c[20]),), agents=(Agent("agent-0", "kite", (1, 2, 3), c[21]),)))
    return out


def test_optimal_moves_match_forward_search_through_step():
    checked = 0
    for lay in random_key_layouts(12, seed=3):
        goal = lay.object("A").cell
        states = [AgentState(lay.agent.home), AgentState(lay.key, True, False), AgentState(lay.agent.home, True, True)]
        for state in states:
            if not lay.is_free(state.cell, state.unlocked) or (not state.unlocked and state.has_key
                                                                 and adjacent_to_lock(lay, state.cell)):
                continue
            here = reference_cost(lay, goal, state)
            want = []
            if np.isfinite(here):
                for a in range(STAY):
                    if move_legal(lay, state.cell, a, state.unlocked):
                        nxt, _ = step(lay, state, a)
                        cost = np.sqrt(2) if a % 2 else 1.0
                        if abs(cost + reference_cost(lay, goal, nxt) - here) < 1e-9:
                            want.append(a)
            assert optimal_moves(lay, state, goal) == want
            checked += bool(want)
    assert checked >= 5


def test_key_lock_cost_matches_forward_search():
    layouts = random_key_layouts(25) + [locked_room()]
    finite = 0
    for lay in layouts:
        goal = lay.object("A").cell
        want = reference_cost(lay, goal)
        got = optimal_cost(lay, goal)
        assert got == pytest.approx(want) or (np.isinf(want) and np.isinf(got))
        finite += np.isfinite(want)
        for state in (AgentState(lay.key, True, False), AgentState(lay.agent.home, True, True)):
            # (holding the key, lock closed, next to the lock) cannot occur: arriving there unlocks
            if lay.is_free(state.cell, state.unlocked) and not (not state.unlocked and adjacent_to_lock(lay, state.cell)):
                ref = reference_cost(lay, goal, state)
                assert cost_to_go(lay, goal).get((state.cell, state.has_key, state.unlocked), float("inf")) == \
                    pytest.approx(ref) or np.isinf(ref)
    assert finite >= 5


def test_locked_room_cost_is_key_then_lock_then_object():
    lay = locked_room()
    # home (2,2) -> key (2,7): 5; key -> (5,2), next to the lock: 3 diagonal + 2 straight; -> (6,2) -> (7,2): 2
    assert optimal_cost(lay, (7, 2)) == pytest.approx(5 + 3 * np.sqrt(2) + 2 + 2)
    assert (7, 2) not in reachable(lay, AGENT.home)


def test_rational_agent_takes_a_shortest_path_to_the_preferred_object():
    lay = empty_layout(walls=frozenset({(4, 2), (4, 3), (4, 4)}), objects=(obj("A", (7, 3)), obj("B", (2, 6))),
                       agents=(AGENT,))
    for pref, goal in ((["A", "B"], (7, 3)), (["B", "A"], (2, 6))):
        path, events = rollout(RationalAgent(pref, np.random.default_rng(1)), lay)
        assert path[0] == AGENT.home and path[-1] == goal and events == ()
        assert is_shortest(lay, path)
    # preferred object walled in: the agent settles for the other one
    walled = empty_layout(walls=frozenset({(6, 1), (6, 2), (6, 3), (6, 4), (7, 4), (8, 4)}), objects=lay.objects, agents=(AGENT,))
    path, _ = rollout(RationalAgent(["A", "B"]), walled)
    assert path[-1] == (2, 6)


def test_rational_ties_are_seeded():
    lay = empty_layout(objects=(obj("A", (7, 6)),), agents=(AGENT,))
    paths = {tuple(rollout(RationalAgent(["A"], np.random.default_rng(s)), lay)[0]) for s in range(12)}
    assert len(paths) > 1
    assert all(is_shortest(lay, p) for p in paths)
    a = rollout(RationalAgent(["A"], np.random.default_rng(5)), lay)[0]
    b = rollout(RationalAgent(["A"], np.random.default_rng(5)), lay)[0]
    assert a == b


def test_rational_agent_stays_when_nothing_is_reachable():
    lay = empty_layout(walls=frozenset({(6, 1), (6, 2), (6, 3), (6, 4), (7, 4), (8, 4)}), objects=(obj("A", (7, 3)),),
                       agents=(AGENT,))
    assert RationalAgent(["A"]).act(lay, AgentState(AGENT.home)) == STAY
    assert rollout(RationalAgent(["A"]), lay)[0] == [AGENT.home]
    with pytest.raises(ValueError):
        RationalAgent([])


def test_instrumental_agent_fetches_key_unlocks_then_goes_to_object():
    for lay in [locked_room(), *random_key_layouts(40, seed=3)]:
        goal = lay.object("A").cell
        if goal in reachable(lay, lay.agent.home) or not np.isfinite(reference_cost(lay, goal)):
            continue
        path, events = rollout(InstrumentalAgent("A", np.random.default_rng(0)), lay)
        assert path[-1] == goal
        assert [e.type for e in events] == ["pickup-key", "unlock"]
        pickup, unlock = (e.step for e in events)
        assert path[pickup] == lay.key and pickup <= unlock
        assert adjacent_to_lock(lay, path[unlock])
        assert path_cost(path) == pytest.approx(reference_cost(lay, goal))
        assert is_optimal_path(lay, path)


def test_instrumental_agent_ignores_the_key_when_the_object_is_free():
    lay = empty_layout(key=(2, 7), objects=(obj("A", (7, 2)),), agents=(AGENT,))
    path, events = rollout(InstrumentalAgent("A"), lay)
    assert events == () and path_cost(path) == pytest.approx(shortest_cost(lay, AGENT.home, (7, 2)))


def test_irrational_agent_replays_its_path():
    lay = empty_layout(objects=(obj("A", (6, 2)),), agents=(AGENT,))
    curved = [(2, 2), (3, 3), (4, 4), (5, 4), (6, 3), (6, 2)]
    path, events = rollout(IrrationalAgent(curved), lay)
    assert path == curved and events == ()
    assert not is_shortest(lay, path)
    agent = IrrationalAgent(curved)
    assert agent.act(lay, AgentState((6, 2))) == STAY
    assert agent.act(lay, AgentState((4, 4))) == action_between((4, 4), (5, 4))
    with pytest.raises(ValueError, match="not on its path"):
        agent.act(lay, AgentState((8, 8)))
    blocked = empty_layout(walls=frozenset({(5, 4)}), agents=(AGENT,))
    with pytest.raises(ValueError, match="illegal"):
        agent.act(blocked, AgentState((4, 4)))
    with pytest.raises(ValueError, match="revisits"):
        IrrationalAgent([(2, 2), (3, 2), (2, 2)])
    with pytest.raises(ValueError, match="jumps"):
        IrrationalAgent([(2, 2), (4, 2)])


def test_rollout_stops_at_max_steps_and_agents_follow_the_protocol():
    lay = empty_layout(objects=(obj("A", (8, 8)),), agents=(AGENT,))
    path, _ = rollout(RationalAgent(["A"]), lay, max_steps=3)
    assert len(path) == 4
    for agent in (RationalAgent(["A"]), InstrumentalAgent("A"), IrrationalAgent([(2, 2)])):
        assert isinstance(agent, GridAgent)
