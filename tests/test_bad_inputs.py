"""The bad-input corpus (issue 17 item 7): every case of tests/bad_inputs/cases.toml exits with its
code and the expected one-line message, prints no traceback and writes nothing."""

from __future__ import annotations

import hashlib
import shutil
import tomllib
from pathlib import Path

import pytest

from bib.cli import main

CORPUS = Path(__file__).with_name("bad_inputs")
CASES = tomllib.loads((CORPUS / "cases.toml").read_text(encoding="utf-8"))["case"]


def snapshot(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` with the hash of its bytes (folders as 'dir')."""
    return {str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))}


def test_cases_are_well_formed():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 30
    for c in CASES:
        assert set(c) <= {"id", "argv", "setup", "code", "first", "stream"}, c["id"]
        assert c["code"] in (1, 2) and c["first"].startswith("bib: error: " if c["code"] == 2 else ""), c["id"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_bad_input(case, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    monkeypatch.chdir(tmp_path)  # a relative default output would land here, and be seen
    shutil.copytree(CORPUS, tmp_path / "in")
    out = tmp_path / "out"
    if case.get("setup") == "file":
        out.write_text("a file, not a folder\n")
    elif case.get("setup") == "foreign":
        out.mkdir()
        (out / "notes.txt").write_text("mine\n")
    before = snapshot(tmp_path)

    def fill(s: str) -> str:
        return s.replace("{in}", str(tmp_path / "in")).replace("{out}", str(out))

    with pytest.raises(SystemExit) as exc:
        main([fill(a) for a in case["argv"]])
    got = capsys.readouterr()
    text = got.out if case.get("stream") == "stdout" else got.err
    assert "Traceback" not in got.err + got.out
    first, expected = text.splitlines()[0] if text else "", fill(case["first"])
    if expected.endswith("..."):
        first, expected = first[:len(expected) - 3], expected[:-3]
    assert (exc.value.code, first) == (case["code"], expected)
    if case["code"] == 2:
        assert got.err.count("\n") == 1, got.err  # one line
    assert snapshot(tmp_path) == before  # nothing written, nothing half-written, nothing replaced
