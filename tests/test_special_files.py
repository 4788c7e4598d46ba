"""`bib render` and `bib validate` of a FIFO or /dev/zero are refused at once (issue 28: they hung, or
read for ever), by bib.guard's rule that only regular files are read."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap

import pytest

# The command runs in a child with 4 GB of address space (an unguarded /dev/zero would grow until then)
# and times itself from after `import bib.cli`, so the figure is the command's, not the interpreter's start.
CHILD = textwrap.dedent("""
    import sys, time
    from bib.cli import main
    start = time.monotonic()
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        print(f"{exc.code} {time.monotonic() - start:.3f}")
""")


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@pytest.mark.parametrize("command", ["render", "validate"])
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_fifo_or_a_device_is_refused_in_under_2_s(command, kind, tmp_path):
    if kind == "fifo":
        src = tmp_path / "ep.json"
        os.mkfifo(src)
    else:
        src = "/dev/zero"
    argv = ["render", str(src), "--out", str(tmp_path / "out")] if command == "render" else ["validate", str(src)]
    run = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, timeout=120,
                         preexec_fn=_limit, cwd=tmp_path, env={**os.environ, "BIB_NO_PROGRESS": "1"})
    code, seconds = run.stdout.split()
    assert code == "2", run.stdout + run.stderr
    assert run.stderr.startswith(f"bib: error: {src}") and run.stderr.count("\n") == 1, run.stderr
    assert "regular" in run.stderr, run.stderr
    assert float(seconds) < 2.0, seconds
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["fifo", "link-to-dev-zero", "folder-with-fifo"])
def test_evaluate_names_a_special_results_file_as_such(kind, tmp_path, capsys):
    """`bib evaluate SET RESULTS` given a FIFO, a link to /dev/zero, or a score folder whose results.csv is a FIFO:
    one line saying it is not a regular file (it said "no such file or folder" and "no results.csv inside")."""
    from cli_run import run_cli

    assert run_cli(capsys, "generate", "--task", "preference", "--n", "1", "--out", str(tmp_path / "set"))[0] == 0
    if kind == "fifo":
        results = tmp_path / "r.csv"
        os.mkfifo(results)
        named = results
    elif kind == "link-to-dev-zero":
        results = tmp_path / "r.csv"
        results.symlink_to("/dev/zero")
        named = results
    else:
        results = tmp_path / "run"
        results.mkdir()
        os.mkfifo(results / "results.csv")
        named = results / "results.csv"
    code, out, err = run_cli(capsys, "evaluate", str(tmp_path / "set"), str(results))
    assert (code, out) == (2, "")
    assert err == f"bib: error: {named}: is not a regular file (a pipe, device or socket); bib reads regular files only\n"
