"""The formula forms of issue 41 against R (tests/fixtures/lme4/make_formulas.R writes formulas.json and
formulas.csv): ``^`` crossing, ``%in%``, ``*`` and ``/`` at one precedence, ``.``, ``poly(x, k, raw = TRUE)``,
``mean()``/``sd()`` inside ``I()``, ``relevel()``, ``factor(x, levels =)``, ``C(f, contr.sum)``, transformed
responses, emmeans over function terms, and predictions that evaluate the terms with the fitted data's parameters.
Every accepted form: lme4's column names, estimates, SEs, df and REML criterion; every refused one: one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bib.analysis import lmer, rexpr
from bib.analysis.formula import expand_dot, parse_formula
from bib.errors import BibInputError

FIX = Path(__file__).parent / "fixtures" / "lme4"
REF = json.loads((FIX / "formulas.json").read_text())


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.read_csv(FIX / "formulas.csv", dtype={"Subject": str})


def _data(case: dict, data: pd.DataFrame) -> pd.DataFrame:
    if case["data"] == "formulas_na":  # make_formulas.R: Reaction missing in rows 1-3 (R's numbering)
        d = data.copy()
        d.loc[[0, 1, 2], "Reaction"] = np.nan
        return d
    return data


def _fit(case: dict, data: pd.DataFrame):
    d = _data(case, data)
    subset = (d["Days"] < 8).to_numpy() if case.get("subset") == "Days < 8" else None
    return lmer(case.get("bib_formula", case["formula"]), d, subset=subset)


def _names(case: dict) -> list[str]:
    """R's column names; where bib's formula differs from R's reference formula (R's emmeans cannot rebuild
    relevel() or C(, contr.sum), so R fitted the same model through the data or lmer's contrasts), bib names the
    columns after its own formula, as R's model.matrix would."""
    names = case["columns"]
    bib = case.get("bib_formula")
    if bib is None:
        return names
    if "relevel" in bib:
        return [n.replace("cond", 'relevel(cond, ref = "b")') for n in names]
    return [n.replace("cond", "C(cond, contr.sum)") for n in names]


@pytest.mark.parametrize("case", REF["cases"], ids=[f"{c.get('bib_formula', c['formula'])}|{c['data']}"
                                                   f"{'|' + c['subset'] if 'subset' in c else ''}" for c in REF["cases"]])
def test_each_form_gives_lme4s_columns_and_fit(case, data):
    fit = _fit(case, data)
    assert list(fit.coefficients.index) == _names(case)
    assert fit.n_obs == case["n_obs"]
    assert fit.deviance == pytest.approx(case["reml_criterion"], rel=1e-8)
    assert fit.loglik == pytest.approx(case["loglik"], rel=1e-8)
    for r, (_, row) in zip(case["fixed"], fit.coefficients.iterrows()):
        assert row["estimate"] == pytest.approx(r["estimate"], rel=1e-5, abs=1e-8), r["term"]
        assert row["se"] == pytest.approx(r["se"], rel=1e-4), r["term"]
        assert row["df"] == pytest.approx(r["df"], rel=1e-4), r["term"]
    if "predict_fixed" in case:  # R's predict(newdata, re.form = NA): poly's and scale's fitted coefficients
        rows = data.iloc[np.asarray(case["newdata_rows"]) - 1]
        assert fit.predict(rows, re=False) == pytest.approx(case["predict_fixed"], rel=1e-8)




@pytest.mark.parametrize("case", REF["cases"],
    ids=[f"{c.get('bib_formula', c['formula'])}|{c['data']}{'|' + c['subset'] if 'subset' in c else ''}"
         for c in REF["cases"]])
def test_type3_f_tests_name_function_terms_as_lmertest(case, data):
    fit = _fit(case, data)
    table = fit.anova(type=3).table
    relabel = (lambda t: t) if "bib_formula" not in case else (lambda t: _names({**case, "columns": [t]})[0])
    assert list(table.index) == [relabel(r["row"]) for r in case["type3"]]
    for r, (_, row) in zip(case["type3"], table.iterrows()):
        assert row["NumDF"] == r["NumDF"], r["row"]
        assert row["F value"] == pytest.approx(r["F value"], rel=1e-4), r["row"]
        assert row["DenDF"] == pytest.approx(r["DenDF"], rel=1e-4), r["row"]


EMM = [c for c in REF["cases"] if "emmeans" in c]


@pytest.mark.parametrize("case", EMM, ids=[c.get("bib_formula", c["formula"]) for c in EMM])
def test_emmeans_over_function_terms_and_transformed_responses_is_rs(case, data):
    fit = _fit(case, data)
    specs = [k for k in case["emmeans"]["rows"][0] if k not in ("emmean", "SE", "df", "lower.CL", "upper.CL")]
    emm = fit.emmeans(specs).table
    assert len(emm) == len(case["emmeans"]["rows"])
    for r, (_, row) in zip(case["emmeans"]["rows"], emm.iterrows()):
        assert [str(row[s]) for s in specs] == [str(r[s]) for s in specs]
        for c in ("emmean", "SE", "df", "lower.CL", "upper.CL"):
            assert row[c] == pytest.approx(r[c], rel=1e-4), (c, r)
    notes = fit.emmeans(specs).notes
    assert [n for n in notes if n.startswith("Results are given")] == [s.strip() for s in case["emmeans"]["scale"]]
    pairs = fit.pairs(specs, adjust="tukey")
    assert pairs.notes == case["pairs"]["mesg"]  # "Note: contrasts are still on the sqrt scale", ...
    for r, (_, row) in zip(case["pairs"]["rows"], pairs.table.iterrows()):
        assert row["contrast"] == r["contrast"]
        for c in ("estimate", "SE", "df", "t.ratio", "p.value"):
            assert row[c] == pytest.approx(r[c], rel=1e-4, abs=1e-10), (c, r["contrast"])


def test_dot_is_every_column_but_the_response_and_the_grouping_factors(data):
    d = data[["Reaction", "Days", "cond", "Subject"]]
    # R's terms() keeps Subject in "." (lme4 1.1-31 then fits it as fixed effects beside (1 | Subject)); bib does not.
    assert REF["dot"]["labels"] == ["Days", "cond", "Subject", "1 | Subject"]
    for formula, ref in [("Reaction ~ . + (1 | Subject)", REF["dot"]["fit"]),
                         ("Reaction ~ . - cond + (1 | Subject)", REF["dot"]["minus"])]:
        fit = lmer(formula, d)
        assert list(fit.coefficients.index) == ref["columns"]
        assert fit.deviance == pytest.approx(ref["reml_criterion"], rel=1e-8)
        assert fit.coefficients["estimate"].to_numpy() == pytest.approx([r["estimate"] for r in ref["fixed"]], rel=1e-6)
        assert fit.formula == formula.replace("  ", " ")  # as written, as lme4's summary prints it
    # A weights column named in lmer(weights=) is not a predictor either; nor the response's column of log(y).
    w = d.assign(w=1.0)
    fit = lmer("log(Reaction) ~ . + (1 | Subject)", w, weights="w")
    assert list(fit.coefficients.index) == ["(Intercept)", "Days", "condb", "condc"]
    assert fit.update(". ~ . - Days").coefficients.index.tolist() == ["(Intercept)", "condb", "condc"]
    # The pruning ladder's with_random keeps its own random terms when "." is expanded.
    two = parse_formula("Reaction ~ . + (1 | Subject) + (1 | cond)")
    one = expand_dot(two.with_random([two.random[0]]), list(d.columns))
    assert [r.text for r in one.random] == ["(1 | Subject)"] and one.terms == (("Days",),)


def test_mean_inside_I_is_over_the_data_given_before_rows_are_left_out_and_predict_keeps_it(data):
    """R's model.frame evaluates I(Days - mean(Days)) on the whole data, then drops the rows with a missing
    response (the fixture's fit matches only so: the mean is 4.5 over 180 rows, not 4.56 over the 177 kept); a
    prediction uses that mean too (R's predict recomputes mean(Days) on newdata, so one new row is always at
    Days = its mean: bib keeps the fit's, as it keeps poly's coefficients)."""
    case = next(c for c in REF["cases"] if c["data"] == "formulas_na" and "mean" in c["formula"])
    fit = _fit(case, data)
    new = data.iloc[[0, 14]]
    b0, b1 = fit.coefficients["estimate"]
    assert data["Days"].mean() == 4.5
    assert fit.predict(new, re=False) == pytest.approx(b0 + b1 * (new["Days"].to_numpy() - 4.5), rel=1e-12)
    assert fit.predict(new.iloc[:1], re=False)[0] != pytest.approx(b0)  # R's would be b0: Days - mean(Days) = 0


def test_poly_raw_false_is_the_orthogonal_polynomial_and_true_false_are_logical(data):
    a = lmer("Reaction ~ poly(Days, 2, raw = FALSE) + (1 | Subject)", data)
    b = lmer("Reaction ~ poly(Days, 2) + (1 | Subject)", data)
    assert a.coefficients["estimate"].to_numpy() == pytest.approx(b.coefficients["estimate"].to_numpy(), rel=1e-10)
    assert list(a.coefficients.index)[1] == "poly(Days, 2, raw = FALSE)1"
    # R's three-term recurrence on the fitted data equals its QR construction (R 4: poly(c(1, 2, 4, 7, 11, 3), 2)).
    node = parse_formula("y ~ poly(x, 2)").calls[0][1]
    basis = rexpr.Basis()
    x = pd.DataFrame({"x": [1.0, 2, 4, 7, 11, 3]})
    assert rexpr.evaluate(node, x, basis)[:, 1] == pytest.approx(
        [0.5235981, 0.1295501, -0.3994460, -0.5451898, 0.4696189, -0.1781313], abs=1e-7)
    # R 4: predict(poly(c(1, 2, 4, 7, 11, 3), 2), c(100, -2)): the fitted data's coefficients on new values.
    assert rexpr.evaluate(node, pd.DataFrame({"x": [100.0, -2.0]}), basis) == pytest.approx(
        np.array([[11.449162997063727, 380.47771606789598], [-0.800640769025436, 2.22394261300078]]), rel=1e-12)


def test_response_transformations_are_named_as_r_names_them(data):
    fit = lmer("sqrt(Reaction) ~ Days + (1 | Subject)", data)
    assert fit.formula == "sqrt(Reaction) ~ Days + (1 | Subject)"
    assert "Formula: sqrt(Reaction) ~ Days + (1 | Subject)" in fit.summary()
    assert fit.fitted() + fit.residuals() == pytest.approx(np.sqrt(data["Reaction"].to_numpy()), rel=1e-12)
    assert parse_formula("I(y^2) ~ x").lhs_text == "I(y^2)"
    assert parse_formula("log( y+1 )~x").lhs_text == "log(y + 1)"


@pytest.mark.parametrize(("formula", "message"), [
    ("Reaction ~ (Days + cond)^2.5", "the power after '^' must be a whole number from 1 to 20 (R: invalid power in "
     "formula), got '2.5'"),
    ("Reaction ~ (Days - cond)^2", "'^' of an expression with '-'"),
    ("Reaction ~ cond %o% grp", "operator %o% is not a formula operator (R's formulas know %in%)"),
    ("Reaction ~ C(cond, contr.helmert)", "term C(cond, contr.helmert): C(): contrasts contr.helmert are not supported"
     " (supported: contr.treatment, treatment, contr.sum, sum)"),
    ("Reaction ~ factor(cond, labels = c('x', 'y'))", "factor() has no argument 'labels' that bib reads (bib reads: "
     "levels)"),
    ("Reaction ~ factor(cond, levels = c('a', 'a'))", "level 'a' is given twice"),
    ("Reaction ~ relevel(cond)", "relevel() needs ref"),
    ("Reaction ~ relevel(cond, ref = b)", "relevel(): ref must be a level in quotes (or its position), got b"),
    ("Reaction ~ relevel(Days + 1, ref = 'b')", "relevel() takes a column name or another factor call"),
    ("Reaction ~ poly(Days, 2, raw = maybe)", "term poly(Days, 2, raw = maybe): poly(): raw: expected TRUE or FALSE, "
     "got maybe"),
    (". ~ Days", "the response cannot be '.'"),
    ("poly(Reaction, 2) ~ Days", "response poly(Reaction, 2): poly() cannot be the response"),
    ("log(Reaction, 2) ~ Days", "response log(Reaction, 2): log() takes 1 argument"),
    ("Reaction ~ Days + (. | Subject)", "'.' inside a random term"),
    ("y ~ " + "*".join(f"v{i}" for i in range(40)), "the formula expands to more than 5,000 terms"),
    ("y ~ (" + "+".join(f"v{i}" for i in range(40)) + ")^20", "the formula expands to more than 5,000 terms"),
])
def test_a_refused_form_is_one_line(formula, message):
    with pytest.raises(BibInputError) as exc:
        parse_formula(formula)
    assert message in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize(("formula", "change", "message"), [
    ("Reaction ~ factor(cond, levels = c('a', 'b')) + (1 | Subject)", None,
     "term factor(cond, levels = c(\"a\", \"b\")): value 'c' of cond is not among the levels given (R makes it NA"),
    ("Reaction ~ factor(cond, levels = c('a', 'b', 'c', 'd')) + (1 | Subject)", None,
     "level 'd' does not occur in the data"),
    ("Reaction ~ relevel(cond, ref = 'z') + (1 | Subject)", None, "ref 'z' must be an existing level of cond (a, b, c)"),
    ("Reaction ~ relevel(factor(dgrp), ref = 4) + (1 | Subject)", None, "ref = 4 but dgrp has 3 levels"),
    ("log(Reaction - 300) ~ Days + (1 | Subject)", None, "response log(Reaction - 300) is missing or not finite in "
     "102 rows (first: row 0, where Reaction = 249.56); log() needs values above 0; R would fit NaN or -Inf with a "
     "warning, bib refuses"),
    ("sqrt(Reaction - 300) ~ Days + (1 | Subject)", None, "sqrt() needs values of at least 0"),
    ("Reaction ~ I(Days - mean(Days)) + (1 | Subject)", "Days", "term I(Days - mean(Days)) cannot be evaluated on the "
     "data (mean() over 1 missing or infinite values (R gives NA for every row, or stops"),
    ("Reaction ~ poly(Days, 2) + (1 | Subject)", "Days", "term poly(Days, 2) cannot be evaluated on the data (poly() "
     "over 1 missing"),
    ("Reaction ~ . + (1 | Subject)", "only", "'.' stands for no column"),
])
def test_a_refused_value_is_one_line_naming_the_term(data, formula, change, message):
    d = data.copy()
    if change == "Days":
        d.loc[5, "Days"] = np.nan
    elif change == "only":
        d = d[["Reaction", "Subject"]]
    with pytest.raises(BibInputError) as exc:
        lmer(formula, d)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_scale_is_over_the_values_present_as_r(data):
    """R's scale() centres on the values present (na.rm), so one missing Days leaves the others' values as they
    are on the whole data; lme4 then drops the row."""
    d = data.copy()
    d.loc[5, "Days"] = np.nan
    fit = lmer("Reaction ~ scale(Days) + (1 | Subject)", d)
    present = d["Days"].dropna()
    x = (present - present.mean()) / present.std(ddof=1)
    assert fit.frame.X[:, 1] == pytest.approx(x.to_numpy(), rel=1e-12)
    assert fit.na_omitted == [5]


def test_likelihood_ratio_tests_compare_fits_of_one_transformed_response(data):
    from bib.analysis.anova import anova

    m0 = lmer("sqrt(Reaction) ~ Days + (1 | Subject)", data)
    m1 = lmer("sqrt( Reaction ) ~ Days + cond + (1 | Subject)", data)  # written differently, R's deparse alike
    table = anova(m0, m1).table
    assert list(table.index) == [m0.formula, m1.formula] and table["Df"].iloc[1] == 2
    with pytest.raises(BibInputError, match=r"different responses \(log\(Reaction\), sqrt\(Reaction\)\)"):
        anova(m0, lmer("log(Reaction) ~ Days + (1 | Subject)", data))


def test_predict_codes_logical_terms_and_sum_contrasts_as_the_fit(data):
    """New data with only TRUE rows of I(Days > 3) took code 0 (FALSE) of its own levels, and a sum-coded
    factor lost its coding (KeyError 'cond1'): both now predict the fit's own fixed part."""
    fit = lmer("Reaction ~ I(Days > 3) + (1 | Subject)", data)
    late = data[data["Days"] > 3].iloc[:3]
    b0, b1 = fit.coefficients["estimate"]
    assert fit.predict(late, re=False) == pytest.approx([b0 + b1] * 3, rel=1e-12)
    for fit in (lmer("Reaction ~ cond * Days + (1 | Subject)", data, contrasts={"cond": "sum"}),
                lmer("Reaction ~ C(cond, contr.sum) * Days + (1 | Subject)", data)):
        expected = fit.frame.X @ fit.coefficients["estimate"].to_numpy()
        assert fit.predict(data, re=False) == pytest.approx(expected, rel=1e-12)


def test_coded_variables_are_rs_factors_attribute():
    """R's attr(terms(f), "factors") == 1: grp + cond %in% grp codes cond only in cond:grp (grp by every
    level); cond * Days / grp codes grp only in cond:Days:grp. lmerTest's type III containment counts these
    (test_type3_f_tests_name_function_terms_as_lmertest holds both models to lmerTest's F within 1e-4)."""
    from bib.analysis.formula import coded_variables

    terms = (("grp",), ("cond", "grp"))
    assert coded_variables(("cond", "grp"), terms, True) == ("cond",)
    assert coded_variables(("grp",), terms, True) == ("grp",)
    assert coded_variables(("grp",), terms, False) == ()  # no intercept: the first factor gets every level
    nested = (("cond",), ("Days",), ("cond", "Days"), ("cond", "Days", "grp"))
    assert coded_variables(("cond", "Days", "grp"), nested, True) == ("grp",)
    assert coded_variables(("cond", "Days"), nested, True) == ("cond", "Days")
