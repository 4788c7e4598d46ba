"""Several session files as one data set: ``bib analyze FILES...`` / ``bib analyze FOLDER`` (issue 30).

The example data split into one file per participant, in a folder, is analysed exactly as the
whole file (the hand-joined sessions); files with another header, a participant in two files, a
session saved twice each stop with one line naming the file and exit code 2.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_run import run_cli as _run
from compare_inputs import write_compare_inputs

from bib.analysis.analyze import analyze
from bib.analysis.importers import read_looking_times
from bib.analysis.spec import load_spec
from bib.errors import BibInputError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "looking_times" / "example.csv"
SPEC = ROOT / "analysis" / "infant-pilot.toml"


def _split(folder: Path, source: Path = EXAMPLE) -> tuple[list[str], dict[str, list[list[str]]]]:
    """Write one ``pilot_<id>_trials.csv`` per participant of ``source`` (and an empty look log)."""
    with source.open(newline="", encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh))
    by_id: dict[str, list[list[str]]] = {}
    for r in rows:
        by_id.setdefault(r[0], []).append(r)
    folder.mkdir(parents=True, exist_ok=True)
    for pid, rs in by_id.items():
        with (folder / f"pilot_{pid}_trials.csv").open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([header, *rs])
        (folder / f"pilot_{pid}_looks.csv").write_text("participant_id,order,position,attempt,event,t_s,clock_ms\n")
    return header, by_id


def test_folder_equals_the_hand_joined_file(tmp_path: Path) -> None:
    _, by_id = _split(tmp_path / "sessions")
    spec = load_spec(SPEC)
    joined = analyze(read_looking_times(EXAMPLE, spec=spec), spec).report
    imported = read_looking_times(tmp_path / "sessions", spec=spec)
    folder = analyze(imported, spec).report
    assert len(by_id) == 28 and len(imported.skipped_files) == 28 and all(n.endswith("_looks.csv") for n in imported.skipped_files)
    assert folder["tasks"] == joined["tasks"]
    assert folder["pooled"] == joined["pooled"]
    assert folder["exclusions"]["summary"] == joined["exclusions"]["summary"]
    # every excluded row names its session file and that file's line
    lines = {(r["participant_id"], r["row"]) for r in joined["exclusions"]["excluded"]}
    named = {r["row"] for r in folder["exclusions"]["excluded"]}
    assert len(named) == len(lines)
    for row in named:
        name, line = row.rsplit(":", 1)
        pid = name.removeprefix("pilot_").removesuffix("_trials.csv")
        with (tmp_path / "sessions" / name).open(encoding="utf-8") as fh:
            assert fh.read().splitlines()[int(line) - 1].startswith(f"{pid},")


def test_files_listed_equal_the_folder_and_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _split(tmp_path / "s")
    files = sorted((tmp_path / "s").glob("*_trials.csv"))
    a = read_looking_times(files, "csv").table
    b = read_looking_times(tmp_path / "s", "csv").table
    assert a.equals(b) and len(a) == 500
    code, out, _ = _run(capsys, "analyze", str(tmp_path / "s"), "--spec", str(SPEC), "--json")
    assert code == 0
    by_folder = json.loads(out)
    code, out, _ = _run(capsys, "analyze", *map(str, files), "--spec", str(SPEC), "--json")
    assert code == 0 and json.loads(out)["tasks"] == by_folder["tasks"]
    code, out, _ = _run(capsys, "analyze", str(EXAMPLE), "--spec", str(SPEC), "--json")
    assert code == 0 and json.loads(out)["tasks"] == by_folder["tasks"]


def _two(tmp_path: Path) -> tuple[Path, Path]:
    _split(tmp_path / "s")
    return tmp_path / "s" / "pilot_s01_trials.csv", tmp_path / "s" / "pilot_s02_trials.csv"


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    return err.strip()


def test_different_headers_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _two(tmp_path)
    b.write_text(b.read_text().replace(",synthetic\n", ",notes\n", 1))
    err = _fails(["analyze", str(tmp_path / "s"), "--spec", str(SPEC)], capsys)
    assert err == (f"bib: error: {b}: line 1: the header differs from {a}'s (missing synthetic; extra notes); "
                   "session files must have one header")
    lines = a.read_text().splitlines()
    cols = lines[0].split(",")
    cols[1], cols[2] = cols[2], cols[1]
    a.write_text("\n".join([",".join(cols), *lines[1:]]) + "\n")
    b.write_text(b.read_text().replace(",notes\n", ",synthetic\n", 1))
    err = _fails(["analyze", str(a), str(b), "--spec", str(SPEC)], capsys)
    assert err.endswith("(the same columns in another order); session files must have one header")


def test_participant_in_two_files_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _two(tmp_path)
    text = b.read_text().splitlines()
    text[3] = text[3].replace("s02,", "s01,", 1)  # line 4 of b belongs to s01
    b.write_text("\n".join(text) + "\n")
    err = _fails(["analyze", str(a), str(b), "--spec", str(SPEC)], capsys)
    assert err == (f"bib: error: {b}: participant s01 is also in {a} (pilot_s02_trials.csv:4; pilot_s01_trials.csv:2); "
                   "a participant's trials must be in one session file")


def test_session_twice_and_missing_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = _two(tmp_path)
    copy = tmp_path / "copy_trials.csv"
    copy.write_bytes(a.read_bytes())
    err = _fails(["analyze", str(a), str(copy), "--spec", str(SPEC)], capsys)
    assert err == f"bib: error: {copy}: the same bytes as {a} (one session saved twice)"
    err = _fails(["analyze", str(a), str(a), "--spec", str(SPEC)], capsys)
    assert err == f"bib: error: {a}: the file is given twice ({a})"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "x_looks.csv").write_text("a\n")
    with pytest.raises(BibInputError, match=r"logs: no session files \(\*\.csv other than \*_looks\.csv\) in the folder$"):
        read_looking_times(tmp_path / "logs", "csv")
    with pytest.raises(BibInputError, match=r"nowhere: no such file or directory$"):
        read_looking_times([a, tmp_path / "nowhere"], "csv")


def test_compare_takes_a_folder_of_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _split(tmp_path / "s")
    write_compare_inputs(tmp_path / "set", tmp_path / "backwards.csv", expected_shift=2.0)
    rest = [str(tmp_path / "set"), str(tmp_path / "backwards.csv"), "--spec", str(SPEC), "--json"]
    code, out, _ = _run(capsys, "compare", str(EXAMPLE), *rest)
    assert code == 0
    code, by_folder, _ = _run(capsys, "compare", str(tmp_path / "s"), *rest)
    assert code == 0 and json.loads(by_folder)["tasks"] == json.loads(out)["tasks"]
