"""bib.io.OutputFolder: checks before the work, temporary sibling + rename, provenance (issue 17)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from bib import __version__
from bib.errors import BibInputError
from bib.io import PROVENANCE, OutputFolder, read_provenance, set_command_line

JOB = {"command": "test", "x": 1}


def names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_builds_in_a_sibling_and_renames_with_provenance(tmp_path):
    set_command_line(["bib", "test", "--out", "o"])
    out = tmp_path / "a" / "o"
    folder = OutputFolder(out, JOB)
    assert not (tmp_path / "a").exists()  # the check writes nothing
    with folder as tmp:
        assert tmp != out and tmp.parent == out.parent and tmp.name.startswith(".o.tmp-")
        (tmp / "result.csv").write_text("x\n")
        assert not out.exists()
    assert names(out) == [PROVENANCE, "result.csv"] and names(out.parent) == ["o"]
    doc = json.loads((out / PROVENANCE).read_text())
    assert doc["argv"] == ["bib", "test", "--out", "o"] and doc["job"] == JOB and doc["bib_version"] == __version__
    assert doc["python"] == ".".join(map(str, sys.version_info[:3])) and doc["started"] <= doc["finished"]
    assert set(doc) >= {"git_commit", "platform"}


def test_failure_leaves_nothing_and_the_old_output_intact(tmp_path):
    out = tmp_path / "o"
    with OutputFolder(out, JOB) as tmp:
        (tmp / "result.csv").write_text("old\n")
    with pytest.raises(RuntimeError), OutputFolder(out, JOB) as tmp:
        (tmp / "result.csv").write_text("half")
        raise RuntimeError("boom")
    assert names(tmp_path) == ["o"] and (out / "result.csv").read_text() == "old\n"
    with OutputFolder(out, JOB) as tmp:  # the same job replaces its own output
        (tmp / "new.csv").write_text("new\n")
    assert names(out) == ["new.csv", PROVENANCE]


def test_refusals(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(BibInputError, match=r"file: exists and is a file; --out names a folder"):
        OutputFolder(tmp_path / "file", JOB)
    with pytest.raises(BibInputError, match=r"cannot create the output folder \(.*file is a file\)"):
        OutputFolder(tmp_path / "file" / "o", JOB)
    other = tmp_path / "other"
    other.mkdir()
    (other / "mine.txt").write_text("x")
    with pytest.raises(BibInputError, match="holds files not written by bib; use --force"):
        OutputFolder(other, JOB)
    set_command_line(["bib", "test", "--out", "other"])
    with OutputFolder(other, JOB, force=True) as tmp:
        (tmp / "r").write_text("r")
    assert names(other) == [PROVENANCE, "r"]
    with pytest.raises(BibInputError, match=r"holds the output of `bib test --out other`; use --force"):
        OutputFolder(other, {"command": "test", "x": 2})
    empty = tmp_path / "empty"
    empty.mkdir()
    with OutputFolder(empty, JOB) as tmp:  # an empty folder is fine
        pass
    assert read_provenance(empty)["job"] == JOB


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_read_only_parent_is_refused_before_work(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(BibInputError, match="not writable"):
            OutputFolder(ro / "o", JOB)
    finally:
        ro.chmod(0o700)


def test_resume_writes_in_place(tmp_path):
    out = tmp_path / "o"
    with OutputFolder(out, JOB, resume=True) as folder:
        assert folder == out
        (folder / "unit").write_text("u")
    with pytest.raises(KeyboardInterrupt), OutputFolder(out, JOB, resume=True) as folder:
        (folder / "unit2").write_text("u")
        raise KeyboardInterrupt
    assert names(out) == [PROVENANCE, "unit", "unit2"]  # finished units stay for the rerun
