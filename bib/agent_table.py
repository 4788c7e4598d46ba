"""AGENT's published accuracies (Shu et al., ICML 2021, Table 1) and the board that sets ours beside them.

The numbers live in one file, ``bib/resources/published/agent_table1.csv`` (``data/published`` in a checkout):
one row per model (Human, BIPaCK, ToMnet-G), AGENT scenario and training block (``all``: trained on all
scenarios; ``g1``: leave one type out; ``g2``: leave one scenario out), the accuracy as printed (0-1), the
table and the source with its page. A scenario whose id is one of bib's conditions (``cost-reward``, AGENT's
"cost-reward trade-offs", issue 43) gets our observers' accuracy on that condition beside AGENT's; the others
show AGENT's numbers only. AGENT's numbers are on its own 3D videos from ground-truth states, ours on the
gridworld sets bib generates: the board puts them side by side, it does not say they measure the same data.

``bib leaderboard`` and ``bib report`` (``evaluation.html``) print the board under BIB's leaderboard
(:func:`bib.evaluation.build_leaderboard`). Ours come from the table given, or, where it has no row on AGENT's
scenarios (BIB's default table), from :data:`AGENT_TABLE`, the committed rows of both AGENT families.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from bib.errors import BibInputError
from bib.guard import text_lines
from bib.resources import resource
from bib.tasks.registry import conditions

AGENT_PUBLISHED = resource("published/agent_table1.csv")
"""AGENT's Table 1 as shipped with the package."""
AGENT_TABLE = resource("baselines/agent_results.csv")
"""Our observers' accuracies on the AGENT scenarios bib translates (``baselines/agent/results.csv`` in a checkout, a
link to it; ``bib evaluate --table`` rows of the sets in ``baselines/agent/``): the board's "ours" when the table it
is given has no row on those scenarios."""
BLOCKS: dict[str, str] = {"all": "All", "g1": "G1", "g2": "G2"}
"""AGENT's training blocks (the ``block`` column) and their labels: all scenarios, leave one type out, leave one
scenario out."""
COLUMNS = ("model", "scenario", "block", "accuracy", "table", "source")


def read_agent_published(path: str | os.PathLike[str] = AGENT_PUBLISHED) -> list[dict[str, str]]:
    """The rows of AGENT's published table (``#`` lines are comments).

    Raises:
        BibInputError: a missing column, an unknown block, or an accuracy that is not a number from 0 to 1,
            naming the file and the row.
    """
    p = Path(path)
    reader = csv.DictReader(line for line in text_lines(p) if not line.startswith("#"))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise BibInputError(f"{p}: missing column(s) {', '.join(missing)}")
    rows = list(reader)
    for i, r in enumerate(rows, start=2):
        if r["block"] not in BLOCKS:
            raise BibInputError(f"{p}: row {i}: block {r['block'][:40]!r} is not one of {', '.join(BLOCKS)}")
        try:
            value = float(r["accuracy"])
        except ValueError:
            raise BibInputError(f"{p}: row {i}: accuracy {r['accuracy'][:40]!r} is not a number") from None
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise BibInputError(f"{p}: row {i}: accuracy {r['accuracy'][:40]!r} is not from 0 to 1")
    return rows


def agent_board(published: Sequence[Mapping[str, str]],
                ours: Sequence[Mapping[str, str]]) -> tuple[list[str], list[list[str]], str]:
    """AGENT's scenarios as rows, its models (per block) then our observers as columns, accuracy in %.

    Args:
        published: :func:`read_agent_published` rows.
        ours: an "ours" table's rows (:func:`bib.evaluation.read_table`): an observer gets a column when it has a
            row on a scenario that is one of bib's conditions.

    Returns:
        ``(header, rows, note)``; ``-`` where a model has no number.
    """
    blocks_of: dict[str, list[str]] = {}
    for r in published:
        blocks_of.setdefault(r["model"], [])
        if r["block"] not in blocks_of[r["model"]]:
            blocks_of[r["model"]].append(r["block"])
    columns = [(m, b) for b in BLOCKS for m, bs in blocks_of.items() if b in bs]
    label = {(m, b): m if len(blocks_of[m]) == 1 else f"{m} ({BLOCKS[b]})" for m, b in columns}
    cell = {(r["model"], r["block"], r["scenario"]): f"{100 * float(r['accuracy']):.0f}" for r in published}
    scenarios = list(dict.fromkeys(r["scenario"] for r in published))
    shared = [s for s in scenarios if s in conditions()]
    mine_cell = {(r["observer"], r["condition"]): f"{100 * float(r['accuracy']):.1f}" for r in ours if r["condition"] in shared}
    mine = list(dict.fromkeys(o for o, _ in mine_cell))
    header = ["AGENT scenario", *(label[c] for c in columns), *(f"{m} (ours)" for m in mine)]
    rows = [[s, *(cell.get((m, b, s), "-") for m, b in columns), *(mine_cell.get((m, s), "-") for m in mine)]
            for s in scenarios]
    sources = "; ".join(dict.fromkeys(r["source"] for r in published))
    sets = "; ".join(dict.fromkeys(r.get("stimuli") or "?" for r in ours if r["condition"] in shared))
    note = ("AGENT: its own 3D videos, ground-truth states, accuracy printed to two decimals (" + (sources or "no source")
            + "; All = trained on all scenarios, G1 = leave one type out, G2 = leave one scenario out; rows in "
            "data/published/agent_table1.csv). Ours: bib's gridworld translation of a scenario, where bib has one ("
            + (", ".join(shared) or "none") + "): " + (sets or "none scored yet") + " (a tie counts 0.5).")
    return header, rows, note
