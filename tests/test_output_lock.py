"""One folder, one writer (issue 28 item 3): the lock of bib.io.OutputFolder, and an empty --out refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from bib.errors import BibInputError
from bib.io import OutputFolder, read_provenance, set_command_line

HOLDER = textwrap.dedent("""
    import sys, time
    from bib.io import OutputFolder, set_command_line
    out, mode = sys.argv[1], sys.argv[2]
    set_command_line(["bib", "hold", "--out", out])
    with OutputFolder(out, {"command": "hold"}, resume=mode == "resume") as folder:
        (folder / "part").write_text("x")
        print("held", flush=True)
        time.sleep(120)
""")


@pytest.fixture
def holder(tmp_path):
    """Start a process that holds ``tmp_path/o`` (its OutputFolder entered); yield (out, process)."""
    procs = []

    def start(mode: str = "tmp"):
        out = tmp_path / "o"
        proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), mode], stdout=subprocess.PIPE, text=True,
                                cwd=tmp_path)
        procs.append(proc)
        assert proc.stdout.readline() == "held\n"
        return out, proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def refused(out, proc):
    return rf"^{out}: another bib job is writing into this folder \(`bib hold --out {out}`, pid {proc.pid}\); " \
           r"wait until it ends, or choose another --out$"


@pytest.mark.parametrize("mode", ["tmp", "resume"])
def test_a_second_job_is_refused_while_the_first_runs_and_a_killed_ones_lock_does_not_block(holder, mode):
    out, proc = holder(mode)
    lock = out.parent / ".o.lock"
    assert lock.is_file()
    for resume in (False, True):  # refused by the constructor, before any work
        with pytest.raises(BibInputError, match=refused(out, proc)):
            OutputFolder(out, {"command": "other"}, resume=resume, force=True)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert lock.is_file()  # a killed job leaves its lock file, but the kernel released the lock
    set_command_line(["bib", "next"])
    with OutputFolder(out, {"command": "next"}, force=True) as tmp:
        (tmp / "r").write_text("r")
    assert sorted(p.name for p in out.parent.iterdir()) == ["o"]  # lock file gone with the job
    assert read_provenance(out)["job"] == {"command": "next"}


def test_enter_refuses_when_another_job_took_the_folder_after_the_check(tmp_path, holder):
    out = tmp_path / "o"
    late = OutputFolder(out, {"command": "hold"})  # checked while nobody writes
    _, proc = holder()
    with pytest.raises(BibInputError, match=refused(out, proc)), late:
        pytest.fail("entered a folder another job holds")
    assert not (tmp_path / f".o.tmp-{os.getpid()}").exists()


def test_the_job_is_checked_again_under_the_lock(tmp_path):
    """Two jobs checked while --out was empty: the one entering after the other finished is refused."""
    out = tmp_path / "o"
    first, second = OutputFolder(out, {"command": "a"}), OutputFolder(out, {"command": "b"})
    set_command_line(["bib", "a"])
    with first as tmp:
        (tmp / "a.csv").write_text("a")
    with pytest.raises(BibInputError, match=r"o: folder holds the output of `bib a`; use --force"), second:
        pytest.fail("replaced another job's output")
    assert sorted(p.name for p in out.iterdir()) == ["a.csv", "provenance.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


def test_one_process_enters_in_turn_and_the_lock_is_released_on_failure(tmp_path):
    out = tmp_path / "o"
    with pytest.raises(RuntimeError), OutputFolder(out, {"command": "a"}):
        assert (tmp_path / ".o.lock").read_text().endswith(f"pid {os.getpid()}\n")
        raise RuntimeError("boom")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with OutputFolder(out, {"command": "a"}, resume=True) as folder:
        (folder / "x").write_text("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


def test_the_same_folder_by_another_name_shares_the_lock(tmp_path, holder):
    out, proc = holder()
    (tmp_path / "link").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(BibInputError, match="another bib job is writing into this folder"):
        OutputFolder(tmp_path / "link" / "o", {"command": "hold"}, force=True)
    with pytest.raises(BibInputError, match="another bib job is writing into this folder"):
        OutputFolder(f"{out}/", {"command": "hold"}, force=True)


def test_cli_second_generate_into_a_held_folder_exits_2_with_one_line(holder):
    out, proc = holder("resume")
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "bib.cli", "generate", "--task", "single-object", "--n", "1",
                          "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "another bib job is writing into this folder (`bib hold" in lines[0], run.stderr
    assert sorted(p.name for p in out.iterdir()) == ["part"]  # nothing of the second job written
    assert time.monotonic() - start < 120


def test_cli_empty_out_is_refused(tmp_path):
    run = subprocess.run([sys.executable, "-m", "bib.cli", "generate", "--task", "single-object", "--n", "1",
                          "--out", ""], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 2
    assert run.stderr == ("bib: error: Invalid value for '--out': is empty; name a folder (e.g. --out out) "
                          "(see `bib generate --help`)\n")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(BibInputError, match="--out is empty; name a folder"):
        OutputFolder("", {"command": "x"})


def test_a_job_writing_in_place_without_an_output_folder_takes_the_same_lock(holder):
    """`bib agency probe` beside a `bib agency run` folder writes in place, under FolderLock itself."""
    from bib.io import FolderLock

    out, proc = holder("resume")
    with pytest.raises(BibInputError, match=refused(out, proc)), FolderLock(out):
        pytest.fail("wrote beside another job")
    proc.kill()
    proc.wait(timeout=30)
    with FolderLock(out) as folder:
        assert folder == out and (out.parent / ".o.lock").is_file()
        with pytest.raises(BibInputError, match="another bib job is writing into this folder"):
            OutputFolder(out, {"command": "x"}, force=True)  # (this process holds it: a second open is refused too)
    assert not (out.parent / ".o.lock").exists()


def test_the_lock_is_keyed_on_the_fully_resolved_folder(tmp_path):
    """Issue 39: every spelling of --out, through a linked ancestor too, takes the same lock file; an
    --out that is itself a link is refused (a job would write through it or replace the link)."""
    from bib.io import FolderLock

    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "alias")
    a = FolderLock(tmp_path / "real" / "o")
    b = FolderLock(tmp_path / "alias" / "sub" / ".." / "o")
    assert a.file == b.file == tmp_path.resolve() / "real" / ".o.lock"
    a.acquire()
    try:
        with pytest.raises(BibInputError, match="another bib job is writing into this folder"):
            b.acquire()
    finally:
        a.release()
    (tmp_path / "real" / "o").mkdir()
    os.symlink(tmp_path / "real" / "o", tmp_path / "link")
    with pytest.raises(BibInputError, match=r"link: --out is a symbolic link \(to .*real/o\); name the folder itself"):
        OutputFolder(tmp_path / "link", {"command": "x"})


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo"])
def test_a_planted_lock_file_is_refused_and_its_target_kept(tmp_path, kind):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    lock = tmp_path / ".o.lock"
    {"symlink": lambda: os.symlink(victim, lock), "hardlink": lambda: os.link(victim, lock),
     "fifo": lambda: os.mkfifo(lock)}[kind]()
    message = {"symlink": "is a symbolic link; bib does not follow it", "hardlink": "has another hard link",
               "fifo": "is not a regular file"}[kind]
    with pytest.raises(BibInputError, match=message):
        OutputFolder(tmp_path / "o", {"command": "x"})
    from bib.io import FolderLock

    with pytest.raises(BibInputError, match=message):
        FolderLock(tmp_path / "o").acquire()
    assert victim.read_text() == "keep\n" and not (tmp_path / "o").exists()
