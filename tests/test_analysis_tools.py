"""A psychologist's lme4 / lmerTest tools (issue 41) against R: missing data as lme4's na.omit, likelihood-ratio
tests (anova(m0, m1)), AIC / BIC, lmerTest's type III and type I F tests (Satterthwaite), ranef, fitted,
residuals and predict. Reference numbers: tests/fixtures/lme4/tools.json, written by
tests/fixtures/lme4/make_tools.R (lme4 1.1-31, lmerTest 3.1-3)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bib.analysis import lmer
from bib.analysis.anova import anova
from bib.errors import BibInputError

FIX = Path(__file__).resolve().parent / "fixtures" / "lme4"
REF = json.loads((FIX / "tools.json").read_text())


def read(name: str, **factors: type) -> pd.DataFrame:
    return pd.read_csv(FIX / f"{name}.csv", dtype={k: str for k in factors})


@pytest.fixture(scope="module")
def sleep() -> pd.DataFrame:
    return read("sleepstudy", Subject=str)


@pytest.fixture(scope="module")
def cake() -> pd.DataFrame:
    return read("cake", replicate=str, recipe=str)


def value(v: object) -> float:
    return math.nan if v in ({}, None) else float(v)  # type: ignore[arg-type]


# ------------------------------------------------------------------ missing data


def test_rows_with_a_missing_value_are_left_out_as_lme4_does():
    ref = REF["na"]
    data = read("sleepstudy_na", Subject=str)  # NA in Reaction (3 rows), Days (2), Subject (1)
    fit = lmer(ref["formula"], data)
    assert fit.n_obs == ref["n_obs"] == 174
    assert [i + 1 for i in fit.na_omitted] == ref["dropped"]  # R's row numbers are 1-based
    assert "nan" not in fit.frame.variables["Subject"].levels  # a missing value is never a level
    assert fit.deviance == pytest.approx(ref["reml_criterion"], rel=1e-8)
    for r in ref["fixed"]:
        row = fit.coefficients.loc[r["term"]]
        assert row["estimate"] == pytest.approx(r["estimate"], rel=1e-4)
        assert row["se"] == pytest.approx(r["se"], rel=1e-3)  # the parity suite's tolerances
    assert "(6 observations deleted due to missingness)" in fit.summary()
    assert fit.to_json()["na_omitted"] == 6


def test_na_action_fail_refuses_missing_values_in_one_line():
    data = read("sleepstudy_na", Subject=str)
    with pytest.raises(BibInputError) as err:
        lmer(REF["na"]["formula"], data, na_action="fail")
    assert str(err.value) == ('formula: 6 rows have missing values (in Reaction, Days, Subject; first at row 2); '
                              'na_action="omit" leaves them out as lme4 does')
    with pytest.raises(BibInputError, match="na_action must be one of omit, fail"):
        lmer(REF["na"]["formula"], data, na_action="drop")


def test_a_missing_value_in_a_column_the_model_does_not_use_keeps_the_row(sleep):
    data = sleep.assign(note=np.where(np.arange(len(sleep)) % 7 == 0, None, "ok"))
    assert lmer("Reaction ~ Days + (1 | Subject)", data).n_obs == 180


def test_empty_data_and_data_emptied_by_missing_values_are_one_line(sleep):
    with pytest.raises(BibInputError, match="^formula: the data have no rows$"):
        lmer("Reaction ~ Days + (1 | Subject)", sleep.iloc[:0])
    with pytest.raises(BibInputError, match="no rows are left after leaving out the 180 rows with missing values"):
        lmer("Reaction ~ Days + (1 | Subject)", sleep.assign(Days=np.nan))


# ------------------------------------------------------------------ likelihood-ratio tests, AIC, BIC


def test_anova_of_two_reml_fits_refits_them_with_ml_and_equals_lme4(sleep):
    m0 = lmer("Reaction ~ Days + (1 | Subject)", sleep)
    m1 = lmer("Reaction ~ Days + (Days | Subject)", sleep)
    got = anova(m1, m0, names=["m1", "m0"])  # given in any order: sorted by their number of parameters
    assert got.note == "refitting model(s) with ML (instead of REML)"
    assert list(got.table.index) == ["m0", "m1"]
    for r in REF["lrt"]["table"]:
        row = got.table.loc[r["row"]]
        assert row["npar"] == r["npar"]
        for c in ("AIC", "BIC", "logLik", "deviance"):
            assert row[c] == pytest.approx(r[c], rel=1e-8), (r["row"], c)
        assert row["Chisq"] == pytest.approx(value(r["Chisq"]), rel=1e-6, nan_ok=True)
        assert row["Df"] == pytest.approx(value(r["Df"]), nan_ok=True)
        assert row["Pr(>Chisq)"] == pytest.approx(value(r["Pr(>Chisq)"]), rel=1e-5, nan_ok=True)
    assert "| m1 | 6 |" in got.to_markdown()


def test_anova_refuses_fits_it_cannot_compare(sleep):
    m1 = lmer("Reaction ~ Days + (Days | Subject)", sleep)
    with pytest.raises(BibInputError, match="give two or more fits"):
        anova(m1)
    with pytest.raises(BibInputError, match="same number of observations"):
        anova(m1, lmer("Reaction ~ Days + (Days | Subject)", sleep.iloc[:170]))
    with pytest.raises(BibInputError, match="different responses"):
        anova(m1, lmer("Days ~ Reaction + (1 | Subject)", sleep))


@pytest.mark.parametrize("method", ["reml", "ml"])
def test_aic_bic_and_loglik_equal_lme4(sleep, method):
    fit = lmer("Reaction ~ Days + (Days | Subject)", sleep, reml=method == "reml")
    ref = REF["aic"][method]
    assert fit.aic == pytest.approx(ref["AIC"], rel=1e-8)
    assert fit.bic == pytest.approx(ref["BIC"], rel=1e-8)
    assert fit.loglik == pytest.approx(ref["logLik"], rel=1e-8)


# ------------------------------------------------------------------ F tests (lmerTest's anova)


@pytest.mark.parametrize("case", range(len(REF["ftests"])), ids=[f["formula"] for f in REF["ftests"]])
@pytest.mark.parametrize("kind", [3, 2, 1])
def test_f_tests_equal_lmertest(sleep, cake, case, kind):
    ref = REF["ftests"][case]
    fit = lmer(ref["formula"], cake if "angle" in ref["formula"] else sleep)
    got = fit.anova(type=kind).table
    assert list(got.index) == [r["row"] for r in ref[f"type{kind}"]]
    for r in ref[f"type{kind}"]:
        row = got.loc[r["row"]]
        assert row["NumDF"] == r["NumDF"]
        assert row["F value"] == pytest.approx(r["F value"], rel=1e-5), r["row"]
        assert row["Sum Sq"] == pytest.approx(r["Sum Sq"], rel=1e-5), r["row"]
        assert row["DenDF"] == pytest.approx(r["DenDF"], rel=1e-4), r["row"]
        assert row["Pr(>F)"] == pytest.approx(r["Pr(>F)"], rel=1e-3), r["row"]


def test_a_one_df_f_test_is_the_square_of_the_t_test(sleep):
    fit = lmer("Reaction ~ Days + (Days | Subject)", sleep)
    row = fit.anova().table.loc["Days"]
    coef = fit.coefficients.loc["Days"]
    assert row["F value"] == pytest.approx(coef["t"] ** 2, rel=1e-12)
    assert row["DenDF"] == pytest.approx(coef["df"], rel=1e-12)
    assert row["Pr(>F)"] == pytest.approx(coef["p"], rel=1e-9)


def test_f_test_types_are_checked(sleep):
    fit = lmer("Reaction ~ Days + (1 | Subject)", sleep)
    with pytest.raises(BibInputError, match="type must be 1, 2 or 3"):
        fit.anova(type=4)
    with pytest.raises(BibInputError, match="no fixed term to test"):
        lmer("Reaction ~ 1 + (1 | Subject)", sleep).anova()


# ------------------------------------------------------------------ ranef, fitted, residuals, predict


@pytest.fixture(scope="module")
def slope(sleep):
    return lmer(REF["ranef"]["formula"], sleep)


def test_ranef_equals_lme4(slope):
    ref = REF["ranef"]
    got = slope.ranef()
    assert list(got) == ["Subject"]
    assert list(got["Subject"].index) == ref["levels"] and list(got["Subject"].columns) == ref["columns"]
    np.testing.assert_allclose(got["Subject"].to_numpy(), np.array(ref["Subject"]), atol=1e-3)  # modes of 10-40


def test_fitted_residuals_and_predictions_equal_lme4(slope, sleep):
    ref = REF["ranef"]
    np.testing.assert_allclose(slope.fitted(), ref["fitted"], atol=1e-3)
    np.testing.assert_allclose(slope.residuals(), ref["residuals"], atol=1e-3)
    np.testing.assert_allclose(slope.fitted() + slope.residuals(), sleep["Reaction"], rtol=1e-12)
    rows = sleep.iloc[[i - 1 for i in ref["newdata_rows"]]]
    np.testing.assert_allclose(slope.predict(rows), ref["predict_re"], atol=1e-3)
    np.testing.assert_allclose(slope.predict(rows, re=False), ref["predict_fixed"], rtol=1e-9)
    np.testing.assert_allclose(slope.predict(rows), slope.fitted()[[i - 1 for i in ref["newdata_rows"]]], rtol=1e-12)


def test_the_conditional_modes_solve_the_penalized_least_squares_system(slope):
    """b = Lambda u with (Lambda'Z'Z Lambda + I) u = Lambda'Z'(y - X beta): checked by a dense solve."""
    from bib.analysis.effects import modes

    pls = slope._pls
    Z, lam = pls.z_matrix().toarray(), pls.lam(slope.theta).toarray()
    r = pls.frame.y - pls.frame.X @ slope.coefficients["estimate"].to_numpy()
    u = np.linalg.solve(lam.T @ Z.T @ Z @ lam + np.eye(pls.q), lam.T @ Z.T @ r)
    np.testing.assert_allclose(modes(slope), lam @ u, rtol=1e-10, atol=1e-10)


def test_predict_refuses_what_it_cannot_predict(slope, sleep):
    new = sleep.iloc[:2].assign(Subject=["999", "308"])
    with pytest.raises(BibInputError, match="row 0 has a level of Subject the fit did not see"):
        slope.predict(new)
    got = slope.predict(new, allow_new_levels=True)
    assert got[0] == pytest.approx(slope.predict(new, re=False)[0])  # a new subject: its random effects at 0
    with pytest.raises(BibInputError, match="column Days .* is not in newdata"):
        slope.predict(sleep[["Reaction", "Subject"]])


def test_plot_residuals_draws_one_panel_per_random_coefficient(slope):
    fig = slope.plot_residuals()
    assert [ax.get_title() for ax in fig.axes] == ["residuals vs fitted", "QQ: residuals", "QQ: Subject: (Intercept)",
                                                   "QQ: Subject: Days"]


# ------------------------------------------------------------------ bugs of issue 41 (each failed before)


def test_an_unidentifiable_model_is_refused_with_lme4s_message():
    rng = np.random.default_rng(0)  # ergoStool's design: 9 subjects x 4 types, one observation each
    d = pd.DataFrame({"Subject": np.repeat([f"s{i}" for i in range(9)], 4), "Type": np.tile(list("ABCD"), 9),
                      "effort": rng.normal(10, 1, 36)})
    with pytest.raises(BibInputError) as err:
        lmer("effort ~ Type + (0 + Type | Subject)", d)
    assert str(err.value) == ("formula: number of observations (=36) <= number of random effects (=36) for term "
                              "(0 + Type | Subject); the random-effects parameters and the residual variance (or "
                              "scale parameter) are probably unidentifiable")


def test_a_singular_fit_is_worded_by_its_cause(sleep):
    from bib.analysis.formula import parse_formula
    from bib.analysis.mixed import model_frame, singular_causes

    frame = model_frame(parse_formula("Reaction ~ Days + (Days | Subject)"), sleep)
    zero = np.array([False, False, True])
    assert [c.message for c in singular_causes(frame, np.array([1.0, 0.0, 0.0]), zero)] == [
        "the variance of Days in (1 + Days | Subject) is estimated as 0"]
    assert [c.message for c in singular_causes(frame, np.array([1.0, -0.3, 0.0]), zero)] == [
        "the correlation of Days with (Intercept) in (1 + Days | Subject) is estimated as -1.00"]
    dye2 = read("Dyestuff2", Batch=str)
    fit = lmer("Yield ~ 1 + (1 | Batch)", dye2)
    assert fit.warnings == ["boundary (singular) fit: the variance of (Intercept) in (1 | Batch) is estimated as 0"]


def test_the_corr_column_aligns_with_three_random_columns(sleep):
    rng = np.random.default_rng(3)
    d = sleep.assign(z=rng.normal(size=len(sleep)))
    text = lmer("Reaction ~ Days + (1 + Days + z | Subject)", d).summary().splitlines()
    head = next(i for i, line in enumerate(text) if line.startswith(" Groups"))
    corr_at = text[head].index("Corr")
    days, z = text[head + 2][corr_at:], text[head + 3][corr_at:]
    field = r"[ -][01]\.\d\d"  # each correlation 5 wide, the first under "Corr" (a misaligned column fails)
    assert re.fullmatch(field, days), days
    assert re.fullmatch(f"{field} {field}", z), z


def test_factor_levels_follow_a_categorical_and_r_sorting():
    from bib.analysis.formula import sort_levels

    assert sort_levels(["2", "10", "a", "B", "b", "A"]) == ["10", "2", "a", "A", "b", "B"]  # R: sort() / factor()
    assert sort_levels(["10", "2", "1.5"]) == ["1.5", "2", "10"]  # every level a number: numeric order
    rng = np.random.default_rng(4)
    c = pd.Categorical(["lo", "hi", "mid"] * 20, categories=["lo", "mid", "hi"])
    d = pd.DataFrame({"g": np.repeat([f"g{i}" for i in range(6)], 10), "c": c, "y": rng.normal(size=60)})
    assert list(lmer("y ~ c + (1 | g)", d).coefficients.index) == ["(Intercept)", "cmid", "chi"]


# ------------------------------------------------------------------ emmeans and pairs


@pytest.mark.parametrize("case", range(len(REF["emmeans"])),
                         ids=[f"{e['formula']} ~ {e['specs']}" for e in REF["emmeans"]])
def test_emmeans_and_pairs_equal_r(cake, case):
    ref = REF["emmeans"][case]
    fit = lmer(ref["formula"], cake)
    got = fit.emmeans(ref["specs"]).table
    want = pd.DataFrame(ref["emmeans"])
    labels = [c for c in want.columns if c not in ("emmean", "SE", "df", "lower.CL", "upper.CL")]
    assert [list(map(str, r)) for r in got[labels].to_numpy()] == [list(map(str, r)) for r in want[labels].to_numpy()]
    for c, rel in (("emmean", 1e-9), ("SE", 1e-6), ("df", 1e-4), ("lower.CL", 1e-6), ("upper.CL", 1e-6)):
        np.testing.assert_allclose(got[c], want[c], rtol=rel, err_msg=c)
    for adjust, rows in ref["pairs"].items():
        got = fit.pairs(ref["specs"], adjust=adjust).table
        want = pd.DataFrame(rows)
        assert list(got["contrast"]) == list(want["contrast"])
        np.testing.assert_allclose(got["estimate"], want["estimate"], atol=1e-8)
        np.testing.assert_allclose(got["SE"], want["SE"], rtol=1e-6, err_msg=f"{adjust} SE")
        for c in ("lower.CL", "upper.CL"):  # the half-width q * SE to SE's tolerance (a bound near 0 has no relative one)
            np.testing.assert_allclose(got[c] - got["estimate"], want[c] - want["estimate"], rtol=1e-6,
                                       err_msg=f"{adjust} {c}")
        np.testing.assert_allclose(got["df"], want["df"], rtol=1e-4)
        np.testing.assert_allclose(got["p.value"], want["p.value"], rtol=1e-5, atol=1e-9, err_msg=adjust)


def test_emmeans_refuses_what_is_not_a_factor_of_the_model(cake):
    fit = lmer("angle ~ recipe * temp + (1 | recipe:replicate)", cake)
    with pytest.raises(BibInputError, match="temp is numeric"):
        fit.emmeans("temp")
    with pytest.raises(BibInputError, match="'replicate' is not a fixed-effect variable"):
        fit.emmeans("replicate")
    with pytest.raises(BibInputError, match="adjust must be one of tukey, holm, bonferroni, none"):
        fit.pairs("recipe", adjust="scheffe")


# ------------------------------------------------------------------ bib analyze's ladder and notes


def _correlated_infants(seed: int = 0) -> pd.DataFrame:
    """24 infants x 8 items whose random intercepts and slopes are perfectly correlated, and real item variance."""
    rng = np.random.default_rng(seed)
    p, it = np.repeat(np.arange(24), 8), np.tile(np.arange(8), 24)
    x = (it % 2).astype(float)
    u = rng.normal(0, 0.4, 24)
    y = 2 + 0.3 * x + u[p] + 0.8 * u[p] * x + rng.normal(0, 0.5, 8)[it] + rng.normal(0, 0.3, len(p))
    return pd.DataFrame({"participant": [f"p{i}" for i in p], "item": [f"i{i}" for i in it], "x": x, "y": y})


def test_the_ladder_removes_a_singular_correlation_before_any_term():
    """The infant term's +1 correlation made the ladder prune (1 | item), whose variance is real."""
    from bib.analysis.analyze import fit_ladder
    from bib.analysis.formula import parse_formula

    fit, steps, why = fit_ladder(parse_formula("y ~ x + (1 + x | participant) + (1 | item)"), _correlated_infants(),
                                 reference={}, prune=None, reml=True, alpha=0.05, where="t")
    assert steps[0]["action"] == ("removed the correlations of (1 + x | participant) (singular: the correlation of x "
                                  "with (Intercept) in (1 + x | participant) is estimated as +1.00)")
    assert fit.formula == "y ~ x + (1 | participant) + (0 + x | participant) + (1 | item)"
    assert not fit.singular and why == "converged, not singular after pruning"
    assert fit.n_groups["item"] == 8


def test_an_uncentred_covariate_in_an_interaction_gets_a_note():
    from bib.analysis.analyze import uncentred_notes

    rng = np.random.default_rng(5)
    d = pd.DataFrame({"participant": np.repeat([f"p{i}" for i in range(20)], 4),
                      "outcome": np.tile(["expected", "unexpected"], 40),
                      "age_days": np.repeat(rng.integers(300, 360, 20), 4).astype(float)})
    d["y"] = 2 + 0.2 * (d.outcome == "unexpected") + rng.normal(0, 0.3, 20).repeat(4) + rng.normal(0, 0.3, 80)
    fit = lmer("y ~ outcome * age_days + (1 | participant)", d)
    mean = d["age_days"].mean()
    assert uncentred_notes(fit) == [
        f"outcome's effect is reported at age_days = 0: outcome interacts with age_days, which is not centred "
        f"(mean {mean:.4g}); centre it (e.g. age_days - {mean:.4g}) for the effect at the mean"]
    d["age_c"] = d["age_days"] - mean
    assert uncentred_notes(lmer("y ~ outcome * age_c + (1 | participant)", d)) == []
    assert uncentred_notes(lmer("y ~ outcome + age_days + (1 | participant)", d)) == []  # no interaction: no note


# ------------------------------------------------------------------ confint


@pytest.mark.parametrize("case", range(len(REF["confint"])),
                         ids=[f"{c['data']}: {c['formula']}" for c in REF["confint"]])
def test_wald_and_profile_intervals_equal_lme4(sleep, case):
    ref = REF["confint"][case]
    data = sleep if ref["data"] == "sleepstudy" else read(ref["data"], Batch=str)
    fit = lmer(ref["formula"], data)
    for method in ("wald", "profile"):
        got = fit.confint("Wald" if method == "wald" else "profile").table
        assert list(got.index) == [r["parameter"] for r in ref[method]]
        # lme4 interpolates a spline through a few points of its profile where bib finds the roots: they agree to
        # 1e-5 relative on sleepstudy and 1.7e-4 on Dyestuff and the singular Dyestuff2
        rel = 1e-5 if method == "wald" else 1e-3
        for r in ref[method]:
            lo, hi = got.loc[r["parameter"]]
            assert lo == pytest.approx(value(r["lower"]), rel=rel, abs=1e-6, nan_ok=True), (method, r["parameter"])
            assert hi == pytest.approx(value(r["upper"]), rel=rel, abs=1e-6, nan_ok=True), (method, r["parameter"])


def test_the_bootstrap_is_seeded_and_agrees_with_the_profile(sleep):
    fit = lmer("Reaction ~ Days + (1 | Subject)", sleep)
    a = fit.confint("boot", nsim=200, seed=7)
    assert a.table.equals(fit.confint("boot", nsim=200, seed=7).table)
    assert not a.table.equals(fit.confint("boot", nsim=200, seed=8).table)
    assert a.notes == ["parametric bootstrap: 200 refits of 200 simulated responses (seed 7)"]
    prof = fit.confint("profile").table
    width = prof.iloc[:, 1] - prof.iloc[:, 0]
    # percentile ends of 200 draws sit within a fifth of the profile interval's width of its ends
    assert ((a.table - prof).abs().to_numpy() < 0.2 * width.to_numpy()[:, None]).all()


def test_simulated_responses_have_the_fitted_mean_and_variance(sleep):
    from bib.analysis.intervals import simulate

    fit = lmer("Reaction ~ Days + (1 | Subject)", sleep)
    rng = np.random.default_rng(0)
    ys = np.array([simulate(fit, rng) for _ in range(2000)])
    mean = fit.frame.X @ fit.coefficients["estimate"].to_numpy()
    total = fit.varcomps[0].variance + fit.sigma ** 2
    assert np.abs(ys.mean(axis=0) - mean).max() < 5 * math.sqrt(total / 2000)
    assert ys.var(axis=0).mean() == pytest.approx(total, rel=0.05)


def test_confint_refuses_bad_arguments(sleep):
    fit = lmer("Reaction ~ Days + (1 | Subject)", sleep)
    with pytest.raises(BibInputError, match="method must be one of Wald, profile, boot"):
        fit.confint("wald")
    with pytest.raises(BibInputError, match="level must be between 0 and 1"):
        fit.confint("Wald", level=95)
    with pytest.raises(BibInputError, match="nsim must be at least 10"):
        fit.confint("boot", nsim=3)


# ------------------------------------------------------------------ weights, subset, update, contrasts


def test_prior_weights_equal_lme4(sleep):
    ref = REF["weights"]
    fit = lmer(ref["formula"], sleep, weights=ref["weights"])
    assert fit.deviance == pytest.approx(ref["reml_criterion"], rel=1e-8)
    assert fit.sigma == pytest.approx(ref["sigma"], rel=1e-5)
    for r in ref["fixed"]:
        row = fit.coefficients.loc[r["term"]]
        assert row["estimate"] == pytest.approx(r["estimate"], rel=1e-5)
        assert row["se"] == pytest.approx(r["se"], rel=1e-4)
        assert row["df"] == pytest.approx(r["df"], rel=1e-4)  # 1.1e-5 here (3.6e-3 with the old 1e-5 step floor)
    np.testing.assert_allclose(fit.ranef()["Subject"].to_numpy(), np.array(ref["ranef"]), atol=1e-3)
    np.testing.assert_allclose(fit.fitted(), ref["fitted"], atol=1e-3)
    by_column = lmer(ref["formula"], sleep.assign(w=ref["weights"]), weights="w")
    assert by_column.deviance == fit.deviance
    unit = lmer(ref["formula"], sleep, weights=np.ones(len(sleep)))
    assert unit.deviance == pytest.approx(lmer(ref["formula"], sleep).deviance, rel=1e-12)


def test_bad_weights_and_subsets_are_one_line(sleep):
    f = "Reaction ~ Days + (1 | Subject)"
    with pytest.raises(BibInputError, match="weights must be positive and finite .row 0: -1.0."):
        lmer(f, sleep, weights=np.r_[-1.0, np.ones(179)])
    with pytest.raises(BibInputError, match="weights has 3 values for 180 rows"):
        lmer(f, sleep, weights=[1, 2, 3])
    with pytest.raises(BibInputError, match="weights column nope is not in the data"):
        lmer(f, sleep, weights="nope")
    with pytest.raises(BibInputError, match="subset must be one True or False per row"):
        lmer(f, sleep, subset=[1, 0])
    assert lmer(f, sleep, weights=np.r_[np.nan, np.ones(179)]).na_omitted == [0]  # a missing weight: left out


def test_subset_and_update_are_the_fits_they_stand_for(sleep):
    m1 = lmer("Reaction ~ Days + (Days | Subject)", sleep)
    early = (sleep["Days"] < 8).to_numpy()
    sub = lmer("Reaction ~ Days + (Days | Subject)", sleep, subset=early)
    assert sub.n_obs == 144 and sub.deviance == lmer("Reaction ~ Days + (Days | Subject)", sleep[early]).deviance
    assert m1.update(". ~ . - (1 + Days | Subject) + (1 | Subject)").formula == "Reaction ~ Days + (1 | Subject)"
    assert m1.update(". ~ . - (Days | Subject) + (1 | Subject)").deviance == lmer("Reaction ~ Days + (1 | Subject)", sleep).deviance
    assert list(m1.update(". ~ . - Days").coefficients.index) == ["(Intercept)"]
    assert m1.update("log(.) ~ .").formula == "log(Reaction) ~ Days + (1 + Days | Subject)"
    ml = m1.update(reml=False)
    assert not ml.reml and ml.deviance == pytest.approx(REF["aic"]["ml"]["logLik"] * -2, rel=1e-8)
    assert sub.update(reml=False).n_obs == 144  # the subset is kept
    with pytest.raises(BibInputError, match="unknown argument.* fromage"):
        m1.update(fromage=1)
    with pytest.raises(BibInputError, match="cannot remove \\(1 \\| Batch\\)"):
        m1.update(". ~ . - (1 | Batch)")


def test_sum_contrasts_equal_lme4_and_leave_type3_tests_unchanged(cake):
    ref = REF["sum_contrasts"]
    fit = lmer(ref["formula"], cake, contrasts={"recipe": "sum"})
    assert list(fit.coefficients.index) == [r["term"] for r in ref["fixed"]]
    for r in ref["fixed"]:
        row = fit.coefficients.loc[r["term"]]
        assert row["estimate"] == pytest.approx(r["estimate"], rel=1e-6, abs=1e-9)
        assert row["se"] == pytest.approx(r["se"], rel=1e-4)
    for kind in (3, 1):
        got = fit.anova(type=kind).table
        for r in ref[f"type{kind}"]:
            assert got.loc[r["row"], "F value"] == pytest.approx(r["F value"], rel=1e-5)
    treatment = lmer(ref["formula"], cake).anova().table
    np.testing.assert_allclose(fit.anova().table["F value"], treatment["F value"], rtol=1e-6)
    with pytest.raises(BibInputError, match="contrasts for recipe must be one of treatment, sum"):
        lmer(ref["formula"], cake, contrasts={"recipe": "helmert"})
    with pytest.raises(BibInputError, match="contrasts given for temp, which is not a factor"):
        lmer("angle ~ recipe * temp + (1 | recipe:replicate)", cake, contrasts={"temp": "sum"})


def test_bib_analyze_reports_f_tests_marginal_means_and_residual_plots(tmp_path):
    from bib.analysis.analyze import analyze
    from bib.analysis.importers import read_looking_times
    from bib.analysis.spec import AnalysisSpec

    example = Path(__file__).resolve().parents[1] / "bib" / "resources" / "looking_times" / "example.csv"
    result = analyze(read_looking_times(example), AnalysisSpec())
    for task, r in result.report["tasks"].items():
        (f_row,) = r["anova"]["rows"]
        assert f_row["row"] == "outcome" and f_row["NumDF"] == 1
        assert f_row["F value"] == pytest.approx(r["t"] ** 2, rel=1e-10)  # a 1-df F test is the squared t test
        means = {row["outcome"]: row["emmean"] for row in r["emmeans"]["rows"]}
        assert means["unexpected"] - means["expected"] == pytest.approx(r["estimate"], rel=1e-9)
        assert r["pairs"]["rows"][0]["contrast"] == "expected - unexpected"
    paths = result.write(tmp_path / "out")
    assert {p.name for p in paths} >= {f"residuals-{t}.png" for t in result.report["tasks"]}
    assert "type III F test (Satterthwaite): outcome: F(1, " in result.to_markdown()


def test_inference_false_fits_as_lme4_alone(sleep):
    with_df = lmer("Reaction ~ Days + (Days | Subject)", sleep)
    bare = lmer("Reaction ~ Days + (Days | Subject)", sleep, inference=False)
    assert bare.deviance == with_df.deviance and bare._jac is None
    assert np.isinf(bare.coefficients["df"]).all()
    assert bare.coefficients["estimate"].equals(with_df.coefficients["estimate"])
    assert bare.update(inference=True).coefficients["df"].equals(with_df.coefficients["df"])
