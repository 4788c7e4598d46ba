"""Names that collide once made file names (issue 39): tasks differing only in case (one plot on a
case-insensitive disk), conditions that share a report page; refused in one line, never merged."""

from __future__ import annotations

from pathlib import Path

from hostile import Case
from hostile.build import write


def _lt(tasks: list[str]) -> str:
    lines = ["participant_id,task,trial_num,phase,outcome,looking_time_s"]
    for t in tasks:
        for p in range(6):
            lines += [f"p{p},{t},1,test,expected,{4 + p}", f"p{p},{t},2,test,unexpected,{6 + p * 1.1}"]
    return "\n".join(lines) + "\n"


def _conditions_in_case(inp: Path) -> None:
    manifest = inp / "set" / "manifest.csv"
    lines = manifest.read_text().splitlines()
    lines[2] = lines[2].replace(",preference,preference,unexpected,", ",preference,Preference,unexpected,")
    manifest.write_text("\n".join(lines) + "\n")


CASES = [
    Case("analyze-tasks-differ-in-case", ["analyze", "{in}/lt.csv"], build=write("lt.csv", _lt(["Pref", "pref"])),
         culprit="{in}/lt.csv: tasks 'Pref' and 'pref' would share one file"),
    Case("analyze-out-tasks-differ-in-case", ["analyze", "{in}/lt.csv", "--out", "{out}"],
         build=write("lt.csv", _lt(["Pref", "pref"])), culprit="tasks 'Pref' and 'pref' would share one file"),
    Case("report-conditions-differ-in-case", ["report", "{in}/set", "--out", "{out}"], build=_conditions_in_case,
         culprit="{in}/set: conditions 'preference' and 'Preference' would share one file"),
]


def _fifo_pair(inp: Path) -> None:
    """A BIB folder holding a FIFO pair beside a real one (it was skipped without a word)."""
    import os

    from hostile.cases_encodings import bib_export

    bib_export(inp)
    os.mkfifo(inp / "bib" / "preference" / "000009e.json")
    os.mkfifo(inp / "bib" / "preference" / "000009u.json")


CASES.append(Case("import-fifo-pair", ["import", "{in}/bib/preference", "--out", "{out}"], build=_fifo_pair,
                  culprit="{in}/bib/preference/000009e.json: is not a regular file"))
