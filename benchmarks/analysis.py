"""Speed of the looking-time analysis: the MB1 paper's model against lme4, the power simulation's two paths.

Run: .venv/bin/python benchmarks/analysis.py   (prints figures; asserts nothing)
     .venv/bin/python benchmarks/analysis.py --scale 10000 200000 1000000 crossed
       (issue 27: simulated designs fitted by bib and by lme4 on the same rows, each fit in its own
       process: wall time and peak memory (the child's ru_maxrss) of each and their ratios; sizes
       are rows of participants x 16 items x 50 labs, ``crossed`` is 3,125 participants x 4,000
       items, 64 items each; --timeout bounds each fit; --sides lme4 runs one side alone;
       --save-rows CSV writes one design's rows for tests/fixtures/lme4/make_scale.R)

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


def bench_mb1() -> None:
    if not MB1.exists():
        print(f"MB1 benchmark skipped: {MB1} not found")
        return
    rows = mb1_rows()
    formula = parse_formula(PAPER)
    times, fit = [], None
    for _ in range(3):
        start = time.perf_counter()
        fit = fit_lmm(model_frame(formula, rows, reference={"method": "singlescreen"}))
        times.append(time.perf_counter() - start)
    assert fit is not None
    ours = min(times)
    print(f"MB1 paper model, {fit.n_obs} trials: bib (frame + PLS fit + Satterthwaite) best of 3 {ours:.2f} s "
          f"({fit.evaluations} deviance evaluations), IDS - ADS {fit.coefficients.loc['trial_typeIDS', 'estimate']:.5f}"
          f"   [load {_load()}]")
    rscript = shutil.which("Rscript")
    if rscript is None:
        print("Rscript not installed: no lme4 reference; the time above is absolute (see docs/analysis.md for the machine)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "mb1.csv"
        rows.to_csv(csv, index=False)
        script = R_SCRIPT.format(formula=PAPER, reps=3)
        res = subprocess.run([rscript, "-e", script, str(csv)], capture_output=True, text=True)
    if res.returncode != 0:
        print(f"lme4 reference failed: {res.stderr.strip().splitlines()[-1:]}")
        return
    r_time, r_est = (float(v) for v in res.stdout.split())
    print(f"reference: lme4::lmer (REML, no Satterthwaite), mean of 3 {r_time:.2f} s, IDS - ADS {r_est:.5f}"
          f"   [load {_load()}]")
    print(f"ratio bib / lme4: {ours / r_time:.2f}x (target <= 5x)")


def bench_power() -> None:
    pilot = pilot_task("preference")
    start = time.perf_counter()
    studies = simulate_studies(pilot, [24], 1000, seed=0, workers=1)
    closed = time.perf_counter() - start
    print(f"power: 1000 studies at N=24, closed form (balanced paired design)   {closed:6.2f} s "
          f"({1000 / closed:8.0f} studies/s; {int(studies['singular'].sum())} singular)   [load {_load()}]")
    frames = [study_frame(pilot.draw(np.random.default_rng(s), 24), "log") for s in range(30)]
    start = time.perf_counter()
    for frame in frames:
        task_effect(frame, [], 0.05, "bench")
    engine = (time.perf_counter() - start) / len(frames)
    print(f"reference: the same study through the PLS engine (task_effect)  {engine * 1e3:6.1f} ms per study "
          f"({1 / engine:8.0f} studies/s); speed-up of the closed form {engine * 1000 / closed:.0f}x   [load {_load()}]")


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
            f"{side} {r['fit']} s fit, {r['wall']:.1f} s wall, peak {r['peak']:.0f} MB, REML {r['reml']}" for side, r in results.items())
        if "bib" in results and "lme4" in results and results["lme4"]["wall"] > 0:
            b, r = results["bib"], results["lme4"]
            line += f"; ratio bib/lme4 wall {b['wall'] / r['wall']:.2f}x, peak {b['peak'] / r['peak']:.2f}x"
        print(line + f"   [load {_load()}]", flush=True)


def _measure(argv: list[str], timeout: float) -> dict[str, Any]:
    """Wall time, peak memory (ru_maxrss of the child, via wait4) and the printed fit time / REML."""
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
            return {"fit": "timeout", "wall": time.perf_counter() - t0, "peak": usage.ru_maxrss / 1024, "reml": "-"}
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    out = proc.stdout.read().split()
    fit, reml = (out[0], out[1]) if len(out) >= 2 and status == 0 else ("failed", "-")
    return {"fit": fit if fit in ("failed",) else f"{float(fit):.1f}", "wall": wall, "peak": usage.ru_maxrss / 1024,
            "reml": reml if reml == "-" else f"{float(reml):.6f}"}


def main() -> None:
    """Print the figures with the load average."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", nargs="+", metavar="DESIGN", help="rows (e.g. 10000) or 'crossed'")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per fit (each side)")
    parser.add_argument("--sides", nargs="+", choices=("bib", "lme4"), default=["bib", "lme4"],
                        help="which fits --scale runs (default both, bib first): e.g. lme4 alone with a long --timeout")
    parser.add_argument("--save-rows", type=Path, metavar="CSV",
                        help="write the rows of the one --scale design to CSV and stop (for tests/fixtures/lme4/make_scale.R)")
    args = parser.parse_args()
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
