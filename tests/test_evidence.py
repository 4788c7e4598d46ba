"""The evidence of a pair (bib.tasks.difficulty.pair_evidence): hand-built pairs against an independent
computation, its properties, the manifest column and the difficulty curve of a small controlled set."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bib.cli import app
from bib.episode import Episode, Trial, load_episode
from bib.tasks.common import empty_layout, make_trial
from bib.tasks.difficulty import IRRATIONAL, MAX_SURPRISE, episode_surprise, move_surprises, pair_evidence
from bib.world.grid import Agent, GridObject

SQ2 = math.sqrt(2)
HOME = (2, 5)
OLD = Agent("agent-0", "circle", (30, 140, 90), HOME)
NEW = Agent("agent-1", "square", (200, 60, 60), HOME)
A = GridObject("A", "vase", (200, 120, 120), (7, 2))
B = GridObject("B", "ring", (230, 200, 40), (7, 8))
STRAIGHT_TO_B = [(2, 5), (3, 6), (4, 7), (5, 8), (6, 8), (7, 8)]


# ---------------------------------------------------------------- an independent computation
# In the open 8 x 8 interior (border walls only, no barrier) every king move between interior cells
# is legal and the cost-to-go is the octile distance, so the Boltzmann policy has a closed form.


def octile(a, b) -> float:
    dx, dy = abs(a[0] - b[0]), abs(a[1] - b[1])
    return max(dx, dy) - min(dx, dy) + SQ2 * min(dx, dy)


def neighbours(c):
    return [(c[0] + dx, c[1] + dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1)
            if (dx or dy) and 1 <= c[0] + dx <= 8 and 1 <= c[1] + dy <= 8]


def log_pi(cell, nxt, goal, beta) -> float:
    """log pi(cell -> nxt) of the Boltzmann agent after ``goal``: exp(-beta * (step cost + octile after))."""
    def q(n):
        return (SQ2 if n[0] != cell[0] and n[1] != cell[1] else 1.0) + octile(n, goal)

    z = sum(math.exp(-beta * (q(n) - octile(cell, goal))) for n in neighbours(cell))
    return -beta * (q(nxt) - octile(cell, goal)) - math.log(z)


def known_goal_surprises(path, goal, beta) -> list[float]:
    return [-log_pi(a, b, goal, beta) for a, b in zip(path, path[1:])]


def mixture_surprises(path, goals, beta) -> list[float]:
    w = [1 / len(goals)] * len(goals)
    out = []
    for a, b in zip(path, path[1:]):
        p = [wi * math.exp(log_pi(a, b, g, beta)) for wi, g in zip(w, goals)]
        out.append(-math.log(sum(p)))
        w = [x / sum(p) for x in p]
    return out


# ---------------------------------------------------------------- hand-built episodes


def trial(path, goal, phase="test", agent=OLD, objects=(A, B), walls=()):
    lay = empty_layout(objects=tuple(objects), agents=(agent,), walls=frozenset(walls))
    return make_trial(lay, path, goal, phase)


def episode(test: Trial, outcome: str, beta: float | None, condition: str = "preference",
            fam: tuple[Trial, ...] | None = None) -> Episode:
    if fam is None:  # the agent went to A twice (A and B swapped sides)
        fam = (trial([(2, 5), (3, 4), (4, 3), (5, 2), (6, 2), (7, 2)], "A", "familiarization"),
               trial([(2, 5), (3, 6), (4, 7), (5, 8), (6, 8), (7, 8)], "A", "familiarization",
                     objects=(replace(A, cell=(7, 8)), replace(B, cell=(7, 2)))))
    return Episode(f"p-{outcome}", "p", condition, condition, outcome, 1, 10, 10, (*fam, test), beta=beta)


@pytest.mark.parametrize("beta", [0.5, 2.0, 6.0])
def test_known_goal_matches_the_closed_form(beta):
    to_a = [(2, 5), (3, 4), (4, 3), (5, 2), (6, 2), (7, 2)]
    e = episode(trial(to_a, "A"), "expected", beta)
    u = episode(trial(STRAIGHT_TO_B, "B"), "unexpected", beta)
    # the familiarization showed A: both tests are scored under the policy towards A
    want_e, want_u = known_goal_surprises(to_a, A.cell, beta), known_goal_surprises(STRAIGHT_TO_B, A.cell, beta)
    assert move_surprises(e.trials[-1], beta, ["A"]) == pytest.approx(want_e, abs=1e-9)
    assert move_surprises(u.trials[-1], beta, ["A"]) == pytest.approx(want_u, abs=1e-9)
    assert episode_surprise(e) == pytest.approx(max(want_e), abs=1e-9)
    assert pair_evidence(e, u) == round(max(want_u) - max(want_e), 4) > 0


def test_a_new_agent_is_scored_under_the_updated_mixture_of_goals():
    beta = 3.0
    new_test = trial(STRAIGHT_TO_B, "B", agent=NEW)
    got = move_surprises(new_test, beta, [])
    assert got == pytest.approx(mixture_surprises(STRAIGHT_TO_B, [A.cell, B.cell], beta), abs=1e-9)
    # episode_surprise finds the agent new by its id: the familiarization's goal does not apply to it
    assert episode_surprise(episode(new_test, "expected", beta, "multi-agent")) == pytest.approx(max(got), abs=1e-12)
    # the familiar agent doing the same is scored under the policy towards A: more surprising
    old = episode_surprise(episode(trial(STRAIGHT_TO_B, "B"), "unexpected", beta, "multi-agent"))
    assert old == pytest.approx(max(known_goal_surprises(STRAIGHT_TO_B, A.cell, beta)), abs=1e-9)
    assert old > max(got)


def test_an_unreachable_preferred_goal_falls_back_to_the_reachable_objects():
    beta = 2.5
    ring = [(x, y) for x in (6, 7, 8) for y in (1, 2, 3) if (x, y) != A.cell and 1 <= y <= 8]
    walled = trial(STRAIGHT_TO_B, "B", walls=ring)  # A walled in (its neighbours inside the border)
    assert move_surprises(walled, beta, ["A"]) == pytest.approx(known_goal_surprises(STRAIGHT_TO_B, B.cell, beta),
                                                                abs=1e-9)


def test_the_irrational_familiarization_makes_every_move_uniform():
    assert ("efficiency-irrational", "expected") in IRRATIONAL
    path = [(1, 1), (2, 2), (3, 2)]
    t = trial(path, "A", objects=(replace(A, cell=(3, 2)),))
    e = episode(t, "expected", 4.0, "efficiency-irrational", fam=(replace(t, phase="familiarization"),))
    # from the corner (1, 1) three moves are legal, from (2, 2) all eight
    assert move_surprises(t, 4.0, ["A"], irrational=True) == pytest.approx([math.log(3), math.log(8)])
    assert episode_surprise(e) == pytest.approx(math.log(8))
    assert episode_surprise(replace(e, condition="efficiency-path")) == pytest.approx(
        max(known_goal_surprises(path, (3, 2), 4.0)), abs=1e-9)


def test_evidence_properties():
    to_a = [(2, 5), (3, 4), (4, 3), (5, 2), (6, 2), (7, 2)]
    detour = [(2, 5), (3, 6), (4, 5), (5, 4), (6, 3), (7, 2)]  # 5 diagonals: 0.83 cell over optimal
    values = []
    for beta in (0.5, 1.0, 2.0, 4.0, 8.0):
        e, u = episode(trial(to_a, "A"), "expected", beta), episode(trial(detour, "A"), "unexpected", beta)
        values.append(pair_evidence(e, u))
        # antisymmetric: swapping the outcomes negates it; a pair of one path has none
        assert pair_evidence(u, e) == -values[-1]
        assert pair_evidence(e, replace(e, outcome="unexpected")) == 0
    # a more rational agent makes the same deviation stronger evidence
    assert values == sorted(values) and len(set(values)) == len(values) and values[0] > 0
    # the noise-free planner (no beta) has no evidence
    assert pair_evidence(episode(trial(to_a, "A"), "expected", None), episode(trial(detour, "A"), "unexpected", None)) is None
    # surprise is capped where the policy gives a move no probability
    assert MAX_SURPRISE == 50.0


def test_the_evidence_reads_no_observer():
    # it is computed from the generative side only: no observer, evaluation or results module is imported
    code = ("import sys\n"
            "from bib.tasks import make_unit\n"
            "from bib.tasks.difficulty import pair_evidence\n"
            "from bib.tasks.options import AgentModel, TaskOptions\n"
            "eps = make_unit('preference', 0, 5, TaskOptions(agent=AgentModel('boltzmann', (2.0, 10.0))))\n"
            "assert pair_evidence(eps[0], eps[1]) is not None\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('bib.observers', 'bib.evaluation', 'bib.learn')))\n"
            "assert not bad, bad\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_a_controlled_set_records_the_evidence_and_evaluate_bins_it(tmp_path: Path):
    runner = CliRunner()
    spec = Path(__file__).resolve().parents[1] / "stimuli" / "bib-ctrl.toml"
    out = tmp_path / "ctrl"
    res = runner.invoke(app, ["generate", str(spec), "--out", str(out), "--limit", "1", "--workers", "1"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(open(out / "manifest.csv", encoding="utf-8")))
    by_pair: dict[str, dict[str, dict[str, str]]] = {}
    for r in rows:
        by_pair.setdefault(r["pair_id"], {})[r["outcome"]] = r
    for pair in by_pair.values():  # every pair of a Boltzmann agent has one, recomputed from its files; only the
        # noise-free walks (cost-reward's, issue 43: no beta) have none
        e, u = (load_episode(out / pair[o]["episode_path"]) for o in ("expected", "unexpected"))
        evidence = pair_evidence(e, u)
        assert pair["expected"]["evidence"] == pair["unexpected"]["evidence"] == ("" if evidence is None else f"{evidence:.4f}")
        assert (evidence is None) == (e.beta is None) == (e.condition == "cost-reward")
    graded = {pid for pid, pair in by_pair.items() if pair["expected"]["evidence"]}
    # score with a cheap observer and evaluate: the curve covers every condition, those without an excess cost too
    run = tmp_path / "run"
    res = runner.invoke(app, ["score", "closest-object", str(out), "--out", str(run)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["evaluate", str(out), str(run), "--out", str(tmp_path / "ev")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "ev" / "evaluation.json").read_text())["difficulty"]
    assert doc["measure"] == "evidence" and doc["bins"] == ["<0", "0-1", "1-2", "2-4", "4-8", "8-16", ">=16"]
    assert set(doc["groups"]) == {"all"} | {r["condition"] for r in rows if r["pair_id"] in graded}  # ungraded too
    assert sum(v["n_pairs"] for v in doc["groups"]["all"].values()) == len(graded) == len(by_pair) - 2
