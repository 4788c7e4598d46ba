"""Issue 14: formulas, the PLS engine on designs with known variance components, the pruning ladder,
the closed-form paired path of `bib power`, real-data friction and bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_run import run_cli as _run

from bib.analysis.analyze import dz_interval
from bib.analysis.formula import make_variable, parse_formula, term_matrix
from bib.analysis.mixed import fit_lmm, format_p, model_frame
from bib.analysis.power import paired_closed_form, study_frame

PYHAB_SPEC = """
format = "pyhab"
[pyhab.trial_types]
fam = {task = "preference", phase = "familiarization"}
exp = {task = "preference", outcome = "expected"}
unexp = {task = "preference", outcome = "unexpected"}
"""


def _pyhab_file(folder: Path, snum: int, rows: list[tuple[int, int, str, float]], columns: str) -> None:
    """rows: (trial, GNG, trialType, sumOnA)."""
    lines = [columns] + [f"inf{snum},{trial},{gng},{kind},{on}" for trial, gng, kind, on in rows]
    (folder / f"BIB{snum}_inf{snum}_1142022.csv").write_text("\n".join(lines) + "\n")


# --- formulas ---------------------------------------------------------------------------------


def test_formula_expansion_and_r_term_order() -> None:
    f = parse_formula("y ~ a * b + c:a + (1 + x | g) + (1 | lab/participant) + (x || h)")
    assert f.terms == (("a",), ("b",), ("a", "b"), ("a", "c"))  # degree order; variables by appearance
    assert [r.text for r in f.random] == ["(1 + x | g)", "(1 | lab)", "(1 | participant:lab)", "(1 | h)", "(0 + x | h)"]
    assert parse_formula("log(lt) ~ 0 + x").response_fn == "log"
    assert not parse_formula("y ~ x - 1 + (1|g)").intercept


def test_design_columns_follow_r_model_matrix() -> None:
    data = pd.DataFrame({"a": ["p", "q", "r", "p"], "b": ["TRUE", "FALSE", "TRUE", "FALSE"], "x": [1.0, 2.0, 3.0, 4.0]})
    variables = {v: make_variable(v, data[v]) for v in ("a", "b", "x")}
    # Names and columns as R 4.x's model.matrix(~ a*x + b:x) gives them: x's margin is in the
    # model, so b takes contrasts in x:b.
    f = parse_formula("y ~ a * x + b:x")
    X, names = term_matrix(f.terms, f.intercept, variables, 4)
    assert names == ["(Intercept)", "aq", "ar", "x", "aq:x", "ar:x", "x:bTRUE"]
    assert X[:, names.index("x:bTRUE")].tolist() == [1.0, 0.0, 3.0, 0.0]
    # Without the intercept the first factor is coded by indicators (R's rule: no margin).
    _, names = term_matrix(parse_formula("y ~ 0 + a + x").terms, False, variables, 4)
    assert names == ["ap", "aq", "ar", "x"]
    ref = make_variable("a", data["a"], reference="r")
    assert ref.levels == ["r", "p", "q"]


# --- engine: simulated crossed designs with known variance components ---------------------------


def _crossed(rng: np.random.Generator, n_part: int, n_item: int, sd_u: float, sd_w: float, sd_e: float,
             effect: float) -> pd.DataFrame:
    u = rng.normal(0, sd_u, n_part)
    w = rng.normal(0, sd_w, n_item)
    p, i = np.meshgrid(np.arange(n_part), np.arange(n_item), indexing="ij")
    p, i = p.ravel(), i.ravel()
    x = (i % 2).astype(float)
    y = 1.5 + effect * x + u[p] + w[i] + rng.normal(0, sd_e, len(p))
    return pd.DataFrame({"y": y, "outcome": np.where(x == 1, "unexpected", "expected"),
                         "participant": [f"p{k}" for k in p], "item": [f"i{k}" for k in i]})


@pytest.mark.parametrize("reps", [20, pytest.param(120, marks=pytest.mark.slow)])
def test_crossed_design_recovers_known_variance_components(reps: int) -> None:
    # Replications of 50 participants x 24 items (items nested in outcome, as in a VOE study):
    # the REML variance estimates are unbiased to within their Monte Carlo error, and the 95%
    # Satterthwaite intervals of the effect cover the truth at about the nominal rate.
    rng = np.random.default_rng(14)
    f = parse_formula("y ~ outcome + (1 | participant) + (1 | item)")
    var_u, var_w, var_e, cover, dfs = [], [], [], 0, []
    for _ in range(reps):
        fit = fit_lmm(model_frame(f, _crossed(rng, 50, 24, 0.5, 0.3, 0.4, 0.2)))
        vc = {v.group: v.variance for v in fit.varcomps}
        var_u.append(vc["participant"])
        var_w.append(vc["item"])
        var_e.append(fit.sigma ** 2)
        c = fit.coefficients.loc["outcomeunexpected"]
        cover += c["ci_low"] <= 0.2 <= c["ci_high"]
        dfs.append(c["df"])
    for est, truth in ((var_u, 0.25), (var_w, 0.09), (var_e, 0.16)):
        m, se = np.mean(est), np.std(est, ddof=1) / math.sqrt(reps)
        assert abs(m - truth) < 3 * se + 1e-3, (m, truth, se)
    assert cover / reps >= (0.85 if reps < 100 else 0.90)
    # The outcome is between items (12 per outcome): its df is near 22, far from the 1,198 residual df.
    assert 15 < np.median(dfs) < 30


def test_nested_and_slope_terms_fit_and_name_components() -> None:
    rng = np.random.default_rng(3)
    rows = []
    for lab in range(5):
        a = rng.normal(0, 0.4)
        for s in range(12):
            u, b = rng.normal(0, 0.5), rng.normal(0, 0.3)
            for t in range(6):
                x = t % 2
                rows.append((f"L{lab}", f"s{s}", "unexpected" if x else "expected", 2 + (0.3 + b) * x + a + u + rng.normal(0, 0.3)))
    data = pd.DataFrame(rows, columns=["lab", "participant", "outcome", "y"])
    fit = fit_lmm(model_frame(parse_formula("y ~ outcome + (1 + outcome | lab:participant) + (1 | lab)"), data))
    groups = [(v.group, v.name) for v in fit.varcomps]
    assert groups == [("lab:participant", "(Intercept)"), ("lab:participant", "outcomeunexpected"), ("lab", "(Intercept)")]
    assert fit.n_groups == {"lab:participant": 60, "lab": 5}
    assert fit.converged


# --- the ladder ---------------------------------------------------------------------------------


def test_ladder_prunes_a_singular_item_term_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(5)
    lines = ["participant_id,item,task,trial_num,phase,outcome,looking_time_s"]
    for p in range(30):
        u = rng.normal(0, 0.5)
        for t in range(8):
            outcome = "unexpected" if t % 2 else "expected"
            lt = math.exp(2 + 0.3 * (t % 2) + u + rng.normal(0, 0.4))  # no item variance at all
            lines.append(f"p{p},{outcome[:2]}{t % 4},voe,{t + 1},test,{outcome},{lt:.4f}")
    data = tmp_path / "lt.csv"
    data.write_text("\n".join(lines) + "\n")
    code, out, _ = _run(capsys, "analyze", str(data), "--json")
    assert code == 0
    r = json.loads(out)["tasks"]["voe"]
    assert r["formula_declared"] == "log_lt ~ outcome + (1 | participant) + (1 | item)"
    assert any("(1 | item) added: 2 items per outcome" in n for n in r["notes"])
    assert [s["action"] for s in r["ladder"]] == ["pruned (1 | item) (singular)", "kept"]
    assert r["formula"] == "log_lt ~ outcome + (1 | participant)"
    assert r["kept_because"] == "converged, not singular after pruning"


# --- bib power: the closed form equals the engine -------------------------------------------------


@pytest.mark.parametrize("rho", [0.6, -0.5])
def test_paired_closed_form_equals_the_engine(rho: float) -> None:
    # rho > 0: interior participant variance (paired t); rho < 0: on the boundary (OLS, df 2N - 2).
    rng = np.random.default_rng(9)
    n = 20
    cov = 0.16 * np.array([[1, rho], [rho, 1]])
    y = rng.multivariate_normal([2.0, 2.3], cov, size=n)
    cf = paired_closed_form(y[None])
    frame = study_frame(np.exp(y), "log")
    fit = fit_lmm(model_frame(parse_formula("log_lt ~ outcome + (1 | participant)"), frame))
    c = fit.coefficients.loc["outcomeunexpected"]
    assert bool(cf["interior"][0]) is (rho > 0) is (not fit.singular)
    assert c["estimate"] == pytest.approx(cf["estimate"][0], abs=1e-8)
    assert c["se"] == pytest.approx(cf["se"][0], rel=1e-5)
    assert c["df"] == pytest.approx(cf["df"][0], rel=1e-3)


# --- friction -------------------------------------------------------------------------------------


def test_p_format_and_dz_interval() -> None:
    assert format_p(1e-58) == "< .001" and format_p(0.0104) == ".010" and format_p(0.5) == ".500"
    rng = np.random.default_rng(1)
    diff = rng.normal(0.35, 1.0, 30)
    dz, lo, hi = dz_interval(diff, 0.05)
    assert dz == pytest.approx(diff.mean() / diff.std(ddof=1))
    # The noncentral-t interval: at its ends the observed t is the 2.5% / 97.5% quantile.
    from scipy import stats

    t = dz * math.sqrt(30)
    assert stats.nct.cdf(t, 29, lo * math.sqrt(30)) == pytest.approx(0.975, abs=1e-6)
    assert stats.nct.cdf(t, 29, hi * math.sqrt(30)) == pytest.approx(0.025, abs=1e-6)


def _friction_file(tmp_path: Path) -> Path:
    lines = ["subject,cond,look,kind,trial"]
    for p in range(12):
        for t, outcome in enumerate(("exp", "unexp")):
            lines.append(f"s{p},{outcome},{5 + p % 3 + 2 * t + 0.1 * p:.2f},test,{t + 1}")
        lines.append(f"s{p},,0,placeholder,0")  # placeholder rows the filter removes
    lines.append("NA,exp,6.0,test,1")  # two different infants without ids: never merged
    lines.append("NA,unexp,9.0,test,2")
    lines.append(",unexp,7.0,test,2")
    lines.append("s0,unexp,1.0,test,3")  # line 41: too short, excluded with its ORIGINAL line
    path = tmp_path / "raw.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


FRICTION_SPEC = """
tasks = ["my-own-task"]
[filter]
keep = { kind = ["test"] }
[mapping]
columns = { participant_id = "subject", outcome = "cond", looking_time_s = "look", trial_num = "trial" }
values = { outcome = { exp = "expected", unexp = "unexpected" } }
constants = { task = "my-own-task", phase = "test" }
[exclusions]
steps = ["missing", "min_look"]
min_look_s = 2.0
"""


def test_filter_free_task_missing_ids_and_original_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _friction_file(tmp_path)
    spec = tmp_path / "spec.toml"
    spec.write_text(FRICTION_SPEC)
    out = tmp_path / "out"
    code, text, _ = _run(capsys, "analyze", str(data), "--spec", str(spec), "--out", str(out))
    assert code == 0, text
    assert "filter: kept 28 of 40 rows (kind not in ['test']: 12)" in text
    report = json.loads((out / "report.json").read_text())
    assert report["schema"] == "bib.analysis/2"
    r = report["tasks"]["my-own-task"]
    assert r["n_participants"] == 12  # the three id-less rows are not a 13th participant
    dropped = {d["row"]: d["reason"] for d in report["exclusions"]["import_dropped"]}
    assert dropped == {"38": "missing participant id (empty or NA)", "39": "missing participant id (empty or NA)",
                       "40": "missing participant id (empty or NA)"}
    assert [(e["row"], e["reason"]) for e in report["exclusions"]["excluded"]] == [("41", "look shorter than 2 s")]
    csv_rows = (out / "exclusions.csv").read_text().splitlines()
    assert csv_rows[0] == "row,participant_id,task,trial_num,phase,outcome,looking_time_s,step,reason,stage"
    assert len(csv_rows) == 5 and csv_rows[-1].startswith("41,s0,my-own-task,3,test,unexpected,1.0,min_look,")
    assert "3  import: missing participant id (empty or NA)" in text
    assert sorted(p.name for p in out.iterdir()) == ["exclusions.csv", "paired-my-own-task.png", "paired-my-own-task.svg",
                                                    "provenance.json", "report.json", "report.md",
                                                    "residuals-my-own-task.png", "residuals-my-own-task.svg"]
    # The same job reruns into its folder; another job's folder is refused (docs/cli.md).
    assert _run(capsys, "analyze", str(data), "--spec", str(spec), "--out", str(out))[0] == 0
    code, _, err = _run(capsys, "analyze", str(data), "--out", str(out))
    assert code == 2 and "folder holds the output of" in err


def test_paired_plot_has_no_line_per_infant_at_scale(tmp_path: Path) -> None:
    from bib.analysis.plots import paired_plot

    rng = np.random.default_rng(0)
    n = 2000
    rows = pd.DataFrame({"participant_id": np.repeat(np.arange(n), 2), "outcome": np.tile(["expected", "unexpected"], n),
                         "y": rng.normal(2, 0.5, 2 * n)})
    result = {"n_participants": n, "estimate": 0.1, "ci_low": 0.05, "ci_high": 0.15, "p": 1e-9}
    paired_plot(rows, result, "t", "log", tmp_path / "big")
    svg = (tmp_path / "big.svg").read_text()
    assert svg.count("<path") < 400  # a line per infant would be 2,000 paths
    assert "p &lt; .001" in svg and "0.000" not in svg.split("<title>")[0]
    paired_plot(rows[rows["participant_id"] < 10], {**result, "n_participants": 10}, "t", "log", tmp_path / "small")
    assert (tmp_path / "small.svg").read_text().count("<path") >= 10


def test_pyhab_side_files_are_skipped_and_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "pyhab.toml"
    spec.write_text(PYHAB_SPEC + "\n[exclusions]\nmin_look_s = 1.0\n")
    folder = tmp_path / "pyhab"
    folder.mkdir()
    cols = "sID,trial,GNG,trialType,sumOnA"
    for s in range(1, 6):
        _pyhab_file(folder, s, [(1, 1, "fam", 10.0), (2, 1, "exp", 4.0 + s), (3, 1, "unexp", 7.0 + s * 0.7)], cols)
    (folder / "BIB_Stats.csv").write_text("sNum,meanOn\n1,3\n")
    (folder / "BIB1_inf1_BlockSumm_1.csv").write_text("x\n1\n")
    code, out, err = _run(capsys, "analyze", str(folder), "--spec", str(spec), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["skipped_files"] == ["BIB1_inf1_BlockSumm_1.csv", "BIB_Stats.csv"]
    code, _, err = _run(capsys, "analyze", str(folder / "BIB_Stats.csv"), "--spec", str(spec))
    assert code == 2 and "a PyHab summary file (_Stats)" in err


# --- bad input: one line naming the field or column, exit 2 ---------------------------------------


@pytest.mark.parametrize(("spec_text", "message"), [
    ('[model]\nformula = "log_lt ~ outcome + age_weeks + (1 | participant)"',
     "model.formula: column age_weeks (named in the formula) is not in the data"),
    ('[model]\nformula = "log_lt ~ outcome + (1 | participant) + (1 | lab)"',
     "model.formula: random term (1 | lab): grouping factor lab has one level (L1)"),
    ('[model]\nformula = "log_lt ~ outcome + (1 + age_mo | participant)"',
     "random term (1 + age_mo | participant): age_mo does not vary within any level of participant"),
    ('[filter]\nkeep = { phase = ["habituation"] }', "field filter: keeps none of the"),
    ('[exclusions]\nsteps = ["missing", "outliers"]', "field exclusions.steps.1: Input should be"),
    ('[model]\nformula = "log_lt ~ outcome + (1 | participant)"\nprune = ["(1 | item)"]',
     "field model.prune: '(1 | item)' is not a random term of model.formula"),
    ('[model]\nformula = "log_lt ~ outcome + (1 | participant"', "field model.formula: unbalanced parentheses"),
    # Issue 27: an unsupported function, a term on a one-level factor, a predictor with no variance.
    ('[model]\nformula = "log_lt ~ outcome + ns(age_days, 3) + (1 | participant)"',
     "field model.formula: term ns(age_days, 3): function ns() is not supported (supported: factor(), as.factor(), "
     "C(), relevel(), I(), poly(), log(), log2(), log10(), exp(), sqrt(), scale(), mean(), sd(), offset())"),
    ('[model]\nformula = "log_lt ~ outcome + lab + (1 | participant)"',
     "task voe: model.formula: term lab: factor lab has one level (L1); a fixed effect needs at least two"),
    ('[model]\nformula = "log_lt ~ outcome + factor(lab) + (1 | participant)"',
     "task voe: model.formula: term factor(lab): column lab has one level (L1); a fixed effect needs at least two"),
    ('[model]\nformula = "log_lt ~ . + (1 | participant)"',
     "field model.formula: '.' is not read in an analysis spec (the imported table has bookkeeping columns"),
    ('[model]\nformula = "log_lt ~ outcome + C(lab, helmert) + (1 | participant)"',
     "field model.formula: term C(lab, helmert): C(): contrasts helmert are not supported (supported: "
     "contr.treatment, treatment, contr.sum, sum)"),
    ('[model]\nformula = "log_lt ~ outcome + age_days:phase + (1 | participant)"',
     "task voe: model.formula: term age_days:phase: factor phase has one level (test)"),
    ('[model]\nformula = "log_lt ~ outcome + phase_n + (1 | participant)"',
     "task voe: model.formula: term phase_n: predictor phase_n does not vary (every value is 1), so its effect "
     "cannot be estimated"),
    ('[model]\nformula = "log_lt ~ outcome * I(0 * trial_num) + (1 | participant)"',
     "model.formula: term I(0 * trial_num): predictor I(0 * trial_num) does not vary (every value is 0)"),
    ('[model]\nformula = "log_lt ~ outcome + I(log(missing_col)) + (1 | participant)"',
     "model.formula: term I(log(missing_col)) cannot be evaluated on the data"),
])
def test_bad_model_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], spec_text: str,
                                             message: str) -> None:
    lines = ["participant_id,lab,age_days,task,trial_num,phase,outcome,looking_time_s,phase_n"]
    for p in range(6):
        lines += [f"p{p},L1,{300 + p},voe,1,test,expected,{4 + p},1", f"p{p},L1,{300 + p},voe,2,test,unexpected,{6 + p * 1.1},1"]
    data = tmp_path / "lt.csv"
    data.write_text("\n".join(lines) + "\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text + "\n")
    code, out, err = _run(capsys, "analyze", str(data), "--spec", str(spec))
    assert code == 2 and out == ""
    assert err.startswith("bib: error: ") and err.count("\n") == 1 and message in err, err


def test_engine_does_not_stop_at_the_theta_zero_stationary_point() -> None:
    # The synthetic example's preference task: var(sums) > var(differences), so the REML optimum
    # is interior (paired t: SE = sd(d)/sqrt(N), df = N - 1), but the deviance is flat at theta = 0,
    # where a bounded quasi-Newton run from theta = 1 can stop. The fit must find the interior optimum.
    from bib.analysis.analyze import model_rows
    from bib.analysis.exclusions import apply_exclusions
    from bib.analysis.importers import read_looking_times
    from bib.analysis.spec import load_spec

    root = Path(__file__).resolve().parents[1]
    spec = load_spec(root / "analysis" / "infant-pilot.toml")
    imported = read_looking_times(root / "data" / "looking_times" / "example.csv", spec=spec)
    rows = model_rows(apply_exclusions(imported.table, spec.exclusions).kept, ["preference"], "log", "x")
    fit = fit_lmm(model_frame(parse_formula("log_lt ~ outcome + (1 | participant)"), rows))
    wide = rows.pivot(index="participant_id", columns="outcome", values="log_lt")
    d = (wide["unexpected"] - wide["expected"]).to_numpy()
    c = fit.coefficients.loc["outcomeunexpected"]
    assert not fit.singular and fit.theta[0] > 0.3
    assert c["se"] == pytest.approx(d.std(ddof=1) / math.sqrt(len(d)), rel=1e-5)
    assert c["df"] == pytest.approx(len(d) - 1, rel=1e-4)
