"""Result objects: the one protocol every job's result follows (``to_json``, ``to_markdown``, ``plot``, ``save``).

A job (evaluation, analysis, MEG, reflection, profile, audit, ...) returns a :class:`Result`; the
CLI prints ``to_markdown()`` (or ``to_json()`` with ``--json``) and ``save()`` writes the files.
A new result type subclasses :class:`Result`, sets :attr:`Result.name` (the file stem) and
implements :meth:`Result.to_json` and :meth:`Result.to_markdown`; :meth:`Result.plot` is optional.

Example::

    @dataclass
    class Coin(Result):
        name = "coin"
        heads: int
        n: int

        def to_json(self) -> dict:
            return {"heads": self.heads, "n": self.n}

        def to_markdown(self) -> str:
            return markdown_table(["heads", "n"], [[self.heads, self.n]])

    Coin(3, 10).save("out/coin")  # out/coin/coin.json, out/coin/coin.md
"""

from __future__ import annotations

import json
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from bib.io import atomic_open, atomic_write_text, ensure_dir

if TYPE_CHECKING:  # matplotlib is imported only by the plot() methods that draw
    from matplotlib.figure import Figure


def jsonable(obj: Any) -> Any:
    """``obj`` with NaN/inf floats as None, numpy scalars and arrays as Python values, tuples as lists."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy scalar or array
        return jsonable(obj.tolist())
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "-" if not math.isfinite(value) else f"{value:.4g}"
    return "-" if value is None else str(value).replace("|", "\\|")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub/mkdocs Markdown table; ``align`` is one letter per column (``l``, ``r``, ``c``; default:
    text left, the rest right). Floats are shown with 4 significant digits, None and NaN as ``-``."""
    marks = {"l": ":---", "r": "---:", "c": ":---:"}
    if align is None:
        align = "l" + "r" * (len(header) - 1)
    if len(align) != len(header):
        raise ValueError(f"align has {len(align)} letters for {len(header)} columns")
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks[a] for a in align) + " |"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


class Result(ABC):
    """Base of every job's result: JSON for machines, Markdown for people, a figure, and files.

    Subclasses set :attr:`name` and implement :meth:`to_json` and :meth:`to_markdown`.
    """

    name: ClassVar[str] = "result"
    """File stem used by :meth:`save` (``<name>.json``, ``<name>.md``, ``<name>.png``)."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """The result as a JSON-able dict (stable keys; see each subclass)."""

    @abstractmethod
    def to_markdown(self) -> str:
        """The result as Markdown (tables and short notes) for a terminal, a report or the docs."""

    def plot(self) -> Figure | None:
        """A matplotlib figure of the result, or None when it has nothing to draw."""
        return None

    def to_json_text(self) -> str:
        """:meth:`to_json` as strict JSON text (NaN becomes null), indented, with a final newline."""
        return json.dumps(jsonable(self.to_json()), indent=2, allow_nan=False) + "\n"

    def save(self, folder: str | os.PathLike[str], stem: str | None = None) -> list[Path]:
        """Write ``<stem>.json``, ``<stem>.md`` and, when :meth:`plot` draws, ``<stem>.png`` and
        ``<stem>.svg`` into ``folder`` (created; each file written atomically).

        Returns:
            The paths written, in that order.
        """
        out = ensure_dir(Path(folder))
        stem = stem or self.name
        paths = [out / f"{stem}.json", out / f"{stem}.md"]
        atomic_write_text(paths[0], self.to_json_text())
        atomic_write_text(paths[1], self.to_markdown().rstrip("\n") + "\n")
        fig = self.plot()
        if fig is not None:
            paths += save_figure(fig, out, stem)
        return paths


def save_figure(fig: Figure, folder: str | os.PathLike[str], stem: str) -> list[Path]:
    """Write ``fig`` as ``<stem>.png`` and ``<stem>.svg`` into ``folder``, atomically and byte-reproducibly
    (no software or date metadata, a fixed SVG hash salt). Returns the two paths."""
    import matplotlib  # already loaded by whoever drew fig; only its settings are needed here

    paths = []
    with matplotlib.rc_context({"svg.hashsalt": "bib", "svg.fonttype": "none"}):
        for ext in ("png", "svg"):
            path = Path(folder) / f"{stem}.{ext}"
            with atomic_open(path, "wb") as fh:
                fig.savefig(fh, format=ext, dpi=120, bbox_inches="tight", metadata=_FIXED_METADATA[ext])
            paths.append(path)
    return paths


_FIXED_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}
"""Figure metadata left out so the same result gives byte-identical files."""
