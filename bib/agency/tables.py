"""Tables of a suite run: by size x density, by optimal distance, transform tests, key rooms, probes.

:func:`agency_tables` reads ``grids.csv`` (and ``probes.json`` when present) under a run folder into an
:class:`AgencyTables` result; :func:`write_tables` also writes ``tables/*.csv`` and ``tables.md`` (markdown,
naming the command that made the run).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from bib.agency.keys import key_summary
from bib.agency.transforms import paired_tests
from bib.errors import BibInputError
from bib.guard import read_json
from bib.io import atomic_write_text, ensure_dir, frame_csv
from bib.results import Result

METRICS = ("accuracy", "success", "spl", "entropy", "jsd", "meg")
DISTANCE_BINS = (0, 5, 10, 20, 1000)
DISTANCE_LABELS = ("1-5", "6-10", "11-20", "21+")


def read_run(folder: str | Path) -> tuple[pd.DataFrame, dict]:
    """``(grids.csv as a DataFrame, run.json)`` of a run folder; BibInputError if they are missing."""
    folder = Path(folder)
    path = folder / "grids.csv"
    if not path.is_file():
        raise BibInputError(f"{path}: no such file (run `bib agency run ... --out {folder}` first)")
    import io

    from bib.guard import read_text

    try:
        frame = pd.read_csv(io.StringIO(read_text(path)))  # a regular file, size-capped
        meta = read_json(folder / "run.json") if (folder / "run.json").is_file() else {}
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


@dataclass
class AgencyTables(Result):
    """The tables of a run folder (a suite run, probes, or both): ``bib agency run`` / ``probe`` / ``report`` print it.

    Attributes:
        meta: ``run.json`` of a suite run (command, agent, suite, invalid steps), or {}.
        tables: table name -> DataFrame (``summary``, ``accuracy_by_size_density``, ``by_distance``,
            ``transform_tests``, ``key_rooms``, ``probes``, as the run has them).
        probes: ``probes.json``'s command, steps and grids, or None without probes.
    """

    name: ClassVar[str] = "tables"
    meta: dict[str, Any]
    tables: dict[str, pd.DataFrame]
    probes: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"run": run.json, "probes": {...} | None, "tables": {name: [row records]}}``."""
        return {"run": self.meta, "probes": self.probes,
                "tables": {n: json.loads(_records(t)) for n, t in self.tables.items()}}

    def to_markdown(self) -> str:
        """A heading naming the agent, suite and command, invalid steps, then one section per table."""
        sections = []
        meta = self.meta
        if meta:
            sections += [f"# Agency results: {meta.get('agent', '?')}, suite {meta.get('suite', '?')}",
                         f"Made by: `{meta.get('command') or 'bib agency run'}`"]
            if meta.get("invalid_steps"):
                sections.append(f"Invalid steps: {meta['invalid_steps']} of {meta['steps']} ({meta['invalid_reasons']}).")
        if self.probes is not None:
            sections.append(f"Probes made by: `{self.probes.get('command') or 'bib agency probe'}` "
                            f"({self.probes.get('steps')} steps on {self.probes.get('grids')} grids)")
        sections += [f"## {name.replace('_', ' ')}\n\n{_md(table)}" for name, table in self.tables.items()]
        return "\n\n".join(sections)

    def plot(self) -> Any:
        """Per-action accuracy vs grid size and vs obstacle density (navigation runs), or None."""
        table = self.tables.get("accuracy_by_size_density")
        if table is None:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        for d in table.columns:
            axes[0].plot(table.index, table[d], marker="o", label=f"d={d:g}")
        for s in table.index:
            axes[1].plot(table.columns, table.loc[s], marker="o", label=f"{s}x{s}")
        axes[0].set(xlabel="grid size", ylabel="per-action accuracy", ylim=(0, 1.02))
        axes[1].set(xlabel="obstacle density")
        axes[0].legend(fontsize=7)
        axes[1].legend(fontsize=7)
        title = self.meta.get("command") or "bib agency run"
        fig.suptitle(f"{self.meta.get('agent', '')}: accuracy vs size and density\n{title}", fontsize=8)
        return fig


def _records(table: pd.DataFrame) -> str:
    f = table.reset_index() if not isinstance(table.index, pd.RangeIndex) else table
    f.columns = [str(c) for c in f.columns]
    return f.to_json(orient="records")


def agency_tables(folder: str | Path) -> AgencyTables:
    """The :class:`AgencyTables` of a run folder: ``grids.csv`` and ``run.json`` (when present) and ``probes.json``."""
    folder = Path(folder)
    probes = folder / "probes.json"
    tables: dict[str, pd.DataFrame] = {}
    meta: dict[str, Any] = {}
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
    head = None
    if probes.is_file():
        payload = read_json(probes)
        head = {k: payload.get(k) for k in ("command", "steps", "grids")}
        keep = ["probe", "accuracy", "baseline", "balanced_accuracy", "chance_balanced", "optimal_on_decoded",
                "error_recovery", "exact", "prefix_1", "prefix_3", "prefix_5", "train_rows", "test_rows"]
        rows = pd.DataFrame(payload["rows"])
        tables["probes"] = rows[[c for c in keep if c in rows.columns]]
    return AgencyTables(meta, tables, head)


def write_tables(folder: str | Path) -> AgencyTables:
    """Write ``tables/*.csv`` and ``tables.md`` for a run folder (a suite run, probes, or both); return the result."""
    from bib.guard import no_links

    folder = Path(folder)
    no_links(folder, "the run folder")  # tables/, plots/ are written in place: never through a planted link
    result = agency_tables(folder)
    tdir = ensure_dir(folder / "tables")
    for name, table in result.tables.items():
        atomic_write_text(tdir / f"{name}.csv", frame_csv(table))
    atomic_write_text(folder / "tables.md", result.to_markdown() + "\n")
    return result
