"""Table 1 per environment: the library's results file (data/published/reflection_table1_environments.csv), the
paper's printed means, and ours (the task logs in baselines/reflection) compared cell by cell."""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import pytest

from bib.reflection.environments import battery
from bib.reflection.harness import PRINTED_ONLY, PUBLISHED, Task, run_task
from bib.reflection.published import (
    ENVIRONMENTS_CSV,
    SOURCE,
    EnvironmentCell,
    compare_environments,
    published_environments,
    read_task_log,
    scores_by_environment,
    table_means,
)
from bib.resources import resource

ROOT = Path(__file__).resolve().parents[1]
BASELINES = ROOT / "baselines" / "reflection"
PAPER = ROOT.parent / "shared" / "papers" / "extended-environments-self-reflection.txt"
LABELS = ["Random", "Random_RC", "Constant", "Constant_RC", "NaiveLearner", "NaiveLearner_RC",
          "A2C", "A2C_RC", "DQN", "DQN_RC", "PPO", "PPO_RC"]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, BASELINES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_published_file_names_its_source_and_holds_every_cell() -> None:
    text = resource(ENVIRONMENTS_CSV).read_text(encoding="utf-8")
    assert f"# Source: repository {SOURCE[0]}, commit {SOURCE[1]}, path {SOURCE[2]}" in text
    assert len(SOURCE[1]) == 40
    published = published_environments()
    assert list(published) == [(label, steps) for label in LABELS for steps in (500, 1000)]
    names = [spec.name for spec in battery()]
    for envs in published.values():
        assert list(envs) == names and all(len(v) == 10 for v in envs.values())
    # one row, by hand: Random on IgnoreRewards at 500 steps, totals -7 -39 55 -27 -23 41 43 -31 41 -9
    assert published[("Random", 500)]["IgnoreRewards"] == [t / 500 for t in (-7, -39, 55, -27, -23, 41, 43, -31, 41, -9)]


def test_the_results_file_gives_every_table1_mean_we_compare_with() -> None:
    means = table_means(published_environments())
    assert set(means) == set(PUBLISHED)
    for key, value in means.items():
        assert round(value, 6) == pytest.approx(PUBLISHED[key], abs=1e-12), key


def _printed_table1() -> dict[tuple[str, int], float]:
    names = {"RandomAgent": "Random", "ConstantAgent": "Constant", "NaiveLearner": "NaiveLearner",
             "A2C": "A2C", "DQN": "DQN", "PPO": "PPO"}
    cells = {}
    for line in PAPER.read_text(encoding="utf-8").splitlines():
        m = re.fullmatch(r"\$?(\w+?)(?:_\{RC\}\$| <sub>RC</sub>)?\$?\t\$([-+][0-9.]+) \\pm [0-9.]+\$\t\$([-+][0-9.]+) \\pm [0-9.]+\$",
                         line)
        if m and m.group(1) in names:
            label = names[m.group(1)] + ("_RC" if "RC" in line.split("\t")[0] else "")
            cells[(label, 500)], cells[(label, 1000)] = float(m.group(2)), float(m.group(3))
    return cells


@pytest.mark.skipif(not PAPER.is_file(), reason=f"the paper's text is not at {PAPER} (../shared/papers)")
def test_the_paper_prints_the_results_file_but_for_ppo_at_500_steps() -> None:
    printed = _printed_table1()
    assert len(printed) == 24
    assert printed == {**PUBLISHED, **PRINTED_ONLY}
    # the printed PPO cell is the file's PPO_RC; the printed PPO_RC is no row of the file
    assert printed[("PPO", 500)] == PUBLISHED[("PPO_RC", 500)] != PUBLISHED[("PPO", 500)] == -0.021700
    assert all(round(v, 6) != printed[("PPO_RC", 500)] for v in table_means(published_environments()).values())


def test_a_cell_agrees_within_three_of_our_standard_errors_and_without_spread_only_when_equal() -> None:
    ours = {("Constant", 500): {"IgnoreRewards": [0.5, 0.5], "DejaVu": [0.1, 0.3], "Repeater": [0.1, 0.3]}}
    theirs = {("Constant", 500): {"IgnoreRewards": [0.5, 0.5], "DejaVu": [0.45, 0.45], "Repeater": [0.55, 0.55],
                                  "Other": [0.0, 0.0]}}
    same, near, far = compare_environments(ours, theirs)
    assert (same.ours, same.ours_se, same.z, same.agrees) == (0.5, 0.0, 0.0, True)
    # sd of (0.1, 0.3) is sqrt(0.02), so the SE over two seeds is 0.1
    assert near.ours == pytest.approx(0.2) and near.ours_se == pytest.approx(0.1) and near.published_se == 0.0
    assert near.z == pytest.approx(-2.5) and near.agrees
    assert far.z == pytest.approx(-3.5) and far.z_combined == pytest.approx(-3.5) and not far.agrees
    off = EnvironmentCell("Constant", 500, "X", 0.5, 0.0, 0.499, 0.001)
    assert off.z == math.inf and not off.agrees and off.z_combined == pytest.approx(1.0)
    with pytest.raises(KeyError, match="no published results"):
        compare_environments({("Nobody", 500): {}}, theirs)


def test_a_failed_cell_has_no_score_to_compare() -> None:
    from bib.reflection.harness import Cell

    with pytest.raises(ValueError, match="DejaVu: failed"):
        scores_by_environment([[Cell("DejaVu", None, "RuntimeError: x")]])


def test_the_committed_log_is_what_the_harness_gives() -> None:
    log = read_task_log(BASELINES / "table1.jsonl.gz")
    assert sorted(log) == sorted((label, steps) for label in LABELS[:6] for steps in (500, 1000))
    for agent, label in (("random", "Random"), ("constant", "Constant"), ("naive-learner", "NaiveLearner")):
        out = run_task(Task(agent, 0, 500, plain=True, reality_check=True))
        for key, suffix in (("plain", ""), ("rc", "_RC")):
            seed0 = {env: values[0] for env, values in log[(label + suffix, 500)].items()}
            assert {c.environment: c.score for c in out[key]} == seed0, (agent, key)


def test_the_per_environment_report_is_what_the_logs_give_and_names_every_difference() -> None:
    script = _script("per_environment")
    assert (BASELINES / "table1-environments.md").read_text(encoding="utf-8") == script.report()
    ours = {}
    for name in script.LOGS:
        ours.update(read_task_log(BASELINES / name))
    cells = compare_environments(ours)
    assert len(cells) == 1200
    assert sum(not c.agrees for c in cells) == 135
    assert sum(c.difference == 0 for c in cells) == 237
    far = {(c.label, c.steps, c.environment) for c in cells if abs(c.z_combined) > 3}
    assert far == {
        ("DQN", 500, "opposite(IncentivizeLearningRate)"), ("DQN", 1000, "opposite(IncentivizeLearningRate)"),
        ("DQN", 500, "IncentivizeLearningRate"), ("A2C", 1000, "IncentivizeLearningRate"),
        ("A2C", 500, "SelfRecognition"), ("A2C", 1000, "SelfRecognition"), ("A2C_RC", 500, "SelfRecognition"),
        ("A2C_RC", 1000, "SelfRecognition"), ("PPO_RC", 1000, "SelfRecognition"),
        ("A2C", 1000, "opposite(AfterImages)"), ("PPO", 1000, "opposite(AfterImages)"),
        ("DQN", 500, "DejaVu"), ("A2C_RC", 1000, "TemptingButtonVariation"),
        ("PPO_RC", 1000, "opposite(NthRewardMultipliedByN)"),
        ("Random", 1000, "AdversarialSequencePredictor"), ("Random", 1000, "opposite(AdversarialSequenceEvader)"),
    }


@pytest.mark.slow  # the 60 tasks of the three non-SB3 agents, about 20 CPU-seconds
def test_the_whole_committed_log_is_what_the_harness_gives() -> None:
    log = read_task_log(BASELINES / "table1.jsonl.gz")
    for agent, label in (("random", "Random"), ("constant", "Constant"), ("naive-learner", "NaiveLearner")):
        for steps in (500, 1000):
            outs = [run_task(Task(agent, s, steps, plain=True, reality_check=True)) for s in range(10)]
            for key, suffix in (("plain", ""), ("rc", "_RC")):
                assert scores_by_environment(o[key] for o in outs) == log[(label + suffix, steps)]
