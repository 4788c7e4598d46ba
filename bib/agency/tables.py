"""Tables of a suite run: by size x density, by optimal distance, transform tests, key rooms, probes.

:func:`write_tables` reads ``grids.csv`` (and ``probes.json`` when present) under a run folder
and writes ``tables/*.csv`` and ``tables.md`` (markdown, naming the command that made the run).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from bib.agency.keys import key_summary
from bib.agency.transforms import paired_tests
from bib.errors import BibInputError
from bib.io import atomic_write_text, ensure_dir

METRICS = ("accuracy", "success", "spl", "entropy", "jsd", "meg")
DISTANCE_BINS = (0, 5, 10, 20, 1000)
DISTANCE_LABELS = ("1-5", "6-10", "11-20", "21+")


def read_run(folder: str | Path) -> tuple[pd.DataFrame, dict]:
    """``(grids.csv as a DataFrame, run.json)`` of a run folder; BibInputError if they are missing."""
    folder = Path(folder)
    path = folder / "grids.csv"
    if not path.is_file():
        raise BibInputError(f"{path}: no such file (run `bib agency run ... --out {folder}` first)")
    try:
        frame = pd.read_csv(path)
        meta = json.loads((folder / "run.json").read_text(encoding="utf-8")) if (folder / "run.json").is_file() else {}
    except (ValueError, OSError) as exc:
        raise BibInputError(f"{folder}: unreadable run files ({exc})") from None
    for col in ("grid", "task", "variant", "accuracy", "success"):
        if col not in frame.columns:
            raise BibInputError(f"{path}: missing column {col!r}")
    return frame, meta


def by_size_density(frame: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """Mean ``metric`` of base navigation grids: rows sizes, columns densities."""
    nav = frame[(frame.task == "navigation") & (frame.variant == "base")]
    return nav.pivot_table(index="size", columns="density", values=metric, aggfunc="mean")


def by_distance(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean metrics of base navigation grids by optimal path length bin."""
    nav = frame[(frame.task == "navigation") & (frame.variant == "base")].copy()
    nav["distance"] = pd.cut(nav.optimal_length, DISTANCE_BINS, labels=DISTANCE_LABELS)
    cols = [m for m in METRICS if m in nav.columns]
    out = nav.groupby("distance", observed=True)[cols].mean()
    out.insert(0, "grids", nav.groupby("distance", observed=True).size())
    return out


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean metrics per (task, variant)."""
    cols = [m for m in (*METRICS, "bumps", "invalid") if m in frame.columns]
    out = frame.groupby(["task", "variant"])[cols].mean()
    out.insert(0, "grids", frame.groupby(["task", "variant"]).size())
    return out


def _md(frame: pd.DataFrame, digits: int = 3) -> str:
    """A DataFrame as a markdown table (no extra dependency)."""
    f = frame.reset_index() if not isinstance(frame.index, pd.RangeIndex) else frame
    cols = [str(c) for c in f.columns]

    def cell(v) -> str:
        if isinstance(v, float):
            return "" if math.isnan(v) else f"{v:.{digits}f}"
        return str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in f.itertuples(index=False)]
    return "\n".join(lines)


def write_tables(folder: str | Path) -> str:
    """Write ``tables/*.csv`` and ``tables.md`` for a run folder (a suite run, probes, or both); return the markdown."""
    folder = Path(folder)
    probes = folder / "probes.json"
    tables: dict[str, pd.DataFrame] = {}
    if (folder / "grids.csv").is_file() or not probes.is_file():
        frame, meta = read_run(folder)
        tables["summary"] = summary(frame)
        if ((frame.task == "navigation") & (frame.variant == "base")).any():
            for m in ("accuracy", "success", "jsd"):
                tables[f"{m}_by_size_density"] = by_size_density(frame, m)
            tables["by_distance"] = by_distance(frame)
        if frame.variant.isin(["rotate", "reflect", "transpose", "swap"]).any():
            tables["transform_tests"] = pd.DataFrame(paired_tests(frame.to_dict("records")))
        keys = key_summary(frame.to_dict("records"))
        if keys:
            tables["key_rooms"] = pd.DataFrame(keys)
    else:
        meta = {}
    sections = []
    if meta:
        sections += [f"# Agency results: {meta.get('agent', '?')}, suite {meta.get('suite', '?')}",
                     f"Made by: `{meta.get('command') or 'bib agency run'}`"]
        if meta.get("invalid_steps"):
            sections.append(f"Invalid steps: {meta['invalid_steps']} of {meta['steps']} ({meta['invalid_reasons']}).")
    if probes.is_file():
        payload = json.loads(probes.read_text(encoding="utf-8"))
        sections.append(f"Probes made by: `{payload.get('command') or 'bib agency probe'}` "
                        f"({payload.get('steps')} steps on {payload.get('grids')} grids)")
        keep = ["probe", "accuracy", "baseline", "balanced_accuracy", "chance_balanced", "optimal_on_decoded",
                "error_recovery", "exact", "prefix_1", "prefix_3", "prefix_5", "train_rows", "test_rows"]
        rows = pd.DataFrame(payload["rows"])
        tables["probes"] = rows[[c for c in keep if c in rows.columns]]
    tdir = ensure_dir(folder / "tables")
    for name, table in tables.items():
        atomic_write_text(tdir / f"{name}.csv", table.to_csv())
        sections.append(f"## {name.replace('_', ' ')}\n\n{_md(table)}")
    text = "\n\n".join(sections) + "\n"
    atomic_write_text(folder / "tables.md", text)
    return text
