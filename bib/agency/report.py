"""``bib agency report``: the tables of a run folder plus matplotlib figures.

Figures (under ``<run>/plots/``, each titled with the command that made the run): accuracy vs
size and vs density (navigation), transform p-values (perturbations), key-room rates (keys) and
probe accuracies against their baselines (when ``probes.json`` exists).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bib.agency.tables import AgencyTables, write_tables
from bib.guard import read_json
from bib.io import ensure_dir


def _save(plt, fig, path: Path, figures: list[Path]) -> None:
    """Write ``fig`` to ``path`` atomically, close it and note the path in ``figures``."""
    import io

    from bib.io import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    atomic_write_bytes(path, buf.getvalue())
    plt.close(fig)
    figures.append(path)


def _bars(plt, labels: list[str], series: dict[str, np.ndarray], title: str, line: float | None = None):
    """A grouped bar chart on [0, 1]: one group per label, one bar per series."""
    fig, ax = plt.subplots(figsize=(8, 3.5))
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        ax.bar(np.arange(len(labels)) + i * width, values, width, label=name)
    if line is not None:
        ax.axhline(line, color="k", ls="--", lw=0.8)
    ax.set(xticks=np.arange(len(labels)) + width * (len(series) - 1) / 2, xticklabels=labels, ylim=(0, 1.02))
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=8)
    return fig


def make_report(folder: str | Path, tables: AgencyTables | None = None) -> tuple[AgencyTables, list[Path]]:
    """Write tables and figures for a run folder; return ``(the tables, figure paths)``.

    ``tables``: the folder's tables when the caller already has them (what :func:`bib.agency.suite.run_suite`
    returned, already written); without them they are made and written from the folder's files.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    folder = Path(folder)
    result = write_tables(folder) if tables is None else tables
    title = result.meta.get("command") or "bib agency run"
    pdir = ensure_dir(folder / "plots")
    figures: list[Path] = []
    fig = result.plot()
    if fig is not None:
        _save(plt, fig, pdir / "accuracy.png", figures)
    tests = folder / "tables" / "transform_tests.csv"
    if tests.is_file():
        t = pd.read_csv(tests, index_col=0)
        names = list(dict.fromkeys(t["transform"]))
        series = {m: t[t["metric"] == m].set_index("transform").reindex(names)["p"].to_numpy()
                  for m in dict.fromkeys(t["metric"])}
        fig = _bars(plt, names, series, f"transform vs base (Wilcoxon p, two-sided)\n{title}", line=0.05)
        _save(plt, fig, pdir / "transforms.png", figures)
    keys = folder / "tables" / "key_rooms.csv"
    if keys.is_file():
        k = pd.read_csv(keys, index_col=0)
        series = {c: k[c].fillna(0).to_numpy() for c in ("success", "pickup", "key_cell_visit", "toward_key_share")}
        fig = _bars(plt, [f"{a}\n{b}" for a, b in zip(k.task, k.variant)], series, f"key rooms\n{title}")
        _save(plt, fig, pdir / "keys.png", figures)
    probes = folder / "probes.json"
    if probes.is_file():
        payload = read_json(probes)
        rows = payload["rows"]
        series = {"held-out accuracy": [r["accuracy"] for r in rows],
                  "majority baseline": [r["baseline"] for r in rows]}
        fig = _bars(plt, [r["probe"] for r in rows], series, f"probes\n{payload.get('command') or title}")
        _save(plt, fig, pdir / "probes.png", figures)
    return result, figures
