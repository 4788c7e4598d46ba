"""Hostile per-step Parquet files beside a results CSV (issue 39): NaN (loses every comparison), inf
(wins it), text surprise, a wrong column, a FIFO, and a file claiming more rows than bib reads;
`bib evaluate --readout mean` refuses each in one line naming the file (and the episode and step)."""

from __future__ import annotations

import os
from pathlib import Path

from hostile import Case

E, U = "preference-000000-expected", "preference-000000-unexpected"
STEPS = "{in}/scores/results.steps.parquet"


def steps_file(surprise: list, ids: list | None = None, step_type: str = "int32", rename: str = ""):
    def build(inp: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        names = ids or [E, E, U, U]
        table = pa.table({"episode_id": pa.array(names, pa.string()),
                          "step": pa.array([1, 2, 1, 2][:len(names)], getattr(pa, step_type)()),
                          rename or "surprise": pa.array(surprise)})
        pq.write_table(table, inp / "scores" / "results.steps.parquet")
    return build


def many_rows(inp: Path) -> None:
    """10,000,001 rows (one more than bib reads) in a file of a few hundred kB (run-length encoded)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bib.evaluation import STEPS_MAX

    n = STEPS_MAX + 1
    ids = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int8)), pa.array([E]))
    table = pa.table({"episode_id": ids.cast(pa.string()), "step": pa.array(np.ones(n, np.int8)),
                      "surprise": pa.array(np.zeros(n, np.float32))})
    pq.write_table(table, inp / "scores" / "results.steps.parquet")


def fifo(inp: Path) -> None:
    os.mkfifo(inp / "scores" / "results.steps.parquet")


ARGV = ["evaluate", "{in}/set", "{in}/scores/results.csv", "--readout", "mean"]
CASES = [
    Case("evaluate-steps-nan", ARGV, build=steps_file([1.0, float("nan"), 2.0, 3.0]),
         culprit=f"{STEPS}: row 2: surprise of '{E}' at step 2 is nan (must be finite)"),
    Case("evaluate-steps-inf", ARGV, build=steps_file([1.0, 2.0, float("inf"), 3.0]),
         culprit=f"{STEPS}: row 3: surprise of '{U}' at step 1 is inf"),
    Case("evaluate-steps-null", ARGV, build=steps_file([1.0, None, 2.0, 3.0]),
         culprit=f"{STEPS}: column 'surprise' has 1 empty value(s)"),
    Case("evaluate-steps-text", ARGV, build=steps_file(["1", "2", "3", "4"]),
         culprit=f"{STEPS}: column 'surprise' is string, must be a floating-point number"),
    Case("evaluate-steps-step-float", ARGV, build=steps_file([1.0, 2.0, 3.0, 4.0], step_type="float64"),
         culprit=f"{STEPS}: column 'step' is double, must be an integer"),
    Case("evaluate-steps-no-surprise", ARGV, build=steps_file([1.0, 2.0, 3.0, 4.0], rename="value"),
         culprit=f"{STEPS}: no column 'surprise'"),
    Case("evaluate-steps-fifo", ARGV, build=fifo, culprit="bib reads regular files only"),
    Case("evaluate-steps-too-many-rows", ARGV, build=many_rows, slow=True,
         culprit=f"{STEPS}: 10,000,001 rows of per-step surprise; bib reads at most 10,000,000"),
]
