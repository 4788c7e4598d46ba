"""The harness: scoring conventions, failed cells, the CLI, and Table 1 reproduction."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from bib.cli import app
from bib.reflection import environments as E
from bib.reflection.agents import ConstantAgent, FunctionAgent
from bib.reflection.environments import EnvSpec, battery
from bib.reflection.harness import PUBLISHED, Cell, measure, run_battery, summarise, table


def test_score_counts_the_first_reward_and_not_the_last_action():
    # CryingBaby2 first percept is (1, DONTFEED); a constant parent (FEED=0) feeds every turn
    cells = run_battery(ConstantAgent(), 3, 0, [EnvSpec(E.CryingBaby2)])
    # percepts: r0 = 1, then nutrition 122 -> +1, 144 -> +1; three rewards over three steps
    assert cells[0].score == 1.0
    cells = run_battery(ConstantAgent(), 10, 0, [EnvSpec(E.IncentivizeLearningRate)])
    assert cells[0].score == -9 / 10  # r0 = 0, then nine rewarded actions


def test_stderr_is_sd_over_sqrt_seeds_and_paper_convention_beside_it():
    runs = [[Cell("A", x), Cell("B", x + 2)] for x in (0.0, 0.1, 0.2, 0.3)]
    m = summarise("random", False, 10, runs)
    means = [1.0, 1.1, 1.2, 1.3]
    sd = math.sqrt(sum((v - 1.15) ** 2 for v in means) / 3)
    assert m.mean == pytest.approx(1.15)
    assert m.stderr == pytest.approx(sd / 2)
    assert m.stderr_paper == pytest.approx(sd / 4)
    assert m.environments == pytest.approx({"A": 0.15, "B": 2.15})


def flaky(history, num_actions, num_observations):
    if num_observations == 6:
        raise RuntimeError("cannot see six observations")
    if num_actions == 10:
        return 11  # illegal in IncentivizeZero
    return 0


def test_failed_cells_are_marked_and_the_battery_continues():
    cells = run_battery(FunctionAgent(flaky, name="flaky"), 20, 0)
    failed = {c.environment: c.error for c in cells if c.error}
    assert set(failed) == {"SelfRecognition", "opposite(SelfRecognition)", "IncentivizeZero", "opposite(IncentivizeZero)"}
    assert "RuntimeError: cannot see six observations" in failed["SelfRecognition"]
    assert "agent 'flaky' returned action 11, legal actions are 0..9" in failed["IncentivizeZero"]
    assert sum(c.score is not None for c in cells) == 46
    m = summarise("flaky", False, 20, [cells])
    assert m.environments["SelfRecognition"] is None and m.environments["IgnoreRewards"] == pytest.approx(0.95)
    assert m.failures["IncentivizeZero"].startswith("IllegalActionError")
    assert m.mean == pytest.approx(sum(c.score for c in cells if c.score is not None) / 46)


def test_cli_json_and_errors():
    runner = CliRunner()
    res = runner.invoke(app, ["reflect", "--agent", "naive-learner", "--steps", "40", "--seeds", "2", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert set(doc) >= {"agent", "reality_check", "steps", "seeds", "mean", "stderr", "environments"}
    assert doc["agent"] == "naive-learner" and doc["steps"] == 40 and doc["seeds"] == 2 and not doc["reality_check"]
    assert len(doc["environments"]) == 50
    direct = measure("naive-learner", steps=40, seeds=2, progress=False)
    assert doc["mean"] == pytest.approx(direct.mean) and doc["environments"] == pytest.approx(direct.environments)
    res = runner.invoke(app, ["reflect", "--agent", "random", "--reality-check", "--steps", "20", "--seeds", "1"])
    assert res.exit_code == 0 and "Random_RC: 20 steps, 1 seeds from 0" in res.output
    assert "opposite(IgnoreRewards2)" in res.output


def test_cli_bad_input_is_one_line_exit_2(capsys):
    from bib.cli import main

    for argv, message in (
        (["reflect", "--agent", "nope"], "Invalid value for '--agent': 'nope' is not one of 'random', 'constant'"),
        (["reflect", "--agent", "random", "--seeds", "0"], "Invalid value for '--seeds': Input should be greater than or equal to 1"),
        (["reflect"], "--agent is required"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("bib: error: ") and message in err and "Traceback" not in err


def test_measure_is_deterministic_and_workers_do_not_change_it():
    a = measure("random", reality_check=True, steps=30, seeds=2, progress=False)
    b = measure("random", reality_check=True, steps=30, seeds=2, workers=2, progress=False)
    assert a.seed_means == b.seed_means and a.environments == b.environments
    c = measure("random", reality_check=True, steps=30, seeds=1, seed=1, progress=False)  # --seed is the first seed
    assert c.seed_means == a.seed_means[1:]


def test_constant_agent_is_within_0_001_of_zero_over_the_battery():
    rows = table(agents=["constant"], lengths=[1000], seeds=10, workers=2, progress=False)
    for m in rows:
        assert abs(m.mean) < 0.001, m.label


# The reference's true standard errors of the 10-seed means at 500 steps (section 4).
TRUE_SE_500 = {"Random": 0.0024, "Random_RC": 0.0024, "NaiveLearner": 0.0065, "NaiveLearner_RC": 0.008}


def test_table1_fast_check_three_seeds_500_steps():
    rows = table(agents=["random", "naive-learner"], lengths=[500], seeds=3, workers=2, progress=False)
    for m in rows:
        tolerance = 3 * TRUE_SE_500[m.label] * math.sqrt(10 / 3)
        assert abs(m.mean - PUBLISHED[(m.label, 500)]) < tolerance, (m.label, m.mean)


@pytest.mark.slow
def test_table1_reproduced_within_three_standard_errors():
    rows = table(seeds=10, workers=2, progress=False)
    assert len(rows) == 12
    for m in rows:
        published = PUBLISHED[(m.label, m.steps)]
        assert abs(m.mean - published) < 3 * m.stderr, (m.label, m.steps, m.mean, published, m.stderr)
        assert not m.failures


def test_battery_runs_every_environment_for_every_builtin_agent():
    from bib.reflection.agents import NaiveLearner, RandomAgent
    from bib.reflection.reality_check import RealityCheck

    for agent in (RandomAgent(0), RealityCheck(NaiveLearner(0))):
        cells = run_battery(agent, 60, 0, battery(include_slow=True))
        assert all(c.error is None for c in cells) and all(-1 <= c.score <= 1 for c in cells)
