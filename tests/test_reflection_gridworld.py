"""Extended gridworld environments: every rule against hand-made agents whose rewards are known exactly,
an independent replay of the view rules, episodes, caching, the measure and the reality check."""

from __future__ import annotations

import numpy as np
import pytest

from bib.episode import Episode, Trial
from bib.reflection import gridworld as G
from bib.reflection.agents import Agent as HistoryAgent
from bib.reflection.agents import NaiveLearner, RandomAgent
from bib.reflection.gridworld import (
    MAX_MOVES,
    MIRROR_ACTION,
    Codec,
    GridEnvSpec,
    MarkovAgent,
    World,
    grid_battery,
    measure_runs,
    run_grid_battery,
    run_grid_environment,
)
from bib.reflection.policy import IllegalActionError, Policy, Uniforms
from bib.reflection.reality_check import RealityCheck
from bib.tasks import make_unit, validate_episode
from bib.tasks.agents import RationalAgent
from bib.world.dynamics import ACTIONS, STAY, AgentState, move_legal, step
from bib.world.grid import Agent, GridObject, Layout, border_walls

N, E, W = 0, 2, 6


def tiny_episode() -> Episode:
    """Two trials on a 7 x 7 grid: A and B, then the same objects swapped, one inner wall."""
    agent = Agent("agent-0", "pentagon", (40, 90, 220), (3, 4))
    a = GridObject("A", "heart", (220, 40, 60), (1, 1))
    b = GridObject("B", "cube", (40, 170, 200), (5, 2))
    walls = border_walls(7, 7) | {(3, 2)}
    lay1 = Layout(7, 7, walls=walls, objects=(a, b), agents=(agent,))
    lay2 = Layout(7, 7, walls=walls, objects=(GridObject("A", "heart", (220, 40, 60), (5, 2)),
                                             GridObject("B", "cube", (40, 170, 200), (1, 1))), agents=(agent,))
    trials = (Trial("familiarization", lay1, ((3, 4),)), Trial("test", lay2, ((3, 4),)))
    return Episode("tiny", None, "preference", "preference", "none", 0, 7, 7, trials)


BASES = [tiny_episode()]


def keyed_bases() -> list[Episode]:
    """Real BIB episodes with keys and locks, and a preference episode."""
    return [make_unit("instrumental-no-barrier", 0, 0)[0], make_unit("preference", 0, 0)[0]]


class Always:
    """Hand-made agent: always the same action."""

    def __init__(self, action: int) -> None:
        self.action = action

    def act(self, layout: Layout, state: AgentState) -> int:
        return self.action


class Parity:
    """Hand-made agent: E on even columns, W on odd ones (so it oscillates between two cells)."""

    def act(self, layout: Layout, state: AgentState) -> int:
        return E if state.cell[0] % 2 == 0 else W


class KeyTaker:
    """Hand-made agent: steps onto a key next to it (if it does not hold one), else stays."""

    def act(self, layout: Layout, state: AgentState) -> int:
        if layout.key is not None and not state.has_key:
            for a in (0, 2, 4, 6):
                dx, dy = ACTIONS[a]
                if (state.cell[0] + dx, state.cell[1] + dy) == layout.key:
                    return a
        return STAY


class Greedy(Always):
    """Hand-made agent with ``with_options``: its greedy self is itself."""

    def with_options(self, greedy: bool = False) -> Greedy:
        return self


def run(cls, agent_obj, bases=BASES, sign=1, seed=0):
    codec = Codec()
    agent = MarkovAgent(agent_obj, codec, "hand-made")
    world = World(bases, codec)
    res = run_grid_environment(GridEnvSpec(cls, sign), agent, world, Uniforms(np.random.default_rng(seed)))
    return res, agent


def trajectory(bases, agent, max_moves=MAX_MOVES):
    """Independent replay of the world's dynamics: (layout, state, action, previous state) per decision."""
    out = []
    for ep in bases:
        for trial in ep.trials:
            layout = trial.layout
            s, prev, t = AgentState(layout.agent.home), None, 0
            while True:
                a = agent.act(layout, s)
                out.append((layout, s, a, prev))
                if a == STAY:
                    break
                nxt = step(layout, s, a)[0] if move_legal(layout, s.cell, a, s.unlocked) else s
                prev, s, t = s, nxt, t + 1
                if t >= max_moves:
                    break
    return out


# ---------------------------------------------------------------- hand-made agents, exact rewards


@pytest.mark.parametrize("action,expected", [(N, 1.0), (E, -1.0), (W, -1.0), (STAY, 1.0)])
def test_mirror_world_rewards_mirror_symmetric_actions_exactly(action, expected):
    res, _ = run(G.MirrorWorld, Always(action))
    assert res.score == expected  # first percept 0, then +-1 on every judged action
    opp, _ = run(G.MirrorWorld, Always(action), sign=-1)
    assert opp.score == -expected
    steps = 2 if action == STAY else 2 * MAX_MOVES
    assert res.steps == steps and res.total == expected * steps


def test_delayed_mirror_pays_the_verdicts_three_steps_late():
    res, _ = run(G.DelayedMirror, Always(N))
    assert res.total == res.steps - G.DelayedMirror.DELAY
    res, _ = run(G.DelayedMirror, Always(E))
    assert res.total == -(res.steps - G.DelayedMirror.DELAY)


@pytest.mark.parametrize("cls", [G.SwappedObjects, G.KeyElsewhere, G.IgnoreDistractors, G.FourMoves, G.FalseKey,
                                 G.GridIgnoreRewards, G.GridIgnoreRewards2, G.GridFalseMemories, G.GridDelayedRewards,
                                 G.GridBackwardConsciousness, G.EarlierState])
def test_a_constant_agent_scores_plus_one_where_the_rule_only_rewrites_observations(cls):
    # a constant agent does the same whatever the (counterfactual) observation: +1 on every action
    for bases in (BASES, keyed_bases()):
        res, _ = run(cls, Always(N), bases)
        assert res.score == 1.0
        assert run(cls, Always(N), bases, sign=-1)[0].score == -1.0


def test_earlier_state_punishes_an_oscillating_agent_after_the_first_step_of_each_trial():
    res, _ = run(G.EarlierState, Parity())
    trials = sum(len(ep.trials) for ep in BASES)
    # each trial: its first action +1 (no earlier state), then -1 (the previous cell has the other parity)
    assert res.total == trials * 1 - (res.steps - trials)


def test_incentivize_greedy_scores_minus_one_without_the_option_and_plus_one_with_it():
    assert run(G.IncentivizeGreedy, Always(E))[0].score == -1.0
    assert run(G.IncentivizeGreedy, Greedy(E))[0].score == 1.0
    assert run(G.IncentivizeGreedy, Always(E), sign=-1)[0].score == 1.0


def tempting_draws(bases, seed: int) -> list[bool]:
    """The button draws TemptingKey makes: one uniform per trial that can show a button."""
    u = Uniforms(np.random.default_rng(seed))
    return [u() < G.TemptingKey.PROBABILITY for ep in bases for t in ep.trials if G.button_cell(t.layout)]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_tempting_key_rewards_pushing_a_shown_button_and_not_wanting_to_push_a_missing_one(seed):
    bases = [make_unit("preference", i, 0)[0] for i in range(2)]  # 18 trials without key or lock
    shown = tempting_draws(bases, seed)
    taker, _ = run(G.TemptingKey, KeyTaker(), bases, seed=seed)
    # KeyTaker: shown -> steps onto it (+1), then stays (0); missing -> it would push (-1), stays
    assert taker.total == sum(1 if s else -1 for s in shown)
    assert taker.steps == sum(2 if s else 1 for s in shown)
    stayer, _ = run(G.TemptingKey, Always(STAY), bases, seed=seed)
    assert stayer.total == sum(-1 if s else 1 for s in shown) and stayer.steps == len(shown)


def test_tempting_key_episodes_show_the_button_and_its_pickup():
    bases = [make_unit("preference", i, 0)[0] for i in range(2)]
    res, _ = run(G.TemptingKey, KeyTaker(), bases, seed=1)
    eps = res.episodes()
    shown = [t for ep in eps for t in ep.trials if t.layout.key is not None]
    assert shown and all(t.pickup_step() == 1 and t.goal == "key" for t in shown)
    assert all(validate_episode(ep) == [] for ep in eps)


class _HandPolicy(Policy):
    """State: (percepts seen, last reward seen or None); the action is ``choose(state)``."""

    def __init__(self, choose) -> None:  # noqa: ANN001
        self.num_actions, self.num_observations, self.choose = 9, G.OBSERVATIONS, choose

    def empty(self):  # noqa: ANN201
        return (0, None)

    def percept(self, state, reward, obs):  # noqa: ANN001, ANN201
        return (state[0] + 1, reward)

    def record(self, state, action):  # noqa: ANN001, ANN201
        return state

    def act(self, state):  # noqa: ANN001, ANN201
        return self.choose(state)


def reader_action(last_reward) -> int:  # noqa: ANN001
    """RewardReader: W after no reward or 0, N after a positive reward, E after a negative one."""
    return W if not last_reward else (N if last_reward > 0 else E)


class RewardReader(HistoryAgent):
    """Hand-made history agent that reads only the last reward (blind to observations)."""

    def _make_policy(self, num_actions, num_observations, **options):  # noqa: ANN001, ANN201
        return _HandPolicy(lambda s: reader_action(s[1]))


class Counter(HistoryAgent):
    """Hand-made history agent that counts its percepts: N, E, W by the count mod 3."""

    def _make_policy(self, num_actions, num_observations, **options):  # noqa: ANN001, ANN201
        return _HandPolicy(lambda s: (N, E, W)[s[0] % 3])


def run_history(cls, agent, sign=1):
    codec = Codec()
    return run_grid_environment(GridEnvSpec(cls, sign), agent, World(BASES, codec), Uniforms(np.random.default_rng(0)))


def _delayed(rewards):  # noqa: ANN001, ANN202
    k = len(rewards) - 1
    return rewards[0] if k == 0 else 0 if k % 2 else rewards[k] + rewards[k - 1]


# the last reward each rule shows the simulated agent, from the delivered rewards r_0 (= 0), r_1, ..., r_k
SHOWN = {
    G.GridIgnoreRewards: lambda rewards: 0,  # every reward 0
    G.GridIgnoreRewards2: lambda rewards: [r for r in rewards if r <= 0][-1],  # rewarded steps deleted
    G.GridDelayedRewards: _delayed,  # every other reward one step late: 1,1,1,1 -> 1,0,2,0
    G.GridBackwardConsciousness: lambda rewards: rewards[0],  # the reversed history ends at the first percept
}


@pytest.mark.parametrize("cls", list(SHOWN))
@pytest.mark.parametrize("sign", [1, -1])
def test_reward_rewriting_rules_pay_a_reward_reading_agent_exactly(cls, sign):
    res = run_history(cls, RewardReader(), sign)
    assert res.steps == 2 * MAX_MOVES  # it never stays: both trials run to the move limit
    rewards, paid = [0], []
    for _ in range(res.steps):
        r = sign * (1 if reader_action(rewards[-1]) == reader_action(SHOWN[cls](rewards)) else -1)
        paid.append(r)
        rewards.append(r)
    assert res.total == sum(paid)
    assert len(set(paid)) == 2 or sign == -1  # both verdicts occur: the rule is not the constant +1 of a blind agent


@pytest.mark.parametrize(("cls", "expected"), [(G.GridFalseMemories, -1.0), (G.GridIgnoreRewards, 1.0),
                                               (G.GridBackwardConsciousness, 1.0), (G.GridDelayedRewards, 1.0)])
def test_a_percept_counting_agent_sees_the_false_prehistory_and_nothing_else(cls, expected):
    # FalseMemories prepends two percepts: the count mod 3 always differs; the other rules keep the count
    assert run_history(cls, Counter()).score == expected
    assert run_history(cls, Counter(), sign=-1).score == -expected


# ---------------------------------------------------------------- independent replay of the view rules


VIEWS = {
    G.MirrorWorld: (G.mirror, lambda a: MIRROR_ACTION[a]),
    G.SwappedObjects: (G.swap_objects, lambda a: a),
    G.KeyElsewhere: (G.key_elsewhere, lambda a: a),
    G.IgnoreDistractors: (G.only_goal, lambda a: a),
    G.FourMoves: (G.four_moves, lambda a: a),
    G.FalseKey: (G.holding_key, lambda a: a),
}


@pytest.mark.parametrize("cls", list(VIEWS))
def test_view_rules_match_an_independent_replay_for_a_deterministic_planner(cls):
    view, back = VIEWS[cls]
    bases = keyed_bases() + BASES
    agent = RationalAgent(["A", "B"])  # no rng: the first optimal move, a pure function of (layout, state)
    expected = [1 if a == back(agent.act(*view(lay, s))) else -1 for lay, s, a, _ in trajectory(bases, agent)]
    res, _ = run(cls, agent, bases)
    assert res.steps == len(expected) and res.total == sum(expected)
    if cls is G.IgnoreDistractors:
        assert res.score == 1.0  # a planner after its goal already ignores the other object
    else:
        assert -1 < res.score < 1  # the other views matter to a planner


def test_earlier_state_matches_an_independent_replay():
    bases = keyed_bases()
    agent = RationalAgent(["A", "B"])
    rows = trajectory(bases, agent)
    expected = [1 if a == agent.act(lay, prev if prev is not None else s) else -1 for lay, s, a, prev in rows]
    res, _ = run(G.EarlierState, agent, bases)
    assert res.total == sum(expected)


def test_backward_consciousness_asks_about_the_worlds_first_observation():
    bases = keyed_bases()
    agent = RationalAgent(["A", "B"])
    rows = trajectory(bases, agent)
    first = agent.act(rows[0][0], rows[0][1])
    res, _ = run(G.GridBackwardConsciousness, agent, bases)
    assert res.total == sum(1 if a == first else -1 for _, _, a, _ in rows)


def test_views_are_what_they_say():
    ep = make_unit("instrumental-no-barrier", 0, 0)[0]
    lay = ep.trials[0].layout
    s = AgentState(lay.agent.home)
    m_lay, m_s = G.mirror(lay, s)
    assert G.mirror(m_lay, m_s) == (lay, s)
    assert m_s.cell == (lay.width - 1 - s.cell[0], s.cell[1]) and m_lay.key == (lay.width - 1 - lay.key[0], lay.key[1])
    assert all(ACTIONS[MIRROR_ACTION[a]] == (-dx, dy) for a, (dx, dy) in enumerate(ACTIONS))
    k_lay, _ = G.key_elsewhere(lay, s)
    assert k_lay.key != lay.key and k_lay.is_free(k_lay.key) and k_lay.objects == lay.objects
    f_lay, f_s = G.holding_key(lay, s)
    assert f_s.has_key and f_lay == lay
    t = BASES[0].trials[0].layout
    sw, _ = G.swap_objects(t, AgentState(t.agent.home))
    assert sw.object("A").cell == t.object("B").cell and sw.object("B").cell == t.object("A").cell
    only, _ = G.only_goal(t, AgentState(t.agent.home))
    assert [o.id for o in only.objects] == ["A"]
    assert G.four_moves(t, s)[0].moves == 4


# ---------------------------------------------------------------- episodes, caching, errors


def test_every_run_is_a_valid_episode_set():
    bases = keyed_bases() + [make_unit(c, 0, 1)[0] for c in ("inaccessible-goal", "efficiency-path")]
    codec = Codec()
    agent = MarkovAgent(RationalAgent(["A", "B"], np.random.default_rng(0)), codec, "rational")
    runs = run_grid_battery(agent, bases, codec, 0, keep=True)
    for r in runs:
        eps = r.episodes()
        assert len(eps) == len(bases)
        for ep, base in zip(eps, bases):
            assert validate_episode(ep) == [], (r.environment, validate_episode(ep))
            assert [t.phase for t in ep.trials] == [t.phase for t in base.trials]
            assert ep.condition == "extended" and ep.outcome == "none"
        assert sum(t.n_steps for ep in eps for t in ep.trials) <= r.steps


def test_policy_queries_are_cached_per_observation_so_counterfactual_calls_do_not_multiply():
    bases = keyed_bases()
    codec = Codec()
    agent = MarkovAgent(RationalAgent(["A", "B"], np.random.default_rng(0)), codec, "rational")
    spec = GridEnvSpec(G.MirrorWorld)
    run_grid_environment(spec, agent, World(bases, codec), Uniforms(np.random.default_rng(0)))
    after_one = agent.queries
    assert after_one == len(agent.policy(9, G.OBSERVATIONS).cache) <= len(codec)
    run_grid_environment(GridEnvSpec(G.MirrorWorld, -1), agent, World(bases, codec), Uniforms(np.random.default_rng(0)))
    run_grid_environment(spec, RealityCheck(agent), World(bases, codec), Uniforms(np.random.default_rng(0)))
    assert agent.queries == after_one  # the opposite and the reality check ask nothing new


@pytest.mark.parametrize("answer", [12, -1, "N", None, 2.0, True])
def test_an_answer_that_is_no_action_is_named_with_the_state(answer):
    with pytest.raises(IllegalActionError, match=r"returned .* at cell \[3, 4\] \(has_key=False, unlocked=False\)"):
        run(G.MirrorWorld, Always(answer))


def test_a_blocked_move_leaves_the_agent_in_place_and_counts():
    res, _ = run(G.MirrorWorld, Always(N))
    path = res.world.records[0].path
    assert path[:3] == [(3, 4), (3, 3), (3, 2)] or path[1] == (3, 3)
    assert path[-1] == path[-2]  # it keeps bumping into the wall above
    assert res.world.bumps > 0


# ---------------------------------------------------------------- the measure


def battery_score(agent, bases, seed=0, rc=False):
    codec = Codec()
    a = agent(codec)
    runs = run_grid_battery(RealityCheck(a) if rc else a, bases, codec, seed, stream=2 if rc else 1)
    return measure_runs("x", rc, [runs]).mean


BATTERY_BASES = [make_unit(c, 0, 0)[0] for c in ("preference", "instrumental-blocking", "efficiency-path")]


def test_random_and_rational_agents_sit_near_zero():
    rand = battery_score(lambda c: MarkovAgent(G_random(), c, "random"), BATTERY_BASES)
    rat = battery_score(lambda c: MarkovAgent(RationalAgent(["A", "B"], np.random.default_rng(0)), c, "r"),
                        BATTERY_BASES)
    assert abs(rand) < 0.05 and abs(rat) < 0.05


class G_random:  # noqa: N801 - a hand-made random gridworld agent
    def __init__(self) -> None:
        self.rng = np.random.default_rng(5)

    def act(self, layout, state):
        return int(self.rng.integers(9))


@pytest.mark.parametrize("make", [
    lambda c: G.GridLearner(RationalAgent(["A", "B"], np.random.default_rng(0)), c, 0),
    lambda c: NaiveLearner(0),
])
def test_the_reality_check_raises_a_learners_self_reflection(make):
    plain = battery_score(make, BATTERY_BASES)
    rc = battery_score(make, BATTERY_BASES, rc=True)
    assert rc > plain + 0.05


def test_integer_agents_reach_the_gridworld_battery_and_runs_are_deterministic():
    a = battery_score(lambda c: RandomAgent(3), BATTERY_BASES[:1])
    b = battery_score(lambda c: RandomAgent(3), BATTERY_BASES[:1])
    assert a == b and abs(a) < 0.1


def test_battery_has_every_rule_and_its_opposite_and_covers_the_families():
    specs = grid_battery()
    assert len(G.RULES) >= 12 and len(specs) == 2 * len(G.RULES)
    assert {s.name for s in specs} >= {"MirrorWorld", "opposite(MirrorWorld)"}
    families = {cls.family for cls in G.RULES}
    assert families >= {"elsewhere", "ignore rewards", "policy property", "false memories", "delayed consequences"}
    assert G.grid_rule("opposite(FalseKey)").sign == -1


def test_the_learner_has_an_integer_face_on_the_classic_battery():
    from bib.reflection.harness import run_battery, summarise

    learner = G.GridLearner(RationalAgent(["A", "B"]), Codec(), 0)
    plain = run_battery(learner, 300, 0)
    rc = run_battery(RealityCheck(learner), 300, 0, stream=2)
    assert all(c.error is None for c in plain + rc) and len(plain) == 50
    p, r = summarise("l", False, 300, [plain]).mean, summarise("l", True, 300, [rc]).mean
    assert 0.1 < p < r  # V1's NaiveLearner, and its reality check above it (Table 1: 0.22 and 0.55)


def test_the_planner_stays_in_a_state_without_an_optimal_move():
    # holding the key below the lock of instrumental-blocking unit 0: the key/lock values give a finite cost,
    # yet no legal move lies on an optimal path (a learner's exploration and the views reach such states)
    from bib.world.keylock import optimal_cost, optimal_moves

    lay = make_unit("instrumental-blocking", 0, 0)[0].trials[0].layout
    s = AgentState((3, 3), True, False)
    goal = lay.goal_cell("A")
    assert optimal_cost(lay, goal, s) < np.inf and optimal_moves(lay, s, goal) == []
    assert RationalAgent(["A", "B"]).act(lay, s) == STAY
