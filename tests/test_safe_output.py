"""Safe output (issue 39 item 4): no spreadsheet or terminal opening bib's output runs anything.

CSV cells that start with ``= + - @``, a tab or a carriage return get a leading ``'`` (OWASP), numbers
untouched, through one helper (bib.io.csv_cell) that every CSV writer of the package uses; text printed
by a command loses the control characters a terminal would act on (bib.io.printable)."""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path

import pytest

from bib.cli import main
from bib.io import csv_cell, csv_dict_writer, csv_value, csv_writer, frame_csv, printable

PACKAGE = Path(__file__).resolve().parents[1] / "bib"


@pytest.mark.parametrize(("value", "written"), [
    ("=HYPERLINK(\"http://x\",\"y\")", "'=HYPERLINK(\"http://x\",\"y\")"), ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
    ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("\rx", "'\rx"), ("-inf", "'-inf"),
    # numbers, as numbers or as text that is one, and harmless text stay as they are
    ("-0.5", "-0.5"), ("+3", "+3"), ("-1e-05", "-1e-05"), (".5", ".5"), (-2.5, -2.5), (3, 3), (None, None),
    ("abc", "abc"), ("a=b", "a=b"), ("", ""), ("'=already", "'=already"),
])
def test_csv_cell_neutralises_formulas_not_numbers(value: object, written: object) -> None:
    assert csv_cell(value) == written
    assert csv_cell(csv_cell(value)) == written  # idempotent: a table rewritten keeps one quote
    if isinstance(value, str) and not value.startswith("'"):
        assert csv_value(str(written)) == value  # read back as written


def test_every_csv_writer_goes_through_bib_io() -> None:
    """No module but bib.io builds a csv.writer / csv.DictWriter or calls DataFrame.to_csv (one helper)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "io.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and (
                    node.attr == "to_csv" or (node.attr in ("writer", "DictWriter")
                                              and isinstance(node.value, ast.Name) and node.value.id == "csv")):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.attr}")
    assert offenders == []


def test_the_writers_neutralise_cells() -> None:
    import pandas as pd

    buf = io.StringIO()
    w = csv_writer(buf, lineterminator="\n")
    w.writerow(["=1+1", -1.5, "-1.5", "@x"])
    d = csv_dict_writer(buf, ["a", "b"], lineterminator="\n")
    d.writerow({"a": "+x", "b": 2})
    frame = pd.DataFrame({"name": ["=cmd", "ok"], "value": [-1.0, 2.0]}, index=["-i", "j"])
    assert buf.getvalue() == "'=1+1,-1.5,-1.5,'@x\n'+x,2\n"
    assert frame_csv(frame, lineterminator="\n") == ",name,value\n'-i,'=cmd,-1.0\nj,ok,2.0\n"


def test_printable_strips_what_a_terminal_obeys() -> None:
    hostile = "a\x1b]0;title\x07b\x1b[2Jc\x1b]52;c;ZWNobw==\x07d\u202ee\x9bf\x00g\tt\nn"
    assert printable(hostile) == "a]0;titleb[2Jc]52;c;ZWNobw==defg\tt\nn"


def _table_with_observer(tmp_path: Path, name: str) -> Path:
    root = Path(__file__).resolve().parents[1]
    rows = [r for r in csv.DictReader((root / "baselines" / "results.csv").open()) if r["observer"] == "inverse-planner"]
    for r in rows:
        r["observer"] = name
    table = tmp_path / "t.csv"
    with table.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))  # the hostile table, as an attacker writes it
        w.writeheader()
        w.writerows(rows)
    return table


def test_leaderboard_prints_no_escape_sequence_and_saves_no_formula(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    table = _table_with_observer(tmp_path, "ev\x1b]0;pwned\x07il\x1b[2J=1+1")
    with pytest.raises(SystemExit) as exc:
        main(["leaderboard", str(table)])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "\x1b" not in out and "\x07" not in out
    assert "ev]0;pwnedil" in out and "=1+1 (ours)" in out
    with pytest.raises(SystemExit) as exc:
        main(["leaderboard", str(table), "--json"])
    assert "\x1b" not in capsys.readouterr().out  # JSON escapes it too (\u001b)

    # --save rewrites the table: the formula-like observer name is neutralised, once, and reads back
    evaluation = tmp_path / "ev"
    evaluation.mkdir()
    doc = {"conditions": {"preference": {"accuracy": 0.5, "ci_low": 0.1, "ci_high": 0.9, "n_pairs": 4}},
           "readout": "max"}
    (evaluation / "evaluation.json").write_text(json.dumps(doc))
    for _ in range(2):
        with pytest.raises(SystemExit) as exc:
            main(["leaderboard", str(table), "--add", f"@SUM(1+1)={evaluation}", "--save", "--replace"])
        assert exc.value.code == 0, capsys.readouterr()
    capsys.readouterr()
    cells = [r["observer"] for r in csv.DictReader(table.open())]
    assert "'@SUM(1+1)" in cells and not any(c.startswith(("=", "@", "+")) for c in cells)
    assert cells.count("'@SUM(1+1)") == 1


def test_analyze_exclusions_csv_neutralises_participant_ids(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    lines = ["participant_id,task,trial_num,phase,outcome,looking_time_s"]
    for p in range(8):
        lines += [f"p{p},voe,1,test,expected,{4 + p}", f"p{p},voe,2,test,unexpected,{6 + p * 1.1}"]
    lines.append('"=HYPERLINK(""http://evil"",""x"")",voe,1,test,expected,')  # a missing look: excluded
    data = tmp_path / "lt.csv"
    data.write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(data), "--out", str(tmp_path / "out")])
    assert exc.value.code == 0, capsys.readouterr()
    rows = list(csv.DictReader((tmp_path / "out" / "exclusions.csv").open()))
    assert [r["participant_id"] for r in rows] == ["'=HYPERLINK(\"http://evil\",\"x\")"]
    assert rows[0]["looking_time_s"] == ""
