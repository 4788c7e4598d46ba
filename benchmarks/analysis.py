"""Speed of the looking-time analysis: the MB1 paper's model against lme4, the power simulation's two paths.

Run: .venv/bin/python benchmarks/analysis.py   (prints figures; asserts nothing)

Everything runs on one core (BLAS threads pinned to 1 before numpy loads). Where Rscript with
lme4 is installed, the same script times lme4::lmer on the same rows in the same run and prints the
ratio, so a busy machine slows both sides alike; the load average is printed with the figures.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("BIB_NO_PROGRESS", "1")

import resource  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

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


def main() -> None:
    """Print the figures with the load average."""
    bench_mb1()
    bench_power()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of this process {peak_mb:.0f} MB (target < 1024 MB)")


if __name__ == "__main__":
    main()
