"""Importers into the looking-time table: canonical CSV, any CSV through a column mapping, PyHab output."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bib.analysis.schema import ROW, rows_text, validate
from bib.analysis.spec import AnalysisSpec, Mapping, PyHab
from bib.errors import BibInputError

FORMATS: tuple[str, ...] = ("csv", "pyhab")
#: PyHab writes these summary files beside the per-infant trial files; they are not trial tables.
PYHAB_SIDE_FILES: tuple[str, ...] = ("_BlockSumm_", "_HabSumm_", "_trialTiming", "_VERBOSE")
#: Days per month used to turn PyHab's ``months``/``days`` into an age in days (an approximation).
DAYS_PER_MONTH = 30.44
DROPPED_COLUMNS: list[str] = [ROW, "participant_id", "reason"]


@dataclass(frozen=True)
class ImportResult:
    """A validated looking-time table and the source rows the importer dropped, with reasons."""

    table: pd.DataFrame
    dropped: pd.DataFrame
    source: str


def read_strings(path: Path, prefix: str = "") -> pd.DataFrame:
    """Read a CSV with every cell as a stripped string and a ``row`` column (``prefix`` + file line)."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except FileNotFoundError:
        raise BibInputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise BibInputError(f"{path}: cannot read CSV ({str(exc).splitlines()[0]})") from None
    df.columns = [str(c).strip() for c in df.columns]
    df = df.apply(lambda col: col.str.strip())
    df[ROW] = [f"{prefix}{i + 2}" for i in range(len(df))]
    return df


def _to_seconds(table: pd.DataFrame, unit: str) -> pd.DataFrame:
    if unit == "ms":
        table = table.copy()
        table["looking_time_s"] = table["looking_time_s"] / 1000.0
    return table


def apply_mapping(raw: pd.DataFrame, mapping: Mapping, source: str) -> pd.DataFrame:
    """Rename, fill and recode the columns of ``raw`` onto the canonical ones, as ``mapping`` says."""
    df = raw.copy()
    for canon, col in mapping.columns.items():
        if col not in raw.columns:
            raise BibInputError(f"{source}: column {col!r} (mapped to {canon}) is not in the file")
        df[canon] = raw[col]
    for canon, value in mapping.constants.items():
        if canon in df.columns:
            raise BibInputError(f"{source}: constant for {canon} given, but the file already has that column")
        df[canon] = value
    for canon, recode in mapping.values.items():
        if canon not in df.columns:
            raise BibInputError(f"{source}: values given for {canon}, but the file has no such column")
        df[canon] = df[canon].map(lambda v, r=recode: r.get(v, v))
    return df


def read_csv_table(path: str | Path, mapping: Mapping | None = None) -> ImportResult:
    """Import a canonical CSV, or any CSV whose columns ``mapping`` maps onto the canonical ones."""
    p = Path(path)
    mapping = mapping or Mapping()
    raw = apply_mapping(read_strings(p), mapping, str(p))
    table = _to_seconds(validate(raw, str(p)), mapping.unit)
    return ImportResult(table, pd.DataFrame(columns=DROPPED_COLUMNS), str(p))


def pyhab_files(path: Path) -> list[Path]:
    """The per-infant trial files of a PyHab output folder (side files skipped), sorted by name."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise BibInputError(f"{path}: no such file or directory")
    files = sorted(f for f in path.glob("*.csv") if not any(s in f.name for s in PYHAB_SIDE_FILES))
    if not files:
        raise BibInputError(f"{path}: no PyHab trial files (*.csv) in the folder")
    return files


def _pyhab_frame(raw: pd.DataFrame, settings: PyHab, source: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    participant = settings.participant if settings.participant in raw.columns else "sNum"
    needed = [participant, "trialType", settings.looking]
    absent = [c for c in needed if c not in raw.columns]
    if absent:
        raise BibInputError(f"{source}: PyHab file lacks column{'s' if len(absent) > 1 else ''} {', '.join(absent)}")
    dropped = []
    gng = raw["GNG"] if "GNG" in raw.columns else pd.Series("1", index=raw.index)
    bad_gng = ~gng.isin(["0", "1"])
    if bad_gng.any():
        raise BibInputError(f"{source}: column GNG: expected 0 or 1 ({rows_text(raw.loc[bad_gng, ROW].tolist())})")
    aborted = gng == "0"
    dropped.append(raw.loc[aborted].assign(reason="GNG = 0 (aborted or redone trial)"))
    ignored = raw["trialType"].isin(settings.ignore) & ~aborted
    dropped.append(raw.loc[ignored].assign(reason=raw.loc[ignored, "trialType"].map(lambda t: f"trial type {t} ignored by the spec")))
    keep = raw.loc[~aborted & ~ignored].copy()
    unmapped = ~keep["trialType"].isin(list(settings.trial_types))
    if unmapped.any():
        kinds = ", ".join(sorted(set(keep.loc[unmapped, "trialType"])))
        raise BibInputError(
            f"{source}: trial types without a mapping in the spec's [pyhab.trial_types]: {kinds} "
            f"({rows_text(keep.loc[unmapped, ROW].tolist())})"
        )
    out = pd.DataFrame({ROW: keep[ROW]})
    out["participant_id"] = keep[participant]
    out["lab"] = settings.lab
    for col in ("task", "phase", "outcome"):
        out[col] = keep["trialType"].map(lambda t, c=col: getattr(settings.trial_types[t], c))
    out["looking_time_s"] = keep[settings.looking]
    out["trial_num"] = keep["trial"] if "trial" in keep.columns else keep.groupby(participant).cumcount() + 1
    out["order"] = keep[settings.order] if settings.order in keep.columns else ""
    out["trial_error"] = ""
    out["age_days"] = _pyhab_age(keep)
    frame = pd.concat(dropped)
    frame["participant_id"] = frame[participant]
    return out, frame[DROPPED_COLUMNS]


def _pyhab_age(rows: pd.DataFrame) -> pd.Series:
    if "months" not in rows.columns and "days" not in rows.columns:
        return pd.Series("", index=rows.index)
    months = pd.to_numeric(rows.get("months", "0"), errors="coerce")
    days = pd.to_numeric(rows.get("days", "0"), errors="coerce")
    age = DAYS_PER_MONTH * months + days
    return age.map(lambda v: "" if pd.isna(v) else f"{v:.2f}")


def read_pyhab(path: str | Path, settings: PyHab) -> ImportResult:
    """Import PyHab trial-summary output: one file, or a folder of per-infant files.

    Any subset of PyHab's columns is accepted as long as the participant id (``sID``, or ``sNum``),
    ``trialType`` and the looking column (``sumOnA`` by default) are there. ``GNG = 0`` trials and
    trial types the spec ignores are dropped and reported; other trial types must be mapped to a
    task, phase and outcome in the spec. Age is ``30.44 * months + days``.
    """
    p = Path(path)
    files = pyhab_files(p)
    tables, dropped = [], []
    for f in files:
        prefix = f"{f.name}:" if len(files) > 1 else ""
        table, drop = _pyhab_frame(read_strings(f, prefix), settings, str(f))
        tables.append(table)
        dropped.append(drop)
    table = validate(pd.concat(tables, ignore_index=True), str(p))
    return ImportResult(table, pd.concat(dropped, ignore_index=True), str(p))


def read_looking_times(path: str | Path, fmt: str | None = None, spec: AnalysisSpec | None = None) -> ImportResult:
    """Import looking-time data in ``fmt`` (default: the spec's format) using the spec's mappings."""
    spec = spec or AnalysisSpec()
    fmt = fmt or spec.format
    if fmt == "csv":
        return read_csv_table(path, spec.mapping)
    if fmt == "pyhab":
        return read_pyhab(path, spec.pyhab)
    raise BibInputError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
