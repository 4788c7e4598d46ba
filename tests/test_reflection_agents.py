"""Agents and the reality check: V1 definitions on whole tuples, Proposition 9 as properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bib.reflection import environments as E
from bib.reflection.agents import ConstantAgent, FunctionAgent, NaiveLearner, RandomAgent
from bib.reflection.environments import Environment, EnvSpec
from bib.reflection.harness import run_battery
from bib.reflection.policy import Uniforms
from bib.reflection.reality_check import RealityCheck


@st.composite
def histories(draw, num_actions=2, max_len=12):
    """Flat prompts (r0, o0, a0, ..., rn, on) with small rewards and 2 observations."""
    n = draw(st.integers(0, max_len))
    out: list[int] = []
    for _ in range(n):
        out += [draw(st.integers(-2, 2)), draw(st.integers(0, 1)), draw(st.integers(0, num_actions - 1))]
    out += [draw(st.integers(-2, 2)), draw(st.integers(0, 1))]
    return tuple(out)


def naive_v1(history, num_actions, u):
    """The V1 NaiveLearner body on a whole tuple, with uniforms ``u`` (explore, then action)."""
    if u[0] < 0.15:
        return int(u[1] * num_actions)
    sums, counts = [0] * num_actions, [0] * num_actions
    for i in range(3, len(history), 3):
        sums[history[i - 1]] += history[i]
        counts[history[i - 1]] += 1
    values = [float(s) / (1 + c) for s, c in zip(sums, counts)]
    return values.index(max(values))


def test_naive_learner_ignores_observations_and_breaks_ties_low():
    agent = NaiveLearner(0)
    agent.uniforms = lambda: 0.5  # never explore
    assert agent.act((0, 0), 2, 1) == 0  # all zero: tie -> 0
    assert agent.act((0, 0, 1, 1, 0), 2, 1) == 1  # 1/(1+1) > 0
    assert agent.act((0, 0, 1, -1, 0), 2, 1) == 0
    assert agent.act((0, 1, 1, 1, 1, 0, 3, 0), 3, 2) == 0  # after 1: 1 -> 0.5; after 0: 3 -> 1.5
    assert agent.act((0, 0, 1, 1, 0, 0, 3, 1), 3, 2) == 0  # ... observations do not matter
    assert agent.act((0, 0, 2, 2, 0, 0, 1, 0), 3, 1) == 2  # after 2: 2 -> 1.0; after 0: 1 -> 0.5
    assert agent.act((5, 0, 1, 0, 0), 2, 1) == 0  # the first reward follows no action


@given(histories(num_actions=3))
def test_naive_learner_matches_the_v1_definition(history):
    draws = iter([0.9, 0.0])
    agent = NaiveLearner(0)
    agent.uniforms = lambda: next(draws)
    assert agent.act(history, 3, 2) == naive_v1(history, 3, [0.9, 0.0])


@given(histories(), histories())
def test_concatenation_equals_walking(left, right):
    left = left + (1,)  # a play
    for agent in (RandomAgent(3), NaiveLearner(4)):
        p = agent.policy(2, 2)
        joined = p.concat(p.walk(left), right, p.walk(right))
        assert joined == p.walk(left + right)


def test_random_agent_is_memoised_and_seeded():
    a, b, c = RandomAgent(1), RandomAgent(1), RandomAgent(2)
    h = [(0, 0, x, 1, 0) for x in (0, 1)] * 20
    first = [a.act(x, 2, 1) for x in h]
    assert first == [a.act(x, 2, 1) for x in h] == [b.act(x, 2, 1) for x in h]
    prompts = [(0, 0, 0, k, 0) for k in range(40)]
    assert [a.act(x, 2, 1) for x in prompts] != [c.act(x, 2, 1) for x in prompts]
    draws = [RandomAgent(s).act((0, 0), 10, 1) for s in range(200)]
    assert set(draws) == set(range(10))


def rc_v1(agent, history, num_actions, num_observations):
    """Definition 8 on a whole tuple (V1 reality_check)."""
    t0 = lambda h: agent.act(h, num_actions, num_observations)  # noqa: E731
    for i in range(len(history) // 3):
        if t0(history[: 3 * i + 2]) != history[3 * i + 2]:
            return t0(history[:2])
    return t0(history)


@given(histories())
def test_reality_check_matches_definition_8(history):
    for inner in (RandomAgent(5), NaiveLearner(6)):
        assert RealityCheck(inner).act(history, 2, 2) == rc_v1(inner, history, 2, 2)


@given(histories())
def test_reality_check_is_deterministic_and_idempotent(history):
    inner = NaiveLearner(7)
    rc = RealityCheck(inner)
    rcrc = RealityCheck(RealityCheck(inner))
    assert rc.act(history, 2, 2) == rc.act(history, 2, 2) == rcrc.act(history, 2, 2)
    assert RealityCheck(NaiveLearner(7)).act(history, 2, 2) == rc.act(history, 2, 2)


class Bandit(Environment):
    """An ordinary environment (no simulation): action 1 pays +1 with probability 0.7."""

    name = "Bandit"
    num_observations = 2

    def _react(self, action: int) -> tuple[int, int]:
        u = self.uniforms()
        return (1 if (action == 1) == (u < 0.7) else -1), int(u * 2)


@pytest.mark.parametrize("make", [RandomAgent, NaiveLearner])
def test_reality_check_equals_the_agent_in_an_ordinary_environment(make):
    plain = run_battery(make(8), 300, 0, [EnvSpec(Bandit)])
    rc = run_battery(RealityCheck(make(8)), 300, 0, [EnvSpec(Bandit)])
    assert plain[0].score == rc[0].score


def test_reality_check_takes_no_options_and_constant_is_its_own_check():
    with pytest.raises(TypeError):
        RealityCheck(RandomAgent(0)).policy(2, 1, learning_rate=1)
    assert RealityCheck(ConstantAgent()).act((0, 0, 1, 1, 0), 2, 1) == 0


def test_reality_check_freezes_on_counterfactual_histories():
    # IgnoreActions zeroes the actions: RC's simulation becomes inconsistent and plays its first action.
    agent = FunctionAgent(lambda h, na, no: (len(h) // 3) % 2)  # alternates 0, 1, 0, ...
    rc = RealityCheck(agent)
    env = EnvSpec(E.IgnoreActions).make(rc, Uniforms(np.random.default_rng(0)))
    env.start()
    rewards = [env.step(a)[0] for a in (0, 1, 0, 1, 0, 1)]
    # zeroed actions stay consistent while T0 played 0 (only a0); from the third step the check
    # fails on a1 -> RC plays its first action, 0, for ever
    assert rewards == [1, 1, 1, -1, 1, -1]
    assert rc.act((0, 0, 0, 0, 0, 0, 0, 0), 2, 1) == 0
