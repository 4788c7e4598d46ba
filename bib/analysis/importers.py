"""Importers into the looking-time table: canonical CSV, any CSV through a column mapping, PyHab output."""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bib.analysis.formats import IMPORTERS
from bib.analysis.schema import LOOK_LOG_SUFFIX, MISSING_ID, OUTCOMES, ROW, rows_text, split_missing_ids, validate
from bib.analysis.spec import AnalysisSpec, Mapping, PyHab, RowFilter
from bib.errors import BibInputError
from bib.guard import check_header, folder_files, read_text

#: PyHab writes these summary files beside the per-infant trial files; they are not trial tables.
PYHAB_SIDE_FILES: tuple[str, ...] = ("_Stats", "_BlockSumm_", "_HabSumm_", "_trialTiming", "_VERBOSE")
#: Days per month used to turn PyHab's ``months``/``days`` into an age in days (an approximation).
DAYS_PER_MONTH = 30.44
DROPPED_COLUMNS: list[str] = [ROW, "participant_id", "reason"]


@dataclass(frozen=True)
class ImportResult:
    """A validated looking-time table, the source rows the importer dropped (with reasons), the
    row filter's account (``{"rows_read", "rows_kept", "dropped": {reason: count}}`` or None) and
    the side files skipped in a PyHab folder."""

    table: pd.DataFrame
    dropped: pd.DataFrame
    source: str
    filtered: dict | None = None
    skipped_files: tuple[str, ...] = ()


def apply_filter(raw: pd.DataFrame, rules: RowFilter, source: str) -> tuple[pd.DataFrame, dict | None]:
    """Keep the rows the spec's ``[filter]`` selects; count the others by reason.

    Raises:
        BibInputError: a filter column not in the file, or a filter that keeps no rows.
    """
    if not rules.active:
        return raw, None
    keep = pd.Series(True, index=raw.index)
    reasons: dict[str, int] = {}
    for field, rule, keeping in [("filter.keep", r, True) for r in rules.keep.items()] + [
            ("filter.drop", r, False) for r in rules.drop.items()]:
        col, values = rule
        if col not in raw.columns:
            raise BibInputError(f"{source}: field {field}: column {col!r} is not in the file")
        hit = raw[col].isin([str(v) for v in values])
        out = (~hit if keeping else hit) & keep
        if out.any():
            shown = ", ".join(repr(str(v)) for v in values)
            reasons[f"{col} {'not in' if keeping else 'in'} [{shown}]"] = int(out.sum())
        keep &= ~out
    if not keep.any():
        raise BibInputError(f"{source}: field filter: keeps none of the {len(raw)} rows")
    return raw.loc[keep], {"rows_read": len(raw), "rows_kept": int(keep.sum()), "dropped": reasons}


def _import_ids(raw: pd.DataFrame, source: str, outcomes: tuple[str, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Drop (and list) rows without a participant id, then validate the rest."""
    if raw.empty:
        raise BibInputError(f"{source}: no data rows (the file has only a header)")
    have, missing = split_missing_ids(raw)
    if have.empty:
        raise BibInputError(f"{source}: column participant_id: no row has a participant id")
    return validate(have, source, outcomes), missing[[ROW, "participant_id", "reason"]]


def read_strings(path: Path, prefix: str = "") -> pd.DataFrame:
    """Read a CSV with every cell as a stripped string and a ``row`` column (``prefix`` + file line)."""
    text = read_text(path)  # a regular UTF-8 file (a byte-order mark accepted), named when it is not
    check_header([c.strip() for c in next(csv.reader(io.StringIO(text)), [])], path)  # pandas would rename a twin
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
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
        cols = [col] if isinstance(col, str) else list(col)
        for c in cols:
            if c not in raw.columns:
                raise BibInputError(f"{source}: field mapping.columns.{canon}: column {c!r} is not in the file")
        joined = raw[cols[0]].astype(str)
        for c in cols[1:]:
            joined = joined + ":" + raw[c].astype(str)
        df[canon] = joined
    for canon, value in mapping.constants.items():
        if canon in df.columns:
            raise BibInputError(f"{source}: constant for {canon} given, but the file already has that column")
        df[canon] = value
    for canon, recode in mapping.values.items():
        if canon not in df.columns:
            raise BibInputError(f"{source}: values given for {canon}, but the file has no such column")
        df[canon] = df[canon].map(lambda v, r=recode: r.get(v, v))
    return df


def session_files(paths: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """The CSV files ``paths`` name (a folder gives its ``*.csv``, sorted, without ``bib experiment``'s
    look logs ``*_looks.csv``), and the names of the look logs skipped.

    Raises:
        BibInputError: a path that does not exist, a folder without CSV files, a file given twice.
    """
    files: list[Path] = []
    skipped: list[str] = []
    for path in paths:
        if path.is_dir():
            every = folder_files(path, "*.csv")
            logs = [f for f in every if f.name.endswith(LOOK_LOG_SUFFIX)]
            if len(logs) == len(every):
                raise BibInputError(f"{path}: no session files (*.csv other than *{LOOK_LOG_SUFFIX}) in the folder")
            skipped += [f.name for f in logs]
            files += [f for f in every if f not in logs]
        elif path.is_file():
            files.append(path)
        else:
            raise BibInputError(f"{path}: no such file or directory")
    seen: dict[Path, Path] = {}
    for f in files:
        first = seen.setdefault(f.resolve(), f)
        if first is not f:
            raise BibInputError(f"{f}: the file is given twice ({first})")
    return files, skipped


def _file_labels(files: list[Path]) -> list[str]:
    """How rows of each file are named (``NAME:LINE``): the file name, or the path where names repeat."""
    names = [f.name for f in files]
    return [f.name if names.count(f.name) == 1 else str(f) for f in files]


def join_sessions(files: list[Path]) -> pd.DataFrame:
    """Read several session files as one table of strings; each row's ``row`` is ``FILE:LINE``.

    Raises:
        BibInputError: a file whose header differs from the first file's, or two files with the same
            bytes (one session saved twice), naming the files.
    """
    frames, digests = [], {}
    first_header: list[str] | None = None
    for f, label in zip(files, _file_labels(files)):
        raw = read_strings(f, f"{label}:")
        header = [c for c in raw.columns if c != ROW]
        if first_header is None:
            first_header = header
        elif header != first_header:
            missing = [c for c in first_header if c not in header]
            extra = [c for c in header if c not in first_header]
            why = "; ".join(filter(None, [f"missing {', '.join(missing)}" if missing else "",
                                          f"extra {', '.join(extra)}" if extra else ""])) or "the same columns in another order"
            raise BibInputError(f"{f}: line 1: the header differs from {files[0]}'s ({why}); session files must have one header")
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        if digest in digests:
            raise BibInputError(f"{f}: the same bytes as {digests[digest]} (one session saved twice)")
        digests[digest] = f
        frames.append(raw)
    return pd.concat(frames, ignore_index=True)


def check_one_file_per_participant(raw: pd.DataFrame, files: list[Path]) -> None:
    """A participant's rows come from one file only (``row`` is ``FILE:LINE``, see :func:`join_sessions`).

    Raises:
        BibInputError: naming the participant, the two files and each file's first row of them.
    """
    if len(files) < 2 or "participant_id" not in raw.columns:
        return
    where = raw[ROW].str.rsplit(":", n=1).str[0]
    labels = dict(zip(_file_labels(files), files))
    ids = raw["participant_id"].astype(str).str.strip()
    known = ~ids.str.lower().isin(MISSING_ID)
    for pid, rows in raw[known].groupby(ids[known], sort=True):
        first = rows.groupby(where[rows.index], sort=False)[ROW].first()
        if len(first) > 1:
            (a, ra), (b, rb) = list(first.items())[:2]
            raise BibInputError(f"{labels[b]}: participant {pid} is also in {labels[a]} ({rb}; {ra}); "
                                "a participant's trials must be in one session file")


#: Columns naming a ``bib experiment`` session's study and trial criteria (its trials CSV has them
#: on every row), with what they name: sessions joined for one analysis must agree on both.
STUDY_KEYS: tuple[tuple[str, str], ...] = (("study_id", "studies"), ("criteria_hash", "trial criteria"))


def check_one_study(raw: pd.DataFrame, files: list[Path], source: str) -> None:
    """All rows come from one study run under one set of trial criteria (:data:`STUDY_KEYS`).

    Raises:
        BibInputError: one line naming, for each value, the files (or, in one file, the lines) holding it.
    """
    for col, what in STUDY_KEYS:
        if col not in raw.columns or raw[col].nunique() < 2:
            continue
        if len(files) > 1:
            where = raw[ROW].str.rsplit(":", n=1).str[0]
            groups = [f"{v} in {', '.join(dict.fromkeys(where[raw[col] == v]))}" for v in dict.fromkeys(raw[col])]
        else:
            groups = [f"{v} on {rows_text(raw.loc[raw[col] == v, ROW].tolist(), 3)}" for v in dict.fromkeys(raw[col])]
        raise BibInputError(f"{source}: sessions of different {what} (column {col}: {'; '.join(groups)}); "
                            "analyse each study on its own")


def read_csv_table(path: str | Path | Sequence[str | Path], mapping: Mapping | None = None, rules: RowFilter | None = None,
                   outcomes: tuple[str, str] = OUTCOMES) -> ImportResult:
    """Import a canonical CSV, or any CSV whose columns ``mapping`` maps onto the canonical ones.

    ``path`` may also be several files or a folder of session files (see :func:`session_files`):
    they must share one header and no two may hold the same participant; they are joined as one
    table whose ``row`` column is ``FILE:LINE``.

    The row filter runs first (on the file's own columns); the ``row`` column keeps the ORIGINAL
    file line of every row, so exclusion reports point into the unedited file.
    """
    paths = [Path(path)] if isinstance(path, (str, Path)) else [Path(p) for p in path]
    mapping = mapping or Mapping()
    if len(paths) == 1 and not paths[0].is_dir():
        files, skipped = paths, []
        raw = read_strings(paths[0])
    else:
        files, skipped = session_files(paths)
        raw = join_sessions(files) if len(files) > 1 else read_strings(files[0])
    source = str(paths[0]) if len(paths) == 1 else ", ".join(str(p) for p in paths)
    raw, filtered = apply_filter(raw, rules or RowFilter(), source)
    mapped = apply_mapping(raw, mapping, source)
    check_one_study(mapped, files, source)
    check_one_file_per_participant(mapped, files)
    table, dropped = _import_ids(mapped, source, outcomes)
    return ImportResult(_to_seconds(table, mapping.unit), dropped.reset_index(drop=True), source, filtered, tuple(skipped))


def pyhab_files(path: Path) -> list[Path]:
    """The per-infant trial files of a PyHab output folder (side files skipped), sorted by name."""
    return _pyhab_listing(path)[0]


def _pyhab_listing(path: Path) -> tuple[list[Path], list[str]]:
    """Trial files and the names of the side files skipped (``_Stats``, ``_BlockSumm_``, ...)."""
    if path.is_file():
        if any(s in path.name for s in PYHAB_SIDE_FILES):
            raise BibInputError(f"{path}: a PyHab summary file ({', '.join(s for s in PYHAB_SIDE_FILES if s in path.name)}),"
                                " not per-trial data; give the per-infant file or the folder")
        return [path], []
    if not path.is_dir():
        raise BibInputError(f"{path}: no such file or directory")
    every = folder_files(path, "*.csv")
    side = [f.name for f in every if any(s in f.name for s in PYHAB_SIDE_FILES)]
    files = [f for f in every if f.name not in side]
    if not files:
        raise BibInputError(f"{path}: no PyHab trial files (*.csv) in the folder")
    return files, side


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


def read_pyhab(path: str | Path | Sequence[str | Path], settings: PyHab, rules: RowFilter | None = None,
               outcomes: tuple[str, str] = OUTCOMES) -> ImportResult:
    """Import PyHab trial-summary output: one file, or a folder of per-infant files (or several of either).

    Any subset of PyHab's columns is accepted as long as the participant id (``sID``, or ``sNum``),
    ``trialType`` and the looking column (``sumOnA`` by default) are there. ``GNG = 0`` trials and
    trial types the spec ignores are dropped and reported; other trial types must be mapped to a
    task, phase and outcome in the spec. Age is ``30.44 * months + days``.
    """
    paths = [Path(path)] if isinstance(path, (str, Path)) else [Path(q) for q in path]
    files, side = [], []
    for q in paths:
        found, skipped = _pyhab_listing(q)
        files += found
        side += skipped
    p = paths[0] if len(paths) == 1 else Path(", ".join(str(q) for q in paths))
    tables, dropped = [], []
    counts: dict = {"rows_read": 0, "rows_kept": 0, "dropped": {}}
    for f in files:
        prefix = f"{f.name}:" if len(files) > 1 else ""
        raw = read_strings(f, prefix)
        if rules is not None and rules.active:
            raw, info = apply_filter(raw, rules, str(f))
            counts["rows_read"] += info["rows_read"]
            counts["rows_kept"] += info["rows_kept"]
            for k, v in info["dropped"].items():
                counts["dropped"][k] = counts["dropped"].get(k, 0) + v
        table, drop = _pyhab_frame(raw, settings, str(f))
        tables.append(table)
        dropped.append(drop)
    joined = pd.concat(tables, ignore_index=True)
    check_one_file_per_participant(joined, files)
    table, missing = _import_ids(joined, str(p), outcomes)
    dropped.append(missing)
    return ImportResult(table, pd.concat(dropped, ignore_index=True), str(p),
                        counts if rules is not None and rules.active else None, tuple(side))


def read_looking_times(path: str | Path | Sequence[str | Path], fmt: str | None = None,
                       spec: AnalysisSpec | None = None) -> ImportResult:
    """Import looking-time data in ``fmt`` (default: the spec's format) using the spec's mappings.

    ``path`` is a file, a folder, or several of them (joined: one header, one file per participant).
    """
    spec = spec or AnalysisSpec()
    paths = [Path(path)] if isinstance(path, (str, Path)) else [Path(p) for p in path]
    if not paths:
        raise BibInputError("DATA: give a looking-time file or folder")
    return IMPORTERS[fmt or spec.format](paths[0] if len(paths) == 1 else paths, spec)


def read_csv_format(path: Path | list[Path], spec: AnalysisSpec) -> ImportResult:
    """The ``csv`` entry of :data:`bib.analysis.formats.IMPORTERS`."""
    return read_csv_table(path, spec.mapping, spec.filter, spec.outcomes)


def read_pyhab_format(path: Path | list[Path], spec: AnalysisSpec) -> ImportResult:
    """The ``pyhab`` entry of :data:`bib.analysis.formats.IMPORTERS`."""
    return read_pyhab(path, spec.pyhab, spec.filter, spec.outcomes)
