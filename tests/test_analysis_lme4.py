"""lme4/lmerTest parity of the mixed-model engine: fixtures made by tests/fixtures/lme4/make_fixtures.R.

Estimates agree within 1e-4, standard errors within 1e-3 relative, Satterthwaite df within 1%.
The MB1 fixtures need the shared data file (../shared/data/manybabies1/); a live R comparison needs
Rscript with lmerTest. Both skip with the reason when absent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bib.analysis.formula import parse_formula
from bib.analysis.mixed import fit_lmm, model_frame

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "lme4"
MB1 = ROOT.parent / "shared" / "data" / "manybabies1" / "03_data_trial_main.csv.gz"
needs_mb1 = pytest.mark.skipif(not MB1.exists(), reason=f"the ManyBabies 1 file is not at {MB1}")


def _fixture(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def assert_parity(fit, ref: dict) -> None:  # noqa: ANN001
    """Every fixed effect of ``ref`` (lme4 names) within the tolerances of issue 14."""
    coef = fit.coefficients
    assert sorted(coef.index) == sorted(r["term"] for r in ref["fixed"])
    for r in ref["fixed"]:
        row = coef.loc[r["term"]]
        assert row["estimate"] == pytest.approx(r["estimate"], abs=1e-4), r["term"]
        assert row["se"] == pytest.approx(r["se"], rel=1e-3), r["term"]
        assert row["df"] == pytest.approx(r["df"], rel=1e-2), r["term"]
    assert fit.sigma == pytest.approx(ref["sigma"], rel=1e-3)
    assert fit.deviance == pytest.approx(ref["deviance"], abs=1e-3)


@pytest.mark.parametrize("name", ["crossed", "nested", "slopes", "slopes_uncorrelated", "crossed_ml"])
def test_simulated_designs_match_lme4(name: str) -> None:
    ref = _fixture(name)
    data = pd.read_csv(FIX / f"{name.split('_')[0]}.csv", dtype={"participant": str, "item": str, "lab": str})
    frame = model_frame(parse_formula(ref["formula"]), data)
    fit = fit_lmm(frame, reml=ref["method"] == "REML")
    assert_parity(fit, ref)
    assert fit.singular == ref["singular"]


def mb1_rows() -> pd.DataFrame:
    """The MB1 paper's rows, preprocessed exactly as make_fixtures.R does."""
    d = pd.read_csv(MB1, dtype=str, keep_default_na=False)
    d = d[d["trial_type"].isin(["IDS", "ADS"])].copy()
    d["age_mo"] = pd.to_numeric(d["age_mo"])
    d["age_mo"] -= d["age_mo"].mean()
    lt = pd.to_numeric(d["looking_time"], errors="coerce")
    with np.errstate(divide="ignore"):
        d["log_lt"] = np.log(lt)
    d = d[np.isfinite(d["log_lt"])].copy()
    d["item"] = d["stimulus_num"] + d["trial_type"]
    d["trial_num"] = pd.to_numeric(d["trial_num"])
    return d


@needs_mb1
@pytest.mark.parametrize("name", ["mb1_participant", "mb1_lab", "mb1_lab_item", "mb1_paper"])
def test_manybabies1_models_match_lme4(name: str) -> None:
    ref = _fixture(name)
    reference = {"method": "singlescreen"} if "method" in ref["formula"] else {}
    frame = model_frame(parse_formula(ref["formula"]), mb1_rows(), reference=reference)
    fit = fit_lmm(frame)
    assert fit.n_obs == ref["n_obs"] == 26895
    assert_parity(fit, ref)


@needs_mb1
def test_manybabies1_reproduction_through_bib_analyze(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The documented command: analysis/manybabies1.toml on the shared file gives the paper's model."""
    from bib.cli import main

    out = tmp_path / "mb1"
    try:
        main(["analyze", str(MB1), "--spec", str(ROOT / "analysis" / "manybabies1.toml"), "--out", str(out)])
    except SystemExit as exc:
        assert not exc.code
    text = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    r = report["tasks"]["ids-preference"]
    ref = {f["term"]: f for f in _fixture("mb1_paper")["fixed"]}["trial_typeIDS"]
    assert r["effect"] == "IDS - ADS"
    assert r["estimate"] == pytest.approx(ref["estimate"], abs=1e-4) and round(r["estimate"], 4) == 0.0986
    assert r["se"] == pytest.approx(ref["se"], rel=1e-3) and round(r["se"], 4) == 0.0360
    assert r["df"] == pytest.approx(ref["df"], rel=1e-2) and round(r["df"], 1) in (28.9, 29.0)
    assert r["p"] == pytest.approx(ref["p"], rel=1e-2)
    assert r["n_trials"] == 26895 and r["n_participants"] == 2302 and r["n_items"] == 16
    assert report["filter"] == {"rows_read": 37264, "rows_kept": 32881, "dropped": {"trial_type not in ['IDS', 'ADS']": 4383}}
    assert report["exclusions"]["summary"] == [{"step": "missing", "reason": "missing looking time", "rows": 5986}]
    assert r["kept_because"] == "converged, not singular" and len(r["ladder"]) == 1
    assert "filter: kept 32881 of 37264 rows" in text and "5986  missing: missing looking time" in text
    # The paper's numbers, as its lme4/lmerTest fit prints them: exclusion lines are the original file's.
    first = (out / "exclusions.csv").read_text().splitlines()[1]
    assert first.startswith("47,babylabbrookes:mb81,")


def test_live_r_agrees_on_a_crossed_design(tmp_path: Path) -> None:
    """Where Rscript with lmerTest is installed, fit the crossed design in R now and compare."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.skip("Rscript is not installed (apt-get install r-cran-lmertest)")
    probe = subprocess.run([rscript, "-e", "cat(requireNamespace('lmerTest', quietly=TRUE))"], capture_output=True, text=True)
    if "TRUE" not in probe.stdout:
        pytest.skip("R is installed but lmerTest is not (apt-get install r-cran-lmertest)")
    script = (
        "suppressMessages(library(lmerTest)); d <- read.csv(commandArgs(TRUE)[1]);"
        "m <- lmer(y ~ outcome + (1 | participant) + (1 | item), data = d);"
        "s <- summary(m)$coefficients; write.csv(s[, c(1, 2, 3)], commandArgs(TRUE)[2])"
    )
    out = tmp_path / "r.csv"
    subprocess.run([rscript, "-e", script, str(FIX / "crossed.csv"), str(out)], check=True, capture_output=True)
    ref = pd.read_csv(out, index_col=0)
    data = pd.read_csv(FIX / "crossed.csv", dtype={"participant": str, "item": str})
    fit = fit_lmm(model_frame(parse_formula("y ~ outcome + (1 | participant) + (1 | item)"), data))
    for term, row in ref.iterrows():
        assert fit.coefficients.loc[term, "estimate"] == pytest.approx(row["Estimate"], abs=1e-4)
        assert fit.coefficients.loc[term, "se"] == pytest.approx(row["Std. Error"], rel=1e-3)
        assert fit.coefficients.loc[term, "df"] == pytest.approx(row["df"], rel=1e-2)
