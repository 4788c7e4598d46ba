"""Speed of the looking-time analysis: the MB1 paper's model against lme4, the power simulation's two paths.

Run: .venv/bin/python benchmarks/analysis.py   (prints figures; asserts nothing)
     .venv/bin/python benchmarks/analysis.py --scale 10000 200000 1000000 crossed
       (issue 27: simulated designs fitted by bib and by lme4 on the same rows, each fit in its own
       process: wall time, CPU time and peak memory (the child's rusage) of each and their ratios; sizes
       are rows of participants x 16 items x 50 labs, ``crossed`` is 3,125 participants x 4,000
       items, 64 items each; --timeout bounds each fit; --sides lme4 runs one side alone;
       --save-rows CSV writes one design's rows for tests/fixtures/lme4/make_scale.R)
     .venv/bin/python benchmarks/analysis.py --parity [MODEL ...] [--reps 5]
       (the fit time of lme4's parity models, tests/test_analysis_parity.py, by bib and by lme4 /
       lmerTest, each in process, best of --reps, wall and CPU; process start-up printed apart)
     .venv/bin/python benchmarks/analysis.py --smoke   (every path once at tiny sizes: seconds)

Everything runs on one core (BLAS threads pinned to 1 before numpy loads). Where Rscript with
lme4 is installed, the same script times lme4::lmer on the same rows in the same run and prints the
ratio, so a busy machine slows both sides alike; the load average is printed with the figures.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("BIB_NO_PROGRESS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

from bib.analysis.analyze import task_effect  # noqa: E402
from bib.analysis.formula import parse_formula  # noqa: E402
from bib.analysis.mixed import fit_lmm, model_frame  # noqa: E402
from bib.analysis.pilot import pilot_task  # noqa: E402
from bib.analysis.power import simulate_studies, study_frame  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MB1 = ROOT.parent / "shared" / "data" / "manybabies1" / "03_data_trial_main.csv.gz"
PAPER = ("log_lt ~ trial_type * method + trial_type * trial_num + age_mo * trial_num + trial_type * age_mo * nae"
         " + (1 | subid_unique) + (1 | item) + (1 | lab)")
R_SCRIPT = """
suppressMessages(library(lme4))
d <- read.csv(commandArgs(TRUE)[1])
d$method <- factor(d$method, levels = c("singlescreen", "eyetracking", "hpp"))
f <- {formula}
t0 <- proc.time()[["elapsed"]]
for (i in 1:{reps}) m <- lmer(f, data = d, REML = TRUE)
cat((proc.time()[["elapsed"]] - t0) / {reps}, fixef(m)[["trial_typeIDS"]], "\\n")
"""


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def mb1_rows() -> pd.DataFrame:
    """The paper's rows (README preprocessing), as the lme4 fixtures use them."""
    d = pd.read_csv(MB1, dtype=str, keep_default_na=False)
    d = d[d["trial_type"].isin(["IDS", "ADS"])].copy()
    d["age_mo"] = pd.to_numeric(d["age_mo"])
    d["age_mo"] -= d["age_mo"].mean()
    with np.errstate(divide="ignore"):
        d["log_lt"] = np.log(pd.to_numeric(d["looking_time"], errors="coerce"))
    d = d[np.isfinite(d["log_lt"])].copy()
    d["item"] = d["stimulus_num"] + d["trial_type"]
    d["trial_num"] = pd.to_numeric(d["trial_num"])
    return d


def bench_mb1(repeats: int = 3) -> None:
    if not MB1.exists():
        print(f"MB1 benchmark skipped: {MB1} not found")
        return
    rows = mb1_rows()
    formula = parse_formula(PAPER)
    times, fit = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        fit = fit_lmm(model_frame(formula, rows, reference={"method": "singlescreen"}))
        times.append(time.perf_counter() - start)
    assert fit is not None
    ours = min(times)
    print(f"MB1 paper model, {fit.n_obs} trials: bib (frame + PLS fit + Satterthwaite) best of {repeats} {ours:.2f} s "
          f"({fit.evaluations} deviance evaluations), IDS - ADS {fit.coefficients.loc['trial_typeIDS', 'estimate']:.5f}"
          f"   [load {_load()}]")
    rscript = shutil.which("Rscript")
    if rscript is None:
        print("Rscript not installed: no lme4 reference; the time above is absolute (see docs/analysis.md for the machine)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "mb1.csv"
        rows.to_csv(csv, index=False)
        script = R_SCRIPT.format(formula=PAPER, reps=repeats)
        res = subprocess.run([rscript, "-e", script, str(csv)], capture_output=True, text=True)
    if res.returncode != 0:
        print(f"lme4 reference failed: {res.stderr.strip().splitlines()[-1:]}")
        return
    r_time, r_est = (float(v) for v in res.stdout.split())
    print(f"reference: lme4::lmer (REML, no Satterthwaite), mean of {repeats} {r_time:.2f} s, IDS - ADS {r_est:.5f}"
          f"   [load {_load()}]")
    print(f"ratio bib / lme4: {ours / r_time:.2f}x (target <= 5x)")


def closed_form_reference(pilot, n: int, sims: int, seed: int, alpha: float = 0.05) -> np.ndarray:
    """The p-values of ``bib power``'s design written out in bare numpy (the issue's "25-line closed form"): the
    same blocks of draws (one generator per block of ``BLOCK`` studies), the paired REML closed form, Satterthwaite
    t. What ``bib power`` adds to this (jobs, the pool, the result table) is the overhead the ratio measures."""
    from bib.analysis.power import BLOCK

    mean, cov = pilot.log_model(None)
    chol = np.linalg.cholesky(cov)
    ps = []
    for k in range(-(-sims // BLOCK)):
        m = min(BLOCK, sims - k * BLOCK)
        y = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(n, k))).standard_normal((m, n, 2)) @ chol.T + mean
        d, s = y[..., 1] - y[..., 0], y[..., 1] + y[..., 0]
        var_d, var_s = d.var(axis=1, ddof=1), s.var(axis=1, ddof=1)
        interior = var_s > var_d
        se = np.where(interior, np.sqrt(var_d / n), np.sqrt((var_d + var_s) / (2 * n)))
        df = np.where(interior, n - 1.0, 2.0 * n - 2.0)
        ps.append(2 * stats.t.sf(np.abs(d.mean(axis=1) / se), df))
    return np.concatenate(ps)


def bench_power(studies_n: int = 100_000, engine_n: int = 30) -> None:
    pilot = pilot_task("preference")
    best = {}
    for _ in range(3):  # alternated, best of 3 (CPU time of this process: one core)
        for name, fn in (("bib", lambda: simulate_studies(pilot, [24], studies_n, seed=0, workers=1)["p"].to_numpy()),
                         ("reference", lambda: closed_form_reference(pilot, 24, studies_n, 0))):
            c0 = time.process_time()
            out = fn()
            best[name] = min(best.get(name, math.inf), time.process_time() - c0)
            if name == "bib":
                ours = out
            else:
                assert np.array_equal(ours, out), "bib power and its closed form differ"
    print(f"power: {studies_n:,} studies at N=24 (preference, Satterthwaite t): bib power {best['bib']:.2f} s CPU "
          f"({studies_n / best['bib']:,.0f} studies per CPU-second) against the bare numpy closed form of the same "
          f"design {best['reference']:.2f} s ({studies_n / best['reference']:,.0f}/s), the same p-values: "
          f"**{best['bib'] / best['reference']:.2f}x** (target <= 2x)   [load {_load()}]")
    frames = [study_frame(pilot.draw(np.random.default_rng(s), 24), "log") for s in range(engine_n)]
    start = time.perf_counter()
    for frame in frames:
        task_effect(frame, [], 0.05, "bench")
    engine = (time.perf_counter() - start) / len(frames)
    print(f"reference: one study through the PLS engine (task_effect)  {engine * 1e3:6.1f} ms per study "
          f"({1 / engine:8.0f} studies/s); speed-up of the closed form {engine * studies_n / best['bib']:.0f}x   [load {_load()}]")


SCALE_R = """
suppressMessages(library(lme4))
d <- read.csv(commandArgs(TRUE)[1], colClasses = c(participant = "character", item = "character", lab = "character"))
t0 <- proc.time()[["elapsed"]]
m <- lmer(as.formula(commandArgs(TRUE)[2]), data = d, REML = TRUE)
cat(proc.time()[["elapsed"]] - t0, format(REMLcrit(m), digits = 15), "\\n")
"""
SCALE_PY = """
import sys, time
import pandas as pd
from bib.analysis import lmer
d = pd.read_csv(sys.argv[1], dtype={"participant": str, "item": str, "lab": str})
t0 = time.perf_counter()
fit = lmer(sys.argv[2], d)
print(time.perf_counter() - t0, fit.deviance, fit.converged)
"""


def scale_design(name: str, seed: int = 0) -> tuple[pd.DataFrame, str]:
    """The simulated rows and formula of one scale design (see the module doc)."""
    rng = np.random.default_rng(seed)
    if name == "crossed":
        n_part, n_item, per = 3125, 4000, 64
        part = np.repeat(np.arange(n_part), per)
        item = np.concatenate([rng.choice(n_item, per, replace=False) for _ in range(n_part)])
        x = (item % 2).astype(float)
        y = 2 + 0.3 * x + rng.normal(0, 0.5, n_part)[part] + rng.normal(0, 0.1, n_item)[item] + rng.normal(0, 0.6, len(part))
        rows = pd.DataFrame({"participant": [f"p{p}" for p in part], "item": [f"i{i}" for i in item], "lab": "L",
                             "outcome": np.where(x > 0, "unexpected", "expected"), "y": y})
        return rows, "y ~ outcome + (1 | participant) + (1 | item)"
    n = int(name)
    n_part, n_item, n_lab = n // 16, 16, 50
    part = np.repeat(np.arange(n_part), n_item)
    item = np.tile(np.arange(n_item), n_part)
    lab = part % n_lab
    x = (item % 2).astype(float)
    y = (2 + 0.3 * x + rng.normal(0, 0.5, n_part)[part] + rng.normal(0, 0.1, n_item)[item]
         + rng.normal(0, 0.2, n_lab)[lab] + rng.normal(0, 0.6, len(part)))
    rows = pd.DataFrame({"participant": [f"p{p}" for p in part], "item": [f"i{i}" for i in item],
                         "lab": [f"L{v}" for v in lab], "outcome": np.where(x > 0, "unexpected", "expected"), "y": y})
    return rows, "y ~ outcome + (1 | participant) + (1 | item) + (1 | lab)"


def bench_scale(names: list[str], timeout: float, sides: tuple[str, ...] = ("bib", "lme4")) -> None:
    rscript = shutil.which("Rscript") if "lme4" in sides else None
    for name in names:
        rows, formula = scale_design(name)
        with tempfile.TemporaryDirectory() as tmp:
            csv = Path(tmp) / "rows.csv"
            rows.to_csv(csv, index=False)
            results = {}
            runs = [("bib", [sys.executable, "-c", SCALE_PY, str(csv), formula])] if "bib" in sides else []
            if rscript is not None:
                runs.append(("lme4", [rscript, "-e", SCALE_R, str(csv), formula]))
            for side, argv in runs:
                results[side] = _measure(argv, timeout)
        line = f"{name:>8} ({len(rows)} rows): " + "; ".join(
            f"{side} {r['fit']} s fit, {r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU, peak {r['peak']:.0f} MB, REML {r['reml']}"
            for side, r in results.items())
        if "bib" in results and "lme4" in results and results["lme4"]["wall"] > 0:
            b, r = results["bib"], results["lme4"]
            line += (f"; ratio bib/lme4 wall {b['wall'] / r['wall']:.2f}x, CPU {b['cpu'] / r['cpu']:.2f}x, "
                     f"peak {b['peak'] / r['peak']:.2f}x")
        print(line + f"   [load {_load()}]", flush=True)


def _measure(argv: list[str], timeout: float) -> dict[str, Any]:
    """Wall time, CPU time and peak memory of the child (ru_utime + ru_stime, ru_maxrss, via wait4) and
    its printed fit time / REML criterion."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    assert proc.stdout is not None
    deadline = t0 + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            return {"fit": "timeout", "wall": time.perf_counter() - t0, "cpu": usage.ru_utime + usage.ru_stime,
                    "peak": usage.ru_maxrss / 1024, "reml": "-"}
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    out = proc.stdout.read().split()
    fit, reml = (out[0], out[1]) if len(out) >= 2 and status == 0 else ("failed", "-")
    return {"fit": fit if fit in ("failed",) else f"{float(fit):.1f}", "wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "peak": usage.ru_maxrss / 1024, "reml": reml if reml == "-" else f"{float(reml):.6f}"}


PARITY_R = """
suppressMessages({library(lme4); library(lmerTest)})
a <- commandArgs(TRUE)
d <- read.csv(a[1], colClasses = "character")
for (v in strsplit(a[3], ",")[[1]]) d[[v]] <- as.numeric(d[[v]])
f <- as.formula(a[2])
best <- function(fit) {  # wall and CPU seconds, each the least of the reps
  t <- sapply(seq_len(as.integer(a[4])), function(i) {
    t0 <- proc.time(); fit(); d <- proc.time() - t0
    c(d[["elapsed"]], d[["user.self"]] + d[["sys.self"]])
  })
  apply(t, 1, min)
}
cat(best(function() lme4::lmer(f, data = d, REML = TRUE)), best(function() lmerTest::lmer(f, data = d, REML = TRUE)),
    best(function() summary(lmerTest::lmer(f, data = d, REML = TRUE))), "\\n")
"""


def _parity_suite() -> Any:
    """tests/test_analysis_parity.py as a module: its data sets, reader and lme4 references (one source)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("parity_suite", ROOT / "tests" / "test_analysis_parity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_parity(names: list[str], reps: int) -> None:
    """Fit time of each lme4 parity model in one process per side, best of ``reps``: bib's
    model_frame + fit_lmm (without and with Satterthwaite) against lme4::lmer and lmerTest::lmer
    (which computes what Satterthwaite's df needs at fit time), wall and CPU; process start-up
    (loading numpy/pandas/bib, or R with lme4) is not in these figures and is printed apart."""
    suite = _parity_suite()
    rscript = shutil.which("Rscript")
    print(f"{'model':24} {'rows':>6}  bib fit / +Satterthwaite (wall, CPU ms)  lme4::lmer / lmerTest::lmer / + summary "
          "(wall, CPU ms)  CPU ratios: bib fit / lme4::lmer; bib + Satterthwaite / lmerTest lmer + summary (/ lmer alone)")
    for name in names:
        ref = suite.reference(name)
        data = suite.lme4_data(suite.DATA[name])
        formula = ref["formula"]
        bib_formula = formula.replace("y ~ service", "y ~ factor(service)") if name == "InstEval" else formula
        ours = {}
        for satt in (False, True):
            wall, cpu = [], []
            for _ in range(reps):
                w0, c0 = time.perf_counter(), time.process_time()
                fit_lmm(model_frame(parse_formula(bib_formula), data), satterthwaite=satt)
                wall.append(time.perf_counter() - w0)
                cpu.append(time.process_time() - c0)
            ours[satt] = (min(wall) * 1e3, min(cpu) * 1e3)
        line = (f"{name:24} {len(data):>6}  {ours[False][0]:8.1f} {ours[False][1]:8.1f} / {ours[True][0]:8.1f} "
                f"{ours[True][1]:8.1f}")
        if rscript is not None:
            with tempfile.TemporaryDirectory() as tmp:
                csv = Path(tmp) / "d.csv"
                data.to_csv(csv, index=False)
                numeric = ",".join(c for c in data.columns if c not in suite.FACTORS)
                res = subprocess.run([rscript, "-e", PARITY_R, str(csv), formula, numeric, str(reps)],
                                     capture_output=True, text=True)
            if res.returncode == 0:
                w1, c1, w2, c2, w3, c3 = (float(v) * 1e3 for v in res.stdout.split())
                line += (f"  {w1:8.1f} {c1:8.1f} / {w2:8.1f} {c2:8.1f} / {w3:8.1f} {c3:8.1f}  "
                         f"{ours[False][1] / max(c1, 1e-9):5.2f}x; {ours[True][1] / max(c3, 1e-9):5.2f}x"
                         f" ({ours[True][1] / max(c2, 1e-9):5.2f}x)")
            else:
                line += f"  lme4 failed: {res.stderr.strip().splitlines()[-1:]}"
        print(line + f"   [load {_load()}]", flush=True)


def bench_startup() -> None:
    """Wall and CPU time of a bare process that loads the fitting code: python with bib.analysis.mixed,
    R with lme4 and lmerTest."""
    for side, argv in (("bib", [sys.executable, "-c", "import bib.analysis.mixed"]),
                       ("lme4", [shutil.which("Rscript") or "", "-e", "suppressMessages(library(lmerTest))"])):
        if not argv[0]:
            continue
        times, cpus = [], []
        for _ in range(3):
            t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(argv, check=True, capture_output=True)
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            times.append(time.perf_counter() - t0)
            cpus.append(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime)
        print(f"start-up, best of 3: {side} {min(times):.2f} s wall, {min(cpus):.2f} s CPU   [load {_load()}]")


def main() -> None:
    """Print the figures with the load average."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", nargs="+", metavar="DESIGN", help="rows (e.g. 10000) or 'crossed'")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per fit (each side)")
    parser.add_argument("--sides", nargs="+", choices=("bib", "lme4"), default=["bib", "lme4"],
                        help="which fits --scale runs (default both, bib first): e.g. lme4 alone with a long --timeout")
    parser.add_argument("--save-rows", type=Path, metavar="CSV",
                        help="write the rows of the one --scale design to CSV and stop (for tests/fixtures/lme4/make_scale.R)")
    parser.add_argument("--parity", nargs="*", metavar="MODEL",
                        help="fit times of lme4's parity models (default: every one but InstEval) against lme4, in process")
    parser.add_argument("--reps", type=int, default=5, help="--parity: best of this many fits")
    parser.add_argument("--smoke", action="store_true",
                        help="every path once at tiny sizes (MB1 once, 100 power studies, one parity model, a 1,600-row "
                             "scale design): CI's check that the script runs")
    args = parser.parse_args()
    if args.smoke:
        bench_mb1(repeats=1)
        bench_power(studies_n=2_000, engine_n=3)
        bench_parity(_parity_suite().SMALL[:1], 1)
        bench_scale(["1600"], 300.0)
        return
    if args.parity is not None:
        bench_startup()
        bench_parity(args.parity or [n for n in _parity_suite().SMALL], args.reps)
        return
    if args.save_rows:
        if not args.scale or len(args.scale) != 1:
            parser.error("--save-rows takes exactly one --scale design")
        scale_design(args.scale[0])[0].to_csv(args.save_rows, index=False)
        return
    if args.scale:
        bench_scale(args.scale, args.timeout, tuple(args.sides))
        return
    bench_mb1()
    bench_power()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of this process {peak_mb:.0f} MB (target < 1024 MB)")


if __name__ == "__main__":
    main()
