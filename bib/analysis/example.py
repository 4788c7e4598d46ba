"""The synthetic example data set: per-infant looking times drawn from the published pilot summaries.

Design, as in the poster: 26 infants of about 11 months, 22 tested on both tasks (task order
counterbalanced) and 2 + 2 on one task only, i.e. 24 per task; each saw 8 familiarization trials and
two test trials (expected and unexpected, order counterbalanced) per task. Two more infants are
added so that the exclusions have something to do (one fussy test trial; one test look under 1 s).
Test looks are bivariate log-normal (:meth:`bib.analysis.pilot.PilotTask.draw`), redrawn while a
look is under 1 s (PyHab's default ``minOn``), then moment-matched on the log scale so that each
outcome's log mean and log SD equal the model's: the example reproduces the pilot's effect by
construction (on the log scale exactly; in seconds approximately). Familiarization looks are not
published: they are made up (declining from about 1.5 times the expected-outcome level).
Every row carries ``synthetic = true``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bib.analysis.pilot import PilotTask
from bib.analysis.schema import COLUMNS

N_FAMILIARIZATION = 8
MIN_ON_S = 1.0
MAX_DUR_S = 60.0
DAYS_PER_MONTH = 30.44


def _test_looks(rng: np.random.Generator, pilot: PilotTask, n: int) -> np.ndarray:
    looks = pilot.draw(rng, n)
    while (short := (looks < MIN_ON_S).any(axis=1)).any():
        looks[short] = pilot.draw(rng, int(short.sum()))
    mean, cov = pilot.log_model()
    logs = np.log(looks)
    logs = mean + (logs - logs.mean(axis=0)) / logs.std(axis=0, ddof=1) * np.sqrt(np.diag(cov))
    return np.minimum(np.exp(logs), MAX_DUR_S)


def _participant_rows(rng: np.random.Generator, pid: str, age: float, task: str, looks: tuple[float, float],
                      level: float, unexpected_first: bool) -> list[dict]:
    rows = []
    fam = np.exp(np.log(1.5 * level) - 0.06 * np.arange(N_FAMILIARIZATION) + rng.normal(0, 0.35, N_FAMILIARIZATION))
    for k, lt in enumerate(np.minimum(fam, MAX_DUR_S)):
        rows.append({"participant_id": pid, "age_days": age, "task": task, "trial_num": k + 1,
                     "phase": "familiarization", "outcome": "", "looking_time_s": lt})
    order = ("unexpected", "expected") if unexpected_first else ("expected", "unexpected")
    value = {"expected": looks[0], "unexpected": looks[1]}
    for k, outcome in enumerate(order):
        rows.append({"participant_id": pid, "age_days": age, "task": task, "trial_num": N_FAMILIARIZATION + k + 1,
                     "phase": "test", "outcome": outcome, "looking_time_s": value[outcome]})
    for r in rows:
        r["order"] = "UE" if unexpected_first else "EU"
    return rows


def simulate_example(pilots: dict[str, PilotTask], seed: int, n_both: int = 22) -> pd.DataFrame:
    """Generate the example looking-time table (canonical columns plus ``synthetic``).

    Args:
        pilots: the pilot summaries of exactly two tasks (the pilot's preference and efficiency-path).
        seed: seeds the only generator used.
        n_both: infants tested on both tasks; the rest of each task's N did that task only.
    """
    rng = np.random.default_rng(seed)
    tasks = list(pilots)
    n = {t: pilots[t].n for t in tasks}
    # Participants: first n_both do both tasks, then each task's single-task infants.
    members: dict[str, list[str]] = {t: [] for t in tasks}
    pid_num = 0
    for _ in range(n_both):
        pid_num += 1
        for t in tasks:
            members[t].append(f"s{pid_num:02d}")
    for t in tasks:
        for _ in range(n[t] - n_both):
            pid_num += 1
            members[t].append(f"s{pid_num:02d}")
    ages = {}
    first = next(iter(pilots.values()))
    for i in range(1, pid_num + 3):
        ages[f"s{i:02d}"] = round(rng.normal(first.age_months_mean, first.age_months_sd) * DAYS_PER_MONTH)
    rows: list[dict] = []
    for t in tasks:
        looks = _test_looks(rng, pilots[t], len(members[t]))
        for i, pid in enumerate(members[t]):
            rows += _participant_rows(rng, pid, ages[pid], t, tuple(looks[i]), pilots[t].mean_expected, i % 2 == 1)
    # Two infants the exclusions remove: a fussy unexpected test trial, and a test look under 1 s.
    fussy, short = f"s{pid_num + 1:02d}", f"s{pid_num + 2:02d}"
    for pid, t, err in ((fussy, tasks[0], "fussiness"), (short, tasks[-1], "")):
        extra = _participant_rows(rng, pid, ages[pid], t, tuple(pilots[t].draw(rng, 1)[0]), pilots[t].mean_expected, False)
        test = [r for r in extra if r["phase"] == "test"]
        if err:
            test[1]["trial_error"] = err
        else:
            test[0]["looking_time_s"] = 0.6
        rows += extra
    # One fussy familiarization trial of a kept infant: the row is excluded, the infant is not.
    rows[2]["trial_error"] = "fussiness"
    df = pd.DataFrame(rows)
    df["lab"] = "synthetic"
    df["trial_error"] = df.get("trial_error", pd.Series("", index=df.index)).fillna("")
    df["looking_time_s"] = df["looking_time_s"].round(2)
    df["synthetic"] = "true"
    df = df.sort_values(["participant_id", "task", "trial_num"], kind="stable")
    return df[[c for c in COLUMNS if c in df.columns] + ["synthetic"]].reset_index(drop=True)
