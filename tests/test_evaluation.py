"""Evaluation arithmetic (readout, ties, CIs, averages), results-file validation, Parquet steps, and the CLI."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bib import __version__
from bib.cli import app
from bib.errors import BibInputError
from bib.evaluation import (
    DIFFICULTY_BINS,
    DifficultyCurve,
    EpisodeRef,
    EpisodeSet,
    bin_labels,
    bootstrap_ci,
    difficulty_bin,
    difficulty_json,
    evaluate,
    evaluate_difficulty,
    family_averages,
    leaderboard,
    pair_score,
    read_anchors,
    read_results,
    read_steps,
    readout,
    write_results,
    write_steps,
)

os.environ["BIB_NO_PROGRESS"] = "1"


def refs(cond: str, n: int) -> list[EpisodeRef]:
    out = []
    for i in range(n):
        for o in ("expected", "unexpected"):
            out.append(EpisodeRef(f"{cond}-{i}-{o}", f"{cond}-{i}", cond, o, Path(f"{cond}-{i}-{o}.json")))
    return out


def test_readout_and_pair_rule() -> None:
    assert readout([0.1, 3.0, 0.2]) == 3.0
    assert readout([1.0, 2.0, 6.0], "mean") == 3.0
    assert readout([]) == 0.0
    with pytest.raises(BibInputError, match="--readout"):
        readout([1.0], "median")
    assert pair_score(1.0, 2.0) == 1.0
    assert pair_score(2.0, 2.0) == 0.5  # the original code gave 1.0 here
    assert pair_score(3.0, 2.0) == 0.0


def test_accuracy_with_ties_and_ci() -> None:
    r = refs("preference", 4)
    s = {"preference-0-expected": 1, "preference-0-unexpected": 2,  # correct
         "preference-1-expected": 2, "preference-1-unexpected": 2,  # tie
         "preference-2-expected": 3, "preference-2-unexpected": 1,  # wrong
         "preference-3-expected": 0, "preference-3-unexpected": 5}  # correct
    res = evaluate(r, s)["preference"]
    assert res.accuracy == pytest.approx(2.5 / 4)
    assert res.n_pairs == 4 and res.n_ties == 1
    assert 0.0 <= res.ci_low <= res.accuracy <= res.ci_high <= 1.0
    assert evaluate(r, s, seed=0)["preference"] == res  # seeded


def test_bootstrap_ci_matches_an_independent_resampling() -> None:
    scores = np.array([1.0] * 30 + [0.0] * 10 + [0.5] * 4)
    lo, hi = bootstrap_ci(scores, n_boot=4000, seed=3)
    rng = np.random.default_rng(3)
    means = [scores[rng.integers(0, scores.size, scores.size)].mean() for _ in range(4000)]
    assert (lo, hi) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert bootstrap_ci(np.ones(10)) == (1.0, 1.0)


def test_family_averages_are_unweighted_means() -> None:
    r = refs("efficiency-path", 2) + refs("efficiency-time", 1) + refs("efficiency-irrational", 1)
    s = {x.id: (0.0 if x.outcome == "expected" else 1.0) for x in r}
    s["efficiency-path-1-expected"] = 5.0  # one wrong path pair -> 0.5
    avg = family_averages(evaluate(r, s))
    assert avg == {"efficiency": pytest.approx((0.5 + 1.0 + 1.0) / 3)}


def test_difficulty_bins() -> None:
    # the evidence (nats): the decision line 0, then octaves from 1 nat
    assert DIFFICULTY_BINS == ("<0", "0-1", "1-2", "2-4", "4-8", "8-16", ">=16")
    cases = {-30.0: "<0", -0.0001: "<0", 0.0: "0-1", 0.99: "0-1", 1.0: "1-2", 3.99: "2-4", 4.0: "4-8",
             15.9: "8-16", 16.0: ">=16", 500.0: ">=16"}
    for value, label in cases.items():
        assert difficulty_bin(value) == label, value
    # the excess cost of the deviation (cells) stays available as its own measure
    assert bin_labels("excess") == ("0-0.5", "0.5-1", "1-1.5", "1.5-2", "2-3", "3-5", ">=5")
    cases = {-1.0: "0-0.5", 0.0: "0-0.5", 0.4: "0-0.5", 0.5: "0.5-1", 1.99: "1.5-2", 2.0: "2-3", 4.99: "3-5",
             5.0: ">=5", 100.0: ">=5"}
    for value, label in cases.items():
        assert difficulty_bin(value, "excess") == label, value
    with pytest.raises(ValueError, match="difficulty measure must be one of evidence, excess"):
        difficulty_bin(1.0, "cells")


def test_accuracy_per_excess_bin_by_hand() -> None:
    def pair(cond: str, i: int, difficulty: float | None) -> list[EpisodeRef]:
        return [EpisodeRef(f"{cond}-{i}-{o}", f"{cond}-{i}", cond, o, Path("x"),
                           difficulty=difficulty if o == "unexpected" else None) for o in ("expected", "unexpected")]

    r = (pair("efficiency-path", 0, 0.4) + pair("efficiency-path", 1, 0.45) + pair("efficiency-path", 2, 2.5)
         + pair("instrumental-blocking", 0, 0.3) + pair("instrumental-blocking", 1, None))
    s = {x.id: 1.0 for x in r}
    s["efficiency-path-0-unexpected"] = 2.0  # right
    s["efficiency-path-1-unexpected"] = 0.0  # wrong
    s["efficiency-path-2-unexpected"] = 3.0  # right
    # instrumental-blocking-0 is a tie (0.5); pair 1 has no difficulty and is left out
    assert evaluate_difficulty(r, s, n_boot=200) == {}  # no pair has an evidence
    got = evaluate_difficulty(r, s, n_boot=200, measure="excess")
    assert list(got) == ["all", "efficiency-path", "instrumental-blocking"]
    assert list(got["all"]) == ["0-0.5", "2-3"]
    assert got["all"]["0-0.5"].accuracy == pytest.approx((1 + 0 + 0.5) / 3) and got["all"]["0-0.5"].n_pairs == 3
    assert got["all"]["0-0.5"].n_ties == 1
    assert got["all"]["2-3"].accuracy == 1.0 and got["all"]["2-3"].n_pairs == 1
    assert got["efficiency-path"]["0-0.5"].accuracy == 0.5
    assert got["instrumental-blocking"]["0-0.5"].accuracy == 0.5
    assert evaluate_difficulty(refs("preference", 2), {x.id: 0.0 for x in refs("preference", 2)}, measure="excess") == {}
    doc = difficulty_json(got, "excess")
    assert doc["measure"] == "excess" and doc["edges"][-1] is None and doc["bins"] == list(bin_labels("excess"))
    assert doc["groups"]["all"]["2-3"] == {"accuracy": 1.0, "ci_low": 1.0, "ci_high": 1.0, "n_pairs": 1, "n_ties": 0}


def test_accuracy_per_evidence_bin_by_hand() -> None:
    def pair(cond: str, i: int, evidence: float | None, difficulty: float | None = None) -> list[EpisodeRef]:
        return [EpisodeRef(f"{cond}-{i}-{o}", f"{cond}-{i}", cond, o, Path("x"), difficulty=difficulty,
                           evidence=evidence) for o in ("expected", "unexpected")]

    # preference has no excess cost but an evidence; the excess cost does not decide the bin
    r = (pair("preference", 0, -0.7) + pair("preference", 1, 0.3) + pair("efficiency-path", 0, 0.5, difficulty=4.0)
         + pair("efficiency-path", 1, 20.0, difficulty=0.4) + pair("multi-agent", 0, None))
    s = {x.id: 1.0 for x in r}
    s["preference-0-unexpected"] = 0.0  # wrong
    s["preference-1-unexpected"] = 2.0  # right
    s["efficiency-path-0-unexpected"] = 3.0  # right
    # efficiency-path-1 is a tie; multi-agent-0 has no evidence and is left out
    got = evaluate_difficulty(r, s, n_boot=200)
    assert list(got) == ["all", "preference", "efficiency-path"]
    assert list(got["all"]) == ["<0", "0-1", ">=16"]
    assert got["all"]["<0"].accuracy == 0.0 and got["all"]["<0"].n_pairs == 1
    assert got["all"]["0-1"].accuracy == 1.0 and got["all"]["0-1"].n_pairs == 2
    assert got["all"][">=16"].accuracy == 0.5 and got["all"][">=16"].n_ties == 1
    doc = difficulty_json(got)
    assert doc["measure"] == "evidence" and doc["edges"][0] is None and doc["edges"][-1] is None
    assert doc["edges"][1:-1] == [0.0, 1.0, 2.0, 4.0, 8.0, 16.0] and doc["bins"] == list(DIFFICULTY_BINS)


def test_difficulty_curve_is_written_and_deterministic(tmp_path: Path) -> None:
    r = [EpisodeRef(f"efficiency-path-{i}-{o}", f"efficiency-path-{i}", "efficiency-path", o, Path("x"),
                    evidence=0.5 * i) for i in range(12) for o in ("expected", "unexpected")]
    s = {x.id: (0.0 if x.outcome == "expected" else float(x.id.split("-")[2])) for x in r}
    curve = DifficultyCurve(evaluate_difficulty(r, s, n_boot=100), "test")
    paths = curve.save(tmp_path)
    assert [p.name for p in paths] == ["difficulty.json", "difficulty.md", "difficulty.png", "difficulty.svg"]
    svg = (tmp_path / "difficulty.svg").read_bytes()
    assert svg.startswith(b"<?xml") and b"pairwise accuracy" in svg
    assert (tmp_path / "difficulty.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "difficulty.json").read_text())["bins"] == list(DIFFICULTY_BINS)
    # pair 0 (evidence 0) is a tie; the 12 pairs (0, 0.5, ..., 5.5 nats) fill 0-1 (2), 1-2 (2), 2-4 (4), 4-8 (4)
    md = (tmp_path / "difficulty.md").read_text()
    assert "| all | 75.0 (2) | 100.0 (2) | 100.0 (4) | 100.0 (4) |" in md and "nats" in md
    assert b"nats" in svg
    curve.save(tmp_path / "again")
    assert (tmp_path / "again" / "difficulty.svg").read_bytes() == svg


def test_pairing_errors() -> None:
    r = refs("preference", 2)[:-1]
    with pytest.raises(BibInputError, match="pair 'preference-1' has no unexpected episode"):
        evaluate(r, {x.id: 0.0 for x in r})


def test_results_round_trip_and_validation(tmp_path: Path) -> None:
    r = refs("preference", 2)
    es = EpisodeSet(r)
    path = tmp_path / "results.csv"
    write_results(path, {x.id: i * 0.5 for i, x in enumerate(r)})
    assert read_results(path, es) == {x.id: i * 0.5 for i, x in enumerate(r)}
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "episode_id,surprise\n"
        "preference-0-expected,1.0\n"
        "preference-0-expected,2.0\n"
        "preference-0-unexpected,nan\n"
        "ghost,1\n"
        "preference-1-expected,abc\n"
    )
    with pytest.raises(BibInputError) as info:
        read_results(bad, es)
    msg = str(info.value)
    assert "\n" not in msg
    assert "row 3: episode 'preference-0-expected' appears again (first at row 2)" in msg
    assert "row 4: surprise of 'preference-0-unexpected' is nan (must be finite)" in msg
    assert "row 5: unknown episode id 'ghost'" in msg
    assert "row 6: surprise 'abc' is not a number" in msg
    assert "1 episode(s) have no row: preference-1-unexpected" in msg
    header = tmp_path / "header.csv"
    header.write_text("id,score\n")
    with pytest.raises(BibInputError, match="header must be 'episode_id,surprise'"):
        read_results(header, es)


def test_steps_parquet_round_trip(tmp_path: Path) -> None:
    steps = [("b", np.array([0.5, 2.0])), ("a", np.array([1.0, 0.0, 3.0]))]
    write_steps(tmp_path / "s.parquet", steps)
    got = read_steps(tmp_path / "s.parquet")
    assert set(got) == {"a", "b"}
    assert np.array_equal(got["a"], [1.0, 0.0, 3.0]) and np.array_equal(got["b"], [0.5, 2.0])


def test_anchors_cover_six_models_and_all_conditions() -> None:
    rows = read_anchors(tables=["neurips", "irene", "hbtom"])
    models = {r["model"] for r in rows}
    assert models == {"BC-MLP", "BC-RNN", "Video-RNN", "VT", "IRENE", "HBToM"}
    assert len(rows) == 6 * 11 and len(read_anchors()) == 9 * 11  # + the poster's BC-MLP, BC-RNN, Video-RNN
    hb = {r["condition"]: float(r["accuracy"]) for r in rows if r["model"] == "HBToM"}
    assert hb["efficiency-path"] == 94.9 and hb["instrumental-blocking"] == 99.7
    assert all(r["source"] for r in rows)
    header, table = leaderboard(rows, [{"observer": "x", "condition": "preference", "accuracy": "0.5"}])
    assert header[-1] == "x (ours)"
    assert table[0] == ["preference", "26.3", "48.3", "47.6", "80.8", "48.5", "99.7", "50.0"]


def test_cli_score_evaluate_leaderboard(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "set"
    for task in ("preference", "instrumental-blocking"):
        res = runner.invoke(app, ["generate", "--task", task, "--n", "3", "--seed", "5", "--out", str(out / task)])
        assert res.exit_code == 0, res.output
    run = tmp_path / "run"
    res = runner.invoke(app, ["score", "inverse-planner", str(out), "--out", str(run)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in run.iterdir()) == ["model.json", "provenance.json", "results.csv", "results.steps.parquet"]
    assert json.loads((run / "model.json").read_text()) == {"name": "inverse-planner", "parameters": None,
                                                            "training_data": None, "seed": None}
    # the ScoreSummary result: the files, and per condition the mean surprise by outcome
    assert res.output.startswith("12 episodes scored with inverse-planner: results.csv (max readout), "
                                 "per-step surprise in results.steps.parquet")
    assert "| preference | 6 |" in res.output and res.output.rstrip().endswith(f"wrote {run}")
    results = run / "results.csv"
    assert results.read_text().splitlines()[0] == "episode_id,surprise"
    assert len(results.read_text().splitlines()) == 13
    res = runner.invoke(app, ["evaluate", str(out), str(run), "--json",
                              "--table", str(tmp_path / "table.csv"), "--name", "inverse-planner"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["readout"] == "max"
    # schema 2: identity of the bib version, the model and the set, and the overall numbers as BIB defines them
    assert doc["schema"] == "bib.evaluation/2" and doc["bib_version"] == __version__
    assert doc["model"]["name"] == "inverse-planner"
    assert doc["set"] == {"spec": None, "seed": None, "episodes": 12, "pairs": 6, "limited": False}
    accs = [v["accuracy"] for v in doc["conditions"].values()]
    assert doc["overall"] == {"mean": sum(accs) / 2, "efficiency_average": None, "instrumental_average": None}
    assert set(doc["conditions"]) == {"preference", "instrumental-blocking"}
    for v in doc["conditions"].values():
        assert set(v) >= {"accuracy", "ci_low", "ci_high", "n_pairs"} and v["n_pairs"] == 3
    res = runner.invoke(app, ["evaluate", str(out), str(run), "--out", str(tmp_path / "ev")])
    assert res.exit_code == 0, res.output
    saved = json.loads((tmp_path / "ev" / "evaluation.json").read_text())
    assert saved["conditions"] == doc["conditions"]
    # the noise-free planner's pairs have no beta, hence no evidence and no difficulty curve
    # (tests/test_evidence.py evaluates a controlled set's)
    assert "difficulty" not in saved and not (tmp_path / "ev" / "difficulty.svg").exists()
    assert (tmp_path / "ev" / "evaluation.md").exists()
    res = runner.invoke(app, ["evaluate", str(out / "preference" / "manifest.csv"), str(results), "--readout", "mean"])
    assert res.exit_code != 0  # the results hold instrumental episodes the manifest does not
    res = runner.invoke(app, ["evaluate", str(out), str(run), "--table", str(tmp_path / "table.csv"), "--name", "inverse-planner"])
    assert res.exit_code != 0 and "already has rows of 'inverse-planner'; use --replace" in str(res.exception)
    ev = tmp_path / "ev"
    assert {"evaluation.json", "evaluation.md", "provenance.json"} <= {p.name for p in ev.iterdir()}
    res = runner.invoke(app, ["leaderboard", str(tmp_path / "table.csv")])
    assert res.exit_code == 0, res.output
    assert "inverse-planner (ours)" in res.output and "Published: original BIB data (NeurIPS: " in res.output
    assert "inverse-planner: " in res.output and "3 pairs per condition" in res.output
    pairs_row = next(line for line in res.output.splitlines() if line.startswith("| pairs |"))
    assert pairs_row.split("|")[-2].strip() == "3"  # the pairs row, in the Markdown table of the Leaderboard result
    res = runner.invoke(app, ["leaderboard", str(tmp_path / "table.csv"), "--json"])
    doc = json.loads(res.output)
    assert doc["header"][-1] == "inverse-planner (ours)" and doc["rows"][-1] == ["pairs", *["-"] * (len(doc["header"]) - 2), "3"]
    res = runner.invoke(app, ["leaderboard", str(tmp_path / "table.csv"), "--add", f"inverse-planner={ev}"])
    assert res.exit_code != 0 and "already has a 'inverse-planner' column; use --replace" in str(res.exception)
    res = runner.invoke(app, ["leaderboard", str(tmp_path / "table.csv"), "--add", f"inverse-planner={ev}", "--replace"])
    assert res.exit_code == 0, res.output
    # --save persists an added evaluation into a table; the packaged table is never written
    res = runner.invoke(app, ["leaderboard", "--add", f"mine={ev}", "--save"])
    assert res.exit_code != 0 and "--save needs a TABLE" in str(res.exception)
    saved_table = tmp_path / "saved.csv"
    res = runner.invoke(app, ["leaderboard", str(saved_table), "--add", f"mine={ev}", "--save"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(saved_table.open()))
    assert [r["condition"] for r in rows] == ["preference", "instrumental-blocking", "mean"]
    assert {(r["observer"], r["model"], r["schema"], r["bib_version"], r["set_episodes"]) for r in rows} == {
        ("mine", "inverse-planner", "bib.results-table/2", __version__, "12")}
    assert float(rows[-1]["accuracy"]) == round(saved["overall"]["mean"], 4) and rows[-1]["n_pairs"] == ""
    res = runner.invoke(app, ["leaderboard", str(saved_table)])
    assert "mine (ours)" in res.output and "| mean |" in res.output


def test_cli_bad_results_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    ep_dir = tmp_path / "set"
    CliRunner().invoke(app, ["generate", "--task", "preference", "--n", "1", "--seed", "1", "--out", str(ep_dir)])
    bad = tmp_path / "bad.csv"
    bad.write_text("episode_id,surprise\npreference-000000-expected,1\n")
    proc = subprocess.run([sys.executable, "-m", "bib.cli", "evaluate", str(ep_dir), str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("bib: error: ") and "have no row: preference-000000-unexpected" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_conditions_with_fewer_than_10_pairs_carry_a_warning() -> None:
    """2 pairs can show 100% [100-100]: such a condition is flagged in the JSON and the Markdown."""
    from bib.evaluation import MIN_PAIRS, ConditionResult, Evaluation, evaluation_json

    results = {"preference": ConditionResult("preference", 1.0, 1.0, 1.0, 2, 0),
               "efficiency-path": ConditionResult("efficiency-path", 0.6, 0.3, 0.9, MIN_PAIRS, 0)}
    doc = evaluation_json(results, "max")
    assert doc["warnings"] == ["preference: only 2 pairs (fewer than 10): its accuracy and 95% CI rest on too few pairs "
                               "to say much"]
    text = Evaluation(results).to_markdown()
    assert text.endswith("\n\nWarning: " + doc["warnings"][0])



def test_a_model_card_with_malformed_sets_is_read_as_naming_none(tmp_path: Path) -> None:
    """model.json is the model's file (hostile like any input): a ``training_data.sets`` that is not a list
    made `bib evaluate --table` crash with a TypeError; now the cell names no set."""
    runner = CliRunner()
    out, run = tmp_path / "set", tmp_path / "run"
    assert runner.invoke(app, ["generate", "--task", "preference", "--n", "2", "--seed", "5", "--out", str(out)]).exit_code == 0
    assert runner.invoke(app, ["score", "closest-object", str(out), "--out", str(run)]).exit_code == 0
    card = {"name": "closest-object", "parameters": None, "training_data": {"episodes": 3, "sets": 5}, "seed": None}
    (run / "model.json").write_text(json.dumps(card))
    table = tmp_path / "table.csv"
    res = runner.invoke(app, ["evaluate", str(out), str(run), "--table", str(table), "--name", "x"])
    assert res.exit_code == 0, res.output
    assert {r["training_data"] for r in csv.DictReader(table.open())} == {"?, 3 episodes"}


def test_ties_at_half_of_the_pairs_warn_that_the_surprise_does_not_depend_on_the_input() -> None:
    """Issue 42: a collapsed encoder ties most pairs; the tie count warns at TIE_SHARE_WARN of at least MIN_PAIRS
    pairs, first among the warnings, in the JSON and the Markdown. The committed learned observers' shares (16-28 of
    8,267 pairs) and closest-object's (37.6%) stay below it."""
    from bib.evaluation import MIN_PAIRS, TIE_SHARE_WARN, ConditionResult, Evaluation, evaluation_json, ties_warning

    def results(pairs: int, ties: int, second: int = 0) -> dict:
        out = {"preference": ConditionResult("preference", 0.5, 0.4, 0.6, pairs, ties)}
        if second:
            out["efficiency-path"] = ConditionResult("efficiency-path", 0.5, 0.4, 0.6, second, 0)
        return out

    assert TIE_SHARE_WARN == 0.5 and MIN_PAIRS == 10
    assert ties_warning(results(10, 4)) is None and ties_warning(results(1000, 376)) is None
    assert ties_warning(results(9, 9)) is None  # too few pairs to say anything (few_pairs_warning says so)
    assert ties_warning(results(10, 5)) == ("5 of 10 pairs tie (50.0%, at least 50%): the model's surprise does not "
                                            "tell most pairs apart, as if it did not depend on the input (a collapsed "
                                            "encoder? a constant output?); each tie scores 0.5")
    assert ties_warning(results(20, 10, second=20)) is None  # ties are counted over all pairs, not per condition
    assert ties_warning(results(20, 20, second=20)).startswith("20 of 40 pairs tie (50.0%")
    doc = evaluation_json(results(12, 12), "max")
    assert doc["warnings"] == [ties_warning(results(12, 12))]
    assert Evaluation(results(12, 12)).to_markdown().endswith("\n\nWarning: " + doc["warnings"][0])
    assert evaluation_json(results(12, 5), "max")["warnings"] == []


def test_bib_evaluate_warns_of_a_constant_surprise_on_stderr_and_in_the_json(tmp_path: Path) -> None:
    """The sample submission's surprise (0 everywhere) ties every pair: one `warning:` line on stderr and the same
    text in evaluation.json; a closest-object run of the same set does not warn."""
    runner = CliRunner()
    sset, run = tmp_path / "set", tmp_path / "run"
    assert runner.invoke(app, ["generate", "--task", "efficiency-path", "--n", "12", "--seed", "3", "--out", str(sset)]).exit_code == 0
    ids = sorted(p.stem for p in sset.rglob("*.json") if p.stem.startswith("efficiency-path-"))
    assert len(ids) == 24
    const = tmp_path / "const.csv"
    const.write_text("episode_id,surprise\n" + "".join(f"{i},0\n" for i in ids))
    res = runner.invoke(app, ["evaluate", str(sset), str(const), "--json", "--out", str(tmp_path / "ev")])
    assert res.exit_code == 0, res.output
    line = "12 of 12 pairs tie (100.0%, at least 50%): the model's surprise does not tell most pairs apart"
    assert res.stderr.startswith(f"warning: {line}") and res.stderr.count("\n") == 1
    doc = json.loads((tmp_path / "ev" / "evaluation.json").read_text())
    assert doc["warnings"][0].startswith(line) and doc["conditions"]["efficiency-path"]["accuracy"] == 0.5
    assert runner.invoke(app, ["score", "closest-object", str(sset), "--out", str(run)]).exit_code == 0
    res = runner.invoke(app, ["evaluate", str(sset), str(run), "--json"])
    assert res.exit_code == 0 and "warning" not in res.stderr and json.loads(res.stdout)["warnings"] == []
