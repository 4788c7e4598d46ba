"""docs/reproduction.md: every "published" number names where it is printed, and can be found there.

A table whose first column is "published" needs a "source" column; each row's source names a paper by a key of
the page's key table ([MEG], [EE], ...) or a committed results file (`data/published/...`), a location (a table,
section, appendix, figure or results file) and a page ("p. N", "one page" or "no page ..."). Every number of the
published cell must occur in the text of a source it names: the team's copies of the papers under ../shared
(read when they are there; KEY_TEXTS says which copy each key was read in) or the committed file. Numbers we
computed ourselves belong to the "Reference computations" table, whose "computed by" column says "our", and never
to a published table.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reproduction.md"
SHARED = ROOT.parent / "shared"
LOCATION = re.compile(r"\b(Table|Section|section|Appendix|Figure|table|results file|experiment|every row)")
PAGE_NAMED = re.compile(r"\bp\. \d+|\bone page\b|\bno page\b|\bpage not checked\b")
KEY = re.compile(r"\[([A-Za-z][\w-]*)\]")
CITED = re.compile(r"`(data/published/[^`]+)`")
NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")
#: The team's copies each key of the page's key table was read in (paths under ../shared).
KEY_TEXTS = {
    "BIB": ["reference/bib.md"],
    "BIB-poster": ["papers/bib-baby-intuitions-benchmark-poster.txt"],
    "HBToM": ["reference/bib.md"],
    "IRENE": ["reference/bib.md"],
    "MEG": ["papers/meg-measuring-goal-directedness-with-tables.txt", "papers/meg-measuring-goal-directedness.txt"],
    "EE": ["papers/extended-environments-self-reflection.txt"],
    "EE-results": ["reference/extended_environments.md"],
    "LLM-agents": ["papers/llm-agent-goal-directedness-summary.txt"],
    "AGENT": [],  # no copy under ../shared: its rows cite data/published/agent_table1.csv, checked against that file
}


def tables(markdown: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every markdown table: (header cells, rows of cells)."""
    out: list[tuple[list[str], list[list[str]]]] = []
    lines = markdown.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith("| ") and lines[i + 1].startswith("|---"):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("| "):
                    break
                rows.append(_cells(row))
            out.append((_cells(line), rows))
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def _read(file: Path) -> str | None:
    return file.read_text(encoding="utf-8").replace("\u2212", "-") if file.is_file() else None


def _distinct(cell: str) -> set[str]:
    """Numbers specific enough to recognise: with a decimal point and at least four characters."""
    return {n for n in NUMBER.findall(cell) if "." in n and len(n) >= 4}


def problems(markdown: str, root: Path = ROOT, shared: Path = SHARED) -> list[str]:
    """What breaks the page's rule, one line each (empty: the page keeps it)."""
    found: list[str] = []
    all_tables = tables(markdown)
    references = [(h, rows) for h, rows in all_tables if h[0].startswith("reference")]
    if len(references) != 1:
        found.append(f"{len(references)} reference-computation tables, want 1")
    reference_numbers: set[str] = set()
    for header, rows in references:
        if "computed by" not in header:
            found.append(f"reference table {header}: no 'computed by' column")
            continue
        for row in rows:
            by = row[header.index("computed by")]
            if "our" not in by:
                found.append(f"reference row {row[0][:40]!r}: 'computed by' does not say it is our computation")
            reference_numbers |= _distinct(row[0])
    keys = [header for header, _ in all_tables if header[0] == "key"]
    defined = {KEY.fullmatch(row[0]).group(1) for header, rows in all_tables if header[0] == "key" for row in rows
               if KEY.fullmatch(row[0])}
    if not keys:
        found.append("no key table (| key | paper | read in |)")
    for header, rows in all_tables:
        if not header[0].startswith("published"):
            continue
        if "source" not in header:
            found.append(f"table {header}: no 'source' column")
            continue
        for row in rows:
            published, source = row[0], row[header.index("source")]
            name = published[:50]
            if not LOCATION.search(source):
                found.append(f"{name!r}: the source names no table, section, appendix or figure")
            if not PAGE_NAMED.search(source):
                found.append(f"{name!r}: the source names no page")
            cited_keys, cited_files = KEY.findall(source), CITED.findall(source)
            for key in cited_keys:
                if key not in defined or key not in KEY_TEXTS:
                    found.append(f"{name!r}: [{key}] is not a key of the page's key table")
            if not cited_keys and not cited_files:
                found.append(f"{name!r}: the source names no paper (a [key]) and no results file")
            paths = [shared / t for k in cited_keys for t in KEY_TEXTS.get(k, [])] + [root / f for f in cited_files]
            texts = [_read(path) for path in paths]
            if paths and all(t is not None for t in texts):
                for number in NUMBER.findall(published):
                    if not any(number in t for t in texts):
                        found.append(f"{name!r}: {number} is in none of its sources' texts")
            for number in sorted(_distinct(published) & reference_numbers):
                found.append(f"{name!r}: {number} is a reference computation, not a published number")
    return found


def test_every_published_number_names_its_source_and_reference_computations_stand_apart() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert problems(text, shared=Path("/nonexistent/shared")) == []  # the rule's shape, without ../shared
    reference = next(rows for header, rows in tables(text) if header[0].startswith("reference"))
    named = " ".join(row[0] for row in reference)
    assert "36.85" in named and "54.07 / 38.03 / 34.07 / 32.19" in named and "0.0986" in named and "28.9" in named
    assert "MB1 README" not in text and "no CliffWorld we scanned" in text
    published = [row for header, rows in tables(text) if header[0].startswith("published") for row in rows]
    assert len(published) == 27  # 5 of them AGENT (issue 43: both families beside BIPaCK, ToMnet-G, humans)


@pytest.mark.skipif(not (SHARED / "papers").is_dir(), reason=f"the papers' texts are not at {SHARED} (../shared)")
def test_every_published_number_is_in_the_text_its_row_names() -> None:
    assert problems(PAGE.read_text(encoding="utf-8")) == []


def test_the_rule_catches_a_row_without_source_a_number_not_in_it_and_a_computation_called_published(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    (shared / "papers").mkdir(parents=True)
    (shared / "papers" / "p.txt").write_text("Table 1 prints 2.4 and 37.8\n", encoding="utf-8")
    monkeypatch.setitem(KEY_TEXTS, "P", ["papers/p.txt"])
    page = """
| key | paper | read in |
|---|---|---|
| [P] | a paper | p.txt |

| published | source | ours |
|---|---|---|
| 2.4 and 37.8 | [P] Appendix D.1, p. 18 | 2.72 |
| 2.4 and 21.4 | [P] Appendix D.1, p. 18 | 2.72 |
| 36.85 | [P] Appendix D.1 | 36.85 |
| 2.4 | our test | 2.72 |
| 2.4 | [Q] Table 2, p. 3 | 2.72 |

| published | ours |
|---|---|
| 1.0 | 1.0 |

| reference (our computation) | computed by | ours |
|---|---|---|
| 36.85 | the team's exact computation | 36.85 |
"""
    assert problems(page, root=tmp_path, shared=shared) == [
        "reference row '36.85': 'computed by' does not say it is our computation",
        "'2.4 and 21.4': 21.4 is in none of its sources' texts",
        "'36.85': the source names no page",
        "'36.85': 36.85 is in none of its sources' texts",
        "'36.85': 36.85 is a reference computation, not a published number",
        "'2.4': the source names no table, section, appendix or figure",
        "'2.4': the source names no page",
        "'2.4': the source names no paper (a [key]) and no results file",
        "'2.4': [Q] is not a key of the page's key table",
        "table ['published', 'ours']: no 'source' column",
    ]
    fixed = page.replace("the team's exact", "our exact").split("| published | ours |")[0] + (
        "| reference (our computation) | computed by | ours |\n|---|---|---|\n| 36.85 | our run | 1 |\n")
    assert problems(fixed, root=tmp_path, shared=shared)[0] == "'2.4 and 21.4': 21.4 is in none of its sources' texts"
