"""inverse-planner: Boltzmann policy, and correct ordering on hand-built pairs of every condition (values: test_world_keylock)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bib.episode import Episode, Trial
from bib.observers import make_observer
from bib.observers.goal_values import boltzmann_log_policy
from bib.observers.inverse_planning import InversePlanner
from bib.tasks.common import empty_layout, make_trial
from bib.world.grid import Agent, Cell, GridObject, Layout
from bib.world.planning import layout_graph, shortest_path

HEART = ("heart", (220, 40, 60))
STAR = ("star", (40, 170, 200))
AGENT = Agent("agent-0", "pentagon", (40, 90, 220), (2, 2))
OTHER_AGENT = Agent("agent-1", "kite", (200, 40, 40), (2, 2))


def obj(look: tuple[str, tuple[int, int, int]], oid: str, cell: Cell) -> GridObject:
    return GridObject(oid, look[0], look[1], cell)


def line(*cells: Cell) -> list[Cell]:
    """A path through waypoints joined by straight king-move segments."""
    out = [cells[0]]
    for target in cells[1:]:
        while out[-1] != target:
            x, y = out[-1]
            out.append((x + np.sign(target[0] - x), y + np.sign(target[1] - y)))
    return [(int(x), int(y)) for x, y in out]


def episode(fam: list[Trial], test: Trial, outcome: str, condition: str) -> Episode:
    trials = tuple(fam) + (Trial("test", test.layout, test.path, test.events, test.goal),)
    return Episode(f"{condition}-x-{outcome}", f"{condition}-x", condition, condition, outcome, 0, 10, 10, trials)


def two_objects(a: Cell, b: Cell, agent: Agent = AGENT, walls: frozenset[Cell] = frozenset()) -> Layout:
    return empty_layout(walls=walls, objects=(obj(HEART, "A", a), obj(STAR, "B", b)), agents=(agent,))


def to(layout: Layout, goal: str, phase: str = "familiarization") -> Trial:
    path = shortest_path(layout, layout.agent.home, layout.goal_cell(goal))
    return make_trial(layout, path, goal, phase)


def preference_fam(agent: Agent = AGENT) -> list[Trial]:
    spots = [((7, 2), (2, 7)), ((7, 3), (3, 7)), ((6, 2), (2, 6)), ((7, 4), (4, 7))] * 2
    return [to(two_objects(a, b, agent), "A") for a, b in spots]


def score_pair(expected: Episode, unexpected: Episode, observer: InversePlanner | None = None) -> tuple[float, float]:
    obs = observer or make_observer("inverse-planner")
    return float(obs.surprise(expected).max()), float(obs.surprise(unexpected).max())


# ---------------------------------------------------------------- planning pieces


def test_boltzmann_policy_is_softmax_of_beta_q() -> None:
    q = np.array([[[-1.0, -2.0, -np.inf, -1.0, -3.0, -np.inf, -np.inf, -2.5]]])
    logp = boltzmann_log_policy(q, np.array([0.5, 4.0]))
    for b, beta in enumerate((0.5, 4.0)):
        z = np.exp(beta * q[0, 0])
        assert np.allclose(np.exp(logp[0, b, 0]), z / z.sum())
    dead = boltzmann_log_policy(np.full((1, 1, 8), -np.inf), np.array([1.0]))
    assert np.all(np.isneginf(dead))


# ---------------------------------------------------------------- hand-built pairs of every condition


def test_preference() -> None:
    fam = preference_fam()
    swapped = two_objects((2, 7), (7, 2))  # A now where B was
    e = episode(fam, to(swapped, "A", "test"), "expected", "preference")
    u = episode(fam, to(swapped, "B", "test"), "unexpected", "preference")
    se, su = score_pair(e, u)
    assert se < su
    assert su > 2.0  # -log(1/10): the Dirichlet(1) predictive after 8 visits to A gives B 1/10


def test_preference_posterior_counts_and_beta() -> None:
    obs = make_observer("inverse-planner")
    beliefs = obs.familiarize(preference_fam())
    belief = beliefs[(AGENT.shape, AGENT.color)]
    assert belief.counts[HEART] == pytest.approx(8.0, abs=1e-6)
    assert belief.counts.get(STAR, 0.0) < 1e-6
    assert obs.goal_prior(belief, [HEART, STAR]) == pytest.approx([0.9, 0.1], abs=1e-6)
    # optimal paths make the highest beta the most probable
    assert int(np.argmax(belief.log_beta)) == len(obs.betas) - 1


def test_multi_agent_new_agent_starts_from_prior() -> None:
    fam = preference_fam()
    lay_same = two_objects((7, 6), (6, 2))
    lay_new = two_objects((7, 6), (6, 2), agent=OTHER_AGENT)
    e = episode(fam, to(lay_new, "B", "test"), "expected", "multi-agent")
    u = episode(fam, to(lay_same, "B", "test"), "unexpected", "multi-agent")
    se, su = score_pair(e, u)
    assert se < su


def test_inaccessible_goal() -> None:
    fam = preference_fam()
    cage = frozenset({(6, 6), (7, 6), (8, 6), (6, 7), (6, 8)})  # A at (7, 7) walled in (with the border)
    e = episode(fam, to(two_objects((7, 7), (2, 6), walls=cage), "B", "test"), "expected", "inaccessible-goal")
    u = episode(fam, to(two_objects((7, 7), (2, 6)), "B", "test"), "unexpected", "inaccessible-goal")
    se, su = score_pair(e, u)
    assert se < su


WALL = frozenset({(5, 2), (5, 3), (5, 4), (5, 5), (5, 6)})
DETOUR = line((2, 4), (4, 7), (6, 7), (8, 4))  # around the bottom of the wall


def one_object(goal: Cell, walls: frozenset[Cell] = frozenset(), home: Cell = (2, 4)) -> Layout:
    agent = Agent("agent-0", "pentagon", (40, 90, 220), home)
    return empty_layout(walls=walls, objects=(obj(HEART, "A", goal),), agents=(agent,))


def efficiency_fam(rational: bool) -> list[Trial]:
    lay = one_object((8, 4), WALL if rational else frozenset())
    return [make_trial(lay, DETOUR, "A") for _ in range(8)]


def test_efficiency_path() -> None:
    fam = efficiency_fam(rational=True)
    open_lay = one_object((8, 4))
    e = episode(fam, to(open_lay, "A", "test"), "expected", "efficiency-path")
    u = episode(fam, make_trial(open_lay, DETOUR, "A", "test"), "unexpected", "efficiency-path")
    se, su = score_pair(e, u)
    assert se < su


def test_efficiency_time() -> None:
    fam = efficiency_fam(rational=True)
    e = episode(fam, to(one_object((8, 4)), "A", "test"), "expected", "efficiency-time")
    curved = line((2, 4), (4, 7), (6, 5))  # as long as a straight walk, to a closer goal
    u = episode(fam, make_trial(one_object((6, 5)), curved, "A", "test"), "unexpected", "efficiency-time")
    se, su = score_pair(e, u)
    assert se < su


def test_efficiency_irrational() -> None:
    test = make_trial(one_object((8, 4)), DETOUR, "A", "test")
    e = episode(efficiency_fam(rational=False), test, "expected", "efficiency-irrational")
    u = episode(efficiency_fam(rational=True), test, "unexpected", "efficiency-irrational")
    se, su = score_pair(e, u)
    assert se < su
    obs = make_observer("inverse-planner")
    irrational = obs.familiarize(e.familiarization)[(AGENT.shape, AGENT.color)]
    rational = obs.familiarize(u.familiarization)[(AGENT.shape, AGENT.color)]
    betas = np.asarray(obs.betas)
    assert (np.exp(irrational.log_beta) @ betas) < (np.exp(rational.log_beta) @ betas)


BOX = frozenset({(6, 2), (7, 2), (8, 2), (6, 3), (6, 4), (7, 4), (8, 4)})  # around (7, 3), lock at (6, 3)


def instrumental_layout(barriers: frozenset[Cell] = BOX, lock: Cell | None = (6, 3), key: Cell = (2, 7)) -> Layout:
    agent = Agent("agent-0", "pentagon", (40, 90, 220), (2, 2))
    return empty_layout(barriers=barriers - ({lock} if lock else set()), lock=lock, key=key,
                        objects=(obj(HEART, "A", (7, 3)),), agents=(agent,))


def instrumental_fam() -> list[Trial]:
    from bib.tasks.agents import InstrumentalAgent, rollout

    lay = instrumental_layout(lock=(6, 3))
    rng = np.random.default_rng(0)
    return [make_trial(lay, rollout(InstrumentalAgent("A", rng), lay)[0], "A") for _ in range(8)]


def test_instrumental_familiarization_uses_the_key() -> None:
    fam = instrumental_fam()
    assert [e.type for e in fam[0].events] == ["pickup-key", "unlock"]
    obs = make_observer("inverse-planner")
    belief = obs.familiarize(fam)[(AGENT.shape, AGENT.color)]
    assert int(np.argmax(belief.log_beta)) == len(obs.betas) - 1  # the key detour is rational


def test_instrumental_no_barrier() -> None:
    fam = instrumental_fam()
    lay = instrumental_layout(barriers=frozenset(), lock=None)
    e = episode(fam, to(lay, "A", "test"), "expected", "instrumental-no-barrier")
    u = episode(fam, to(lay, "key", "test"), "unexpected", "instrumental-no-barrier")
    se, su = score_pair(e, u)
    assert se < su


def test_instrumental_inconsequential() -> None:
    fam = instrumental_fam()
    lay = instrumental_layout(barriers=BOX - {(8, 4), (7, 4)})  # open at the bottom: the object is reachable
    e = episode(fam, to(lay, "A", "test"), "expected", "instrumental-inconsequential")
    u = episode(fam, to(lay, "key", "test"), "unexpected", "instrumental-inconsequential")
    se, su = score_pair(e, u)
    assert se < su


def test_instrumental_blocking() -> None:
    fam = instrumental_fam()
    blocked = instrumental_layout()
    opened = instrumental_layout(barriers=BOX - {(8, 4), (7, 4)})
    e = episode(fam, to(blocked, "key", "test"), "expected", "instrumental-blocking")
    u = episode(fam, to(opened, "key", "test"), "unexpected", "instrumental-blocking")
    se, su = score_pair(e, u)
    assert se < su
    assert se < 1.0  # fetching the key is the rational first leg of the plan


def test_a_familiarization_that_stops_on_the_key_means_the_key_is_wanted() -> None:
    """The key-as-goal twin: 8 familiarization trials stop on the key (the object locked in). A familiarization
    trial shows the agent reach its goal, so the posterior puts the goal on the key, not on the object with the
    trial cut short; in the test (no barrier) walking to the key is then expected and to the object is not."""
    lay = instrumental_layout()
    fam = [to(lay, "key") for _ in range(8)]
    obs = make_observer("inverse-planner")
    belief = obs.familiarize(fam)[(AGENT.shape, AGENT.color)]
    assert belief.counts[("key", (0, 0, 0))] > 7.9 and belief.counts.get(HEART, 0.0) < 0.1
    free = instrumental_layout(barriers=frozenset(), lock=None)
    e = episode(fam, to(free, "key", "test"), "expected", "instrumental-no-barrier")
    u = episode(fam, to(free, "A", "test"), "unexpected", "instrumental-no-barrier")
    se, su = score_pair(e, u)
    assert se < su
    # a TEST trial may still stop right after the pickup of a key the plan needs (BIB's blocking test)
    blocked = episode(instrumental_fam(), to(lay, "key", "test"), "expected", "instrumental-blocking")
    assert obs.surprise(blocked).max() < 1.0


def test_an_object_wanted_with_the_key_is_reached_only_holding_the_key() -> None:
    """Issue 26's key collectors: the goal "the object with the key" is not reached by arriving on the object
    without the key (the agent would go on to fetch it), so a walk that stops there is impossible under that
    goal; holding the key, arriving on the object ends the trial as for any goal. Before this, a direct walk
    whose moves also led towards the key counted as reaching the collector's goal (2 of the 270 key-collector
    twins of bib-ctrl whose collecting walk is optimal were called the wrong way round)."""
    from bib.observers.goal_values import layout_goal_values
    from bib.observers.inverse_planning import Goal, termination

    lay = instrumental_layout(barriers=frozenset(), lock=None, key=(6, 6))
    goals = [Goal(HEART, (7, 3), False), Goal(("via-key:" + HEART[0], HEART[1]), (7, 3), False, via_key=True)]
    stack = np.stack([layout_goal_values([lay])[0][(7, 3)]] * 2)
    direct = make_trial(lay, line((2, 2), (5, 2), (7, 3)), "A", "test")
    fetched = make_trial(lay, line((2, 2), (6, 6), (7, 3)), "A", "test")
    over = make_trial(lay, line((2, 2), (7, 3), (7, 5), (6, 6)), "key", "test")  # over the object, then to the key
    assert termination(direct, goals, stack)[:, -1].tolist() == [1.0, 0.0]
    assert termination(fetched, goals, stack)[:, -1].tolist() == [1.0, 1.0]
    walked_over = termination(over, goals, stack)
    on_object = over.path.index((7, 3)) - 1
    assert walked_over[0, on_object] == 0.0 and walked_over[1, on_object] == 1.0  # passing it before the key


# ---------------------------------------------------------------- properties


def test_surprise_has_one_value_per_test_step_and_is_deterministic() -> None:
    fam = preference_fam()
    e = episode(fam, to(two_objects((2, 7), (7, 2)), "A", "test"), "expected", "preference")
    a = make_observer("inverse-planner").surprise(e)
    b = make_observer("inverse-planner").surprise(e)
    assert a.shape == (e.test.n_steps,)
    assert np.array_equal(a, b)
    assert np.all(a >= 0)


def test_noise_bounds_surprise() -> None:
    """An impossible move (a stay) costs exactly -log(epsilon / (legal moves + 1))."""
    fam = preference_fam()
    lay = two_objects((2, 7), (7, 2))
    path = [(2, 2), (2, 2)] + line((2, 2), (2, 7))[1:]
    e = episode(fam, make_trial(lay, path, "A", "test"), "expected", "preference")
    obs = InversePlanner(epsilon=1e-3)
    s = obs.surprise(e)
    n_legal = int(layout_graph(lay).legal[2, 2].sum())
    assert s[0] == pytest.approx(-math.log(1e-3 / (n_legal + 1)), rel=1e-9)


def test_sequential_option_scores_the_updated_predictive() -> None:
    fam = preference_fam()
    e = episode(fam, to(two_objects((2, 7), (7, 2)), "B", "test"), "unexpected", "preference")
    marginal = InversePlanner().surprise(e)
    sequential = InversePlanner(sequential=True).surprise(e)
    # both start from the same predictive; later steps differ once the posterior moves
    assert marginal[0] == pytest.approx(sequential[0])
    assert not np.allclose(marginal, sequential)
    # the sequential surprises sum to -log p(whole path)
    obs = InversePlanner(sequential=True)
    result = obs.infer_trial(e.test, obs.belief_of(obs.familiarize(fam), e.test))
    assert result.sequential_surprise.sum() == pytest.approx(sequential.sum())


def test_bad_options_are_rejected() -> None:
    from bib.errors import BibInputError

    with pytest.raises(BibInputError, match="betas"):
        make_observer("inverse-planner", betas=[0.0, 1.0])
    with pytest.raises(BibInputError, match="epsilon"):
        make_observer("inverse-planner", epsilon=0.0)
    with pytest.raises(BibInputError, match="unknown option"):
        make_observer("inverse-planner", temperature=3)
