"""Processes die with `bib` (issue 17): SIGKILL of the parent leaves no descendant (forkserver, workers
encoding videos in-process, resource tracker); Ctrl-C exits 130 with the resume note and also leaves none."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG is Linux-only")

BIB = str(Path(sys.executable).with_name("bib"))


def _ppid_map() -> dict[int, int]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            out[int(name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def descendants(pid: int) -> set[int]:
    parents = _ppid_map()
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = {c for c, pp in parents.items() if pp == p} - found
        found |= kids
        todo += kids
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _default_sigint() -> None:
    """In the child before exec: Ctrl-C's default action. A suite started as a background job of a shell without job
    control (``make test &`` in a script) inherits SIGINT ignored, and so would ``bib generate``, which then finished
    all 400 units and exited 0 (a local CI run, 2026-11-29): Python keeps an ignored SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_generate(out: Path) -> tuple[subprocess.Popen, set[int]]:
    """Start `bib generate --workers 2 --video` and wait until its workers write videos; return the
    process and its descendants at that moment. PYTHONFAULTHANDLER: a SIGABRT dumps every thread's stack."""
    env = dict(os.environ, BIB_NO_PROGRESS="1", PYTHONFAULTHANDLER="1")
    proc = subprocess.Popen([BIB, "generate", "--task", "single-object", "--n", "400", "--workers", "2", "--video",
                             "--out", str(out)], env=env, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_default_sigint)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = descendants(proc.pid)
        if len(found) >= 4 and any((out / "videos").glob("*.mp4")):
            return proc, found
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"no worker wrote a video: {proc.communicate()[1][-2000:]}")


def survivors(pids: set[int], seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    left = [f"{p}: {cmdline(p)[:100]}" for p in pids if alive(p)]
    for p in pids:
        if alive(p):
            os.kill(p, signal.SIGKILL)
    return left


def test_sigkill_of_bib_leaves_no_descendant(tmp_path):
    proc, kids = start_generate(tmp_path / "set")
    names = " ".join(cmdline(p) for p in kids)
    assert "forkserver" in names
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert survivors(kids, 5.0) == []


def hung(proc: subprocess.Popen) -> str:
    """Why ``proc`` has not exited: its descendants, its threads' C stacks (gdb, where installed) and every
    thread's Python stack (faulthandler on SIGABRT); the processes are killed."""
    tree = {p: cmdline(p)[:80] for p in descendants(proc.pid)}
    stacks = ""
    if shutil.which("gdb"):
        run = subprocess.run(["gdb", "-p", str(proc.pid), "-batch", "-ex", "thread apply all bt 12"],
                             capture_output=True, text=True, timeout=60)
        stacks = "\n".join(line for line in run.stdout.splitlines() if line.startswith(("Thread", "#0 ", "#1 ", "#2 ")))
    os.kill(proc.pid, signal.SIGABRT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    survivors(set(tree), 0.0)
    return f"descendants: {tree}\nstderr (Python stacks):\n{err[-8000:]}\nC stacks:\n{stacks[-4000:]}"


@pytest.mark.skipif(os.environ.get("PYTEST_XDIST_WORKER") is not None,
                    reason="run alone by `make test` after the parallel suite (pytest -n 0 -m lifecycle): under "
                           "pytest-xdist, in local CI runs beside training jobs, bib generate did not exit within 60 s "
                           "of Ctrl-C (3 runs on 2026-11-27); not reproduced since (9 of 9 exited under xdist beside "
                           "training, 3 of them in the full suite), cause not found; a hang fails with every stack")
@pytest.mark.lifecycle
def test_ctrl_c_exits_130_with_the_resume_note_and_leaves_no_descendant(tmp_path):
    proc, kids = start_generate(tmp_path / "set")
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"bib generate did not exit within 60 s of SIGINT\n{hung(proc)}")
    assert proc.returncode == 130, f"exit {proc.returncode}; stderr:\n{err[-3000:]}"
    assert err.strip().splitlines()[-1] == "bib: interrupted; rerun the same command to resume"
    assert "Traceback" not in err
    assert survivors(kids, 5.0) == []


def test_an_interrupt_in_the_writing_loop_stops_the_pool_before_it_reaches_the_cli(tmp_path, monkeypatch):
    """Ctrl-C landing in `bib generate`'s own loop (writing the manifest), not inside the pool's generator:
    the pool's processes are gone while the KeyboardInterrupt is still propagating (its traceback holds
    the generator), not only once it is collected. Before, they outlived the unwind (this test failed);
    whether that made the Ctrl-C test above time out once in CI under load is not shown."""
    import bib.stimuli.build as build_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "append_bytes", interrupted)
    before = descendants(os.getpid())  # other tests' processes in this worker are not this test's
    with pytest.raises(KeyboardInterrupt) as caught:
        build_module.build([("single-object", 8)], 0, tmp_path / "set", workers=2)
    assert caught.value.__traceback__ is not None  # the traceback (and its frames) still alive here
    parents = _ppid_map()  # pool processes are the forkserver's children (it and the resource tracker are ours)
    workers = [p for p in descendants(os.getpid()) - before if parents.get(p) != os.getpid() and alive(p)]
    assert workers == []
