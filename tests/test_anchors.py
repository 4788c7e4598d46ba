"""The published anchors (data/published/voe_anchors.csv) against the papers' own text.

Every cell of the BIB poster's baseline table (../shared/papers/bib-baby-intuitions-benchmark-poster.txt) and
of the published-results table of ../shared/reference/bib.md section 4 (BC and Video-RNN from the NeurIPS paper's
Table 1, VT and IRENE from Bortoletto et al. 2024, HBToM from Zhi-Xuan et al. 2022) is read from the text and
compared with the anchor of that model, condition and table; `bib leaderboard --source` shows each table.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bib.cli import main
from bib.errors import BibInputError
from bib.evaluation import ANCHOR_TABLES, build_leaderboard, read_anchors

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
POSTER = SHARED / "papers" / "bib-baby-intuitions-benchmark-poster.txt"
REFERENCE = SHARED / "reference" / "bib.md"

#: The papers' row names -> our condition ids (the poster's upper-case names and the reference's short ones).
ROWS = {
    "PREFERENCE": "preference", "MULTI-AGENT": "multi-agent", "INACCESSIBLE GOAL": "inaccessible-goal",
    "EFFICIENCY: PATH CONTROL": "efficiency-path", "EFFICIENCY: TIME CONTROL": "efficiency-time",
    "EFFICIENCY: IRRATIONAL AGENT": "efficiency-irrational", "EFFICIENT ACTION AVERAGE": "efficiency-average",
    "INSTRUMENTAL: NO BARRIER": "instrumental-no-barrier",
    "INSTRUMENTAL: INCONSEQUENTIAL BARRIER": "instrumental-inconsequential",
    "INSTRUMENTAL: BLOCKING BARRIER": "instrumental-blocking", "INSTRUMENTAL ACTION AVERAGE": "instrumental-average",
    "Preference": "preference", "Multi-Agent": "multi-agent", "Inaccessible Goal": "inaccessible-goal",
    "Eff. Path Control": "efficiency-path", "Eff. Time Control": "efficiency-time",
    "Eff. Irrational": "efficiency-irrational", "Efficiency average": "efficiency-average",
    "Instr. No Barrier": "instrumental-no-barrier", "Instr. Inconsequential": "instrumental-inconsequential",
    "Instr. Blocking": "instrumental-blocking", "Instrumental average": "instrumental-average",
}
#: The reference table's model columns -> the table each comes from.
REFERENCE_TABLES = {"BC-MLP": "neurips", "BC-RNN": "neurips", "Video-RNN": "neurips", "VT": "irene",
                    "IRENE": "irene", "HBToM": "hbtom"}


def anchor_cells(table: str) -> dict[tuple[str, str], float]:
    return {(r["model"], r["condition"]): float(r["accuracy"]) for r in read_anchors() if r["table"] == table}


def poster_table() -> dict[tuple[str, str], float]:
    """The poster's 'BIB AGENCY TASK | BC-MLP | BC-RNN | VIDEO-RNN' table, read from its tab-separated lines."""
    lines = POSTER.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("BIB AGENCY TASK\t"))
    models = ["BC-MLP", "BC-RNN", "Video-RNN"]
    assert [m.upper() for m in models] == lines[start].split("\t")[1:]
    cells = {}
    for line in lines[start + 1:]:
        parts = line.split("\t")
        if len(parts) != 4:
            break
        for model, value in zip(models, parts[1:]):
            cells[(model, ROWS[parts[0]])] = float(value)
    return cells


def reference_table() -> dict[tuple[str, str, str], float]:
    """Section 4's Markdown table of ../shared/reference/bib.md: (table, model, condition) -> percent."""
    text = REFERENCE.read_text(encoding="utf-8")
    section = text[text.index("## 4. Published results"):text.index("## 5.")]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    models = [c.strip() for c in rows[0].strip("|").split("|")][1:]
    cells = {}
    for line in rows[2:]:
        parts = [c.strip() for c in line.strip("|").split("|")]
        for model, value in zip(models, parts[1:]):
            cells[(REFERENCE_TABLES[model], model, ROWS[parts[0]])] = float(re.sub(r"\*", "", value))
    return cells


@pytest.mark.skipif(not POSTER.is_file(), reason=f"the BIB poster's text is not at {POSTER} (../shared/papers)")
def test_poster_anchors_equal_the_poster_text() -> None:
    paper = poster_table()
    assert len(paper) == 3 * 11
    assert anchor_cells("poster") == paper


@pytest.mark.skipif(not REFERENCE.is_file(), reason=f"the BIB reference is not at {REFERENCE} (../shared/reference)")
def test_neurips_and_later_anchors_equal_the_reference_table() -> None:
    paper = reference_table()
    assert len(paper) == 6 * 11
    ours = {(t, m, c): v for t in ("neurips", "irene", "hbtom") for (m, c), v in anchor_cells(t).items()}
    assert ours == paper


def test_poster_and_neurips_differ_where_the_issue_says() -> None:
    poster, neurips = anchor_cells("poster"), anchor_cells("neurips")
    assert set(poster) == set(neurips)
    differing = {c for (m, c) in poster if poster[(m, c)] != neurips[(m, c)]}
    assert len(differing) == 7  # 7 of the 11 rows differ for at least one model
    assert [poster[(m, "inaccessible-goal")] for m in ("BC-MLP", "BC-RNN", "Video-RNN")] == [53.1, 46.6, 66.0]
    assert [neurips[(m, "inaccessible-goal")] for m in ("BC-MLP", "BC-RNN", "Video-RNN")] == [76.9, 81.6, 74.0]


def test_every_anchor_names_a_known_table_and_source() -> None:
    rows = read_anchors()
    assert {r["table"] for r in rows} == set(ANCHOR_TABLES)
    assert all(r["source"] for r in rows) and len(rows) == 9 * 11


def test_leaderboard_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    none = tmp_path / "none.csv"  # no "ours" table: only the published columns
    both = build_leaderboard(none)
    assert both.header[:7] == ["condition", "BC-MLP (NeurIPS)", "BC-RNN (NeurIPS)", "Video-RNN (NeurIPS)",
                               "BC-MLP (poster)", "BC-RNN (poster)", "Video-RNN (poster)"]
    row = dict(zip(both.header, next(r for r in both.rows if r[0] == "inaccessible-goal")))
    assert row["BC-MLP (NeurIPS)"] == "76.9" and row["BC-MLP (poster)"] == "53.1" and row["HBToM"] == "99.7"
    poster = build_leaderboard(none, sources=["poster"])
    assert poster.header == ["condition", "BC-MLP", "BC-RNN", "Video-RNN"]
    assert dict(zip(poster.header, poster.rows[2]))["Video-RNN"] == "66.0"
    assert "poster" in poster.note and "NeurIPS" not in poster.note
    with pytest.raises(SystemExit) as exit_:
        main(["leaderboard", str(none), "--source", "neurips", "--source", "hbtom"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "| condition | BC-MLP | BC-RNN | Video-RNN | HBToM |"
    with pytest.raises(BibInputError, match="--source posters: not a published table"):
        build_leaderboard(none, sources=["posters"])


def test_anchors_with_wrong_columns_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "anchors.csv"
    bad.write_text("name,cond,acc\nx,preference,50\n", encoding="utf-8")
    with pytest.raises(BibInputError, match=r"anchors\.csv: missing column\(s\) model, condition, accuracy"):
        build_leaderboard(tmp_path / "none.csv", anchors=bad)
    bad.write_text("model,condition,accuracy\nx,preference,fifty\n", encoding="utf-8")
    with pytest.raises(BibInputError, match="row 2: accuracy 'fifty' is not a number"):
        build_leaderboard(tmp_path / "none.csv", anchors=bad)
