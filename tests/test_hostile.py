"""The hostile-input corpus (issue 28 item 8): every case of tests/hostile/cases_*.py exits 2 (or 1
for a validate/audit finding) with a message naming the culprit, prints no traceback and writes
nothing anywhere: not outside --out, not half-written inside it (see tests/hostile/__init__.py)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from hostile import Case, all_cases

from bib.cli import main

CORPUS = Path(__file__).with_name("bad_inputs")
CASES = all_cases()


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root``: files by the hash of their bytes, folders as 'dir', links by target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            key = str(p.relative_to(root))
            if p.is_symlink():
                out[key] = "link " + os.readlink(p)
            elif p.is_dir():
                out[key] = "dir"
            elif p.is_file():
                h = hashlib.sha256()
                with open(p, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        h.update(block)
                out[key] = h.hexdigest()
            else:
                out[key] = "special"
    return out


def test_corpus_is_well_formed():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    assert len(ids) >= 200
    for c in CASES:
        assert c.code in (1, 2) and c.culprit, c.id
        assert c.code == 2 or c.argv[0] in ("validate", "audit"), c.id


def run_case(case: Case, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("BIB_NO_PROGRESS", "1")
    for k, v in case.env.items():
        monkeypatch.setenv(k, v)
    work = tmp_path / "cwd"
    inp = tmp_path / "in"
    out = tmp_path / "a" / "b" / "c" / "d" / "out"  # ../../../../x from out stays in tmp_path, seen
    shutil.copytree(CORPUS, inp, symlinks=True)
    out.parent.mkdir(parents=True)
    work.mkdir()
    monkeypatch.chdir(work)  # a relative default output would land here, and be seen
    if case.build is not None:
        case.build(inp)
    if case.setup is not None:
        case.setup(out)
    before = snapshot(tmp_path)

    def fill(s: str) -> str:
        return s.replace("{in}", str(inp)).replace("{out}", str(out))

    with pytest.raises(SystemExit) as exc:
        main([fill(a) for a in case.argv])
    got = capsys.readouterr()
    assert "Traceback" not in got.err + got.out
    culprit = fill(case.culprit)
    if case.code == 2:
        assert exc.value.code == 2, got.err + got.out
        assert got.err.startswith("bib: error: ") and got.err.count("\n") == 1, got.err  # one line
        assert culprit in got.err, got.err
    else:
        assert exc.value.code == 1, got.err + got.out
        assert culprit in got.out + got.err, got.out + got.err
    assert snapshot(tmp_path) == before  # nothing written, half-written or replaced, in or outside --out


FAST = [c for c in CASES if not c.slow]
SLOW = [c for c in CASES if c.slow]


@pytest.mark.parametrize("case", FAST, ids=[c.id for c in FAST])
def test_hostile(case, tmp_path, monkeypatch, capsys):
    run_case(case, tmp_path, monkeypatch, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW, ids=[c.id for c in SLOW])
def test_hostile_slow(case, tmp_path, monkeypatch, capsys):
    run_case(case, tmp_path, monkeypatch, capsys)


# --- issue 39: the memory bombs stay under 1 GiB peak (each run in a child process that reports its own
# VmHWM at exit: the in-process runs above share one high-water mark, and a child's ru_maxrss counts the
# memory of the parent it was forked from)

MEMORY = ["report-x-json-dev-zero", "report-x-csv-dev-zero", "score-checkpoint-record-inflates-to-3-gib",
          "import-gzip-bomb-100mib", "analyze-formula-nested-deep"]
MEMORY_SLOW = ["evaluate-steps-too-many-rows", "import-gzip-bomb-1gib"]
GIB = 1 << 30


CHILD = """
import atexit, sys
def report():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            open(sys.argv[1], "w").write(line.split()[1])
atexit.register(report)
from bib.cli import main
main(sys.argv[2:])
"""


def run_in_child(case: Case, tmp_path: Path) -> tuple[int, int, str]:
    """(exit code, peak RSS in bytes, stderr) of the case run by a fresh `python -c main(argv)`."""
    import subprocess
    import sys

    inp = tmp_path / "in"
    out = tmp_path / "a" / "b" / "c" / "d" / "out"
    shutil.copytree(CORPUS, inp, symlinks=True)
    out.parent.mkdir(parents=True)
    if case.build is not None:
        case.build(inp)
    if case.setup is not None:
        case.setup(out)
    argv = [a.replace("{in}", str(inp)).replace("{out}", str(out)) for a in case.argv]
    hwm = tmp_path / "vmhwm"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(hwm), *argv], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, cwd=tmp_path, env={**os.environ, "BIB_NO_PROGRESS": "1", **case.env},
                          timeout=300)
    return proc.returncode, int(hwm.read_text()) * 1024, proc.stderr.decode(errors="replace")  # VmHWM is in kB


def _by_id(ids: list[str]) -> list[Case]:
    found = {c.id: c for c in CASES}
    return [found[i] for i in ids]


@pytest.mark.parametrize("case", _by_id(MEMORY), ids=MEMORY)
def test_memory_bombs_stay_under_1_gib(case, tmp_path):
    code, peak, err = run_in_child(case, tmp_path)
    assert code == 2 and err.startswith("bib: error: ") and "Traceback" not in err, err
    assert peak < GIB, f"{peak / GIB:.2f} GiB"


@pytest.mark.slow
@pytest.mark.parametrize("case", _by_id(MEMORY_SLOW), ids=MEMORY_SLOW)
def test_slow_memory_bombs_stay_under_1_gib(case, tmp_path):
    code, peak, err = run_in_child(case, tmp_path)
    assert code == 2 and err.startswith("bib: error: ") and "Traceback" not in err, err
    assert peak < GIB, f"{peak / GIB:.2f} GiB"
