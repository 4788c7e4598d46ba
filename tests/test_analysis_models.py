"""Exclusions and mixed models: reported exclusions, exact paired estimates, CI coverage, captured warnings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bib.analysis.analyze import analyze, model_rows, task_effect
from bib.analysis.exclusions import apply_exclusions
from bib.analysis.importers import ImportResult
from bib.analysis.lmm import fit_mixed
from bib.analysis.schema import ROW, validate
from bib.analysis.spec import AnalysisSpec, Exclusions
from bib.errors import BibInputError


def _table(records: list[tuple]) -> pd.DataFrame:
    """records: (participant, task, trial, phase, outcome, looking, trial_error)."""
    cols = ["participant_id", "task", "trial_num", "phase", "outcome", "looking_time_s", "trial_error"]
    raw = pd.DataFrame([[str(v) for v in r] for r in records], columns=cols)
    raw["age_days"] = "330"
    raw[ROW] = [str(i + 2) for i in range(len(raw))]
    return validate(raw, "t.csv")


def _paired(rng: np.random.Generator, n: int, effect: float, task: str = "preference", sd_u: float = 0.5,
            sd_e: float = 0.4) -> list[tuple]:
    rec = []
    for i in range(n):
        u = rng.normal(0, sd_u)
        for k, (outcome, b) in enumerate((("expected", 0.0), ("unexpected", effect))):
            rec.append((f"{task}-{i}", task, k + 1, "test", outcome, float(np.exp(2 + u + b + rng.normal(0, sd_e))), ""))
    return rec


def test_every_exclusion_is_listed_with_its_reason() -> None:
    rec = [
        ("a", "preference", 1, "familiarization", "", 10.0, ""),
        ("a", "preference", 2, "test", "expected", 5.0, ""),
        ("a", "preference", 3, "test", "unexpected", 75.0, ""),  # capped at 60
        ("b", "preference", 1, "familiarization", "", 9.0, "fussy"),  # row excluded, b kept
        ("b", "preference", 2, "test", "expected", 1.5, ""),  # too short -> b lacks expected
        ("b", "preference", 3, "test", "unexpected", 7.0, ""),
        ("c", "preference", 2, "test", "expected", "NA", ""),  # missing -> c lacks expected
        ("c", "preference", 3, "test", "unexpected", 6.0, "error"),  # trial error -> lacks both
        ("d", "preference", 2, "test", "expected", 4.0, ""),
        ("d", "preference", 3, "test", "unexpected", 8.0, ""),
    ]
    res = apply_exclusions(_table(rec), Exclusions(min_look_s=2.0, max_look_s=60.0))
    got = list(zip(res.excluded["participant_id"], res.excluded["trial_num"], res.excluded["reason"], strict=True))
    assert got == [
        ("c", 2, "missing looking time"),
        ("b", 1, "trial error: fussy"),
        ("c", 3, "trial error: error"),
        ("b", 2, "look shorter than 2 s"),
        ("b", 3, "participant lacks a usable expected test trial"),
    ]
    assert res.capped[["participant_id", "trial_num", "reason"]].values.tolist() == [["a", 3, "capped at 60 s"]]
    assert sorted(res.kept["participant_id"].unique()) == ["a", "d"]
    assert res.kept.loc[res.kept["trial_num"] == 3, "looking_time_s"].max() == 60.0
    assert res.n_excluded_participants("preference") == 2
    # Every input row is either kept or listed: nothing disappears silently.
    assert len(res.kept) + len(res.excluded) == len(rec)


def test_steps_run_in_the_declared_order_and_only_those() -> None:
    rec = [("a", "preference", 1, "test", "expected", 1.0, "fussy"), ("a", "preference", 2, "test", "unexpected", 5.0, "")]
    table = _table(rec)
    first = apply_exclusions(table, Exclusions(steps=["min_look", "trial_error"]))
    assert first.excluded["step"].tolist() == ["min_look"]
    none = apply_exclusions(table, Exclusions(steps=[]))
    assert len(none.kept) == 2 and none.excluded.empty
    dropped = apply_exclusions(_table([*rec[1:], ("a", "preference", 3, "test", "expected", 90.0, "")]),
                               Exclusions(steps=["max_look"], max_look_s=60, max_look_action="exclude"))
    assert dropped.excluded["reason"].tolist() == ["look longer than 60 s"]


def test_balanced_paired_estimate_equals_mean_paired_difference() -> None:
    rng = np.random.default_rng(7)
    table = _table(_paired(rng, 24, 0.3))
    rows = model_rows(table, ["preference"], "log", "t.csv")
    r = task_effect(rows, [], 0.05, "t")
    wide = rows.pivot(index="participant_id", columns="outcome", values="y")
    diff = wide["unexpected"] - wide["expected"]
    assert r["estimate"] == pytest.approx(diff.mean(), abs=1e-9)
    # With a positive participant variance, the REML SE is the paired-t SE (Wald z, not t).
    assert r["participant_var"] > 0
    assert r["se"] == pytest.approx(diff.std(ddof=1) / np.sqrt(len(diff)), rel=1e-4)
    raw = task_effect(model_rows(table, ["preference"], "raw", "t.csv"), [], 0.05, "t")
    wide_s = rows.pivot(index="participant_id", columns="outcome", values="looking_time_s")
    assert raw["estimate"] == pytest.approx((wide_s["unexpected"] - wide_s["expected"]).mean(), abs=1e-8)


def test_pooled_interaction_is_difference_of_task_effects() -> None:
    rng = np.random.default_rng(3)
    table = _table(_paired(rng, 20, 0.4) + _paired(rng, 20, 0.1, task="efficiency-path"))
    report = analyze(ImportResult(table, pd.DataFrame(), "t.csv"), AnalysisSpec(tasks=["preference", "efficiency-path"])).report
    pooled = report["pooled"]
    diff = report["tasks"]["efficiency-path"]["estimate"] - report["tasks"]["preference"]["estimate"]
    assert pooled["reference_task"] == "preference"
    assert pooled["effect_in_reference"]["estimate"] == pytest.approx(report["tasks"]["preference"]["estimate"], abs=1e-8)
    assert pooled["interaction"]["efficiency-path"]["estimate"] == pytest.approx(diff, abs=1e-8)
    assert pooled["interaction_test"]["df"] == 1
    # The joint Wald chi-square of one term is its Wald z test squared.
    assert pooled["interaction_test"]["p"] == pytest.approx(pooled["interaction"]["efficiency-path"]["p_wald_z"], rel=1e-6)


def test_boundary_warning_is_captured_not_silenced() -> None:
    # No between-participant variance at all, and a sample where the infants' two looks are
    # negatively related (var of sums < var of differences): the REML estimate of the participant
    # variance is on its boundary, 0.
    rng = np.random.default_rng(0)
    rec = []
    for i in range(16):
        e = rng.normal(0, 0.5)
        for k, (outcome, b, sign) in enumerate((("expected", 0.0, 1), ("unexpected", 0.2, -1))):
            rec.append((f"p{i}", "preference", k + 1, "test", outcome, float(np.exp(2 + b + sign * e + rng.normal(0, 0.1))), ""))
    rows = model_rows(_table(rec), ["preference"], "log", "t")
    wide = rows.pivot(index="participant_id", columns="outcome", values="y")
    assert (wide["unexpected"] + wide["expected"]).var() < (wide["unexpected"] - wide["expected"]).var()
    r = task_effect(rows, [], 0.05, "t")
    assert any("boundary (singular) fit" in w for w in r["warnings"])
    assert r["singular"] is True and r["participant_var"] == pytest.approx(0.0, abs=1e-8)
    # Nothing left to prune: the report says which model was kept and why.
    assert r["kept_because"] == "kept although singular: no random term left to prune"


def test_covariates_enter_the_formula() -> None:
    rng = np.random.default_rng(1)
    rec = _paired(rng, 20, 0.3)
    table = _table(rec)
    table["order"] = ["EU" if i % 4 < 2 else "UE" for i in range(len(table))]
    table["age_days"] = np.repeat(rng.integers(320, 350, 20), 2).astype(float)
    r = task_effect(model_rows(table, ["preference"], "log", "t"), ["order", "age"], 0.05, "t")
    assert r["formula"] == "log_lt ~ outcome + factor(order) + age_c + (1 | participant)"
    table["age_days"] = np.nan
    with pytest.raises(BibInputError, match=r"t: column age_days: the age covariate needs every age \(lines 2, 3"):
        task_effect(model_rows(table, ["preference"], "log", "t"), ["age"], 0.05, "t")


def test_zero_look_on_log_scale_is_an_error() -> None:
    table = _table([("a", "preference", 1, "test", "expected", 0.0, ""), ("a", "preference", 2, "test", "unexpected", 4.0, "")])
    with pytest.raises(BibInputError, match=r"zero looks have no log.*\(line 2\)"):
        model_rows(table, ["preference"], "log", "t.csv")


def test_missing_look_without_the_missing_step_is_an_error() -> None:
    table = _table([("a", "preference", 1, "test", "expected", "NA", ""), ("a", "preference", 2, "test", "unexpected", 4.0, "")])
    with pytest.raises(BibInputError, match=r"missing looks reach the model; add the 'missing' exclusion step \(line 2\)"):
        analyze(ImportResult(table, pd.DataFrame(), "t.csv"), AnalysisSpec(exclusions=Exclusions(steps=["min_look"])))


def test_task_left_with_one_outcome_after_exclusions_is_an_error() -> None:
    table = _table([("a", "preference", 1, "test", "expected", 5.0, ""), ("a", "preference", 2, "test", "unexpected", 1.0, "")])
    with pytest.raises(BibInputError, match=r"task preference: no participant has both test outcomes after exclusions"):
        analyze(ImportResult(table, pd.DataFrame(), "t.csv"), AnalysisSpec())


def _standardized_errors(reps: int, n: int, truth: float, seed: int) -> np.ndarray:
    """(estimate - truth) / SE of the outcome effect in ``reps`` simulated studies, and CI coverage."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(reps):
        u = np.repeat(rng.normal(0, 0.5, n), 2)
        x = np.tile([0.0, 1.0], n)
        frame = pd.DataFrame({"y": 2 + u + truth * x + rng.normal(0, 0.4, 2 * n), "unexpected": x,
                              "participant_id": np.repeat(np.arange(n), 2)})
        c = fit_mixed(frame, "y ~ unexpected", "participant_id").contrast({"unexpected": 1.0})
        assert c.ci_high - c.estimate == pytest.approx(1.959964 * c.se, rel=1e-5)
        out.append((c.estimate - truth) / c.se)
    return np.array(out)


@pytest.mark.slow
def test_ci_coverage_200_replications() -> None:
    # 200 studies of 40 infants: nominal 95% (a little under, since Wald z ignores the df). The band
    # [0.91, 0.98] is 2.5 binomial SDs around 0.945; a CI that is 30% too narrow (coverage ~0.84)
    # or 30% too wide (~0.99) fails it.
    z = _standardized_errors(200, 40, 0.3, seed=11)
    cover = float(np.mean(np.abs(z) <= 1.959964))
    assert 0.91 <= cover <= 0.98, cover


def test_ci_calibration_fast() -> None:
    # Fast variant: 60 studies. Coverage alone is too coarse at 60, so also check that the
    # standardized errors have unit variance: mean z^2 ~ chi2(60)/60 (SD 0.18; P < 0.55 or > 1.6
    # is under 1%); a CI 30% too narrow gives ~2.0 and a biased estimate inflates it.
    z = _standardized_errors(60, 30, 0.3, seed=5)
    assert 0.55 <= float(np.mean(z**2)) <= 1.6, float(np.mean(z**2))
    assert abs(float(np.mean(z))) < 0.5
    assert float(np.mean(np.abs(z) <= 1.959964)) >= 0.85


def test_tasks_outside_the_spec_are_reported_not_analysed() -> None:
    rng = np.random.default_rng(4)
    table = _table(_paired(rng, 10, 0.4) + _paired(rng, 10, 0.1, task="efficiency-path"))
    report = analyze(ImportResult(table, pd.DataFrame(), "t.csv"), AnalysisSpec(tasks=["preference"])).report
    assert list(report["tasks"]) == ["preference"] and report["pooled"] is None
    assert report["tasks_not_analysed"] == ["efficiency-path"]
    with pytest.raises(BibInputError, match=r"t.csv: the spec's tasks multi-agent have no test trials in the data"):
        analyze(ImportResult(table, pd.DataFrame(), "t.csv"), AnalysisSpec(tasks=["multi-agent"]))
