"""The looking-time table: one row per trial, its canonical columns, and validation of its values."""

from __future__ import annotations

import math

import pandas as pd

from bib.errors import BibInputError
from bib.tasks import conditions

#: Canonical CSV columns, in order.
COLUMNS: tuple[str, ...] = (
    "participant_id",
    "lab",
    "item",
    "age_days",
    "task",
    "trial_num",
    "phase",
    "outcome",
    "looking_time_s",
    "order",
    "trial_error",
)
#: Columns a file may omit (filled with empty values). ``item`` is the stimulus shown (episode or video id).
OPTIONAL: tuple[str, ...] = ("lab", "item", "age_days", "order", "trial_error")
REQUIRED: tuple[str, ...] = tuple(c for c in COLUMNS if c not in OPTIONAL)

#: Evaluation condition ids (from the task registry): the values ``task`` may take.
CONDITION_IDS: tuple[str, ...] = conditions()
PHASES: tuple[str, ...] = ("familiarization", "test")
OUTCOMES: tuple[str, ...] = ("expected", "unexpected")
#: ``trial_error`` values meaning "no error" (case-insensitive); any other non-empty text is an error.
NO_ERROR: frozenset[str] = frozenset({"", "noerror", "no", "0", "false", "none", "ok"})
#: Looking-time cells read as missing (reported by the exclusions, never dropped silently).
MISSING: frozenset[str] = frozenset({"", "na", "nan", "null"})
#: Participant ids read as missing: such rows are dropped at import and listed, never merged.
MISSING_ID: frozenset[str] = frozenset({"", "na", "nan", "null", "none"})

#: Endings of the two files a ``bib experiment`` session saves (``NAME_ID_trials.csv``, ``NAME_ID_looks.csv``):
#: a folder of sessions given to ``bib analyze`` is read without its look logs.
TRIALS_SUFFIX = "_trials.csv"
LOOK_LOG_SUFFIX = "_looks.csv"
#: The webcam recording a session may save beside them (``NAME_ID_recording.webm``; never read by ``bib analyze``).
RECORDING_SUFFIX = "_recording.webm"

#: Column naming each row's place in its source: the file line (header = line 1), or ``file:line``.
ROW = "row"


def rows_text(rows: list[str], limit: int = 8) -> str:
    """Format source rows for an error message: ``lines 3, 7, 9 and 4 more``."""
    shown = ", ".join(str(n) for n in rows[:limit])
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    return f"line{'s' if len(rows) > 1 else ''} {shown}{more}"


def _fail(source: str, message: str, rows: list[str]) -> None:
    raise BibInputError(f"{source}: {message} ({rows_text(rows)})")


def split_missing_ids(raw: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows with a participant id, and the rows without one (empty or ``NA``) with a reason.

    Different infants without ids must never be merged into one "NA" participant.
    """
    if "participant_id" not in raw.columns:
        return raw, raw.iloc[:0].assign(reason="")
    missing = raw["participant_id"].astype(str).str.strip().str.lower().isin(MISSING_ID)
    dropped = raw.loc[missing].assign(reason="missing participant id (empty or NA)")
    return raw.loc[~missing], dropped


def validate(raw: pd.DataFrame, source: str, outcomes: tuple[str, str] = OUTCOMES) -> pd.DataFrame:
    """Check and type a table of canonical columns (all cells as strings) read from ``source``.

    Args:
        raw: string cells with the canonical columns (optional ones may be absent) and a ``line``
            column giving each row's place in the source (see :data:`ROW`).
        source: the file name used in error messages.

    Returns:
        A new frame with the canonical columns typed (``age_days`` and ``looking_time_s`` float,
        NaN when missing; ``trial_num`` int; ``trial_error`` the error text or ``""``), plus
        ``row`` and any extra columns of the input unchanged.

    Raises:
        BibInputError: naming the column and the offending lines, for missing required columns,
            unknown tasks, phases or outcomes, non-numeric or negative looking times or ages,
            non-integer trial numbers, duplicate (participant_id, task, trial_num) rows, or a task
            whose test trials have a single outcome.
    """
    missing = [c for c in REQUIRED if c not in raw.columns]
    if missing:
        raise BibInputError(f"{source}: missing required column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    df = raw.copy()
    for col in OPTIONAL:
        if col not in df.columns:
            df[col] = ""
    for col in COLUMNS:
        df[col] = df[col].astype(str).str.strip()
    where = df[ROW].astype(str)

    def bad(mask: pd.Series, message: str) -> None:
        if mask.any():
            _fail(source, message, where[mask].tolist())

    bad(df["participant_id"].str.lower().isin(MISSING_ID), "column participant_id: empty or NA values")
    bad(df["task"] == "", "column task: empty values")
    bad(~df["phase"].isin(PHASES), "column phase: expected familiarization or test")
    bad(
        (df["phase"] == "test") & ~df["outcome"].isin(outcomes),
        f"column outcome: test trials need {outcomes[0]} or {outcomes[1]}",
    )
    bad(~df["outcome"].isin(tuple(outcomes) + ("",)), f"column outcome: {outcomes[0]}, {outcomes[1]} or empty")

    trial = pd.to_numeric(df["trial_num"], errors="coerce")
    bad(trial.isna() | (trial != trial.round()), "column trial_num: not an integer")
    df["trial_num"] = trial.astype(int)

    for col, label in (("looking_time_s", "looking time"), ("age_days", "age")):
        text = df[col]
        is_missing = text.str.lower().isin(MISSING)
        value = pd.to_numeric(text.where(~is_missing), errors="coerce")
        bad(value.isna() & ~is_missing, f"column {col}: non-numeric {label}")
        bad(value.map(lambda v: not math.isnan(v) and not math.isfinite(v)), f"column {col}: infinite {label}")
        bad(value < 0, f"column {col}: negative {label}")
        df[col] = value.astype(float)

    err = df["trial_error"]
    df["trial_error"] = err.where(~err.str.lower().isin(NO_ERROR), "")

    key = ["participant_id", "task", "trial_num"]
    dup = df.duplicated(key, keep=False)
    bad(dup, "duplicate (participant_id, task, trial_num) rows")

    test = df[df["phase"] == "test"]
    for task, rows in test.groupby("task", sort=True):
        outcomes = set(rows["outcome"])
        if len(outcomes) < 2:
            _fail(source, f"task {task}: test trials have the single outcome {outcomes.pop()}", rows[ROW].astype(str).tolist())
    return df.reset_index(drop=True)
