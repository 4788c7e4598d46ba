"""Extended environments: each rule on hand-built histories, checked against whole-tuple V1 rewrites."""

from __future__ import annotations

import numpy as np
import pytest

from bib.reflection import environments as E
from bib.reflection.agents import ConstantAgent, FunctionAgent, NaiveLearner, RandomAgent
from bib.reflection.environments import EnvSpec, battery, opposite
from bib.reflection.harness import run_battery
from bib.reflection.policy import Uniforms


def probe(history: tuple, num_actions: int, num_observations: int) -> int:
    """A deterministic agent that depends on every symbol and its position."""
    return sum((i + 7) * (int(x) + 3) ** 2 for i, x in enumerate(history)) % num_actions


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __call__(self, history: tuple, num_actions: int, num_observations: int) -> int:
        self.calls.append(history)
        return probe(history, num_actions, num_observations)


def drive(cls, actions, sign=1, fn=probe):
    """Run ``cls`` on scripted actions; return the flat play and the list of rewards."""
    agent = FunctionAgent(fn, memoize=False)
    env = EnvSpec(cls, sign).make(agent, Uniforms(np.random.default_rng(3)))
    r, o = env.start()
    play, rewards = [r, o], [r]
    for a in actions:
        r, o = env.step(a)
        play += [a, r, o]
        rewards.append(r)
    return tuple(play), rewards


# --- V1 rewrites on whole tuples (transcribed from the reference rule table) -------------------


def triples(prompt):
    p = tuple(prompt) + (0,)
    return [p[i : i + 3] for i in range(0, len(p), 3)]


def flat(ts):
    return tuple(x for t in ts for x in t)[:-1]


REWRITES = {
    E.IgnoreRewards: lambda p: flat([(0, o, a) for r, o, a in triples(p)]),
    E.IgnoreRewards2: lambda p: flat([t for t in triples(p) if t[0] <= 0]),
    E.IgnoreActions: lambda p: flat([(r, o, 0) for r, o, a in triples(p)]),
    E.IgnoreObservations: lambda p: flat([(r, 0, a) for r, o, a in triples(p)]),
    E.FalseMemories: lambda p: (0, 0, 0, 0, 0, 0) + tuple(p),
    E.ShiftedRewards: lambda p: flat([(triples(p)[max(k - 1, 0)][0], o, a) for k, (r, o, a) in enumerate(triples(p))]),
    E.NthRewardMultipliedByN: lambda p: flat([(k * r, o, a) for k, (r, o, a) in enumerate(triples(p))]),
    E.Repeater: lambda p: tuple(x for t in triples(p)[:-1] for x in t + t) + tuple(p[-2:]),
    E.LimitedMemory: lambda p: tuple(p[-14:]),
    E.CensoredObservation: lambda p: flat([t for t in triples(p) if t[1] != 2]),
    E.AfterImages: lambda p: flat(
        [(r, o | (triples(p)[k - 1][1] if k else 0), a) for k, (r, o, a) in enumerate(triples(p))]
    ),
}


def delayed(p):
    ts = triples(p)
    out = []
    for k, (r, o, a) in enumerate(ts):
        out.append((r if k == 0 else (0 if k % 2 else r + ts[k - 1][0]), o, a))
    return flat(out)


def reversed_prompt(play):
    ts = [play[i : i + 3] for i in range(0, len(play), 3)]
    out: list[int] = []
    for k in range(len(ts) - 1, -1, -1):
        out += [ts[k][0], ts[k][1]]
        if k > 0:
            out.append(ts[k - 1][2])
    return tuple(out)


REWRITES[E.DelayedRewards] = delayed


@pytest.mark.parametrize("cls", list(REWRITES), ids=lambda c: c.name)
@pytest.mark.parametrize("sign", [1, -1])
def test_rewrite_rules_match_whole_tuple_semantics(cls, sign):
    actions = np.random.default_rng(11).integers(0, 2, size=40).tolist()
    play, rewards = drive(cls, actions, sign)
    for n in range(1, len(rewards)):
        prompt, action = play[: 3 * n - 1], play[3 * n - 1]
        expected = 1 if action == probe(REWRITES[cls](prompt), 2, cls.num_observations) else -1
        assert rewards[n] == sign * expected, (cls.name, n)
    assert rewards[0] == 0


def test_rewrite_examples_from_the_rule_table():
    # DelayedRewards: rewards 1,1,1,1,1 -> 1,0,2,0,2
    assert delayed((1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0))[0::3] == (1, 0, 2, 0, 2)
    # Backward consciousness on (r0 o0 a0 r1 o1 a1 r2 o2 a2): r2 o2 a1 r1 o1 a0 r0 o0
    assert reversed_prompt((10, 11, 12, 20, 21, 22, 30, 31, 32)) == (30, 31, 22, 20, 21, 12, 10, 11)


@pytest.mark.parametrize("sign", [1, -1])
def test_dejavu_and_backward_consciousness_feed_the_rewritten_histories(sign):
    actions = np.random.default_rng(5).integers(0, 2, size=25).tolist()
    rec = Recorder()
    play, rewards = drive(E.DejaVu, actions, sign, fn=rec)
    for n in range(1, len(rewards)):
        prompt = play[: 3 * n - 1]
        assert play[: 3 * n] + prompt in rec.calls
        assert rewards[n] == sign * (1 if play[3 * n - 1] == probe(play[: 3 * n] + prompt, 2, 1) else -1)
    play, rewards = drive(E.BackwardConsciousness, actions, sign)
    for n in range(1, len(rewards)):
        expected = probe(reversed_prompt(play[: 3 * n]), 2, 1)
        assert rewards[n] == sign * (1 if play[3 * n - 1] == expected else -1)


def test_opposite_inner_environment_sees_negated_rewards():
    # V1 minus_rewards: IgnoreRewards2 strips triples whose *actual* (negated) reward is positive.
    play, rewards = drive(E.IgnoreRewards2, [0, 1, 1, 0, 1, 0, 0, 1], sign=-1)
    assert play[0::3] == tuple(rewards)
    assert any(r > 0 for r in rewards)


def test_ignore_rewards3_compares_with_the_all_zero_environment():
    rec = Recorder()
    play, rewards = drive(E.IgnoreRewards3, [1, 0, 1, 1, 0], fn=rec)
    zero = ()
    for n in range(1, len(rewards)):
        zero += (0, 0)
        a = probe(zero, 2, 1)
        assert rewards[n] == (1 if play[3 * n - 1] == a else -1)
        zero += (a,)


def test_third_action_and_learning_rate_use_call_options():
    seen = []

    def fn(history, num_actions, num_observations, **options):
        seen.append((num_actions, tuple(options)))
        return 2 if num_actions == 3 else 0

    agent = FunctionAgent(fn, memoize=False)
    env = EnvSpec(E.ThirdActionForbidden).make(agent, Uniforms(np.random.default_rng(0)))
    env.start()
    assert env.step(0) == (-1, 0)  # the 3-action simulation plays 2
    assert (3, ()) in seen
    # built-in agents and RC take no learning_rate: TypeError -> -1 (opposite: +1)
    cells = run_battery(RandomAgent(0), 20, 0, [EnvSpec(E.IncentivizeLearningRate), opposite(E.IncentivizeLearningRate)])
    assert [c.score for c in cells] == [-19 / 20, 19 / 20]


def test_self_recognition_and_tempting_button_replace_the_last_observation():
    rec = Recorder()
    play, rewards = drive(E.SelfRecognition, [1, 0] * 30, fn=rec)
    claims = {2: (0, 0), 3: (0, 1), 4: (1, 0), 5: (1, 1)}
    for n in range(1, len(rewards)):
        prompt, action = play[: 3 * n - 1], play[3 * n - 1]
        if prompt[-1] in (0, 1):
            assert rewards[n] == 0
            continue
        b, you = claims[prompt[-1]]
        truth = probe(prompt[:-1] + (b,), 2, 6) == you
        assert rewards[n] == (1 if (action == 1) == truth else -1)
    for cls in (E.TemptingButton, E.TemptingButtonVariation):
        play, rewards = drive(cls, [1, 0, 1, 1, 0, 0] * 8)
        for n in range(1, len(rewards)):
            prompt, action = play[: 3 * n - 1], play[3 * n - 1]
            would_push = probe(prompt[:-1] + (1,), 2, 2) != 0
            if prompt[-1] == 1:
                expected = 1 if action == 1 else (-1 if cls is E.TemptingButton else 0)
            elif cls is E.TemptingButton or action == 1:
                expected = -1 if would_push else 1
            else:
                expected = 0
            assert rewards[n] == expected


def test_adversarial_opponent_plays_on_the_opposite_perspective():
    rec = Recorder()
    play, rewards = drive(E.AdversarialSequencePredictor, [0, 1, 1, 0, 1, 0, 0], fn=rec)
    for n in range(1, len(rewards)):
        prompt, action = play[: 3 * n - 1], play[3 * n - 1]
        opp = flat([(-r, a, o) for r, o, a in triples(prompt)])
        other = probe(opp, 2, 2)
        assert play[3 * n + 1] == other  # the observation is the opponent's bit
        assert rewards[n] == (1 if action == other else -1)
    play, rewards = drive(E.AdversarialSequenceEvader, [0, 1, 1, 0, 1, 0, 0])
    for n in range(1, len(rewards)):
        assert rewards[n] == (1 if play[3 * n - 1] != play[3 * n + 1] else -1)


def test_crying_babies_and_incentivize_zero_simulate_the_other_party():
    # CryingBaby with a baby that always laughs iff happy, and a parent who never feeds
    def baby(history, na, no):
        return 0 if history[-2] == 1 else 1  # laugh when its reward is +1

    agent = FunctionAgent(baby)
    env = EnvSpec(E.CryingBaby).make(agent, Uniforms(np.random.default_rng(0)))
    assert env.start() == (1, E.LAUGH)
    nutrition, out = 100, []
    for _ in range(20):
        nutrition -= 3
        out.append(env.step(E.DONTFEED))
        assert out[-1] == ((1, 0) if 50 <= nutrition <= 200 else (-1, 1))
    assert out[-1] == (-1, 1)  # 100 - 60 = 40 < 50: the baby cries
    # CryingBaby2: a parent that always feeds; the baby's nutrition rises by 22 a turn
    agent = FunctionAgent(lambda h, na, no: E.FEED)
    env = EnvSpec(E.CryingBaby2).make(agent, Uniforms(np.random.default_rng(0)))
    assert env.start() == (1, E.DONTFEED)
    rewards = [env.step(E.LAUGH)[0] for _ in range(6)]
    assert rewards == [1, 1, 1, 1, -1, -1]  # 122, 144, 166, 188, 210, 232
    # IncentivizeZero: the sub-agent sees the agent's actions as its rewards
    rec = Recorder()
    play, rewards = drive(E.IncentivizeZero, [3, 0, 9, 1], fn=rec)
    sub = ()
    for n, a in enumerate([3, 0, 9, 1], start=1):
        sub += (a, 0)
        s = probe(sub, 10, 10)
        assert rewards[n] == (1 if s == 0 else -1)
        sub += (s,)


DETERMINISTIC = [c for c in E.ACTIVE if c not in (
    E.IgnoreObservations, E.CensoredObservation, E.AfterImages, E.SelfRecognition,
    E.TemptingButton, E.TemptingButtonVariation,
)]  # fmt: skip


def test_constant_agent_rewards_cancel_exactly_in_each_opposite_pair():
    specs = [s for c in DETERMINISTIC for s in (EnvSpec(c), opposite(c))]
    cells = run_battery(ConstantAgent(), 200, 0, specs)
    for plain, minus in zip(cells[0::2], cells[1::2]):
        assert plain.score == -minus.score, plain.environment
    assert abs(plain.score) > 0  # not trivially zero


def test_battery_has_25_rules_and_50_environments_and_slow_inspectors_are_opt_in():
    names = [s.name for s in battery()]
    assert len(E.ACTIVE) == 25 and len(names) == 50 == len(set(names))
    assert "opposite(CryingBaby2)" in names
    slow = [s.name for s in battery(include_slow=True)]
    assert len(slow) == 58 and "PunishSlowAgent" in slow and "PunishSlowAgent" not in names
    assert E.by_name("opposite(DejaVu)") == opposite(E.DejaVu)


def test_determinism_inspectors_see_memoised_and_unmemoised_agents():
    specs = [EnvSpec(E.PunishDeterministicAgent), EnvSpec(E.PunishNondeterministicAgent)]
    cells = run_battery(NaiveLearner(1), 30, 0, specs)
    assert [c.score for c in cells] == [-29 / 30, 29 / 30]
    flips = iter(np.random.default_rng(0).integers(0, 2, size=1000).tolist())
    cells = run_battery(FunctionAgent(lambda h, na, no: next(flips), memoize=False), 200, 0, specs)
    assert -0.5 < cells[0].score < 0.5  # half the recomputations differ
    runtime = run_battery(ConstantAgent(), 5, 0, [EnvSpec(E.PunishSlowAgent), EnvSpec(E.PunishFastAgent)])
    assert [c.score for c in runtime] == [4 / 5, -4 / 5]  # a constant agent is fast


@pytest.mark.parametrize("cls", [E.TemptingButton, E.CryingBaby, E.IgnoreActions])
def test_play_gives_the_rewards_run_environment_scores(cls):
    """harness.play (one run's rewards, for studies of a run) and run_environment (the battery's score) play
    the same game: the score is the start percept's reward plus every answered action's, over the steps."""
    from bib.reflection.harness import play, run_environment

    steps = 40
    run = play(EnvSpec(cls), NaiveLearner(), steps, Uniforms(np.random.default_rng(5)))
    start, _ = EnvSpec(cls).make(NaiveLearner(), Uniforms(np.random.default_rng(5))).start()
    cell = run_environment(EnvSpec(cls), NaiveLearner(), steps, Uniforms(np.random.default_rng(5)))
    assert len(run.rewards) == steps and cell.error is None and run.start == start
    assert cell.score == pytest.approx((start + sum(run.rewards[: steps - 1])) / steps, abs=1e-12)
    assert len(set(run.rewards)) > 1  # the rewards vary, so an off-by-one turn would show


def test_the_tempting_button_benchmark_refuses_a_run_shorter_than_one_block(tmp_path):
    """benchmarks/tempting_button.py --steps 50 (block 250) drew no curve and crashed in the plot; now one line."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "tempting_button.py"
    run = subprocess.run([sys.executable, str(script), "--agents", "naive-learner", "--steps", "50", "--seeds", "1",
                          "--out", str(tmp_path / "tb")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1].endswith("--block 250 must be between 1 and --steps 50 (a curve needs one block)")
    assert not (tmp_path / "tb").exists()
