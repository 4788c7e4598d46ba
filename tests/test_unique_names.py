"""Unique names (issue 39 item 6): names that become file names are never merged after normalisation."""

from __future__ import annotations

from pathlib import Path

import pytest

from bib.cli import main
from bib.errors import BibInputError
from bib.guard import distinct_names


def _looking_times(path: Path, tasks: list[str]) -> Path:
    lines = ["participant_id,task,trial_num,phase,outcome,looking_time_s"]
    for t in tasks:
        for p in range(6):
            lines += [f"p{p},{t},1,test,expected,{4 + p}", f"p{p},{t},2,test,unexpected,{6 + p * 1.1}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_distinct_names() -> None:
    distinct_names(["a", "b", "a"], str.casefold, "tasks", "w")  # a name repeated is one name
    with pytest.raises(BibInputError, match=r"^w: tasks 'Pref' and 'pref' would share one file \('pref'\); rename one"):
        distinct_names(["Pref", "x", "pref"], str.casefold, "tasks", "w")


def test_tasks_with_dots_get_a_plot_each(tmp_path, capsys, monkeypatch) -> None:
    """pref.a and pref.b were one plot (Path.with_suffix took '.a' for a suffix)."""
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    data = _looking_times(tmp_path / "lt.csv", ["pref.a", "pref.b"])
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(data), "--out", str(tmp_path / "out")])
    assert exc.value.code == 0, capsys.readouterr()
    assert sorted(p.name for p in (tmp_path / "out").glob("paired-*")) == [
        "paired-pref.a.png", "paired-pref.a.svg", "paired-pref.b.png", "paired-pref.b.svg"]
